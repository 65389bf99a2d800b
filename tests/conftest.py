"""Shared fixtures: where ../shared is, and a skip with a clear reason when a clone has no ../shared beside it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Prefect reads these when it is first imported: a private home per test session, no telemetry (offline), a
# patient start for the temporary server, and quiet consoles.
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="judged-tests-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
# Commands run by tests (in process or as subprocesses, which inherit this) use Prefect's temporary server, which
# ends with its process, rather than judged's background server, which would outlive the test session. The tests of
# that server (tests/e2e/test_local_server.py) ask for it explicitly and stop it.
os.environ.setdefault("JUDGED_PREFECT_SERVER", "temporary")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGED_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared() -> Path:
    """The reference data directory; tests that need it skip when it is absent."""
    if not (SHARED / "SPEC.md").is_file():
        pytest.skip(f"reference data not found at {SHARED} (set JUDGED_SHARED or place shared/ beside the clone)")
    return SHARED


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


SAMPLE = REPO / "data" / "trec-dl-2020-sample"


@pytest.fixture(scope="session", autouse=True)
def no_local_server_left() -> Iterator[None]:
    """Whatever a test did, no judged local Prefect server of this session's PREFECT_HOME outlives the session."""
    yield
    from judged.flows.pipeline.progress import Feedback
    from judged.flows.pipeline.server import stop_server

    stop_server(Feedback())


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[str]:
    """One temporary Prefect server for the session's flow tests; yields its API URL."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield str(PREFECT_API_URL.value())

