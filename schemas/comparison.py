"""The comparison settings model and the contracts of the comparison tables.

Belongs here: every declared choice of a paired comparison of runs (baseline, query set, resamples, seed, correction,
tie tolerance), the content-derived comparison id, and the column contracts of the per-pair statistics and of the
per-query differences. No computation of statistics, no I/O.
"""

from __future__ import annotations

from typing import Annotated, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from judged.schemas.provenance import METHOD_VERSION, canonical_json, derive_id

ComparisonQuerySet = Literal["common", "judged"]
"""`common`: the queries with a defined value in every run. `judged`: every judged query, a query missing from a run
scoring 0 there (trec_eval -c); a query whose value is undefined (no relevant judgment under `no_relevant=null`) is
left out in both."""

Correction = Literal["holm", "bh"]

ROBUSTNESS: tuple[str, ...] = ("robust_win", "robust_loss", "robust_tie", "unresolved")
"""Whether the sign of a per-query difference survives the missing judgments: the run's lowest possible value above
the baseline's highest (`robust_win`), its highest below the baseline's lowest (`robust_loss`), both values fixed
and equal whatever the missing judgments are (`robust_tie`, every bound within the tie tolerance), or overlapping
intervals (`unresolved`). Null when the evaluations carry no intervals."""


class ComparisonSettings(BaseModel):
    """How runs are compared, every choice declared. Part of the comparison's identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query_set: ComparisonQuerySet = "common"
    permutations: Annotated[StrictInt, Field(ge=100)] = 10_000  # randomization test and randomised Tukey HSD
    bootstrap_resamples: Annotated[StrictInt, Field(ge=100)] = 10_000
    confidence_level: Annotated[float, Field(gt=0, lt=1)] = 0.95
    seed: StrictInt = 0
    correction: Correction = "holm"
    # |difference| <= tie_tolerance counts as a tie: equal rankings scored in a different order of additions can
    # differ in the last bits.
    tie_tolerance: Annotated[float, Field(ge=0)] = 1e-9

    def canonical_json(self) -> str:
        return canonical_json(self.model_dump(mode="json"))


def comparison_id(evaluation_ids: list[str], baseline_evaluation_id: str, settings: ComparisonSettings,
                  version: str, method_version: str = METHOD_VERSION) -> str:
    """Same evaluations in the same order, same baseline, same settings, same implementation and method version
    (the statistics are values of the method too): same id."""
    return derive_id(
        "comparison",
        {"evaluations": evaluation_ids, "baseline": baseline_evaluation_id,
         "settings": settings.model_dump(mode="json"), "implementation": version, "method": method_version},
    )


_PAIR_KEYS: dict[str, pl.DataType] = {
    "comparison_id": pl.String(),
    "baseline": pl.String(),  # the baseline run's name
    "run": pl.String(),
    "baseline_evaluation_id": pl.String(),
    "run_evaluation_id": pl.String(),
    "measure": pl.String(),
    "cutoff": pl.Int32(),  # null = the whole list
}

COMPARISONS: dict[str, pl.DataType] = {
    **_PAIR_KEYS,
    "judgment_set_id": pl.String(),
    "spec_hash": pl.String(),
    "query_set": pl.String(),
    "n_queries": pl.Int64(),  # queries in the paired sample
    "baseline_mean": pl.Float64(),
    "run_mean": pl.Float64(),
    "mean_difference": pl.Float64(),  # run - baseline
    "ci_low": pl.Float64(),  # paired percentile bootstrap of the mean difference
    "ci_high": pl.Float64(),
    "t_statistic": pl.Float64(),
    "p_t": pl.Float64(),  # paired Student t, two-sided; null when every difference is equal
    "p_randomization": pl.Float64(),  # paired sign-flip randomization test, two-sided
    "randomization": pl.String(),  # exact (all 2^n sign vectors) or sampled ((b+1)/(B+1))
    "p_adjusted": pl.Float64(),  # p_randomization corrected over the whole family
    "correction": pl.String(),  # holm or bh
    "p_tukey_hsd": pl.Float64(),  # randomised Tukey HSD blocked by query (more than two runs), else null
    "effect_size": pl.Float64(),  # paired Cohen's d_z: mean difference / sd of the differences
    "effect_size_kind": pl.String(),
    "wins": pl.Int64(),
    "ties": pl.Int64(),
    "losses": pl.Int64(),
    "unresolved": pl.Int64(),  # queries whose sign is unresolved by missing judgments; null without intervals
    "seed": pl.Int64(),
    "permutations": pl.Int64(),
    "bootstrap_resamples": pl.Int64(),
    "confidence_level": pl.Float64(),
    "tie_tolerance": pl.Float64(),
}

COMPARISON_PER_QUERY: dict[str, pl.DataType] = {
    **_PAIR_KEYS,
    "query_id": pl.String(),
    "baseline_value": pl.Float64(),
    "run_value": pl.Float64(),
    "difference": pl.Float64(),  # run - baseline
    "baseline_value_min": pl.Float64(),  # the intervals over the unjudged documents, when the evaluations carry them
    "baseline_value_max": pl.Float64(),
    "run_value_min": pl.Float64(),
    "run_value_max": pl.Float64(),
    "robustness": pl.Enum(list(ROBUSTNESS)),
}

COMPARISON_RECORDS: dict[str, pl.DataType] = {
    "comparison_id": pl.String(),
    "evaluation_ids": pl.List(pl.String()),
    "run_names": pl.List(pl.String()),
    "baseline": pl.String(),
    "judgment_set_id": pl.String(),
    "spec_hash": pl.String(),
    "label": pl.String(),
    "settings_json": pl.String(),
    "implementation_version": pl.String(),
    "implementation_commit": pl.String(),
    "created_at": pl.Datetime("us", "UTC"),
    "notes": pl.List(pl.String()),
    "provenance_json": pl.String(),
}


def measure_at(measure: str, cutoff: int | None) -> str:
    """How a measure at a cutoff is named in tables and plots: `nDCG@10`; the whole list is the measure's name. A
    spec label (`nDCG@10[trec_eval:...]`, which names its cutoff already) is shortened to its name and cutoff."""
    if "[" in measure:
        return measure.split("[")[0]
    return measure if cutoff is None else f"{measure}@{cutoff}"
