"""The comparison settings model.

Belongs here: every declared choice of a paired comparison of runs (the pairs compared, query set, resamples, seed,
correction, tie tolerance), the content-derived comparison id, and how a measure at a cutoff is named. The comparison tables'
contracts are declared with every other table in schemas/tables.py. No computation of statistics, no I/O.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator

from judged.schemas.provenance import METHOD_VERSION, canonical_json, derive_id
from judged.schemas.spec import NumericRange, SpecError

ComparisonQuerySet = Literal["common", "judged"]
"""`common`: the queries with a defined value in every run. `judged`: every judged query, a query missing from a run
scoring 0 there (trec_eval -c); a query whose value is undefined (no relevant judgment under `no_relevant=null`) is
left out in both."""

Correction = Literal["holm", "bh"]

PairChoice = Literal["all", "baseline"]
Pair = tuple[str, str]
PairSelection = PairChoice | tuple[Pair, ...]
"""Which pairs of runs a comparison computes: `all` (every two runs: the baseline, then the others in the order
given, each pair's first run its reference), `baseline` (the baseline against each other run), or the pairs listed,
each `(reference, run)`: the difference is run - reference."""

ALL_PAIRS_UP_TO = 12
"""Without a declared selection every pair is compared up to this many runs (66 pairs), beyond it the baseline
against each other run: at 59 runs all pairs are 1,711, each with its own intervals and draws."""

MOST_DRAWS = 1_000_000
# The seed is stored as a 64-bit integer (and numpy's generators take any non-negative one).
LARGEST_SEED = 2**63 - 1


class ComparisonSettings(BaseModel):
    """How runs are compared, every choice declared. Part of the comparison's identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query_set: ComparisonQuerySet = "common"
    # None: by the number of runs (`default_pairs`); a comparison's own settings hold what it took.
    pairs: PairSelection | None = None
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
            own = problem.get("ctx", {}).get("error")
            if isinstance(own, SpecError):  # a validator's own one-line message (e.g. --pairs)
                raise SpecError(str(own)) from None
            where = ".".join(str(part) for part in problem["loc"]) or "settings"
            raise SpecError(f"{where}: {problem['msg']}") from None

    @field_validator("pairs", mode="before")
    @classmethod
    def _pairs_from_text(cls, value: object) -> object:
        """`all`, `baseline`, or `A:B,C:D` as the command line gives it; a list of (reference, run) as is."""
        return parse_pairs(value) if isinstance(value, str) else value

    @field_validator("pairs")
    @classmethod
    def _distinct_pairs(cls, value: PairSelection | None) -> PairSelection | None:
        if isinstance(value, tuple):
            check_pairs(value)
        return value

    def canonical_json(self) -> str:
        return canonical_json(self.model_dump(mode="json"))

    def with_pairs(self, names: list[str], baseline: str) -> tuple[ComparisonSettings, list[Pair], str]:
        """The settings with their pair selection taken (`default_pairs` when none is declared), the pairs in order,
        and a note of which pairs they are and why (empty for two runs and no declared selection: they are one
        pair). A listed pair naming no run of `names` is a SpecError."""
        declared = self.pairs
        selection = default_pairs(len(names)) if declared is None else declared
        others = [name for name in names if name != baseline]
        if selection == "all":
            ordered = [baseline, *others]
            pairs = [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:]]
            why = ((f"all {len(pairs):,} pairs" if len(pairs) > 1 else "the one pair") + f" of the {len(names)} runs"
                   + (f" (the default up to {ALL_PAIRS_UP_TO} runs; --pairs baseline compares the baseline with "
                      "each other run only)" if declared is None else ""))
        elif selection == "baseline":
            pairs = [(baseline, name) for name in others]
            every = len(names) * (len(names) - 1) // 2
            why = (f"the baseline against each other run, {len(pairs):,} of the {every:,} pairs"
                   + (f" (the default beyond {ALL_PAIRS_UP_TO} runs; --pairs all compares every pair)"
                      if declared is None else ""))
        else:
            unknown = sorted({name for pair in selection for name in pair} - set(names))
            if unknown:
                raise SpecError(f"--pairs: {', '.join(unknown)} is none of the runs compared: {', '.join(names)}")
            pairs = list(selection)
            why = "the pair listed" if len(pairs) == 1 else f"the {len(pairs):,} pairs listed"
        note = "" if declared is None and len(names) == 2 else f"pairs: {why}"
        return self.model_copy(update={"pairs": selection}), pairs, note


# The settings with a declared numeric range (NumericRange.of reads it).
RANGED_SETTINGS = ("permutations", "bootstrap_resamples", "seed", "tie_tolerance")


def default_pairs(runs: int) -> PairChoice:
    """Every pair up to `ALL_PAIRS_UP_TO` runs, else the baseline against each other run."""
    return "all" if runs <= ALL_PAIRS_UP_TO else "baseline"


def parse_pairs(text: str) -> PairSelection:
    """`all`, `baseline`, or `A:B,C:D` -> ((A, B), (C, D)): each pair's reference, then its run. A run name may hold
    a colon only when the pair is split at its last one. A SpecError names an item that is no pair."""
    if text.strip() in ("all", "baseline"):
        return text.strip()  # type: ignore[return-value]
    pairs = []
    for item in text.split(","):
        reference, colon, run = item.strip().rpartition(":")
        if not colon or not reference or not run:
            raise SpecError(f"--pairs: {item.strip()!r}: expected all, baseline or REFERENCE:RUN,... (two runs "
                            "each, e.g. p_bm25:pash_r3)")
        pairs.append((reference, run))
    return tuple(pairs)


def check_pairs(pairs: tuple[Pair, ...]) -> None:
    """Refuse a pair of one run with itself, and a pair given twice (in either order): each pair is one member of
    the corrected family."""
    if not pairs:
        raise SpecError("--pairs: no pair listed")
    seen: dict[frozenset[str], Pair] = {}
    for reference, run in pairs:
        if reference == run:
            raise SpecError(f"--pairs: {reference}:{run}: a run is compared with other runs, not with itself")
        key = frozenset((reference, run))
        if key in seen:
            first = seen[key]
            raise SpecError(f"--pairs: {first[0]}:{first[1]} and {reference}:{run} are one pair, given twice")
        seen[key] = (reference, run)


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
