"""judged's local Prefect server, as a new user meets it: with a fresh PREFECT_HOME and no PREFECT_API_URL, the first
warehouse command starts the server in the background and says so, the second reuses it (same pid and URL, no new
start), the results are those of Prefect's temporary server route, `judged server status` and `stop` work, and two
commands starting it at once end up with one server. Every test stops the server it started, even when it fails."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judged.flows.pipeline.server import in_use, process_alive, read_state
from tests.conftest import REPO, SAMPLE, ended, servers_on, stop_process_group

# Starting a server is what these tests check: their commands do not get the session's server.
pytestmark = pytest.mark.own_prefect_server

BIN = Path(sys.executable).parent
QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUN = SAMPLE / "runs" / "input.p_bm25.gz"


@pytest.fixture
def new_user(tmp_path: Path, prefect_database: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh Prefect home and the environment of a user who configured nothing; stops what was started. The home
    holds a copy of the run's migrated Prefect database: what these tests check is judged's handling of the server,
    and a user's first start, migration included, is tests/e2e/test_prefect_server.py's."""
    home = tmp_path / "prefect-home"
    home.mkdir()
    shutil.copyfile(prefect_database, home / "prefect.db")
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("PREFECT_API_URL", "JUDGED_PREFECT_SERVER", "JUDGED_SERVER_IDLE_MINUTES")}
    environment |= {"PREFECT_HOME": str(home), "COLUMNS": "200"}
    try:
        yield home, environment
    finally:
        subprocess.run([str(BIN / "judged"), "server", "stop"], env=environment, capture_output=True, timeout=120)
        state = read_state(home)
        if state is not None:  # stop failed: end the process group it recorded, by its id
            try:
                os.killpg(state.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def judged(*args: str | Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "judged"), *map(str, args)], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def evaluate(warehouse: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = judged("evaluate", QRELS, RUN, "--preset", "trec_eval", "--cutoffs", "10,100", "--format", "json",
                  "--warehouse", warehouse, env=env, cwd=warehouse.parent)
    assert done.returncode == 0, done.stderr
    return done


def test_two_commands_share_one_server_with_the_temporary_servers_results(
    new_user: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    home, env = new_user
    assert judged("server", "status", env=env, cwd=tmp_path).returncode == 3  # nothing runs yet

    first = evaluate(tmp_path / "first", env)
    assert "started a local Prefect server on http://127.0.0.1:" in first.stderr
    assert "judged server stop" in first.stderr
    started = read_state(home)
    assert started is not None and started.url.startswith("http://127.0.0.1:")
    assert started.idle_minutes == 30 and started.watchdog_pid is not None  # the default idle stop
    assert "it stops after 30 min unused" in first.stderr
    assert Path(started.log).is_file() and Path(started.log).parent == home / "judged-server"

    second = evaluate(tmp_path / "second", env)
    assert "started" not in second.stderr  # it reused the first one's server
    assert read_state(home) == started
    status = judged("server", "status", env=env, cwd=tmp_path)
    assert status.returncode == 0 and f"pid {started.pid}" in status.stdout and started.url in status.stdout

    temporary = evaluate(tmp_path / "temporary", env | {"JUDGED_PREFECT_SERVER": "temporary"})
    assert "started" not in temporary.stderr and read_state(home) == started
    assert json.loads(first.stdout) == json.loads(second.stdout) == json.loads(temporary.stdout)
    for table in ("summary", "per_query"):
        stored = [sorted(p.relative_to(tmp_path / name / table).as_posix()
                         for p in (tmp_path / name / table).rglob("*.parquet"))
                  for name in ("first", "second", "temporary")]
        assert stored[0] and stored[0] == stored[1] == stored[2]

    stopped = judged("server", "stop", env=env, cwd=tmp_path)
    assert stopped.returncode == 0 and f"stopped the local Prefect server (pid {started.pid}" in stopped.stdout
    assert read_state(home) is None
    assert not process_alive(started.pid)  # gone (at most a zombie, if nothing reaps the detached process)
    assert ended(started.watchdog_pid)  # its watchdog went with it
    assert judged("server", "status", env=env, cwd=tmp_path).returncode == 3


def test_two_commands_starting_at_once_end_with_one_server_and_a_dead_one_is_replaced(
    new_user: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    home, env = new_user
    starting = [subprocess.Popen([str(BIN / "judged"), "server", "start"], env=env, cwd=tmp_path, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [process.communicate(timeout=600) for process in starting]
    assert [process.returncode for process in starting] == [0, 0], outputs
    first = read_state(home)
    assert first is not None
    assert [stdout.split(" (pid")[0] for stdout, _ in outputs] == [f"running: {first.url}"] * 2
    assert sum("started a local Prefect server" in stderr for _, stderr in outputs) == 1
    servers = subprocess.run(["pgrep", "-f", f"prefect server start --host 127.0.0.1 --port {first.port}"],
                             capture_output=True, text=True)
    assert servers.stdout.split() == [str(first.pid)]

    os.killpg(first.pid, signal.SIGKILL)  # the server dies; its state file stays behind
    restarted = judged("server", "start", env=env, cwd=tmp_path)
    assert restarted.returncode == 0, restarted.stderr
    assert f"(pid {first.pid}) is gone; starting a new one" in restarted.stderr
    second = read_state(home)
    assert second is not None and second.pid != first.pid and f"pid {second.pid}" in restarted.stdout


def test_a_configured_api_url_wins(tmp_path: Path) -> None:
    """PREFECT_API_URL set by the user: the command reports there and starts nothing (here it points at nothing,
    so the command fails: what matters is that no local server was started instead)."""
    home = tmp_path / "prefect-home"
    env = {name: value for name, value in os.environ.items() if name != "JUDGED_PREFECT_SERVER"}
    env |= {"PREFECT_HOME": str(home), "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    done = judged("ingest-run", RUN, "--warehouse", tmp_path / "w", env=env, cwd=tmp_path)
    assert done.returncode != 0
    assert "started a local Prefect server" not in done.stderr
    assert read_state(home) is None and not (home / "judged-server").exists()


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    env = os.environ | {"JUDGED_PREFECT_SERVER": "shared", "PREFECT_HOME": str(tmp_path / "home")}
    env.pop("PREFECT_API_URL", None)
    done = judged("ingest-run", RUN, "--warehouse", tmp_path / "w", env=env, cwd=REPO)
    assert done.returncode == 1
    assert done.stderr.strip() == ("judged: error: the local Prefect server: JUDGED_PREFECT_SERVER='shared' must be "
                                   "one of local, temporary")


def wait_until(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_an_idle_server_stops_by_itself_but_not_while_a_command_uses_it(
    new_user: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Issue 27 #12: a server with a tiny idle limit (3 s; fractions of a minute are allowed) stops by itself once no
    command has used it for that long, never while a command holds it, and status shows the limit."""
    home, env = new_user
    env = env | {"JUDGED_SERVER_IDLE_MINUTES": "0.05"}
    with in_use(home):  # a command using it from the start: the first start takes longer than 3 s
        started = judged("server", "start", env=env, cwd=tmp_path)
        assert started.returncode == 0, started.stderr
        state = read_state(home)
        assert state is not None and state.idle_minutes == 0.05 and state.watchdog_pid is not None
        status = judged("server", "status", env=env, cwd=tmp_path)
        assert status.returncode == 0
        assert f"idle stop: stops after 3 s without a judged command using it (watchdog pid {state.watchdog_pid})" \
            in status.stdout
        time.sleep(5)  # past the idle limit, but in use
        assert read_state(home) == state and process_alive(state.pid)
    assert wait_until(lambda: read_state(home) is None and not process_alive(state.pid), 60)
    assert wait_until(lambda: ended(state.watchdog_pid), 30)  # the watchdog ends with the server
    assert "unused for 0.05 min" in Path(state.log).read_text()
    assert judged("server", "status", env=env, cwd=tmp_path).returncode == 3


def test_idle_limit_zero_never_stops(new_user: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    home, env = new_user
    started = judged("server", "start", "--idle-minutes", "0", env=env | {"JUDGED_SERVER_IDLE_MINUTES": "0.01"},
                     cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    assert "never stops by itself (idle limit 0)" in started.stdout
    state = read_state(home)
    assert state is not None and state.idle_minutes == 0 and state.watchdog_pid is None  # nothing watches it
    time.sleep(3)
    assert read_state(home) == state and process_alive(state.pid)
    status = judged("server", "status", env=env, cwd=tmp_path)
    assert "idle stop: never stops by itself (idle limit 0)" in status.stdout


@pytest.mark.parametrize(("setting", "argument", "named"), [
    ("abc", None, "JUDGED_SERVER_IDLE_MINUTES='abc'"),
    ("inf", None, "JUDGED_SERVER_IDLE_MINUTES='inf'"),
    (None, "-1", "--idle-minutes"),
    (None, "nan", "--idle-minutes"),
    (None, "1e9", "--idle-minutes"),
])
def test_a_bad_idle_limit_is_refused_before_anything_starts(
    new_user: tuple[Path, dict[str, str]], tmp_path: Path, setting: str | None, argument: str | None, named: str
) -> None:
    home, env = new_user
    if setting is not None:
        env = env | {"JUDGED_SERVER_IDLE_MINUTES": setting}
    done = judged("server", "start", *(["--idle-minutes", argument] if argument else []), env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"judged: error: the local Prefect server: {named}")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert read_state(home) is None and not (home / "judged-server").exists()


def test_the_session_end_check_finds_a_server_left_under_a_session_home(tmp_path: Path) -> None:
    """tests/conftest.py's session-end check: a judged local server process (here a stand-in with its command line)
    whose PREFECT_HOME is under the session's folders is found; one of another home is not."""
    from tests.conftest import local_servers_under

    stand_in = [sys.executable, "-c", "import time; time.sleep(60)", "prefect", "server", "start"]
    inside = subprocess.Popen(stand_in, env=os.environ | {"PREFECT_HOME": str(tmp_path / "a" / "home")})
    elsewhere = subprocess.Popen(stand_in, env=os.environ | {"PREFECT_HOME": str(tmp_path / "b")})
    try:
        assert wait_until(lambda: [pid for pid, _, _ in local_servers_under([tmp_path / "a"])] == [inside.pid], 10)
        assert [home for _, home, _ in local_servers_under([tmp_path / "a"])] == [str(tmp_path / "a" / "home")]
    finally:
        for process in (inside, elsewhere):
            process.kill()
            process.wait()
    assert local_servers_under([tmp_path]) == []


# -- one Prefect database, one server (issue 38) --------------------------------------------------------------------


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def server_outside_judged(new_user: tuple[Path, dict[str, str]], tmp_path: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    """`prefect server start` on the new user's Prefect home, as the first night (docs/operations.md) once had users
    start it (after the quick start had started judged's): its process and API URL; stopped at the end, by its
    group."""
    import urllib.request

    home, env = new_user
    port = free_port()
    log = (tmp_path / "outside.log").open("w")
    process = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                               env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/api"

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                return response.read() == b"true"
        except OSError:
            return False

    try:
        assert wait_until(lambda: answers() or process.poll() is not None, 180) and process.poll() is None
        yield process, url
    finally:
        stop_process_group(process)
        log.close()


def test_a_server_started_outside_judged_on_its_database_is_reused_never_doubled(
    new_user: tuple[Path, dict[str, str]], server_outside_judged: tuple[subprocess.Popen, str], tmp_path: Path
) -> None:
    home, env = new_user
    outside, url = server_outside_judged
    started = judged("server", "start", env=env, cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith(f"running: {url} (pid {outside.pid}, started outside judged: ")
    assert read_state(home) is None  # not recorded as judged's: never stopped by judged
    assert judged("server", "url", env=env, cwd=tmp_path).stdout.strip() == url
    status = judged("server", "status", env=env, cwd=tmp_path)
    assert status.returncode == 0 and url in status.stdout and "judged did not start" in status.stdout

    evaluated = evaluate(tmp_path / "warehouse", env)  # a warehouse command reports to it
    assert f"using the Prefect server already running on this Prefect database (pid {outside.pid}, {url})" \
        in evaluated.stderr
    assert "started a local Prefect server" not in evaluated.stderr
    assert servers_on(home) == [outside.pid]  # one server on the database, whatever ran

    stopped = judged("server", "stop", env=env, cwd=tmp_path)
    assert stopped.returncode == 0 and "judged leaves it running" in stopped.stdout
    assert outside.poll() is None


def test_a_server_outside_judged_that_does_not_answer_is_refused_not_doubled(
    new_user: tuple[Path, dict[str, str]], server_outside_judged: tuple[subprocess.Popen, str], tmp_path: Path
) -> None:
    home, env = new_user
    outside, url = server_outside_judged
    os.killpg(outside.pid, signal.SIGSTOP)  # it lives, but answers nothing
    try:
        done = judged("server", "start", env=env, cwd=tmp_path)
    finally:
        os.killpg(outside.pid, signal.SIGCONT)
    assert done.returncode == 1
    assert done.stderr.startswith(f"judged: error: the local Prefect server: a Prefect server judged did not start "
                                  f"(pid {outside.pid}: ")
    assert f"does not answer on {url}: stop it, or set PREFECT_API_URL" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert servers_on(home) == [outside.pid] and read_state(home) is None


# -- `judged serve` on the local server, and how it stops (issue 38) -----------------------------------------------

STOP_WITHIN_SECONDS = 5.0


def deployment_of(url: str, name: str) -> dict | None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/deployments/name/nightly/{name}", timeout=5) as response:
            return json.loads(response.read())
    except (OSError, urllib.error.URLError, ValueError):
        return None


@pytest.mark.parametrize(("server_state", "sent", "configured"), [
    ("answering", signal.SIGINT, False),
    ("gone", signal.SIGTERM, True),  # the finding: PREFECT_API_URL set, its server gone, SIGTERM took 30-67 s
    ("gone", signal.SIGINT, False),
    ("hanging", signal.SIGTERM, False),
])
def test_serve_stops_within_5_s_whatever_its_servers_state(
    new_user: tuple[Path, dict[str, str]], tmp_path: Path, server_state: str, sent: signal.Signals, configured: bool
) -> None:
    """serve serves on judged's local server when no PREFECT_API_URL is set (the running one, not a second), on the
    configured one otherwise; SIGTERM or SIGINT ends it within 5 s whether that server answers, is gone (killed) or
    hangs (stopped with SIGSTOP)."""
    home, env = new_user
    assert judged("server", "start", "--idle-minutes", "0", env=env, cwd=tmp_path).returncode == 0
    state = read_state(home)
    assert state is not None
    if configured:
        env = env | {"PREFECT_API_URL": state.url}
    name = f"serve-{server_state}-{sent.name.lower()}"
    log = (tmp_path / "serve.log").open("w")
    serving = subprocess.Popen([str(BIN / "judged"), "serve", "--inbox", tmp_path / "inbox", "--warehouse",
                                tmp_path / "warehouse", "--judgments", QRELS, "--name", name],
                               env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert wait_until(lambda: deployment_of(state.url, name) is not None or serving.poll() is not None, 180)
        assert serving.poll() is None, (tmp_path / "serve.log").read_text()
        time.sleep(2)  # the runner polls for runs
        if server_state == "gone":
            os.killpg(state.pid, signal.SIGKILL)
            assert wait_until(lambda: ended(state.pid), 30)
        elif server_state == "hanging":
            os.killpg(state.pid, signal.SIGSTOP)
        asked = time.monotonic()
        serving.send_signal(sent)
        try:
            serving.wait(timeout=30)
        finally:
            took = time.monotonic() - asked
    finally:
        if server_state == "hanging":
            os.killpg(state.pid, signal.SIGCONT)
        if serving.poll() is None:
            os.killpg(serving.pid, signal.SIGKILL)
            serving.wait(timeout=30)
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert took <= STOP_WITHIN_SECONDS, (took, output[-3000:])
    assert serving.returncode == 0, output[-3000:]
    assert f"serve stopped on {sent.name}" in output
    assert f"serving the nightly job {name} (0 2 * * *, UTC) on {state.url}" in output
    assert "started a local Prefect server" not in output  # it served on the one that ran
    assert f"{tmp_path / 'warehouse' / 'reports'}/<flow run id>.html" in output
    assert not [pid for pid in map(int, subprocess.run(["pgrep", "-g", str(serving.pid)], capture_output=True,
                                                       text=True).stdout.split())]  # nothing of it is left
    if server_state == "answering":
        assert process_alive(state.pid)  # the local server outlives the command that served on it


def test_a_server_on_the_database_is_found_by_its_environment_and_a_temporary_one_is_not(tmp_path: Path) -> None:
    """`other_server` on stand-ins with a Prefect server's command line: one whose PREFECT_HOME (or connection URL)
    is the database's is found, with its port; one of another home, or a temporary server, is not."""
    from judged.flows.pipeline.server import other_server

    home = tmp_path / "home"
    home.mkdir()
    stand_in = [sys.executable, "-c", "import time; time.sleep(60)", "prefect", "server", "start", "--port", "4321"]
    cases = [
        ({"PREFECT_HOME": str(home)}, True),
        ({"PREFECT_HOME": str(tmp_path / "other")}, False),
        ({"PREFECT_HOME": str(home), "PREFECT__SERVER_EPHEMERAL": "1"}, False),
        ({"PREFECT_HOME": str(tmp_path / "other"),
          "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{home / 'prefect.db'}"}, True),
    ]
    for environment, found in cases:
        process = subprocess.Popen(stand_in, env={**os.environ, **environment})
        try:
            seen = other_server(home) if wait_until(lambda: other_server(home) is not None, 5 if found else 1) \
                else None
        finally:
            process.kill()
            process.wait()
        assert (seen is not None) == found, environment
        if seen is not None:
            assert (seen.pid, seen.url) == (process.pid, "http://127.0.0.1:4321/api")
