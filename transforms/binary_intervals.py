"""Intervals of the binary measures (P@k, R@k, RR, R-Prec, AP) over unjudged documents (SPEC section 6), and RBP's.

Belongs here: the smallest and largest value each binary measure can take when every unjudged document the run
retrieved (to its depth) receives some grade of the judgment set's scale, and RBP's `[value, value + residual]`.
nDCG's intervals are in transforms/intervals.py, whose world this module shares: documents nobody retrieved stay as
they are, a document's position is its place in the list once every unjudged document is judged (under condensed
lists judged documents of a negative grade stay removed, and the scale's negative grades are left out), and a top-k
read's rows not seen are counted (`unseen`, of which at least `unseen_unjudged_min` are unjudged).

A binary measure only asks whether a grade reaches the threshold `rel`, so an unjudged document is relevant or not:
either, if the scale has grades on both sides of `rel`, otherwise the one its grades allow. With `J` the judged
documents of grade >= `rel` (retrieved or not), each method below is exact (`interval_kind` `exact`) except where
the rows not read hold an unknown number of unjudged documents that changes an end (R@k, AP: `bound`).

- P@k: the relevant among the first k are the judged relevant plus any number of the unjudged among them.
- RR@k: the smallest value leaves every unjudged document non-relevant; the largest is 1 / the first position
  within k holding an unjudged or a judged relevant document.
- R@k = (r + a) / (J + a + b), `a` the unjudged within k made relevant, `b` those below k (and not read). It grows
  with `a` (as r <= J + b) and falls with `b`: the largest at the most `a` and fewest `b`, the smallest the other
  way round.
- AP@k = N / (J + m + b), `m` the unjudged within k made relevant, `b` those below k. For a fixed `m` the
  denominator is fixed, and moving a relevant document to an earlier position never lowers the numerator N (the
  moved document's precision rises at least as much as the skipped documents' fall: (c + 1) / i + sum over the m'
  relevant between of 1 / p >= (c + m' + 1) / j for i < p < j), so N is largest with the earliest `m` unjudged
  documents relevant and smallest with the latest `m`; `b` only adds to the denominator. Each `m` is tried: exact,
  in time linear in the list.
- R-Prec = hits(R) / R with R = J + t, `t` the unjudged documents made relevant: for a fixed `t` the cut R is
  fixed, and hits is largest with the earliest `t` relevant and smallest with the latest. Each `t` is tried: exact.
- RBP: `[value, value + residual]`, Moffat & Zobel's residual. Its upper end counts the tail past the list, p^n,
  which no grade given to a retrieved document reaches: `bound` wherever the residual is positive. A condensed
  list has no unjudged document, so no residual: there RBP's interval is the closed world's, exact: the judged
  relevant documents' credit, plus every unjudged document's weight (1 - p) p^(i-1) at its world position i for
  the largest value.

Where no assignment is defined (no relevant document at all: `J + m + b = 0`) the measure scores 0 under
`no_relevant='zero'` and the interval is null where the value is (under `null`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from judged.schemas.fields import QUERY
from judged.schemas.measures import AP, RBP, RR, MeasureBase, Precision, Recall, RPrecision
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import PER_QUERY
from judged.transforms.intervals import INTERVAL_STRUCT, assignable_grades, unseen_rows, world_rows
from judged.transforms.judging import relevant_judged
from judged.transforms.measures.ndcg import gain_of

INTERVAL_ROWS = {
    name: dtype for name, dtype in PER_QUERY.items()
    if name in (QUERY, "measure", "cutoff", "value_min", "value_max", "interval_kind")
}
"""The interval rows every method gives, in the per-query table's types, for `transforms.intervals.with_intervals`."""
BINARY_INTERVAL_MEASURES: tuple[type[MeasureBase], ...] = (Precision, Recall, RR, RPrecision, AP)
"""The measures whose interval this module computes from the world; RBP's comes from its residual
(`with_rbp_intervals`; from the world under condensed lists: `interval_measures`)."""


