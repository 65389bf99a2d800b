"""The evaluation spec: the measures and every declared option of the ranking, the judgments and NDCG
(docs/method.md, "The options") as one frozen, typed model.

Belongs here: the `EvaluationSpec` model, its presets, its canonical JSON form, hash and label, and the parsing of
option values given as text (CLI; measure names are parsed by `schemas/measures.py`). Nothing here computes a score: `transforms/` reads a spec and obeys it.
"""

from __future__ import annotations

import hashlib
import json
import math
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator, model_validator

from judged.schemas.measures import (
    NDCG, Measure, MeasureBase, MeasureError, is_trec_eval_name, parse_measures, split_measure_names, trec_eval_meaning,
)

SPEC_VERSION = 1

# Ranks, cutoffs and depths are 32-bit: no run holds more documents per query.
LARGEST_COUNT = 2**31 - 1

Cutoff = Annotated[StrictInt, Field(gt=0, le=LARGEST_COUNT)] | None
"""A rank cutoff k; None means the whole returned list (trec_eval's `ndcg`)."""

GainKind = Literal["linear", "exponential", "map"]
Discount = Literal["log2"]
Ranking = Literal["score", "rank"]
ScorePrecision = Literal["float64", "float32"]
Ties = Literal["docid_desc", "docid_asc", "average"]
Unjudged = Literal["zero", "condensed"]
Ideal = Literal["judged", "retrieved"]
NoRelevant = Literal["null", "zero"]
QuerySet = Literal["judged", "both", "judged_strict"]
DuplicatePolicy = Literal["error", "first", "last"]
NegativeGrades = Literal["zero", "error"]
Aggregation = Literal["mean", "weighted_mean"]

TREC_EVAL_CUTOFFS: tuple[int, ...] = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
ASSESSOR_MODELS = ("median", "min", "max", "set", "range")
"""The assessor models besides `single:NAME` (transforms/assessors.py): three points and two sets."""
DEFAULT_INTERVAL_WIDTH = 0.1


class SpecError(ValueError):
    """An option value that cannot be part of a valid spec (bad text, unknown preset, contradictory options)."""


@dataclass(frozen=True)
class NumericRange:
    """The values a numeric option accepts. A model's field declares its range once (pydantic's ge/gt and le) and
    `of` reads it from there, for the command line's help, the parsing of its text, and the error naming the range;
    an option without a model declares its NumericRange directly. Every range has both ends: a value that sizes
    work (draws, rows, a wait) is bounded so that the work is."""

    low: float
    high: float
    integer: bool
    low_excluded: bool = False  # gt instead of ge: the low end itself is refused

    @classmethod
    def of(cls, model: type[BaseModel], field: str) -> NumericRange:
        info = model.model_fields[field]
        low = high = None
        low_excluded = False
        for item in info.metadata:
            if getattr(item, "ge", None) is not None:
                low = item.ge
            elif getattr(item, "gt", None) is not None:
                low, low_excluded = item.gt, True
            elif getattr(item, "le", None) is not None:
                high = item.le
        if low is None or high is None:
            raise TypeError(f"{model.__name__}.{field} declares no range (ge or gt, and le)")
        return cls(low, high, _holds_int(info.annotation), low_excluded)

    def describe(self) -> str:
        """e.g. `an integer from 100 to 1,000,000`, `a number above 0 and at most 1`."""
        what = "an integer" if self.integer else "a number"
        if self.low_excluded and self.integer:
            return f"{what} from {_amount(self.low + 1)} to {_amount(self.high)}"
        if self.low_excluded:
            return f"{what} above {_amount(self.low)} and at most {_amount(self.high)}"
        return f"{what} from {_amount(self.low)} to {_amount(self.high)}"

    def check(self, value: Any, name: str) -> Any:
        """`value` if it is in range (a float for a number), else a SpecError naming `name` and the range."""
        numeric = (isinstance(value, int) if self.integer else isinstance(value, int | float)) \
            and not isinstance(value, bool)
        inside = numeric and (self.integer or math.isfinite(value)) and (
            (self.low < value) if self.low_excluded else (self.low <= value)) and value <= self.high
        if not inside:
            raise SpecError(f"{name} must be {self.describe()}, not {value!r}")
        return value if self.integer else float(value)

    def parse(self, text: str, name: str) -> Any:
        """The value of an option given as text, checked (SpecError naming `name` and the range)."""
        try:
            value = int(text) if self.integer else float(text)
        except ValueError:
            raise SpecError(f"{name} {text!r} is not {'an integer' if self.integer else 'a number'}") from None
        try:
            return self.check(value, name)
        except SpecError:  # the value as given, not as parsed
            raise SpecError(f"{name} must be {self.describe()}, not {text!r}") from None


