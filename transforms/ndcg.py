"""NDCG under a declared spec, columnar and lazy: ranking, judgments attached as nullable grades, gains, DCG and ideal
DCG at every cutoff in one pass, per-query rows with status, and the summary.

Belongs here: pure functions of LazyFrames (and the `pl.Expr` builders they use) that follow `EvaluationSpec`
option by option. A missing judgment is a null `relevance` in every frame returned here; only the gain expressions
inside `per_query_ndcg` map it (to 0 under `unjudged='zero'`, or drop it under `unjudged='condensed'`).
"""

from __future__ import annotations

import polars as pl

from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import PER_QUERY, STATUSES, SUMMARY
from judged.transforms.duplicates import docs_may_repeat

QUERY = "query_id"
PAIR = [QUERY, "doc_id"]


# -- ranking ------------------------------------------------------------------------------------------------------


def sort_key(spec: EvaluationSpec) -> pl.Expr:
    """The value a ranking sorts on, larger first: the score at the declared precision, or the negated file rank."""
    if spec.ranking == "rank":
        return -pl.col("source_rank").cast(pl.Float64)
    key = pl.col("score")
    if spec.score_precision == "float32":
        key = key.cast(pl.Float32).cast(pl.Float64)
    # -0.0 and 0.0 are one score, as in C's comparisons; a total-order sort would split them.
    return pl.when(key == 0).then(pl.lit(0.0)).otherwise(key)


def rank_run(run: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Order each query's rows by the declared rule (key descending, then doc_id by byte order), number them
    `rank` = 1..n, and apply the depth cut. Under `ties='average'` the doc_id order only fixes the display order:
    equal keys share their credit."""
    doc_id_descending = spec.ties != "docid_asc"
    if "sort_key" not in run.collect_schema():
        run = run.with_columns(sort_key=sort_key(spec))
    ranked = (
        run.sort([QUERY, "sort_key", "doc_id"], descending=[False, True, doc_id_descending])
        .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(QUERY))
    )
    if spec.depth is not None:
        ranked = ranked.filter(pl.col("rank") <= spec.depth)
    return ranked


def first_rows_needed(spec: EvaluationSpec) -> int | None:
    """How many of each query's first rows decide every value and count of the spec; None when all rows do (the
    whole list, condensed lists, an ideal over the retrieved documents)."""
    if None in spec.cutoffs or spec.unjudged == "condensed" or spec.ideal == "retrieved":
        return None
    deepest = max(k for k in spec.cutoffs if k is not None)
    return deepest if spec.depth is None else min(deepest, spec.depth)


def candidate_rows(run: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """The rows the spec can use, with `sort_key`, their query's `n_retrieved` (after the depth cut) and
    `docs_may_repeat`: whether the query's rows given may hold a document twice. The order of the rows is not
    fixed (`rank_run` sorts).

    When only the first k rows matter, each query keeps the rows whose key reaches its k-th largest key: the first
    k rows of the full order plus any rows tied with the k-th (so a tie group straddling k stays whole), without
    sorting the run. A run that carries `query_rows` is the head of a stored run (transforms/layout.py): its
    queries' row counts come from that column, not from the rows present.

    Runs list each query's rows together, so rows are grouped by stretches of one query id (an integer per
    stretch), far cheaper than grouping by the id strings; a query spread over several stretches is put together
    again from its stretches' candidates. `docs_may_repeat` is true when a stretch may repeat a document
    (`transforms.duplicates.docs_may_repeat`) or the query is spread over several stretches."""
    has_query_rows = "query_rows" in run.collect_schema()
    k = first_rows_needed(spec)
    rows = run.with_columns(stretch=pl.col(QUERY).rle_id(), sort_key=sort_key(spec))
    key = pl.col("sort_key")
    rows_kept = rows if k is None else rows.filter(key >= key.top_k(k).min().over("stretch"))
    # Per stretch, then per query over the (few) stretches: a stored head's stretches each carry the query's
    # count, a text run's each count their own rows.
    stretches = rows.group_by("stretch").agg(
        pl.col(QUERY).first(),
        n_rows=(pl.col("query_rows").first() if has_query_rows else pl.len()).cast(pl.Int64),
        repeats=docs_may_repeat(),
    )
    spread = pl.len().over(QUERY) > 1
    stretch_queries = stretches.select(
        "stretch",
        n_retrieved=(pl.col("n_rows").first() if has_query_rows else pl.col("n_rows").sum()).over(QUERY),
        docs_may_repeat=pl.col("repeats").any().over(QUERY) | spread,
    )
    candidates = rows_kept.select("stretch", QUERY, "doc_id", "sort_key").join(stretch_queries, on="stretch")
    if k is not None:  # a query spread over stretches: its candidates are the best of its stretches' candidates
        candidates = candidates.filter(pl.col("sort_key") >= pl.col("sort_key").top_k(k).min().over(QUERY))
    n_retrieved = pl.col("n_retrieved").cast(pl.Int64)
    if spec.depth is not None:
        n_retrieved = pl.min_horizontal(n_retrieved, pl.lit(spec.depth, pl.Int64))
    return candidates.select(QUERY, "doc_id", "sort_key", n_retrieved.alias("n_retrieved"), "docs_may_repeat")


def stretch_starts(run: pl.LazyFrame) -> pl.LazyFrame:
    """The row offset (`start`, the first one 0) and the `query_id` of every stretch of one query id (see
    `candidate_rows`)."""
    first = (pl.col(QUERY) != pl.col(QUERY).shift()).fill_null(True)
    return run.select(start=pl.arg_where(first), query_id=pl.col(QUERY).filter(first))


def attach_judgments(ranked: pl.LazyFrame, judgments: pl.LazyFrame) -> pl.LazyFrame:
    """Left-join the grades: an unjudged (or unresolved) document keeps a null `relevance`."""
    return ranked.join(judgments.select(*PAIR, "relevance"), on=PAIR, how="left", maintain_order="left")


def judged_run_rows(run: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Every run row, ranked under the spec, with its grade or null."""
    return attach_judgments(rank_run(run, spec), judgments)