def interval_measures(spec: EvaluationSpec) -> tuple[list[MeasureBase], list[str]]:
    """The spec's measures whose interval `binary_intervals` computes, and the families of those whose interval is
    `[value, value + residual]` (`with_rbp_intervals`)."""
    world = [m for m in spec.measure_list() if isinstance(m, BINARY_INTERVAL_MEASURES)]
    residual = [m for m in spec.measure_list() if isinstance(m, RBP)]
    if spec.unjudged == "condensed":
        return world + residual, []
    return world, [m.family for m in residual]

Interval = tuple[float, float, bool] | None
"""(value_min, value_max, exact), or None where no assignment has a value."""


def _choices(count: int, can_relevant: bool, can_nonrelevant: bool) -> tuple[int, int]:
    """The fewest and most of `count` unjudged documents that can be made relevant."""
    return (0 if can_nonrelevant else count), (count if can_relevant else 0)


def _ratio(numerator: np.ndarray, denominator: np.ndarray, zero_if_no_relevant: bool) -> np.ndarray | None:
    """numerator / denominator, 0 where the denominator is 0 (no_relevant='zero'); None if such a ratio is null."""
    undefined = denominator <= 0
    if undefined.any() and not zero_if_no_relevant:
        return None
    return np.where(undefined, 0.0, numerator / np.where(undefined, 1.0, denominator))


def binary_interval(
    name: str,
    cutoff: int | None,
    positions: Sequence[int],
    relevant: Sequence[bool | None],
    n_relevant_judged: int,
    unseen: tuple[int, int],
    can_relevant: bool,
    can_nonrelevant: bool,
    zero_if_no_relevant: bool,
    persistence: float | None = None,
) -> Interval:
    """The interval of measure `name` (P, R, RR, R-Prec, AP; RBP with its `persistence`) at `cutoff` for one
    query's world: `positions` of its documents (increasing), `relevant` for each (None: unjudged),
    J = `n_relevant_judged`, and the fewest and most unjudged documents among the rows not read (`unseen`, all
    below every cutoff)."""
    position = np.asarray(positions, dtype=np.float64)
    unjudged = np.array([flag is None for flag in relevant], dtype=bool)
    judged_relevant = np.array([flag is True for flag in relevant], dtype=bool)
    within = np.ones(position.size, dtype=bool) if cutoff is None else position <= cutoff
    relevant_k, unjudged_k = int((judged_relevant & within).sum()), int((unjudged & within).sum())
    below = int((unjudged & ~within).sum())
    fewest_k, most_k = _choices(unjudged_k, can_relevant, can_nonrelevant)
    # Below k: the fewest relevant with the fewest unseen unjudged, the most with the most.
    fewest_below = _choices(below + unseen[0], can_relevant, can_nonrelevant)[0]
    most_below = _choices(below + unseen[1], can_relevant, can_nonrelevant)[1]
    below_exact = unseen[0] == unseen[1] or not can_relevant
    if name == "P":
        k = float(cutoff or 0)
        return (relevant_k + fewest_k) / k, (relevant_k + most_k) / k, True
    if name == "RR":
        first_relevant = position[judged_relevant & within].min(initial=np.inf)
        first_open = min(first_relevant, position[unjudged & within].min(initial=np.inf))
        all_nonrelevant, best = 1.0 / first_relevant, 1.0 / first_open  # 1 / inf = 0: none within k
        if not can_relevant:
            return all_nonrelevant, all_nonrelevant, True
        return (all_nonrelevant if can_nonrelevant else best), best, True
    if name == "RBP" and persistence is not None:
        weight = (1.0 - persistence) * persistence ** (position - 1.0)
        judged_credit, open_credit = float(weight[judged_relevant].sum()), float(weight[unjudged].sum())
        # Rows not read (never the case: RBP reads every row) could add at most the tail past those read.
        tail = persistence ** float(position.size) if unseen[1] else 0.0
        return (judged_credit + (0.0 if can_nonrelevant else open_credit),
                judged_credit + (open_credit + tail if can_relevant else 0.0), not unseen[1])
    if name == "R":
        ends = _ratio(
            np.array([relevant_k + fewest_k, relevant_k + most_k], dtype=np.float64),
            np.array([n_relevant_judged + fewest_k + most_below, n_relevant_judged + most_k + fewest_below]),
            zero_if_no_relevant,
        )
        return None if ends is None else (float(ends[0]), float(ends[1]), below_exact)
    if name == "AP":
        return _ap_interval(position, judged_relevant, unjudged, within, n_relevant_judged, (fewest_k, most_k),
                            (fewest_below, most_below), below_exact, zero_if_no_relevant)
    if name == "R-Prec":
        return _rprec_interval(position, judged_relevant, unjudged, n_relevant_judged, unseen,
                               can_relevant, can_nonrelevant, zero_if_no_relevant)
    raise ValueError(f"no interval method for {name}")


