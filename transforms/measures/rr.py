"""RR and RR@k: the reciprocal rank of the first relevant document (trec_eval `recip_rank`).

`RR@k = 1 / i` for the first position i <= k holding a document of grade >= `rel`, 0 when none does.
Voorhees, "The TREC-8 question answering track report", TREC 1999; trec_eval's `m_recip_rank.c` (RR@k is its
value under `-M k`). Defined without relevant judgments (0); a missing query scores 0.

Belongs here: the RR formula over the ranked-and-judged rows.
"""

from __future__ import annotations

import polars as pl

from judged.schemas.measures import RR
from judged.schemas.spec import EvaluationSpec
from judged.transforms.judging import binary_per_query, is_relevant, within


def per_query(
    rows: pl.LazyFrame, judgments: pl.LazyFrame, queries: pl.LazyFrame, measures: list[RR], spec: EvaluationSpec
) -> pl.LazyFrame:
    frames = []
    for measure in measures:
        found = is_relevant(measure.rel) & within("eval_rank", measure.cutoff)
        value = (1.0 / pl.col("eval_rank").filter(found).min().cast(pl.Float64)).fill_null(0.0)
        frames.append(binary_per_query(rows, judgments, queries, measure, spec, measure.rel, value, per_relevant=False))
    return pl.concat(frames, how="vertical")
