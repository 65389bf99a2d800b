"""The first night of docs/operations.md, step by step from an empty folder, after the quick start left judged's
local Prefect server running (a user's first start: a new Prefect home, its database created): the judgments
ingested, `judged serve` registering the deployment with its cron schedule on that server (not a second one: issue
38) and creating the inbox, a run file dropped into the inbox, one run triggered with `prefect deployment run`
against `judged server url`, the night found in the warehouse, its report where serve's terminal says, the run's
logs in the Prefect API, and serve stopped by SIGTERM within 5 s. The test stops every process it started."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl
import pytest

from judged.flows.pipeline.server import read_state
from tests.conftest import REPO, servers_on, stop_process_group

# Starting a server is what these tests check: their commands do not get the session's server.
pytestmark = pytest.mark.own_prefect_server

BIN = Path(sys.executable).parent
CRON = "0 2 * * *"


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


@pytest.fixture
def user(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A new user's Prefect home and environment (no PREFECT_API_URL, judged's local server); the local server
    stopped at the end, by `judged server stop`, else by the process group its state file names."""
    home = tmp_path / "prefect-home"
    env = {name: value for name, value in os.environ.items()
           if name not in ("PREFECT_API_URL", "JUDGED_PREFECT_SERVER", "JUDGED_SERVER_IDLE_MINUTES")
           and not name.startswith("PREFECT_LOGGING_")}  # a user's shell: without the test session's quiet logging
    env |= {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    try:
        yield home, env
    finally:
        subprocess.run([str(BIN / "judged"), "server", "stop"], env=env, capture_output=True, timeout=120)
        state = read_state(home)
        if state is not None:
            try:
                os.killpg(state.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def first_night() -> list[str]:
    """The first-night commands of docs/operations.md, as written (one per line, comments dropped)."""
    page = (REPO / "docs" / "operations.md").read_text()
    section = page[page.index("**A first night, from an empty folder.**"):]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_first_night_on_the_local_server(user: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    home, env = user
    steps = first_night()
    folder = tmp_path / "night"
    folder.mkdir()  # the empty folder
    env |= {"CLONE": str(REPO), "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}

    def command(*lines: str) -> list[str]:
        # Run by bash as written; the clone's .venv is this test's environment, $CLONE this repository.
        return ["bash", "-c", "\n".join(line.replace("$CLONE/.venv/bin/", f"{BIN}/") for line in lines)]

    def run(*lines: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(command(*lines), env=env, cwd=folder, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (lines, done.stdout, done.stderr)
        return done

    # What the quick start leaves behind: judged's local server, running.
    assert run(f"{BIN}/judged server start").returncode == 0
    quick_start = read_state(home)
    assert quick_start is not None
    api = quick_start.url

    assert "judged ingest-judgments" in steps[0]
    run(steps[0])
    assert "judged serve" in steps[1]
    log = (tmp_path / "serve.log").open("w")
    serving = subprocess.Popen(command(f"exec {steps[1]}"), env=env, stdout=log, stderr=subprocess.STDOUT,
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

        terminal_2 = steps[2]
        assert terminal_2 == "export PREFECT_API_URL=$($CLONE/.venv/bin/judged server url)"
        run(terminal_2, steps[3])  # cp: the run and its sidecar, into the inbox serve created
        assert sorted(p.name for p in inbox.iterdir() if p.is_file()) == ["input.p_bm25.gz", "input.p_bm25.gz.meta.toml"]
        triggered = run(terminal_2, steps[4])  # prefect deployment run nightly/judged-nightly
        found = re.search(r"UUID: ([0-9a-f-]{36})", triggered.stdout)
        assert found, triggered.stdout
        flow_run_id = found.group(1)
        state = wait_for(
            lambda: (s := httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=5).json()["state"])
            and s["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") and s,
            300, "the triggered flow run", [serving],
        )
        assert state["type"] == "COMPLETED", (tmp_path / "serve.log").read_text()[-3000:]
        nightly = run(terminal_2, steps[5])  # judged sql "SELECT file, outcome, moved_to FROM nightly"
        assert servers_on(home) == [quick_start.pid]  # one server on the Prefect database throughout
        asked = time.monotonic()
        serving.send_signal(signal.SIGTERM)
        serving.wait(timeout=30)
        assert time.monotonic() - asked <= 5.0
    finally:
        stop_process_group(serving)
        log.close()

    assert "input.p_bm25.gz" in nightly.stdout and "evaluated" in nightly.stdout
    served = (tmp_path / "serve.log").read_text()
    assert f"created {Path('inbox') / 'processed'}" in served
    assert f"serving the nightly job judged-nightly ({CRON}, UTC) on {api}" in served
    assert flow_run_id in served or "p_bm25" in served  # the terminal shows the run it started
    assert "Completed" in served, served[-3000:]  # and its outcome
    report = folder / "warehouse" / "reports" / f"{flow_run_id}.html"
    assert f"the night's report: {report}" in served and report.is_file()  # where the report is
    assert "serve stopped on SIGTERM" in served

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
