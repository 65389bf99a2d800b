"""The judging worklist: which unjudged (query, document) pairs to judge next, ranked by how much judging each would
narrow the nDCG@k intervals of the evaluations that retrieved it in their top k.

Belongs here: the pure ranking of candidate pairs (LazyFrame in, LazyFrame out) and the priority rule. Reading the
evaluations, storing the worklist and writing the assessor file belong to flows/.

Priority rule. For an evaluation e and query q with interval [min, max] of nDCG@k (transforms/intervals.py), judging
an unjudged document d of its top k with grade g leaves the interval of the world where d is judged g, of width
W_g; the width judging d removes is expected to be `sum_g p(g) * (W - W_g)`, with `p` the share of each grade of the
scale among the judgment set's judgments, add-one smoothed (so a grade never seen still counts). A pair's priority
is that removed width summed over the evaluations that retrieved it in their top k, each weighted by its query's
weight (1 when none is declared). Why: a mean over queries moves by (1/n) of each query's move, so the removed
width is exactly what a judgment buys for the intervals of the aggregates analysts compare; a document several
systems rank high serves all of them at once; and the expectation prices what is likely, not the best case (a
document at rank 1 of a query with few relevant documents can move nDCG a lot but is usually graded 0). Ties are
broken by the best rank (lower first), then query_id and doc_id (byte order): the same inputs always give the same
list.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from judged.schemas.fields import QUERY
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import WORKLIST
from judged.transforms.intervals import interval_of_world, interval_worlds


def grade_counts(judgments: pl.LazyFrame) -> pl.LazyFrame:
    """How many resolved judgments carry each grade (`relevance`, `n`)."""
    return judgments.filter(pl.col("relevance").is_not_null()).group_by("relevance").agg(n=pl.len())


def _removed_widths(world: dict, prior: list[tuple[float, float]], zero_if_no_ideal: bool) -> list[dict]:
    """Per credited unjudged document of one world: the expected width judging it removes."""
    base = interval_of_world(world, zero_if_no_ideal)
    if base["value_min"] is None:
        return []
    width = base["value_max"] - base["value_min"]
    removed = []
    for index, doc_id in enumerate(world["unjudged_docs"]):
        weight = world["weights"][index]
        others = world["weights"][:index] + world["weights"][index + 1 :]
        expected = 0.0
        for gain, probability in prior:
            judged = dict(
                world,
                weights=others,
                fixed=world["fixed"] + gain * weight,
                judged_ideal=list(world["judged_ideal"]) + ([gain] if gain > 0 else []),
            )
            after = interval_of_world(judged, zero_if_no_ideal)
            if after["value_min"] is not None:
                expected += probability * (width - (after["value_max"] - after["value_min"]))
        removed.append({"doc_id": doc_id, "rank": world["unjudged_ranks"][index], "width_removed": max(expected, 0.0)})
    return removed


def judging_worklist(
    ranked: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    grades: Sequence[int],
    prior: Sequence[tuple[int, float]],
    budget: int,
    query_weights: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """The `budget` unjudged pairs whose judging is expected to narrow the intervals most (contract `WORKLIST`).

    `ranked`: the rows of every evaluated run, ranked under `spec` with their nullable grades (as for
    `interval_worlds`), with an `evaluation` column naming the evaluation; the spec's one cutoff is k. `prior`:
    (grade, probability) for each grade of `grades`. `query_weights`: `query_id`, `weight` (default 1)."""
    if budget <= 0:
        raise ValueError(f"the budget must be a positive number of judgments, not {budget}")
    if len(spec.cutoffs) != 1 or spec.cutoffs[0] is None:
        raise ValueError("a worklist needs exactly one numeric cutoff k")
    from judged.transforms.measures.ndcg import gain_of

    gain_prior = (
        pl.LazyFrame({"relevance": [g for g, _ in prior], "p": [p for _, p in prior]}, schema_overrides={"relevance": pl.Int32})
        .select(gain=gain_of(spec), p="p")
        .group_by("gain")
        .agg(pl.col("p").sum())
        .select(pl.struct("gain", "p").implode().alias("prior"))
    )
    zero_if_no_ideal = spec.no_relevant == "zero"
    removed_type = pl.List(pl.Struct({"doc_id": pl.String(), "rank": pl.Int64(), "width_removed": pl.Float64()}))
    worlds = interval_worlds(ranked, judgments, spec, grades, by=["evaluation"]).filter(
        pl.col("weights").list.len() > 0
    )
    inputs = ["cutoff", "fixed", "weights", "unjudged_docs", "unjudged_ranks", "unjudged_below", "unseen",
              "unseen_unjudged_min", "judged_ideal", "levels", "prior"]
    per_document = (
        worlds.join(gain_prior, how="cross")
        .select(
            "evaluation",
            QUERY,
            removed=pl.struct(inputs).map_elements(
                lambda world: _removed_widths(
                    world, [(item["gain"], item["p"]) for item in world["prior"]], zero_if_no_ideal
                ),
                return_dtype=removed_type,
            ),
        )
        .explode("removed")
        .unnest("removed")
        .filter(pl.col("doc_id").is_not_null())
    )
    weights = query_weights if query_weights is not None else pl.LazyFrame(
        schema={QUERY: pl.String, "weight": pl.Float64}
    )
    weighted = per_document.join(weights, on=QUERY, how="left").with_columns(pl.col("weight").fill_null(1.0))
    return (
        weighted.sort("evaluation")
        .group_by(QUERY, "doc_id")
        .agg(
            priority=(pl.col("width_removed") * pl.col("weight")).sum(),
            width_removed=pl.col("width_removed").sum(),
            best_rank=pl.col("rank").min().cast(pl.Int64),
            evaluations=pl.col("evaluation").sort(),
            n_evaluations=pl.len().cast(pl.Int64),
        )
        .sort(["priority", "best_rank", QUERY, "doc_id"], descending=[True, False, False, False])
        .head(budget)
        .with_columns(position=pl.int_range(1, pl.len() + 1, dtype=pl.Int64))
        .select(list(WORKLIST))
        .cast(WORKLIST)
    )


def smoothed_prior(counts: pl.DataFrame, grades: Sequence[int]) -> list[tuple[int, float]]:
    """(grade, probability) over the scale: the share of each grade among the judgments, add-one smoothed."""
    seen = {int(grade): int(n) for grade, n in counts.iter_rows()}
    total = sum(seen.get(g, 0) + 1 for g in grades)
    return [(g, (seen.get(g, 0) + 1) / total) for g in sorted(set(grades))]
