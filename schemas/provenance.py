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

from pydantic import BaseModel, ConfigDict, Field, field_validator

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


class JudgmentSetMetadata(BaseModel):
    """Who judged what, how, on what scale. Part of the judgment set's identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    version: str = ""
    task: str = ""  # the task given to the assessors
    assessors: str = ""  # who judged, and the adjudication procedure
    pooling: str = ""  # how candidates were chosen (depth-k pools of which runs, sampling)
    grade_scale: tuple[tuple[int, str], ...] = ()  # each grade and its meaning
    unresolved_token: str | None = None  # grade text that marks an unresolved judgment (kept as a null grade)
    source: str = ""  # where the file came from

    @field_validator("grade_scale", mode="before")
    @classmethod
    def _scale_from_mapping(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return tuple(sorted((int(grade), str(meaning)) for grade, meaning in value.items()))
        return value


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