# -- gains --------------------------------------------------------------------------------------------------------


def gain_of(spec: EvaluationSpec, grade: pl.Expr | None = None) -> pl.Expr:
    """The declared gain of a grade; null stays null (the caller decides what an unjudged document is worth).
    Negative grades gain 0 unless an explicit map says otherwise."""
    grade = pl.col("relevance") if grade is None else grade
    if spec.gain == "linear":
        gain = pl.when(grade > 0).then(grade.cast(pl.Float64)).otherwise(pl.lit(0.0))
    elif spec.gain == "exponential":
        gain = pl.when(grade > 0).then(pl.lit(2.0).pow(grade.cast(pl.Float64)) - 1.0).otherwise(pl.lit(0.0))
    else:
        grades, gains = zip(*spec.gain_map)
        mapped = grade.replace_strict(list(grades), list(gains), default=None, return_dtype=pl.Float64)
        gain = pl.when(mapped.is_not_null()).then(mapped).when(grade < 0).then(pl.lit(0.0))
    return pl.when(grade.is_null()).then(pl.lit(None, pl.Float64)).otherwise(gain)


def grades_outside_gain_map(judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Non-negative grades present in the judgments that an explicit gain map does not cover (none otherwise)."""
    mapped = [grade for grade, _ in spec.gain_map] if spec.gain == "map" else None
    grades = judgments.select(pl.col("relevance").drop_nulls().unique()).filter(pl.col("relevance") >= 0)
    if mapped is None:
        return grades.head(0)
    return grades.filter(~pl.col("relevance").is_in(mapped)).sort("relevance")


# -- per-query NDCG -----------------------------------------------------------------------------------------------


def ordered_sum(values: pl.Expr) -> pl.Expr:
    """Sum in row order, nulls as 0, as trec_eval's loop does. Polars' float `sum()` in a group-by may add in a
    different order from one call to the next (seen on polars 2.1); a cumulative sum is sequential, so the same
    rows in the same order always give the same bits."""
    return values.fill_null(0.0).cum_sum().last()


def ordered_mean(values: pl.Expr) -> pl.Expr:
    """Mean of the non-null values, summed in row order (see `ordered_sum`)."""
    return ordered_sum(values) / values.count()


def _suffix(cutoff: int | None) -> str:
    return "all" if cutoff is None else str(cutoff)


def _within(position: str, cutoff: int | None) -> pl.Expr:
    return pl.col(position).is_not_null() if cutoff is None else pl.col(position) <= cutoff


def _discount(position: str) -> pl.Expr:
    return 1.0 / (pl.col(position).cast(pl.Float64) + 1.0).log(2)


def _evaluated_list(rows: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Add the list the DCG is computed over: `eval_rank` (null for a document condensed away), `tie_group`,
    `judged_gain` (null when unjudged) and `credited_gain` (what the position earns)."""
    kept = pl.col("relevance").is_not_null() & (pl.col("relevance") >= 0) if spec.unjudged == "condensed" else None
    eval_rank = pl.col("rank") if kept is None else pl.when(kept).then(pl.col("rank")).rank("ordinal").over(QUERY)
    kept_key = pl.col("sort_key") if kept is None else pl.when(kept).then(pl.col("sort_key"))
    rows = rows.with_columns(
        eval_rank=eval_rank.cast(pl.Int64),
        tie_group=kept_key.rank("dense", descending=True).over(QUERY).cast(pl.Int64),
        judged_gain=gain_of(spec),
    )
    credited = pl.when(pl.col("eval_rank").is_not_null()).then(pl.col("judged_gain").fill_null(0.0))
    if spec.ties == "average":
        credited = ordered_mean(credited).over(QUERY, "tie_group")
    group = [QUERY, "tie_group"]
    return rows.with_columns(
        credited_gain=credited,
        group_first=pl.col("eval_rank").min().over(group),
        group_last=pl.col("eval_rank").max().over(group),
    )


def _run_aggregates(rows: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """One row per query of the run: n_retrieved, then per cutoff DCG, the evidence counts and straddling ties.
    `rows` must be in rank order within each query (as `rank_run` leaves them) for the sums to add in rank order."""
    contribution = pl.col("credited_gain") * _discount("eval_rank")
    relevant = pl.col("judged_gain") > 0
    nonrelevant = pl.col("judged_gain") <= 0
    unjudged = pl.col("relevance").is_null()
    aggregates: list[pl.Expr] = [pl.col("n_retrieved").first()]
    for k in spec.cutoffs:
        s = _suffix(k)
        submitted = _within("rank", k)
        straddles = (pl.col("eval_rank") == pl.col("group_first")) & (
            pl.lit(False) if k is None else (pl.col("group_first") <= k) & (pl.col("group_last") > k)
        )
        aggregates += [
            ordered_sum(pl.when(_within("eval_rank", k)).then(contribution)).alias(f"dcg__{s}"),
            (submitted & relevant).sum().alias(f"n_relevant__{s}"),
            (submitted & nonrelevant).sum().alias(f"n_nonrelevant__{s}"),
            (submitted & unjudged).sum().alias(f"n_unjudged__{s}"),
            straddles.sum().alias(f"ties__{s}"),
        ]
    return rows.group_by(QUERY).agg(aggregates)


def ideal_dcg(universe: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """IDCG per query at every cutoff: the DCG of the universe's positive gains in descending order.
    `universe` has `query_id` and `ideal_gain`; documents with gain <= 0 never help an ideal ranking."""
    positive = (
        universe.filter(pl.col("ideal_gain") > 0)
        .sort([QUERY, "ideal_gain"], descending=[False, True], maintain_order=True)
        .with_columns(ideal_rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(QUERY))
    )
    contribution = pl.col("ideal_gain") * _discount("ideal_rank")
    return positive.group_by(QUERY).agg(
        ordered_sum(pl.when(_within("ideal_rank", k)).then(contribution)).alias(f"idcg__{_suffix(k)}")
        for k in spec.cutoffs
    )


def _ideal_universe(rows: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    if spec.ideal == "retrieved":
        kept = rows.filter(pl.col("eval_rank").is_not_null())
        return kept.select(QUERY, ideal_gain=pl.col("judged_gain").fill_null(0.0))
    return judgments.filter(pl.col("relevance").is_not_null()).select(QUERY, ideal_gain=gain_of(spec))


def _query_universe(run: pl.LazyFrame, judgments: pl.LazyFrame) -> pl.LazyFrame:
    """Every query of the run or of the judgments (with a resolved grade), flagged by where it occurs."""
    in_run = run.select(QUERY).unique().with_columns(in_run=pl.lit(True))
    judged = (
        judgments.filter(pl.col("relevance").is_not_null()).select(QUERY).unique().with_columns(judged=pl.lit(True))
    )
    return in_run.join(judged, on=QUERY, how="full", coalesce=True).with_columns(
        pl.col("in_run").fill_null(False), pl.col("judged").fill_null(False)
    )


def _long_per_cutoff(wide: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    per_cutoff = []
    for k in spec.cutoffs:
        s = _suffix(k)
        per_cutoff.append(
            wide.select(
                QUERY,
                "in_run",
                "judged",
                pl.lit(k, pl.Int32).alias("cutoff"),
                pl.col(f"dcg__{s}").alias("dcg"),
                pl.col(f"idcg__{s}").alias("idcg"),
                "n_retrieved",
                pl.col(f"n_relevant__{s}").alias("n_relevant_at_k"),
                pl.col(f"n_nonrelevant__{s}").alias("n_nonrelevant_at_k"),
                pl.col(f"n_unjudged__{s}").alias("n_unjudged_at_k"),
                pl.col(f"ties__{s}").alias("ties_straddling_k"),
            )
        )
    return pl.concat(per_cutoff, how="vertical")


def per_query_ndcg(run: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """NDCG per query and cutoff, with its evidence and status (table contract `schemas.tables.PER_QUERY`).

    `run` follows the RUN contract and `judgments` the JUDGMENTS contract, both free of duplicate pairs.
    Queries of the run without judgments are reported (`no_judgments`) but never scored; judged queries missing
    from the run score 0 under `query_set='judged'` and are null under `both` (`judged_strict` is checked before).
    """
    return ndcg_of_candidates(candidate_rows(run, spec), judgments, spec)


def ndcg_of_candidates(candidates: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """`per_query_ndcg` from the run's `candidate_rows` (for a caller that has them already, e.g. for their
    `docs_may_repeat`)."""
    rows = _evaluated_list(judged_run_rows(candidates, judgments, spec), spec)
    run_side = _run_aggregates(rows, spec)
    ideal_side = ideal_dcg(_ideal_universe(rows, judgments, spec), spec)
    count_columns = [c for c in run_side.collect_schema().names() if c != QUERY and not c.startswith("dcg__")]
    wide = (
        _query_universe(candidates, judgments)
        .join(run_side, on=QUERY, how="left")
        .join(ideal_side, on=QUERY, how="left")
        .with_columns(
            # A query absent from the run retrieved nothing: DCG 0, every count 0.
            pl.col(count_columns).fill_null(0),
            pl.col("^dcg__.*$").fill_null(0.0),
            pl.col("^idcg__.*$").fill_null(0.0),
        )
    )
    long = _long_per_cutoff(wide, spec)

    status = (
        pl.when(~pl.col("judged"))
        .then(pl.lit("no_judgments"))
        .when(~pl.col("in_run"))
        .then(pl.lit("missing_from_run"))
        .when(pl.col("idcg") > 0)
        .then(pl.lit("scored"))
        .otherwise(pl.lit("no_relevant_judgments"))
        .cast(pl.Enum(list(STATUSES)))
    )
    undefined_value = pl.lit(0.0) if spec.no_relevant == "zero" else pl.lit(None, pl.Float64)
    value = (
        pl.when(~pl.col("judged"))
        .then(pl.lit(None, pl.Float64))
        .when(~pl.col("in_run") & (spec.query_set == "both"))
        .then(pl.lit(None, pl.Float64))
        .when(pl.col("idcg") > 0)
        .then(pl.col("dcg") / pl.col("idcg"))
        .otherwise(undefined_value)
    )
    within = pl.when(pl.col("cutoff").is_null()).then(pl.col("n_retrieved")).otherwise(
        pl.min_horizontal(pl.col("cutoff").cast(pl.Int64), pl.col("n_retrieved"))
    )
    judged_only = pl.when(pl.col("judged"))
    return (
        long.with_columns(status=status, value=value)
        .with_columns(
            dcg=judged_only.then(pl.col("dcg")),
            idcg=judged_only.then(pl.col("idcg")),
            unjudged_fraction_at_k=pl.when(within > 0).then(pl.col("n_unjudged_at_k") / within),
        )
        .select(list(PER_QUERY))
        .cast(PER_QUERY)
        .sort([QUERY, pl.col("cutoff")], nulls_last=True)
    )


# -- summary ------------------------------------------------------------------------------------------------------


def summarize(per_query: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Per cutoff: the declared aggregate over the scored queries (value not null) and what was left out."""
    if spec.aggregation == "weighted_mean":
        weights = pl.LazyFrame(spec.query_weights, schema={QUERY: pl.String, "weight": pl.Float64}, orient="row")
        per_query = per_query.join(weights, on=QUERY, how="left").with_columns(pl.col("weight").fill_null(1.0))
        aggregate = ordered_sum(pl.col("value") * pl.col("weight")) / ordered_sum(
            pl.col("weight").filter(pl.col("value").is_not_null())
        )
        rule = "weighted_mean(weight=declared per query, 1 if not declared)"
    else:
        aggregate = ordered_mean(pl.col("value"))
        rule = "mean"
    scored = pl.col("value").is_not_null()
    status = pl.col("status")
    k_or_all = pl.col("cutoff").cast(pl.Int64).fill_null(pl.col("n_retrieved"))
    unjudged_only = scored & (pl.col("n_retrieved") > 0) & (
        pl.col("n_unjudged_at_k") == pl.min_horizontal(k_or_all, pl.col("n_retrieved"))
    )
    return (
        per_query.sort(QUERY, "cutoff", nulls_last=True, maintain_order=True)
        .group_by("cutoff")
        .agg(
            value=pl.when(scored.any()).then(aggregate),
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
        .sort("cutoff", nulls_last=True)
    )
