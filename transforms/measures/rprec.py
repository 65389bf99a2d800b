"""R-Prec: precision at rank R, R the number of relevant judged documents (trec_eval `Rprec`, ir_measures `Rprec`).

`R-Prec = |{i <= R : grade_i >= rel}| / R`. Buckley & Voorhees, "Retrieval system evaluation", in TREC: Experiment
and Evaluation in Information Retrieval, 2005; trec_eval's `m_Rprec.c`. It reads every row (R varies by query).
Undefined when R = 0 (`no_relevant` declares 0 or null); a missing query scores 0.

Belongs here: the R-Prec formula over the ranked-and-judged rows.
"""

from __future__ import annotations

import polars as pl

from judged.schemas.measures import RPrecision
from judged.schemas.spec import EvaluationSpec
from judged.transforms.judging import binary_per_query, is_relevant, with_relevant_judged


def per_query(
    rows: pl.LazyFrame, judgments: pl.LazyFrame, queries: pl.LazyFrame, measures: list[RPrecision], spec: EvaluationSpec
) -> pl.LazyFrame:
    frames = []
    for measure in measures:
        with_r = with_relevant_judged(rows, judgments, measure.rel)
        hits = (is_relevant(measure.rel) & (pl.col("eval_rank") <= pl.col("n_relevant_judged"))).sum()
        value = hits.cast(pl.Float64)
        frames.append(binary_per_query(with_r, judgments, queries, measure, spec, measure.rel, value, per_relevant=True))
    return pl.concat(frames, how="vertical")
