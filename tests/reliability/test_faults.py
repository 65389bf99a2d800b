"""Fault injection: each writer (ingest-run, ingest-judgments, evaluate, nightly, and the newer commands: compare
storing a comparison, report, worklist, ingest-judgments --extends and --extends --revise) is killed with SIGKILL at a
random point, the warehouse is checked (every view answers, no partial table), the write is run again, and at the end
the warehouse's content equals that of a clean warehouse that ran the same writes without faults. Analysts query the
faulted warehouse in a loop all along (0 errors allowed; they look away only while the test writes the clean one), and
every nightly file has exactly one `nightly` row. A file written outside the warehouse (report's and worklist's --out)
is absent or whole after a kill, never a part.

Short by default (one kill per writer, for CI). The long run, whose figures are in the README, also runs ten rounds
of two nightly processes started together on one inbox:

    JUDGED_FAULTS=long .venv/bin/python -m pytest -s tests/reliability/test_faults.py

(30 kills per writer; `JUDGED_FAULTS=N` for N kills per writer; `JUDGED_FAULTS_WRITERS=evaluate,nightly` for some
writers only, e.g. to run them in parallel processes; the newer ones: compare,report,worklist,extends,revise.) The
killed writers are the Prefect flows themselves (the newer ones: their commands, in process), each in a child process
that talks to the session's one test server (`prefect_harness`) rather than starting a temporary server of its own: the
flows' code paths are what is killed. The children are forked by a multiprocessing fork server that imported what the
writers import once (`CHILD_IMPORTS`), so a child does not import Prefect, Polars and judged anew. Each child says when
it is ready, and again when its write has ended; the kill comes at a uniformly random time within the write's duration
as measured in children that were not killed: a clean run of the same writer (trial 0), then the median with every
miss's. A kill counts only when it lands while the write runs: one that comes after the write ended is a miss (its
child's duration is measured), and trials go on, each with inputs of its own, until N kills have landed. A child that
fails by itself fails the test.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

import pytest

from judged.flows.pipeline.flows import evaluate_flow, ingest_judgments, ingest_run
from judged.flows.pipeline.nightly import CLAIMED
from judged.flows.store.sql import open_readonly
from judged.flows.store.warehouse import STAGING, Store
from judged.schemas.spec import PRESETS
from tests.reliability.faults import (
    CLI_WRITERS, OUTPUTS, QRELS, RUN, SECOND_RUN, WRITERS, content, make_inbox, output_problems, problems, write,
    write_in_child,
)


def writers() -> list[str]:
    chosen = os.environ.get("JUDGED_FAULTS_WRITERS")
    return [w for w in WRITERS if w in chosen.split(",")] if chosen else list(WRITERS)


def kills_per_writer() -> int:
    setting = os.environ.get("JUDGED_FAULTS", "short")
    return 30 if setting == "long" else 1 if setting == "short" else int(setting)


# What the writers import, imported once by the fork server: a child forked from it starts with them loaded.
CHILD_IMPORTS = ["tests.reliability.faults", "typer.testing", "judged.flows.cli.app", "judged.flows.pipeline.flows",
                 "judged.flows.engine.compare"]


@dataclass
class Analysts:
    """Queries every view in a loop on one held read-only connection, counting queries and errors."""

    warehouse: Path
    queries: int = 0
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    paused: threading.Event = field(default_factory=threading.Event)

    @contextmanager
    def looking_away(self) -> Iterator[None]:
        """No queries while the test writes a warehouse they do not watch (the clean one): a query over every view
        would only slow that write down."""
        self.paused.set()
        try:
            yield
        finally:
            self.paused.clear()

    def run(self) -> None:
        connection = open_readonly(Store(self.warehouse))
        query = ("SELECT (SELECT count(*) FROM run_rows), (SELECT count(*) FROM judgments), "
                 "(SELECT count(*) FROM per_query), (SELECT count(*) FROM summary), (SELECT count(*) FROM nightly), "
                 "(SELECT count(*) FROM comparisons), (SELECT count(*) FROM comparison_per_query), "
                 "(SELECT count(*) FROM worklists), (SELECT count(*) FROM judgment_lineage)")
        try:
            while not self.stop.is_set():
                if self.paused.is_set():
                    time.sleep(0.05)
                    continue
                try:
                    connection.execute(query).fetchall()
                except Exception as error:  # any failure an analyst would see counts
                    self.errors.append(str(error).splitlines()[0])
                self.queries += 1
                time.sleep(0.05)
        finally:
            connection.close()


@dataclass
class Child:
    """A forked child running one trial's write, and the parent's end of its pipe."""

    process: multiprocessing.process.BaseProcess
    connection: multiprocessing.connection.Connection

    def message(self, timeout: float) -> object:
        """The child's next message, None when it ended without one; AssertionError when it failed or sends none
        within `timeout` seconds."""
        if not self.connection.poll(timeout):
            raise AssertionError(f"a child sent nothing for {timeout} s (exit code {self.process.exitcode})")
        try:
            message = self.connection.recv()
        except EOFError:  # its end of the pipe closed: it ended (or was killed) before sending
            return None
        if isinstance(message, tuple):
            raise AssertionError(f"a child failed by itself: {message[1][-2000:]}")
        return message


def child_processes() -> multiprocessing.context.BaseContext:
    """The multiprocessing context whose fork server (started by the first child, stopped when the session's
    process exits) has imported `CHILD_IMPORTS`; it forks each child from that state."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(CHILD_IMPORTS)
    return context


