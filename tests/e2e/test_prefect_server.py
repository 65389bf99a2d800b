"""The README's first night on a real Prefect server, step by step from an empty folder: the server started here on
a loopback port, the judgments ingested, `judged serve` registering the deployment with its cron schedule (and
creating the inbox), a run file dropped into the inbox, one run triggered with `prefect deployment run`, the night
found in the warehouse and the run's logs in the Prefect API. The test stops every process it started."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl
import pytest

from tests.conftest import REPO, SAMPLE

# Starting a server is what these tests check: their commands do not get the session's server.
pytestmark = pytest.mark.own_prefect_server

BIN = Path(sys.executable).parent
CRON = "0 2 * * *"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, timeout: float, what: str, processes: list[subprocess.Popen]):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                pytest.fail(f"{what}: {process.args[:3]} exited early with {process.returncode}")
        try:
            result = condition()
        except httpx.HTTPError:
            result = None
        if result:
            return result
        time.sleep(1)
    pytest.fail(f"timed out waiting for {what}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = os.environ | {
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        wait_for(lambda: httpx.get(f"{api}/health", timeout=5).json() is True, 180, "the Prefect server", [process])
        yield api, env
    finally:
        stop(process)
        log.close()


def readme_first_night() -> list[str]:
    """The README's first-night commands, as written (one per line, comments dropped)."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("**A first night, from an empty folder.**"):]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_first_night_on_a_real_server(server: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    api, env = server
    steps = readme_first_night()
    assert steps[0].startswith("$CLONE/.venv/bin/prefect server start")  # the fixture's server, on a free port
    folder = tmp_path / "night"
    folder.mkdir()  # the empty folder
    # A user's shell: without the quiet logging the test session sets for itself.
    env = {name: value for name, value in env.items() if not name.startswith("PREFECT_LOGGING_")}
    env |= {"CLONE": str(REPO), "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}

    def command(step: str) -> list[str]:
        # Run by bash as written; the clone's .venv is this test's environment, $CLONE this repository.
        return ["bash", "-c", step.replace("$CLONE/.venv/bin/", f"{BIN}/")]

    def run(step: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(command(step), env=env, cwd=folder, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
        return done

    assert steps[1] == "export PREFECT_API_URL=http://127.0.0.1:4200/api"  # the fixture's env has the server's URL
    run(steps[2])  # judged ingest-judgments
    assert "judged serve" in steps[3]
    log = (tmp_path / "serve.log").open("w")
    serving = subprocess.Popen(command(steps[3]), env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True, cwd=folder)
    try:
        deployment = wait_for(
            lambda: (r := httpx.get(f"{api}/deployments/name/nightly/judged-nightly", timeout=5)).status_code == 200
            and r.json(),
            180, "the nightly deployment", [serving],
        )
        assert [s["schedule"]["cron"] for s in deployment["schedules"]] == [CRON]
        assert all(s["active"] for s in deployment["schedules"])
        inbox = folder / "inbox"
        assert (inbox / "processed").is_dir() and (inbox / "rejected").is_dir()  # created by serve

        assert steps[4] == steps[1]
        run(steps[5])  # cp: the run and its sidecar, into the inbox serve created
        assert sorted(p.name for p in inbox.iterdir() if p.is_file()) == ["input.p_bm25.gz", "input.p_bm25.gz.meta.toml"]
        triggered = run(steps[6])  # prefect deployment run nightly/judged-nightly
        found = re.search(r"UUID: ([0-9a-f-]{36})", triggered.stdout)
        assert found, triggered.stdout
        flow_run_id = found.group(1)
        state = wait_for(
            lambda: (s := httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=5).json()["state"])
            and s["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") and s,
            300, "the triggered flow run", [serving],
        )
        assert state["type"] == "COMPLETED", (tmp_path / "serve.log").read_text()[-3000:]
        nightly = run(steps[7])  # judged sql "SELECT file, outcome, moved_to FROM nightly"
    finally:
        stop(serving)
        log.close()

    assert "input.p_bm25.gz" in nightly.stdout and "evaluated" in nightly.stdout
    served = (tmp_path / "serve.log").read_text()
    assert f"created {Path('inbox') / 'processed'}" in served
    assert flow_run_id in served or "p_bm25" in served  # the terminal shows the run it started
    assert "Completed" in served, served[-3000:]  # and its outcome

    warehouse = folder / "warehouse"
    evaluations = pl.read_parquet(warehouse / "evaluations" / "*.parquet")
    assert evaluations["flow_run_id"].to_list() == [flow_run_id]
    summary = pl.read_parquet(warehouse / "summary" / "*" / "*.parquet").filter(pl.col("cutoff") == 10)
    assert summary["value"].to_list() == [pytest.approx(0.4796, abs=5e-5)]  # NIST's ndcg_cut_10 for p_bm25
    moved = inbox / "processed" / "input.p_bm25.gz"
    assert moved.exists() and not (inbox / "input.p_bm25.gz").exists()

    # Provenance of the moved file: its hash, its original name, where it lies now.
    import json

    run_record = json.loads(evaluations["provenance_json"][0])["run"]
    assert run_record["original_name"] == "input.p_bm25.gz"
    assert run_record["moved_to"] == str(moved.absolute())
    assert run_record["source_sha256"] == hashlib.sha256(moved.read_bytes()).hexdigest()
    night = pl.read_parquet(warehouse / "nightly" / "*.parquet").filter(pl.col("flow_run_id") == flow_run_id)
    assert night.select("file", "outcome", "moved_to", "source_sha256").rows() == [
        ("input.p_bm25.gz", "evaluated", str(moved.absolute()), run_record["source_sha256"])]

    # Logs of the flow run, through the Prefect API.
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    def flow_run_logs() -> list[str]:
        with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[UUID(flow_run_id)])))
        return [entry.message for entry in logs]

    messages = wait_for(lambda: (m := flow_run_logs()) and any("moved to" in line for line in m) and m,
                        60, "the flow run's logs", [])
    text = "\n".join(messages)
    assert "1 run file waiting in" in text
    assert "input.p_bm25.gz evaluated (1 evaluation), moved to" in text
    assert "stored run" in text and "200000 rows" in text  # the ingest task
    assert "catalog regenerated" in text
