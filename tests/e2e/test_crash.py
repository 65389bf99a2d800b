"""A process killed in the middle of writing an evaluation leaves nothing partial visible; a rerun completes it.

The evaluate flow runs in a subprocess (against the session's Prefect server) whose Parquet writer stops right after
writing one file in its staging folder; the test kills it there with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from judged.flows.pipeline.flows import evaluate_flow, ingest_judgments, ingest_run
from judged.flows.store.sql import open_readonly
from judged.flows.store.warehouse import STAGING, Store
from judged.flows.engine.versions import implementation_version
from judged.schemas.provenance import evaluation_id
from judged.schemas.spec import PRESETS
from tests.conftest import REPO, SAMPLE

SPEC = PRESETS["trec_eval"].with_options(cutoffs=(10, 100))

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import polars as pl

    pause_at, marker = sys.argv[1], Path(sys.argv[2])
    write = pl.DataFrame.write_parquet

    def write_then_hang(self, file, *args, **kwargs):
        write(self, file, *args, **kwargs)
        if "/{staging}/" in str(file) and f"/{{pause_at}}/" in str(file):
            marker.write_text(str(file))
            time.sleep(600)

    pl.DataFrame.write_parquet = write_then_hang
    from judged.flows.pipeline.flows import evaluate_flow
    evaluate_flow(sys.argv[3], [sys.argv[4]], sys.argv[5], sys.argv[6])
    """
).format(staging=STAGING)


@pytest.mark.parametrize("pause_at", ["per_query", "summary", "evaluations"])
def test_killed_while_writing_then_rerun(prefect_harness: str, tmp_path: Path, pause_at: str) -> None:
    warehouse = tmp_path / "warehouse"
    judgments = ingest_judgments(str(SAMPLE / "qrels.dl20-passage.txt"), str(warehouse)).id
    run = ingest_run(str(SAMPLE / "runs" / "input.p_bm25.gz"), str(warehouse)).id
    expected_id = evaluation_id(run, judgments, SPEC.spec_hash, implementation_version())
    marker = tmp_path / "paused"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = os.environ | {"PREFECT_API_URL": prefect_harness, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, str(script), pause_at, str(marker), judgments, run, SPEC.canonical_json(), str(warehouse)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 180
        while not marker.exists():
            if child.poll() is not None:
                pytest.fail(f"child ended before the write: {child.stdout.read().decode()[-2000:]}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                pytest.fail("child never reached the write")
            time.sleep(0.2)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()

    store = Store(warehouse)
    assert f"/{STAGING}/" in marker.read_text()
    assert not store.has_evaluation(expected_id)
    analyst = open_readonly(store)
    for table in ("evaluations", "per_query", "summary"):
        assert analyst.execute(f"SELECT count(*) FROM {table} WHERE evaluation_id = ?", [expected_id]).fetchall() == [(0,)]
    analyst.close()

    (report,) = evaluate_flow(judgments, [run], SPEC.canonical_json(), str(warehouse))
    assert (report.evaluation_id, report.created) == (expected_id, True)
    analyst = open_readonly(store)
    assert analyst.execute("SELECT count(*) FROM per_query WHERE evaluation_id = ?", [expected_id]).fetchall() == [(400,)]
    value = analyst.execute("SELECT value FROM summary WHERE evaluation_id = ? AND cutoff = 10", [expected_id]).fetchall()
    analyst.close()
    assert value[0][0] == pytest.approx(0.4796, abs=5e-5)
    # No view ever read the killed writer's staging, and the rerun removed it (no live process held it).
    assert list((warehouse / STAGING).iterdir()) == []
