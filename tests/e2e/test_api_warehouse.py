"""`judged.Warehouse` against `judged.evaluate`: a result the flow stored reads back with the id, numbers and spec
the API computes from the same files, and bad ids are one-line input errors. (The Python examples of
docs/python-api.md run in tests/docs.)"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import judged
from judged.flows.cli.app import app
from tests.conftest import SAMPLE


@pytest.fixture(scope="module")
def workspace(prefect_harness: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("api-warehouse")
    result = CliRunner().invoke(app, ["evaluate", str(SAMPLE / "qrels.dl20-passage.txt"),
                                      str(SAMPLE / "runs" / "input.p_bm25.gz"), "--preset", "trec_eval",
                                      "--cutoffs", "10,100", "--warehouse", str(root / "warehouse")],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return root


def test_stored_results_match_the_api(workspace: Path) -> None:
    computed = judged.evaluate(SAMPLE / "qrels.dl20-passage.txt", SAMPLE / "runs" / "input.p_bm25.gz",
                               preset="trec_eval", cutoffs=(10, 100))
    warehouse = judged.Warehouse(workspace / "warehouse")
    evaluations = warehouse.evaluations()
    assert evaluations["evaluation_id"].to_list() == [computed.evaluation_id]
    summary = warehouse.summary(computed.evaluation_id)
    assert summary["value"].to_list() == computed.summary["value"].to_list()
    assert summary["label"].to_list() == ["nDCG@10[trec_eval:gain=linear]", "nDCG@100[trec_eval:gain=linear]"]
    per_query = warehouse.per_query(computed.evaluation_id)
    columns = ["query_id", "measure", "cutoff", "value"]
    assert per_query.select(columns).equals(computed.per_query.select(columns))

    stored = warehouse.evaluation(computed.evaluation_id)
    assert stored.spec == computed.spec and stored.label == computed.label
    assert stored.per_query.equals(computed.per_query) and stored.summary.equals(computed.summary)
    assert stored.provenance.run.id == computed.provenance.run.id
    assert stored.provenance.judgments.content_sha256 == computed.provenance.judgments.content_sha256

    runs, judgment_sets = warehouse.runs(), warehouse.judgment_sets()
    assert runs["run_id"].to_list() == [computed.provenance.run.id] and runs["tag"].to_list() == ["p_bm25"]
    assert judgment_sets["n_rows"].to_list() == [11386]  # NIST's 2020 passage judgments
    assert isinstance(runs, pl.DataFrame) and runs.to_pandas().shape[0] == 1


def test_unknown_evaluation_is_an_input_error(workspace: Path) -> None:
    warehouse = judged.Warehouse(workspace / "warehouse")
    with pytest.raises(judged.InputError, match="no evaluation with id or id prefix '0000'"):
        warehouse.per_query("0000")
    with pytest.raises(judged.InputError, match="no evaluation with id or id prefix '0000'"):
        warehouse.evaluation("0000")


def test_an_evaluation_is_found_by_a_unique_start_of_its_id(workspace: Path) -> None:
    """As `judged show` finds it (before, the API took whole ids only)."""
    warehouse = judged.Warehouse(workspace / "warehouse")
    (evaluation_id,) = warehouse.evaluations()["evaluation_id"].to_list()
    stored = warehouse.evaluation(evaluation_id[:8])
    assert stored.evaluation_id == evaluation_id
    assert warehouse.summary(evaluation_id[:8]).equals(warehouse.summary(evaluation_id))
    assert warehouse.per_query(evaluation_id[:6]).height == warehouse.per_query(evaluation_id).height


def test_an_id_that_is_a_path_or_not_text_is_an_input_error(workspace: Path) -> None:
    """`../runs/<run id>` would name the run's files beside the evaluations' (a Polars error before)."""
    warehouse = judged.Warehouse(workspace / "warehouse")
    run_id = warehouse.runs()["run_id"][0]
    for evaluation_id in (f"../runs/{run_id}", f"../run_rows/{run_id}", "/etc", 5):
        with pytest.raises(judged.InputError, match="an evaluation id is hexadecimal digits"):
            warehouse.evaluation(evaluation_id)  # type: ignore[arg-type]
        with pytest.raises(judged.InputError, match="an evaluation id is hexadecimal digits"):
            warehouse.summary(evaluation_id)  # type: ignore[arg-type]
    with pytest.raises(judged.InputError, match="give the warehouse's folder as a path, not a int"):
        judged.Warehouse(5)  # type: ignore[arg-type]


def test_every_stored_table_keeps_its_declared_contract(workspace: Path) -> None:
    from judged.flows.store.kinds import STORED_TABLES

    root = workspace / "warehouse"
    checked = []
    for name, table in STORED_TABLES.items():
        files = [path for path in sorted(root.glob(table.glob)) if "_empty" not in path.as_posix()]
        if not files:
            continue
        frame = pl.concat([pl.read_parquet(path) for path in files], how="vertical")
        # the files' own contract: a view may add columns (the judgment version) that no file holds
        assert table.contract.problems(frame) == [], name
        checked.append(name)
    assert set(checked) >= {"judgment_sets", "judgments", "runs", "run_rows", "evaluations", "per_query", "summary"}