def _ap_interval(
    position: np.ndarray,
    judged_relevant: np.ndarray,
    unjudged: np.ndarray,
    within: np.ndarray,
    n_relevant_judged: int,
    made_relevant: tuple[int, int],
    below: tuple[int, int],
    below_exact: bool,
    zero_if_no_relevant: bool,
) -> Interval:
    """AP@k's interval: for each count m of unjudged documents within k made relevant, the numerator with the
    earliest m (largest) and with the latest m (smallest) over J + m + b (module docstring)."""
    rel_pos = position[judged_relevant & within]
    open_pos = position[unjudged & within]
    # Judged relevant before each unjudged position, and the sum of 1/p over the judged relevant after it.
    before = np.searchsorted(rel_pos, open_pos).astype(np.float64)
    inverse_after = np.concatenate([np.cumsum((1.0 / rel_pos)[::-1])[::-1], [0.0]])[before.astype(np.int64)]
    base = float((np.arange(1, rel_pos.size + 1) / rel_pos).sum())
    m = np.arange(1, open_pos.size + 1, dtype=np.float64)
    # Earliest first: the m-th one has m - 1 made relevant before it and none after.
    earliest = np.concatenate([[0.0], np.cumsum((before + m) / open_pos + inverse_after)])
    # Latest first: the m-th from the end has none before it and the m - 1 later ones after it.
    late_pos, late_before, late_after = open_pos[::-1], before[::-1], inverse_after[::-1]
    later = np.concatenate([[0.0], np.cumsum(1.0 / late_pos)])[:-1]
    latest = np.concatenate([[0.0], np.cumsum((late_before + 1.0) / late_pos + late_after + later)])
    counts = np.arange(made_relevant[0], made_relevant[1] + 1)
    highest = _ratio(base + earliest[counts], n_relevant_judged + counts + below[0], zero_if_no_relevant)
    lowest = _ratio(base + latest[counts], n_relevant_judged + counts + below[1], zero_if_no_relevant)
    if highest is None or lowest is None:
        return None
    return float(lowest.min()), float(highest.max()), below_exact


def _rprec_interval(
    position: np.ndarray,
    judged_relevant: np.ndarray,
    unjudged: np.ndarray,
    n_relevant_judged: int,
    unseen: tuple[int, int],
    can_relevant: bool,
    can_nonrelevant: bool,
    zero_if_no_relevant: bool,
) -> Interval:
    """R-Prec's interval: for each count t of unjudged documents made relevant, R = J + t and the hits in the first
    R with the earliest t (largest) and the latest t (smallest). A run read to its first rows only (never the case:
    R-Prec reads every row) gets the trivial bound."""
    if unseen[1] > 0:
        return 0.0, 1.0, False
    total = int(unjudged.sum())
    low, high = _choices(total, can_relevant, can_nonrelevant)
    t = np.arange(low, high + 1)
    cut = n_relevant_judged + t
    relevant_by = np.searchsorted(position[judged_relevant], cut, side="right")
    unjudged_by = np.searchsorted(position[unjudged], cut, side="right")
    most = relevant_by + np.minimum(t, unjudged_by)
    fewest = relevant_by + np.maximum(0, t - (total - unjudged_by))
    highest = _ratio(most.astype(np.float64), cut.astype(np.float64), zero_if_no_relevant)
    lowest = _ratio(fewest.astype(np.float64), cut.astype(np.float64), zero_if_no_relevant)
    if highest is None or lowest is None:
        return None
    return float(lowest.min()), float(highest.max()), True


# -- the columnar side ------------------------------------------------------------------------------------------------

WORLD_COLUMNS = ("positions", "grades", "unseen", "unseen_unjudged_min")