def _start_child(args: list) -> Child:
    """A child running a trial's write; it reports to the server in PREFECT_API_URL (the fork server inherits the
    test's environment)."""
    parent_end, child_end = multiprocessing.Pipe()
    process = child_processes().Process(target=write_in_child, args=(child_end, args), daemon=True)
    process.start()
    child_end.close()
    child = Child(process, parent_end)
    if child.message(timeout=300) != "ready":
        raise AssertionError("a child did not say it was ready")
    return child


# Trials a writer may take per kill wanted before the test gives up (a kill after the write ended is a miss).
MAX_TRIALS_PER_KILL = 3


def _clean_child(args: list) -> float:
    """Run a trial's write in a child to its end; the seconds it took (from its start to its write ended)."""
    child = _start_child(args)
    seconds = child.message(timeout=900)
    child.process.join(timeout=60)
    if not isinstance(seconds, float) or child.process.exitcode != 0:
        raise AssertionError(f"a clean child exited {child.process.exitcode} without ending its write")
    return seconds


def _killed_child(args: list, delay: float, trial: str) -> float | None:
    """Start a trial's write in a child and SIGKILL it `delay` seconds after it is ready. None when the kill landed
    while the write ran; the write's seconds when it had ended before the kill (a miss). A child that failed by
    itself fails the test."""
    child = _start_child(args)
    try:
        time.sleep(delay)
    finally:
        child.process.kill()
        child.process.join(timeout=60)
    ended = child.message(timeout=0)  # the write's seconds when it had ended (or its failure), else None
    if ended is not None:
        return float(ended)  # type: ignore[arg-type]
    if child.process.exitcode != -signal.SIGKILL:
        raise AssertionError(f"{trial}: the child exited {child.process.exitcode} by itself")
    return None


