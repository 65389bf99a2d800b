"""Intervals of the measures other than nDCG (P@k, R@k, RR, R-Prec, AP, RBP) over unjudged documents, per run
and for the difference of two runs seen in one world (docs/method.md, "Intervals of every measure").

Belongs here: the smallest and largest value of each of these measures, and of the difference of two runs' values,
when every unjudged document either list retrieved (to its depth) receives some grade of the judgment set's scale,
one grade per document for both lists. nDCG's intervals are in transforms/intervals.py and
transforms/paired_intervals.py, whose world this module shares: documents nobody retrieved stay as they are, a
document's position is its place in the list once every unjudged document is judged (under condensed lists judged
documents of a negative grade stay removed, and the scale's negative grades are left out), and a top-k read's rows
not seen are counted (`unseen`, of which at least `unseen_unjudged_min` are unjudged).

One kernel for both: a run's own interval is its difference against an empty list (every measure here is 0 on an
empty list, and defined exactly when the run's value is), so each method below is written for two lists, the run's
(positions `p_r`) and the baseline's (`p_b`, infinite where a list does not hold the document, or holds it beyond
the cutoff). A measure only asks whether a grade reaches its threshold `rel`, so an unjudged document is relevant
or not: either, if the scale has grades on both sides of `rel`, otherwise the one its grades allow. `J` counts the
judged documents of grade >= `rel` (retrieved or not); documents in neither list within the cutoff but in the
world (below the cutoff, or among the rows not read) only count towards R.

- **P@k, RBP**: a sum over positions, so each document adds its own `w_r - w_b` (1/k, or RBP's weight
  (1 - p) p^(i-1), in each list; 0 where absent) when relevant: the largest difference makes relevant exactly the
  documents with a positive term. Exact.
- **RR@k**: a set S of relevant documents gives `1 / min(f_r, min over S of p_r) - 1 / min(f_b, min over S of
  p_b)`, f the first judged relevant position; the run's term depends only on the member of S earliest in the run,
  and any other member can only raise the baseline's, so the largest difference has at most one member (the
  smallest, by symmetry, too). The empty set and every single document are tried. Exact.
- **R@k** = `(F + a - c) / (J + a + c + y)`: `a` the documents made relevant that only the run holds within k, `c`
  those only the baseline holds, `y` those both or neither hold (they cancel, or count only in R), F the judged
  difference. A linear-fractional function over a box of counts takes its extremes at the corners of the box (and,
  when no judged document is relevant, of the box without the corner where R = 0, whose other corners are the
  points next to it): each count is tried at its fewest, one more and its most. Exact.
- **R-Prec** = hits(R) / R with R = J + t: for each count t of documents made relevant the cut is fixed, and the
  difference of hits is largest with the documents only the run holds within the cut made relevant first, then
  those both or neither hold, then those only the baseline holds (smallest the other way round). Every t is
  tried: exact.
- **AP@k** = N / (J + m), N the sum of precisions at the relevant positions: for a fixed set of relevant documents
  that both lists hold, moving a relevant document that only the run holds to an earlier position never lowers
  the run's N (the moved document's precision rises at least as much as the skipped documents' fall), and one
  only the baseline holds to a later position never raises the baseline's. So for each subset of the shared
  documents (enumerated up to `SHARED_ENUMERATED_MAX` of them) the largest difference takes the earliest `m_r`
  run-only documents and the latest `m_b` baseline-only ones, and Dinkelbach's iteration over the two counts
  (the ratio separates into one term per count) finds the best; documents in neither list take the fewest or the
  most. Exact. With more shared documents, a bound (`bound`): for every total m of documents made relevant, the
  run's largest N over any m of them over the baseline's smallest, divided by J + m.

Where no relevant document is left (R = J + m = 0: AP, R@k, R-Prec) the value is 0 under `no_relevant='zero'`,
and has none under `null`: the interval is then taken over the assignments that give one (None when none does),
so that a query without relevant judgments can join the mean (`transforms.summary.aggregate_interval`).
A top-k read whose rows not read may hold a number of unjudged documents that changes an end gives a `bound`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations, product

import numpy as np
import polars as pl

from judged.schemas.fields import QUERY
from judged.schemas.measures import AP, RBP, RR, MeasureBase, Precision, Recall, RPrecision
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import PER_QUERY
from judged.transforms.intervals import (
    INTERVAL_KIND, INTERVAL_STRUCT, assignable_grades, unseen_rows, with_grade_sets, world_rows,
)
from judged.transforms.measures.ndcg import gain_of
from judged.transforms.paired_intervals import DIFFERENCE_ROWS

INTERVAL_ROWS = {
    name: dtype for name, dtype in PER_QUERY.items()
    if name in (QUERY, "measure", "cutoff", "value_min", "value_max", "interval_kind")
}
"""The interval rows every method gives, in the per-query table's types, for `transforms.intervals.with_intervals`."""
BINARY_INTERVAL_MEASURES: tuple[type[MeasureBase], ...] = (Precision, Recall, RR, RPrecision, AP, RBP)
"""The measures whose intervals this module computes."""
SHARED_ENUMERATED_MAX = 8
"""AP's exact paired interval enumerates the subsets of the unjudged documents both lists hold within the cutoff up
to this many of them (256 subsets); beyond, it gives the bound of the module docstring."""

