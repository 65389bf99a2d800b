"""Ranked and judged once: a run's candidate rows in the declared order with their grades attached as nullable
values, the list each measure reads, the queries in play, the evidence counts, and the rules every measure's
per-query rows share (status, missing queries, undefined values).

Belongs here: everything between ranking (`transforms/ranking.py`) and a measure's formula
(`transforms/measures/`) that does not depend on the formula, as pure functions of LazyFrames and `pl.Expr`
builders. A missing judgment is a null `relevance` in every frame returned here; only a measure decides what an
unjudged document is worth, and the per-query table counts them.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from judged.schemas.fields import PAIR, QUERY, STATUSES
from judged.schemas.measures import MeasureBase
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import PER_QUERY
from judged.transforms.ranking import rank_run


def attach_judgments(ranked: pl.LazyFrame, judgments: pl.LazyFrame) -> pl.LazyFrame:
    """Left-join the grades: an unjudged (or unresolved) document keeps a null `relevance`. Judgments resolved under
    a set assessor model (`transforms.assessors.resolve_assessors`) bring each document's `grade_set` too."""
    grades = ["relevance", *(["grade_set"] if "grade_set" in judgments.collect_schema().names() else [])]
    return ranked.join(judgments.select(*PAIR, *grades), on=PAIR, how="left", maintain_order="left")


