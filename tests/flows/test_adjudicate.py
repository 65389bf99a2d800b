"""Adjudication end to end, in process (no Prefect): `judged worklist --objective adjudicate` on a stored set of two
assessors lists the one disputed passage that decides the pair of runs (the hand-worked case of
tests/transforms/test_worklist_adjudicate.py); `judged ingest-judgments --extends --adjudicator` stores the
adjudicator's answer as a new version with lineage, kind `adjudicator`, beside the assessors' rows; the same
objective then finds the pair decided. And `judged.worklist(..., objective="adjudicate")`, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner, Result

import judged
from judged.flows.cli.app import app
from judged.flows.pipeline.judging import make_worklist
from judged.flows.store.assessor_files import load_judgments
from judged.flows.store.readers import load_table
from judged.flows.store.warehouse import Store
from judged.schemas.provenance import JudgmentSetMetadata, RunMetadata
from judged.schemas.spec import build_spec
from tests.helpers import tree_listing

# d1: both say 1; d2: a says 0, b says 2. Run A retrieves d2 only, run B d1 only (nDCG@10, gains linear):
# d2 = 0 gives B - A = 1, d2 = 2 gives B - A = -0.38009; adjudicated, the pair is decided either way.
A = "q1 0 d1 1\nq1 0 d2 0\n"
B = "q1 0 d1 1\nq1 0 d2 2\n"


def cli(*args: object) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args], env={"COLUMNS": "200", "NO_COLOR": "1"})


@pytest.fixture
def store(tmp_path: Path) -> Store:
    (tmp_path / "a.txt").write_text(A)
    (tmp_path / "b.txt").write_text(B)
    (tmp_path / "A.run").write_text("q1 Q0 d2 1 1.0 A\n")
    (tmp_path / "B.run").write_text("q1 Q0 d1 1 1.0 B\n")
    warehouse = Store(tmp_path / "warehouse")
    metadata = JudgmentSetMetadata(name="toy", version="v1")
    warehouse.store_table(load_judgments([tmp_path / "a.txt", tmp_path / "b.txt"], ["a", "b"], metadata,
                                         kinds={"a": "human", "b": "human"}))
    for name in ("A", "B"):
        warehouse.store_table(load_table(tmp_path / f"{name}.run", "run", RunMetadata(tag=name)))
    return warehouse


def test_the_disputed_passage_is_listed_adjudicated_and_the_pair_decided(store: Store, tmp_path: Path) -> None:
    result = cli("worklist", "--judgments", "toy", "--warehouse", store.root, "--objective", "adjudicate",
                 "--assessor-model", "set", "--format", "json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["objective"] == "adjudicate"
    assert [(r["query_id"], r["doc_id"]) for r in found["rows"]] == [("q1", "d2")]
    assert (found["pairs"], found["pairs_decided"], found["pairs_could_decide"]) == (1, 0, 1)
    assert "0 of 1 pair of runs decided now; adjudicating the listed documents could decide 1 more" in result.stderr

    (tmp_path / "answers.txt").write_text("q1 0 d2 2\n")
    result = cli("ingest-judgments", tmp_path / "answers.txt", "--warehouse", store.root, "--extends", "toy",
                 "--version", "v2", "--adjudicator", "carol", "--worklist", found["worklist_id"])
    assert result.exit_code == 0, result.output
    assert "1 pair added, 0 revised, 0 confirmed" in result.stdout
    v2 = store.resolve_judgment_set("toy")
    rows = store.load_stored("judgments", v2).frame
    # The assessors' rows stay; the adjudicator's is one more row, of kind adjudicator.
    assert rows.sort("doc_id", "assessor").select("doc_id", "assessor", "relevance").rows() == [
        ("d1", "a", 1), ("d1", "b", 1), ("d2", "a", 0), ("d2", "b", 2), ("d2", "carol", 2)]
    assert store.load_stored("judgments", v2).metadata.assessor_kinds == {"a": "human", "b": "human",
                                                                           "carol": "adjudicator"}
    lineage = pl.read_parquet(store.root / "judgment_lineage" / f"{v2}.parquet")
    assert lineage.select("parent_version", "version", "n_added", "worklist_id").row(0) == (
        "v1", "v2", 1, found["worklist_id"])

    after = make_worklist(store, "toy@v2", build_spec("judged", cutoffs=(10,), assessor_model="set"), 5, [], [],
                          objective="adjudicate")
    assert after.rows.height == 0
    assert after.pairs.select("decided", "decided_direction").row(0) == (True, "baseline")  # A ahead by 0.38
    assert after.notes == ("every one of the 1 pair of runs is decided: no dispute needs adjudicating",)


def test_refusals_are_one_line_and_store_nothing(store: Store, tmp_path: Path) -> None:
    before = tree_listing(store.root)
    result = cli("worklist", "--judgments", "toy", "--warehouse", store.root, "--objective", "adjudicate",
                 "--assessor-model", "median")
    assert result.exit_code == 2
    assert result.stderr == ("judged: error: --objective: the adjudicate objective settles the disputes an assessor "
                             "model of set or range leaves open: give --assessor-model set (or range)\n")
    (tmp_path / "answers.txt").write_text("q1 0 d2 2\n")
    result = cli("ingest-judgments", tmp_path / "answers.txt", "--warehouse", store.root, "--extends", "toy",
                 "--version", "v2", "--adjudicator", "a")
    assert result.exit_code == 2
    assert "'a' is one of the assessors of" in result.stderr and result.stderr.count("\n") == 1
    result = cli("ingest-judgments", tmp_path / "answers.txt", "--warehouse", store.root, "--extends", "toy",
                 "--version", "v2")
    assert result.exit_code == 2 and "its answers are an adjudicator's; give --adjudicator NAME" in result.stderr
    assert tree_listing(store.root) == before


def test_the_api_lists_the_disputed_passage() -> None:
    rows = pl.DataFrame({"query_id": ["q1"] * 4, "doc_id": ["d1", "d1", "d2", "d2"], "relevance": [1, 1, 0, 2],
                         "assessor": ["a", "b", "a", "b"]})
    runs = {"A": {"q1": {"d2": 1.0}}, "B": {"q1": {"d1": 1.0}}}
    found = judged.worklist(rows, runs, objective="adjudicate", assessor_model="set")
    assert found.rows() == [("q1", "d2", pytest.approx(1.0), 1)]
    with pytest.raises(judged.SpecError, match="give --assessor-model set"):
        judged.worklist(rows, runs, objective="adjudicate", assessor_model="max")
