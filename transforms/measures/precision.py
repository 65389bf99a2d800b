"""P@k: the relevant share of the first k positions (trec_eval `P_k`).

`P@k = |{i <= k : grade_i >= rel}| / k`; a run shorter than k counts its missing positions as non-relevant.
Manning, Raghavan & Schütze, "Introduction to Information Retrieval", 2008, section 8.4; trec_eval's `m_P.c`.
Defined without relevant judgments (0); a missing query scores 0.

Belongs here: the P@k formula over the ranked-and-judged rows.
"""

from __future__ import annotations

import polars as pl

from judged.schemas.measures import Precision
from judged.schemas.spec import EvaluationSpec
from judged.transforms.judging import binary_per_query, is_relevant, within


def per_query(
    rows: pl.LazyFrame, judgments: pl.LazyFrame, queries: pl.LazyFrame, measures: list[Precision], spec: EvaluationSpec
) -> pl.LazyFrame:
    frames = []
    for measure in measures:
        k = measure.cutoff if measure.cutoff is not None else 0  # declared required (schemas.measures)
        hits = (is_relevant(measure.rel) & within("eval_rank", measure.cutoff)).sum()
        value = hits.cast(pl.Float64) / float(k)
        frames.append(binary_per_query(rows, judgments, queries, measure, spec, measure.rel, value, per_relevant=False))
    return pl.concat(frames, how="vertical")
