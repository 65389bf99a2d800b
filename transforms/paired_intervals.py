"""Paired difference intervals over unjudged documents (docs/method.md): the smallest and largest value of
nDCG@k(run) - nDCG@k(baseline) over every assignment of grades to the unjudged documents either run retrieved,
both runs seeing the same assignment.

Belongs here: the pure computation of `difference_min`, `difference_max` and `difference_kind` per pair of runs,
query and cutoff, from the runs' ranked-and-judged rows, its kernel, the per-run bound used where one world cannot
be shared, and the mean-difference interval of a pair. No I/O.

One world. With the ideal over the judged documents (`ideal='judged'`), both runs share the ideal DCG of the judged
universe plus the assigned grades, so per query the difference is `(F + sum_d a_d v_d) / IDCG(a)`: `F` is the
difference of the judged documents' credits, `a_d` the gain given to unjudged document `d` and `v_d = w_run(d) -
w_baseline(d)` the difference of its weights (its discount within k in each run, 0 outside; under `ties='average'`
its tie group's discounts shared equally). A document both runs weigh alike (`v_d = 0`: the same position in both
top k, or below k in both) only raises the ideal; call it ideal-only. This is the per-run problem of
transforms/intervals.py with weights of either sign, and its kernel (`ndcg_interval`: enumeration by
rearrangement, or the exact programme) solves it, given what the ideal-only documents get:

- the ideal grows with every gain, and for a fixed numerator the ratio moves away from 0 as the ideal shrinks;
- so the largest difference gives the ideal-only documents the bottom gain when it is >= 0 and the top gain when
  it is < 0, and the smallest the top gain when >= 0 and the bottom gain when < 0;
- hence both ends are ends of two problems without ideal-only slots: ideal-only documents judged at the bottom
  gain (the fewest of them) and at the top gain (the most of them). Each end is the extreme of the two.

At most k ideal-only documents can enter an ideal cut at k, so at most k are counted. A run read only to its first
rows (a top-k read) hides how many unjudged documents lie below: the count is then between a fewest and a most
(`ideal_only_fewest`, `ideal_only_most`) and the row is a `bound` unless they agree (capped at k, they usually do).

With the ideal over each run's retrieved documents (`ideal='retrieved'`) the two runs have different ideals and
no world is shared in that way: the difference is bounded by the per-run intervals, `[run_min - baseline_max,
run_max - baseline_min]` (`bound`), as it is for every measure but nDCG. The bound contains the exact interval,
since any assignment gives each run a value inside its own interval.

Queries are independent, so the interval of the mean difference over one assignment for every query is the
weighted mean of the per-query ends, under the spec's aggregation and query weights. A pair is decided when that
interval excludes 0 (beyond the tie tolerance of the comparison).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from judged.schemas.fields import PAIRED_QUERY, QUERY
from judged.schemas.tables import PAIRED_DIFFERENCE
from judged.schemas.spec import EvaluationSpec
from judged.transforms.disputed_worlds import (
    batch_gains, credited_disputes, disputed_ends_batch, fits_the_kernel, ideal_only_counts,
)
from judged.transforms.intervals import (
    INTERVAL_KIND, assignable_grades, discount_prefix, disputed_universe,
    enumerated_ends_batch, ideal_only_sets, interval_with_disputes, judged_at_levels, level_index, padded_rows,
    position_weight, slot_matrix, unseen_rows, usual_worlds, with_grade_sets, world_rows, worlds_in_batches,
)
from judged.transforms.ranking import ordered_sum

PAIR_KEYS = PAIRED_QUERY
DIFFERENCE_STRUCT = pl.Struct(
    {"difference_min": pl.Float64(), "difference_max": pl.Float64(), "difference_kind": pl.String()}
)
DIFFERENCE_INPUTS = (
    "cutoff", "fixed", "weights", "ideal_only_fewest", "ideal_only_most", "judged_ideal", "levels",
    "disputed_weights", "disputed_sets", "disputed_docs", "disputed_universe_docs", "disputed_universe_sets",
)


# -- the kernel: one pair, one query, one cutoff --------------------------------------------------------------------


def difference_interval(
    fixed: float,
    weights: Sequence[float],
    judged_ideal: Sequence[float],
    levels: Sequence[float],
    cutoff: int | None,
    zero_if_no_ideal: bool,
    ideal_only_fewest: int = 0,
    ideal_only_most: int = 0,
    disputed_weights: Sequence[float] = (),
    disputed_sets: Sequence[Sequence[float]] = (),
    ideal_only_sets: Sequence[Sequence[float]] = (),
) -> tuple[float, float, bool] | None:
    """(min, max, exact) of `(fixed + sum_i a_i weights_i) / IDCG(judged_ideal + a + ideal-only gains)` over every
    gain of `levels` for each credited slot (`weights`, nonzero, of either sign) and for each of the ideal-only
    documents, whose number is between `ideal_only_fewest` and `ideal_only_most` (capped by the caller); judged
    documents whose grade is a set are credited (`disputed_weights`, `disputed_sets`) or ideal-only
    (`ideal_only_sets`), as `transforms.intervals.interval_with_disputes` takes them. None when no assignment gives
    a value (no relevant document in any, and `zero_if_no_ideal` false)."""
    levels_array = np.unique(np.asarray(levels, dtype=np.float64))
    judged = np.asarray(judged_ideal, dtype=np.float64)
    judged = judged[judged > 0]
    exact_count = ideal_only_fewest == ideal_only_most
    disputes = (disputed_weights, disputed_sets, ideal_only_sets)
    if judged.size == 0:
        # The ideal may stay 0 (scored 0, or no value): the ideal-only documents are slots of weight 0 in the
        # kernel, since giving one a positive gain is what may give the query a value.
        found = [
            interval_with_disputes(fixed, [*weights, *[0.0] * count], judged, levels_array, cutoff, zero_if_no_ideal,
                                   *disputes)
            for count in sorted({ideal_only_fewest, ideal_only_most})
        ]
        ends = [end for end in found if end is not None]
        if not ends:
            return None
        return min(e[0] for e in ends), max(e[1] for e in ends), all(e[2] for e in ends) and exact_count
    if levels_array.size == 0:
        if len(weights) or ideal_only_most:
            return None
        levels_array = np.zeros(1)
    top, bottom = float(levels_array.max()), float(levels_array.min())
    at_bottom = interval_with_disputes(
        fixed, weights, np.concatenate([judged, np.full(ideal_only_fewest, bottom)]), levels_array, cutoff, False,
        *disputes,
    )
    at_top = interval_with_disputes(
        fixed, weights, np.concatenate([judged, np.full(ideal_only_most, top)]), levels_array, cutoff, False,
        *disputes,
    )
    if at_bottom is None or at_top is None:
        return None
    return min(at_bottom[0], at_top[0]), max(at_bottom[1], at_top[1]), at_bottom[2] and at_top[2] and exact_count


def differences_of_worlds(worlds: pl.Series, zero_if_no_ideal: bool) -> pl.Series:
    """`difference_interval` of every row of `worlds` (a struct Series of `DIFFERENCE_INPUTS`), as a
    `DIFFERENCE_STRUCT` Series: the usual worlds batched (`_difference_ends_batch`), the others one by one."""

    def one(row: dict) -> tuple[float | None, float | None, str | None]:
        end = difference_interval(
            row["fixed"], row["weights"], row["judged_ideal"], row["levels"], row["cutoff"], zero_if_no_ideal,
            row["ideal_only_fewest"], row["ideal_only_most"], row.get("disputed_weights") or [],
            row.get("disputed_sets") or [], ideal_only_sets(row) if row.get("disputed_universe_docs") else [],
        )
        return (None, None, None) if end is None else (end[0], end[1], "exact" if end[2] else "bound")

    return worlds_in_batches(
        worlds, ("difference_min", "difference_max", "difference_kind"),
        lambda frame, levels: usual_worlds(frame, levels, nonnegative_credit=False), _difference_ends_batch, one,
        lambda frame: _disputed_differences(frame, zero_if_no_ideal),
    )


def _disputed_differences(
    frame: pl.DataFrame, zero_if_no_ideal: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`difference_interval` of the worlds of `frame` with disputed documents, at once where the kernel of
    `transforms.disputed_worlds` takes them: (taken, difference_min, difference_max, exact) arrays, NaN ends where
    no assignment gives a value.

    Each world is the tasks `difference_interval` reduces it to: the ideal-only disputed documents at their lowest
    or their highest gains, times, with a judged relevant document, the ideal-only unjudged documents judged at the
    bottom gain (the fewest of them) or at the top gain (the most). Without one, those documents (the fewest or the
    most) only raise the ideal, which may stay 0 (scored as `zero_if_no_ideal` says): for a fixed numerator the
    value is monotone in the ideal, so the extremes take them all at the bottom gain, all at the top gain, or one
    at the lowest positive gain and the rest at the bottom (the smallest positive ideal), three tasks each. A
    world's ends are the extremes over its tasks."""
    n = frame.height
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    fewest, most = frame["ideal_only_fewest"].to_numpy(), frame["ideal_only_most"].to_numpy()
    taken = np.zeros(n, dtype=bool)
    if "disputed_universe_docs" not in frame.columns or not (frame["disputed_universe_docs"].list.len() > 0).any():
        return taken, low, high, fewest == most
    gains = batch_gains(frame)
    if gains is None or frame["levels"].n_unique() != 1:
        return taken, low, high, fewest == most
    scale = np.unique(np.asarray(frame["levels"][0], dtype=np.float64))
    if scale.size == 0:
        return taken, low, high, fewest == most
    taken = (frame["disputed_universe_docs"].list.len().to_numpy() > 0) & fits_the_kernel(
        frame["disputed_weights"].list.len().fill_null(0).to_numpy(), frame["cutoff"].fill_null(-1).to_numpy(),
        int((gains > 0).sum()), frame["weights"].list.len().fill_null(0).to_numpy(), scale.size)
    if not taken.any():
        return taken, low, high, fewest == most
    # Only the worlds the kernel takes are laid out as matrices below: the others' lists may be long.
    part = frame.filter(pl.Series(taken))
    m, fewest, most = part.height, fewest[taken], most[taken]
    assignable = np.isin(gains, scale)
    judged = judged_at_levels(part, gains[::-1])
    lowest, highest = ideal_only_counts(part, gains)
    has_judged = judged.sum(axis=1) > 0
    weights, _ = padded_rows(part["weights"])
    disputed_weights, allowed, n_disputed = credited_disputes(part, gains)
    top, bottom = level_index(np.array([scale.max(), scale.min()]), gains)
    lowest_positive = int(level_index(scale[scale > 0][:1], gains)[0]) if (scale > 0).any() else None
    with_judged, without = has_judged, ~has_judged
    task_world, task_base, task_zero = [], [], []

    def add_tasks(worlds: np.ndarray, base: np.ndarray, zero: bool) -> None:
        task_world.append(np.flatnonzero(worlds))
        task_base.append(base[worlds])
        task_zero.append(np.full(int(worlds.sum()), zero))

    for ideal_only in (lowest, highest):
        base = judged + ideal_only
        at_bottom, at_top = base.copy(), base.copy()
        if scale.min() > 0:
            at_bottom[:, bottom] += fewest
        at_top[:, top] += most
        add_tasks(with_judged, at_bottom, False)
        add_tasks(with_judged, at_top, False)
        for count in (fewest, most):
            all_bottom, all_top = base.copy(), base.copy()
            all_bottom[:, bottom] += count
            all_top[:, top] += count
            add_tasks(without, all_bottom, zero_if_no_ideal)
            add_tasks(without, all_top, zero_if_no_ideal)
            if lowest_positive is not None:
                one_positive = base.copy()
                one_positive[:, bottom] += np.maximum(count - 1, 0)
                one_positive[:, lowest_positive] += np.minimum(count, 1)
                add_tasks(without, one_positive, zero_if_no_ideal)
    world = np.concatenate(task_world)
    base, zero = np.concatenate(task_base), np.concatenate(task_zero)
    fixed = part["fixed"].to_numpy()
    task_low, task_high = np.full(world.size, np.nan), np.full(world.size, np.nan)
    groups = part.select("cutoff", slots=pl.col("weights").list.len()).with_row_index("world").group_by(
        "cutoff", "slots").agg("world")
    for cutoff, slot_count, worlds in groups.iter_rows():
        worlds = np.asarray(worlds)
        in_group = np.zeros(m, dtype=bool)
        in_group[worlds] = True
        tasks = np.flatnonzero(in_group[world])
        local = np.full(m, -1)
        local[worlds] = np.arange(worlds.size)
        task_low[tasks], task_high[tasks] = disputed_ends_batch(
            fixed[worlds], weights[worlds, :slot_count], disputed_weights[worlds], allowed[worlds],
            n_disputed[worlds], local[world[tasks]], base[tasks], zero[tasks], gains, assignable, cutoff,
        )
    part_low, part_high = np.full(m, np.nan), np.full(m, np.nan)
    np.fmin.at(part_low, world, task_low)
    np.fmax.at(part_high, world, task_high)
    low[taken], high[taken] = part_low, part_high
    exact = np.zeros(n, dtype=bool)
    exact[taken] = fewest == most
    return taken, low, high, exact


