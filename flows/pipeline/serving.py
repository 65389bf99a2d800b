"""`judged serve`: the nightly deployment registered with its schedule on a Prefect server and served by a Prefect
runner, which starts each scheduled or triggered run in a process of its own, until a signal stops it.

Belongs here: building and running the runner, and how it stops. On SIGTERM or SIGINT the runner's own stop
(its runs cancelled, its schedule paused) is asked for when its Prefect API answers within a second; whatever then
happens, the process ends by `STOP_SECONDS` after the signal: a server that went away, hangs or answers slowly makes
Prefect's client retry for half a minute or more, so the runs still going are ended (their process groups, by
their ids) and the process exits. A second signal ends it at once. Which server it serves on is server.py's
(`serving_api`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from judged.flows.pipeline.server import ServerError, healthy, process_exists

STOP_SECONDS = 4.0  # from a signal to the end of the process, at most
API_CHECK_SECONDS = 1.0  # how long the API has to answer before the runner's own stop is asked for
CHILD_GRACE_SECONDS = 0.5  # between SIGTERM and SIGKILL for a run's process group when the stop is forced
SIGNALS = (signal.SIGTERM, signal.SIGINT)


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc; empty where there is none)."""
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == pid:
                found.append(int(entry.name))
    return found


def end_processes(pids: list[int], grace: float = CHILD_GRACE_SECONDS) -> None:
    """SIGTERM each process (its whole group when it leads one), then SIGKILL what is left after `grace`."""
    def send(pid: int, sent: signal.Signals) -> None:
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, sent)
            else:
                os.kill(pid, sent)
        except (ProcessLookupError, PermissionError):
            pass

    for pid in pids:
        send(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(process_exists(pid) for pid in pids):
        time.sleep(0.05)
    for pid in pids:
        if process_exists(pid):
            send(pid, signal.SIGKILL)


class Stopper:
    """The serving process's SIGTERM and SIGINT handler (see the module's docstring). `keep`: child processes that
    outlive the serving (the local Prefect server it may have started, and that server's watchdog)."""

    def __init__(self, runner: Any, api_url: str, keep: tuple[int, ...] = ()) -> None:
        self.runner = runner
        self.api_url = api_url
        self.keep = keep
        self.received: int | None = None
        self.received_at = 0.0
        self.forced = threading.Event()

    def install(self) -> None:
        for sent in SIGNALS:
            signal.signal(sent, self.handle)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            self.force("a second signal")
            return
        self.received, self.received_at = signum, time.monotonic()
        threading.Thread(target=self._stop, name="judged-serve-stop", daemon=True).start()

    def _stop(self) -> None:
        runner = self.runner
        if not getattr(runner, "started", False) or getattr(runner, "_loop", None) is None:
            self.force("before it served")
            return
        if not healthy(self.api_url, timeout=API_CHECK_SECONDS):
            self.force(f"the Prefect API at {self.api_url} does not answer: runs and schedule left as they were")
            return
        # Armed until the process ends (a daemon thread): after the runner's stop, the exit may wait on the API too.
        left = self.received_at + STOP_SECONDS - CHILD_GRACE_SECONDS - time.monotonic()
        deadline = threading.Timer(max(left, 0.0), self.force, args=(f"its stop took over {STOP_SECONDS:g} s",))
        deadline.daemon = True
        deadline.start()
        runner.stopping = True
        runner.execute_in_background(runner.astop)

    def force(self, why: str) -> None:
        """End the runs still going and the process, now (exit 0: a stop that was asked for)."""
        if self.forced.is_set():
            return
        self.forced.set()
        try:
            end_processes([pid for pid in children(os.getpid()) if pid not in self.keep])
            print(f"judged: serve stopped on {self.signal_name or 'a signal'} ({why})", file=sys.stderr, flush=True)
        finally:
            os._exit(0)

    @property
    def signal_name(self) -> str | None:
        return signal.Signals(self.received).name if self.received else None


def serve_nightly(name: str, cron: str, parameters: dict[str, Any], api_url: str, keep: tuple[int, ...] = ()) -> str:
    """Register the nightly deployment `name` with its cron schedule (UTC) and serve it until SIGTERM or SIGINT;
    the name of the signal that stopped it."""
    from prefect.runner import Runner

    from judged.flows.pipeline.flows import nightly

    runner = Runner(name=name, pause_on_shutdown=True)
    stopper = Stopper(runner, api_url, keep)
    stopper.install()  # a signal while the deployment is registered ends the process at once
    runner.add_flow(nightly, name=name, cron=cron, parameters=parameters)

    async def served() -> None:
        running = asyncio.ensure_future(runner.start())
        await asyncio.sleep(0)  # runner.start has put its own SIGTERM handler in place: this one replaces it
        stopper.install()
        await running

    try:
        asyncio.run(served())
    except Exception as error:
        if healthy(api_url):
            raise
        raise ServerError(f"the Prefect API at {api_url} stopped answering while serving ({type(error).__name__}): "
                          "start the server again, then serve again") from None
    return stopper.signal_name or "its end"
