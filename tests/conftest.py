"""Shared fixtures and the test loop's rules.

- Where ../shared is, and a skip with a clear reason when a clone has no ../shared beside it.
- `slow`, marked at collection by rule (`slow_reason`): tests under tests/e2e and tests/reliability, tests that use
  the Prefect server (`prefect_harness`), property tests (Hypothesis), and tests whose own code (the test, its
  fixtures, and the functions of tests/ and benchmarks/ they call) starts a subprocess (`subprocess` or
  `multiprocessing`); the mark's `reason` says which. What no rule sees carries an explicit `pytest.mark.slow`.
  `pytest -m "not slow"` is the fast loop, and there a test taking over `FAST_TEST_SECONDS` fails, asking to be
  marked slow.
- Hypothesis profiles: `ci` (400 examples) when CI is set or HYPOTHESIS_PROFILE=ci, `dev` (25) otherwise.
- One Prefect server per session (`prefect_harness`, started by the first test that needs it): subprocesses of
  subprocess tests report to it through PREFECT_API_URL, except in tests marked `own_prefect_server`, whose subject
  is starting a server. It starts from a copy of a Prefect database migrated once per run (`prefect_database`).
- Under pytest-xdist (`-n 2`, as CI runs) each worker is a session: its own PREFECT_HOME, Prefect server and
  session-end check for servers left running.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import typer.main
import typer.testing
from hypothesis import settings as hypothesis_settings

# Prefect reads these when it is first imported: a private home per test session, no telemetry (offline), a
# patient start for the temporary server, and quiet consoles.
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="judged-tests-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
# A command run by a test reports to the session's server (`prefect_harness`) while it runs (in process through
# Prefect's settings; in a subprocess through PREFECT_API_URL, `session_server_for_subprocesses`), else to Prefect's
# temporary server, which ends with its process: never to judged's background server, which would outlive the test
# session. The tests of that server (tests/e2e/test_local_server.py) ask for it explicitly and stop it.
os.environ.setdefault("JUDGED_PREFECT_SERVER", "temporary")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGED_SHARED", REPO.parent / "shared"))
SAMPLE = REPO / "data" / "trec-dl-2020-sample"

# -- Hypothesis profiles ------------------------------------------------------------------------------------------

# `ci` keeps what CI ran with before profiles existed: Hypothesis' own CI profile (derandomized, no example
# database) at the tests' 400 examples. `dev` finds the same kinds of failure less often, in a fraction of the time.
hypothesis_settings.register_profile("ci", hypothesis_settings.get_profile("ci"), max_examples=400)
hypothesis_settings.register_profile("dev", hypothesis_settings.get_profile("default"), max_examples=25)


def hypothesis_profile(environment: Mapping[str, str]) -> str:
    """HYPOTHESIS_PROFILE when set; else `ci` when CI is set (CI services set CI=true), else `dev`."""
    chosen = environment.get("HYPOTHESIS_PROFILE", "")
    if chosen:
        return chosen
    return "ci" if environment.get("CI", "").strip().lower() not in ("", "0", "false", "no") else "dev"


hypothesis_settings.load_profile(hypothesis_profile(os.environ))

# -- the CLI in process -------------------------------------------------------------------------------------------

# Typer's CliRunner.invoke builds the click command from the Typer app at every call, walking every command's
# signature, and the fast loop invokes the CLI over a hundred times. The command is the same every time (no test
# adds commands or replaces their functions; monkeypatching what they call still works), so each app's is built
# once. Should Typer rename the name patched here, the tests only lose the time saved.
typer.testing._get_command = functools.cache(typer.main.get_command)

# -- what is slow -------------------------------------------------------------------------------------------------

SLOW_FOLDERS = ("e2e", "reliability")
SERVER_FIXTURE = "prefect_harness"
# Code whose calls are followed when looking for a subprocess: the tests' own helpers and the benchmark harness
# they drive. judged's own code is not followed: the in-process CLI reaches its server module without starting it.
FOLLOWED = (REPO / "tests", REPO / "benchmarks")
STARTS_SUBPROCESS = pytest.StashKey[bool]()
FAST_TEST_SECONDS = 2.0


def _followed(file: str | None) -> bool:
    path = Path(file or "")
    return path != Path(__file__) and any(path.is_relative_to(folder) for folder in FOLLOWED)


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """A code object and those nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _code_objects(constant)


