"""Several assessors through the Python API (flows/api.py): `judged.agreement` from files, frames or a stored set,
`judged.ingest_judgments` with assessors and kinds (the command line's set, id and stored tables, read back by
`judged.Warehouse`), `judged.evaluate` of rows that name their assessors under an assessor model, and the refusals
(SpecError for a bad argument, InputError for bad input)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import judged
from judged.flows.store.assessor_files import load_judgments
from tests.conftest import REPO

EXAMPLE = REPO / "data" / "assessors-example"
FILES = [EXAMPLE / "synthetic_a.txt", EXAMPLE / "synthetic_b.txt"]
NAMES = ["synthetic_a", "synthetic_b"]
# Pair a: x 1, y 3; pair b: x 0, y 0; pair c: x alone.
ROWS = pl.DataFrame({"query_id": ["q"] * 5, "doc_id": ["a", "a", "b", "b", "c"], "relevance": [1, 3, 0, 0, 2],
                     "assessor": ["x", "y", "x", "y", "x"]})


def test_agreement_of_files_and_of_the_same_rows_as_a_frame() -> None:
    found = judged.agreement(FILES, assessors=NAMES)
    assert isinstance(found, judged.Agreement)
    assert found.relevant_from == 2 and found.name == "assessors-example"  # the sidecars declare them
    assert found.assessors["assessor"].to_list() == NAMES
    assert found.assessors["assessor_kind"].to_list() == ["human", "model:synthetic-rule"]
    rows = load_judgments(FILES, NAMES).frame.drop("source_line")
    as_frame = judged.agreement(rows.to_pandas(), rel=2)
    assert as_frame.pairs.equals(found.pairs) and as_frame.alpha == found.alpha
    at_one = judged.agreement(rows)
    assert at_one.relevant_from == 1 and at_one.pairs["kappa"].equals(found.pairs["kappa"])


def test_agreement_of_a_small_frame_by_hand() -> None:
    # Shared: a (1 vs 3) and b (0 vs 0): agreement 1/2; relevant at 1: (1, 1) and (0, 0), full agreement.
    pairs = judged.agreement(ROWS, assessor_kinds={"x": "human"}).pairs
    assert pairs.select("assessor_a", "assessor_b", "shared_pairs", "agreement", "kappa_relevant").rows() == [
        ("x", "y", 2, 0.5, 1.0)]


def test_ingest_judgments_stores_the_command_line_s_set(tmp_path: Path) -> None:
    warehouse = tmp_path / "w"
    set_id = judged.ingest_judgments(FILES, warehouse, assessors=NAMES, assessor_kinds={"synthetic_b": "adjudicator"})
    expected = load_judgments(FILES, NAMES, kinds={"synthetic_b": "adjudicator"}).table_id
    assert set_id == expected
    assert judged.ingest_judgments(FILES, warehouse, assessors=NAMES,
                                   assessor_kinds={"synthetic_b": "adjudicator"}) == set_id  # stored already
    stored = judged.Warehouse(warehouse)
    assert stored.assessors("assessors-example")["assessor_kind"].to_list() == ["human", "adjudicator"]
    (pair,) = stored.assessor_agreement(set_id).iter_rows(named=True)
    again = judged.agreement("assessors-example@synthetic-1", warehouse=warehouse)
    assert pair["kappa"] == again.pairs["kappa"][0] and pair["alpha"] == again.alpha
    assert stored.assessor_agreement("nothing").height == 0


def test_ingest_judgments_of_a_frame_with_metadata(tmp_path: Path) -> None:
    warehouse = tmp_path / "w"
    set_id = judged.ingest_judgments(ROWS, warehouse, metadata={"name": "toy", "relevant_from": 3,
                                                                "assessors": "x and y, no adjudication"})
    sets = judged.Warehouse(warehouse).judgment_sets()
    assert sets.select("judgment_set_id", "name", "assessors").rows() == [(set_id, "toy", "x and y, no adjudication")]
    assert judged.Warehouse(warehouse).assessor_agreement()["relevant_from"].to_list() == [3]
    # A frame without assessors is stored as its rows were before: the id its evaluation names.
    plain = ROWS.filter(pl.col("assessor") == "x").drop("assessor")
    plain_id = judged.ingest_judgments(plain, warehouse)
    assert plain_id == judged.evaluate(plain, {"q": {"a": 1.0}}).provenance.judgments.id
    assert judged.Warehouse(warehouse).assessors(plain_id).height == 0


def test_evaluate_rows_that_name_their_assessors_under_a_model() -> None:
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    with pytest.raises(judged.InputError, match="has grades of 2 assessors: declare how they become one grade"):
        judged.evaluate(ROWS, run, cutoffs=(3,))
    under_set = judged.evaluate(ROWS, run, cutoffs=(3,), assessor_model="set")
    low, value, high = under_set.summary.select("value_min", "value", "value_max").row(0)
    assert low == pytest.approx(value) and value < high  # a: 1 or 3; the value takes the consensus, the lower
    assert judged.evaluate(ROWS, run, cutoffs=(3,), assessor_model="max").summary["value"][0] == pytest.approx(high)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: judged.agreement(FILES, assessors=["a"]), judged.SpecError,
     "2 judgments file(s) and 1 assessors name(s)"),
    (lambda: judged.agreement(FILES, assessors="synthetic_a"), judged.SpecError, "assessors must be a list of names"),
    (lambda: judged.agreement(ROWS, assessors=["x"]), judged.SpecError, "the rows of a frame name theirs"),
    (lambda: judged.agreement(ROWS, rel=True), judged.SpecError, "rel must be a grade"),
    (lambda: judged.agreement(ROWS, rel=0), judged.SpecError, "rel 0: the lowest relevant grade is at least 1"),
    (lambda: judged.agreement(ROWS, assessor_kinds={"x": "robot"}), judged.SpecError, "kind 'robot' is none of"),
    (lambda: judged.agreement(ROWS, assessor_kinds={"w": "human"}), judged.InputError,
     "a kind is declared for assessor(s) 'w'"),
    (lambda: judged.agreement(ROWS.drop("assessor")), judged.InputError, "names no assessor"),
    (lambda: judged.agreement(ROWS.with_columns(assessor=pl.Series(["x", None, "x", "y", "x"]))), judged.InputError,
     "row 2: assessor is null while other rows name theirs"),
    (lambda: judged.agreement(pl.concat([ROWS, ROWS.head(1)])), judged.InputError,
     "assessor 'x' grades query 'q', document 'a' twice, at rows 1 and 6"),
    (lambda: judged.evaluate(ROWS, {"q": {"a": 1.0}}, assessor_model="single:z"), judged.InputError,
     "assessor model single:z takes the grades of an assessor the judgments do not name: they name x, y"),
    (lambda: judged.evaluate(ROWS.drop("assessor").head(1), {"q": {"a": 1.0}}, assessor_model="single:x"),
     judged.InputError, "they name no assessor"),
    (lambda: judged.ingest_judgments(ROWS, "w", metadata={"relevant_from": 0}), judged.SpecError,
     "metadata: relevant_from"),
    (lambda: judged.ingest_judgments(ROWS, "w", metadata="toy"), judged.SpecError, "metadata must be a dict"),
])
def test_refusals(call: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as raised:
        call()  # type: ignore[operator]
    assert message in str(raised.value) and "\n" not in str(raised.value)
