"""Identity and provenance: the metadata judgment sets and runs carry, how identifiers are derived, and the record
every evaluation stores (docs/method.md, "Identity and provenance").

Belongs here: pure descriptions and derivations. What looks outside (installed versions, the git commit) is read
by `judged.flows.engine.versions` and passed in.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any

from pydantic import (
    BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_serializer, field_validator, model_serializer,
)

ID_LENGTH = 32

METHOD_VERSION = "5"
"""The version of the method, a whole number as text: of every value a measure, an interval over unjudged documents,
a comparison or a judging worklist computes. It is part of every evaluation, comparison and worklist id, so a result
of an older method is never taken for a current one. Any change to such a value (beyond floating-point rounding)
must bump it: the golden-values test (tests/golden/) fails until it is bumped and the golden values are regenerated
for the new version."""
METHOD_VERSION_UNRECORDED = "0"
"""The method version of a stored evaluation whose record has none: every evaluation stored before the method had a
version."""


def canonical_json(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def derive_id(kind: str, payload: Any) -> str:
    """A content identifier: the first 32 hex digits of sha256 over the kind and a canonical JSON payload."""
    return hashlib.sha256(f"{kind}\n{canonical_json(payload)}".encode()).hexdigest()[:ID_LENGTH]


# The kinds of assessor a judgment set's metadata may declare: `human`, `adjudicator` (who settled the others'
# disagreements), or `model:<name>` (a model that judged, e.g. model:gpt-4o-2024-08-06).
ASSESSOR_KINDS = ("human", "model:<name>", "adjudicator")
MODEL_KIND_PREFIX = "model:"


def assessor_kind_problem(kind: object) -> str | None:
    """Why `kind` is not an assessor kind (None: it is one): `human`, `adjudicator`, or `model:<name>` with a name
    of at least one character and no blank."""
    if kind in ("human", "adjudicator"):
        return None
    if isinstance(kind, str) and kind.startswith(MODEL_KIND_PREFIX):
        model = kind.removeprefix(MODEL_KIND_PREFIX)
        if model and not any(character.isspace() for character in model):
            return None
        return f"kind {kind!r} names no model: write model:<name>, the name without blanks (model:gpt-4o)"
    return f"kind {kind!r} is none of {', '.join(ASSESSOR_KINDS)}"


def assessor_name_problem(name: object) -> str | None:
    """Why `name` is not an assessor's name (None: it is one): a non-empty string without leading or trailing
    blanks and without a line break."""
    if not isinstance(name, str) or not name:
        return f"assessor name {name!r} is empty or not text"
    if name != name.strip() or "\n" in name or "\r" in name:
        return f"assessor name {name!r} has blanks around it or a line break"
    return None


class Assessors(BaseModel):
    """Who judged a judgment set: in words (`description`: the assessor pool, the adjudication procedure), and the
    kind of each assessor its rows name (`kinds`: (name, kind) pairs in name order; see `ASSESSOR_KINDS`). Part of
    the set's identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str = ""
    kinds: tuple[tuple[str, str], ...] = ()

    @field_validator("kinds", mode="before")
    @classmethod
    def _kinds_from_mapping(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return tuple(value.items())
        return value

    @field_validator("kinds")
    @classmethod
    def _valid_kinds(cls, kinds: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        names = [name for name, _ in kinds]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"assessor(s) {repeated} are given a kind twice")
        for name, kind in kinds:
            problem = assessor_name_problem(name) or assessor_kind_problem(kind)
            if problem:
                raise ValueError(f"assessor {name!r}: {problem}")
        return tuple(sorted(kinds))

    def kind_of(self, name: str) -> str | None:
        """The declared kind of the assessor `name` (None: not declared)."""
        return dict(self.kinds).get(name)


class JudgmentSetMetadata(BaseModel):
    """Who judged what, how, on what scale. Part of the judgment set's identity.

    `assessors` is the structured `Assessors` record; a plain string (every record and sidecar written before
    assessors had kinds) reads as its description. Fields added since are left out of the serialized form while they
    keep their defaults (a description alone serializes as that string, `relevant_from` None not at all), so a set
    declared as before keeps its metadata JSON, its id and the ids of its evaluations."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    version: str = ""
    task: str = ""  # the task given to the assessors
    assessors: Assessors = Assessors()  # who judged, how disagreements were settled, and each assessor's kind
    pooling: str = ""  # how candidates were chosen (depth-k pools of which runs, sampling)
    grade_scale: tuple[tuple[int, str], ...] = ()  # each grade and its meaning
    unresolved_token: str | None = None  # grade text that marks an unresolved judgment (kept as a null grade)
    source: str = ""  # where the file came from
    # The lowest grade the set's assessors meant as relevant, when the set declares it: the threshold of the
    # agreement on relevant-or-not (transforms/assessors.py). Evaluations keep their measures' own `rel`.
    relevant_from: int | None = Field(None, ge=1)

    @field_validator("grade_scale", mode="before")
    @classmethod
    def _scale_from_mapping(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return tuple(sorted((int(grade), str(meaning)) for grade, meaning in value.items()))
        return value

    @field_validator("assessors", mode="before")
    @classmethod
    def _assessors_from_text(cls, value: Any) -> Any:
        return {"description": value} if isinstance(value, str) else value

    @field_serializer("assessors")
    def _assessors_as_before(self, assessors: Assessors) -> Any:
        if not assessors.kinds:
            return assessors.description
        return {"description": assessors.description, "kinds": dict(assessors.kinds)}

    @model_serializer(mode="wrap")
    def _without_new_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped = handler(self)
        if dumped.get("relevant_from", 0) is None:
            del dumped["relevant_from"]
        return dumped

    @property
    def assessor_kinds(self) -> dict[str, str]:
        """Each named assessor's declared kind."""
        return dict(self.assessors.kinds)

    def with_assessors(self, description: str | None = None, kinds: dict[str, str] | None = None) -> JudgmentSetMetadata:
        """The same metadata with the assessors' description and/or kinds replaced (validated: a ValueError names
        the kind that is none)."""
        assessors = {"description": self.assessors.description if description is None else description,
                     "kinds": self.assessor_kinds if kinds is None else kinds}
        return type(self).model_validate({**self.model_dump(), "assessors": assessors})


class RunMetadata(BaseModel):
    """What system produced a run. Part of the run's identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    system: str = ""
    configuration: str = ""
    tag: str = ""
    source: str = ""

    def display_name(self, fallback: str) -> str:
        """How reports name the run: its tag, else its system, else `fallback` (a file or folder name)."""
        return self.tag or self.system or fallback


def table_id(kind: str, content_sha256: str, table_metadata: BaseModel) -> str:
    """The identifier of a judgment set or run: its normalized content and its declared metadata."""
    return derive_id(kind, {"content": content_sha256, "metadata": table_metadata.model_dump(mode="json")})


def evaluation_id(
    run_id: str, judgment_set_id: str, spec_hash: str, version: str, method_version: str = METHOD_VERSION
) -> str:
    """Same inputs, same spec, same implementation `version` (judged's, see `judged.flows.engine.versions`) and same
    method version: same identifier, so a rerun is recognisable and a changed method is not."""
    return derive_id(
        "evaluation",
        {"run": run_id, "judgments": judgment_set_id, "spec": spec_hash, "implementation": version,
         "method": method_version},
    )


def is_older_method(method_version: str) -> bool:
    """Whether a stored result was computed by a method older than this code's (its values may differ from what
    the same evaluation gives today)."""
    return int(method_version) < int(METHOD_VERSION)


class InputRecord(BaseModel):
    """One input of an evaluation as the record names it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    content_sha256: str  # of the normalized table
    source_sha256: str  # of the file as it was read
    source: str  # the path it was read from
    original_name: str | None = None  # the file's name as it was given
    moved_to: str | None = None  # where the file lies now, when the nightly job moved it (inbox/processed/...)
    n_rows: int
    metadata: dict[str, Any]

    @classmethod
    def from_stored(cls, table_id: str, record: dict[str, Any], moved_to: str | None = None) -> InputRecord:
        """The input as its stored record (a JUDGMENT_SETS or RUNS row) describes it; `moved_to`: where the file
        lies now, when the nightly job moved it."""
        return cls(
            id=table_id,
            content_sha256=record["content_sha256"],
            source_sha256=record["source_sha256"],
            source=record["source"],
            original_name=posixpath.basename(record["source"]),
            moved_to=moved_to,
            n_rows=record["n_rows"],
            metadata=json.loads(record["metadata_json"]),
        )


class ProvenanceRecord(BaseModel):
    """Everything needed to tell later exactly what produced a result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evaluation_id: str
    label: str
    spec: dict[str, Any]  # the canonical JSON, parsed
    spec_hash: str
    run: InputRecord
    judgments: InputRecord
    implementation_version: str
    implementation_commit: str
    libraries: dict[str, str]
    flow_run_id: str | None
    started_at: str
    finished_at: str
    warnings: tuple[str, ...] = Field(default_factory=tuple)
    # A record stored before the method had a version has none: it reads as METHOD_VERSION_UNRECORDED.
    method_version: str = METHOD_VERSION_UNRECORDED

    def to_json(self) -> str:
        return canonical_json(self.model_dump(mode="json"))