WORKLIST_BUDGET = NumericRange(1, 1_000_000, integer=True)
"""How many pairs a judging worklist may list (`judged worklist --budget`, `judged.worklist(budget=...)`): a worklist
is an assessor's file, a million pairs far beyond a round of judging, and the bound bounds its ranking."""


def _holds_int(annotation: Any) -> bool:
    if annotation is int:
        return True
    return any(_holds_int(argument) for argument in typing.get_args(annotation) if argument is not type(None))


def _amount(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


class EvaluationSpec(BaseModel):
    """What is computed and how, every choice declared. Two results are comparable only if their specs are equal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The descriptions are the command line's help for the options that set these fields (flows/cli/common.py).
    # One value only: `measure` stays a field because it is part of the canonical JSON, hence of every stored spec
    # hash and evaluation id.
    measure: Literal["ndcg"] = Field(
        "ndcg", description="ndcg: the measure of the cutoffs when no measures are declared."
    )
    cutoffs: tuple[Cutoff, ...] = Field(
        TREC_EVAL_CUTOFFS, description="The rank cutoffs k of nDCG@k; 'all' (None) is the whole returned list."
    )
    # The declared measures (schemas/measures.py). Empty: nDCG at each of `cutoffs`, the form every spec had before
    # measures could be listed, kept so that its canonical JSON, hash and evaluation ids stay what they were.
    # Given: `cutoffs` becomes the measures' cutoffs, so the two never disagree.
    measures: tuple[Measure, ...] = Field((), description=(
        "Measures instead of nDCG at the cutoffs, e.g. nDCG@10,AP,RR@10,P@5,R@100,R-Prec,Judged@10,RBP(p=0.8); "
        "binary relevance at grade >= rel, e.g. P(rel=2)@5. trec_eval's names (ndcg_cut_10, map, P_5, recip_rank, "
        "...) mean trec_eval's number (its -l 1): taken under --preset trec_eval or trec_eval9, refused otherwise."))
    gain: GainKind = Field("linear", description="linear (grade), exponential (2^grade-1) or map (the gain map).")
    gain_map: tuple[tuple[int, float], ...] = Field(
        (), description="Explicit gains, e.g. 0=0,1=0,2=2,3=3 (gain map); every grade present must be mapped."
    )
    negative_grades: NegativeGrades = Field("zero", description="Negative grades: zero (gain 0) or error.")
    discount: Discount = Field("log2", description="log2: rank r is discounted by 1/log2(r+1).")
    ranking: Ranking = Field(
        "score", description="score (rank column kept for audit) or rank (trust the file's ranks)."
    )
    score_precision: ScorePrecision = Field(
        "float64", description="Score precision: float64 or float32 (trec_eval 9, pytrec_eval)."
    )
    ties: Ties = Field(
        "docid_desc", description="Score ties: docid_desc (trec_eval), docid_asc, or average (scikit-learn)."
    )
    unjudged: Unjudged = Field("zero", description=(
        "Unjudged documents: zero (gain 0, counted) or condensed (removed before ranking, trec_eval -J)."))
    ideal: Ideal = Field(
        "judged", description="Ideal universe: judged (all judged documents) or retrieved (scikit-learn)."
    )
    no_relevant: NoRelevant = Field("null", description="IDCG = 0: null (undefined, left out of the mean) or zero.")
    query_set: QuerySet = Field(
        "judged", description="judged (missing queries score 0, trec_eval -c), both, or judged_strict."
    )
    run_duplicates: DuplicatePolicy = Field("error", description="Duplicate run rows: error, first or last.")
    judgment_duplicates: DuplicatePolicy = Field("error", description="Duplicate judgments: error, first or last.")
    depth: StrictInt | None = Field(
        None, gt=0, le=LARGEST_COUNT, description="Cut each ranking to its first M documents first (trec_eval -M)."
    )
    aggregation: Aggregation = Field("mean", description="mean, or weighted_mean by the query weights.")
    query_weights: tuple[tuple[str, float], ...] = Field(
        (), description="Query weights of the weighted mean (unlisted queries weigh 1)."
    )
    # The summary counts the scored queries whose interval over unjudged documents (value_max - value_min) is wider
    # than this. It reports on the values without changing them, so it is left out of the label; at its default it is
    # left out of the canonical JSON too, so specs from before it existed keep their hash and evaluation ids.
    # An interval of a measure in [0, 1] is at most 1 wide: a wider threshold would count nothing.
    interval_width: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] = Field(
        DEFAULT_INTERVAL_WIDTH,
        description="The summary counts queries whose interval over unjudged documents is wider (default 0.1).",
    )
    # How several assessors' grades for one (query, document) become the grade a measure sees. None: one grade per
    # pair, as every judgment set had before assessors were recorded (several are refused, never resolved silently);
    # left out of the canonical JSON then, so those specs keep their hash and evaluation ids.
    assessor_model: str | None = Field(None, description=(
        "How several assessors' grades for one (query, document) become the grade a measure sees: single:NAME "
        "(NAME's grade where NAME judged, the others' median elsewhere), median, min, max, or set / range (any "
        "grade one of them gave / any between the lowest and highest: the intervals range over them, the value "
        "takes the median)."))

    @model_validator(mode="before")
    @classmethod
    def _cutoffs_of_measures(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("measures"):
            cutoffs = [m.cutoff if isinstance(m, MeasureBase) else dict(m).get("cutoff") for m in data["measures"]]
            data = {**data, "cutoffs": tuple(dict.fromkeys(cutoffs))}
        return data

    @model_validator(mode="after")
    def _ndcg_measures_are_cutoffs(self) -> EvaluationSpec:
        # Declared measures that are exactly nDCG at some cutoffs are the cutoffs form: one method, one spec, so one
        # canonical JSON, hash, label and evaluation id whichever way it was asked for (the cutoffs are already the
        # measures' own, in canonical order).
        if self.measures and all(isinstance(m, NDCG) for m in self.measures):
            object.__setattr__(self, "measures", ())
        return self

    @field_validator("measures")
    @classmethod
    def _distinct_measures(cls, measures: tuple[MeasureBase, ...]) -> tuple[MeasureBase, ...]:
        names = [m.canonical for m in measures]
        if len(set(names)) != len(names):
            raise ValueError(f"a measure is listed twice in {names}")
        return measures

    @field_validator("cutoffs")
    @classmethod
    def _canonical_cutoffs(cls, cutoffs: tuple[int | None, ...]) -> tuple[int | None, ...]:
        if not cutoffs:
            raise ValueError("at least one cutoff is required (use None for the whole list)")
        if len(set(cutoffs)) != len(cutoffs):
            raise ValueError(f"duplicate cutoffs in {list(cutoffs)}")
        ints = sorted(k for k in cutoffs if k is not None)
        return (*ints, *((None,) if None in cutoffs else ()))

    @field_validator("gain_map")
    @classmethod
    def _canonical_gain_map(cls, pairs: tuple[tuple[int, float], ...]) -> tuple[tuple[int, float], ...]:
        grades = [grade for grade, _ in pairs]
        if len(set(grades)) != len(grades):
            raise ValueError(f"gain map gives grade(s) {sorted({g for g in grades if grades.count(g) > 1})} twice")
        for grade, gain in pairs:
            if gain != gain or gain in (float("inf"), float("-inf")):
                raise ValueError(f"gain map sends grade {grade} to a non-finite gain {gain}")
        return tuple(sorted((int(g), float(v) + 0.0) for g, v in pairs))  # + 0.0: -0.0 and 0.0 are one gain

    @field_validator("assessor_model")
    @classmethod
    def _known_assessor_model(cls, model: str | None) -> str | None:
        if model is None or model in ASSESSOR_MODELS:
            return model
        if model.startswith("single:") and model.removeprefix("single:").strip():
            return model
        raise ValueError(f"assessor model {model!r} is none of single:NAME, {', '.join(ASSESSOR_MODELS)}")

    @field_validator("query_weights")
    @classmethod
    def _canonical_weights(cls, pairs: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
        ids = [q for q, _ in pairs]
        if len(set(ids)) != len(ids):
            raise ValueError("a query has two weights")
        for query_id, weight in pairs:
            if not (weight >= 0 and weight != float("inf")):
                raise ValueError(f"query {query_id!r} has weight {weight}; weights must be finite and >= 0")
        return tuple(sorted((str(q), float(w) + 0.0) for q, w in pairs))

    @model_validator(mode="after")
    def _consistent(self) -> EvaluationSpec:
        if self.gain == "map" and not self.gain_map:
            raise ValueError("gain 'map' needs a gain_map such as {0: 0, 1: 0, 2: 2, 3: 3}")
        if self.gain != "map" and self.gain_map:
            raise ValueError(f"a gain_map is given but gain is {self.gain!r}; set gain='map'")
        if self.aggregation == "weighted_mean" and not self.query_weights:
            raise ValueError("aggregation 'weighted_mean' needs query_weights")
        if self.aggregation == "mean" and self.query_weights:
            raise ValueError("query_weights are given but aggregation is 'mean'; set aggregation='weighted_mean'")
        if self.ties == "average" and any(not isinstance(m, NDCG) for m in self.measures):
            raise ValueError("ties 'average' (shared credit within a tie group) is defined for nDCG only")
        if self.assessor_model in ("set", "range") and self.unjudged == "condensed":
            raise ValueError(f"assessor model {self.assessor_model!r} with condensed lists is not supported: a "
                             "disputed negative grade would move the documents below it")
        return self

    # -- measures ------------------------------------------------------------------------------------------------

    def measure_list(self) -> tuple[MeasureBase, ...]:
        """The measures this spec computes: the declared ones, or nDCG at each cutoff."""
        return self.measures or tuple(NDCG(cutoff=k) for k in self.cutoffs)

    def measure_label(self, measure: MeasureBase) -> str:
        """e.g. `AP@100[trec_eval:gain=linear]`: the measure's canonical name and the method."""
        return f"{measure.canonical}[{self.method_label()}]"

    def measure_trec_eval_name(self, measure: MeasureBase) -> str | None:
        """trec_eval's name for this measure when trec_eval prints exactly its number under this spec."""
        return measure.trec_eval_name() if self.trec_eval_compatible() else None

    # -- identity ------------------------------------------------------------------------------------------------

    def canonical_payload(self) -> dict[str, Any]:
        """The spec in the one form every stored copy holds (the evaluation's `spec_json`, its Parquet metadata, the
        provenance record's `spec`): its fields as JSON values and `spec_version`. `from_canonical_json` reads it
        back from its JSON."""
        payload = {"spec_version": SPEC_VERSION, **self.model_dump(mode="json")}
        if not self.measures:
            del payload["measures"]  # nDCG at the cutoffs: the same text (and hash) as before measures were listed
        if self.interval_width == DEFAULT_INTERVAL_WIDTH:
            del payload["interval_width"]  # likewise: the default width leaves the text as it was
        if self.assessor_model is None:
            del payload["assessor_model"]  # one grade per pair: the text as it was before assessors were recorded
        return payload

    def canonical_json(self) -> str:
        """`canonical_payload` as compact JSON with sorted keys: equal specs give equal bytes."""
        return json.dumps(self.canonical_payload(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @property
    def spec_hash(self) -> str:
        """sha256 of the canonical JSON, hex."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()

    @classmethod
    def from_canonical_json(cls, text: str) -> EvaluationSpec:
        payload = json.loads(text)
        if not isinstance(payload, dict):
            raise SpecError("a spec's canonical JSON is an object")
        version = payload.pop("spec_version", None)
        if version != SPEC_VERSION:
            raise SpecError(f"spec_version {version!r} is not supported (this build reads {SPEC_VERSION})")
        try:
            return cls.model_validate(payload)
        except ValidationError as error:
            raise SpecError(_validation_message(error)) from None

    # -- labels --------------------------------------------------------------------------------------------------

    @property
    def gain_label(self) -> str:
        if self.gain != "map":
            return self.gain
        return "{" + ",".join(f"{g}:{_number(v)}" for g, v in self.gain_map) + "}"

    def method_label(self) -> str:
        """Everything but the cutoff: the closest preset, then every option that differs from it.

        The preset is chosen by fewest differences; the gain is always shown. Two different methods never share a
        label, because the preset name plus the listed differences determine every option.
        """
        base_name, differences = _closest_preset(self)
        parts = [f"gain={self.gain_label}"]
        parts += [f"{name}={_option_text(self, name)}" for name in differences if name not in ("gain", "gain_map")]
        return f"{base_name}:" + ",".join(parts)

    def label(self, cutoff: int | None) -> str:
        """e.g. `nDCG@10[trec_eval:gain=linear]`; the whole list is `nDCG[...]`."""
        at = "" if cutoff is None else f"@{cutoff}"
        return f"nDCG{at}[{self.method_label()}]"

    def full_label(self) -> str:
        """The label of the whole evaluation: all cutoffs (or the declared measures) and the method."""
        if self.measures:
            return ",".join(m.canonical for m in self.measures) + f"[{self.method_label()}]"
        ks = ",".join("all" if k is None else str(k) for k in self.cutoffs)
        return f"nDCG@{ks}[{self.method_label()}]"

    def trec_eval_compatible(self) -> bool:
        """True when trec_eval (9 or 10, with -c, -M, -J as needed) prints exactly these numbers under its own
        measure names: linear gain, score ranking, docid tie-break, ideal over judged, IDCG=0 scoring 0, plain mean."""
        return not self.trec_eval_differences()

    def trec_eval_differences(self) -> list[str]:
        """The options (`name=value`) that make this spec's numbers other than trec_eval's (`TREC_EVAL_METHOD`)."""
        return [f"{name}={_option_text(self, name)}" for name, value in TREC_EVAL_METHOD.items()
                if getattr(self, name) != value]

    def trec_eval_name(self, cutoff: int | None) -> str:
        """trec_eval's measure name for this cutoff (`ndcg` for the whole list)."""
        return "ndcg" if cutoff is None else f"ndcg_cut_{cutoff}"

    def with_options(self, **changes: Any) -> EvaluationSpec:
        """A new, validated spec with some options changed. The cutoffs of a spec with declared measures are
        theirs: change the measures instead."""
        if self.measures and "cutoffs" in changes and "measures" not in changes:
            raise SpecError("the cutoffs come from the declared measures; give the measures with their cutoffs")
        current = {**self.model_dump(), "measures": self.measures}
        try:
            return EvaluationSpec.model_validate({**current, **changes})
        except ValidationError as error:
            raise SpecError(_validation_message(error)) from None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _option_text(spec: EvaluationSpec, name: str) -> str:
    value = getattr(spec, name)
    if name == "cutoffs":
        return ",".join("all" if k is None else str(k) for k in value)
    if name == "query_weights":
        digest = hashlib.sha256(json.dumps(value).encode()).hexdigest()[:12]
        return f"{len(value)}q:{digest}"
    return "none" if value is None else str(value)


_LABEL_EXEMPT = {"cutoffs", "measure", "measures", "interval_width"}


def _closest_preset(spec: EvaluationSpec) -> tuple[str, list[str]]:
    candidates = [
        (name, [f for f in EvaluationSpec.model_fields if f not in _LABEL_EXEMPT and getattr(spec, f) != getattr(base, f)])
        for name, base in PRESETS.items()
    ]
    # min() keeps the first of equals, so the order of PRESETS breaks ties.
    return min(candidates, key=lambda candidate: len(candidate[1]))


# The options under which trec_eval's numbers are computed; the others are its flags (-c for the query set, -M for
# the depth, -J for condensed lists) or not seen by it (score precision: 9 and 10 differ, both are trec_eval).
TREC_EVAL_METHOD: dict[str, Any] = {
    "gain": "linear", "discount": "log2", "ranking": "score", "ties": "docid_desc", "ideal": "judged",
    "no_relevant": "zero", "aggregation": "mean", "negative_grades": "zero", "run_duplicates": "error",
    "judgment_duplicates": "error",
}

PRESETS: dict[str, EvaluationSpec] = {
    # Our recommendation: trec_eval's method, but a query without relevant judgments is undefined (null), not 0.
    "judged": EvaluationSpec(),
    # trec_eval 10.0 `-m ndcg_cut -c`.
    "trec_eval": EvaluationSpec(no_relevant="zero"),
    # trec_eval 9.0.8 `-c` and pytrec_eval: scores stored as float32.
    "trec_eval9": EvaluationSpec(no_relevant="zero", score_precision="float32"),
    # sklearn.metrics.ndcg_score(ignore_ties=False), each query one row of its returned candidates.
    "sklearn": EvaluationSpec(
        ties="average", ideal="retrieved", no_relevant="zero", query_set="both", negative_grades="error"
    ),
}


def preset(name: str) -> EvaluationSpec:
    try:
        return PRESETS[name]
    except KeyError:
        raise SpecError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None


# -- option values given as text (CLI, sidecar files) -----------------------------------------------------------


def parse_positive_int(text: str, what: str, alternative: str = "") -> int:
    """`10` -> 10; anything else is a SpecError naming `what` (and the accepted `alternative`, if any)."""
    try:
        value = int(text)
    except ValueError:
        raise SpecError(f"{what} {text!r} is not a positive integer{alternative}") from None
    if value <= 0:
        raise SpecError(f"{what} {value} must be positive")
    if value > LARGEST_COUNT:
        raise SpecError(f"{what} {value} is beyond {LARGEST_COUNT:,}, the largest rank a run can hold")
    return value


def parse_cutoffs(text: str) -> tuple[int | None, ...]:
    """`5,10,all` -> (5, 10, None)."""
    if not text.strip():
        raise SpecError("no cutoff given; use e.g. 5,10,all")
    items = [part.strip() for part in text.split(",")]
    return tuple(None if item.lower() in ("all", "none") else parse_positive_int(item, "cutoff", " or 'all'") for item in items)


def parse_gain_map(text: str) -> tuple[tuple[int, float], ...]:
    """`0=0,1=0,2=2,3=3` -> ((0, 0.0), (1, 0.0), (2, 2.0), (3, 3.0))."""
    pairs: list[tuple[int, float]] = []
    for item in (part.strip() for part in text.split(",") if part.strip()):
        grade_text, sep, gain_text = item.partition("=")
        if not sep:
            raise SpecError(f"gain map entry {item!r} is not GRADE=GAIN")
        try:
            pairs.append((int(grade_text), float(gain_text)))
        except ValueError:
            raise SpecError(f"gain map entry {item!r}: the grade must be an integer and the gain a number") from None
    if not pairs:
        raise SpecError("the gain map is empty")
    return tuple(pairs)


def spec_measures(names: str | list[str] | tuple[str, ...]) -> tuple[MeasureBase, ...]:
    """Measure names (`"nDCG@10,AP,RR@10"` or a list) as a spec's `measures`; errors are one-line SpecErrors."""
    try:
        return parse_measures(names)
    except MeasureError as error:
        raise SpecError(str(error)) from None


def build_spec(preset_name: str = "judged", **overrides: Any) -> EvaluationSpec:
    """A preset with overrides (None means: keep the preset's value); every error becomes a one-line SpecError.
    `measures` may be given as names (`"nDCG@10,AP"` or a list of them)."""
    base = preset(preset_name)
    changes = {name: value for name, value in overrides.items() if value is not None}
    trec_eval_named: list[str] = []
    if "measures" in changes:
        if "cutoffs" in changes:
            raise SpecError("give the cutoffs inside the measures (nDCG@10,AP@100), not beside them")
        if isinstance(changes["measures"], str) or any(isinstance(m, str) for m in changes["measures"]):
            names = changes["measures"]
            trec_eval_named = [name for name in (split_measure_names(names) if isinstance(names, str) else names)
                               if isinstance(name, str) and is_trec_eval_name(name)]
            changes["measures"] = spec_measures(names)
    if "gain_map" in changes and "gain" not in changes:
        changes["gain"] = "map"
    spec = base.with_options(**changes)
    if trec_eval_named and not spec.trec_eval_compatible():
        raise SpecError(not_trec_eval_method(trec_eval_named[0], preset_name, spec))
    return spec


def not_trec_eval_method(name: str, preset_name: str, spec: EvaluationSpec) -> str:
    """Why trec_eval's measure name `name` cannot be taken under `spec`: it names the measure as trec_eval computes
    it, and the spec's method is another (the options that differ); and the two ways out."""
    meaning = trec_eval_meaning(name)
    measure = meaning.measure if meaning is not None else NDCG()
    differences = ", ".join(spec.trec_eval_differences())
    why = (f"--preset {preset_name}: {differences}" if preset(preset_name).trec_eval_differences()
           == spec.trec_eval_differences() else differences)
    return (f"measure {name.strip()!r} is trec_eval's name for {PRESETS['trec_eval'].measure_label(measure)}, and "
            f"this spec's method is another ({why}): give --preset trec_eval (or trec_eval9) without options that "
            f"change its method, or {measure.canonical} for this method's number")


def _validation_message(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "spec"
        problems.append(f"{where}: {item['msg']}")
    return "invalid spec: " + "; ".join(problems)
