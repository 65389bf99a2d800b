"""`judged agreement` in process (no Prefect: it reads and prints): a set read from one file per assessor or stored in
a warehouse, its table and JSON, the threshold of relevance (declared, --rel, or 1), and the refusals, each one
line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from judged.flows.cli import app
from judged.flows.store.assessor_files import load_judgments
from judged.flows.store.warehouse import Store
from tests.conftest import REPO
from tests.helpers import assert_refused

EXAMPLE = REPO / "data" / "assessors-example"
FILES = [EXAMPLE / "synthetic_a.txt", EXAMPLE / "synthetic_b.txt"]
NAMES = ["--assessor", "synthetic_a", "--assessor", "synthetic_b"]
# Four shared pairs: a = 0, 1, 2, 2 and b = 0, 1, 1, 2 (the hand-worked case of tests/transforms/test_assessors.py).
A = "q 0 1 0\nq 0 2 1\nq 0 3 2\nq 0 4 2\n"
B = "q 0 1 0\nq 0 2 1\nq 0 3 1\nq 0 4 2\n"


def judged(*args: object) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args], env={"COLUMNS": "200", "NO_COLOR": "1"})


@pytest.fixture
def hand(tmp_path: Path) -> list[Path]:
    (tmp_path / "a.txt").write_text(A)
    (tmp_path / "b.txt").write_text(B)
    return [tmp_path / "a.txt", tmp_path / "b.txt"]


def test_files_named_per_assessor_print_the_hand_computed_values(hand: list[Path]) -> None:
    result = judged("agreement", *hand, "--assessor", "a", "--assessor", "b", "--rel", "2", "--format", "json")
    assert result.exit_code == 0, result.output
    (found,) = json.loads(result.stdout)
    assert found["relevant_from"] == 2
    assert [row["assessor"] for row in found["assessors"]] == ["a", "b"]
    (pair,) = found["pairs"]
    assert (pair["assessor_a"], pair["assessor_b"], pair["shared_pairs"], pair["agreement"]) == ("a", "b", 4, 0.75)
    assert pair["kappa"] == pytest.approx(0.4375 / 0.6875)
    assert pair["weighted_kappa"] == pytest.approx(1 - 0.25 / 0.875)
    assert pair["kappa_relevant"] == pytest.approx(0.5)
    assert found["alpha"] is not None
    at_one = json.loads(judged("agreement", *hand, "--assessor", "a", "--assessor", "b", "--format", "json").stdout)
    # Relevant at 1: a = 0, 1, 1, 1 and b = 0, 1, 1, 1.
    assert at_one[0]["relevant_from"] == 1 and at_one[0]["pairs"][0]["kappa_relevant"] == pytest.approx(1.0)


def test_the_table_names_the_set_its_assessors_and_alpha() -> None:
    result = judged("agreement", *FILES, *NAMES)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("judgment set assessors-example@synthetic-1 (")
    assert lines[1].split() == ["assessor", "kind", "judgments", "unresolved", "queries"]
    assert lines[2].split() == ["synthetic_a", "human", "80", "0", "6"]
    assert lines[3].split() == ["synthetic_b", "model:synthetic-rule", "75", "0", "6"]
    # The sidecars declare relevant_from = 2: the column says so.
    assert "kappa relevant (grade >= 2)" in result.stdout
    assert lines[-1].startswith("Krippendorff's alpha (ordinal) over all 2 assessors: 0.")


def test_a_stored_set_by_name_and_the_threshold_it_declares(tmp_path: Path) -> None:
    store = Store(tmp_path / "w")
    stored = store.store_table(load_judgments(FILES, ["synthetic_a", "synthetic_b"])).id
    store.refresh_catalog()
    by_name = judged("agreement", "assessors-example", "--warehouse", store.root, "--format", "json")
    by_label = judged("agreement", "assessors-example@synthetic-1", "--warehouse", store.root, "--format", "json")
    from_files = judged("agreement", *FILES, *NAMES, "--format", "json")
    assert by_name.exit_code == 0, by_name.output
    assert json.loads(by_name.stdout) == json.loads(by_label.stdout) == json.loads(from_files.stdout)
    assert json.loads(by_name.stdout)[0]["judgment_set_id"] == stored
    assert_refused(judged("agreement", stored, "--warehouse", store.root, "--rel", "1"), 2,
                   "declares relevant_from = 2", "--rel 1")
    assert judged("agreement", stored, "--warehouse", store.root, "--rel", "2").exit_code == 0


@pytest.mark.parametrize(("arguments", "code", "message"), [
    (["{a}"], 1, "names no assessor (its grades are one unnamed assessor's): nothing to compare"),
    (["{a}", "{b}"], 2, "2 judgments files are one set only when each names its assessor"),
    (["{a}", "{b}", "--assessor", "a"], 2, "2 judgments file(s) and 1 --assessor name(s)"),
    (["{a}", "{b}", "--assessor", "a", "--assessor", "b", "--assessor-kind", "a=robot"], 2,
     "--assessor-kind 'a=robot': kind 'robot' is none of human, model:<name>, adjudicator"),
    (["{a}", "{b}", "--assessor", "a", "--assessor", "b", "--assessor-kind", "c=human"], 1,
     "a kind is declared for assessor(s) 'c'"),
    (["{a}", "{b}", "--assessor", "a", "--assessor", "b", "--rel", "0"], 2, "--rel 0 must be positive"),
    (["{a}", "{b}", "--assessor", "a", "--assessor", "b", "--format", "csv"], 2, "--format must be table or json"),
    (["{a}", "some-set"], 2, "give judgment files (one set) or stored judgment sets (with --warehouse), not both"),
    (["some-set"], 1, "some-set: no such file (a stored judgment set's name or id needs --warehouse)"),
])
def test_refusals_are_one_line(hand: list[Path], arguments: list[str], code: int, message: str) -> None:
    given = [argument.format(a=hand[0], b=hand[1]) for argument in arguments]
    assert_refused(judged("agreement", *given), code, message)


def test_a_pair_one_assessor_grades_twice_is_named_by_file_and_line(hand: list[Path]) -> None:
    hand[1].write_text(B + "q 0 2 3\n")
    assert_refused(judged("agreement", *hand, "--assessor", "a", "--assessor", "b"), 1,
                   "assessor 'b' grades query 'q', document '2' twice with different grades, at lines 2 and 5",
                   f"{hand[1]}, line 5")


def test_a_stored_set_without_assessors_and_an_unknown_one(tmp_path: Path, hand: list[Path]) -> None:
    store = Store(tmp_path / "w")
    plain = store.store_table(load_judgments(hand[:1])).id
    store.refresh_catalog()
    assert_refused(judged("agreement", plain, "--warehouse", store.root), 1, "names no assessor")
    assert_refused(judged("agreement", "nothing", "--warehouse", store.root), 1,
                   "no judgment set with id or name 'nothing'")
    assert_refused(judged("agreement", "x", "--warehouse", tmp_path / "none"), 1, "no such folder")
    assert_refused(judged("agreement", plain, "--warehouse", store.root, "--assessor", "a"), 2,
                   "--assessor and --assessor-kind name the assessors of files")
