"""The measures a spec may ask for: each one's declared parameters, canonical name and trec_eval name.

Belongs here: one small frozen model per measure (what it is called, its parameters with their defaults, which
cutoffs it accepts, the rows of each ranking it reads, its value for a judged query the run does not list), the
registry `MEASURES` from canonical name to model, and `parse_measures`, which turns names such as `nDCG@10`, `AP`,
`RR@10`, `P(rel=2)@5` or `RBP(p=0.8)` into them. Nothing here computes a value: each measure's formula, with its
citation, lives in its module under `transforms/measures/`, which the engine finds through the same names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, model_validator

PositiveInt = Annotated[StrictInt, Field(gt=0)]


class MeasureError(ValueError):
    """A measure name or parameter that does not describe a measure judged computes."""


class MeasureBase(BaseModel):
    """What every measure declares. `cutoff` None means the whole returned list."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cutoff: PositiveInt | None = None

    cutoff_required: ClassVar[bool] = False
    cutoff_allowed: ClassVar[bool] = True
    trec_eval_base: ClassVar[str | None] = None
    """trec_eval's name of this measure without a cutoff (`map`), when trec_eval prints the same number."""
    trec_eval_cut: ClassVar[str | None] = None
    """trec_eval's name with a cutoff, `{k}` standing for it (`map_cut_{k}`)."""
    missing_value: ClassVar[float | None] = 0.0
    """The value of a judged query the run does not list, under query set `judged` (trec_eval -c)."""
    undefined_without_relevant: ClassVar[bool] = False
    """Whether the value divides by the relevant judged documents, so a query without any is undefined."""

    @model_validator(mode="after")
    def _cutoff_fits(self) -> MeasureBase:
        if self.cutoff_required and self.cutoff is None:
            raise ValueError(f"{self.name} needs a cutoff, e.g. {self.name}@10")
        if not self.cutoff_allowed and self.cutoff is not None:
            raise ValueError(f"{self.name} takes no cutoff")
        return self

    @property
    def name(self) -> str:
        return str(type(self).model_fields["measure"].default)

    def parameters(self) -> dict[str, Any]:
        """The declared parameters other than the cutoff, as given (defaults included)."""
        return {key: value for key, value in self.model_dump().items() if key not in ("measure", "cutoff")}

    def _default_parameters(self) -> dict[str, Any]:
        return {key: type(self).model_fields[key].default for key in self.parameters()}

    @property
    def family(self) -> str:
        """The name and its non-default parameters, without the cutoff: `nDCG`, `AP(rel=2)`, `RBP(p=0.8)`."""
        defaults = self._default_parameters()
        shown = [f"{key}={_text(value)}" for key, value in self.parameters().items() if value != defaults[key]]
        return self.name + (f"({','.join(shown)})" if shown else "")

    @property
    def canonical(self) -> str:
        """ir_measures' form: `nDCG@10`, `AP`, `P(rel=2)@5`, `RBP(p=0.8)`."""
        return self.family + ("" if self.cutoff is None else f"@{self.cutoff}")

    def trec_eval_name(self, binary_judgments: bool | None = None) -> str | None:
        """trec_eval's name for this exact number (given its flags, e.g. -l for `rel`), or None. `binary_judgments`:
        whether the judgments' grades are only 0 and 1 (None: not known); only RBP's name depends on it."""
        if self.cutoff is None:
            return self.trec_eval_base
        return None if self.trec_eval_cut is None else self.trec_eval_cut.format(k=self.cutoff)

    def trec_eval_residual_name(self, binary_judgments: bool | None = None) -> str | None:
        """trec_eval's name for this measure's residual (RBP's), or None."""
        return None

    @classmethod
    def from_trec_eval_name(cls, text: str) -> TrecEvalName | None:
        """What trec_eval's printed name `text` means among this model's measures (its default flags: -l 1), or
        None when it is no name of this model: `map` is AP, `map_cut_10` AP@10."""
        if cls.trec_eval_base is not None and text == cls.trec_eval_base and not cls.cutoff_required:
            return TrecEvalName(text, cls())
        if cls.trec_eval_cut is not None:
            start, _, end = cls.trec_eval_cut.partition("{k}")
            cutoff = text.removeprefix(start).removesuffix(end) if text.startswith(start) and text.endswith(end) else ""
            if cutoff.isascii() and cutoff.isdigit() and not cutoff.startswith("0"):
                return TrecEvalName(text, cls(cutoff=int(cutoff)))
        return None

    def trec_eval_relevance_level(self) -> int | None:
        """The relevance level (trec_eval's -l) of the trec_eval invocation that prints this number, or None when
        its number is the same under any -l (nDCG and RBP take each grade's gain)."""
        return None

    def value_if_missing(self) -> float | None:
        """The value of a judged query the run does not list, under query set `judged` (trec_eval -c)."""
        return self.missing_value

    def rows_needed(self) -> int | None:
        """How many first rows of each ranking decide the value: the cutoff, or None for all of them."""
        return self.cutoff


