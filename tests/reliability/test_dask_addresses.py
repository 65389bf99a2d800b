"""`--dask ADDRESS` that is no Dask scheduler: nobody listening, a TCP listener that says nothing, an HTTP server, a
Dask worker. Each command that takes `--dask` refuses it with one line (exit 2) after a bounded wait, before anything
is stored or taken from the inbox (before, exit 70 after distributed's 30-60 s, a MemoryError, or no end); and a
night whose scheduler does not answer fails as a night, every run left in the inbox (before, each good run was
rejected with the connection's error). Every listener, server and cluster a test starts is stopped by it.

The commands run as real processes (`judged` beside the interpreter), so a hang ends in the subprocess's timeout
rather than the test session's. The check's own deadline is 5 s (flows/pipeline/scheduler.py); the bound asserted
here only tells a refusal from a wait of distributed's 30 s or a hang, on a busy machine.
"""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judged.flows.pipeline.flows import nightly, task_runner
from judged.schemas.spec import PRESETS
from judged.transforms.errors import UsageError
from tests.conftest import REPO

SEED_QRELS = REPO / "data" / "seed" / "qrels.txt"
SEED_RUN = REPO / "data" / "seed" / "run.txt"
JUDGED = Path(sys.executable).with_name("judged")
# A refusal comes after the check's 5 s deadline at most, plus the process's start; distributed waited 30-60 s.
REFUSED_WITHIN_SECONDS = 20


@pytest.fixture(scope="module")
def silent_listener() -> Iterator[str]:
    """A TCP port that accepts connections and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def closed_port() -> str:
    """A port nobody listens on (bound, then let go)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"tcp://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def worker_address() -> Iterator[str]:
    """A Dask worker's address: Dask's protocol, but no scheduler."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, processes=False, protocol="tcp://", dashboard_address=None) as cluster:
        yield next(iter(cluster.workers.values())).address


ADDRESSES = {
    "nobody-listening": ("closed_port", "no Dask scheduler there (Connection refused)"),
    "silent-tcp-listener": ("silent_listener", "sent no Dask greeting within 5 s: not a Dask scheduler"),
    "http-server": ("http_server", "sent no Dask greeting within 5 s: not a Dask scheduler"),
    "dask-worker": ("worker_address", "is a Dask Worker, not a scheduler"),
}


def run_judged(*arguments: str | Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([str(JUDGED), *map(str, arguments)], capture_output=True, text=True, timeout=120)
    return done, time.monotonic() - started


def assert_one_line(done: subprocess.CompletedProcess[str], seconds: float, address: str, message: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"judged: error: --dask: {address}"), done.stderr
    assert message in lines[0] and "Traceback" not in done.stderr + done.stdout
    assert seconds < REFUSED_WITHIN_SECONDS, seconds


@pytest.mark.parametrize("case", list(ADDRESSES))
def test_an_address_that_is_no_scheduler_is_one_line_before_anything_is_stored(
    case: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    fixture, message = ADDRESSES[case]
    address = request.getfixturevalue(fixture)
    warehouse = tmp_path / "warehouse"
    done, seconds = run_judged("ingest-run", SEED_RUN, "--warehouse", warehouse, "--dask", address)
    assert_one_line(done, seconds, address, message)
    done, seconds = run_judged("evaluate", SEED_QRELS, SEED_RUN, "--warehouse", warehouse, "--dask", address)
    assert_one_line(done, seconds, address, message)
    assert not warehouse.exists()


def test_nightly_with_a_scheduler_that_does_not_answer_leaves_every_run_in_the_inbox(
    closed_port: str, tmp_path: Path
) -> None:
    inbox, warehouse = tmp_path / "inbox", tmp_path / "warehouse"
    inbox.mkdir()
    for name in ("a.run", "b.run"):
        (inbox / name).write_text(SEED_RUN.read_text())
    done, seconds = run_judged("nightly", "--inbox", inbox, "--judgments", SEED_QRELS, "--warehouse", warehouse,
                               "--dask", closed_port)
    assert_one_line(done, seconds, closed_port, "no Dask scheduler there")
    assert sorted(path.name for path in inbox.iterdir()) == ["a.run", "b.run"]
    assert not warehouse.exists()


def test_the_night_checks_its_scheduler_before_it_claims_a_run(
    prefect_harness: str, closed_port: str, tmp_path: Path
) -> None:
    """The flow itself (as a deployment, or a scheduler gone since the command's check) fails the night before
    any run is claimed: before, each run went to rejected/ with the connection's error."""
    inbox, warehouse = tmp_path / "inbox", tmp_path / "warehouse"
    inbox.mkdir()
    for name in ("a.run", "b.run"):
        (inbox / name).write_text(SEED_RUN.read_text())
    spec = PRESETS["trec_eval"].with_options(cutoffs=(10,))
    flow = nightly.with_options(task_runner=task_runner(closed_port))
    with pytest.raises(UsageError, match="no Dask scheduler there"):
        flow(str(inbox), str(SEED_QRELS), [spec.canonical_json()], str(warehouse), scale_out=True)
    assert sorted(path.name for path in inbox.iterdir() if path.is_file()) == ["a.run", "b.run"]
    assert not any((inbox / "rejected").iterdir())


@pytest.mark.parametrize("answering", [False, True], ids=["scheduler-gone", "scheduler-answers"])
def test_a_failure_while_the_scheduler_is_gone_stops_the_night_not_the_file(
    prefect_harness: str, closed_port: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answering: bool
) -> None:
    """A run's store failing on Dask (here: the connection's OSError) rejects the file only while its scheduler
    still answers; when it does not, the night stops with one error naming it, and the file is not rejected."""
    import judged.flows.pipeline.flows as flows_module
    from distributed import LocalCluster

    from judged.flows.pipeline.tasks import ingest_file
    from judged.flows.store.warehouse import Store
    from judged.transforms.errors import InputError

    def lost(*args: object, **kwargs: object) -> None:
        raise OSError("Timed out trying to connect")

    monkeypatch.setattr(flows_module, "ingest_in_pieces", lost)
    store = Store(tmp_path / "warehouse").ensure()
    judgment_set_id = ingest_file(store, str(SEED_QRELS), "judgments").id
    (tmp_path / "a.run").write_text(SEED_RUN.read_text())
    spec = PRESETS["trec_eval"].with_options(cutoffs=(10,))
    night = (store, tmp_path / "a.run", tmp_path, judgment_set_id, [spec], False, True)
    if answering:
        with LocalCluster(n_workers=1, processes=False, protocol="tcp://", dashboard_address=None) as cluster:
            row, reports = flows_module._night_of_one_file(*night, scheduler=cluster.scheduler_address)
        assert row["outcome"] == "rejected" and "OSError: Timed out trying to connect" in row["error"]
    else:
        with pytest.raises(InputError, match="the Dask scheduler stopped answering while a.run was handled"):
            flows_module._night_of_one_file(*night, scheduler=closed_port)
