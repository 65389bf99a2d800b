"""R@k: the share of the relevant judged documents found in the first k positions (trec_eval `recall_k`).

`R@k = |{i <= k : grade_i >= rel}| / R`, R the judged documents of grade >= `rel`, retrieved or not.
Manning, Raghavan & Schütze, "Introduction to Information Retrieval", 2008, section 8.3; trec_eval's `m_recall.c`.
Undefined when R = 0 (`no_relevant` declares 0 or null); a missing query scores 0.

Belongs here: the R@k formula over the ranked-and-judged rows.
"""

from __future__ import annotations

import polars as pl

from judged.schemas.measures import Recall
from judged.schemas.spec import EvaluationSpec
from judged.transforms.judging import binary_per_query, is_relevant, within


def per_query(
    rows: pl.LazyFrame, judgments: pl.LazyFrame, queries: pl.LazyFrame, measures: list[Recall], spec: EvaluationSpec
) -> pl.LazyFrame:
    frames = []
    for measure in measures:
        hits = (is_relevant(measure.rel) & within("eval_rank", measure.cutoff)).sum().cast(pl.Float64)
        frames.append(binary_per_query(rows, judgments, queries, measure, spec, measure.rel, hits, per_relevant=True))
    return pl.concat(frames, how="vertical")