Interval = tuple[float, float, bool] | None
"""(low, high, exact), or None where no assignment has a value."""


def interval_measures(spec: EvaluationSpec) -> list[MeasureBase]:
    """The spec's measures whose interval this module computes."""
    return [m for m in spec.measure_list() if isinstance(m, BINARY_INTERVAL_MEASURES)]


@dataclass(frozen=True)
class PairWorld:
    """One query's world for one measure: the two lists' positions of their judged relevant documents (`run_relevant`,
    `baseline_relevant`, sorted), and of the unjudged documents either holds (`run_open`, `baseline_open`, one entry
    per document, `inf` where a list does not hold it), J (`n_relevant_judged`), and the fewest and most unjudged
    documents among the rows not read (`hidden`, below every cutoff in both lists)."""

    run_relevant: np.ndarray
    baseline_relevant: np.ndarray
    run_open: np.ndarray
    baseline_open: np.ndarray
    n_relevant_judged: int
    hidden: tuple[int, int] = (0, 0)

    def cut(self, cutoff: int | None) -> PairWorld:
        """The same world with every position beyond `cutoff` infinite (not in that list as the measure reads it)."""
        if cutoff is None:
            return self
        beyond = float(cutoff)

        def cut_of(positions: np.ndarray) -> np.ndarray:
            return np.where(positions <= beyond, positions, np.inf)

        return PairWorld(cut_of(self.run_relevant), cut_of(self.baseline_relevant), cut_of(self.run_open),
                         cut_of(self.baseline_open), self.n_relevant_judged, self.hidden)


def _counts(n: int, can_relevant: bool, can_nonrelevant: bool) -> tuple[int, int]:
    """The fewest and most of `n` unjudged documents that can be made relevant."""
    return (0 if can_nonrelevant else n), (n if can_relevant else 0)


def difference_interval(
    name: str,
    cutoff: int | None,
    world: PairWorld,
    can_relevant: bool,
    can_nonrelevant: bool,
    zero_if_no_relevant: bool,
    persistence: float | None = None,
) -> Interval:
    """The interval of measure `name` (P, R, RR, R-Prec, AP, RBP with its `persistence`) of the run less the
    baseline at `cutoff` over every assignment to the unjudged documents of `world` (module docstring)."""
    if not (can_relevant or can_nonrelevant):
        return None  # no grade to give an unjudged document
    if name in ("P", "RBP"):
        return _additive_interval(name, cutoff, world, can_relevant, can_nonrelevant, persistence)
    if name == "RR":
        return _rr_interval(world.cut(cutoff), can_relevant, can_nonrelevant)
    if name == "R":
        return _recall_interval(world.cut(cutoff), can_relevant, can_nonrelevant, zero_if_no_relevant)
    if name == "R-Prec":
        return _rprec_interval(world, can_relevant, can_nonrelevant, zero_if_no_relevant)
    if name == "AP":
        return _ap_interval(world.cut(cutoff), can_relevant, can_nonrelevant, zero_if_no_relevant)
    raise ValueError(f"no interval method for {name}")


def _additive_interval(
    name: str, cutoff: int | None, world: PairWorld, can_relevant: bool, can_nonrelevant: bool,
    persistence: float | None,
) -> Interval:
    """P@k and RBP: each relevant document adds its weight in the run less its weight in the baseline. P@k counts
    the documents within k and divides once, as the measure does, so that its ends are the measure's own numbers."""
    if name == "P":
        divisor = float(cutoff or 1)

        def weight(positions: np.ndarray) -> np.ndarray:
            return (positions <= float(cutoff or 0)).astype(np.float64)
    else:
        p, divisor = float(persistence if persistence is not None else 0.8), 1.0

        def weight(positions: np.ndarray) -> np.ndarray:
            finite = np.isfinite(positions)
            return np.where(finite, (1.0 - p) * p ** (np.where(finite, positions, 1.0) - 1.0), 0.0)

    fixed = float(weight(world.run_relevant).sum() - weight(world.baseline_relevant).sum())
    terms = weight(world.run_open) - weight(world.baseline_open)
    if not can_nonrelevant:
        low = high = fixed + float(terms.sum())
    elif not can_relevant:
        low = high = fixed
    else:
        low, high = fixed + float(terms[terms < 0].sum()), fixed + float(terms[terms > 0].sum())
    return low / divisor, high / divisor, True


