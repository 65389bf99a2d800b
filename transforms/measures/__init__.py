"""The measures, one module each, and the registry the engine dispatches through.

Belongs here: `COMPUTATIONS`, from a measure's canonical name (as declared in `schemas/measures.py`) to the
function of its module that computes its per-query rows, and `per_query_measures`, which ranks and judges a run's
candidates once and hands that one table to every requested measure. Adding a measure touches its declaration in
`schemas/measures.py`, its module here, its line in `COMPUTATIONS` and its tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from judged.schemas.fields import QUERY
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import PER_QUERY
from judged.transforms.judging import query_universe, ranked_and_judged
from judged.transforms.measures import ap, judged, ndcg, precision, rbp, recall, rprec, rr
from judged.transforms.ranking import candidate_rows

PerQuery = Callable[[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame, list[Any], EvaluationSpec], pl.LazyFrame]
"""(ranked-and-judged rows, judgments, query universe, this measure's declarations, spec) -> PER_QUERY rows."""

COMPUTATIONS: dict[str, PerQuery] = {
    "nDCG": ndcg.per_query,
    "AP": ap.per_query,
    "RR": rr.per_query,
    "P": precision.per_query,
    "R": recall.per_query,
    "R-Prec": rprec.per_query,
    "Judged": judged.per_query,
    "RBP": rbp.per_query,
}


def per_query_measures(
    candidates: pl.LazyFrame,
    judgments: pl.LazyFrame,
    spec: EvaluationSpec,
    grades: Sequence[int] | None = None,
    intervals: bool = True,
) -> pl.LazyFrame:
    """Every measure of the spec per query (PER_QUERY contract), from the run's `candidate_rows` and judgments
    free of duplicate pairs. Rows are sorted by query, then measure in the declared order, then cutoff. With
    `intervals` false the intervals are not computed and `value_min`, `value_max` and `interval_kind` are
    null on every row (for an output that has no place for them, such as trec_eval's lines).

    Queries of the run without judgments are reported (`no_judgments`) but never scored; judged queries missing
    from the run take each measure's declared value under `query_set='judged'` and are null under `both`
    (`judged_strict` is checked before)."""
    rows = ranked_and_judged(candidates, judgments, spec)
    queries = query_universe(candidates, judgments)
    by_name: dict[str, list[Any]] = {}
    for measure in spec.measure_list():
        by_name.setdefault(measure.name, []).append(measure)
    frames = [COMPUTATIONS[name](rows, judgments, queries, measures, spec) for name, measures in by_name.items()]
    per_query = pl.concat(frames, how="vertical")
    if intervals:
        # Every measure but Judged gets its interval over the unjudged documents (`grades`: the judgment set's
        # declared scale, or None for the grades present): nDCG's from transforms/intervals.py, the others' from
        # transforms/binary_intervals.py. Imported here: the interval kernels need numpy, which an evaluation
        # without intervals never loads.
        from judged.transforms.binary_intervals import INTERVAL_ROWS, binary_intervals, interval_measures
        from judged.transforms.intervals import ndcg_intervals, with_intervals, with_missing_query_intervals

        ndcg_cutoffs = tuple(m.cutoff for m in by_name.get("nDCG", []))
        frames = []
        if ndcg_cutoffs:
            intervals_spec = spec.model_copy(update={"cutoffs": ndcg_cutoffs})
            frames.append(ndcg_intervals(rows, judgments, intervals_spec, grades).with_columns(measure=pl.lit("nDCG")))
        others = interval_measures(spec)
        frames.append(binary_intervals(rows, judgments, spec, others, grades))
        interval_rows = pl.concat(
            [frame.select(list(INTERVAL_ROWS)).cast(INTERVAL_ROWS) for frame in frames], how="vertical"
        )
        per_query = with_intervals(per_query, interval_rows, ["nDCG", *(m.family for m in others)])
        per_query = with_missing_query_intervals(
            per_query, judgments, spec, [*by_name.get("nDCG", []), *others])
    else:
        per_query = per_query.with_columns(
            value_min=pl.lit(None, pl.Float64), value_max=pl.lit(None, pl.Float64),
            interval_kind=pl.lit(None, PER_QUERY["interval_kind"]),
        )
    per_query = per_query.select(list(PER_QUERY)).cast(PER_QUERY)
    families = list(dict.fromkeys(m.family for m in spec.measure_list()))
    if len(families) == 1:
        return per_query.sort([QUERY, "cutoff"], nulls_last=True)
    order = pl.col("measure").replace_strict(families, list(range(len(families))), return_dtype=pl.Int32)
    return per_query.sort([pl.col(QUERY), order, pl.col("cutoff")], nulls_last=True)


def per_query_values(run: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """`per_query_measures` of a run (RUN contract) and its judgments, both free of duplicate pairs."""
    return per_query_measures(candidate_rows(run, spec), judgments, spec)