def _starts_processes(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in ("subprocess", "multiprocessing")


def reaches_subprocess(function: Callable[..., object], seen: set[types.FunctionType] | None = None) -> bool:
    """Whether the function, or a function of tests/ or benchmarks/ it names (followed through their names in turn),
    names the `subprocess` or `multiprocessing` module or something taken from them."""
    function = getattr(function, "__func__", function)
    if not isinstance(function, types.FunctionType):
        return False
    seen = set() if seen is None else seen
    if function in seen:
        return False
    seen.add(function)
    names = {name for code in _code_objects(function.__code__) for name in code.co_names}
    for name in names:
        value = function.__globals__.get(name)
        if isinstance(value, types.ModuleType):
            if _starts_processes(value.__name__):
                return True
            if not _followed(getattr(value, "__file__", None)):
                continue
            # module.function(...): the attribute's name is among the same code's names.
            candidates = [getattr(value, attribute, None) for attribute in names]
        else:
            candidates = [value]
        for candidate in candidates:
            if _starts_processes(getattr(candidate, "__module__", None)):
                return True
            if not isinstance(candidate, types.FunctionType) or not _followed(candidate.__code__.co_filename):
                continue
            if reaches_subprocess(candidate, seen):
                return True
    return False


def _fixture_functions(item: pytest.Function) -> Iterator[Callable[..., object]]:
    for definitions in item._fixtureinfo.name2fixturedefs.values():
        for definition in definitions:
            yield definition.func


def slow_reason(item: pytest.Item) -> str | None:
    """Why a collected test is slow by rule (a phrase), or None."""
    path = Path(str(item.path))
    if path.is_relative_to(REPO / "tests") and path.relative_to(REPO / "tests").parts[0] in SLOW_FOLDERS:
        return f"under tests/{path.relative_to(REPO / 'tests').parts[0]}"
    if not isinstance(item, pytest.Function):
        return None
    if SERVER_FIXTURE in item.fixturenames:
        return f"uses the Prefect server ({SERVER_FIXTURE})"
    if getattr(item.obj, "is_hypothesis_test", False):
        return "a Hypothesis property test"
    if item.stash[STARTS_SUBPROCESS]:
        return "starts a subprocess"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function):
            item.stash[STARTS_SUBPROCESS] = any(
                reaches_subprocess(function) for function in (item.obj, *_fixture_functions(item))
            )
        if item.get_closest_marker("slow") is not None:
            continue
        reason = slow_reason(item)
        if reason is not None:
            item.add_marker(pytest.mark.slow(reason=reason))
    if hasattr(config, "workerinput"):
        items.sort(key=slow_share_of_its_file(items).__getitem__)


