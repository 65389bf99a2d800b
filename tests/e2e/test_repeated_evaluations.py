"""The pipeline is keyed by evaluation id: the same evaluation asked for twice in one flow (the same run twice, the
same spec twice, or two evaluations of one run rebased onto one basis) is planned, computed and stored once, and
listed at every position it was asked for.

Inputs are the seed fixture (data/seed: one query, documents graded 3, 0, 2 in returned order; NDCG@10 = 0.9386).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prefect import flow
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.engine.compare import rebase_basis
from judged.flows.pipeline.evaluation import EvaluationReport
from judged.flows.pipeline.flows import evaluate_flow, evaluate_runs, ingest_judgments, ingest_run, nightly
from judged.flows.store.sql import run_query
from judged.flows.store.warehouse import STAGING, Store
from judged.schemas.spec import PRESETS, EvaluationSpec
from tests.conftest import REPO

SEED_QRELS = REPO / "data" / "seed" / "qrels.txt"
SEED_RUN = REPO / "data" / "seed" / "run.txt"
SEED_NDCG_10 = 0.9386
SPEC = PRESETS["trec_eval"].with_options(cutoffs=(10,))
runner = CliRunner()


def stored_evaluations(warehouse: Path) -> list[tuple[str, int]]:
    """(evaluation id, its per-query rows) of every stored evaluation, through the catalog's views."""
    return run_query(Store(warehouse), "SELECT evaluation_id, (SELECT count(*) FROM per_query p WHERE "
                                       "p.evaluation_id = e.evaluation_id) FROM evaluations e").rows


def test_evaluate_the_same_run_twice_into_a_warehouse(prefect_harness: str, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    arguments = ["evaluate", str(SEED_QRELS), str(SEED_RUN), str(SEED_RUN), "--warehouse", str(warehouse)]
    result = runner.invoke(app, arguments)

    assert result.exit_code == 0, result.output
    ((identifier, per_query_rows),) = stored_evaluations(warehouse)
    assert per_query_rows > 0
    # Both positions are listed, each as the one evaluation stored.
    assert result.stderr.count(f"evaluation {identifier} (stored)") == 2
    assert result.stdout.count("seed: nDCG@5,10,") == 2  # each run's table: the run is named "seed"
    # The catalog was regenerated after the evaluation was stored (the flow's last steps ran).
    store = Store(warehouse)
    assert store.catalog.stat().st_mtime_ns >= store.evaluation_record(identifier).stat().st_mtime_ns
    assert list((warehouse / STAGING).iterdir()) == []


def test_a_stored_evaluation_is_reused_at_both_positions(prefect_harness: str, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    reports = evaluate_flow(str(SEED_QRELS), [str(SEED_RUN)], SPEC.canonical_json(), str(warehouse))
    (first,) = reports
    # A second flow with the run twice reuses the stored evaluation at both positions.
    again = evaluate_flow(str(SEED_QRELS), [str(SEED_RUN), str(SEED_RUN)], SPEC.canonical_json(), str(warehouse))
    assert again == [EvaluationReport(first.evaluation_id, False, first.run_id, first.judgment_set_id)] * 2
    assert [identifier for identifier, _ in stored_evaluations(warehouse)] == [first.evaluation_id]


def test_nightly_with_a_preset_given_twice(prefect_harness: str, tmp_path: Path) -> None:
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.run").write_text(SEED_RUN.read_text())
    result = runner.invoke(app, ["nightly", "--inbox", str(inbox), "--judgments", str(SEED_QRELS),
                                 "--preset", "trec_eval", "--preset", "trec_eval", "--warehouse", str(warehouse)])

    assert result.exit_code == 0, result.output
    ((identifier, _),) = stored_evaluations(warehouse)
    rows = run_query(Store(warehouse), "SELECT file, outcome, evaluation_ids FROM nightly").rows
    assert rows == [("a.run", "evaluated", [identifier, identifier])]
    assert sorted(p.name for p in (inbox / "processed").iterdir()) == ["a.run"]
    assert list((warehouse / STAGING).iterdir()) == []


def test_nightly_flow_with_one_spec_twice(prefect_harness: str, tmp_path: Path) -> None:
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.run").write_text(SEED_RUN.read_text())
    report = nightly(str(inbox), str(SEED_QRELS), [SPEC.canonical_json()] * 2, str(warehouse))

    assert report.rejected == {}
    first, second = report.evaluated
    assert first == second and first.created
    value = run_query(Store(warehouse), "SELECT value FROM summary WHERE cutoff = 10").rows
    assert value == [(pytest.approx(SEED_NDCG_10, abs=5e-5),)]


@flow(name="rebase-test")
def _rebased(warehouse: str, evaluation_ids: list[str], spec_json: str) -> list[EvaluationReport]:
    """What `compare_flow` does with `rebase` before it compares: each evaluation's run evaluated on one basis."""
    spec = EvaluationSpec.from_canonical_json(spec_json)
    judgment_set_id, run_ids, chosen = rebase_basis(Store(warehouse), evaluation_ids, spec)
    return evaluate_runs(warehouse, run_ids, judgment_set_id, [chosen])


def test_rebasing_two_evaluations_of_one_run(prefect_harness: str, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    judgments = ingest_judgments(str(SEED_QRELS), str(warehouse)).id
    run = ingest_run(str(SEED_RUN), str(warehouse)).id
    evaluations = [evaluate_flow(judgments, [run], spec.canonical_json(), str(warehouse))[0].evaluation_id
                   for spec in (SPEC, SPEC.with_options(cutoffs=(3,)))]
    # Rebased under a third spec: one evaluation to compute, asked for at both positions.
    reports = _rebased(str(warehouse), evaluations, SPEC.with_options(cutoffs=(5,)).canonical_json())

    first, second = reports
    assert first == second and first.created and first.run_id == run and first.evaluation_id not in evaluations
    assert len(stored_evaluations(warehouse)) == 3
    assert list((warehouse / STAGING).iterdir()) == []
