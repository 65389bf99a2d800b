"""Exact nDCG intervals over unjudged documents (docs/method.md): the smallest and largest value a query's nDCG@k
can take when every unjudged document the run retrieved (to its depth) receives some grade of the scale.

Belongs here: the pure computation of `value_min` and `value_max` from ranked-and-judged rows (one row per
retrieved document with its nullable grade), the optimisation kernel behind it, and nothing else (no I/O).

The world is closed over the retrieved documents: documents nobody retrieved stay as they are (unjudged documents
outside the run are not imagined). For one query and cutoff the value is `(C + sum_i a_i w_i) / IDCG(a)`:
`C` is the credit of the judged documents, `a_i` the gain given to unjudged document `i`, `w_i >= 0` the weight of
its position (its discount within k; under `ties='average'` its tie group's discounts within k shared equally; 0
beyond k) and `IDCG(a)` the ideal DCG of the judged universe plus the assigned gains.

Method (exact). Up to `ENUMERATED_MULTISETS_MAX` multisets of grades over the unjudged slots (286 for a top 10 and
four grades) are enumerated, vectorised, each laid over the slots by rearrangement (below). Longer lists are not
enumerated: for a fixed multiset of assigned gains the ideal is fixed, and the numerator is
largest when the highest gains take the largest weights and smallest when they take the smallest (rearrangement),
so an assignment is a count per gain level laid over the slots sorted by weight. A dynamic programme over the gain
levels (highest first) with the number of slots already used as its state maximises `N(a) - lambda * IDCG(a)`
exactly, because both the numerator and the ideal split into one term per level that depends only on the slots
used before it and the count at it (a level's documents take the ideal positions right after the judged and
assigned documents of higher gain). Dinkelbach's iteration on lambda then finds the extreme ratio in a few steps
(Dinkelbach 1967, "On nonlinear fractional programming"); it stops at an attained assignment, so the interval ends
are values of real assignments. Unjudged documents below k carry weight 0 and only raise the ideal; at most k of
them can enter an ideal cut at k, so at most k are kept.

Rows are `bound` instead of `exact` in two cases, and then the interval provably contains the exact one: a list
with more unjudged slots than `EXACT_SLOTS_MAX` (a deep cutoff; the bound is the best numerator over the smallest
ideal and the worst numerator over the largest), and a run read only to its first k rows where the rows not read
may hold a number of unjudged documents that matters (the maximum then assumes the fewest, the minimum the most).

Condensed lists (`unjudged='condensed'`): the value is computed with unjudged documents removed, but judging them
inserts them at their rank, so the interval is that of the list in which every unjudged document is judged with a
non-negative grade of the scale (a negative grade would remove it again, and the scale's negative grades are left
out). The condensed value itself need not lie inside that interval.

IDCG = 0: where the value is null (`no_relevant='null'`) the interval is null. Under `no_relevant='zero'` an
assignment that leaves the ideal at 0 scores 0, like the value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import combinations_with_replacement

import numpy as np
import polars as pl

from judged.schemas.fields import INTERVAL_KINDS, QUERY
from judged.schemas.measures import MeasureBase
from judged.schemas.spec import EvaluationSpec

ENUMERATED_MULTISETS_MAX = 2_000
"""Up to this many multisets of grades over the unjudged slots (286 for 10 slots and four grades) they are simply
enumerated, vectorised; beyond, the dynamic programme below runs."""

INTERVAL_KIND = pl.Enum(list(INTERVAL_KINDS))


# -- the kernel: one query, one cutoff ----------------------------------------------------------------------------


def discount_prefix(length: int, cutoff: int | None) -> np.ndarray:
    """D[p] = sum of the discounts of ideal positions 1..p (0 beyond the cutoff), D[0] = 0."""
    positions = np.arange(1, length + 1, dtype=np.float64)
    discounts = 1.0 / np.log2(positions + 1.0)
    if cutoff is not None:
        discounts[cutoff:] = 0.0
    return np.concatenate([[0.0], np.cumsum(discounts)])


class _World:
    """One query and cutoff: fixed credit, the slots' weights, the judged ideal gains and the gain levels.
    `need_positive`: no judged gain is positive, so only assignments giving some slot a positive gain have a
    positive ideal; the programme then leaves out the others (the caller says what an ideal of 0 scores)."""

    def __init__(
        self,
        fixed: float,
        weights: np.ndarray,
        judged_ideal: np.ndarray,
        levels: np.ndarray,
        cutoff: int | None,
    ) -> None:
        self.fixed = fixed
        self.weights = weights
        self.slots = len(weights)
        judged_positive = judged_ideal[judged_ideal > 0]
        # Every level the ideal can hold: the scale's gains (assignable) and the judged gains (fixed counts).
        all_levels = np.unique(np.concatenate([levels, judged_positive]))[::-1]
        self.levels = all_levels
        self.assignable = np.isin(all_levels, levels)
        self.above = np.array([(judged_positive > g).sum() for g in all_levels], dtype=np.int64)
        self.at_or_above = np.array([(judged_positive >= g).sum() for g in all_levels], dtype=np.int64)
        self.discounts = discount_prefix(len(judged_positive) + self.slots, cutoff)
        self.need_positive = judged_positive.size == 0
        positive = np.flatnonzero((all_levels > 0) & self.assignable)
        self.last_positive = int(positive[-1]) if positive.size else -1

    def _ideal_of_counts(self, counts: np.ndarray) -> float:
        used = np.concatenate([[0], np.cumsum(counts)])
        total = 0.0
        for index, gain in enumerate(self.levels):
            if gain > 0:
                total += gain * (
                    self.discounts[self.at_or_above[index] + used[index + 1]] - self.discounts[self.above[index] + used[index]]
                )
        return total

    def ratio_parts(self, counts: np.ndarray, ordered: np.ndarray) -> tuple[float, float]:
        """Numerator and ideal of the assignment giving `counts[l]` slots level l, laid over `ordered` weights."""
        prefix = np.concatenate([[0.0], np.cumsum(ordered)])
        used = np.concatenate([[0], np.cumsum(counts)])
        numerator = self.fixed + sum(
            gain * (prefix[used[i + 1]] - prefix[used[i]]) for i, gain in enumerate(self.levels)
        )
        return float(numerator), self._ideal_of_counts(counts)

    def best_counts(self, sign: float, lam: float, ordered: np.ndarray) -> tuple[float, np.ndarray] | None:
        """The assignment maximising sign * numerator - lam * ideal, as counts per level, and that maximum.

        A dynamic programme over the levels (highest gain first) whose state is the number of slots used so far.
        Moving from `s` to `t` used slots at a level of gain g adds `sign g (P[t] - P[s])` to the numerator (P the
        prefix sums of the ordered weights) and `g (D[a + t] - D[b + s])` to the ideal (D the discount prefix, a
        and b the judged documents at or above and above the level): a term of `t` less a term of `s`. So the best
        predecessor of every `t` is a running maximum over `s <= t`, and a level costs time linear in the slots."""
        slots = self.slots
        used = np.arange(slots + 1)
        prefix = np.concatenate([[0.0], np.cumsum(ordered)])
        best = np.full(slots + 1, -np.inf)
        best[0] = sign * self.fixed
        choices: list[np.ndarray] = []
        for level, gain in enumerate(self.levels):
            if gain > 0:
                ideal_to = gain * self.discounts[self.at_or_above[level] + used]
                ideal_from = gain * self.discounts[self.above[level] + used]
            else:
                ideal_to = ideal_from = np.zeros(slots + 1)
            if self.assignable[level]:
                credit = sign * gain * prefix
                source = best - credit + lam * ideal_from
                running = np.maximum.accumulate(source)
                chosen = np.maximum.accumulate(np.where(source == running, used, 0))
                best = running + credit - lam * ideal_to
            else:  # judged gains only: no slot takes this level
                chosen = used
                best = best - lam * (ideal_to - ideal_from)
            if self.need_positive and level == self.last_positive:
                best[0] = -np.inf  # no slot took a positive gain: the ideal stays 0
            choices.append(chosen)
        if not np.isfinite(best[slots]):
            return None
        counts = np.zeros(len(self.levels), dtype=np.int64)
        position = slots
        for level in range(len(self.levels) - 1, -1, -1):
            start = int(choices[level][position])
            counts[level] = position - start
            position = start
        return float(best[slots]), counts

    def extreme(self, sign: float) -> float | None:
        """The largest (sign=1) or smallest (sign=-1) ratio over assignments with a positive ideal, by Dinkelbach's
        iteration; None when no assignment has one. The value returned is that of an assignment found."""
        ordered = np.sort(self.weights)[::-1] if sign > 0 else np.sort(self.weights)
        found = self.best_counts(sign, 0.0, ordered)
        if found is None:
            return None
        numerator, ideal = self.ratio_parts(found[1], ordered)
        lam = sign * numerator / ideal
        for _ in range(100):
            found = self.best_counts(sign, lam, ordered)
            if found is None:  # cannot happen: the previous assignment is still feasible
                break
            numerator, ideal = self.ratio_parts(found[1], ordered)
            improved = sign * numerator / ideal
            if not improved > lam:
                break
            lam = improved
        return sign * lam


def ndcg_interval(
    fixed: float,
    weights: Sequence[float],
    judged_ideal: Sequence[float],
    levels: Sequence[float],
    cutoff: int | None,
    zero_if_no_ideal: bool,
    enumeration_limit: int = ENUMERATED_MULTISETS_MAX,
) -> tuple[float, float, bool] | None:
    """(min, max, exact) of `(fixed + sum_i a_i w_i) / IDCG(judged_ideal + a)` over every `a_i` in `levels`.

    `weights` are the unjudged slots' weights (0 for a slot below the cutoff that can only raise the ideal; a
    paired difference's may be negative: transforms/paired_intervals.py),
    `judged_ideal` the gains of the judged ideal universe, `levels` the gains a slot may take. An assignment that
    leaves the ideal at 0 scores 0 when `zero_if_no_ideal` is true; when it is false that assignment has no value
    (no_relevant='null'), and the interval is taken over the assignments that have one: None when none has. Up to
    `enumeration_limit` multisets of grades are enumerated, beyond it the programme runs (both exact, each end the
    value of an assignment; tests compare them)."""
    levels_array = np.unique(np.asarray(levels, dtype=np.float64))
    if levels_array.size == 0:  # no grade to give: only a list without unjudged documents has a value to keep
        if len(weights):
            return None
        levels_array = np.zeros(1)
    weights_array = np.asarray(weights, dtype=np.float64)
    judged = np.asarray(judged_ideal, dtype=np.float64)
    judged = judged[judged > 0]  # only positive gains enter an ideal ranking
    need_positive = judged.size == 0  # the ideal is positive only if some slot gets a positive gain
    if need_positive and (not (levels_array > 0).any() or weights_array.size == 0):
        # No assignment makes the ideal positive: every one scores 0, or none has a value.
        return (0.0, 0.0, True) if zero_if_no_ideal else None
    below = int((weights_array == 0).sum())
    if not need_positive and below and levels_array.min() >= 0 and fixed >= 0 and weights_array.min() >= 0:
        # Every numerator is >= 0 here, so a slot below the cutoff (weight 0, ideal only) takes the highest gain in
        # the minimum and the lowest in the maximum: it becomes a judged document of that gain, and only the
        # credited slots are left to optimise.
        credited = weights_array[weights_array > 0]
        top, bottom = levels_array.max(), levels_array.min()
        low_side = (credited, np.concatenate([judged, np.full(below if top > 0 else 0, top)]))
        high_side = (credited, np.concatenate([judged, np.full(below if bottom > 0 else 0, bottom)]))
    else:
        low_side = high_side = (weights_array, judged)
    args = (float(fixed), levels_array, cutoff, zero_if_no_ideal, enumeration_limit)
    if low_side is high_side and multisets(len(weights_array), len(levels_array)) <= enumeration_limit:
        low, high = _enumerated_ends(*low_side, float(fixed), levels_array, cutoff, zero_if_no_ideal=zero_if_no_ideal)
    else:
        low, high = _extreme(-1.0, *low_side, *args), _extreme(1.0, *high_side, *args)
    if low is None or high is None:
        return None
    return min(low, high), max(low, high), True


def disputed_sums(weights: Sequence[float], sets: Sequence[Sequence[float]]) -> dict[tuple[float, ...], tuple[float, float]]:
    """For documents credited `weights` whose gain may be any of `sets` (one set each: the grades several assessors
    gave, through the gain): per multiset of gains they can take (a sorted tuple), the largest and smallest sum of
    gain x weight over the assignments that give it. The ideal DCG depends on the gains only through their
    multiset, so these two sums are all an extreme needs of the documents (a dynamic programme over them)."""
    sums: dict[tuple[float, ...], tuple[float, float]] = {(): (0.0, 0.0)}
    for weight, allowed in zip(weights, sets, strict=True):
        grown: dict[tuple[float, ...], tuple[float, float]] = {}
        for gains, (most, least) in sums.items():
            for gain in sorted(set(float(g) for g in allowed)):
                key = tuple(sorted((*gains, gain)))
                credit = gain * float(weight)
                if key in grown:
                    grown[key] = (max(grown[key][0], most + credit), min(grown[key][1], least + credit))
                else:
                    grown[key] = (most + credit, least + credit)
        sums = grown
    return sums


def interval_with_disputes(
    fixed: float,
    weights: Sequence[float],
    judged_ideal: Sequence[float],
    levels: Sequence[float],
    cutoff: int | None,
    zero_if_no_ideal: bool,
    disputed_weights: Sequence[float] = (),
    disputed_sets: Sequence[Sequence[float]] = (),
    ideal_only_sets: Sequence[Sequence[float]] = (),
) -> tuple[float, float, bool] | None:
    """`ndcg_interval` when some judged documents have several possible gains (an assessor model of `set` or
    `range`): `disputed_weights` and `disputed_sets` are the credited ones' weights (of either sign) and allowed
    gains, `ideal_only_sets` those of the ones that only enter the ideal (below k, or retrieved by nobody). The
    unjudged slots (`weights`) take any of `levels`, as in `ndcg_interval`, to which this reduces without disputes.

    An ideal-only document raises the ideal with its gain, so the largest value gives every one of them its lowest
    gain when the numerator is >= 0 and its highest when < 0 (the smallest, the other way round): both choices are
    tried, each end the extreme of the two (as for the unjudged documents below k). Each choice is one world of
    the kernel of transforms/disputed_worlds.py (a programme over the disputed documents' gains, the unjudged
    slots' multisets enumerated) where it applies (gains >= 0, few enough multisets and states); otherwise one
    `ndcg_interval` per multiset of the disputed documents' gains (`disputed_sums`)."""
    # disputed_worlds builds on this module's kernel, hence the import here.
    from judged.transforms.disputed_worlds import disputed_ends_batch, fits_the_kernel

    if not disputed_weights and not ideal_only_sets:
        return ndcg_interval(fixed, weights, judged_ideal, levels, cutoff, zero_if_no_ideal)
    levels_array = np.unique(np.asarray(levels, dtype=np.float64))
    if levels_array.size == 0:
        if len(weights):
            return None
        levels_array = np.zeros(1)
    judged = [float(g) for g in judged_ideal if g > 0]
    configurations = {
        tuple(sorted(float(min(allowed)) for allowed in ideal_only_sets)),
        tuple(sorted(float(max(allowed)) for allowed in ideal_only_sets)),
    }
    every_gain = {0.0, *levels_array.tolist(), *judged, *(float(g) for allowed in disputed_sets for g in allowed),
                  *(g for configuration in configurations for g in configuration)}
    gains = np.array(sorted(every_gain, reverse=True))
    n_disputed = len(disputed_weights)
    if gains.min() < 0 or not fits_the_kernel(np.array([n_disputed]), np.array([-1 if cutoff is None else cutoff]),
                                              int((gains > 0).sum()), np.array([len(weights)]), levels_array.size)[0]:
        sums = disputed_sums(disputed_weights, disputed_sets)
        return _disputes_one_by_one(fixed, weights, judged_ideal, levels_array, cutoff, zero_if_no_ideal, sums,
                                    configurations)
    index = {float(g): i for i, g in enumerate(gains)}
    base = np.zeros((len(configurations), gains.size), dtype=np.int64)
    for row, configuration in enumerate(configurations):
        np.add.at(base[row], [index[g] for g in (*judged, *configuration)], 1)
    allowed = np.zeros((1, n_disputed, gains.size), dtype=bool)
    for document, gains_allowed in enumerate(disputed_sets):
        allowed[0, document, [index[float(g)] for g in gains_allowed]] = True
    low, high = disputed_ends_batch(
        np.array([float(fixed)]), np.asarray(weights, dtype=np.float64).reshape(1, -1),
        np.asarray(disputed_weights, dtype=np.float64).reshape(1, -1), allowed, np.array([n_disputed]),
        np.zeros(len(configurations), dtype=np.int64), base, np.full(len(configurations), zero_if_no_ideal), gains,
        np.isin(gains, levels_array), cutoff,
    )
    if np.isnan(low).all():
        return None
    return float(np.nanmin(low)), float(np.nanmax(high)), True


def _disputes_one_by_one(
    fixed: float, weights: Sequence[float], judged_ideal: Sequence[float], levels: np.ndarray, cutoff: int | None,
    zero_if_no_ideal: bool, sums: dict[tuple[float, ...], tuple[float, float]],
    configurations: set[tuple[float, ...]],
) -> tuple[float, float, bool] | None:
    """`interval_with_disputes` for a world too large to enumerate at once: one `ndcg_interval` per multiset of
    the disputed documents' gains (the programme takes the unjudged slots)."""
    lows, highs = [], []
    for ideal_only in configurations:
        for gains, (most, least) in sums.items():
            judged = [*judged_ideal, *ideal_only, *gains]
            for credit, ends in ((most, highs), (least, lows)):
                found = ndcg_interval(fixed + credit, weights, judged, levels, cutoff, zero_if_no_ideal)
                if found is not None:
                    ends.append(found)
    if not lows or not highs:
        return None
    return min(e[0] for e in lows + highs), max(e[1] for e in lows + highs), True


def multisets(slots: int, levels: int) -> int:
    return math.comb(slots + levels - 1, levels - 1)


@lru_cache(maxsize=512)
def count_vectors(slots: int, levels: int) -> np.ndarray:
    """Every way to give `slots` slots one of `levels` levels, as counts per level (one row each)."""
    rows = [np.bincount(choice, minlength=levels) for choice in combinations_with_replacement(range(levels), slots)]
    return np.array(rows, dtype=np.int64).reshape(-1, levels)


def _extreme(
    sign: float,
    weights: np.ndarray,
    judged: np.ndarray,
    fixed: float,
    levels: np.ndarray,
    cutoff: int | None,
    zero_if_no_ideal: bool,
    enumeration_limit: int,
) -> float | None:
    """The largest (sign 1) or smallest (sign -1) value: by enumerating the multisets of levels when there are at
    most `enumeration_limit` (vectorised, cheap for the usual top 10), else by the programme (`_World.extreme`).
    None when no assignment has a value (see `ndcg_interval`)."""
    if multisets(len(weights), len(levels)) <= enumeration_limit:
        return _enumerated_ends(weights, judged, fixed, levels, cutoff, (sign,), zero_if_no_ideal)[0]
    world = _World(fixed, weights, judged, levels, cutoff)
    end = world.extreme(sign)
    if zero_if_no_ideal and world.need_positive and bool((levels <= 0).any()):
        end = 0.0 if end is None else (max if sign > 0 else min)(end, 0.0)  # an ideal of 0 scores 0
    return end


def _enumerated_ends(
    weights: np.ndarray,
    judged: np.ndarray,
    fixed: float,
    levels: np.ndarray,
    cutoff: int | None,
    signs: tuple[float, ...] = (-1.0, 1.0),
    zero_if_no_ideal: bool = True,
) -> tuple[float | None, ...]:
    """The smallest (sign -1) and largest (sign 1) value over every multiset of levels given to the slots, each laid
    over the slots by rearrangement (highest levels on the largest weights for the maximum, on the smallest for the
    minimum). An assignment that leaves the ideal at 0 (only possible without a judged positive gain) scores 0, or,
    unless `zero_if_no_ideal`, has no value and is left out (None when every one is)."""
    level_set = {float(g) for g in levels}
    all_levels = np.array(sorted(level_set | {float(g) for g in judged}, reverse=True))
    assignable = [i for i, g in enumerate(all_levels) if g in level_set]
    counts = np.zeros((multisets(len(weights), len(levels)), len(all_levels)), dtype=np.int64)
    counts[:, assignable] = count_vectors(len(weights), len(levels))
    used_after = np.cumsum(counts, axis=1)
    used_before = used_after - counts
    discounts = discount_prefix(len(judged) + len(weights), cutoff)
    above = (judged[None, :] > all_levels[:, None]).sum(axis=1)
    at_or_above = (judged[None, :] >= all_levels[:, None]).sum(axis=1)
    positive = np.where(all_levels > 0, all_levels, 0.0)
    ideal = ((discounts[at_or_above + used_after] - discounts[above + used_before]) * positive).sum(axis=1)
    defined = ideal > 0
    if not (zero_if_no_ideal or defined.any()):
        return tuple(None for _ in signs)
    safe_ideal = np.where(defined, ideal, 1.0)
    ends: list[float | None] = []
    for sign in signs:
        ordered = np.sort(weights)[::-1] if sign > 0 else np.sort(weights)
        prefix = np.concatenate([[0.0], np.cumsum(ordered)])
        numerator = fixed + ((prefix[used_after] - prefix[used_before]) * all_levels).sum(axis=1)
        undefined = 0.0 if zero_if_no_ideal else -sign * np.inf
        values = np.where(defined, numerator / safe_ideal, undefined)
        ends.append(float(values.max() if sign > 0 else values.min()))
    return tuple(ends)


# -- the columnar side: ranked-and-judged rows in, one interval per query and cutoff out ----------------------------


def _discount(position: pl.Expr) -> pl.Expr:
    return 1.0 / (position.cast(pl.Float64) + 1.0).log(2)


def world_rows(rows: pl.LazyFrame, spec: EvaluationSpec, gain: pl.Expr, keys: list[str]) -> pl.LazyFrame:
    """The list once every unjudged document is judged: its positions and tie groups (under condensed lists,
    judged documents with a negative grade stay removed)."""
    # In rank order, so that every sum below adds in the same order whatever the order of the input rows.
    if spec.unjudged != "condensed" and "tie_group" in rows.collect_schema():
        # Ranked and judged rows (`ranked_and_judged`) whose list is not condensed: their positions and tie groups
        # are the world's.
        return rows.sort([*keys, "rank"]).with_columns(world_position=pl.col("rank"), world_gain=gain)
    rows = rows.filter(pl.col("relevance").is_null() | (pl.col("relevance") >= 0))
    return rows.sort([*keys, "rank"]).with_columns(
        world_position=pl.col("rank").rank("ordinal").over(keys).cast(pl.Int64),
        tie_group=pl.col("sort_key").rank("dense", descending=True).over(keys).cast(pl.Int64),
        world_gain=gain,
    )


def position_weight(cutoff: int | None, ties: str, keys: list[str]) -> pl.Expr:
    within = pl.lit(True) if cutoff is None else pl.col("world_position") <= cutoff
    discount = pl.when(within).then(_discount(pl.col("world_position"))).otherwise(0.0)
    if ties == "average":
        from judged.transforms.ranking import ordered_sum  # sums in row order: the same bits every time

        return ordered_sum(discount).over(*keys, "tie_group") / pl.len().over(*keys, "tie_group")
    return discount


def assignable_grades(judgments: pl.LazyFrame, grades: Sequence[int] | None, spec: EvaluationSpec) -> pl.LazyFrame:
    """The grades an unjudged document may take (`relevance`, one row each): the declared scale `grades`, else those
    present in the judgments; non-negative only in a condensed list, where a negative grade would remove the
    document again."""
    if grades is None:
        scale = judgments.select(pl.col("relevance").drop_nulls().unique().cast(pl.Int32))
    else:
        scale = pl.LazyFrame({"relevance": sorted(set(grades))}, schema={"relevance": pl.Int32})
    return scale.filter(pl.col("relevance") >= 0) if spec.unjudged == "condensed" else scale


def unseen_rows(ranked: pl.LazyFrame, judgments: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Per (`keys`) of a judged query in `ranked`: the rows of a top-k read not seen (`unseen`, the query's rows
    retrieved less the rows given) and how many of them are unjudged at least (`unseen_unjudged_min`: those the
    query's judged documents not seen cannot fill). Judged queries only: a query without judgments is never scored."""
    judged_docs = judgments.filter(pl.col("relevance").is_not_null()).group_by(QUERY).agg(
        n_judged_docs=pl.len().cast(pl.Int64)
    )
    # The rows given (before a condensed list drops judged negatives), against the query's rows retrieved.
    seen = ranked.group_by(keys).agg(
        n_seen=pl.len().cast(pl.Int64),
        n_judged_seen=pl.col("relevance").is_not_null().sum().cast(pl.Int64),
        n_retrieved=pl.col("n_retrieved").first().cast(pl.Int64),
    )
    unseen = (pl.col("n_retrieved") - pl.col("n_seen")).clip(lower_bound=0)
    return seen.join(judged_docs, on=QUERY, how="inner").select(
        *keys,
        unseen=unseen,
        unseen_unjudged_min=(unseen - (pl.col("n_judged_docs") - pl.col("n_judged_seen"))).clip(lower_bound=0),
    )


def with_grade_sets(rows: pl.LazyFrame) -> pl.LazyFrame:
    """`rows` with their `grade_set` (the grades a judged document may have under a set assessor model:
    transforms.assessors.resolve_assessors), a null list where they carry none."""
    if "grade_set" in rows.collect_schema().names():
        return rows
    return rows.with_columns(grade_set=pl.lit(None, pl.List(pl.Int32)))


def disputed_universe(judgments: pl.LazyFrame, spec: EvaluationSpec, keys: Sequence[str] = (QUERY,)) -> pl.LazyFrame:
    """Per `keys` (a query): the judged documents whose grade is a set (`disputed_universe_docs`) and the gains of
    their grades (`disputed_universe_sets`): the ideal gains any one of them."""
    from judged.transforms.measures.ndcg import gain_of

    disputed = with_grade_sets(judgments).filter(pl.col("grade_set").is_not_null())
    return disputed.group_by(list(keys)).agg(
        disputed_universe_docs=pl.col("doc_id"),
        disputed_universe_sets=pl.col("grade_set").list.eval(gain_of(spec, pl.element())),
    )


def interval_worlds(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    grades: Sequence[int] | None = None,
    by: Sequence[str] = (),
) -> pl.LazyFrame:
    """One row per (`by`..., query, cutoff) of a judged query: what the kernel needs (`fixed`, `weights` of the
    credited unjudged slots with their `unjudged_docs` and `unjudged_ranks`, `unjudged_below`, the unread rows'
    `unseen` and `unseen_unjudged_min`, `judged_ideal`, `levels`), and the judged documents whose grade is a set
    (`disputed_weights`, `disputed_sets` and `disputed_docs` of the credited ones, the query's
    `disputed_universe_docs` and `disputed_universe_sets`). `by` names columns of `ranked` that tell several
    rankings apart (e.g. an evaluation id). Arguments as for `ndcg_intervals`."""
    from judged.transforms.measures.ndcg import gain_of  # one definition of the gain
    from judged.transforms.ranking import ordered_sum

    keys = [*by, QUERY]
    scale = assignable_grades(judgments, grades, spec)
    levels = scale.select(levels=gain_of(spec).implode())
    judgments = with_grade_sets(judgments)
    certain = judgments.filter(pl.col("relevance").is_not_null() & pl.col("grade_set").is_null())
    world = with_grade_sets(world_rows(ranked, spec, gain_of(spec), keys))
    disputed = pl.col("grade_set").is_not_null()
    if spec.ideal == "judged":
        judged_ideal = certain.group_by(QUERY).agg(judged_ideal=gain_of(spec).filter(gain_of(spec) > 0))
        universe = disputed_universe(judgments, spec)
        ideal_keys = [QUERY]
    else:
        judged_ideal = world.filter(~disputed).group_by(keys).agg(
            judged_ideal=pl.col("world_gain").filter(pl.col("world_gain") > 0))
        universe = disputed_universe(world.filter(disputed), spec, keys)
        ideal_keys = keys
    # Only judged queries have a value to bound: the inner join with `unseen_rows` keeps them alone.
    unseen = unseen_rows(ranked, judgments, keys)
    set_gains = pl.col("grade_set").list.eval(gain_of(spec, pl.element()))
    per_cutoff = []
    for cutoff in spec.cutoffs:
        weighted = world.with_columns(weight=position_weight(cutoff, spec.ties, keys))  # window columns keep the order
        unjudged = pl.col("relevance").is_null()
        credited_slot = unjudged & (pl.col("weight") > 0)
        credited_dispute = disputed & (pl.col("weight") > 0)
        per_query = weighted.group_by(keys).agg(
            fixed=ordered_sum((pl.col("world_gain") * pl.col("weight")).filter(~unjudged & ~disputed)).fill_null(0.0),
            weights=pl.col("weight").filter(credited_slot),
            unjudged_docs=pl.col("doc_id").filter(credited_slot),
            unjudged_ranks=pl.col("rank").filter(credited_slot),
            unjudged_below=(unjudged & (pl.col("weight") <= 0)).sum().cast(pl.Int64),
            disputed_weights=pl.col("weight").filter(credited_dispute),
            disputed_sets=set_gains.filter(credited_dispute),
            disputed_docs=pl.col("doc_id").filter(credited_dispute),
        )
        per_cutoff.append(
            per_query.join(unseen, on=keys, how="inner")
            .join(judged_ideal, on=ideal_keys, how="left")
            .join(universe, on=ideal_keys, how="left")
            .join(levels, how="cross")
            .with_columns(
                pl.lit(cutoff, pl.Int32).alias("cutoff"),
                pl.col("judged_ideal").fill_null(pl.lit([], pl.List(pl.Float64))),
                pl.col("disputed_universe_docs").fill_null(pl.lit([], pl.List(pl.String))),
                pl.col("disputed_universe_sets").fill_null(pl.lit([], pl.List(pl.List(pl.Float64)))),
            )
        )
    return pl.concat(per_cutoff, how="vertical")


def ideal_only_sets(world: dict) -> list[list[float]]:
    """The gain sets of a world's disputed documents that are not credited (below k, or retrieved by nobody): they
    only enter the ideal."""
    credited = set(world.get("disputed_docs") or [])
    universe = zip(world.get("disputed_universe_docs") or [], world.get("disputed_universe_sets") or [], strict=True)
    return [list(gains) for doc, gains in universe if doc not in credited]


def interval_of_world(world: dict, zero_if_no_ideal: bool) -> dict:
    """`value_min`, `value_max` and `interval_kind` of one row of `interval_worlds` (None ends: no value)."""
    cutoff = world["cutoff"]
    weights = list(world["weights"])
    cap = len(world["judged_ideal"]) + len(weights) + world["unjudged_below"] + world["unseen"]
    if cutoff is not None:
        cap = cutoff  # at most k documents below the cutoff can enter an ideal cut at k
    fewest = min(world["unjudged_below"] + world["unseen_unjudged_min"], cap)
    most = min(world["unjudged_below"] + world["unseen"], cap)
    disputes = (world.get("disputed_weights") or [], world.get("disputed_sets") or [],
                ideal_only_sets(world) if world.get("disputed_universe_docs") else [])

    def interval(below: int) -> tuple[float, float, bool] | None:
        return interval_with_disputes(world["fixed"], weights + [0.0] * below, world["judged_ideal"], world["levels"],
                                      cutoff, zero_if_no_ideal, *disputes)

    with_most = interval(most)
    with_fewest = with_most if fewest == most else interval(fewest)
    if with_fewest is None and fewest < most:
        # No world with the fewest has a value (nothing relevant yet): the fewest that can have one.
        with_fewest = interval(fewest + 1)
    if with_most is None or with_fewest is None:
        return {"value_min": None, "value_max": None, "interval_kind": None}
    exact = with_most[2] and with_fewest[2] and fewest == most
    # Fewer documents below k can only lower the ideal: the maximum with the fewest, the minimum with the most.
    return {
        "value_min": float(with_most[0]),
        "value_max": float(with_fewest[1]),
        "interval_kind": "exact" if exact else "bound",
    }


# -- many worlds at once ---------------------------------------------------------------------------------------------
# The usual world (a judged relevant document, non-negative grades, a short list of unjudged slots) is enumerated for
# every query of a batch in the same numpy operations as `_enumerated_ends` performs for one, in the same order, so
# the ends are the same bits; so is a world without a judged relevant document whose slots, those below k included,
# are few enough; `interval_of_world` takes every other world, one at a time.

ENUMERATED_BATCH_CELLS = 4_000_000
"""Queries x multisets x levels held at once by the batched enumeration (doubles: 32 MB a temporary)."""


def intervals_of_worlds(worlds: pl.Series, zero_if_no_ideal: bool) -> pl.Series:
    """`interval_of_world` of every row of `worlds` (a struct Series of `WORLD_INPUTS`), as an `INTERVAL_STRUCT`
    Series: the usual worlds batched (`_world_ends_batch`), the others one by one."""

    def one(row: dict) -> tuple[float | None, float | None, str | None]:
        ends = interval_of_world(row, zero_if_no_ideal)
        return ends["value_min"], ends["value_max"], ends["interval_kind"]

    return worlds_in_batches(
        worlds, ("value_min", "value_max", "interval_kind"),
        lambda frame, levels: usual_worlds(frame, levels, nonnegative_credit=True), _world_ends_batch, one,
        lambda frame: _ends_without_relevant_judgments(frame, zero_if_no_ideal),
    )


def worlds_in_batches(
    worlds: pl.Series,
    names: tuple[str, str, str],
    batchable: Callable[[pl.DataFrame, np.ndarray], np.ndarray],
    batch: Callable[[pl.DataFrame, np.ndarray, int | None, int], tuple[np.ndarray, np.ndarray, np.ndarray]],
    one: Callable[[dict], tuple[float | None, float | None, str | None]],
    other_batch: Callable[[pl.DataFrame], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None = None,
) -> pl.Series:
    """The (low, high, kind) of every world of `worlds` as a struct Series with fields `names`: the `batchable`
    worlds (one scale of non-negative gains) through `batch`, one call per cutoff and number of credited slots;
    of the others, those `other_batch` takes (the per-run intervals' worlds without a relevant judgment, the
    paired differences' disputed worlds: it returns which it took, then low, high and exact arrays, NaN ends where
    no assignment has a value) at once; the rest through `one`, row by row. Shared by the per-run and the paired
    intervals."""
    frame = worlds.struct.unnest()
    n = frame.height
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    kind = np.full(n, None, dtype=object)
    batched = np.zeros(n, dtype=bool)
    levels = np.unique(np.asarray(frame["levels"][0], dtype=np.float64)) if n else np.zeros(0)
    if n and levels.size and levels.min() >= 0 and frame["levels"].n_unique() == 1:
        batched = batchable(frame, levels)
        for cutoff, slots in frame.filter(pl.Series(batched)).select("cutoff", pl.col("weights").list.len()).unique(
            maintain_order=True
        ).iter_rows():
            in_group = batched & _group_mask(frame, cutoff, slots)
            group_low, group_high, exact = batch(frame.filter(pl.Series(in_group)), levels, cutoff, slots)
            low[in_group], high[in_group] = group_low, group_high
            kind[in_group] = np.where(exact, "exact", "bound")
    if other_batch is not None and not batched.all():
        rest = np.flatnonzero(~batched)
        taken, rest_low, rest_high, exact = other_batch(frame[rest])
        rows = rest[taken]
        low[rows], high[rows] = rest_low[taken], rest_high[taken]
        kind[rows] = np.where(np.isnan(rest_low[taken]), None, np.where(exact[taken], "exact", "bound"))
        batched[rows] = True
    for index in np.flatnonzero(~batched):
        row_low, row_high, kind[index] = one(frame.row(int(index), named=True))
        low[index] = np.nan if row_low is None else row_low
        high[index] = np.nan if row_high is None else row_high
    return pl.DataFrame(
        {
            names[0]: pl.Series(low, dtype=pl.Float64, nan_to_null=True),
            names[1]: pl.Series(high, dtype=pl.Float64, nan_to_null=True),
            names[2]: pl.Series(kind.tolist(), dtype=pl.String),
        }
    ).to_struct(worlds.name)


def usual_worlds(frame: pl.DataFrame, levels: np.ndarray, nonnegative_credit: bool) -> np.ndarray:
    """The worlds the batched enumeration computes: a judged gain above 0 (so the ideal is positive), every judged
    gain a gain of the scale, few enough multisets to enumerate and, with `nonnegative_credit` (the per-run
    intervals, whose slots below k then take the top gain in the minimum and the bottom one in the maximum: see
    `ndcg_interval`), a non-negative credit."""
    scale = pl.Series(levels.tolist(), dtype=pl.Float64)
    positive = pl.element().filter(pl.element() > 0)
    usual = frame.select(
        _without_disputes(frame)
        & (pl.col("judged_ideal").list.max() > 0)
        & pl.col("judged_ideal").list.eval(positive.is_in(scale.implode()).all()).list.first()
        & ((pl.col("fixed") >= 0) | pl.lit(not nonnegative_credit))
    ).to_series().fill_null(False).to_numpy()
    return usual & _enumerable(frame["weights"].list.len().to_numpy(), levels)


def _without_disputes(frame: pl.DataFrame) -> pl.Expr:
    """Whether a world of `frame` has no judged document whose grade is a set."""
    if "disputed_universe_docs" not in frame.columns:
        return pl.lit(True)
    return pl.col("disputed_universe_docs").list.len() == 0


def _enumerable(slots: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Whether the multisets of `levels` over each world's `slots` slots are few enough to enumerate."""
    fits = [multisets(n, levels.size) <= ENUMERATED_MULTISETS_MAX for n in range(int(slots.max(initial=0)) + 1)]
    return np.array(fits)[slots]


def _group_mask(frame: pl.DataFrame, cutoff: int | None, slots: int) -> np.ndarray:
    same_cutoff = frame["cutoff"].is_null() if cutoff is None else frame["cutoff"] == cutoff
    return (same_cutoff & (frame["weights"].list.len() == slots)).fill_null(False).to_numpy()


def _below_counts(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """`interval_of_world`'s fewest and most unjudged documents below k, per world of `frame`."""
    below, unseen = pl.col("unjudged_below"), pl.col("unseen")
    # At most k documents below the cutoff can enter an ideal cut at k; without a cutoff, every one can.
    every_document = (
        pl.col("judged_ideal").list.len().cast(pl.Int64) + pl.col("weights").list.len().cast(pl.Int64) + below + unseen)
    cap = pl.col("cutoff").cast(pl.Int64).fill_null(every_document)
    counts = frame.select(fewest=pl.min_horizontal(below + pl.col("unseen_unjudged_min"), cap),
                          most=pl.min_horizontal(below + unseen, cap))
    return counts["fewest"].to_numpy(), counts["most"].to_numpy()


def _world_ends_batch(
    frame: pl.DataFrame, levels: np.ndarray, cutoff: int | None, slots: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`interval_of_world` of worlds of one cutoff with `slots` credited slots each (rows of `usual_worlds`):
    (value_min, value_max, exact) arrays."""
    n_judged = frame["judged_ideal"].list.len().to_numpy()
    fewest, most = _below_counts(frame)
    all_levels = levels[::-1]  # highest first, as `_enumerated_ends` orders them
    at_level = judged_at_levels(frame, levels)
    weights = slot_matrix(frame, slots)
    fixed = frame["fixed"].to_numpy()
    discounts = discount_prefix(int(n_judged.max(initial=0) + slots + most.max(initial=0)), cutoff)

    def end(sign: float, below_k: np.ndarray) -> np.ndarray:
        """`ndcg_interval`'s smallest (sign -1) or largest (sign 1) value of the list with `below_k` unjudged
        documents below k: they are judged documents of the top gain for the minimum, of the bottom gain for the
        maximum (a gain of 0 stays out of the ideal)."""
        side, gain_column = at_level.copy(), (0 if sign < 0 else -1)
        if all_levels[gain_column] > 0:
            side[:, gain_column] += below_k
        return enumerated_ends_batch(weights, side, fixed, all_levels, discounts, sign, cutoff)

    same_below = bool(np.array_equal(fewest, most))
    low_most, high_most = end(-1.0, most), end(1.0, most)
    low_fewest = low_most if same_below else end(-1.0, fewest)
    high_fewest = high_most if same_below or all_levels[-1] <= 0 else end(1.0, fewest)
    # `ndcg_interval` orders its two ends; `interval_of_world` takes the minimum with the most unjudged documents
    # below k and the maximum with the fewest.
    value_min = np.minimum(low_most, high_most)
    value_max = np.maximum(low_fewest, high_fewest)
    return value_min, value_max, fewest == most


def worlds_without_relevant_judgments(frame: pl.DataFrame, levels: np.ndarray) -> np.ndarray:
    """The worlds of the per-run intervals that the batched enumeration computes without a judged gain above 0:
    no dispute, and few enough multisets to enumerate over the credited slots and the most unjudged documents
    below k (`_ends_without_relevant_judgments`)."""
    without_relevant = frame.select(
        _without_disputes(frame) & ~(pl.col("judged_ideal").list.max() > 0).fill_null(False)
    ).to_series().to_numpy()
    return without_relevant & _enumerable(frame["weights"].list.len().to_numpy() + _below_counts(frame)[1], levels)


def _ends_without_relevant_judgments(
    frame: pl.DataFrame, zero_if_no_ideal: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`interval_of_world` of the worlds of `frame` without a judged gain above 0, at once where the enumeration
    takes them (`worlds_without_relevant_judgments`): (taken, value_min, value_max, exact) arrays, NaN ends where no
    assignment has a value.

    The ideal is positive only in the assignments that give some slot a positive gain, so `ndcg_interval` keeps the
    unjudged documents below k as slots of weight 0 (they may be the only relevant ones) and enumerates over them
    as well: here too, for `interval_of_world`'s fewest and most of them and, where no assignment with the fewest
    has a value, one more than the fewest; the worlds with as many slots in all are enumerated together."""
    n = frame.height
    taken = np.zeros(n, dtype=bool)
    levels = np.unique(np.asarray(frame["levels"][0], dtype=np.float64)) if n else np.zeros(0)
    if not n or frame["levels"].n_unique() != 1 or not levels.size or levels.min() < 0 or not (levels > 0).any():
        return taken, np.full(n, np.nan), np.full(n, np.nan), taken
    taken = worlds_without_relevant_judgments(frame, levels)
    worlds = frame.filter(pl.Series(taken))  # only these are padded: the others' lists may be long
    m = worlds.height
    fewest, most = _below_counts(worlds)
    credited, slots = padded_rows(worlds["weights"])
    fixed = worlds["fixed"].to_numpy()
    cutoffs = worlds["cutoff"].fill_null(-1).to_numpy()  # -1: no cutoff
    all_levels = levels[::-1]

    def interval(rows_of: np.ndarray, below_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`ndcg_interval`'s (min, max) of the worlds `rows_of` (a mask) with `below_k` slots of weight 0 added;
        NaN where none."""
        low, high = np.full(m, np.nan), np.full(m, np.nan)
        total = slots + below_k
        for code, length in np.unique(np.stack([cutoffs[rows_of], total[rows_of]], axis=1), axis=0):
            rows = rows_of & (cutoffs == code) & (total == length)
            cutoff = None if code < 0 else int(code)
            if length == 0:  # nothing to assign: the ideal stays 0
                low[rows] = high[rows] = 0.0 if zero_if_no_ideal else np.nan
                continue
            weights = np.zeros((int(rows.sum()), length))
            width = min(length, credited.shape[1])
            weights[:, :width] = credited[rows, :width]  # each row's own weights, then 0 for the slots below k
            no_judged = np.zeros((weights.shape[0], all_levels.size), dtype=np.int64)
            discounts = discount_prefix(length, cutoff)
            ends = [enumerated_ends_batch(weights, no_judged, fixed[rows], all_levels, discounts, sign, cutoff,
                                          undefined=0.0 if zero_if_no_ideal else -sign * np.inf)
                    for sign in (-1.0, 1.0)]
            valued = np.isfinite(ends[0])
            low[rows] = np.where(valued, np.minimum(*ends), np.nan)
            high[rows] = np.where(valued, np.maximum(*ends), np.nan)
        return low, high

    every = np.ones(m, dtype=bool)
    low_most, high_most = interval(every, most)
    low_fewest, high_fewest = interval(fewest < most, fewest)
    same = fewest == most
    low_fewest[same], high_fewest[same] = low_most[same], high_most[same]
    # No world with the fewest has a value (nothing relevant yet): the fewest that can have one.
    retry = np.isnan(low_fewest) & (fewest < most)
    if retry.any():
        low_retry, high_retry = interval(retry, fewest + 1)
        low_fewest[retry], high_fewest[retry] = low_retry[retry], high_retry[retry]
    valued = ~np.isnan(low_most) & ~np.isnan(low_fewest)
    low, high, exact = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, dtype=bool)
    low[taken] = np.where(valued, low_most, np.nan)
    high[taken] = np.where(valued, high_fewest, np.nan)
    exact[taken] = same
    return taken, low, high, exact


def judged_at_levels(frame: pl.DataFrame, levels: np.ndarray) -> np.ndarray:
    """Per world (row of `frame`), how many judged documents of its `judged_ideal` lie at each level of `levels`
    (ascending; every positive judged gain one of them), as a worlds x levels matrix, highest level first."""
    judged = (
        frame.select(pl.col("judged_ideal").list.eval(pl.element().filter(pl.element() > 0)))
        .with_row_index("world")
        .explode("judged_ideal")
        .drop_nulls()
    )
    return counts_at_levels(judged["world"].to_numpy(), judged["judged_ideal"].to_numpy(), levels[::-1], frame.height)


def counts_at_levels(rows: np.ndarray, values: np.ndarray, levels: np.ndarray, n_rows: int) -> np.ndarray:
    """Rows x levels: how many of `values` (each belonging to the row in `rows`) lie at each of `levels`
    (descending; every value one of them)."""
    return np.bincount(
        rows.astype(np.int64) * levels.size + level_index(values, levels), minlength=n_rows * levels.size
    ).reshape(n_rows, levels.size)


def level_index(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The position of each of `values` in `levels` (descending; every value one of them)."""
    return levels.size - 1 - np.searchsorted(levels[::-1], values)


def padded_rows(lists: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Lists of floats of unequal lengths as a rows x longest matrix (0 after each row's own values), and each
    row's length."""
    counts = lists.list.len().fill_null(0).to_numpy().astype(np.int64)
    matrix = np.zeros((len(lists), int(counts.max(initial=0))))
    if matrix.size:
        rows = np.repeat(np.arange(len(lists)), counts)
        position = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
        matrix[rows, position] = lists.explode().drop_nulls().to_numpy()
    return matrix, counts


def slot_matrix(frame: pl.DataFrame, slots: int) -> np.ndarray:
    """The `weights` lists of worlds with `slots` slots each, as a worlds x slots matrix."""
    return frame["weights"].list.to_array(slots).to_numpy() if slots else np.zeros((frame.height, 0))


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a non-negative integer matrix and, per row, the index of its distinct row (as
    `np.unique(axis=0, return_inverse=True)`, through one integer code per row when the codes fit in 63 bits)."""
    base = int(rows.max(initial=0)) + 1
    if rows.shape[1] * math.log2(base) >= 62:
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
        return distinct, inverse.reshape(-1)
    codes = rows @ (base ** np.arange(rows.shape[1], dtype=np.int64))
    unique_codes, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return rows[first], inverse.reshape(-1)


def enumerated_ends_batch(
    weights: np.ndarray,
    judged_at_level: np.ndarray,
    fixed: np.ndarray,
    all_levels: np.ndarray,
    discounts: np.ndarray,
    sign: float,
    cutoff: int | None,
    undefined: float = 0.0,
) -> np.ndarray:
    """`_enumerated_ends` for one sign, for many worlds at once: `weights` (worlds x slots), the judged documents
    per level of `all_levels` (worlds x levels, highest level first), `fixed` per world, and what an assignment
    whose ideal is 0 scores (`undefined`: 0, or the infinity of the wrong sign for one that has no value, which is
    then the end where no assignment has one); the same operations along the same axes, so each world's end is the
    same bits as `_enumerated_ends` gives it.

    The ideal DCG of a multiset depends on the world only through how many judged documents lie at or above each
    level, and not at all beyond the cutoff (the discount prefix is flat there): it is computed once per distinct
    such vector, clipped at the cutoff, and gathered for the worlds that share it."""
    n_worlds, slots = weights.shape
    counts = count_vectors(slots, len(all_levels))
    used_after = np.cumsum(counts, axis=1)
    used_before = used_after - counts
    at_or_above = np.cumsum(judged_at_level, axis=1)
    if cutoff is not None:
        at_or_above = np.minimum(at_or_above, cutoff)
    distinct, world_vector = distinct_rows(at_or_above)
    above = np.concatenate([np.zeros((len(distinct), 1), dtype=distinct.dtype), distinct[:, :-1]], axis=1)
    positive = np.where(all_levels > 0, all_levels, 0.0)
    ideal_of_vector = (
        (discounts[distinct[:, None, :] + used_after] - discounts[above[:, None, :] + used_before]) * positive
    ).sum(axis=2)
    ordered = np.sort(weights, axis=1)[:, ::-1] if sign > 0 else np.sort(weights, axis=1)
    prefix = np.concatenate([np.zeros((n_worlds, 1)), np.cumsum(ordered, axis=1)], axis=1)
    result = np.empty(n_worlds)
    step = max(1, ENUMERATED_BATCH_CELLS // counts.size)
    for start in range(0, n_worlds, step):
        part = slice(start, start + step)
        ideal = ideal_of_vector[world_vector[part]]
        defined = ideal > 0
        safe_ideal = np.where(defined, ideal, 1.0)
        gained = prefix[part][:, used_after] - prefix[part][:, used_before]
        numerator = fixed[part, None] + (gained * all_levels).sum(axis=2)
        values = np.where(defined, numerator / safe_ideal, undefined)
        result[part] = values.max(axis=1) if sign > 0 else values.min(axis=1)
    return result


INTERVAL_STRUCT = pl.Struct({"value_min": pl.Float64(), "value_max": pl.Float64(), "interval_kind": pl.String()})
WORLD_INPUTS = (
    "cutoff", "fixed", "weights", "unjudged_below", "unseen", "unseen_unjudged_min", "judged_ideal", "levels",
    "disputed_weights", "disputed_sets", "disputed_docs", "disputed_universe_docs", "disputed_universe_sets",
)


def ndcg_intervals(
    ranked: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec, grades: Sequence[int] | None = None
) -> pl.LazyFrame:
    """`value_min`, `value_max` and `interval_kind` per query of the run and cutoff.

    `ranked` holds the run's rows ranked under the spec (`rank_run`) with their nullable `relevance`
    (`attach_judgments`), `sort_key` and the query's `n_retrieved`; it may be only each query's first rows (a
    top-k read), the rest being counted by `n_retrieved`. `grades` is the grade scale the unjudged documents may
    take: the judgment set's declared scale, or (None) the grades present in `judgments`. Queries whose value is
    null get null ends; the caller joins these rows to the per-query table (`with_intervals`)."""
    zero_if_no_ideal = spec.no_relevant == "zero"
    # A list with nothing unjudged or disputed in its world keeps its value as both ends (`with_intervals`), bit for
    # bit.
    worlds = interval_worlds(ranked, judgments, spec, grades).filter(
        (pl.col("weights").list.len() > 0) | (pl.col("unjudged_below") > 0) | (pl.col("unseen") > 0)
        | (pl.col("disputed_universe_docs").list.len() > 0)
    )
    return (
        worlds.with_columns(
            interval=pl.struct(WORLD_INPUTS).map_batches(
                lambda batch: intervals_of_worlds(batch, zero_if_no_ideal),
                return_dtype=INTERVAL_STRUCT,
            ),
        )
        .unnest("interval")
        .select(QUERY, "cutoff", "value_min", "value_max", pl.col("interval_kind").cast(INTERVAL_KIND))
    )


def with_missing_query_intervals(
    per_query: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec, measures: Sequence[MeasureBase]
) -> pl.LazyFrame:
    """A judged query the run did not return scores its measure's missing value under query set `judged`, when
    the measure has a value: without a surely relevant judgment that depends on the world once a judged document's
    grade is a set (an assessor model of `set` or `range`). Such a row, null now, gets the missing value as both ends,
    over the worlds in which one of those documents is relevant (`with_intervals` keeps an undefined row's ends)."""
    from judged.transforms.measures.ndcg import gain_of

    disputed = with_grade_sets(judgments).filter(pl.col("grade_set").is_not_null())
    if spec.query_set != "judged" or not measures:
        return per_query
    frames = []
    for measure in measures:
        if measure.name == "nDCG":
            may_be_relevant = pl.col("grade_set").list.eval(gain_of(spec, pl.element())).list.max() > 0
        else:
            may_be_relevant = pl.col("grade_set").list.max() >= measure.rel  # type: ignore[attr-defined]
        frames.append(disputed.filter(may_be_relevant).select(QUERY).unique().with_columns(
            measure=pl.lit(measure.family), cutoff=pl.lit(measure.cutoff, pl.Int32),
            _missing=pl.lit(measure.value_if_missing(), pl.Float64),
        ))
    opened = pl.concat(frames)
    joined = per_query.join(opened, on=[QUERY, "measure", "cutoff"], how="left", nulls_equal=True,
                            maintain_order="left")
    opens = (pl.col("status") == "missing_from_run") & pl.col("value").is_null() & pl.col("_missing").is_not_null()
    return joined.with_columns(
        value_min=pl.when(opens).then(pl.col("_missing")).otherwise(pl.col("value_min")),
        value_max=pl.when(opens).then(pl.col("_missing")).otherwise(pl.col("value_max")),
        interval_kind=pl.when(opens).then(pl.lit("exact")).otherwise(pl.col("interval_kind").cast(pl.String))
        .cast(INTERVAL_KIND),
    ).drop("_missing")


def with_intervals(
    per_query: pl.LazyFrame, intervals: pl.LazyFrame, families: Sequence[str] = ("nDCG",)
) -> pl.LazyFrame:
    """The per-query table with `value_min`, `value_max` and `interval_kind` beside `value`, for the rows of the
    measure `families` (every row when `intervals` has no `measure` column): the value itself where nothing is
    unjudged (`intervals` has no row: nothing retrieved is unjudged, or a judged query is missing from the run).

    A null value (no relevant judgment, under no_relevant='null') keeps the interval over the worlds in which the
    query has a value (some unjudged document made relevant), null where none has: the query may join the mean,
    and the summary counts it in (`transforms.summary.mean_interval`).

    The ends are widened to hold the value: `value_min = min(value_min, value)`, `value_max = max(value_max,
    value)`. The value and the ends are computed by different floating operations (an end may be an ulp or two
    short of a value it equals), and a condensed list's value is that of the list without its unjudged documents,
    which no assignment of the scale's non-negative grades need reach: so `value_min <= value <= value_max` holds
    exactly on every row, and the summary's means keep it (`transforms.summary`)."""
    keys = [QUERY, "cutoff", *(["measure"] if "measure" in intervals.collect_schema() else [])]
    joined = per_query.join(intervals, on=keys, how="left", nulls_equal=True, maintain_order="left")
    has_method = pl.col("measure").is_in(list(families)) if "measure" in keys else pl.lit(True)
    defined = pl.col("value").is_not_null() & has_method
    undefined_now = pl.col("value").is_null() & has_method & pl.col("value_min").is_not_null()
    no_rows = pl.col("interval_kind").is_null()
    value = pl.col("value")
    return joined.with_columns(
        value_min=pl.when(defined).then(
            pl.when(no_rows).then(value).otherwise(pl.min_horizontal(pl.col("value_min"), value))
        ).when(undefined_now).then(pl.col("value_min")),
        value_max=pl.when(defined).then(
            pl.when(no_rows).then(value).otherwise(pl.max_horizontal(pl.col("value_max"), value))
        ).when(undefined_now).then(pl.col("value_max")),
        interval_kind=pl.when(defined).then(
            pl.when(no_rows).then(pl.lit("exact")).otherwise(pl.col("interval_kind").cast(pl.String))
        ).when(undefined_now).then(pl.col("interval_kind").cast(pl.String)).cast(INTERVAL_KIND),
    )