def slow_share_of_its_file(items: list[pytest.Item]) -> dict[pytest.Item, float]:
    """Each test's sort key under pytest-xdist: minus the share of slow tests in its file. Files go to the workers
    whole, in collection order (pyproject.toml's addopts), so with this order the files of slow tests go first and
    the last ones handed out are short: no long file keeps one worker busy at the end while the other waits (the
    property tests of tests/transforms, last in collection order, ended a run about a minute after the other worker
    had finished). The sort is stable: a file's tests, and files with the same share, keep their order."""
    counts: dict[Path, list[int]] = {}
    for item in items:
        count = counts.setdefault(item.path, [0, 0])
        count[0] += item.get_closest_marker("slow") is not None
        count[1] += 1
    return {item: -counts[item.path][0] / counts[item.path][1] for item in items}


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (`-n 2`) each worker is a session of its own: its own PREFECT_HOME (a folder of the one
    set above, named by the worker), hence its own Prefect server (`prefect_harness`), temporary servers and
    session-end check; the workers inherit the controller's environment, so without this they would share one home
    (and one SQLite database for Prefect's temporary server)."""
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker is not None:
        home = Path(os.environ["PREFECT_HOME"]) / worker
        home.mkdir(parents=True, exist_ok=True)
        os.environ["PREFECT_HOME"] = str(home)


def _workers(config: pytest.Config) -> int:
    """How many pytest-xdist workers share the machine (1 without xdist)."""
    return int(getattr(config, "workerinput", {}).get("workercount", 1))


def _fast_run(config: pytest.Config) -> bool:
    """Whether this run leaves the slow tests out (`-m "not slow"`, alone or within a larger expression)."""
    return re.search(r"\bnot\s+slow\b", config.option.markexpr or "") is not None


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """In the fast run, a test not marked slow that takes over FAST_TEST_SECONDS fails, whatever it asserted. Taking
    means wall time on a machine no busier than its cores; the wall limit grows with the load beyond them, so that
    other work on a shared machine does not fail a test. Its CPU time spread over every core (the least wall time
    it could take) is held to the limit whatever the load. Under pytest-xdist the check runs in each worker, and
    more workers than cores count as load."""
    if not _fast_run(item.config) or item.get_closest_marker("slow") is not None:
        return (yield)
    cpu, wall = _cpu_seconds(), time.perf_counter()
    result = yield
    cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
    cores = os.cpu_count() or 1
    overload = max(1.0, os.getloadavg()[0] / cores, _workers(item.config) / cores)
    if cpu / cores > FAST_TEST_SECONDS or wall > FAST_TEST_SECONDS * overload:
        pytest.fail(
            f"{item.nodeid} took {wall:.1f} s ({cpu:.1f} s of CPU), over the fast loop's {FAST_TEST_SECONDS:.0f} s per "
            f"test (wall limit {FAST_TEST_SECONDS * overload:.1f} s at this load): mark it `@pytest.mark.slow` "
            "(or make it faster)",
            pytrace=False,
        )
    return result


# -- fixtures -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def shared() -> Path:
    """The reference data directory; tests that need it skip when it is absent."""
    if not (SHARED / "SPEC.md").is_file():
        pytest.skip(f"reference data not found at {SHARED} (set JUDGED_SHARED or place shared/ beside the clone)")
    return SHARED


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def once_per_run(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory, name: str,
                 make: Callable[[Path], object]) -> tuple[Path, object]:
    """A folder `name` filled once per test run by `make(folder)`, and what `make` returned (JSON), for a setup that
    several test modules use and no test changes (a separate environment with another package installed). Under
    pytest-xdist the workers share it: it lies in the run's temporary folder, above each worker's, and the first
    worker to ask fills it while the others wait on a lock."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if hasattr(config, "workerinput") else base
    folder, made = root / name, root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.is_file():
            folder.mkdir(exist_ok=True)  # (left by a worker whose `make` failed: filled again)
            made.write_text(json.dumps(make(folder)))
    return folder, json.loads(made.read_text())


def clock_ticks_since_boot() -> int:
    """Now, in the unit of a process's start time in /proc/PID/stat."""
    return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))


def local_servers_under(homes: list[Path], since: int = 0) -> list[tuple[int, str, str]]:
    """judged's local Prefect servers and their idle watchdogs alive with a PREFECT_HOME that is one of `homes` or
    under one, started at `since` (clock ticks since boot) or later: (pid, PREFECT_HOME, command line), read from
    /proc (this user's processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            started = int((entry / "stat").read_text().rpartition(")")[2].split()[19])
            environment = dict(item.split(b"=", 1) for item in (entry / "environ").read_bytes().split(b"\0")
                               if b"=" in item)
        except OSError:
            continue  # gone meanwhile, or not ours
        server = b"prefect" in words and b"server" in words and b"start" in words
        watchdog = b"judged.flows.pipeline.server" in words and b"watch" in words
        home = environment.get(b"PREFECT_HOME", b"").decode(errors="replace")
        ours = home and started >= since and any(Path(home).is_relative_to(root) for root in homes)
        if (server or watchdog) and ours:
            found.append((int(entry.name), home, b" ".join(words).decode(errors="replace").strip()))
    return found


def servers_on(home: Path) -> list[int]:
    """The Prefect server processes whose PREFECT_HOME is `home`: `prefect server start` however it was called
    (`prefect` or `python -m prefect`), or its background uvicorn, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        started = any(word.endswith(b"prefect") for word in words) and b"server" in words and b"start" in words
        if (started or b"prefect.server.api.server:create_app" in words) and b"PREFECT_HOME=%s" % bytes(home) \
                in environment:
            found.append(int(entry.name))
    return found


