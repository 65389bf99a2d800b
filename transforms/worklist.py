"""The judging worklist: which unjudged (query, document) pairs to judge next, ranked by how much judging each would
narrow the nDCG@k intervals of the evaluations that retrieved it in their top k (the width objective), the paired
difference intervals of the pairs of runs not yet decided (the pairs objective), or which disputed judgments to
adjudicate so as to decide the most pairs (the adjudicate objective).

Belongs here: the pure ranking of candidate pairs (LazyFrame in, LazyFrame out) and the priority rule. Reading the
evaluations, storing the worklist and writing the assessor file belong to flows/.

Priority rule. For an evaluation e and query q with interval [min, max] of its measure at k (nDCG@k:
transforms/intervals.py; the others: transforms/binary_intervals.py), judging an unjudged document d of its top k
(`open_documents`) with grade g leaves the interval of the world where d is judged g, of width W_g, both as the
engine computes them for an evaluation (`removed_widths`); the width judging d removes is expected to be
`sum_g p(g) * (W - W_g)`, with `p` the share of each grade of the scale among the judgment set's judgments, add-one
smoothed (so a grade never seen still counts). A pair's priority is that removed width summed over the evaluations
that retrieved it in their top k, each weighted by its query's weight (1 when none is declared). Why: a mean over queries moves by (1/n) of each query's move, so the removed
width is exactly what a judgment buys for the intervals of the aggregates analysts compare; a document several
systems rank high serves all of them at once; and the expectation prices what is likely, not the best case (a
document at rank 1 of a query with few relevant documents can move nDCG a lot but is usually graded 0). Ties are
broken by the best rank (lower first), then query_id and doc_id (byte order): the same inputs always give the same
list.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from judged.schemas.fields import QUERY
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import WORKLIST
from judged.transforms.ranking import ordered_sum
from judged.transforms.summary import aggregate_interval


def grade_counts(judgments: pl.LazyFrame) -> pl.LazyFrame:
    """How many resolved judgments carry each grade (`relevance`, `n`)."""
    return judgments.filter(pl.col("relevance").is_not_null()).group_by("relevance").agg(n=pl.len())


PRIORITY_DECIMALS = 12
"""The decimals of a priority that order the list: beyond them, two priorities differ by rounding only."""

WHAT_IF = "\x1f"
"""Joins an evaluation, a query, a document and a grade into one what-if query id (a byte no id holds: ids are
printable text)."""


def judging_worklist(
    candidates: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    grades: Sequence[int],
    prior: Sequence[tuple[int, float]],
    budget: int,
    query_weights: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """The `budget` unjudged pairs whose judging is expected to narrow the intervals most (contract `WORKLIST`).

    `candidates`: every evaluated run's candidate rows (`transforms.ranking.candidate_rows`) with an `evaluation`
    column naming the evaluation; the spec's one measure (any with an interval: nDCG, P, R, RR, R-Prec, AP, RBP) at
    its one cutoff k is the measure narrowed. `prior`: (grade, probability) for each grade of `grades`.
    `query_weights`: `query_id`, `weight` (default 1)."""
    if budget <= 0:
        raise ValueError(f"the budget must be a positive number of judgments, not {budget}")
    if len(spec.cutoffs) != 1 or spec.cutoffs[0] is None:
        raise ValueError("a worklist needs exactly one numeric cutoff k")
    resolved = judgments.filter(pl.col("relevance").is_not_null())
    removed = removed_widths(candidates, resolved, open_documents(candidates, judgments, spec), spec, grades, prior)
    weights = query_weights if query_weights is not None else pl.LazyFrame(
        schema={QUERY: pl.String, "weight": pl.Float64}
    )
    weighted = removed.join(weights, on=QUERY, how="left").with_columns(pl.col("weight").fill_null(1.0))
    return (
        weighted.sort("evaluation", QUERY, "doc_id")
        .group_by(QUERY, "doc_id")
        .agg(
            priority=ordered_sum(pl.col("width_removed") * pl.col("weight")),
            width_removed=ordered_sum(pl.col("width_removed")),
            best_rank=pl.col("rank").min().cast(pl.Int64),
            evaluations=pl.col("evaluation").sort(),
            n_evaluations=pl.len().cast(pl.Int64),
        )
        # Priorities equal but for rounding (the same width removed in two queries, summed in another order) are
        # ties: they go to the best rank, then the ids.
        .sort([pl.col("priority").round(PRIORITY_DECIMALS), "best_rank", QUERY, "doc_id"],
              descending=[True, False, False, False])
        .head(budget)
        .with_columns(position=pl.int_range(1, pl.len() + 1, dtype=pl.Int64))
        .select(list(WORKLIST))
        .cast(WORKLIST)
    )


def ranked_by_evaluation(candidates: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """The candidate rows of every evaluation (`evaluation` column), ranked and judged as the measures read them
    (`transforms.judging.ranked_and_judged`), each evaluation's query its own list."""
    from judged.transforms.judging import attach_judgments, with_list_positions
    from judged.transforms.ranking import rank_run

    # Ranked within each evaluation's query: the query id is scoped by the evaluation while ranking.
    scoped = candidates.with_columns(
        original=pl.col(QUERY), query_id=pl.concat_str([pl.col("evaluation"), pl.col(QUERY)], separator=WHAT_IF)
    )
    ranked = attach_judgments(rank_run(scoped, spec).with_columns(pl.col("original").alias(QUERY)), judgments)
    return with_list_positions(ranked, spec, ["evaluation", QUERY])