class NDCG(MeasureBase):
    """Normalised discounted cumulative gain; its gain, discount, ties and ideal are the spec's options."""

    measure: Literal["nDCG"] = "nDCG"
    trec_eval_base: ClassVar[str | None] = "ndcg"
    trec_eval_cut: ClassVar[str | None] = "ndcg_cut_{k}"
    undefined_without_relevant: ClassVar[bool] = True


class BinaryMeasure(MeasureBase):
    """A measure of binary relevance: a document is relevant when its grade is at least `rel` (trec_eval -l)."""

    rel: PositiveInt = Field(default=1, description="a document is relevant when its judged grade is at least rel "
                                                    "(trec_eval -l)")

    def trec_eval_relevance_level(self) -> int | None:
        return self.rel


class AP(BinaryMeasure):
    measure: Literal["AP"] = "AP"
    trec_eval_base: ClassVar[str | None] = "map"
    trec_eval_cut: ClassVar[str | None] = "map_cut_{k}"
    undefined_without_relevant: ClassVar[bool] = True


class RR(BinaryMeasure):
    measure: Literal["RR"] = "RR"
    # RR@k is trec_eval's recip_rank only when the whole run is cut with -M k, which changes every other measure.
    trec_eval_base: ClassVar[str | None] = "recip_rank"


class Precision(BinaryMeasure):
    measure: Literal["P"] = "P"
    cutoff_required: ClassVar[bool] = True
    trec_eval_cut: ClassVar[str | None] = "P_{k}"


class Recall(BinaryMeasure):
    measure: Literal["R"] = "R"
    cutoff_required: ClassVar[bool] = True
    trec_eval_cut: ClassVar[str | None] = "recall_{k}"
    undefined_without_relevant: ClassVar[bool] = True


class RPrecision(BinaryMeasure):
    measure: Literal["R-Prec"] = "R-Prec"
    cutoff_allowed: ClassVar[bool] = False
    trec_eval_base: ClassVar[str | None] = "Rprec"
    undefined_without_relevant: ClassVar[bool] = True


class Judged(MeasureBase):
    """The judged share of the first k, under a declared `convention` (its description says which)."""

    measure: Literal["Judged"] = "Judged"
    convention: Literal["ir_measures", "trec_eval"] = Field(
        default="ir_measures", description="ir_measures: any qrels entry is judged, over min(k, retrieved); "
                                           "trec_eval: 1 - trec_eval 10's unj_k, a negative grade unjudged, over k")
    cutoff_required: ClassVar[bool] = True
    missing_value: ClassVar[float | None] = None  # nothing retrieved: no share to report

    def value_if_missing(self) -> float | None:
        # trec_eval -c prints unj_k = 0 for a query the run does not list (no unjudged document among k).
        return 1.0 if self.convention == "trec_eval" else None

    @classmethod
    def from_trec_eval_name(cls, text: str) -> TrecEvalName | None:
        # trec_eval 10's unj_k is the unjudged share: its complement, not the same number.
        cutoff = text.removeprefix("unj_")
        if text.startswith("unj_") and cutoff.isascii() and cutoff.isdigit() and not cutoff.startswith("0"):
            measure = cls(convention="trec_eval", cutoff=int(cutoff))
            return TrecEvalName(text, measure, f"trec_eval's unjudged share, 1 - {measure.canonical}")
        return None