def stop_process_group(process: subprocess.Popen) -> None:
    """End a process a test started in a session of its own, with its group: SIGCONT (it may have been stopped),
    SIGTERM, and SIGKILL after 30 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGCONT)
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def ended(pid: int | None) -> bool:
    """Whether the process is gone (or a zombie its new parent has not reaped yet)."""
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


@pytest.fixture(scope="session", autouse=True)
def no_local_server_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Whatever a test did, no judged local Prefect server of this session's PREFECT_HOME outlives the session: it is
    stopped here. A server (or its idle watchdog) still alive after that, of the session's PREFECT_HOME or of a
    home under the session's temporary folder (the tests of tests/e2e/test_local_server.py), is a test that did not
    stop what it started: it is killed by its pid and the session fails, naming it. (A server started before the
    session, e.g. by the user, is not the session's.)"""
    session_started = clock_ticks_since_boot()
    yield
    from judged.flows.pipeline.progress import Feedback
    from judged.flows.pipeline.server import stop_server

    stop_server(Feedback())
    homes = [Path(os.environ["PREFECT_HOME"]), tmp_path_factory.getbasetemp()]
    left = local_servers_under(homes, session_started)
    for pid, _, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if left:
        pytest.fail("judged local Prefect server processes were left running by this test session (killed now): "
                    + "; ".join(f"pid {pid} (PREFECT_HOME {home}): {command}" for pid, home, command in left),
                    pytrace=False)


# Prefect's SQLite database, created and migrated to the installed Prefect's newest revision.
MIGRATE_PREFECT_DATABASE = """
import asyncio, os, sys
os.environ["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = "sqlite+aiosqlite:///" + sys.argv[1]
from prefect.server.database import provide_database_interface
asyncio.run(provide_database_interface().create_db())
"""
# Where a test run's migrated database is, for the pytest runs a test starts (tests/test_fast_loop.py).
PREFECT_DATABASE_VARIABLE = "JUDGED_TEST_PREFECT_DATABASE"


@pytest.fixture(scope="session")
def prefect_database(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Prefect database migrated once per test run, which the servers that tests start as a means (the session's
    server, and the local servers of tests/e2e/test_local_server.py) begin from as a copy: migrating a new SQLite
    database is most of a Prefect server's start, and would be paid by every one. Tests whose subject is a user's
    first start (tests/e2e/test_prefect_server.py, the wheel's demo) start from nothing."""
    inherited = os.environ.get(PREFECT_DATABASE_VARIABLE)
    if inherited and Path(inherited).is_file():
        return Path(inherited)

    def migrate(folder: Path) -> None:
        subprocess.run([sys.executable, "-c", MIGRATE_PREFECT_DATABASE, str(folder / "prefect.db")], check=True,
                       capture_output=True, timeout=600)

    folder, _ = once_per_run(pytestconfig, tmp_path_factory, "prefect-database", migrate)
    os.environ[PREFECT_DATABASE_VARIABLE] = str(folder / "prefect.db")
    return folder / "prefect.db"


@pytest.fixture(scope="session")
def prefect_harness(prefect_database: Path) -> Iterator[str]:
    """The session's one Prefect server (temporary: its own database, a copy of `prefect_database`, stopped at the
    session's end), started by the first test that needs it; yields its API URL. Flows run in process report to it
    while it runs."""
    from unittest import mock

    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_DATABASE_CONNECTION_URL
    from prefect.testing.utilities import prefect_test_harness

    # Prefect's harness keeps its database in a new `mkdtemp()` folder, as prefect-test.db: handed a folder that
    # holds a migrated copy, its server starts without migrating.
    folder = Path(tempfile.mkdtemp(prefix="judged-tests-server-"))
    shutil.copyfile(prefect_database, folder / "prefect-test.db")
    harness = prefect_test_harness(server_startup_timeout=180)
    with mock.patch("prefect.testing.utilities.mkdtemp", return_value=str(folder)):
        harness.__enter__()
    try:
        if not PREFECT_SERVER_DATABASE_CONNECTION_URL.value().endswith(str(folder / "prefect-test.db")):
            pytest.fail("Prefect's test harness no longer keeps its database where tests/conftest.py puts the "
                        f"migrated copy: {PREFECT_SERVER_DATABASE_CONNECTION_URL.value()}", pytrace=False)
        yield str(PREFECT_API_URL.value())
    finally:
        harness.__exit__(None, None, None)


@pytest.fixture(autouse=True)
def session_server_for_subprocesses(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that starts subprocesses gives them the session's server (PREFECT_API_URL), so that a flow run in a
    child does not start and migrate a temporary server of its own; a test whose subject is starting a server
    (`own_prefect_server`) does not."""
    item = request.node
    if not item.stash.get(STARTS_SUBPROCESS, False) or item.get_closest_marker("own_prefect_server") is not None:
        return
    monkeypatch.setenv("PREFECT_API_URL", request.getfixturevalue(SERVER_FIXTURE))