def test_killed_writers_leave_a_warehouse_equal_to_a_clean_one(prefect_harness: str, tmp_path: Path) -> None:
    kills = kills_per_writer()
    rng = random.Random(15)
    assert os.environ["PREFECT_API_URL"] == prefect_harness  # the children's server, through the fork server
    faulted, clean = tmp_path / "faulted", tmp_path / "clean"
    base = {}
    evaluations: dict[Path, list[str]] = {faulted: [], clean: []}
    for root in (faulted, clean):
        base = {"judgments": ingest_judgments(str(QRELS), str(root)).id, "run": ingest_run(str(RUN), str(root)).id}
        if set(writers()) & set(CLI_WRITERS):  # two evaluations, which the comparison writers compare
            second = ingest_run(str(SECOND_RUN), str(root)).id
            spec = PRESETS["trec_eval"].with_options(cutoffs=(10, 15))
            reports = evaluate_flow(base["judgments"], [base["run"], second], spec.canonical_json(), str(root))
            evaluations[root] = [report.evaluation_id for report in reports]

    analysts = Analysts(faulted)
    thread = threading.Thread(target=analysts.run, daemon=True)
    thread.start()
    figures: dict[str, dict[str, float]] = {}
    nightly_files: list[str] = []
    try:
        for writer in writers():
            # A clean run of the writer (trial 0) in both warehouses, timed in a child, then the killed trials until
            # `kills` kills have landed while the write ran.
            durations: list[float] = []  # of the writes that ended in a child: trial 0's and every miss's
            landed, missed, trial = 0, 0, 0
            writer_started = time.perf_counter()
            while trial == 0 or landed < kills:
                assert trial <= MAX_TRIALS_PER_KILL * kills, (
                    f"{writer}: {landed} of {kills} kills landed in {trial} trials ({missed} came after the write)")
                inboxes = {root: root.parent / f"inbox-{root.name}-{writer}-{trial}" for root in (faulted, clean)}
                if writer == "nightly":
                    nightly_files += make_inbox(inboxes[faulted], trial)
                    make_inbox(inboxes[clean], trial)
                args = [writer, str(faulted), trial, base["judgments"], base["run"], str(inboxes[faulted]),
                        *evaluations[faulted]]
                if trial == 0:  # a clean run, in a child as the killed ones, timed there
                    durations.append(_clean_child(args))
                    found = output_problems(writer, inboxes[faulted], False, faulted, trial)
                    assert found == [], f"{writer} trial {trial}, a clean run: {found}"
                else:
                    ended = _killed_child(args, rng.uniform(0, median(durations)), f"{writer} trial {trial}")
                    if ended is None:
                        landed += 1
                    else:
                        missed += 1
                        durations.append(ended)
                    found = problems(faulted) + output_problems(writer, inboxes[faulted], True, faulted, trial)
                    assert found == [], f"{writer} trial {trial}, after the kill: {found}"
                    if writer in OUTPUTS:  # checked whole (or absent): the rerun writes its own
                        (inboxes[faulted] / OUTPUTS[writer]).unlink(missing_ok=True)
                    # The rerun, in this process: it must succeed whatever the kill left.
                    write(writer, faulted, trial, base["judgments"], base["run"], inboxes[faulted],
                          evaluations[faulted])
                    found = problems(faulted) + output_problems(writer, inboxes[faulted], False, faulted, trial)
                    assert found == [], f"{writer} trial {trial}, after the rerun: {found}"
                with analysts.looking_away():
                    write(writer, clean, trial, base["judgments"], base["run"], inboxes[clean], evaluations[clean])
                trial += 1
            figures[writer] = {"kills": landed, "missed": missed, "clean_seconds": round(median(durations), 1),
                               "wall_seconds": round(time.perf_counter() - writer_started)}
    finally:
        analysts.stop.set()
        thread.join(timeout=60)

    faulted_content, clean_content = content(faulted), content(clean)
    differing = {table: sorted(set(faulted_content[table]) ^ set(clean_content[table])) for table in clean_content
                 if faulted_content[table] != clean_content[table]}
    assert differing == {}, f"rows in only one of the faulted and clean warehouses: {differing}"
    recorded = content(faulted)["nightly"]
    assert sorted(row[0] for row in recorded) == sorted(nightly_files)  # each file once
    assert all(row[-1] == 1 for row in recorded)
    # Nothing left behind: no staging, no claims (every writer that started after a kill removed what it found).
    Store(faulted).ensure()
    assert list((faulted / STAGING).iterdir()) == []
    for inbox in faulted.parent.glob("inbox-faulted-nightly-*"):
        assert not (inbox / CLAIMED).exists() or list((inbox / CLAIMED).iterdir()) == []
        assert [p.name for p in inbox.iterdir() if p.is_file()] == []
    assert analysts.errors == []
    assert analysts.queries > 0
    compared = sum(len(rows) for rows in clean_content.values())
    print(f"\nfault injection: {json.dumps(figures)}; analysts: {analysts.queries} queries, "
          f"{len(analysts.errors)} errors; nightly rows: {len(recorded)} files, each once; "
          f"0 wedged, 0 partial, content equal to the clean warehouse ({compared} rows of {len(clean_content)} "
          "content queries)")