class RBP(BinaryMeasure):
    """Rank-biased precision with persistence `p`; its residual is stored beside it."""

    measure: Literal["RBP"] = "RBP"
    p: float = Field(default=0.8, gt=0.0, lt=1.0, description="persistence: the chance of reading on to the next "
                                                               "document (trec_eval's default is 0.9)")
    cutoff_allowed: ClassVar[bool] = False
    trec_eval_base: ClassVar[str | None] = "rbp"

    @property
    def family(self) -> str:
        # p is always shown: ir_measures (0.8) and trec_eval (0.9) disagree on its default.
        extra = "" if self.rel == 1 else f",rel={self.rel}"
        return f"RBP(p={_text(self.p)}{extra})"

    def trec_eval_name(self, binary_judgments: bool | None = None) -> str | None:
        # trec_eval 10's rbp takes each document's gain from its grade (scaled into [0, 1]) and ignores -l, so it
        # prints this binary measure's number only where the grades are 0 and 1 and rel is 1. Its bare `rbp` is
        # p = 0.9; another p is the parameterised `rbp_p=P` (-m rbp.p=P).
        if not binary_judgments or self.rel != 1:
            return None
        return "rbp" if self.p == 0.9 else f"rbp_p={_text(self.p)}"

    def trec_eval_residual_name(self, binary_judgments: bool | None = None) -> str | None:
        # trec_eval's rbp_resid takes no parameter: its p is always 0.9.
        return "rbp_resid" if self.p == 0.9 and self.trec_eval_name(binary_judgments) else None

    @classmethod
    def from_trec_eval_name(cls, text: str) -> TrecEvalName | None:
        # Not the same number in general (see trec_eval_name): named, never taken for this binary measure.
        if text != "rbp" and not text.startswith("rbp_p="):
            return None
        try:
            measure = cls(p=0.9 if text == "rbp" else float(text.removeprefix("rbp_p=")))
        except (ValueError, ValidationError):
            return None
        return TrecEvalName(text, measure, f"trec_eval's RBP with graded gains (each grade scaled into [0, 1]); "
                                           f"{measure.canonical} is binary (grade >= rel), the same number on "
                                           "judgments graded 0 and 1 only")

    def trec_eval_relevance_level(self) -> int | None:
        return None  # trec_eval's rbp ignores -l (its name needs rel 1 and 0/1 grades: `trec_eval_name`)


Measure = Annotated[NDCG | AP | RR | Precision | Recall | RPrecision | Judged | RBP, Field(discriminator="measure")]
"""One declared measure; its `measure` field names it."""

MEASURES: dict[str, type[MeasureBase]] = {
    model.model_fields["measure"].default: model for model in (NDCG, AP, RR, Precision, Recall, RPrecision, Judged, RBP)
}
"""Canonical name -> declaration. The engine dispatches through the same names (transforms/measures/)."""


@dataclass(frozen=True)
class TrecEvalName:
    """One of the names trec_eval prints (`ndcg_cut_10`, `P_5`, `map`, `recip_rank`, `Rprec`, `rbp_p=0.8`) and the
    measure here it names. `differs`: None when trec_eval prints exactly this measure's number under that name
    (under trec_eval's method and default flags, -l 1); else why not, and `measure` is the nearest one here."""

    name: str
    measure: MeasureBase
    differs: str | None = None


def trec_eval_meaning(text: str) -> TrecEvalName | None:
    """What trec_eval's printed name `text` means here, read from the measures' declarations (their trec_eval
    names), or None when it is no trec_eval name of a measure judged computes."""
    for model in MEASURES.values():
        meaning = model.from_trec_eval_name(text.strip())
        if meaning is not None:
            return meaning
    return None



def trec_eval_names(measures: Sequence[MeasureBase], binary_judgments: bool | None = None) -> tuple[str | None, ...]:
    """Each measure's trec_eval name (see `MeasureBase.trec_eval_name`) where one trec_eval invocation prints all
    the names given, None elsewhere (the measure keeps our label). The invocation is that of the first measure with a
    trec_eval name whose number depends on trec_eval's -l (`trec_eval_relevance_level`: a binary measure's `rel`):
    a measure of another level is none of its output (`AP(rel=2),P@10`: `map` at -l 2, `P@10` keeps its label), a
    measure whose number is the same under any -l (nDCG, RBP) is. And an output never holds one trec_eval name for
    two numbers: a name an earlier measure took is not given again."""
    named = [(measure, measure.trec_eval_name(binary_judgments)) for measure in measures]
    levels = [measure.trec_eval_relevance_level() for measure, name in named if name is not None]
    invocation = next((level for level in levels if level is not None), None)
    taken: set[str] = set()
    names: list[str | None] = []
    for measure, name in named:
        level = measure.trec_eval_relevance_level()
        if name in taken or (level is not None and level != invocation):
            name = None
        names.append(name)
        if name is not None:
            taken.add(name)
    return tuple(names)


def binary_grades(grades: Sequence[int] | None) -> bool | None:
    """Whether judgments with these grades are binary (only 0 and 1), or None when the grades are not known."""
    return None if grades is None else set(grades) <= {0, 1}


# Other names of the measures, whatever the spec's method (ir_measures' `Rprec` is trec_eval's name too). trec_eval's
# names are read from the declarations instead (`trec_eval_meaning`): they name a measure computed trec_eval's way.
ALIASES: dict[str, str] = {"Rprec": "R-Prec", "NDCG": "nDCG", "MAP": "AP", "MRR": "RR"}

