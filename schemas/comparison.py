"""The comparison settings model.

Belongs here: every declared choice of a paired comparison of runs (baseline, query set, resamples, seed, correction,
tie tolerance), the content-derived comparison id, and how a measure at a cutoff is named. The comparison tables'
contracts are declared with every other table in schemas/tables.py. No computation of statistics, no I/O.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from judged.schemas.provenance import METHOD_VERSION, canonical_json, derive_id
from judged.schemas.spec import NumericRange, SpecError

ComparisonQuerySet = Literal["common", "judged"]
"""`common`: the queries with a defined value in every run. `judged`: every judged query, a query missing from a run
scoring 0 there (trec_eval -c); a query whose value is undefined (no relevant judgment under `no_relevant=null`) is
left out in both."""

Correction = Literal["holm", "bh"]

MOST_DRAWS = 1_000_000
# The seed is stored as a 64-bit integer (and numpy's generators take any non-negative one).
LARGEST_SEED = 2**63 - 1


class ComparisonSettings(BaseModel):
    """How runs are compared, every choice declared. Part of the comparison's identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query_set: ComparisonQuerySet = "common"
    # Each range is declared here once: the command line's help and its checks read it (NumericRange.of). The
    # draws are bounded so that a comparison's time is: a million draws already give p-values to +-0.001.
    permutations: Annotated[StrictInt, Field(ge=100, le=MOST_DRAWS)] = 10_000  # randomization test, Tukey HSD
    bootstrap_resamples: Annotated[StrictInt, Field(ge=100, le=MOST_DRAWS)] = 10_000
    confidence_level: Annotated[float, Field(gt=0, lt=1)] = 0.95
    seed: Annotated[StrictInt, Field(ge=0, le=LARGEST_SEED)] = 0
    correction: Correction = "holm"
    # |difference| <= tie_tolerance counts as a tie: equal rankings scored in a different order of additions can
    # differ in the last bits. Measures lie in [0, 1], so a tolerance of 1 already makes every query a tie.
    tie_tolerance: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] = 1e-9

    def __init__(self, **values: Any) -> None:
        """A bad value is a SpecError (one line naming the field, and a numeric field's range), as for the command
        line's options. A stored comparison's settings are read back with `model_validate_json`, unchanged."""
        for name in RANGED_SETTINGS:
            if name in values:
                NumericRange.of(type(self), name).check(values[name], name)
        try:
            super().__init__(**values)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "settings"
            raise SpecError(f"{where}: {problem['msg']}") from None

    def canonical_json(self) -> str:
        return canonical_json(self.model_dump(mode="json"))


# The settings with a declared numeric range (NumericRange.of reads it).
RANGED_SETTINGS = ("permutations", "bootstrap_resamples", "seed", "tie_tolerance")


def comparison_id(evaluation_ids: list[str], baseline_evaluation_id: str, settings: ComparisonSettings,
                  version: str, method_version: str = METHOD_VERSION) -> str:
    """Same evaluations in the same order, same baseline, same settings, same implementation and method version
    (the statistics are values of the method too): same id."""
    return derive_id(
        "comparison",
        {"evaluations": evaluation_ids, "baseline": baseline_evaluation_id,
         "settings": settings.model_dump(mode="json"), "implementation": version, "method": method_version},
    )


def measure_at(measure: str, cutoff: int | None) -> str:
    """How a measure at a cutoff is named in tables and plots: `nDCG@10`; the whole list is the measure's name. A
    spec label (`nDCG@10[trec_eval:...]`, which names its cutoff already) is shortened to its name and cutoff."""
    if "[" in measure:
        return measure.split("[")[0]
    return measure if cutoff is None else f"{measure}@{cutoff}"
