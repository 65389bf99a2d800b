"""The local Prefect server that judged's warehouse commands share: the first command that runs a flow starts it in
the background, later commands reuse it, `judged server stop` stops it.

Belongs here: which Prefect API a command reports to (a configured PREFECT_API_URL, judged's local server, or
Prefect's temporary per-process server), and finding, starting, checking and stopping the local server. The server
is a separate process (`python -m prefect server start`, bound to 127.0.0.1) reached over HTTP; its state file, log
and lock live in `<PREFECT_HOME>/judged-server/`, its SQLite database is Prefect's own (`<PREFECT_HOME>/prefect.db`).
Prefect is imported only when a command runs a flow (`orchestration`), so the commands that run none start fast.

One server per database: two Prefect servers on one SQLite database lock each other out ("database is locked"), so
before starting one, judged looks for a long-lived Prefect server it did not start (`prefect server start`) on the
database it would use (`other_server`, from /proc) and reports to it instead, or refuses in one line when it does not
answer; such a server is never recorded in the state file nor stopped by judged. `judged serve` holds the local
server while it serves (`serving_api`).

Idle stop: the server stops by itself once no judged command has used it for its declared idle time (default
`DEFAULT_IDLE_MINUTES`; 0 = never; JUDGED_SERVER_IDLE_MINUTES or `judged server start --idle-minutes`), recorded in
the state file. A command that uses the server holds a shared lock on `in-use.lock` while it runs and touches
`last_used` when it starts and ends; a small watchdog process started beside the server (`python -m
judged.flows.pipeline.server watch ...`, its pid in the state file) stops the server when `last_used` is older than
the idle time and no command holds the lock, and ends itself when the server ends.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from judged.flows.pipeline.progress import Feedback
from judged.transforms.errors import InputError

# "local" (default): the shared local server; "temporary": Prefect's own temporary server, one per process.
MODE_VARIABLE = "JUDGED_PREFECT_SERVER"
MODES = ("local", "temporary")
FOLDER = "judged-server"
STATE_FILE = "server.json"
LOG_FILE = "server.log"
LOCK_FILE = "start.lock"
HOST = "127.0.0.1"
# A first start runs the database migrations, which take many times longer on a busy machine than on a quiet one
# (benchmarks/README.md, "Where the time goes").
STARTUP_TIMEOUT_SECONDS = 180.0
# A server whose process lives but whose API does not answer within this is replaced.
UNRESPONSIVE_SECONDS = 15.0
STOP_TIMEOUT_SECONDS = 20.0
HEALTH_TIMEOUT_SECONDS = 2.0
# A server the user configured may be remote or busy: it gets longer to answer before the command gives up on it.
CONFIGURED_HEALTH_TIMEOUT_SECONDS = 5.0
# Idle stop: minutes without a judged command using the server after which its watchdog stops it (0 = never).
IDLE_VARIABLE = "JUDGED_SERVER_IDLE_MINUTES"
DEFAULT_IDLE_MINUTES = 30.0
MAX_IDLE_MINUTES = 7 * 24 * 60.0  # a week: longer is "never" (0)
LAST_USED_FILE = "last_used"
IN_USE_LOCK = "in-use.lock"
# How often the watchdog looks: a tenth of the idle time, within these bounds.
WATCH_MIN_SECONDS = 0.2
WATCH_MAX_SECONDS = 15.0


class ServerError(InputError):
    """The local Prefect server could not be started or reached: one line naming it and its log."""

    def __init__(self, problem: str) -> None:
        super().__init__("the local Prefect server", problem)


@dataclass(frozen=True)
class ServerState:
    """What `server.json` records about the running local server."""

    pid: int
    port: int
    url: str  # the API's URL, e.g. http://127.0.0.1:4237/api
    started_at: str
    log: str
    prefect_home: str
    # Added with the idle stop; a state file written before it reads as a server that never stops by itself.
    idle_minutes: float = 0.0
    watchdog_pid: int | None = None
    # A server judged did not start, found on the database judged's would use (`other_server`): reused, never
    # recorded in the state file, never stopped by judged. Its `log` is its command line.
    external: bool = False


def idle_text(minutes: float) -> str:
    """The idle limit as `judged server status` shows it."""
    if minutes <= 0:
        return "never stops by itself (idle limit 0)"
    shown = f"{minutes:g} min" if minutes >= 1 else f"{minutes * 60:g} s"
    return f"stops after {shown} without a judged command using it"


def check_idle_minutes(minutes: float, origin: str) -> float:
    """An idle limit in minutes from 0 (never) to MAX_IDLE_MINUTES; ServerError naming `origin` otherwise."""
    if not math.isfinite(minutes) or not 0 <= minutes <= MAX_IDLE_MINUTES:
        raise ServerError(f"{origin} must be a number of minutes from 0 (never stop) to {MAX_IDLE_MINUTES:g}, "
                          f"not {minutes!r}")
    return minutes


def chosen_idle_minutes(given: float | None = None) -> float:
    """The idle limit for a server started now: `given` (`--idle-minutes`), else JUDGED_SERVER_IDLE_MINUTES, else
    DEFAULT_IDLE_MINUTES. Fractions are allowed (tests use a few seconds)."""
    if given is not None:
        return check_idle_minutes(given, "--idle-minutes")
    text = os.environ.get(IDLE_VARIABLE, "").strip()
    if not text:
        return DEFAULT_IDLE_MINUTES
    try:
        minutes = float(text)
    except ValueError:
        raise ServerError(f"{IDLE_VARIABLE}={text!r} must be a number of minutes from 0 (never stop) to "
                          f"{MAX_IDLE_MINUTES:g}") from None
    return check_idle_minutes(minutes, f"{IDLE_VARIABLE}={text!r}")


def prefect_home() -> Path:
    """Prefect's home folder: PREFECT_HOME, else Prefect's default ~/.prefect."""
    return Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()


def server_folder(home: Path | None = None) -> Path:
    return (home or prefect_home()) / FOLDER


def chosen_mode() -> str:
    """The JUDGED_PREFECT_SERVER setting; an unknown value is an error, never a silent default."""
    mode = os.environ.get(MODE_VARIABLE, "local").strip().lower() or "local"
    if mode not in MODES:
        raise ServerError(f"{MODE_VARIABLE}={os.environ[MODE_VARIABLE]!r} must be one of {', '.join(MODES)}")
    return mode


def healthy(api_url: str, timeout: float = HEALTH_TIMEOUT_SECONDS) -> bool:
    """Whether the Prefect API at `api_url` answers its health check (GET <api>/health -> true)."""
    try:
        with urllib.request.urlopen(f"{api_url.rstrip('/')}/health", timeout=timeout) as response:
            return response.status == 200 and json.loads(response.read() or b"null") is True
    except (OSError, ValueError, urllib.error.URLError):
        return False


def require_reachable_api(api_url: str | None, timeout: float = CONFIGURED_HEALTH_TIMEOUT_SECONDS) -> None:
    """InputError naming a configured PREFECT_API_URL (None: none configured) where no Prefect API answers: a URL
    the user set is never silently replaced by another server, and the command stops in one line before it reads
    or stores anything (Prefect's client would fail later, with a traceback)."""
    # Twice: a busy server may miss one deadline; nothing listening refuses at once, both times.
    if api_url and not any(healthy(api_url, timeout) for _ in range(2)):
        raise InputError(
            f"PREFECT_API_URL={api_url}",
            "no Prefect API answers there: start that server (`prefect server start`), or unset PREFECT_API_URL to "
            "let judged use its local server",
        )


def read_state(home: Path | None = None) -> ServerState | None:
    path = server_folder(home) / STATE_FILE
    try:
        return ServerState(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None  # absent, or written by something else: no server of ours is known


def process_alive(pid: int) -> bool:
    """Whether `pid` is a live Prefect server process (not a process that reused the id after ours died)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: not ours
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.parent.is_dir():
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            return False
        return b"prefect" in b" ".join(words) and b"server" in words
    return True  # no /proc to tell: the id is alive


def running_server(home: Path | None = None) -> ServerState | None:
    """The local server recorded in the state file, when its process lives and its API answers."""
    state = read_state(home)
    if state is None or not process_alive(state.pid) or not healthy(state.url):
        return None
    return state


def touch_last_used(home: Path | None = None) -> None:
    """Record that a judged command uses the server now (the watchdog's idle clock restarts)."""
    folder = server_folder(home)
    try:
        (folder / LAST_USED_FILE).touch()
    except OSError:
        pass  # no folder (no server of ours) or not writable: nothing to keep alive


def last_used(folder: Path) -> float | None:
    try:
        return (folder / LAST_USED_FILE).stat().st_mtime
    except OSError:
        return None


@contextmanager
def in_use(home: Path | None = None) -> Iterator[None]:
    """Held around a command's use of the server (a shared lock, which its process's end releases however it ends):
    the watchdog never stops a server while a command uses it, however long the command runs."""
    folder = server_folder(home)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / IN_USE_LOCK).open("ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)  # waits while the watchdog is stopping the server
        touch_last_used(home)
        try:
            yield
        finally:
            touch_last_used(home)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _write_state(folder: Path, state: ServerState) -> None:
    staged = folder / f".{STATE_FILE}.{os.getpid()}"
    staged.write_text(json.dumps(asdict(state), indent=1) + "\n")
    os.replace(staged, folder / STATE_FILE)  # readers see the old file or the new one, never a part


@contextmanager
def _start_lock(folder: Path, feedback: Feedback) -> Iterator[BinaryIO]:
    """The start lock, waited for: two commands starting at once end up with one server (the second one waits and
    then finds the first one's server)."""
    from judged.flows.store.warehouse import hold_lock

    lock = hold_lock(folder / LOCK_FILE)
    if lock is None:
        with feedback.waiting("waiting for the Prefect server another judged command is starting..."):
            while (lock := hold_lock(folder / LOCK_FILE)) is None:
                time.sleep(0.2)
    try:
        yield lock
    finally:
        lock.close()


# -- Prefect servers judged did not start ----------------------------------------------------------------------------

# Where Prefect's server settings name its database (the first is Prefect 3's name, the second the older one).
DATABASE_VARIABLES = ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL")
DEFAULT_PORT = 4200  # `prefect server start` without --port (PREFECT_SERVER_API_PORT)


def database_file(environment: dict[str, str]) -> Path | None:
    """The SQLite file a Prefect server started with `environment` keeps its database in (its connection URL, else
    `<PREFECT_HOME>/prefect.db`); None for a database that is no file here (PostgreSQL)."""
    url = next((environment[name] for name in DATABASE_VARIABLES if environment.get(name)), None)
    if url is not None:
        scheme, _, path = url.partition(":///")
        return Path(os.path.realpath(path)) if scheme.startswith("sqlite") and path else None
    home = environment.get("PREFECT_HOME") or os.path.join(environment.get("HOME", "~"), ".prefect")
    return Path(os.path.realpath(os.path.expanduser(home))) / "prefect.db"


def _process_environment(pid: int) -> dict[str, str] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None  # gone, or another user's
    return dict(item.decode(errors="replace").split("=", 1) for item in raw.split(b"\0") if b"=" in item)


def _holds_open(pid: int, path: Path) -> bool:
    try:
        return any(os.path.realpath(entry) == str(path) for entry in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


def _option(words: list[str], flag: str) -> str | None:
    for index, word in enumerate(words[:-1]):
        if word == flag:
            return words[index + 1]
        if word.startswith(flag + "="):
            return word.partition("=")[2]
    return None


@dataclass(frozen=True)
class OtherServer:
    """A long-lived Prefect server judged did not start (`prefect server start`, in the foreground or with
    --background) whose database is the one judged's local server would use."""

    pid: int
    host: str
    port: int
    command: str

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/api"


def other_server(home: Path | None = None, ignore: tuple[int, ...] = ()) -> OtherServer | None:
    """A Prefect server judged did not start, on the database a local server started now would use (this user's
    processes, read from /proc: their command line, environment and open files); Prefect's temporary servers,
    which end with their process, and the processes in `ignore` are not counted."""
    home = home or prefect_home()
    ours = database_file({**os.environ, "PREFECT_HOME": str(home)})
    if ours is None or not Path("/proc").is_dir():
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (os.getpid(), *ignore):
            continue
        try:
            words = [w.decode(errors="replace") for w in (entry / "cmdline").read_bytes().split(b"\0") if w]
        except OSError:
            continue
        prefect = any(word == "prefect" or word.endswith("/prefect") for word in words)  # -m prefect, bin/prefect
        started = prefect and "server" in words and "start" in words
        background = "uvicorn" in words and "prefect.server.api.server:create_app" in words
        environment = _process_environment(int(entry.name)) if started or background else None
        if environment is None or environment.get("PREFECT__SERVER_EPHEMERAL") == "1":
            continue
        if database_file(environment) != ours and not _holds_open(int(entry.name), ours):
            continue
        host = _option(words, "--host") or environment.get("PREFECT_SERVER_API_HOST") or HOST
        port = _option(words, "--port") or environment.get("PREFECT_SERVER_API_PORT") or ""
        host = HOST if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host  # reached locally
        return OtherServer(int(entry.name), host, int(port) if port.isdigit() else DEFAULT_PORT, " ".join(words))
    return None


def _reuse_other(other: OtherServer, feedback: Feedback, home: Path) -> ServerState:
    """The other server as the local server, when it answers; else a ServerError: a second server is never started
    beside it (two servers on one SQLite database lock each other out: "database is locked")."""
    if not _wait_answers(other.url, other.pid, UNRESPONSIVE_SECONDS):
        raise ServerError(f"a Prefect server judged did not start (pid {other.pid}: {other.command}) uses this Prefect "
                          f"database ({database_file({**os.environ, 'PREFECT_HOME': str(home)})}) and does not answer "
                          f"on {other.url}: stop it, or set PREFECT_API_URL to the URL it serves")
    feedback.say(f"judged: using the Prefect server already running on this Prefect database (pid {other.pid}, "
                 f"{other.url}), started outside judged: judged does not stop it")
    return ServerState(other.pid, other.port, other.url, "", other.command, str(home), external=True)


def ensure_server(feedback: Feedback, home: Path | None = None, idle_minutes: float | None = None) -> ServerState:
    """The running local server, started now (in the background, detached from this process) if there is none,
    and a dead or unresponsive one replaced; its idle clock restarts. A server started now stops after
    `chosen_idle_minutes(idle_minutes)` without use. Raises ServerError when it does not come up."""
    idle = chosen_idle_minutes(idle_minutes)
    state = running_server(home)
    if state is not None:
        touch_last_used(home)
        return state
    folder = server_folder(home)
    folder.mkdir(parents=True, exist_ok=True)
    with _start_lock(folder, feedback):
        recorded = read_state(home)
        if recorded is not None and process_alive(recorded.pid):
            if _wait_healthy(recorded, UNRESPONSIVE_SECONDS):
                touch_last_used(home)
                return recorded  # started meanwhile by another command, or only slow to answer
            feedback.say(f"judged: the local Prefect server (pid {recorded.pid}) does not answer; replacing it")
            _terminate(recorded.pid)
            _stop_watchdog(recorded)
        elif recorded is not None:
            feedback.say(f"judged: the local Prefect server (pid {recorded.pid}) is gone; starting a new one")
        (folder / STATE_FILE).unlink(missing_ok=True)
        other = other_server(folder.parent, ignore=(recorded.pid,) if recorded is not None else ())
        if other is not None:
            return _reuse_other(other, feedback, folder.parent)
        return _start(folder, feedback, idle)


def _start(folder: Path, feedback: Feedback, idle_minutes: float = 0.0) -> ServerState:
    home = folder.parent
    port = _free_port()
    url = f"http://{HOST}:{port}/api"
    log = folder / LOG_FILE
    environment = os.environ | {
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": url,
        "PREFECT_SERVER_ANALYTICS_ENABLED": os.environ.get("PREFECT_SERVER_ANALYTICS_ENABLED", "false"),
    }
    first_use = not (home / "prefect.db").exists()
    with log.open("ab") as output:
        output.write(f"--- judged starts the Prefect server on {url} ({now_text()})\n".encode())
        output.flush()
        # Its own session: Ctrl+C in the command that started it does not reach it, and `stop` ends its group.
        process = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", HOST, "--port", str(port)],
            stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, env=environment,
            start_new_session=True, close_fds=True,
        )
    (folder / LAST_USED_FILE).touch()
    state = ServerState(process.pid, port, url, now_text(), str(log), str(home), idle_minutes)
    if idle_minutes > 0:
        state = ServerState(**(asdict(state) | {"watchdog_pid": _start_watchdog(folder, state)}))
    _write_state(folder, state)
    expected = "first use, ~15-30 s" if first_use else "~5-10 s"
    with feedback.waiting(f"starting a local Prefect server ({expected})..."):
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while not healthy(url):
            if process.poll() is not None:
                _stop_watchdog(state)
                (folder / STATE_FILE).unlink(missing_ok=True)
                raise ServerError(f"exited with code {process.returncode} while starting; its log: {log}")
            if time.monotonic() > deadline:
                _terminate(process.pid)
                _stop_watchdog(state)
                (folder / STATE_FILE).unlink(missing_ok=True)
                raise ServerError(f"did not answer on {url} within {STARTUP_TIMEOUT_SECONDS:.0f} s; its log: {log}")
            time.sleep(0.25)
    (folder / LAST_USED_FILE).touch()  # the idle clock starts when it answers
    idle = f"it stops after {idle_minutes:g} min unused" if idle_minutes > 0 else "it runs until stopped"
    feedback.say(f"judged: started a local Prefect server on {url} (pid {process.pid}); later commands reuse it; "
                 f"{idle}. Log: {log}; stop it with `judged server stop`")
    return state


def _start_watchdog(folder: Path, state: ServerState) -> int:
    """Start the idle watchdog beside the server: its own session (Ctrl+C in this command does not reach it), its
    output to the server's log."""
    with Path(state.log).open("ab") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "judged.flows.pipeline.server", "watch", str(folder), str(state.pid),
             repr(state.idle_minutes)],
            stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            close_fds=True,
        )
    return process.pid


def _watchdog_alive(pid: int) -> bool:
    cmdline = Path(f"/proc/{pid}/cmdline")
    try:
        words = cmdline.read_bytes().split(b"\0")
    except OSError:
        return False
    return b"judged.flows.pipeline.server" in words and b"watch" in words


def _stop_watchdog(state: ServerState) -> None:
    """End the server's watchdog (by the pid the state file recorded, when it is still our watchdog)."""
    if state.watchdog_pid is not None and _watchdog_alive(state.watchdog_pid):
        try:
            os.kill(state.watchdog_pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while time.monotonic() < deadline and process_exists(state.watchdog_pid):
            time.sleep(0.05)


def watch(folder: Path, server_pid: int, idle_minutes: float) -> int:
    """The watchdog's loop: stop the server `server_pid` once it has been unused for `idle_minutes` (`last_used`
    older than that, no command holding the in-use lock, none starting a server); end when the server ends or the
    state file names another server."""
    idle_seconds = idle_minutes * 60
    pause = min(WATCH_MAX_SECONDS, max(WATCH_MIN_SECONDS, idle_seconds / 10))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(pause)
        state = read_state(folder.parent)
        if state is None or state.pid != server_pid or not process_alive(server_pid):
            return 0  # stopped, replaced or dead: nothing left to watch
        used = last_used(folder)
        if used is not None and time.time() - used < idle_seconds:
            continue
        starting = hold_start_lock(folder)
        if starting is None:
            continue  # a command is starting or stopping a server: look again later
        with starting, (folder / IN_USE_LOCK).open("ab") as users:
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a command uses it now
            used = last_used(folder)
            state = read_state(folder.parent)
            if used is not None and time.time() - used < idle_seconds:
                continue  # used just before the lock was free
            if state is None or state.pid != server_pid:
                return 0
            with Path(state.log).open("a") as log:
                log.write(f"--- judged stops the Prefect server (pid {server_pid}): unused for {idle_minutes:g} min "
                          f"({now_text()})\n")
            _terminate(server_pid)
            (folder / STATE_FILE).unlink(missing_ok=True)
            return 0


def hold_start_lock(folder: Path) -> BinaryIO | None:
    """The start lock when it is free now, else None (without importing the warehouse: the watchdog stays small)."""
    handle = (folder / LOCK_FILE).open("ab")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _wait_healthy(state: ServerState, seconds: float) -> bool:
    return _wait_answers(state.url, state.pid, seconds)


def _wait_answers(url: str, pid: int, seconds: float) -> bool:
    """Whether the API at `url` answers within `seconds`, while the server process `pid` lives."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if healthy(url):
            return True
        if not process_exists(pid):
            return False
        time.sleep(0.25)
    return healthy(url)


def _terminate(pid: int) -> None:
    """End the server's process group (the server and any process it started): SIGTERM, then SIGKILL."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sent)
        except ProcessLookupError:
            return
        except PermissionError:
            return  # not ours to stop
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if not process_exists(pid):
                return
            time.sleep(0.1)


def process_exists(pid: int) -> bool:
    """Whether the process still exists (a zombie of ours is reaped and counts as gone)."""
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)
        if finished == pid:
            return False
    except ChildProcessError:
        pass  # not our child: started by an earlier command
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return True


def stop_server(feedback: Feedback, home: Path | None = None) -> ServerState | None:
    """Stop the local server if one runs (after any command starting it has finished); the state it had, or None
    when none was running. The state file goes either way."""
    folder = server_folder(home)
    if not folder.is_dir():
        return None
    with _start_lock(folder, feedback):
        state = read_state(home)
        was_running = state is not None and process_alive(state.pid)
        if state is not None and was_running:
            with feedback.waiting(f"stopping the local Prefect server (pid {state.pid})..."):
                _terminate(state.pid)
        if state is not None:
            _stop_watchdog(state)
        (folder / STATE_FILE).unlink(missing_ok=True)
    return state if was_running else None


def now_text() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def configured_api_url() -> str | None:
    """The Prefect API URL the user configured (environment, profile or prefect.toml), or None."""
    from prefect.settings import get_current_settings

    return get_current_settings().api.url


@contextmanager
def using_api(api_url: str | None) -> Iterator[None]:
    """Flows called in this block report to the Prefect API at `api_url` (None: Prefect's temporary server), a
    server judged chose, whose flow runs send no heartbeat unless one is configured.

    A flow run's heartbeat is an event every 180 s by default, for an automation that marks a silent run crashed;
    Prefect's heartbeat thread sleeps a second at a time, so every flow run waits up to a second for it at its end
    (benchmarks/README.md, the fixed cost of a warehouse command). judged's own crash safety does not rely on it
    (staged writes, the warehouse lock). A configured frequency, and any server the user configured, keep
    Prefect's behaviour."""
    from prefect.settings import (
        PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings,
    )

    updates: dict[Any, Any] = {} if api_url is None else {PREFECT_API_URL: api_url}
    if "heartbeat_frequency" not in get_current_settings().flows.model_fields_set:
        updates[PREFECT_FLOWS_HEARTBEAT_FREQUENCY] = None
    with temporary_settings(updates=updates):
        yield


@contextmanager
def serving_api(feedback: Feedback) -> Iterator[tuple[str, ServerState | None]]:
    """Around `judged serve`: the Prefect API it registers the nightly deployment with and reports to (set in
    PREFECT_API_URL for the runs it starts, processes of their own), and the local server when it is judged's. A
    configured one (environment, profile or prefect.toml) must answer; otherwise judged's local server, started or
    reused (`ensure_server`: never a second server on its database) and held while serving, so that its idle stop
    waits. Never Prefect's temporary server, which cannot schedule: JUDGED_PREFECT_SERVER=temporary is refused."""
    configured = configured_api_url()
    if configured is not None:
        require_reachable_api(configured)
        yield configured, None
        return
    if chosen_mode() == "temporary":
        raise ServerError(f"{MODE_VARIABLE}=temporary: serve needs a server that outlives its command (a temporary "
                          "server cannot schedule): unset it to serve on judged's local server, or set PREFECT_API_URL")
    with in_use():
        state = ensure_server(feedback)
        os.environ["PREFECT_API_URL"] = state.url
        with using_api(state.url):
            yield state.url, state


@contextmanager
def orchestration(feedback: Feedback, doing: str) -> Iterator[None]:
    """Around a command's flow calls: Prefect loaded, the API it reports to chosen, and what the flow does shown
    while it runs. A configured PREFECT_API_URL (environment, profile or prefect.toml) always wins; otherwise the
    local server (started if needed) or, with JUDGED_PREFECT_SERVER=temporary, Prefect's temporary server."""
    mode = chosen_mode()
    with feedback.waiting("loading Prefect..."):
        import judged.flows.pipeline.flows  # noqa: F401  (the flows the command is about to run, and Prefect)
    if configured_api_url() is not None:
        require_reachable_api(configured_api_url())
        with feedback.following_flow_logs(doing):
            yield
        return
    if mode == "temporary":
        with using_api(None), feedback.following_flow_logs(
            f"{doing} (on Prefect's temporary server, ~10-20 s to start)"
        ):
            yield
        return
    with in_use():
        state = ensure_server(feedback)
        with using_api(state.url), feedback.following_flow_logs(doing):
            yield


if __name__ == "__main__":  # the watchdog: python -m judged.flows.pipeline.server watch <folder> <pid> <minutes>
    if len(sys.argv) != 5 or sys.argv[1] != "watch":
        sys.exit("usage: python -m judged.flows.pipeline.server watch <server folder> <server pid> <idle minutes>")
    sys.exit(watch(Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