_NAME = re.compile(r"^(?P<name>[A-Za-z][A-Za-z-]*)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[^@()]+))?$")


def _text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _parameter_value(text: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def trec_eval_name_forms() -> list[str]:
    """trec_eval's names of the measures here that name the same number, as the declarations give them (`ndcg`,
    `ndcg_cut_k`, `map`, ...)."""
    forms = []
    for model in MEASURES.values():
        for form, example in ((model.trec_eval_base, model.trec_eval_base),
                              (model.trec_eval_cut and model.trec_eval_cut.format(k="k"),
                               model.trec_eval_cut and model.trec_eval_cut.format(k=10))):
            meaning = model.from_trec_eval_name(example) if example else None
            if form and meaning is not None and meaning.differs is None:
                forms.append(form)
    return forms


def is_trec_eval_name(text: str) -> bool:
    """Whether `text` is one of trec_eval's names and none of ours (`map`, `P_5`; not `Rprec`, ir_measures' too)."""
    match = _NAME.match(text.strip())
    ours = match is not None and ALIASES.get(match["name"], match["name"]) in MEASURES
    return not ours and trec_eval_meaning(text) is not None


def parse_measure(text: str) -> MeasureBase:
    """One name such as `nDCG@10`, `AP`, `RR(rel=2)@10`, `Judged(convention=trec_eval)@10`, `RBP(p=0.8)`, or one of
    trec_eval's names of the same number (`ndcg_cut_10`, `map`, `P_5`: `is_trec_eval_name`; whether the spec is
    trec_eval's method is the spec's to check). A trec_eval name of another number is refused, naming ours."""
    meaning = trec_eval_meaning(text) if is_trec_eval_name(text) else None
    if meaning is not None:
        if meaning.differs is not None:
            raise MeasureError(f"measure {text.strip()!r} is {meaning.differs}: give {meaning.measure.canonical}")
        return meaning.measure
    match = _NAME.match(text.strip())
    if match is None or ALIASES.get(match["name"], match["name"]) not in MEASURES:
        shown = text.strip() if match is None else match["name"]
        raise MeasureError(f"unknown measure {shown!r}: give NAME, NAME@k or NAME(param=value,...)@k, NAME one of "
                           f"{', '.join(MEASURES)}, or trec_eval's name of one ({', '.join(trec_eval_name_forms())})")
    name = ALIASES.get(match["name"], match["name"])
    model = MEASURES[name]
    values: dict[str, Any] = {}
    for item in (part.strip() for part in (match["params"] or "").split(",") if part.strip()):
        key, sep, value = item.partition("=")
        if not sep:
            raise MeasureError(f"measure {text!r}: parameter {item!r} is not NAME=VALUE")
        values[key.strip()] = _parameter_value(value.strip())
    if match["cutoff"] is not None:
        cutoff = match["cutoff"].strip()
        if cutoff.lower() != "all":
            try:
                values["cutoff"] = int(cutoff)
            except ValueError:
                raise MeasureError(f"measure {text!r}: cutoff {cutoff!r} is not a positive integer") from None
    if name == "RBP" and isinstance(values.get("p"), int):
        values["p"] = float(values["p"])
    try:
        return model.model_validate(values)
    except ValidationError as error:
        raise MeasureError(f"measure {text!r}: {_problems(error)}") from None


def parse_measures(names: str | list[str] | tuple[str, ...]) -> tuple[MeasureBase, ...]:
    """`"nDCG@10,AP,RR@10"` or `["nDCG@10", "AP", "RBP(p=0.8)"]` -> the declared measures, in the order given.
    A comma inside parentheses belongs to the parameters. Raises MeasureError (one line) on any bad name or a
    measure given twice."""
    items = split_measure_names(names) if isinstance(names, str) else [str(name) for name in names]
    if not [item for item in items if item.strip()]:
        raise MeasureError("no measure given; use e.g. nDCG@10,AP,RR@10")
    measures = tuple(parse_measure(item) for item in items if item.strip())
    seen: set[str] = set()
    for measure in measures:
        if measure.canonical in seen:
            raise MeasureError(f"measure {measure.canonical} is given twice")
        seen.add(measure.canonical)
    return measures


def split_measure_names(text: str) -> list[str]:
    """`"nDCG@10,RBP(p=0.9,rel=2)"` -> its names: a comma inside parentheses belongs to the parameters."""
    items, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    return [*items, current]


def _problems(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"] if not str(part)[0].isupper())
        message = str(item["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)