def _difference_ends_batch(
    frame: pl.DataFrame, levels: np.ndarray, cutoff: int | None, slots: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`difference_interval` of worlds of one cutoff with `slots` credited slots each (rows of `usual_worlds`), by
    the per-run intervals' batched enumeration (`transforms.intervals.enumerated_ends_batch`), the same operations
    as one world at a time: (difference_min, difference_max, exact) arrays."""
    all_levels = levels[::-1]  # highest first
    at_level = judged_at_levels(frame, levels)
    fewest, most = frame["ideal_only_fewest"].to_numpy(), frame["ideal_only_most"].to_numpy()
    weights, fixed = slot_matrix(frame, slots), frame["fixed"].to_numpy()
    discounts = discount_prefix(int(at_level.sum(axis=1).max(initial=0) + slots + most.max(initial=0)), cutoff)
    at_bottom, at_top = at_level.copy(), at_level.copy()
    if all_levels[-1] > 0:  # a gain of 0 stays out of the ideal
        at_bottom[:, -1] += fewest
    at_top[:, 0] += most

    def end(sign: float, side: np.ndarray) -> np.ndarray:
        return enumerated_ends_batch(weights, side, fixed, all_levels, discounts, sign, cutoff)

    low = np.minimum(end(-1.0, at_bottom), end(-1.0, at_top))
    high = np.maximum(end(1.0, at_bottom), end(1.0, at_top))
    return low, high, fewest == most


# -- the columnar side -------------------------------------------------------------------------------------------------


def pair_worlds(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    pairs: pl.LazyFrame,
    grades: Sequence[int] | None = None,
    every_query: bool = False,
) -> pl.LazyFrame:
    """One row per pair (`pairs`: `baseline`, `run`), judged query and nDCG cutoff of the spec where either run
    retrieved an unjudged document: what `difference_interval` needs (`fixed`, the credited slots' `weights` with
    their `docs`, the ideal-only documents seen (`ideal_only_docs`), `ideal_only_fewest`, `ideal_only_most`,
    `judged_ideal`, `levels`). `ranked` holds every run's ranked-and-judged rows (as `ndcg_intervals` takes them)
    with a `run` column naming the run. Only under `ideal='judged'` (see the module docstring). `every_query`: also
    the queries where neither run retrieved an unjudged document (their difference is fixed)."""
    from judged.transforms.measures.ndcg import gain_of

    if spec.ideal != "judged":
        raise ValueError("paired worlds share one ideal: only under ideal='judged'")
    keys = ["run", QUERY]
    judgments = with_grade_sets(judgments)
    world = with_grade_sets(world_rows(ranked, spec, gain_of(spec), keys))
    levels = assignable_grades(judgments, grades, spec).select(levels=gain_of(spec).implode())
    judged_ideal = (
        judgments.filter(pl.col("relevance").is_not_null() & pl.col("grade_set").is_null())
        .group_by(QUERY)
        .agg(judged_ideal=gain_of(spec).filter(gain_of(spec) > 0))
    )
    unseen = unseen_rows(ranked, judgments, keys)
    unjudged = pl.col("relevance").is_null()
    disputed = pl.col("grade_set").is_not_null()
    set_gains = pl.col("grade_set").list.eval(gain_of(spec, pl.element()))
    per_cutoff = []
    for cutoff in spec.cutoffs:
        weighted = world.with_columns(weight=position_weight(cutoff, spec.ties, keys), cutoff=pl.lit(cutoff, pl.Int32))
        # Judged queries only (the inner join with `unseen_rows`): a query without judgments is never scored.
        credit = weighted.group_by([*keys, "cutoff"]).agg(
            credit=ordered_sum((pl.col("world_gain") * pl.col("weight")).filter(~unjudged & ~disputed)).fill_null(0.0)
        ).join(unseen, on=keys, how="inner")
        # The documents whose grade is open: unjudged (any grade of the scale) or disputed (one of its set).
        docs = weighted.filter(unjudged | disputed).select(
            *keys, "cutoff", "doc_id", "weight", "rank", disputed.alias("disputed"), set_gains.alias("gains"))
        per_cutoff.append((credit, docs))
    credit = pl.concat([c for c, _ in per_cutoff])
    docs = pl.concat([d for _, d in per_cutoff])

    def side(role: str) -> pl.LazyFrame:
        return pairs.join(docs.rename({"run": role, "weight": f"{role}_weight", "rank": f"{role}_rank"}), on=role)

    union = side("baseline").join(
        side("run"), on=[*PAIR_KEYS, "doc_id", "disputed", "gains"], how="full", coalesce=True, nulls_equal=True
    ).with_columns(
        difference_weight=pl.col("run_weight").fill_null(0.0) - pl.col("baseline_weight").fill_null(0.0),
        best_rank=pl.min_horizontal("run_rank", "baseline_rank"),
    ).sort([*PAIR_KEYS, "best_rank", "doc_id"])
    credited = (pl.col("difference_weight") != 0) & ~pl.col("disputed")
    credited_dispute = (pl.col("difference_weight") != 0) & pl.col("disputed")
    open_slot = ~pl.col("disputed")
    per_pair_docs = union.group_by(PAIR_KEYS).agg(
        weights=pl.col("difference_weight").filter(credited),
        docs=pl.col("doc_id").filter(credited),
        ideal_only_docs=pl.col("doc_id").filter(open_slot & ~credited),
        disputed_weights=pl.col("difference_weight").filter(credited_dispute),
        disputed_sets=pl.col("gains").filter(credited_dispute),
        disputed_docs=pl.col("doc_id").filter(credited_dispute),
        # Unjudged documents one run read and the other did not: the other's unread rows may hold them.
        only_baseline=(pl.col("run_weight").is_null() & open_slot).sum().cast(pl.Int64),
        only_run=(pl.col("baseline_weight").is_null() & open_slot).sum().cast(pl.Int64),
    )

    def credit_side(role: str) -> pl.LazyFrame:
        renamed = {"run": role, "credit": f"{role}_credit", "unseen": f"{role}_unseen",
                   "unseen_unjudged_min": f"{role}_unseen_min"}
        return pairs.join(credit.rename(renamed), on=role)

    per_pair = credit_side("baseline").join(
        credit_side("run"), on=PAIR_KEYS, how="full", coalesce=True, nulls_equal=True
    )
    seen = pl.col("ideal_only_docs").list.len().fill_null(0)
    # The unread rows' unjudged documents not already among the pair's read ones (at least), and all of them (at most).
    hidden_fewest = pl.max_horizontal(
        pl.lit(0, pl.Int64),
        pl.col("baseline_unseen_min").fill_null(0) - pl.col("only_run").fill_null(0),
        pl.col("run_unseen_min").fill_null(0) - pl.col("only_baseline").fill_null(0),
    )
    hidden_most = pl.col("baseline_unseen").fill_null(0) + pl.col("run_unseen").fill_null(0)
    cap = pl.col("cutoff").cast(pl.Int64).fill_null(np.iinfo(np.int64).max)
    return (
        per_pair.join(per_pair_docs, on=PAIR_KEYS, how="left", nulls_equal=True)
        .with_columns(
            fixed=pl.col("run_credit").fill_null(0.0) - pl.col("baseline_credit").fill_null(0.0),
            weights=pl.col("weights").fill_null(pl.lit([], pl.List(pl.Float64))),
            docs=pl.col("docs").fill_null(pl.lit([], pl.List(pl.String))),
            ideal_only_docs=pl.col("ideal_only_docs").fill_null(pl.lit([], pl.List(pl.String))),
            ideal_only_fewest=pl.min_horizontal(seen + hidden_fewest, cap),
            ideal_only_most=pl.min_horizontal(seen + hidden_most, cap),
            disputed_weights=pl.col("disputed_weights").fill_null(pl.lit([], pl.List(pl.Float64))),
            disputed_sets=pl.col("disputed_sets").fill_null(pl.lit([], pl.List(pl.List(pl.Float64)))),
            disputed_docs=pl.col("disputed_docs").fill_null(pl.lit([], pl.List(pl.String))),
        )
        .join(disputed_universe(judgments, spec), on=QUERY, how="left")
        .with_columns(
            pl.col("disputed_universe_docs").fill_null(pl.lit([], pl.List(pl.String))),
            pl.col("disputed_universe_sets").fill_null(pl.lit([], pl.List(pl.List(pl.Float64)))),
        )
        .filter(pl.lit(every_query) | (pl.col("weights").list.len() > 0) | (pl.col("ideal_only_most") > 0)
                | (pl.col("disputed_universe_docs").list.len() > 0))
        .join(judged_ideal, on=QUERY, how="left")
        .join(levels, how="cross")
        .with_columns(pl.col("judged_ideal").fill_null(pl.lit([], pl.List(pl.Float64))))
        .select(*PAIR_KEYS, *[c for c in DIFFERENCE_INPUTS if c != "cutoff"], "docs", "ideal_only_docs")
        .sort(PAIR_KEYS, nulls_last=True)
    )


def difference_intervals(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    pairs: pl.LazyFrame,
    grades: Sequence[int] | None = None,
) -> pl.LazyFrame:
    """`difference_min`, `difference_max` and `difference_kind` of nDCG (`measure`) per pair, judged query and cutoff
    where either run retrieved an unjudged document (arguments as for `pair_worlds`), with `n_unjudged`, the unjudged
    documents of the two lists read; the caller keeps the difference itself, exact, where there is no row
    (`with_difference_intervals`)."""
    zero_if_no_ideal = spec.no_relevant == "zero"
    return (
        pair_worlds(ranked, judgments, spec, pairs, grades)
        .with_columns(
            difference=pl.struct(DIFFERENCE_INPUTS).map_batches(
                lambda batch: differences_of_worlds(batch, zero_if_no_ideal), return_dtype=DIFFERENCE_STRUCT
            )
        )
        .unnest("difference")
        .select(
            *PAIR_KEYS, pl.lit("nDCG").alias("measure"), "difference_min", "difference_max",
            pl.col("difference_kind").cast(INTERVAL_KIND),
            n_unjudged=(pl.col("docs").list.len() + pl.col("ideal_only_docs").list.len()).cast(pl.Int64),
        )
    )


DIFFERENCE_ROWS = PAIRED_DIFFERENCE
"""The rows of paired difference intervals `with_difference_intervals` takes: nDCG's (`difference_intervals`, with
`measure` "nDCG") and the other measures' (`transforms.binary_intervals.binary_difference_intervals`)."""