def _rr_interval(world: PairWorld, can_relevant: bool, can_nonrelevant: bool) -> Interval:
    """RR@k on positions already cut at k: the empty set, every single document, or every document relevant."""
    first_run = world.run_relevant.min(initial=np.inf)
    first_baseline = world.baseline_relevant.min(initial=np.inf)
    if not can_nonrelevant:
        value = 1.0 / min(first_run, world.run_open.min(initial=np.inf)) - 1.0 / min(
            first_baseline, world.baseline_open.min(initial=np.inf))
        return value, value, True
    values = [1.0 / first_run - 1.0 / first_baseline]
    if can_relevant:
        singles = 1.0 / np.minimum(first_run, world.run_open) - 1.0 / np.minimum(first_baseline, world.baseline_open)
        values += singles.tolist()
    return float(min(values)), float(max(values)), True


def _open_kinds(world: PairWorld) -> tuple[int, int, int]:
    """Of the unjudged documents: how many only the run holds, only the baseline holds, and both or neither hold
    (positions already cut), the rows not read not counted."""
    in_run, in_baseline = np.isfinite(world.run_open), np.isfinite(world.baseline_open)
    return int((in_run & ~in_baseline).sum()), int((in_baseline & ~in_run).sum()), int((in_run == in_baseline).sum())


def _recall_interval(
    world: PairWorld, can_relevant: bool, can_nonrelevant: bool, zero_if_no_relevant: bool
) -> Interval:
    """R@k = (F + a - c) / (J + a + c + y) over the corners of the box of counts (module docstring)."""
    only_run, only_baseline, alike = _open_kinds(world)
    fixed = float(np.isfinite(world.run_relevant).sum() - np.isfinite(world.baseline_relevant).sum())
    judged = world.n_relevant_judged
    ends: list[tuple[float, float]] = []
    for hidden in sorted(set(world.hidden)):
        ranges = [_counts(n, can_relevant, can_nonrelevant) for n in (only_run, only_baseline, alike + hidden)]
        corners = [sorted({low, min(low + 1, high), high}) for low, high in ranges]
        values = []
        for a, c, y in product(*corners):
            total = judged + a + c + y
            if total > 0:
                values.append((fixed + a - c) / total)
            elif zero_if_no_relevant:
                values.append(0.0)
        if values:
            ends.append((min(values), max(values)))
    if not ends:
        return None
    exact = world.hidden[0] == world.hidden[1] or not can_relevant
    return min(e[0] for e in ends), max(e[1] for e in ends), exact


def _rprec_interval(
    world: PairWorld, can_relevant: bool, can_nonrelevant: bool, zero_if_no_relevant: bool
) -> Interval:
    """R-Prec: for each count t made relevant, the cut R = J + t and the best and worst choice of t documents."""
    if world.hidden[1] > 0:  # never the case: R-Prec reads every row
        return -1.0, 1.0, False
    total = world.run_open.size
    low, high = _counts(total, can_relevant, can_nonrelevant)
    t = np.arange(low, high + 1)
    cut = world.n_relevant_judged + t
    fixed = (np.searchsorted(np.sort(world.run_relevant), cut, side="right")
             - np.searchsorted(np.sort(world.baseline_relevant), cut, side="right"))
    run_by = np.searchsorted(np.sort(world.run_open), cut, side="right")
    baseline_by = np.searchsorted(np.sort(world.baseline_open), cut, side="right")
    both_by = np.searchsorted(np.sort(np.maximum(world.run_open, world.baseline_open)), cut, side="right")
    gaining, losing = run_by - both_by, baseline_by - both_by  # only the run's within the cut, only the baseline's
    neutral = total - gaining - losing
    most = np.minimum(t, gaining) - np.maximum(0, t - gaining - neutral)
    fewest = np.maximum(0, t - losing - neutral) - np.minimum(t, losing)
    defined = cut > 0
    if not defined.any() and not zero_if_no_relevant:
        return None
    safe = np.where(defined, cut, 1).astype(np.float64)
    if zero_if_no_relevant:
        highest, lowest = np.where(defined, (fixed + most) / safe, 0.0), np.where(defined, (fixed + fewest) / safe, 0.0)
    else:
        highest, lowest = ((fixed + most) / safe)[defined], ((fixed + fewest) / safe)[defined]
    return float(lowest.min()), float(highest.max()), True


