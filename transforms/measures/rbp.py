"""RBP(p): rank-biased precision, with its residual (trec_eval 10 `rbp`, `rbp_resid`).

`RBP = (1 - p) * sum_i p^(i-1) * r_i` over the evaluated list, r_i = 1 when grade_i >= `rel`, else 0 (an unjudged
document counts 0). The residual is what the unknown part of the ranking could add:
`residual = (1 - p) * sum over unjudged positions i of p^(i-1) + p^n` (n the documents retrieved: the tail past
the list), and 0 when no retrieved document is unjudged, as trec_eval prints it. `[RBP, RBP + residual]` bounds the
measure. Moffat & Zobel, "Rank-biased precision for measurement of retrieval effectiveness", ACM TOIS 27(1), 2008;
trec_eval's `m_rbp.c`, `m_rbp_resid.c` (which also count a negative grade as unjudged in the residual; here a
negative grade is judged non-relevant, so the two agree whenever the judgments have no negative grade). trec_eval
scales graded gains to [0, 1]; here relevance is binary at `rel`, as in the paper and ir_measures, so the two agree
on binary judgments. It reads every row. Defined without relevant judgments (0); a missing query scores 0 with
residual 0 (it retrieved nothing, so nothing is unknown; trec_eval -c prints the same).

Belongs here: the RBP formula and its residual over the ranked-and-judged rows.
"""

from __future__ import annotations

import polars as pl

from judged.schemas.measures import RBP
from judged.schemas.spec import EvaluationSpec
from judged.transforms.judging import binary_per_query, is_relevant
from judged.transforms.ranking import ordered_sum


def per_query(
    rows: pl.LazyFrame, judgments: pl.LazyFrame, queries: pl.LazyFrame, measures: list[RBP], spec: EvaluationSpec
) -> pl.LazyFrame:
    frames = []
    for measure in measures:
        p = measure.p
        weight = pl.lit(p, pl.Float64).pow((pl.col("eval_rank") - 1).cast(pl.Float64))
        value = (1.0 - p) * ordered_sum(pl.when(is_relevant(measure.rel)).then(weight))
        unjudged = pl.col("relevance").is_null() & pl.col("eval_rank").is_not_null()
        listed = pl.col("eval_rank").is_not_null().sum().cast(pl.Float64)
        residual = (
            pl.when(unjudged.any())
            .then((1.0 - p) * ordered_sum(pl.when(unjudged).then(weight)) + pl.lit(p, pl.Float64).pow(listed))
            .otherwise(pl.lit(0.0))
            .alias("residual")
        )
        rows_of_measure = binary_per_query(rows, judgments, queries, measure, spec, measure.rel, value, False, (residual,))
        # A query the run does not list retrieved nothing, so nothing is unknown: residual 0 (trec_eval -c).
        missing = (pl.col("status") == "missing_from_run") & pl.col("value").is_not_null()
        frames.append(rows_of_measure.with_columns(residual=pl.when(missing).then(0.0).otherwise(pl.col("residual"))))
    return pl.concat(frames, how="vertical")