def with_difference_intervals(
    paired: pl.LazyFrame, intervals: pl.LazyFrame | None, families: Sequence[str] = ("nDCG",)
) -> pl.LazyFrame:
    """The paired per-query rows (`transforms.compare.paired_per_query`) with `difference_min`, `difference_max`
    and `difference_kind`: from `intervals` (one world, `DIFFERENCE_ROWS`) on the rows of the measure `families`
    it covers, the difference itself (exact) where it has no row; elsewhere the bound from the per-run intervals
    (exact only when both have width 0), null without them. Widened to hold the difference, which is computed by
    other floating operations (as `transforms.intervals.with_intervals` does). `n_unjudged`: the unjudged
    documents of the two lists read, where one world is shared (null elsewhere).

    A row without a difference (a query undefined now: `paired_per_query`) keeps the interval over the worlds that
    give it one, and is dropped when it has none (no world gives it a value)."""
    difference = pl.col("difference")
    # A stored per-query table from before measures had their own column labels nDCG's rows by the spec's label.
    family = pl.when(pl.col("measure").is_in(list(families))).then(pl.col("measure")).otherwise(
        pl.col("measure").str.extract(r"^([^@(\[]+)", 1)
    )
    covered = family.is_in(list(families)) if intervals is not None else pl.lit(False)
    if intervals is None:
        intervals = pl.LazyFrame(schema=DIFFERENCE_ROWS)
    joined = paired.with_columns(_family=family).join(
        intervals.rename({"difference_min": "_low", "difference_max": "_high", "difference_kind": "_kind",
                          "measure": "_family"}),
        on=[*PAIR_KEYS, "_family"], how="left", nulls_equal=True, maintain_order="left",
    )
    run_low, run_high = pl.col("run_value_min"), pl.col("run_value_max")
    base_low, base_high = pl.col("baseline_value_min"), pl.col("baseline_value_max")
    has_run_bounds = run_low.is_not_null() & base_high.is_not_null()
    zero_width = (run_high == run_low) & (base_high == base_low)
    low = (
        pl.when(covered & pl.col("_kind").is_not_null()).then(pl.min_horizontal("_low", difference))
        .when(covered).then(difference)
        .when(has_run_bounds).then(pl.min_horizontal(run_low - base_high, difference))
    )
    high = (
        pl.when(covered & pl.col("_kind").is_not_null()).then(pl.max_horizontal("_high", difference))
        .when(covered).then(difference)
        .when(has_run_bounds).then(pl.max_horizontal(run_high - base_low, difference))
    )
    kind = (
        pl.when(covered & pl.col("_kind").is_not_null()).then(pl.col("_kind").cast(pl.String))
        .when(covered & difference.is_not_null()).then(pl.lit("exact"))
        .when(has_run_bounds & zero_width & difference.is_not_null()).then(pl.lit("exact"))
        .when(has_run_bounds).then(pl.lit("bound"))
    )
    return joined.with_columns(
        difference_min=low, difference_max=high, difference_kind=kind.cast(INTERVAL_KIND),
        n_unjudged=pl.when(covered).then(pl.col("n_unjudged").fill_null(0)),
    ).drop("_low", "_high", "_kind", "_family").filter(difference.is_not_null() | pl.col("difference_min").is_not_null())


