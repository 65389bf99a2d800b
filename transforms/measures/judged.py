"""Judged@k: the judged share of the first k retrieved documents, under one of two declared conventions.

- `convention='ir_measures'` (ir_measures' `Judged@k`): `|{i <= k : document i has any qrels entry}| / min(k, n)`,
  n the documents retrieved; a negative grade counts as judged.
- `convention='trec_eval'`: `1 - unj_k`, trec_eval 10's `m_unj.c`: `unj_k = |{i <= k : unjudged or grade < 0}| / k`
  (a negative grade counts as unjudged, and the denominator is always k, so a short run counts its missing
  positions as judged).

Both read the submitted order (`rank`), not a condensed list; ties follow the spec's declared order (ir_measures
itself orders Judged's ties by doc id ascending). Sakai & Kando, "On information retrieval metrics designed for
evaluation with incomplete relevance assessments", Information Retrieval 11(5), 2008. The value is defined without
relevant judgments. A query missing from the run has no ir_measures share (null: nothing was retrieved) and, as
trec_eval -c prints it, `unj_k = 0`, so 1 under the trec_eval convention.

Belongs here: the Judged@k formula over the ranked-and-judged rows.
"""

from __future__ import annotations

import polars as pl

from judged.schemas.measures import Judged
from judged.schemas.spec import EvaluationSpec
from judged.transforms.judging import binary_per_query, within


def per_query(
    rows: pl.LazyFrame, judgments: pl.LazyFrame, queries: pl.LazyFrame, measures: list[Judged], spec: EvaluationSpec
) -> pl.LazyFrame:
    frames = []
    for measure in measures:
        k = measure.cutoff if measure.cutoff is not None else 0  # declared required (schemas.measures)
        first_k = within("rank", measure.cutoff)
        if measure.convention == "ir_measures":
            judged = (first_k & pl.col("relevance").is_not_null()).sum().cast(pl.Float64)
            value = judged / pl.min_horizontal(pl.col("n_retrieved").first(), pl.lit(k, pl.Int64)).cast(pl.Float64)
        else:
            unjudged = (first_k & (pl.col("relevance").is_null() | (pl.col("relevance") < 0))).sum()
            value = 1.0 - unjudged.cast(pl.Float64) / float(k)
        frames.append(binary_per_query(rows, judgments, queries, measure, spec, 1, value, per_relevant=False))
    return pl.concat(frames, how="vertical")
