"""Tie sensitivity: whether the tie rule decides a result, and how far the mean moves under the other tie rules.

Belongs here: finding the cutoffs where tie groups straddle k in more than a declared share of the scored queries,
and the warning that names that share and the means under every tie rule (each computed by the caller's own
evaluation path, so that a stored run is re-read as it was read the first time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import get_args

import polars as pl

from judged.flows.engine.evaluate import EvaluationResult
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


def _mean_at(result: EvaluationResult, measure: str, cutoff: int) -> float | None:
    values = result.summary.filter(pl.col("measure") == measure, pl.col("cutoff") == cutoff)["value"]
    return values[0] if len(values) else None


def tie_warning(
    result: EvaluationResult, evaluate_under: Callable[[EvaluationSpec], EvaluationResult],
    share: float = TIE_WARNING_SHARE,
) -> str | None:
    """The warning for a result whose ties straddle a cutoff in more than `share` of its scored queries, or None.
    `evaluate_under(spec)` evaluates the same run and judgments under another spec; it is called once per other
    tie rule, and only when a warning is due."""
    straddled = straddled_cutoffs(result.per_query, share)
    if straddled.height == 0:
        return None
    results = {result.spec.ties: result}
    for rule in TIE_RULES:
        if rule != result.spec.ties:
            try:
                results[rule] = evaluate_under(result.spec.with_options(ties=rule))
            except SpecError:
                continue  # a rule the spec's measures do not allow (average is defined for nDCG only)
    parts = []
    for measure, cutoff, n_scored, n_straddling in straddled.iter_rows():
        means = {rule: _mean_at(other, measure, cutoff) for rule, other in results.items()}
        known = [value for value in means.values() if value is not None]
        spread = (f"mean {min(known):.4f} to {max(known):.4f}" if known else "mean undefined")
        each = ", ".join(f"{rule} {'undefined' if value is None else format(value, '.4f')}"
                         for rule, value in means.items())
        parts.append(f"{measure}@{cutoff} in {n_straddling} of {n_scored} scored queries ({n_straddling / n_scored:.0%}), "
                     f"{spread} ({each})")
    return (f"ties straddle the cutoff in more than {share:.0%} of the scored queries, so the tie rule moves the "
            f"result: {'; '.join(parts)}")


def with_tie_warning(
    result: EvaluationResult, evaluate_under: Callable[[EvaluationSpec], EvaluationResult],
    share: float = TIE_WARNING_SHARE,
) -> EvaluationResult:
    """The result, with the tie warning added to its warnings when one is due (see `tie_warning`)."""
    warning = tie_warning(result, evaluate_under, share)
    return result if warning is None else replace(result, warnings=(*result.warnings, warning))
