"""Tie sensitivity: whether the tie rule decides a result, and how far the mean moves under the other tie rules.

Belongs here: finding the cutoffs where tie groups straddle k in more than a declared share of the scored queries,
the measures of the whole list (no k) whose value another tie rule moves in more than that share, and the warning
that names that share and the means under every tie rule (each computed by the caller's own evaluation path, so
that a stored run is re-read as it was read the first time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import get_args

import polars as pl

from judged.flows.engine.evaluate import EvaluationResult
from judged.schemas.measures import NDCG
from judged.schemas.spec import EvaluationSpec, SpecError, Ties

# Above this share of scored queries with a tie group across k, the tie rule is part of the answer, and is said so.
TIE_WARNING_SHARE = 0.10
TIE_RULES: tuple[str, ...] = get_args(Ties)


def straddled_cutoffs(per_query: pl.DataFrame, share: float) -> pl.DataFrame:
    """(measure, cutoff) pairs where more than `share` of the scored queries have a tie group straddling k:
    `measure`, `cutoff`, `n_scored`, `n_straddling`, in the order of the per-query table."""
    return (
        per_query.filter(pl.col("status") == "scored", pl.col("cutoff").is_not_null())
        .group_by("measure", "cutoff", maintain_order=True)
        .agg(n_scored=pl.len(), n_straddling=(pl.col("ties_straddling_k") > 0).sum().cast(pl.Int64))
        .filter(pl.col("n_straddling") > share * pl.col("n_scored"))
    )


def _summary_value(result: EvaluationResult, measure: str, cutoff: int | None) -> tuple[bool, float | None]:
    """Whether the result has the measure at the cutoff, and its aggregate there."""
    values = result.summary.filter(pl.col("measure") == measure, pl.col("cutoff").eq_missing(cutoff))["value"]
    return (True, values[0]) if len(values) else (False, None)


def _other_rule_spec(spec: EvaluationSpec, rule: str) -> EvaluationSpec | None:
    """The spec under another tie rule, keeping the measures that rule defines (average: nDCG only); None when
    it defines none of them."""
    try:
        return spec.with_options(ties=rule)
    except SpecError:
        kept = tuple(m for m in spec.measure_list() if isinstance(m, NDCG))
        if not kept or not spec.measures:
            return None
        try:
            return spec.with_options(ties=rule, measures=kept)
        except SpecError:
            return None


def moved_whole_lists(result: EvaluationResult, others: dict[str, EvaluationResult], share: float) -> pl.DataFrame:
    """(measure, cutoff null) pairs whose per-query value differs under another tie rule in more than `share` of
    the scored queries: `measure`, `cutoff`, `n_scored`, `n_moved`. A measure of the whole list has no k for a tie
    group to straddle, yet the order inside any tie group can move it (AP, RR, R-Prec, RBP, nDCG without k)."""
    mine = result.per_query.filter(pl.col("status") == "scored", pl.col("cutoff").is_null()).select(
        "query_id", "measure", "value"
    )
    if mine.height == 0 or not others:
        return pl.DataFrame(schema={"measure": pl.String, "cutoff": pl.Int64, "n_scored": pl.Int64,
                                    "n_moved": pl.Int64})
    moved = pl.lit(False)
    for index, other in enumerate(others.values()):
        values = other.per_query.filter(pl.col("cutoff").is_null()).select(
            "query_id", "measure", pl.col("value").alias(f"other_{index}")
        )
        mine = mine.join(values, on=["query_id", "measure"], how="left")
        column = pl.col(f"other_{index}")
        # beyond float noise: the same relevance pattern gives the same bits, another one differs far more
        moved = moved | (column.is_not_null() & ((column - pl.col("value")).abs() > 1e-12))
    return (
        mine.group_by("measure", maintain_order=True)
        .agg(n_scored=pl.len().cast(pl.Int64), n_moved=moved.sum().cast(pl.Int64))
        .filter(pl.col("n_moved") > share * pl.col("n_scored"))
        .select("measure", pl.lit(None, pl.Int64).alias("cutoff"), "n_scored", "n_moved")
    )


def tie_warning(
    result: EvaluationResult, evaluate_under: Callable[[EvaluationSpec], EvaluationResult],
    share: float = TIE_WARNING_SHARE,
) -> str | None:
    """The warning for a result whose tie rule moves more than `share` of its scored queries, or None: at a
    cutoff, where a tie group straddles k; for a measure of the whole list (no k), where its value differs under
    another rule. `evaluate_under(spec)` evaluates the same run and judgments under another spec; it is called once
    per other tie rule, and only when a cutoff is straddled or a measure of the whole list is declared."""
    straddled = straddled_cutoffs(result.per_query, share)
    whole_lists = any(m.cutoff is None for m in result.spec.measure_list())
    if straddled.height == 0 and not whole_lists:
        return None
    others = {}
    for rule in TIE_RULES:
        if rule != result.spec.ties and (spec := _other_rule_spec(result.spec, rule)) is not None:
            others[rule] = evaluate_under(spec)
    results = {result.spec.ties: result, **others}
    parts = []
    for measure, cutoff, n_scored, n_affected in straddled.iter_rows():
        parts.append(f"{measure}@{cutoff} in {n_affected} of {n_scored} scored queries ({n_affected / n_scored:.0%}), "
                     f"{_spread(results, measure, cutoff)}")
    for measure, _, n_scored, n_affected in moved_whole_lists(result, others, share).iter_rows():
        parts.append(f"{measure} (whole list, no k to straddle) moves in {n_affected} of {n_scored} scored queries "
                     f"({n_affected / n_scored:.0%}), {_spread(results, measure, None)}")
    if not parts:
        return None
    where = "straddle the cutoff" if len(parts) == straddled.height else "straddle the cutoff or reorder the list"
    return (f"ties {where} in more than {share:.0%} of the scored queries, so the tie rule moves the "
            f"result: {'; '.join(parts)}")


def _spread(results: dict[str, EvaluationResult], measure: str, cutoff: int | None) -> str:
    """`mean 0.0365 to 0.0414 (docid_desc 0.0414, ...)`: the aggregate under each rule that defines the measure."""
    means = {}
    for rule, other in results.items():
        present, value = _summary_value(other, measure, cutoff)
        if present:
            means[rule] = value
    known = [value for value in means.values() if value is not None]
    spread = f"mean {min(known):.4f} to {max(known):.4f}" if known else "mean undefined"
    each = ", ".join(f"{rule} {'undefined' if value is None else format(value, '.4f')}"
                     for rule, value in means.items())
    return f"{spread} ({each})"


def with_tie_warning(
    result: EvaluationResult, evaluate_under: Callable[[EvaluationSpec], EvaluationResult],
    share: float = TIE_WARNING_SHARE,
) -> EvaluationResult:
    """The result, with the tie warning added to its warnings when one is due (see `tie_warning`)."""
    warning = tie_warning(result, evaluate_under, share)
    return result if warning is None else replace(result, warnings=(*result.warnings, warning))