# -- AP -----------------------------------------------------------------------------------------------------------


def ap_numerators(relevant: np.ndarray, open_positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AP's numerator N (the sum of precisions at the relevant positions) of a list with relevant documents at
    `relevant` (finite positions) when m of the `open_positions` (finite, increasing) are made relevant, for every
    m from 0: with the earliest m (the largest N) and with the latest m (the smallest)."""
    rel_pos = np.sort(relevant)
    open_pos = np.asarray(open_positions, dtype=np.float64)
    # Relevant before each open position, and the sum of 1/p over the relevant after it.
    before = np.searchsorted(rel_pos, open_pos).astype(np.float64)
    inverse_after = np.concatenate([np.cumsum((1.0 / rel_pos)[::-1])[::-1], [0.0]])[before.astype(np.int64)]
    base = float((np.arange(1, rel_pos.size + 1) / rel_pos).sum())
    m = np.arange(1, open_pos.size + 1, dtype=np.float64)
    # Earliest first: the m-th one has m - 1 made relevant before it and none after.
    earliest = base + np.concatenate([[0.0], np.cumsum((before + m) / open_pos + inverse_after)])
    # Latest first: the m-th from the end has none before it and the m - 1 later ones after it.
    late_pos, late_before, late_after = open_pos[::-1], before[::-1], inverse_after[::-1]
    later = np.concatenate([[0.0], np.cumsum(1.0 / late_pos)])[:-1]
    latest = base + np.concatenate([[0.0], np.cumsum((late_before + 1.0) / late_pos + late_after + later)])
    return earliest, latest


def _best_of_two_counts(
    run_terms: np.ndarray, baseline_terms: np.ndarray, offset: int, fixed_count: int, zero_if_no_relevant: bool
) -> float | None:
    """The largest `(run_terms[i] - baseline_terms[j]) / (fixed_count + offset + i + j)` over i, j (the counts of
    documents made relevant beyond the first `offset`), by Dinkelbach's iteration: for a given ratio lambda the
    objective separates into one term per count. A pair with a denominator of 0 scores 0 under
    `zero_if_no_relevant` and is left out otherwise; None when no pair is left."""
    base = fixed_count + offset
    i_index, j_index = np.arange(run_terms.size), np.arange(baseline_terms.size)

    def best_pair(lam: float) -> tuple[int, int] | None:
        run_side = run_terms - lam * i_index
        baseline_side = -baseline_terms - lam * j_index
        i, j = int(run_side.argmax()), int(baseline_side.argmax())
        if base + i + j > 0:
            return i, j
        # The best pair has no relevant document: take the best of those with one on either side.
        options = []
        if run_terms.size > 1:
            options.append((run_side[1:].max() + baseline_side[0], int(run_side[1:].argmax()) + 1, 0))
        if baseline_terms.size > 1:
            options.append((run_side[0] + baseline_side[1:].max(), 0, int(baseline_side[1:].argmax()) + 1))
        if not options:
            return None
        _, i, j = max(options)
        return i, j

    def ratio(pair: tuple[int, int]) -> float:
        return float((run_terms[pair[0]] - baseline_terms[pair[1]]) / (base + pair[0] + pair[1]))

    found = best_pair(0.0)
    zero = [0.0] if zero_if_no_relevant and base == 0 else []
    if found is None:
        return zero[0] if zero else None
    lam = ratio(found)
    for _ in range(100):
        found = best_pair(lam)
        if found is None:
            break
        improved = ratio(found)
        if not improved > lam:
            break
        lam = improved
    return max([lam, *zero])


def _ap_extreme_exact(
    world: PairWorld, sign: float, hidden: int, can_relevant: bool, can_nonrelevant: bool, zero_if_no_relevant: bool
) -> float | None:
    """The largest (sign 1) or smallest (sign -1) AP difference with `hidden` unjudged documents among the rows not
    read, every subset of the shared documents tried (module docstring)."""
    in_run, in_baseline = np.isfinite(world.run_open), np.isfinite(world.baseline_open)
    shared = np.flatnonzero(in_run & in_baseline)
    run_only = np.sort(world.run_open[in_run & ~in_baseline])
    baseline_only = np.sort(world.baseline_open[in_baseline & ~in_run])
    neither = int((~in_run & ~in_baseline).sum()) + hidden
    neither_counts = sorted(set(_counts(neither, can_relevant, can_nonrelevant)))
    run_low, run_high = _counts(run_only.size, can_relevant, can_nonrelevant)
    base_low, base_high = _counts(baseline_only.size, can_relevant, can_nonrelevant)
    shared_sizes = range(shared.size + 1) if can_relevant and can_nonrelevant else [shared.size if can_relevant else 0]
    best: float | None = None
    for size in shared_sizes:
        for chosen in combinations(shared, size):
            picked = np.asarray(chosen, dtype=np.int64)
            run_relevant = np.concatenate([world.run_relevant[np.isfinite(world.run_relevant)], world.run_open[picked]])
            baseline_relevant = np.concatenate(
                [world.baseline_relevant[np.isfinite(world.baseline_relevant)], world.baseline_open[picked]])
            run_earliest, run_latest = ap_numerators(run_relevant, run_only)
            base_earliest, base_latest = ap_numerators(baseline_relevant, baseline_only)
            # The run's N as large (sign 1) or small as it goes, the baseline's the other way: sign * difference.
            run_terms = (run_earliest if sign > 0 else run_latest)[run_low:run_high + 1]
            baseline_terms = (base_latest if sign > 0 else base_earliest)[base_low:base_high + 1]
            for extra in neither_counts:
                found = _best_of_two_counts(
                    sign * run_terms, sign * baseline_terms, run_low + base_low + size + extra,
                    world.n_relevant_judged, zero_if_no_relevant,
                )
                if found is not None and (best is None or found > best):
                    best = found
    return None if best is None else sign * best


def _ap_extreme_bound(
    world: PairWorld, sign: float, hidden: int, can_relevant: bool, can_nonrelevant: bool, zero_if_no_relevant: bool
) -> float | None:
    """A value beyond every AP difference (<= for the maximum, >= for the minimum): for each total m of documents
    made relevant, the run's largest N over any m of them (its earliest open positions) less the baseline's
    smallest (the documents it does not hold first, then its latest), over J + m."""
    in_run, in_baseline = np.isfinite(world.run_open), np.isfinite(world.baseline_open)
    total = world.run_open.size + hidden
    low, high = _counts(total, can_relevant, can_nonrelevant)
    m = np.arange(low, high + 1)
    judged_run = world.run_relevant[np.isfinite(world.run_relevant)]
    judged_baseline = world.baseline_relevant[np.isfinite(world.baseline_relevant)]
    run_earliest, run_latest = ap_numerators(judged_run, np.sort(world.run_open[in_run]))
    base_earliest, base_latest = ap_numerators(judged_baseline, np.sort(world.baseline_open[in_baseline]))
    outside_run, outside_baseline = total - int(in_run.sum()), total - int(in_baseline.sum())
    if sign > 0:
        run_n = run_earliest[np.minimum(m, run_earliest.size - 1)]
        base_n = base_latest[np.clip(m - outside_baseline, 0, base_latest.size - 1)]
    else:
        run_n = run_latest[np.clip(m - outside_run, 0, run_latest.size - 1)]
        base_n = base_earliest[np.minimum(m, base_earliest.size - 1)]
    denominator = world.n_relevant_judged + m
    defined = denominator > 0
    values = list(((run_n - base_n)[defined] / denominator[defined]).tolist())
    if zero_if_no_relevant and not defined.all():
        values.append(0.0)
    if not values:
        return None
    coupled = float(max(values) if sign > 0 else min(values))
    # The two lists' own extremes in the pair's world (the other list's documents only count towards R) bound the
    # difference too: the tighter of the two bounds is kept.
    run_alone = _one_list_extreme(world, "run", sign, hidden, can_relevant, can_nonrelevant, zero_if_no_relevant)
    baseline_alone = _one_list_extreme(world, "baseline", -sign, hidden, can_relevant, can_nonrelevant,
                                       zero_if_no_relevant)
    if run_alone is None or baseline_alone is None:
        return coupled
    separate = run_alone - baseline_alone
    return min(coupled, separate) if sign > 0 else max(coupled, separate)


def _one_list_extreme(
    world: PairWorld, side: str, sign: float, hidden: int, can_relevant: bool, can_nonrelevant: bool,
    zero_if_no_relevant: bool,
) -> float | None:
    """The largest (sign 1) or smallest (sign -1) AP of one list of `world` (`side`: run or baseline), the other
    list's unjudged documents counting only towards R."""
    relevant, own = (world.run_relevant, world.run_open) if side == "run" else (world.baseline_relevant,
                                                                               world.baseline_open)
    alone = PairWorld(relevant, np.zeros(0), own, np.full(own.size, np.inf), world.n_relevant_judged)
    return _ap_extreme_exact(alone, sign, hidden, can_relevant, can_nonrelevant, zero_if_no_relevant)


def _ap_interval(
    world: PairWorld, can_relevant: bool, can_nonrelevant: bool, zero_if_no_relevant: bool
) -> Interval:
    """AP@k on positions already cut at k: exact up to `SHARED_ENUMERATED_MAX` shared documents, else a bound."""
    shared = int((np.isfinite(world.run_open) & np.isfinite(world.baseline_open)).sum())
    exact = shared <= SHARED_ENUMERATED_MAX or not (can_relevant and can_nonrelevant)
    extreme = _ap_extreme_exact if exact else _ap_extreme_bound
    low = [extreme(world, -1.0, hidden, can_relevant, can_nonrelevant, zero_if_no_relevant)
           for hidden in sorted(set(world.hidden))]
    high = [extreme(world, 1.0, hidden, can_relevant, can_nonrelevant, zero_if_no_relevant)
            for hidden in sorted(set(world.hidden))]
    lows, highs = [v for v in low if v is not None], [v for v in high if v is not None]
    if not lows or not highs:
        return None
    hidden_matters = world.hidden[0] != world.hidden[1] and can_relevant
    return min(lows), max(highs), exact and not hidden_matters


# -- the columnar side ------------------------------------------------------------------------------------------------

LIST_COLUMNS = ("positions", "grades", "grade_sets", "docs")


def _lists(ranked: pl.LazyFrame, spec: EvaluationSpec, keys: list[str]) -> pl.LazyFrame:
    """Per (`keys`, query) of a judged query: the world positions, grades (null: unjudged) and documents of the
    list, with its rows not read (`unseen`, `unseen_unjudged_min`)."""
    rows = with_grade_sets(world_rows(ranked, spec, gain_of(spec), [*keys, QUERY]))
    return rows.group_by([*keys, QUERY], maintain_order=True).agg(
        positions=pl.col("world_position"), grades=pl.col("relevance"), grade_sets=pl.col("grade_set"),
        docs=pl.col("doc_id"),
    )


def relevance_at(judgments: pl.LazyFrame, rel: int) -> pl.LazyFrame:
    """Per query at threshold `rel`: J, the judged documents surely relevant (`n_relevant_judged`: every grade they
    may have reaches `rel`), and the judged documents that may be relevant or not (`ambiguous_docs`: their grade is
    a set on both sides of `rel`, under an assessor model of `set` or `range`). Without grade sets J is trec_eval's
    `num_rel` and nothing is ambiguous."""
    judgments = with_grade_sets(judgments).filter(pl.col("relevance").is_not_null())
    lowest = pl.coalesce(pl.col("grade_set").list.min(), pl.col("relevance"))
    highest = pl.coalesce(pl.col("grade_set").list.max(), pl.col("relevance"))
    return judgments.group_by(QUERY).agg(
        n_relevant_judged=(lowest >= rel).sum().cast(pl.Int64),
        ambiguous_docs=pl.col("doc_id").filter((lowest < rel) & (highest >= rel)),
    )


def _state(grade: int | None, grade_set: Sequence[int] | None, rel: int) -> bool | None:
    """True (relevant at `rel`), False (not) or None (either: unjudged, or a set of grades on both sides)."""
    if grade_set:
        if min(grade_set) >= rel:
            return True
        return None if max(grade_set) >= rel else False
    return None if grade is None else grade >= rel


def _world_of(
    run: dict, baseline: dict | None, rel: int, n_relevant_judged: int, hidden: tuple[int, int],
    ambiguous: Sequence[str] = (),
) -> PairWorld:
    """The `PairWorld` of two lists (`positions`, `grades`, `grade_sets`, `docs` each; `baseline` None: the empty
    list) at `rel`. The `ambiguous` judged documents neither list holds may be relevant or not: they count towards
    R in some worlds only, as documents in neither list."""
    def states(side: dict) -> list[bool | None]:
        sets = side.get("grade_sets") or [None] * len(side["docs"])
        return [_state(g, gs, rel) for g, gs in zip(side["grades"], sets, strict=True)]

    def relevant_positions(side: dict | None) -> np.ndarray:
        if side is None:
            return np.zeros(0)
        return np.array([p for p, state in zip(side["positions"], states(side), strict=True) if state is True],
                        dtype=np.float64)

    def open_positions(side: dict | None) -> dict[str, float]:
        if side is None:
            return {}
        return {d: float(p) for d, p, state in zip(side["docs"], side["positions"], states(side), strict=True)
                if state is None}

    run_open, baseline_open = open_positions(run), open_positions(baseline)
    docs = list(dict.fromkeys([*run_open, *baseline_open, *ambiguous]))
    return PairWorld(
        relevant_positions(run), relevant_positions(baseline),
        np.array([run_open.get(d, np.inf) for d in docs], dtype=np.float64),
        np.array([baseline_open.get(d, np.inf) for d in docs], dtype=np.float64),
        n_relevant_judged, hidden,
    )


def _intervals_of_rows(
    frame: pl.DataFrame, measure: MeasureBase, zero_if_no_relevant: bool, paired: bool
) -> list[dict[str, object]]:
    """The interval of `measure` for each row of `frame` (one run's list, or a pair's two: `run_*` and
    `baseline_*` columns), as `INTERVAL_STRUCT` dicts."""
    rel: int = measure.rel  # type: ignore[attr-defined]
    rows = []
    for row in frame.iter_rows(named=True):
        scale = row["scale"]
        can_relevant, can_nonrelevant = any(g >= rel for g in scale), any(g < rel for g in scale)
        if paired:
            run = {c: row[f"run_{c}"] or [] for c in LIST_COLUMNS}
            baseline = {c: row[f"baseline_{c}"] or [] for c in LIST_COLUMNS}
        else:
            run, baseline = {c: row[c] for c in LIST_COLUMNS}, None
        world = _world_of(run, baseline, rel, row["n_relevant_judged"], (row["hidden_fewest"], row["hidden_most"]),
                          row["ambiguous_docs"] or [])
        found = difference_interval(measure.name, measure.cutoff, world, can_relevant, can_nonrelevant,
                                    zero_if_no_relevant, getattr(measure, "p", None))
        rows.append({"value_min": None, "value_max": None, "interval_kind": None} if found is None
                    else {"value_min": found[0], "value_max": found[1],
                          "interval_kind": "exact" if found[2] else "bound"})
    return rows


def binary_intervals(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    measures: Sequence[MeasureBase],
    grades: Sequence[int] | None = None,
) -> pl.LazyFrame:
    """`value_min`, `value_max` and `interval_kind` per query of the run, measure (its family) and cutoff, for each
    of `measures` (of `BINARY_INTERVAL_MEASURES`), over the world of `ranked` (as for
    `transforms.intervals.ndcg_intervals`, whose arguments these are): the run against the empty list. Only queries
    with something unjudged in their world get a row (`with_intervals` gives the others their value as both ends)."""
    if not measures:
        return pl.LazyFrame(schema=INTERVAL_ROWS)
    scale = assignable_grades(judgments, grades, spec)
    worlds = (
        _lists(ranked, spec, []).join(unseen_rows(ranked, judgments, [QUERY]), on=QUERY, how="inner")
        .join(_disputed_queries(judgments), on=QUERY, how="left")
        .filter(pl.col("grades").list.eval(pl.element().is_null()).list.any() | (pl.col("unseen") > 0)
                | pl.col("_disputed").fill_null(False))
        .drop("_disputed")
        .with_columns(hidden_fewest=pl.col("unseen_unjudged_min"), hidden_most=pl.col("unseen"))
        .join(scale.select(scale=pl.col("relevance").implode()), how="cross")
    )
    return _with_measures(worlds, judgments, spec, measures, [QUERY], paired=False, names=INTERVAL_STRUCT)


def _disputed_queries(judgments: pl.LazyFrame) -> pl.LazyFrame:
    """The queries with a judged document whose grade is a set (`_disputed` true): their world is open even when
    nothing retrieved is unjudged."""
    return (with_grade_sets(judgments).filter(pl.col("grade_set").is_not_null()).select(QUERY).unique()
            .with_columns(_disputed=pl.lit(True)))


def _with_measures(
    worlds: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec, measures: Sequence[MeasureBase],
    keys: list[str], paired: bool, names: pl.Struct,
) -> pl.LazyFrame:
    """One row per world and measure with the measure's interval, as the struct `names` unnested."""
    zero = spec.no_relevant == "zero"
    inputs = [c for c in worlds.collect_schema().names() if c not in keys]
    frames = []
    for measure in measures:
        def one_batch(batch: pl.Series, measure: MeasureBase = measure) -> pl.Series:
            rows = _intervals_of_rows(batch.struct.unnest(), measure, zero, paired)
            return pl.Series(batch.name, rows, dtype=INTERVAL_STRUCT).struct.rename_fields(list(names.to_schema()))

        rel: int = measure.rel  # type: ignore[attr-defined]
        frames.append(
            worlds.join(relevance_at(judgments, rel), on=QUERY, how="left")
            .with_columns(pl.col("n_relevant_judged").fill_null(0))
            .select(
                *keys,
                measure=pl.lit(measure.family),
                cutoff=pl.lit(measure.cutoff, pl.Int32),
                interval=pl.struct(*inputs, "n_relevant_judged", "ambiguous_docs").map_batches(
                    one_batch, return_dtype=names),
            )
            .unnest("interval")
        )
    frame = pl.concat(frames, how="vertical")
    if not paired:
        return frame.select(list(INTERVAL_ROWS)).cast(INTERVAL_ROWS)
    return frame


DIFFERENCE_STRUCT = pl.Struct({"difference_min": pl.Float64(), "difference_max": pl.Float64(),
                               "difference_kind": pl.String()})


def binary_difference_intervals(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    measures: Sequence[MeasureBase],
    pairs: pl.LazyFrame,
    grades: Sequence[int] | None = None,
    every_query: bool = False,
) -> pl.LazyFrame:
    """`difference_min`, `difference_max` and `difference_kind` of the run less the baseline per pair (`pairs`:
    `baseline`, `run`), judged query where either list holds something unjudged, measure (its family) and cutoff,
    for each of `measures`, one assignment for both lists. `ranked` holds every run's ranked-and-judged rows with a
    `run` column (as `transforms.paired_intervals.pair_worlds` takes them). `every_query`: also the queries where
    nothing is open (their difference is fixed), as `pair_worlds` gives them."""
    keys = ["baseline", "run", QUERY]
    if not measures:
        return pl.LazyFrame(schema=DIFFERENCE_ROWS)
    scale = assignable_grades(judgments, grades, spec)
    lists = _lists(ranked, spec, ["run"]).join(unseen_rows(ranked, judgments, ["run", QUERY]), on=["run", QUERY],
                                               how="inner")

    def side(role: str) -> pl.LazyFrame:
        renamed = {c: f"{role}_{c}" for c in (*LIST_COLUMNS, "unseen", "unseen_unjudged_min")}
        return pairs.join(lists.rename({"run": role, **renamed}), on=role)

    def unjudged_docs(role: str) -> pl.Expr:
        return pl.col(f"{role}_docs").list.gather(
            pl.col(f"{role}_grades").list.eval(pl.element().is_null().arg_true())
        ).fill_null(pl.lit([], pl.List(pl.String)))

    worlds = (
        side("baseline").join(side("run"), on=keys, how="full", coalesce=True, nulls_equal=True)
        .with_columns(_run_open=unjudged_docs("run"), _baseline_open=unjudged_docs("baseline"))
        .with_columns(
            # Unjudged documents one list holds and the other does not: the other's rows not read may hold them.
            _only_run=pl.col("_run_open").list.set_difference("_baseline_open").list.len().cast(pl.Int64),
            _only_baseline=pl.col("_baseline_open").list.set_difference("_run_open").list.len().cast(pl.Int64),
        )
        .with_columns(
            hidden_fewest=pl.max_horizontal(
                pl.lit(0, pl.Int64),
                pl.col("baseline_unseen_unjudged_min").fill_null(0) - pl.col("_only_run"),
                pl.col("run_unseen_unjudged_min").fill_null(0) - pl.col("_only_baseline"),
            ),
            hidden_most=pl.col("baseline_unseen").fill_null(0) + pl.col("run_unseen").fill_null(0),
        )
        .join(_disputed_queries(judgments), on=QUERY, how="left")
        .filter(pl.lit(every_query) | (pl.col("_run_open").list.len() + pl.col("_baseline_open").list.len() > 0)
                | (pl.col("hidden_most") > 0) | pl.col("_disputed").fill_null(False))
        .with_columns(n_unjudged=pl.col("_run_open").list.set_union("_baseline_open").list.len().cast(pl.Int64))
        .select(*keys, *[f"{r}_{c}" for r in ("run", "baseline") for c in LIST_COLUMNS], "hidden_fewest",
                "hidden_most", "n_unjudged")
        .join(scale.select(scale=pl.col("relevance").implode()), how="cross")
    )
    return _with_measures(worlds, judgments, spec, measures, [*keys, "n_unjudged"], paired=True,
                          names=DIFFERENCE_STRUCT).select(
        *keys, "cutoff", "measure", "difference_min", "difference_max", pl.col("difference_kind").cast(INTERVAL_KIND),
        "n_unjudged",
    )
