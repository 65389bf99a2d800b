"""Ranking a run under a declared spec, measure-agnostic: the sort key, trec_eval's order, the depth cut, and the
candidate rows that decide every requested measure.

Belongs here: the order of a run's rows (score at the declared precision, or the file's rank; ties broken by doc_id),
how many first rows of each query the requested measures read (`first_rows_needed`), the selection of those rows
without sorting the run, and the in-order sums every measure adds with. Nothing here knows a grade or a measure's
formula: judgments are attached in `transforms/judging.py`, measures live in `transforms/measures/`.
"""

from __future__ import annotations

import polars as pl

from judged.schemas.fields import QUERY
from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.transforms.duplicates import docs_may_repeat

# The ranking a stored run keeps its rows in (transforms/layout.py), numbered by `position`: score at full
# precision, larger first, then doc_id descending.
STORED_ORDER = PRESETS["judged"]


def follows_stored_order(spec: EvaluationSpec) -> bool:
    """Whether the spec ranks rows as a stored run keeps them, so a stored `position` is its order."""
    return (
        spec.ranking == STORED_ORDER.ranking
        and spec.score_precision == STORED_ORDER.score_precision
        and spec.ties == STORED_ORDER.ties
    )


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
    equal keys share their credit. Rows of a stored run carry their `position` in that order (when the spec
    follows it): they are put in it by that integer, not ranked again by score and doc_id."""
    doc_id_descending = spec.ties != "docid_asc"
    schema = run.collect_schema()
    if "sort_key" not in schema:
        run = run.with_columns(sort_key=sort_key(spec))
    if "position" in schema and follows_stored_order(spec):
        ordered = run.sort([QUERY, "position"])
    else:
        ordered = run.sort([QUERY, "sort_key", "doc_id"], descending=[False, True, doc_id_descending])
    # Numbered again rather than taken from `position`: a duplicates policy may have dropped rows before.
    ranked = ordered.with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(QUERY))
    if spec.depth is not None:
        ranked = ranked.filter(pl.col("rank") <= spec.depth)
    return ranked


def first_rows_needed(spec: EvaluationSpec) -> int | None:
    """How many of each query's first rows decide every value and count of the spec: the deepest row bound of
    its measures (`MeasureBase.rows_needed`); None when all rows do (a measure over the whole list, such as AP
    without a cutoff, R-Prec or RBP; condensed lists; an ideal over the retrieved documents)."""
    bounds = [measure.rows_needed() for measure in spec.measure_list()]
    if None in bounds or spec.unjudged == "condensed" or spec.ideal == "retrieved":
        return None
    deepest = max(k for k in bounds if k is not None)
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
    kept = ["position"] if "position" in run.collect_schema() else []  # a stored run's order, for `rank_run`
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
    candidates = rows_kept.select("stretch", QUERY, "doc_id", "sort_key", *kept).join(stretch_queries, on="stretch")
    if k is not None:  # a query spread over stretches: its candidates are the best of its stretches' candidates
        candidates = candidates.filter(pl.col("sort_key") >= pl.col("sort_key").top_k(k).min().over(QUERY))
    n_retrieved = pl.col("n_retrieved").cast(pl.Int64)
    if spec.depth is not None:
        n_retrieved = pl.min_horizontal(n_retrieved, pl.lit(spec.depth, pl.Int64))
    return candidates.select(QUERY, "doc_id", "sort_key", *kept, n_retrieved.alias("n_retrieved"), "docs_may_repeat")


def stretches_of(query_ids: pl.Series) -> pl.DataFrame:
    """The row offset (`start`, the first one 0) and the `query_id` of every stretch of one query id (see
    `candidate_rows`) of query ids held in memory, from their run-length encoding: about half the work of comparing
    every id with the one before it. (Eager: Polars 2.1's streaming engine fails on `rle` over a column of several
    chunks.)"""
    runs = query_ids.rle().struct.unnest()
    return runs.select(start=(pl.col("len").cum_sum() - pl.col("len")).cast(pl.get_index_type()),
                       query_id=pl.col("value"))


def ordered_sum(values: pl.Expr) -> pl.Expr:
    """Sum in row order, nulls as 0, as trec_eval's loop does. Polars' float `sum()` in a group-by may add in a
    different order from one call to the next (seen on polars 2.1); a cumulative sum is sequential, so the same
    rows in the same order always give the same bits."""
    return values.fill_null(0.0).cum_sum().last()


def ordered_mean(values: pl.Expr) -> pl.Expr:
    """Mean of the non-null values, summed in row order (see `ordered_sum`); null when there are none (never the
    NaN of 0 / 0)."""
    return pl.when(values.count() > 0).then(ordered_sum(values) / values.count())