def decided_direction(low: float | None, high: float | None) -> str | None:
    """`run` when the aggregate difference interval lies above 0, `baseline` when below, else None (undecided)."""
    if low is None or high is None:
        return None
    return "run" if low > 0 else "baseline" if high < 0 else None


def documents_read_by_pair(
    ranked: pl.LazyFrame, pairs: pl.LazyFrame, cutoffs: Sequence[int | None]
) -> pl.LazyFrame:
    """Per pair (`pairs`: `baseline`, `run`), query and cutoff: the documents whose grade is open among those a
    measure at that cutoff reads in either list (each list's first k submitted rows; the whole list without a
    cutoff), counted once: `n_unjudged` without a grade, and `disputed_docs`, those whose grade is a set (under an
    assessor model of `set` or `range`). `ranked` holds every run's ranked-and-judged rows with a `run` column.
    What a sentence about the pair at that cutoff may count: the documents below k are not read at k."""
    rows = with_grade_sets(ranked).select(
        "run", QUERY, "doc_id", "rank",
        unjudged=pl.col("relevance").is_null(), disputed=pl.col("grade_set").is_not_null(),
    ).filter(pl.col("unjudged") | pl.col("disputed"))
    frames = []
    for cutoff in cutoffs:
        read = rows if cutoff is None else rows.filter(pl.col("rank") <= cutoff)
        read = read.drop("rank").with_columns(cutoff=pl.lit(cutoff, pl.Int32))
        both = pl.concat([
            pairs.join(read.rename({"run": "baseline"}), on="baseline"),
            pairs.join(read, on="run"),
        ])
        frames.append(
            both.unique([*PAIR_KEYS, "doc_id"]).group_by(PAIR_KEYS).agg(
                n_unjudged=pl.col("unjudged").sum().cast(pl.Int64),
                disputed_docs=pl.col("doc_id").filter(pl.col("disputed")).sort(),
            )
        )
    return pl.concat(frames)