def concurrent_nightly_rounds() -> int:
    """Rounds of two nightlies on one inbox: none in the short run (CI has tests/reliability/test_nightly.py's
    round), 10 in the long one, a third of N with JUDGED_FAULTS=N."""
    setting = os.environ.get("JUDGED_FAULTS", "short")
    return 0 if setting == "short" else 10 if setting == "long" else max(1, int(setting) // 3)


@pytest.mark.skipif(concurrent_nightly_rounds() == 0, reason="the long run's rounds (JUDGED_FAULTS=long); CI runs one "
                    "in tests/reliability/test_nightly.py")
def test_two_nightlies_on_one_inbox_never_crash_and_record_each_file_once(
    prefect_harness: str, tmp_path: Path
) -> None:
    """Rounds of two nightly processes started together on one inbox (four runs and a bad file each), while an
    analyst queries: both exit 0, each file has one `nightly` row, nothing stays in the inbox or its claims."""
    rounds = concurrent_nightly_rounds()
    assert os.environ["PREFECT_API_URL"] == prefect_harness  # the children's server, through the fork server
    warehouse = tmp_path / "warehouse"
    judgment_set_id = ingest_judgments(str(QRELS), str(warehouse)).id
    analysts = Analysts(warehouse)
    thread = threading.Thread(target=analysts.run, daemon=True)
    thread.start()
    crashes: list[str] = []
    files: list[str] = []
    try:
        for round_ in range(rounds):
            inbox = tmp_path / f"inbox-{round_}"
            files += make_inbox(inbox, 2 * round_) + make_inbox(inbox, 2 * round_ + 1)
            (inbox / f"bad-{round_}.txt").write_text("q1 Q0 d1 one 3.0 bad\n")
            files.append(f"bad-{round_}.txt")
            args = ["nightly", str(warehouse), 2 * round_, judgment_set_id, "", str(inbox)]
            children = [_start_child(args) for _ in range(2)]
            for child in children:
                try:
                    child.message(timeout=900)
                except AssertionError as error:
                    crashes.append(str(error))
                child.process.join(timeout=60)
                if child.process.exitcode != 0:
                    crashes.append(f"a nightly child exited {child.process.exitcode}")
            assert [p.name for p in inbox.iterdir() if p.is_file()] == []
            assert not (inbox / CLAIMED).exists() or list((inbox / CLAIMED).iterdir()) == []
    finally:
        analysts.stop.set()
        thread.join(timeout=60)
    assert crashes == []
    recorded = content(warehouse)["nightly"]
    assert sorted(row[0] for row in recorded) == sorted(files) and all(row[-1] == 1 for row in recorded)
    assert sum(row[1] == "rejected" for row in recorded) == rounds
    assert analysts.errors == [] and analysts.queries > 0
    print(f"\ntwo nightlies on one inbox: {rounds} rounds, {2 * rounds} processes, {len(crashes)} crashes; "
          f"{len(recorded)} files, each recorded once; analysts: {analysts.queries} queries, "
          f"{len(analysts.errors)} errors")
