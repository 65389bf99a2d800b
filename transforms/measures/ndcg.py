"""nDCG@k under a declared spec (docs/method.md): gains, DCG and ideal DCG at every requested cutoff in one pass.

For one query, with the evaluated list in the declared order and cut at k,
`DCG@k = sum_{i=1..min(k,n)} gain(grade_i) / log2(i + 1)` and `nDCG@k = DCG@k / IDCG@k`, where IDCG@k is the DCG@k
of the best order of the ideal universe (every judged document of the query, or only the retrieved ones).
Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4), 2002; trec_eval's
`m_ndcg_cut.c`; under `ties='average'`, McSherry & Najork, "Computing information retrieval performance measures
efficiently in the presence of tied scores", ECIR 2008 (scikit-learn's `ignore_ties=False`).

Belongs here: the gain of a grade, the DCG of the ranked-and-judged rows and the ideal DCG. The gain expression is
the only place an unjudged document is given a value (0 under `unjudged='zero'`; a condensed list has removed it).
"""

from __future__ import annotations

import polars as pl

from judged.schemas.fields import QUERY
from judged.schemas.measures import NDCG
from judged.schemas.spec import EvaluationSpec
from judged.transforms.judging import evidence, evidence_columns, per_query_rows, suffix, within
from judged.transforms.ranking import ordered_mean, ordered_sum


def gain_of(spec: EvaluationSpec, grade: pl.Expr | None = None) -> pl.Expr:
    """The declared gain of a grade; null stays null (the caller decides what an unjudged document is worth).
    Negative grades gain 0 unless an explicit map says otherwise."""
    grade = pl.col("relevance") if grade is None else grade
    if spec.gain == "linear":
        gain = pl.when(grade > 0).then(grade.cast(pl.Float64)).otherwise(pl.lit(0.0))
    elif spec.gain == "exponential":
        gain = pl.when(grade > 0).then(pl.lit(2.0).pow(grade.cast(pl.Float64)) - 1.0).otherwise(pl.lit(0.0))
    else:
        grades, gains = zip(*spec.gain_map)
        mapped = grade.replace_strict(list(grades), list(gains), default=None, return_dtype=pl.Float64)
        gain = pl.when(mapped.is_not_null()).then(mapped).when(grade < 0).then(pl.lit(0.0))
    return pl.when(grade.is_null()).then(pl.lit(None, pl.Float64)).otherwise(gain)


