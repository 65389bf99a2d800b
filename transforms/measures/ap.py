"""AP and AP@k: average precision over the relevant documents (trec_eval `map`, `map_cut_k`).

`AP@k = (1 / R) * sum over relevant documents at positions i <= k of P@i`, with R the judged documents of grade
>= `rel` (retrieved or not), P@i the relevant share of the first i. The cut version still divides by R.
Buckley & Voorhees, "Evaluating evaluation measure stability", SIGIR 2000; trec_eval's `m_map.c`, `m_map_cut.c`.
Undefined when R = 0 (`no_relevant` declares 0 or null); a missing query scores 0.

Belongs here: the AP formula over the ranked-and-judged rows.
"""

from __future__ import annotations

import polars as pl

from judged.schemas.measures import AP
from judged.schemas.spec import EvaluationSpec
from judged.transforms.judging import binary_per_query, is_relevant, within
from judged.transforms.ranking import ordered_sum


def per_query(
    rows: pl.LazyFrame, judgments: pl.LazyFrame, queries: pl.LazyFrame, measures: list[AP], spec: EvaluationSpec
) -> pl.LazyFrame:
    frames = []
    for measure in measures:
        relevant = is_relevant(measure.rel)
        precision_here = relevant.cast(pl.Int64).cum_sum() / pl.col("eval_rank")
        value = ordered_sum(pl.when(relevant & within("eval_rank", measure.cutoff)).then(precision_here))
        frames.append(binary_per_query(rows, judgments, queries, measure, spec, measure.rel, value, per_relevant=True))
    return pl.concat(frames, how="vertical")