def judged_run_rows(run: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Every run row, ranked under the spec, with its grade or null."""
    return attach_judgments(rank_run(run, spec), judgments)


def ranked_and_judged(candidates: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """The table every measure reads: the candidate rows in rank order within each query, with `rank` (the
    submitted order), `relevance` (null when unjudged), `eval_rank` (the position in the list measures are
    computed over: null for a document a condensed list removes, trec_eval -J), `tie_group` (equal sort keys
    share one) and the first and last `eval_rank` of the row's tie group."""
    return with_list_positions(judged_run_rows(candidates, judgments, spec), spec)


def with_list_positions(rows: pl.LazyFrame, spec: EvaluationSpec, lists: Sequence[str] = (QUERY,)) -> pl.LazyFrame:
    """Ranked rows with their judgments (`rank`, `sort_key`, `relevance`) given `eval_rank`, `tie_group`,
    `group_first` and `group_last` as `ranked_and_judged` describes them, within each list (`lists`: the columns
    naming one ranked list, a query by default; the worklist adds the evaluation)."""
    keys = list(lists)
    kept = pl.col("relevance").is_not_null() & (pl.col("relevance") >= 0) if spec.unjudged == "condensed" else None
    eval_rank = pl.col("rank") if kept is None else pl.when(kept).then(pl.col("rank")).rank("ordinal").over(keys)
    kept_key = pl.col("sort_key") if kept is None else pl.when(kept).then(pl.col("sort_key"))
    rows = rows.with_columns(
        eval_rank=eval_rank.cast(pl.Int64),
        tie_group=kept_key.rank("dense", descending=True).over(keys).cast(pl.Int64),
    )
    group = [*keys, "tie_group"]
    return rows.with_columns(
        group_first=pl.col("eval_rank").min().over(group),
        group_last=pl.col("eval_rank").max().over(group),
    )


def query_universe(run: pl.LazyFrame, judgments: pl.LazyFrame) -> pl.LazyFrame:
    """Every query of the run or of the judgments (with a resolved grade), flagged by where it occurs."""
    in_run = run.select(QUERY).unique().with_columns(in_run=pl.lit(True))
    judged = (
        judgments.filter(pl.col("relevance").is_not_null()).select(QUERY).unique().with_columns(judged=pl.lit(True))
    )
    return in_run.join(judged, on=QUERY, how="full", coalesce=True).with_columns(
        pl.col("in_run").fill_null(False), pl.col("judged").fill_null(False)
    )


def valued_queries(judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Per judged query and measure family of the spec: `valued`, whether the measure has a value whatever the
    unjudged documents are: it is defined without relevant judgments (RR, P, Judged, RBP), or the spec scores that
    case 0 (`no_relevant='zero'`), or the query has a judged relevant document for it (nDCG: a positive gain; AP,
    R, R-Prec: a grade of at least `rel`; under a set assessor model, every grade of its set)."""
    from judged.transforms.measures.ndcg import gain_of

    judged = judgments.filter(pl.col("relevance").is_not_null())
    has_sets = "grade_set" in judged.collect_schema().names()
    lowest = pl.coalesce(pl.col("grade_set").list.min(), pl.col("relevance")) if has_sets else pl.col("relevance")
    frames = []
    for measure in dict((m.family, m) for m in spec.measure_list()).values():
        if spec.no_relevant == "zero" or not measure.undefined_without_relevant:
            relevant = pl.lit(True)
        elif measure.name == "nDCG":
            relevant = gain_of(spec, lowest) > 0
        else:
            relevant = lowest >= measure.rel  # type: ignore[attr-defined]
        frames.append(judged.group_by(QUERY).agg(valued=relevant.any()).with_columns(measure=pl.lit(measure.family)))
    return pl.concat(frames).select(QUERY, "measure", "valued")


def relevant_judged(judgments: pl.LazyFrame, rel: int) -> pl.LazyFrame:
    """R per query: the judged documents with a grade of at least `rel` (trec_eval's `num_rel` under `-l rel`),
    retrieved or not. Queries without one are absent."""
    return (
        judgments.filter(pl.col("relevance") >= rel)
        .group_by(QUERY)
        .agg(n_relevant_judged=pl.len().cast(pl.Int64))
    )


# -- evidence, per cutoff ---------------------------------------------------------------------------------------


def suffix(cutoff: int | None) -> str:
    """The column-name suffix of a cutoff: `10`, or `all` for the whole list."""
    return "all" if cutoff is None else str(cutoff)


def within(position: str, cutoff: int | None) -> pl.Expr:
    """The row's `position` is among the first `cutoff` (any non-null position for the whole list)."""
    return pl.col(position).is_not_null() if cutoff is None else pl.col(position) <= cutoff


def evidence(cutoff: int | None, relevant: pl.Expr, nonrelevant: pl.Expr, tag: str) -> list[pl.Expr]:
    """Aggregates (one query's rows) of what the first `cutoff` submitted rows hold: judged relevant, judged
    non-relevant (as the measure defines them), unjudged, and the tie groups straddling the cutoff. Named
    `<count>__<tag>`."""
    submitted = within("rank", cutoff)
    straddles = (pl.col("eval_rank") == pl.col("group_first")) & (
        pl.lit(False) if cutoff is None else (pl.col("group_first") <= cutoff) & (pl.col("group_last") > cutoff)
    )
    return [
        (submitted & relevant).sum().alias(f"n_relevant__{tag}"),
        (submitted & nonrelevant).sum().alias(f"n_nonrelevant__{tag}"),
        (submitted & pl.col("relevance").is_null()).sum().alias(f"n_unjudged__{tag}"),
        straddles.sum().alias(f"ties__{tag}"),
    ]


def evidence_columns(tag: str) -> list[pl.Expr]:
    """The `evidence` aggregates of `tag` under their per-query names."""
    return [
        pl.col(f"n_relevant__{tag}").alias("n_relevant_at_k"),
        pl.col(f"n_nonrelevant__{tag}").alias("n_nonrelevant_at_k"),
        pl.col(f"n_unjudged__{tag}").alias("n_unjudged_at_k"),
        pl.col(f"ties__{tag}").alias("ties_straddling_k"),
    ]


# -- the rules every measure's per-query rows share ---------------------------------------------------------------


def per_query_rows(long: pl.LazyFrame, measure: MeasureBase, spec: EvaluationSpec) -> pl.LazyFrame:
    """A measure's rows in the PER_QUERY contract, from `long`: one row per query of `query_universe` with
    `in_run`, `judged`, `has_relevant` (the measure has something to find), `raw_value` (the formula's value
    for a judged query the run lists), `n_retrieved`, the evidence counts and any measure-owned column
    (`dcg`, `idcg`, `residual`; absent ones are null).

    Status: `no_judgments` (run only: never scored), `missing_from_run`, `no_relevant_judgments`, `scored`.
    Value: null without judgments; null for a missing query under query set `both`; for a measure that divides by
    the relevant documents, without any, undefined (0 or null, as `no_relevant` declares); for a missing query,
    the measure's declared `value_if_missing()`; otherwise the formula's.
    """
    status = (
        pl.when(~pl.col("judged"))
        .then(pl.lit("no_judgments"))
        .when(~pl.col("in_run"))
        .then(pl.lit("missing_from_run"))
        .when(pl.col("has_relevant"))
        .then(pl.lit("scored"))
        .otherwise(pl.lit("no_relevant_judgments"))
        .cast(pl.Enum(list(STATUSES)))
    )
    undefined_value = pl.lit(0.0) if spec.no_relevant == "zero" else pl.lit(None, pl.Float64)
    missing_value = pl.lit(measure.value_if_missing(), pl.Float64)
    value = (
        pl.when(~pl.col("judged"))
        .then(pl.lit(None, pl.Float64))
        .when(~pl.col("in_run") & (spec.query_set == "both"))
        .then(pl.lit(None, pl.Float64))
        .when(~pl.col("has_relevant") & measure.undefined_without_relevant)
        .then(undefined_value)
        .when(~pl.col("in_run"))
        .then(missing_value)
        .otherwise(pl.col("raw_value"))
    )
    within_k = pl.when(pl.col("cutoff").is_null()).then(pl.col("n_retrieved")).otherwise(
        pl.min_horizontal(pl.col("cutoff").cast(pl.Int64), pl.col("n_retrieved"))
    )
    present = long.collect_schema().names()
    owned = [
        pl.col(name) if name in present else pl.lit(None, pl.Float64).alias(name) for name in ("dcg", "idcg", "residual")
    ]
    return (
        long.with_columns(*owned, measure=pl.lit(measure.family), status=status, value=value)
        .with_columns(unjudged_fraction_at_k=pl.when(within_k > 0).then(pl.col("n_unjudged_at_k") / within_k))
        .select(list(MEASURE_COLUMNS))
        .cast(MEASURE_COLUMNS)
    )


# A measure's own columns: the PER_QUERY contract without the interval, which `per_query_measures` adds
# (transforms/intervals.py).
MEASURE_COLUMNS = {name: dtype for name, dtype in PER_QUERY.items() if name not in ("value_min", "value_max", "interval_kind")}


def with_relevant_judged(rows: pl.LazyFrame, judgments: pl.LazyFrame, rel: int) -> pl.LazyFrame:
    """The rows with their query's `n_relevant_judged` (R at threshold `rel`; 0 when it has none)."""
    return rows.join(relevant_judged(judgments, rel), on=QUERY, how="left").with_columns(
        pl.col("n_relevant_judged").fill_null(0)
    )


def is_relevant(rel: int) -> pl.Expr:
    """A document of the evaluated list that is judged with a grade of at least `rel` (binary relevance,
    trec_eval `-l rel`); a document a condensed list removed is never relevant."""
    return (pl.col("relevance") >= rel).fill_null(False) & pl.col("eval_rank").is_not_null()


def binary_per_query(
    rows: pl.LazyFrame,
    judgments: pl.LazyFrame,
    queries: pl.LazyFrame,
    measure: MeasureBase,
    spec: EvaluationSpec,
    rel: int,
    value: pl.Expr,
    per_relevant: bool,
    owned: tuple[pl.Expr, ...] = (),
) -> pl.LazyFrame:
    """The PER_QUERY rows of a measure whose formula is one aggregate over a query's ranked-and-judged rows (in
    rank order): `value`, divided by R (the judged documents with grade >= `rel`) when `per_relevant`.
    `owned` are aggregates the measure keeps in its own columns (`residual`). Evidence: relevant is grade >= `rel`,
    non-relevant a judged grade below it. `has_relevant` is R > 0."""
    relevant = (pl.col("relevance") >= rel).fill_null(False)
    nonrelevant = (pl.col("relevance") < rel).fill_null(False)
    aggregated = rows.group_by(QUERY).agg(
        pl.col("n_retrieved").first(),
        value.alias("formula"),
        *owned,
        *evidence(measure.cutoff, relevant, nonrelevant, "k"),
    )
    counts = ["n_retrieved", "n_relevant__k", "n_nonrelevant__k", "n_unjudged__k", "ties__k"]
    wide = (
        queries.join(aggregated, on=QUERY, how="left")
        .join(relevant_judged(judgments, rel), on=QUERY, how="left")
        .with_columns(pl.col(counts).fill_null(0), pl.col("n_relevant_judged").fill_null(0))
    )
    raw = pl.col("formula") / pl.col("n_relevant_judged") if per_relevant else pl.col("formula")
    return per_query_rows(
        wide.select(
            QUERY,
            "in_run",
            "judged",
            "n_retrieved",
            *evidence_columns("k"),
            *[pl.col(expr.meta.output_name()) for expr in owned],
            cutoff=pl.lit(measure.cutoff, pl.Int32),
            has_relevant=pl.col("n_relevant_judged") > 0,
            raw_value=raw,
        ),
        measure,
        spec,
    )
