"""Exact nDCG intervals over unjudged documents (SPEC section 6): the smallest and largest value a query's nDCG@k
can take when every unjudged document the run retrieved (to its depth) receives some grade of the scale.

Belongs here: the pure computation of `value_min` and `value_max` from ranked-and-judged rows (one row per
retrieved document with its nullable grade), the optimisation kernel behind it, and nothing else (no I/O).

The world is closed over the retrieved documents: documents nobody retrieved stay as they are (unjudged documents
outside the run are not imagined). For one query and cutoff the value is `(C + sum_i a_i w_i) / IDCG(a)`:
`C` is the credit of the judged documents, `a_i` the gain given to unjudged document `i`, `w_i >= 0` the weight of
its position (its discount within k; under `ties='average'` its tie group's discounts within k shared equally; 0
beyond k) and `IDCG(a)` the ideal DCG of the judged universe plus the assigned gains.

Method (exact, no enumeration). For a fixed multiset of assigned gains the ideal is fixed, and the numerator is
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

from collections.abc import Sequence

import numpy as np
import polars as pl

from judged.schemas.spec import EvaluationSpec

QUERY = "query_id"
PAIR = [QUERY, "doc_id"]

EXACT_SLOTS_MAX = 600
"""Unjudged slots (weighted, plus those below k that can enter the ideal) up to which the exact programme runs; its
work grows with the square of this number per gain level and step."""

INTERVAL_KINDS: tuple[str, ...] = ("exact", "bound")

INTERVAL_COLUMNS: dict[str, pl.DataType] = {
    "value_min": pl.Float64(),
    "value_max": pl.Float64(),
    "interval_kind": pl.Enum(list(INTERVAL_KINDS)),
}


# -- the kernel: one query, one cutoff ----------------------------------------------------------------------------


def _discount_prefix(length: int, cutoff: int | None) -> np.ndarray:
    """D[p] = sum of the discounts of ideal positions 1..p (0 beyond the cutoff), D[0] = 0."""
    positions = np.arange(1, length + 1, dtype=np.float64)
    discounts = 1.0 / np.log2(positions + 1.0)
    if cutoff is not None:
        discounts[cutoff:] = 0.0
    return np.concatenate([[0.0], np.cumsum(discounts)])


class _World:
    """One query and cutoff: fixed credit, the slots' weights, the judged ideal gains and the gain levels."""

    def __init__(
        self,
        fixed: float,
        weights: np.ndarray,
        judged_ideal: np.ndarray,
        levels: np.ndarray,
        cutoff: int | None,
        zero_if_no_ideal: bool,
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
        self.discounts = _discount_prefix(len(judged_positive) + self.slots, cutoff)
        self.judged_ideal = float(judged_positive.size and self._ideal_of_counts(np.zeros(len(all_levels), np.int64)))
        # Under no_relevant='zero' with no judged gain, the ratio is taken over assignments with some positive gain.
        self.need_positive = self.judged_ideal <= 0 and zero_if_no_ideal
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
        """The assignment maximising sign * numerator - lam * ideal, as counts per level, and that maximum."""
        slots = self.slots
        prefix = np.concatenate([[0.0], np.cumsum(ordered)])
        index = np.arange(slots + 1)
        source, target = index[:, None], index[None, :]
        reachable = target >= source
        best = np.full(slots + 1, -np.inf)
        best[0] = sign * self.fixed
        choices: list[np.ndarray] = []
        for level, gain in enumerate(self.levels):
            if gain > 0:
                ideal_here = gain * (
                    self.discounts[self.at_or_above[level] + target] - self.discounts[self.above[level] + source]
                )
            else:
                ideal_here = np.zeros((1, 1))
            if self.assignable[level]:
                step = sign * gain * (prefix[target] - prefix[source]) - lam * ideal_here
                total = np.where(reachable, best[:, None] + step, -np.inf)
                chosen = total.argmax(axis=0)
                best = total[chosen, index]
            else:
                step = np.diagonal(np.broadcast_to(ideal_here, (slots + 1, slots + 1))) if gain > 0 else 0.0
                best = best - lam * step
                chosen = index
            if self.need_positive and level == self.last_positive:
                best[0] = -np.inf
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
        iteration; None when no assignment has one."""
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

    def bound(self, sign: float, assignable: np.ndarray) -> float:
        """A value every assignment's ratio lies beyond (<= for the maximum, >= for the minimum): the best
        numerator over whichever ideal extreme makes it larger (smaller)."""
        total_weight = float(self.weights.sum())
        top, bottom = float(assignable.max()), float(assignable.min())
        numerator = self.fixed + (top if sign > 0 else bottom) * total_weight
        positive = assignable[assignable > 0]
        lowest_ideal = self.judged_ideal if self.judged_ideal > 0 else float(positive.min() if positive.size else 0)
        counts_top = np.where(self.levels == top, self.slots, 0) if top > 0 else np.zeros(len(self.levels), np.int64)
        highest_ideal = self._ideal_of_counts(counts_top) if top > 0 else self.judged_ideal
        if sign > 0:
            return numerator / (lowest_ideal if numerator >= 0 else highest_ideal)
        return numerator / (highest_ideal if numerator >= 0 else lowest_ideal)


def ndcg_interval(
    fixed: float,
    weights: Sequence[float],
    judged_ideal: Sequence[float],
    levels: Sequence[float],
    cutoff: int | None,
    zero_if_no_ideal: bool,
) -> tuple[float, float, bool] | None:
    """(min, max, exact) of `(fixed + sum_i a_i w_i) / IDCG(judged_ideal + a)` over every `a_i` in `levels`.

    `weights` are the unjudged slots' weights (0 for a slot below the cutoff that can only raise the ideal),
    `judged_ideal` the gains of the judged ideal universe, `levels` the gains a slot may take. None when no
    assignment gives a positive ideal and `zero_if_no_ideal` is false (the value is null); with it true such
    assignments score 0."""
    levels_array = np.unique(np.asarray(levels, dtype=np.float64))
    if levels_array.size == 0:
        raise ValueError("an interval needs at least one grade in the scale")
    world = _World(
        float(fixed),
        np.asarray(weights, dtype=np.float64),
        np.asarray(judged_ideal, dtype=np.float64),
        levels_array,
        cutoff,
        zero_if_no_ideal,
    )
    if world.judged_ideal <= 0 and not zero_if_no_ideal:
        return None
    zero_reachable = world.need_positive and (world.slots == 0 or bool((levels_array <= 0).any()))
    exact = world.slots <= EXACT_SLOTS_MAX
    if world.need_positive and world.last_positive < 0:
        ends: list[float] = []
    elif exact:
        ends = [end for end in (world.extreme(-1.0), world.extreme(1.0)) if end is not None]
    else:
        ends = [world.bound(-1.0, levels_array), world.bound(1.0, levels_array)]
    if zero_reachable:
        ends.append(0.0)
    if not ends:
        return None
    return min(ends), max(ends), exact


# -- the columnar side: ranked-and-judged rows in, one interval per query and cutoff out ----------------------------


def _discount(position: pl.Expr) -> pl.Expr:
    return 1.0 / (position.cast(pl.Float64) + 1.0).log(2)


def _world_rows(rows: pl.LazyFrame, spec: EvaluationSpec, gain: pl.Expr) -> pl.LazyFrame:
    """The list once every unjudged document is judged: its positions and tie groups (under condensed lists,
    judged documents with a negative grade stay removed)."""
    if spec.unjudged == "condensed":
        rows = rows.filter(pl.col("relevance").is_null() | (pl.col("relevance") >= 0))
    return rows.with_columns(
        world_position=pl.col("rank").rank("ordinal").over(QUERY).cast(pl.Int64),
        tie_group=pl.col("sort_key").rank("dense", descending=True).over(QUERY).cast(pl.Int64),
        world_gain=gain,
    )


def _weight(cutoff: int | None, ties: str) -> pl.Expr:
    within = pl.lit(True) if cutoff is None else pl.col("world_position") <= cutoff
    discount = pl.when(within).then(_discount(pl.col("world_position"))).otherwise(0.0)
    if ties == "average":
        return discount.sum().over(QUERY, "tie_group") / pl.len().over(QUERY, "tie_group")
    return discount


def ndcg_intervals(
    ranked: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec, grades: Sequence[int]
) -> pl.LazyFrame:
    """`value_min`, `value_max` and `interval_kind` per query of the run and cutoff.

    `ranked` holds the run's rows ranked under the spec (`rank_run`) with their nullable `relevance`
    (`attach_judgments`), `sort_key` and the query's `n_retrieved`; it may be only each query's first rows (a
    top-k read), the rest being counted by `n_retrieved`. `grades` is the grade scale the unjudged documents may
    take. Queries whose value is null get null ends; the caller joins these rows to the per-query table."""
    from judged.transforms.measures.ndcg import gain_of  # one definition of the gain

    scale = sorted({int(g) for g in grades if spec.unjudged != "condensed" or g >= 0})
    if not scale:
        raise ValueError("the grade scale is empty: intervals need the grades an unjudged document may take")
    levels = pl.LazyFrame({"relevance": scale}, schema={"relevance": pl.Int32}).select(
        levels=gain_of(spec).implode()
    )
    world = _world_rows(ranked, spec, gain_of(spec))
    judged_counts = judgments.filter(pl.col("relevance").is_not_null()).group_by(QUERY).agg(
        n_judged_docs=pl.len().cast(pl.Int64)
    )
    if spec.ideal == "judged":
        judged_ideal = judgments.filter(pl.col("relevance").is_not_null()).group_by(QUERY).agg(
            judged_ideal=gain_of(spec).filter(gain_of(spec) > 0)
        )
    else:
        judged_ideal = world.group_by(QUERY).agg(
            judged_ideal=pl.col("world_gain").filter(pl.col("world_gain") > 0)
        )
    # The rows given (before a condensed list drops judged negatives), against the query's rows retrieved.
    seen = ranked.group_by(QUERY).agg(
        n_seen=pl.len().cast(pl.Int64),
        n_judged_seen=pl.col("relevance").is_not_null().sum().cast(pl.Int64),
        n_retrieved=pl.col("n_retrieved").first().cast(pl.Int64),
    )
    per_cutoff = []
    for cutoff in spec.cutoffs:
        weighted = world.with_columns(weight=_weight(cutoff, spec.ties))
        unjudged = pl.col("relevance").is_null()
        per_query = weighted.group_by(QUERY).agg(
            fixed=(pl.col("world_gain") * pl.col("weight")).filter(~unjudged).sum(),
            weights=pl.col("weight").filter(unjudged & (pl.col("weight") > 0)),
            unjudged_below=(unjudged & (pl.col("weight") <= 0)).sum().cast(pl.Int64),
        )
        per_cutoff.append(
            per_query.join(seen, on=QUERY, how="left")
            .join(judged_ideal, on=QUERY, how="left")
            .join(judged_counts, on=QUERY, how="left")
            .join(levels, how="cross")
            .with_columns(
                pl.lit(cutoff, pl.Int32).alias("cutoff"),
                pl.col("judged_ideal").fill_null(pl.lit([], pl.List(pl.Float64))),
                pl.col("n_judged_docs").fill_null(0),
                # Rows of a top-k read not seen: how many of them can be unjudged, at least and at most.
                unseen=(pl.col("n_retrieved") - pl.col("n_seen")).clip(lower_bound=0),
            )
            .with_columns(
                unseen_unjudged_min=(pl.col("unseen") - (pl.col("n_judged_docs") - pl.col("n_judged_seen"))).clip(
                    lower_bound=0
                ),
            )
        )
    frame = pl.concat(per_cutoff, how="vertical")
    zero_if_no_ideal = spec.no_relevant == "zero"

    def interval_of(row: dict) -> dict:
        cutoff = row["cutoff"]
        weights = list(row["weights"])
        cap = len(row["judged_ideal"]) + len(weights) + row["unjudged_below"] + row["unseen"]
        if cutoff is not None:
            cap = cutoff  # at most k documents below the cutoff can enter an ideal cut at k
        fewest = min(row["unjudged_below"] + row["unseen_unjudged_min"], cap)
        most = min(row["unjudged_below"] + row["unseen"], cap)
        args = (row["fixed"], row["judged_ideal"], row["levels"], cutoff, zero_if_no_ideal)
        with_most = ndcg_interval(args[0], weights + [0.0] * most, *args[1:])
        with_fewest = with_most if fewest == most else ndcg_interval(args[0], weights + [0.0] * fewest, *args[1:])
        if with_most is None or with_fewest is None:
            return {"value_min": None, "value_max": None, "interval_kind": None}
        exact = with_most[2] and with_fewest[2] and fewest == most
        # Fewer documents below k can only lower the ideal: the maximum with the fewest, the minimum with the most.
        return {
            "value_min": with_most[0],
            "value_max": with_fewest[1],
            "interval_kind": "exact" if exact else "bound",
        }

    interval_type = pl.Struct(
        {"value_min": pl.Float64(), "value_max": pl.Float64(), "interval_kind": pl.String()}
    )
    inputs = ["cutoff", "fixed", "weights", "unjudged_below", "unseen", "unseen_unjudged_min", "judged_ideal", "levels"]
    return (
        frame.with_columns(
            interval=pl.struct(inputs).map_elements(interval_of, return_dtype=interval_type),
        )
        .unnest("interval")
        .select(
            QUERY,
            "cutoff",
            "value_min",
            "value_max",
            pl.col("interval_kind").cast(INTERVAL_COLUMNS["interval_kind"]),
        )
    )


def with_intervals(per_query: pl.LazyFrame, intervals: pl.LazyFrame) -> pl.LazyFrame:
    """The per-query table with `value_min`, `value_max` and `interval_kind` beside `value`: null where the value is
    null, and the value itself where the run retrieved nothing (a judged query missing from the run)."""
    joined = per_query.join(intervals, on=[QUERY, "cutoff"], how="left", nulls_equal=True, maintain_order="left")
    defined = pl.col("value").is_not_null()
    no_rows = pl.col("interval_kind").is_null()
    return joined.with_columns(
        value_min=pl.when(defined).then(pl.when(no_rows).then(pl.col("value")).otherwise(pl.col("value_min"))),
        value_max=pl.when(defined).then(pl.when(no_rows).then(pl.col("value")).otherwise(pl.col("value_max"))),
        interval_kind=pl.when(defined).then(
            pl.when(no_rows).then(pl.lit("exact")).otherwise(pl.col("interval_kind").cast(pl.String))
        ).cast(INTERVAL_COLUMNS["interval_kind"]),
    )