def binary_intervals(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    measures: Sequence[MeasureBase],
    grades: Sequence[int] | None = None,
) -> pl.LazyFrame:
    """`value_min`, `value_max` and `interval_kind` per query of the run, measure (its family) and cutoff, for each
    of `measures` (of `BINARY_INTERVAL_MEASURES`), over the world of `ranked` (as for
    `transforms.intervals.ndcg_intervals`, whose arguments these are). Only queries with something unjudged in
    their world get a row (`with_intervals` gives the others their value as both ends)."""
    if not measures:
        return pl.LazyFrame(schema=INTERVAL_ROWS)
    scale = assignable_grades(judgments, grades, spec)
    world = world_rows(ranked, spec, gain_of(spec), [QUERY]).group_by(QUERY, maintain_order=True).agg(
        positions=pl.col("world_position"), grades=pl.col("relevance")
    )
    worlds = (
        world.join(unseen_rows(ranked, judgments, [QUERY]), on=QUERY, how="inner")
        .filter(pl.col("grades").list.eval(pl.element().is_null()).list.any() | (pl.col("unseen") > 0))
        .join(scale.select(scale=pl.col("relevance").implode()), how="cross")
    )
    zero = spec.no_relevant == "zero"
    frames = []
    for measure in measures:
        rel: int = measure.rel  # type: ignore[attr-defined]

        def one_batch(batch: pl.Series, name: str = measure.name, cutoff: int | None = measure.cutoff,
                      rel: int = rel, persistence: float | None = getattr(measure, "p", None)) -> pl.Series:
            rows = []
            for row in batch.struct.unnest().iter_rows(named=True):
                can_relevant = any(grade >= rel for grade in row["scale"])
                can_nonrelevant = any(grade < rel for grade in row["scale"])
                relevant = [None if grade is None else grade >= rel for grade in row["grades"]]
                if not (can_relevant or can_nonrelevant):
                    found = None  # no grade to give an unjudged document
                else:
                    found = binary_interval(
                        name, cutoff, row["positions"], relevant, row["n_relevant_judged"],
                        (row["unseen_unjudged_min"], row["unseen"]), can_relevant, can_nonrelevant, zero, persistence,
                    )
                rows.append(
                    {"value_min": None, "value_max": None, "interval_kind": None} if found is None
                    else {"value_min": found[0], "value_max": found[1], "interval_kind": "exact" if found[2] else "bound"}
                )
            return pl.Series(batch.name, rows, dtype=INTERVAL_STRUCT)

        frames.append(
            worlds.join(relevant_judged(judgments, rel), on=QUERY, how="left")
            .with_columns(pl.col("n_relevant_judged").fill_null(0))
            .select(
                QUERY,
                measure=pl.lit(measure.family),
                cutoff=pl.lit(measure.cutoff, pl.Int32),
                interval=pl.struct(*WORLD_COLUMNS, "scale", "n_relevant_judged").map_batches(
                    one_batch, return_dtype=INTERVAL_STRUCT
                ),
            )
            .unnest("interval")
        )
    return pl.concat(frames, how="vertical").select(list(INTERVAL_ROWS)).cast(INTERVAL_ROWS)


def with_rbp_intervals(per_query: pl.LazyFrame, families: Sequence[str]) -> pl.LazyFrame:
    """The per-query rows with RBP's interval on the rows of `families`: `[value, value + residual]`, exact where the
    residual is 0 (nothing unjudged) and `bound` elsewhere (the residual counts the tail past the list, which no
    grade given to a retrieved document reaches); null where the value is. A residual is never negative, so the
    interval holds the value."""
    if not families:
        return per_query
    rbp = pl.col("measure").is_in(list(families)) & pl.col("value").is_not_null()
    residual = pl.col("residual").fill_null(0.0)
    return per_query.with_columns(
        value_min=pl.when(rbp).then(pl.col("value")).otherwise(pl.col("value_min")),
        value_max=pl.when(rbp).then(pl.col("value") + residual).otherwise(pl.col("value_max")),
        interval_kind=pl.when(rbp).then(
            pl.when(residual > 0).then(pl.lit("bound")).otherwise(pl.lit("exact"))
        ).otherwise(pl.col("interval_kind").cast(pl.String)),
    )