def grades_outside_gain_map(judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Non-negative grades present in the judgments that an explicit gain map does not cover (none otherwise)."""
    mapped = [grade for grade, _ in spec.gain_map] if spec.gain == "map" else None
    grades = judgments.select(pl.col("relevance").drop_nulls().unique()).filter(pl.col("relevance") >= 0)
    if mapped is None:
        return grades.head(0)
    return grades.filter(~pl.col("relevance").is_in(mapped)).sort("relevance")


def gains_beyond_float64(judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """The judgment rows that would make nDCG non-finite: each row whose gain is beyond float64 (under exponential
    gain, any grade of 1024 or more: 2^1024 - 1 is), and each row of a query whose positive gains add up beyond it
    (a DCG or ideal DCG is at most that sum, so below it every nDCG is finite). `gain_overflows` tells the two
    apart. Empty for specs without nDCG, whose measures use no gain, and under linear gain."""
    judged = judgments.filter(pl.col("relevance").is_not_null()).with_columns(_gain=gain_of(spec))
    # A linear gain is the grade, an Int32: no number of them adds up beyond float64.
    if spec.gain == "linear" or not any(isinstance(measure, NDCG) for measure in spec.measure_list()):
        return judged.head(0).select(QUERY, "relevance", "source_line", gain_overflows=pl.lit(True))
    query_sum = pl.when(pl.col("_gain") > 0).then(pl.col("_gain")).sum().over(QUERY)
    gain_overflows = ~pl.col("_gain").is_finite()
    return judged.filter(gain_overflows | ~query_sum.is_finite()).select(
        QUERY, "relevance", "source_line", gain_overflows=gain_overflows
    )


def _discount(position: str) -> pl.Expr:
    return 1.0 / (pl.col(position).cast(pl.Float64) + 1.0).log(2)


def _with_gains(rows: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Add `judged_gain` (null when unjudged) and `credited_gain` (what the position earns: under
    `ties='average'`, the mean gain of its tie group)."""
    rows = rows.with_columns(judged_gain=gain_of(spec))
    credited = pl.when(pl.col("eval_rank").is_not_null()).then(pl.col("judged_gain").fill_null(0.0))
    if spec.ties == "average":
        credited = ordered_mean(credited).over(QUERY, "tie_group")
    return rows.with_columns(credited_gain=credited)


def ideal_dcg(universe: pl.LazyFrame, cutoffs: list[int | None]) -> pl.LazyFrame:
    """IDCG per query at every cutoff: the DCG of the universe's positive gains in descending order.
    `universe` has `query_id` and `ideal_gain`; documents with gain <= 0 never help an ideal ranking."""
    positive = (
        universe.filter(pl.col("ideal_gain") > 0)
        .sort([QUERY, "ideal_gain"], descending=[False, True], maintain_order=True)
        .with_columns(ideal_rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(QUERY))
    )
    contribution = pl.col("ideal_gain") * _discount("ideal_rank")
    return positive.group_by(QUERY).agg(
        ordered_sum(pl.when(within("ideal_rank", k)).then(contribution)).alias(f"idcg__{suffix(k)}") for k in cutoffs
    )


def _ideal_universe(rows: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    if spec.ideal == "retrieved":
        kept = rows.filter(pl.col("eval_rank").is_not_null())
        return kept.select(QUERY, ideal_gain=pl.col("judged_gain").fill_null(0.0))
    return judgments.filter(pl.col("relevance").is_not_null()).select(QUERY, ideal_gain=gain_of(spec))


def per_query(
    rows: pl.LazyFrame, judgments: pl.LazyFrame, queries: pl.LazyFrame, measures: list[NDCG], spec: EvaluationSpec
) -> pl.LazyFrame:
    """nDCG at each measure's cutoff, per query (PER_QUERY contract), with `dcg` and `idcg`. `rows` are the
    ranked-and-judged rows (`transforms.judging.ranked_and_judged`), in rank order within each query so that the
    sums add in rank order, as trec_eval's loop does. A judged document is relevant here when its gain is > 0."""
    cutoffs = [m.cutoff for m in measures]
    rows = _with_gains(rows, spec)
    contribution = pl.col("credited_gain") * _discount("eval_rank")
    relevant, nonrelevant = pl.col("judged_gain") > 0, pl.col("judged_gain") <= 0
    aggregates: list[pl.Expr] = [pl.col("n_retrieved").first()]
    for k in cutoffs:
        s = suffix(k)
        aggregates += [
            ordered_sum(pl.when(within("eval_rank", k)).then(contribution)).alias(f"dcg__{s}"),
            *evidence(k, relevant, nonrelevant, s),
        ]
    run_side = rows.group_by(QUERY).agg(aggregates)
    ideal_side = ideal_dcg(_ideal_universe(rows, judgments, spec), cutoffs)
    count_columns = [c for c in run_side.collect_schema().names() if c != QUERY and not c.startswith("dcg__")]
    wide = (
        queries.join(run_side, on=QUERY, how="left")
        .join(ideal_side, on=QUERY, how="left")
        .with_columns(
            # A query absent from the run retrieved nothing: DCG 0, every count 0.
            pl.col(count_columns).fill_null(0),
            pl.col("^dcg__.*$").fill_null(0.0),
            pl.col("^idcg__.*$").fill_null(0.0),
        )
    )
    judged_only = pl.when(pl.col("judged"))
    return pl.concat(
        [
            per_query_rows(
                wide.select(
                    QUERY,
                    "in_run",
                    "judged",
                    "n_retrieved",
                    *evidence_columns(suffix(m.cutoff)),
                    cutoff=pl.lit(m.cutoff, pl.Int32),
                    has_relevant=pl.col(f"idcg__{suffix(m.cutoff)}") > 0,
                    raw_value=pl.col(f"dcg__{suffix(m.cutoff)}") / pl.col(f"idcg__{suffix(m.cutoff)}"),
                    dcg=judged_only.then(pl.col(f"dcg__{suffix(m.cutoff)}")),
                    idcg=judged_only.then(pl.col(f"idcg__{suffix(m.cutoff)}")),
                ),
                m,
                spec,
            )
            for m in measures
        ],
        how="vertical",
    )
