"""A FIFO or pipe given as an input never keeps a command waiting without a word, nor (with --input-timeout)
without bound: after a moment without input one line on stderr says what is awaited, and --input-timeout ends the
wait with one error line, exit 1, before anything is stored. Real FIFOs (os.mkfifo), written by a thread; every
test is bounded in time even if the wait is not (a late writer then opens and closes the FIFO)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from tests.conftest import REPO

runner = CliRunner()
SEED_QRELS = REPO / "data" / "seed" / "qrels.txt"
SEED_RUN = REPO / "data" / "seed" / "run.txt"
# Past every bound a test expects to hold: a writer then ends a wait the fix should have ended, and the test fails.
LATE = 15.0


def _write_later(fifo: Path, seconds: float, content: bytes = b"") -> threading.Thread:
    """A writer that opens `fifo` after `seconds`, writes `content` and closes it (a reader then sees its end)."""
    def write() -> None:
        time.sleep(seconds)
        try:
            descriptor = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader any more: nothing to end
            return
        try:
            os.set_blocking(descriptor, True)
            os.write(descriptor, content)
        except OSError:
            pass
        finally:
            os.close(descriptor)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def test_a_fifo_nobody_writes_to_ends_at_the_input_timeout(tmp_path: Path) -> None:
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    warehouse = tmp_path / "warehouse"
    writer = _write_later(fifo, LATE)
    started = time.monotonic()
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(fifo), "--input-timeout", "2",
                                 "--warehouse", str(warehouse)])
    elapsed = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [
        f"judged: waiting for input on {fifo} ...",
        f"judged: error: {fifo}: no input for 2 s (--input-timeout): nothing was read from it",
    ]
    assert 2 <= elapsed < LATE - 3, elapsed
    assert not warehouse.exists()
    assert writer.is_alive()  # the late writer finds no reader and ends by itself


def test_a_fifo_written_late_is_awaited_with_one_line_and_evaluated(tmp_path: Path) -> None:
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    writer = _write_later(fifo, 2.0, SEED_RUN.read_bytes())
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(fifo), "--cutoffs", "10", "--format", "trec",
                                 "--input-timeout", str(LATE)])
    writer.join(LATE)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"judged: waiting for input on {fifo} ..."]
    direct = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(SEED_RUN), "--cutoffs", "10", "--format", "trec"])
    assert result.stdout == direct.stdout and "\tall\t0.938557" in result.stdout


def test_a_fifo_that_stalls_mid_stream_ends_at_the_input_timeout(tmp_path: Path) -> None:
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    first_line = SEED_RUN.read_bytes().splitlines(keepends=True)[0]

    def stall() -> None:  # one line, then silence with the FIFO held open, then its end
        descriptor = os.open(fifo, os.O_WRONLY)
        try:
            os.write(descriptor, first_line)
            time.sleep(LATE)
        finally:
            os.close(descriptor)
    writer = threading.Thread(target=stall, daemon=True)
    writer.start()
    started = time.monotonic()
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(fifo), "--input-timeout", "1.5"])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        f"judged: error: {fifo}: no input for 1.5 s (--input-timeout): nothing was read from it")
    assert time.monotonic() - started < LATE - 3


def test_a_ready_pipe_says_nothing_about_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)

    def write() -> None:  # waits for the reader, then writes at once
        fifo.write_bytes(SEED_RUN.read_bytes())
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(fifo), "--cutoffs", "10", "--input-timeout",
                                 str(LATE)])
    writer.join(LATE)
    assert result.exit_code == 0, result.output
    assert "waiting" not in result.stderr


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "86401", "soon"])
def test_a_bad_input_timeout_is_refused_before_any_read(tmp_path: Path, value: str) -> None:
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)  # nobody writes: the value is refused before the FIFO is opened
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(fifo), "--input-timeout", value])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("judged: error: --input-timeout ") and len(result.stderr.splitlines()) == 1
    assert "86,400" in result.stderr or "is not a number" in result.stderr