def open_documents(candidates: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.DataFrame:
    """The unjudged documents of each evaluation's top k at the spec's cutoff k (`evaluation`, query, `doc_id`,
    `rank`): in its first k, and under `ties='average'` every member of a tie group that starts within k (the group
    shares its credit). Under condensed lists the top k is that of the list the interval ranges over, every
    unjudged document judged: judged documents of a negative grade stay removed. Judged queries only: a query
    without judgments is never scored, so judging one document there changes nothing."""
    k = spec.cutoffs[0]
    position = pl.col("rank")
    if spec.unjudged == "condensed":
        kept = pl.col("relevance").is_null() | (pl.col("relevance") >= 0)
        position = pl.when(kept).then(pl.col("rank")).rank("ordinal").over("evaluation", QUERY)
    credited = position <= k
    if spec.ties == "average":
        credited = credited | (pl.col("group_first") <= k)
    judged_queries = judgments.filter(pl.col("relevance").is_not_null()).select(QUERY).unique()
    return (
        ranked_by_evaluation(candidates, judgments, spec)
        .filter(pl.col("relevance").is_null() & credited)
        .join(judged_queries, on=QUERY, how="semi")
        .select("evaluation", QUERY, "doc_id", "rank")
        .collect()
    )


# The most rows (the runs' and the judgments') the engine evaluates at once for the width rule: each what-if world
# copies its query's list and judgments, so a long list's tie group of unjudged documents (under `ties='average'`
# every member is open) would otherwise hold them all in memory at once.
WORLD_ROWS_PER_BATCH = 2_000_000


def removed_widths(
    candidates: pl.LazyFrame,
    resolved: pl.LazyFrame,
    documents: pl.DataFrame,
    spec: EvaluationSpec,
    grades: Sequence[int],
    prior: Sequence[tuple[int, float]],
    rows_per_batch: int = WORLD_ROWS_PER_BATCH,
) -> pl.LazyFrame:
    """The width rule, for every measure with an interval: per open document (`documents`, as `open_documents`
    gives them) of an evaluation's query, the expected width judging it removes, `sum_g p(g) * (W - W_g)`
    (`evaluation`, query, `doc_id`, `rank`, `width_removed`). Each "what if d were judged g" is evaluated by the
    engine itself (`what_if_widths`), so W and W_g are the widths an evaluation reports, under every option of the
    spec; the worlds go to the engine in batches of about `rows_per_batch` rows."""
    scale = pl.DataFrame({"grade": [g for g, _ in prior], "p": [p for _, p in prior]},
                         schema={"grade": pl.Int32, "p": pl.Float64})
    lists = documents.select("evaluation", QUERY).unique(maintain_order=True)
    # Nothing judged (an empty document and no grade): the current width W of each list.
    current = what_if_widths(
        candidates, resolved, lists.with_columns(judged_doc=pl.lit(""), grade=pl.lit(None, pl.Int32)), spec, grades
    ).select("evaluation", QUERY, current="width")
    sizes = (
        candidates.join(lists.lazy(), on=["evaluation", QUERY], how="semi").group_by("evaluation", QUERY).agg(n=pl.len())
        .join(resolved.group_by(QUERY).agg(n_judged=pl.len()), on=QUERY, how="left")
        .select("evaluation", QUERY, rows=pl.col("n") + pl.col("n_judged").fill_null(0))
        .collect()
    )
    worlds = (
        documents.join(scale.select("grade"), how="cross")
        .select("evaluation", QUERY, judged_doc="doc_id", grade="grade")
        .join(sizes, on=["evaluation", QUERY], how="left")
        .with_columns(batch=pl.col("rows").cum_sum() // max(rows_per_batch, 1))
    )
    judged = pl.concat([
        what_if_widths(candidates, resolved, batch.drop("rows", "batch"), spec, grades)
        for batch in worlds.partition_by("batch", maintain_order=True)
    ] or [pl.DataFrame(schema={"evaluation": pl.String, QUERY: pl.String, "judged_doc": pl.String,
                               "grade": pl.Int32, "width": pl.Float64})])
    return (
        judged.lazy()
        .join(current.lazy(), on=["evaluation", QUERY])
        .join(scale.lazy(), on="grade")
        .sort("evaluation", QUERY, "judged_doc", "grade")
        .group_by("evaluation", QUERY, pl.col("judged_doc").alias("doc_id"))
        .agg(width_removed=ordered_sum(pl.col("p") * (pl.col("current") - pl.col("width"))).clip(lower_bound=0.0))
        .join(documents.lazy(), on=["evaluation", QUERY, "doc_id"])
    )


def what_if_widths(
    candidates: pl.LazyFrame, resolved: pl.LazyFrame, worlds: pl.DataFrame, spec: EvaluationSpec,
    grades: Sequence[int],
) -> pl.DataFrame:
    """The width (value_max - value_min) of the spec's measure in each world (`evaluation`, query, `judged_doc`,
    `grade`: the evaluation's query with document `judged_doc` judged `grade`, or as it is with a null grade), each
    evaluated by the engine (`per_query_measures`) as a query of its own: the run's rows of the query, the query's
    judgments plus (judged_doc, grade). Worlds whose value is undefined are left out."""
    from judged.transforms.measures import per_query_measures

    named = worlds.with_columns(
        world=pl.concat_str([pl.col("evaluation"), pl.col(QUERY), pl.col("judged_doc"),
                             pl.col("grade").cast(pl.String).fill_null("")], separator=WHAT_IF)
    )
    # Collected before the engine reads them: its plan reads both in several branches, each of which would
    # otherwise build every world again.
    world_rows = (
        candidates.join(named.lazy().select("evaluation", QUERY, "world"), on=["evaluation", QUERY])
        .drop(QUERY).rename({"world": QUERY})
        .collect()
    )
    world_judgments = pl.concat([
        resolved.join(named.lazy().select(QUERY, "world"), on=QUERY).select("world", "doc_id", "relevance"),
        named.lazy().filter(pl.col("grade").is_not_null()).select(
            "world", pl.col("judged_doc").alias("doc_id"), pl.col("grade").alias("relevance")
        ),
    ]).rename({"world": QUERY}).with_columns(pl.col("relevance").cast(pl.Int32)).collect()
    intervals = per_query_measures(world_rows.lazy(), world_judgments.lazy(), spec, grades).select(
        pl.col(QUERY).alias("world"), width=pl.col("value_max") - pl.col("value_min")
    )
    return (
        named.lazy().join(intervals.drop_nulls("width"), on="world", how="inner")
        .select("evaluation", QUERY, "judged_doc", "grade", "width")
        .collect()
    )


def smoothed_prior(counts: pl.DataFrame, grades: Sequence[int]) -> list[tuple[int, float]]:
    """(grade, probability) over the scale: the share of each grade among the judgments, add-one smoothed."""
    seen = {int(grade): int(n) for grade, n in counts.iter_rows()}
    total = sum(seen.get(g, 0) + 1 for g in grades)
    return [(g, (seen.get(g, 0) + 1) / total) for g in sorted(set(grades))]


# -- the pairs objective ---------------------------------------------------------------------------------------------


def pair_states(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    grades: Sequence[int],
    pairs: pl.LazyFrame,
    query_weights: pl.LazyFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Where each pair of runs stands at the spec's one cutoff k, over the judged queries with a value (a query a
    run did not retrieve scores 0 there, trec_eval -c): per pair, query and cutoff the paired difference interval
    and its world (`transforms.paired_intervals.pair_worlds`, with `width` and the query's `weight`); and per pair
    the interval of the aggregate difference (`mean_difference_min`, `mean_difference_max`), `decided` and
    `decided_direction`. `ranked` as for `pair_worlds` (a `run` column); `pairs`: `baseline`, `run`."""
    from judged.transforms.paired_intervals import DIFFERENCE_INPUTS, DIFFERENCE_STRUCT, differences_of_worlds, pair_worlds

    zero_if_no_ideal = spec.no_relevant == "zero"
    queries = query_weights_of(judgments, spec, query_weights)
    every_world = (
        pair_worlds(ranked, judgments, spec, pairs, grades, every_query=True)
        .with_columns(
            difference=pl.struct(DIFFERENCE_INPUTS).map_batches(
                lambda batch: differences_of_worlds(batch, zero_if_no_ideal), return_dtype=DIFFERENCE_STRUCT
            )
        )
        .unnest("difference")
        .filter(pl.col("difference_min").is_not_null())
        .join(queries, on=QUERY, how="inner")
        .with_columns(width=pl.col("difference_max") - pl.col("difference_min"))
        .collect()
    )
    # The priorities read the queries with a value now; a query without a relevant judgment only joins the mean.
    worlds = every_world.filter("valued").drop("valued")
    # Every judged query of every pair: one with a value that neither run retrieved differs by 0 (both score 0).
    sample = (
        pairs.collect().join(queries.collect(), how="cross")
        .join(every_world.select("baseline", "run", QUERY, "difference_min", "difference_max"),
              on=["baseline", "run", QUERY], how="left")
        .with_columns(pl.when("valued").then(pl.col(c).fill_null(0.0)).otherwise(pl.col(c))
                      for c in ("difference_min", "difference_max"))
        .with_columns(counted=pl.when("valued").then(0.0))
        # The aggregate adds in row order (`transforms.ranking.ordered_sum`): in query order, the same bits whatever
        # order the runs' rows and the pairs came in.
        .sort("baseline", "run", QUERY)
    )
    may_join = pl.col("counted").is_null() & pl.col("difference_min").is_not_null()
    low, high = aggregate_interval("difference_min", "difference_max", "counted", pl.col("weight"), may_join)
    per_pair = (
        pairs.collect()
        .join(sample.group_by("baseline", "run").agg(mean_difference_min=low, mean_difference_max=high),
              on=["baseline", "run"], how="left")
        .with_columns(
            decided_direction=pl.when(pl.col("mean_difference_min") > 0).then(pl.lit("run"))
            .when(pl.col("mean_difference_max") < 0).then(pl.lit("baseline")),
        )
        .with_columns(decided=pl.col("decided_direction").is_not_null())
    )
    return worlds, per_pair


def query_weights_of(
    judgments: pl.LazyFrame, spec: EvaluationSpec, query_weights: pl.LazyFrame | None
) -> pl.LazyFrame:
    """`query_id`, `weight` (1 where none is declared) and `valued` of the judged queries: `valued` when the spec's
    measure has a value whatever the unjudged documents are (every judged query, but under `no_relevant='null'`
    only those with a judged relevant document for a measure undefined without one: nDCG, a positive gain; AP, R,
    R-Prec, a grade of at least `rel`); the others have one only in the worlds where some unjudged document is."""
    from judged.transforms.measures.ndcg import gain_of

    measure = spec.measure_list()[0]
    relevant = gain_of(spec) > 0 if measure.name == "nDCG" else pl.col("relevance") >= getattr(measure, "rel", 1)
    resolved = judgments.filter(pl.col("relevance").is_not_null())
    queries = resolved.group_by(QUERY).agg(
        valued=relevant.any() | pl.lit(spec.no_relevant == "zero" or not measure.undefined_without_relevant)
    )
    declared = query_weights if query_weights is not None else pl.LazyFrame(
        schema={QUERY: pl.String, "weight": pl.Float64}
    )
    return queries.join(declared, on=QUERY, how="left").with_columns(pl.col("weight").fill_null(1.0))


def weights_of_scored(judgments: pl.LazyFrame, spec: EvaluationSpec, query_weights: pl.LazyFrame | None) -> pl.LazyFrame:
    """`query_id`, `weight` of the judged queries where the spec's measure has a value whatever the unjudged
    documents are (`query_weights_of`)."""
    return query_weights_of(judgments, spec, query_weights).filter("valued").drop("valued")


def pairs_worklist(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    grades: Sequence[int],
    pairs: pl.LazyFrame,
    budget: int,
    query_weights: pl.LazyFrame | None = None,
    relative: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The `budget` unjudged pairs whose judging removes the most width from the difference intervals of the pairs
    of runs still undecided (contract `WORKLIST`; `evaluations` names the runs of those pairs), and the pairs'
    state (`pair_states`) with `could_decide`: whether judging the listed documents could decide the pair at best,
    by the priority's accounting (an estimate: a document judged relevant also raises the smallest ideal).

    Priority rule (Minimal Test Collections, Carterette, Allan & Sitaraman, SIGIR 2006, for graded nDCG). For an
    undecided pair p and query q with difference interval of width W_pq, a document d the two runs weigh
    differently (`v_d = w_run(d) - w_baseline(d) != 0`) moves the numerator of the difference by at most
    `(g_max - g_min) |v_d|`, so judging it removes `r_pqd = min(W_pq, (g_max - g_min) |v_d| / IDCG_q)` of the
    width, IDCG_q being the ideal DCG@k of the judged documents (the smallest the ideal can be; the smallest
    positive gain when there is none). What the numerator does not explain, `max(0, W_pq - sum_d r_pqd)`, is the
    shared ideal's, and each document only the ideal sees (`v_d = 0`) gets an equal share of it. The priority of
    (q, d) is `sum over undecided p of (lambda_q / Lambda) r_pqd`, divided by each pair's aggregate width W_p with
    `relative`: the width the judgment removes from the aggregate difference intervals, lambda_q being the query's
    weight and Lambda their sum. The list is one batch, judged together (`chosen_together`): each document is
    priced by the width left after the documents listed before it, so that no query's width is counted twice.
    Ties are broken by the best rank, then query_id and doc_id."""
    if budget <= 0:
        raise ValueError(f"the budget must be a positive number of judgments, not {budget}")
    if len(spec.cutoffs) != 1 or spec.cutoffs[0] is None:
        raise ValueError("a worklist needs exactly one numeric cutoff k")
    worlds, per_pair = pair_states(ranked, judgments, spec, grades, pairs, query_weights)
    # The aggregate's denominator, as pair_states takes it: each query's weight once (worlds repeat it per pair).
    total = weights_of_scored(judgments, spec, query_weights).select(pl.col("weight").sum()).collect().item() or 0.0
    undecided = per_pair.filter(~pl.col("decided")).with_columns(
        pair_width=pl.col("mean_difference_max") - pl.col("mean_difference_min")
    )
    levels = worlds["levels"][0].to_list() if worlds.height else [0.0]
    spread = max(levels) - min(levels) if levels else 0.0
    k = spec.cutoffs[0]
    smallest_gain = min([g for g in levels if g > 0], default=1.0)
    open_worlds = worlds.join(undecided.select("baseline", "run", "pair_width"), on=["baseline", "run"]).filter(
        pl.col("width") > 0
    ).with_columns(ideal=smallest_ideal(k, smallest_gain))
    scale = pl.col("weight") / total / (pl.col("pair_width") if relative else pl.lit(1.0))
    credited = (
        open_worlds.select("baseline", "run", QUERY, "width", "ideal", "weight", "pair_width", "docs", "weights")
        .explode("docs", "weights")
        .drop_nulls("docs")
        .with_columns(removed=pl.min_horizontal(pl.col("width"), spread * pl.col("weights").abs() / pl.col("ideal")))
    )
    explained = credited.group_by("baseline", "run", QUERY).agg(explained=ordered_sum(pl.col("removed")))
    ideal_only = (
        open_worlds.join(explained, on=["baseline", "run", QUERY], how="left")
        .select("baseline", "run", QUERY, "width", "weight", "pair_width", "ideal_only_docs",
                share=(pl.col("width") - pl.col("explained").fill_null(0.0)).clip(lower_bound=0.0)
                / pl.col("ideal_only_docs").list.len())
        .explode("ideal_only_docs")
        .drop_nulls("ideal_only_docs")
        .rename({"ideal_only_docs": "docs", "share": "removed"})
    )
    per_document = pl.concat([
        credited.select("baseline", "run", QUERY, "docs", "removed", "width", "weight", "pair_width"),
        ideal_only.select("baseline", "run", QUERY, "docs", "removed", "width", "weight", "pair_width"),
    ]).with_columns(scale=scale).rename({"docs": "doc_id"})
    listed = listed_batch(per_document, per_document, ranked, budget)
    return listed, with_could_decide(per_pair, undecided, per_document, listed, total)


# -- the adjudicate objective ----------------------------------------------------------------------------------------


def adjudication_worklist(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    grades: Sequence[int],
    pairs: pl.LazyFrame,
    budget: int,
    query_weights: pl.LazyFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The `budget` disputed judgments (pairs whose grade is a set under the spec's assessor model, `set` or
    `range`: assessors gave different grades) whose adjudication is expected to decide the most pairs of runs still
    undecided (contract `WORKLIST`; `evaluations` names the runs of those pairs), and the pairs' state
    (`pair_states`, with `could_decide` at best, as under the pairs objective). An adjudicated judgment has one
    grade: its dispute leaves the intervals; unjudged documents stay free, and adjudication does not narrow them.

    Priority rule. For an undecided pair p with aggregate difference interval [L_p, U_p], the least narrowing that
    could decide it is its need `n_p = min(U_p, -L_p)` (what is left must lie on one side of 0). For a query q of
    width W_pq and a disputed document d whose gains may be any of a set spanning `s_d` (the highest gain of the set
    minus the lowest), with weight difference `v_d` in the two lists (0 when neither run credits it: the ideal only
    sees it) and `D_pq` the largest |difference| of the query's interval, settling d's grade moves the difference by
    at most `s_d (|v_d| + D_pq) / IDCG_q` (the numerator by `s_d |v_d|`; the shared ideal, at least IDCG_q, the
    ideal DCG@k of the undisputed judged documents, by at most `s_d`), so it removes
    `r_pqd = min(W_pq, s_d (|v_d| + D_pq) / IDCG_q, n_p Lambda / lambda_q)` of the width: an estimate, exact when the
    difference moves linearly with d's gain. W_pq here is the width beyond the one the unjudged documents alone leave
    (every dispute at its consensus grade): adjudication cannot narrow that. The priority of d is `sum over undecided p of r_pqd lambda_q /
    (Lambda n_p)`: the share of each pair's need it covers, so that the pairs nearest to decided count most. The
    list is one batch, chosen greedily as under the pairs objective (`chosen_together`); ties go to the best rank,
    then query_id and doc_id (a disputed document no run retrieved within k has no rank and comes after)."""
    if budget <= 0:
        raise ValueError(f"the budget must be a positive number of judgments, not {budget}")
    if len(spec.cutoffs) != 1 or spec.cutoffs[0] is None:
        raise ValueError("a worklist needs exactly one numeric cutoff k")
    if spec.assessor_model not in ("set", "range"):
        raise ValueError("the adjudicate objective needs the assessor model set or range: under any other a disputed "
                         "judgment has one grade, and its intervals hold no dispute to settle")
    worlds, per_pair = pair_states(ranked, judgments, spec, grades, pairs, query_weights)
    # The width the unjudged documents alone leave: every dispute at its consensus grade (one grade of its set).
    pointwise, _ = pair_states(
        ranked.with_columns(grade_set=pl.lit(None, pl.List(pl.Int32))),
        judgments.with_columns(grade_set=pl.lit(None, pl.List(pl.Int32))), spec, grades, pairs, query_weights,
    )
    keys = ["baseline", "run", QUERY]
    worlds = worlds.join(pointwise.select(*keys, unjudged_width="width"), on=keys, how="left").with_columns(
        # What adjudication can remove: the width beyond the unjudged documents' own.
        width=(pl.col("width") - pl.col("unjudged_width").fill_null(0.0)).clip(lower_bound=0.0)
    )
    total = weights_of_scored(judgments, spec, query_weights).select(pl.col("weight").sum()).collect().item() or 0.0
    undecided = per_pair.filter(~pl.col("decided")).with_columns(
        pair_width=pl.col("mean_difference_max") - pl.col("mean_difference_min"),
        # An end at 0 itself is open by as little as it gets: kept positive, so that the share stays finite.
        need=pl.min_horizontal(pl.col("mean_difference_max"), -pl.col("mean_difference_min")).clip(lower_bound=1e-12),
    )
    levels = worlds["levels"][0].to_list() if worlds.height else [0.0]
    smallest_gain = min([g for g in levels if g > 0], default=1.0)
    open_worlds = (
        worlds.join(undecided.select("baseline", "run", "pair_width", "need"), on=["baseline", "run"])
        .filter((pl.col("width") > 0) & (pl.col("disputed_universe_docs").list.len() > 0))
        .with_columns(ideal=smallest_ideal(spec.cutoffs[0], smallest_gain),
                      largest=pl.max_horizontal(pl.col("difference_min").abs(), pl.col("difference_max").abs()))
    )
    columns = [*keys, "width", "weight", "pair_width", "need", "ideal", "largest"]
    # Every disputed document of the query moves the shared ideal; those a run credits move the numerator too.
    universe = (
        open_worlds.select(*columns, doc_id="disputed_universe_docs", gains="disputed_universe_sets")
        .explode("doc_id", "gains")
        .drop_nulls("doc_id")
    )
    credited = (
        open_worlds.select(*keys, doc_id="disputed_docs", difference_weight="disputed_weights")
        .explode("doc_id", "difference_weight")
        .drop_nulls("doc_id")
    )
    spread = pl.col("gains").list.max() - pl.col("gains").list.min()
    per_document = (
        universe.join(credited, on=[*keys, "doc_id"], how="left")
        .with_columns(
            removed=pl.min_horizontal(
                pl.col("width"),
                spread * (pl.col("difference_weight").fill_null(0.0).abs() + pl.col("largest")) / pl.col("ideal"),
            ),
            scale=pl.col("weight") / total / pl.col("need"),
        )
        .filter(pl.col("removed") > 0)
        .select(*keys, "doc_id", "removed", "width", "weight", "pair_width", "scale", "need")
    )
    # Priced, no document covers more than its pair's need; whether the list could decide a pair reads the whole
    # width each removes.
    priced = per_document.with_columns(
        removed=pl.min_horizontal(pl.col("removed"), pl.col("need") * total / pl.col("weight"))
    )
    listed = listed_batch(priced, per_document, ranked, budget)
    return listed, with_could_decide(per_pair, undecided, per_document, listed, total)


def listed_batch(
    priced: pl.DataFrame, per_document: pl.DataFrame, ranked: pl.LazyFrame, budget: int
) -> pl.DataFrame:
    """The paired objectives' one batch (contract `WORKLIST`): the `budget` documents `chosen_together` picks by
    their priced removals (`priced`, the rows of `per_document` with what each may remove), in order."""
    return (
        chosen_together(priced, documents_touched(per_document, ranked), budget)
        .with_columns(position=pl.int_range(1, pl.len() + 1, dtype=pl.Int64))
        .select(list(WORKLIST))
        .cast(WORKLIST)
    )


def documents_touched(per_document: pl.DataFrame, ranked: pl.LazyFrame) -> pl.DataFrame:
    """Per (query, document) of `per_document` (the pairs of runs it moves: `baseline`, `run`): its best rank in
    either run of those pairs (null where neither retrieved it), the runs (`evaluations`) and their count."""
    ranks = ranked.group_by("run", QUERY, "doc_id").agg(rank=pl.col("rank").min()).collect()
    return (
        per_document.join(ranks.rename({"run": "baseline", "rank": "baseline_rank"}),
                          on=["baseline", QUERY, "doc_id"], how="left")
        .join(ranks.rename({"rank": "run_rank"}), on=["run", QUERY, "doc_id"], how="left")
        .group_by(QUERY, "doc_id")
        .agg(
            best_rank=pl.min_horizontal(pl.col("baseline_rank").min(), pl.col("run_rank").min()).cast(pl.Int64),
            evaluations=pl.concat([pl.col("baseline"), pl.col("run")]).unique().sort(),
        )
        .with_columns(n_evaluations=pl.col("evaluations").list.len().cast(pl.Int64))
    )


def with_could_decide(
    per_pair: pl.DataFrame, undecided: pl.DataFrame, per_document: pl.DataFrame, listed: pl.DataFrame, total: float
) -> pl.DataFrame:
    """`per_pair` with `could_decide`: whether the `listed` documents could decide each pair at best, by
    `per_document`'s accounting (what each removes from each (pair, query) interval); a decided pair is."""
    # At best, the listed judgments remove their width from each undecided pair's aggregate interval (no more than a
    # query's width from that query), which then lies on one side of 0 if what is left is narrower than the larger
    # side.
    removed_per_pair = (
        per_document.join(listed.select(QUERY, "doc_id"), on=[QUERY, "doc_id"])
        .sort("baseline", "run", QUERY, "doc_id")
        .group_by("baseline", "run", QUERY)
        .agg(
            removed=pl.min_horizontal(ordered_sum(pl.col("removed")), pl.col("width").first()),
            weight=pl.col("weight").first(),
        )
        .sort("baseline", "run", QUERY)
        .group_by("baseline", "run")
        .agg(removed=ordered_sum(pl.col("removed") * pl.col("weight") / total))
    )
    could = undecided.join(removed_per_pair, on=["baseline", "run"], how="left").with_columns(
        could_decide=(pl.col("pair_width") - pl.col("removed").fill_null(0.0))
        < pl.max_horizontal(pl.col("mean_difference_max"), -pl.col("mean_difference_min"))
    ).select("baseline", "run", "could_decide")
    return per_pair.join(could, on=["baseline", "run"], how="left").with_columns(
        pl.col("could_decide").fill_null(pl.col("decided"))
    )


def smallest_ideal(k: int, smallest_gain: float) -> pl.Expr:
    """The ideal DCG@k of a (pair, query) world's `judged_ideal` gains: the smallest its ideal can be, whatever the
    open documents get; `smallest_gain` where nothing judged is relevant."""
    from judged.transforms.intervals import discount_prefix

    discounts = np.diff(discount_prefix(k, k))
    return pl.col("judged_ideal").map_elements(
        lambda gains: float(np.sort(np.asarray(gains))[::-1][:k] @ discounts[: min(k, len(gains))])
        if len(gains) else smallest_gain,
        return_dtype=pl.Float64,
    )


def chosen_together(per_document: pl.DataFrame, documents: pl.DataFrame, budget: int) -> pl.DataFrame:
    """The first `budget` of `documents` (`query_id`, `doc_id`, `best_rank`, ...) as a batch judged together, each
    with its `priority` and `width_removed`, in the order chosen.

    `per_document` holds what judging a document removes from each (pair, query) interval it touches (`baseline`, `run`,
    `query_id`, `doc_id`, `removed`, the interval's `width`, the pair's `scale`). Each removal is priced as if its
    document were judged alone, and a query's removals together can exceed its width (the shared ideal explains part of
    it in several of them), so the batch is chosen greedily: the next document is the one removing the most scaled width
    from what the documents before it left, `sum scale * min(removed, width left)`. The greedy choice of a coverage
    objective like this one is within 1 - 1/e of the best batch (Nemhauser, Wolsey & Fisher 1978); the gains only shrink
    as the batch grows, so a document's last computed gain bounds its next and only the documents at the top of the heap
    are recomputed (Minoux's lazy greedy). Ties go to the best rank, then query_id and doc_id."""
    import heapq

    keys = ["baseline", "run", QUERY]
    ordered = documents.sort("best_rank", QUERY, "doc_id", nulls_last=True).with_row_index("order")
    groups = per_document.select(*keys, "width").unique(keys, keep="first").with_row_index("group")
    rows = (
        per_document.join(groups.select(*keys, "group"), on=keys)
        .join(ordered.select(QUERY, "doc_id", "order"), on=[QUERY, "doc_id"])
        # A document's gain adds its (pair, query) removals in this order: the same bits whatever the input order.
        .sort("order", *keys)
    )
    row_order = rows["order"].to_numpy()
    removed = rows["removed"].to_numpy()
    scale = rows["scale"].to_numpy()
    group = rows["group"].to_numpy()
    left = groups["width"].to_numpy().astype(np.float64, copy=True)
    bounds = np.searchsorted(row_order, np.arange(ordered.height + 1))
    first = np.bincount(row_order, weights=scale * np.minimum(removed, left[group]), minlength=ordered.height)
    heap = [(-gain, j) for j, gain in enumerate(first.tolist())]
    heapq.heapify(heap)
    chosen: list[int] = []
    gains: list[float] = []
    widths: list[float] = []
    while heap and len(chosen) < budget:
        _, j = heapq.heappop(heap)
        touched = group[bounds[j]:bounds[j + 1]]
        taken = np.minimum(removed[bounds[j]:bounds[j + 1]], left[touched])
        gain = float(scale[bounds[j]:bounds[j + 1]] @ taken)
        if heap and (-gain, j) > heap[0]:
            heapq.heappush(heap, (-gain, j))
            continue
        left[touched] -= taken
        chosen.append(j)
        gains.append(gain)
        widths.append(float(taken.sum()))
    picked = pl.DataFrame({"order": pl.Series(chosen, dtype=pl.UInt32), "priority": gains, "width_removed": widths})
    return picked.join(ordered, on="order", maintain_order="left").drop("order")
