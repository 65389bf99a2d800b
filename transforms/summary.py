"""The summary of per-query rows: per measure and cutoff, the declared aggregate and what was left out of it.

Belongs here: the aggregation rule (mean, or a weighted mean over declared query weights) and the counts a reader
needs beside the aggregate. Measure-agnostic: it reads the PER_QUERY contract only.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from judged.schemas.fields import QUERY
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import SUMMARY
from judged.transforms.ranking import ordered_mean, ordered_sum


def _weighted(per_query: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """The rows with their declared weight (1 where none is declared) under a weighted mean; as given otherwise."""
    if spec.aggregation != "weighted_mean":
        return per_query
    weights = pl.LazyFrame(spec.query_weights, schema={QUERY: pl.String, "weight": pl.Float64}, orient="row")
    return per_query.join(weights, on=QUERY, how="left").with_columns(pl.col("weight").fill_null(1.0))


def _aggregate_of(spec: EvaluationSpec) -> Callable[[str], pl.Expr]:
    """The declared aggregate of a column over the scored queries (value not null), for `_weighted` rows: a column
    that has values on other rows too (RBP's residual of a query without judgments) takes only those of the scored
    queries. A weighted mean whose scored queries weigh 0 in all is null, never the NaN of 0 / 0."""
    scored = pl.col("value").is_not_null()
    if spec.aggregation == "weighted_mean":
        total = ordered_sum(pl.col("weight").filter(scored))
        return lambda column: pl.when(total > 0).then(
            ordered_sum((pl.col(column) * pl.col("weight")).filter(scored)) / total
        )
    return lambda column: ordered_mean(pl.col(column).filter(scored))


def _rule(spec: EvaluationSpec) -> str:
    if spec.aggregation == "weighted_mean":
        return "weighted_mean(weight=declared per query, 1 if not declared)"
    return "mean"


def extreme_aggregate(
    end: str, weight: pl.Expr, counted: pl.Expr, may_count: pl.Expr, lowest: bool
) -> pl.Expr:
    """In an aggregation: the smallest (`lowest`) or largest weighted mean of the column `end` over every world.
    Rows where `counted` holds are in the mean in every world, with their `end`. Rows where `may_count` holds are in
    it only in the worlds that give them a value (a query without a relevant judgment now, some of whose unjudged
    documents may be relevant: `transforms.intervals.with_intervals`), their value then reaching `end`. Which of
    them count is part of the world: adding a row lowers the mean exactly when its end lies below the mean, so the
    smallest mean takes the may-count rows of the lowest ends, a prefix of them in that order (the largest, of the
    highest ends), and every prefix is tried. Null when no world has a positive total weight."""
    base_sum = ordered_sum((pl.col(end) * weight).filter(counted)).fill_null(0.0)
    base_weight = ordered_sum(weight.filter(counted)).fill_null(0.0)
    ends, weights = pl.col(end).filter(may_count), weight.filter(may_count)
    # sort_by, not gather(arg_sort): an eager group_by of a frame without rows types a gathered column as Null,
    # which has no cumulative sum.
    sums = base_sum + (ends * weights).sort_by(ends, descending=not lowest, maintain_order=True).cum_sum()
    totals = base_weight + weights.sort_by(ends, descending=not lowest, maintain_order=True).cum_sum()
    joined = (sums / totals).filter(totals > 0)
    alone = pl.when(base_weight > 0).then(base_sum / base_weight)
    if lowest:
        return pl.min_horizontal(alone, joined.min())
    return pl.max_horizontal(alone, joined.max())


def aggregate_interval(
    low: str, high: str, value: str, weight: pl.Expr, may_count: pl.Expr
) -> tuple[pl.Expr, pl.Expr]:
    """In an aggregation: the interval of the weighted mean of `value` over every world, from the rows' ends `low`
    and `high` (`extreme_aggregate`): the rows with a value always count, the `may_count` rows (no value now, an
    interval) in the worlds that give them one. Null when a row with a value has no end."""
    counted = pl.col(value).is_not_null()
    every_end = (pl.col(low).is_not_null() & pl.col(high).is_not_null()).filter(counted).all()
    return (
        pl.when(every_end).then(extreme_aggregate(low, weight, counted, may_count, lowest=True)),
        pl.when(every_end).then(extreme_aggregate(high, weight, counted, may_count, lowest=False)),
    )


def summarize(per_query: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Per measure and cutoff: the declared aggregate over the scored queries (value not null) and what was left out.
    The aggregate's interval ranges over every world of the unjudged documents, a query without a relevant judgment
    joining the mean in the worlds that give it a value (`aggregate_interval`)."""
    per_query = _weighted(per_query, spec)
    if "weight" not in per_query.collect_schema().names():
        per_query = per_query.with_columns(weight=pl.lit(1.0, pl.Float64))
    aggregate_of = _aggregate_of(spec)
    rule = _rule(spec)
    aggregate = aggregate_of("value")
    scored = pl.col("value").is_not_null()
    # A measure with an interval on every scored row (Judged has none); each row's ends hold its value
    # (`transforms.intervals.with_intervals`), and the clip to the aggregate below keeps min <= value <= max
    # whatever the rounding of the sums.
    has_interval = (pl.col("value_min").is_not_null() | ~scored).all() & pl.col("value_min").is_not_null().any()
    may_join = ~scored & pl.col("value_min").is_not_null()
    low, high = aggregate_interval("value_min", "value_max", "value", pl.col("weight"), may_join)
    families = list(dict.fromkeys(m.family for m in spec.measure_list()))
    status = pl.col("status")
    k_or_all = pl.col("cutoff").cast(pl.Int64).fill_null(pl.col("n_retrieved"))
    unjudged_only = scored & (pl.col("n_retrieved") > 0) & (
        pl.col("n_unjudged_at_k") == pl.min_horizontal(k_or_all, pl.col("n_retrieved"))
    )
    return (
        per_query.sort(QUERY, maintain_order=True)
        .group_by("measure", "cutoff")
        .agg(
            value=pl.when(scored.any()).then(aggregate),
            value_min=pl.when(has_interval).then(pl.min_horizontal(low, aggregate)),
            value_max=pl.when(has_interval).then(pl.max_horizontal(high, aggregate)),
            interval_width=pl.lit(spec.interval_width, pl.Float64),
            n_wide_intervals=(scored & (pl.col("value_max") - pl.col("value_min") > spec.interval_width)).sum(),
            n_bound_intervals=(scored & (pl.col("interval_kind") == "bound")).sum(),
            aggregation=pl.lit(rule),
            n_queries=pl.len(),
            n_scored=scored.sum(),
            n_missing=(status == "missing_from_run").sum(),
            n_undefined=((status == "no_relevant_judgments") & ~scored).sum(),
            n_no_judgments=(status == "no_judgments").sum(),
            n_unjudged_only=unjudged_only.sum(),
            mean_unjudged_fraction=ordered_mean(pl.col("unjudged_fraction_at_k").filter(scored)),
        )
        .select(list(SUMMARY))
        .cast(SUMMARY)
        .sort(pl.col("measure").replace_strict(families, list(range(len(families))), default=len(families)), "cutoff",
              nulls_last=True)
    )


def residual_means(per_query: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Per measure and cutoff with a residual (RBP): `residual`, the summary's aggregate of the per-query residuals
    over the same scored queries (trec_eval's `rbp_resid` of `all` under a plain mean)."""
    aggregate_of = _aggregate_of(spec)
    scored = pl.col("value").is_not_null()
    return (
        _weighted(per_query, spec)
        .filter(pl.col("residual").is_not_null().any().over("measure", "cutoff"))
        .sort(QUERY, maintain_order=True)
        .group_by("measure", "cutoff", maintain_order=True)
        .agg(residual=pl.when(scored.any()).then(aggregate_of("residual")))
    )
