"""The nightly deployment on a real Prefect server: started here on a loopback port, the deployment registered by
`judged serve` with its cron schedule, one run triggered through the server, results found in the warehouse.
The test stops every process it started."""

from __future__ import annotations

import os
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

from tests.conftest import SAMPLE

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


def test_nightly_deployment_on_a_real_server(server: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    api, env = server
    inbox, warehouse = tmp_path / "inbox", tmp_path / "warehouse"
    inbox.mkdir()
    run_file = SAMPLE / "runs" / "input.p_bm25.gz"
    shutil.copy(run_file, inbox)
    shutil.copy(run_file.with_name(run_file.name + ".meta.toml"), inbox)
    log = (tmp_path / "serve.log").open("w")
    serving = subprocess.Popen(
        [str(BIN / "judged"), "serve", "--cron", CRON, "--inbox", str(inbox), "--warehouse", str(warehouse),
         "--judgments", str(SAMPLE / "qrels.dl20-passage.txt"), "--cutoffs", "10,100", "--preset", "trec_eval"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path,
    )
    try:
        deployment = wait_for(
            lambda: (r := httpx.get(f"{api}/deployments/name/nightly/judged-nightly", timeout=5)).status_code == 200
            and r.json(),
            180, "the nightly deployment", [serving],
        )
        assert [s["schedule"]["cron"] for s in deployment["schedules"]] == [CRON]
        assert all(s["active"] for s in deployment["schedules"])

        created = httpx.post(f"{api}/deployments/{deployment['id']}/create_flow_run", json={}, timeout=30)
        created.raise_for_status()
        flow_run_id = created.json()["id"]
        state = wait_for(
            lambda: (s := httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=5).json()["state"])
            and s["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") and s,
            300, "the triggered flow run", [serving],
        )
        assert state["type"] == "COMPLETED", (tmp_path / "serve.log").read_text()[-3000:]
    finally:
        stop(serving)
        log.close()

    evaluations = pl.read_parquet(warehouse / "evaluations" / "*.parquet")
    assert evaluations["flow_run_id"].to_list() == [flow_run_id]
    summary = pl.read_parquet(warehouse / "summary" / "*" / "*.parquet").filter(pl.col("cutoff") == 10)
    assert summary["value"].to_list() == [pytest.approx(0.4796, abs=5e-5)]
    assert (inbox / "processed" / run_file.name).exists()
