"""A judgment set's assessors in its metadata (schemas.provenance): the structured record (a description and each
assessor's kind) reads the free text of older records and sidecars, serializes as before while it declares no kind
(so older sets keep their ids), and names what is wrong with a kind or a name."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from judged.schemas.provenance import (
    Assessors, JudgmentSetMetadata, assessor_kind_problem, assessor_name_problem, canonical_json, table_id,
)

OLD = {"name": "n", "version": "v", "task": "", "assessors": "NIST assessors", "pooling": "",
       "grade_scale": [[0, "no"], [1, "yes"]], "unresolved_token": "?", "source": ""}


def test_an_older_record_reads_and_keeps_its_json_and_its_id() -> None:
    metadata = JudgmentSetMetadata.model_validate_json(json.dumps(OLD))
    assert metadata.assessors == Assessors(description="NIST assessors")
    assert canonical_json(metadata.model_dump(mode="json")) == canonical_json(OLD)
    # The id main computed for this metadata before assessors had kinds (a set stored then keeps it).
    assert table_id("judgments", "0" * 64, metadata) == "807d486cf4339aa17a0413ed08d1d9dc"


def test_kinds_and_a_threshold_are_part_of_the_identity() -> None:
    plain = JudgmentSetMetadata(name="n")
    kinds = plain.with_assessors(kinds={"bob": "model:gpt-4o", "alice": "human"})
    assert kinds.assessors.kinds == (("alice", "human"), ("bob", "model:gpt-4o"))  # in name order
    assert kinds.model_dump(mode="json")["assessors"] == {"description": "",
                                                         "kinds": {"alice": "human", "bob": "model:gpt-4o"}}
    assert JudgmentSetMetadata.model_validate_json(json.dumps(kinds.model_dump(mode="json"))) == kinds
    other_kind = plain.with_assessors(kinds={"bob": "human", "alice": "human"})
    threshold = plain.model_copy(update={"relevant_from": 2})
    ids = {table_id("judgments", "0" * 64, m) for m in (plain, kinds, other_kind, threshold)}
    assert len(ids) == 4
    assert "relevant_from" not in plain.model_dump(mode="json")
    assert threshold.model_dump(mode="json")["relevant_from"] == 2


def test_a_sidecar_may_give_the_assessors_as_a_table() -> None:
    metadata = JudgmentSetMetadata.model_validate(
        {"assessors": {"description": "two annotators, no adjudication", "kinds": {"a1": "human", "m": "adjudicator"}}}
    )
    assert metadata.assessors.description == "two annotators, no adjudication"
    assert metadata.assessors.kind_of("m") == "adjudicator" and metadata.assessors.kind_of("x") is None
    # The description alone is a change of nothing: the same metadata as the plain text.
    assert JudgmentSetMetadata(assessors={"description": "NIST"}) == JudgmentSetMetadata(assessors="NIST")


@pytest.mark.parametrize(("kind", "problem"), [
    ("human", None), ("adjudicator", None), ("model:gpt-4o-2024-08-06", None),
    ("robot", "kind 'robot' is none of human, model:<name>, adjudicator"),
    ("model:", "kind 'model:' names no model"), ("model:gpt 4", "kind 'model:gpt 4' names no model"),
    ("Human", "is none of"),
])
def test_assessor_kinds(kind: str, problem: str | None) -> None:
    found = assessor_kind_problem(kind)
    assert found is None if problem is None else problem in str(found)


def test_names_and_kinds_are_validated_with_a_message_naming_the_assessor() -> None:
    assert assessor_name_problem("alice") is None
    assert "empty" in str(assessor_name_problem(""))
    assert "blanks around it" in str(assessor_name_problem(" alice"))
    with pytest.raises(ValidationError, match="assessor 'bob': kind 'robot' is none of"):
        JudgmentSetMetadata(assessors={"kinds": {"bob": "robot"}})
    with pytest.raises(ValidationError, match="relevant_from"):
        JudgmentSetMetadata(relevant_from=0)
