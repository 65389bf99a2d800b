"""Streams as inputs of `judged evaluate`: `-` (standard input), /dev/stdin and pipes (process substitution), read
once into a temporary file, with the same numbers and the same evaluation id as the file itself."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.store.streams import is_stream, materialized
from tests.conftest import REPO

SEED = REPO / "data" / "seed"
BIN = Path(sys.executable).parent
# The seed's values (SPEC section 2; worked in tests/flows/test_cli.py): NDCG@2 = 3 / (3 + 2/log2(3)).
SEED_NDCG_2 = "0.7039180890341348"


def evaluate(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["evaluate", *args, "--cutoffs", "1,2,3", "--format", "json"], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_dash_reads_the_run_from_standard_input() -> None:
    code, by_stream, _ = evaluate(str(SEED / "qrels.txt"), "-", stdin=(SEED / "run.txt").read_bytes())
    assert code == 0
    _, by_file, _ = evaluate(str(SEED / "qrels.txt"), str(SEED / "run.txt"))
    assert by_stream == by_file  # same values, same evaluation id (the content hash of the same bytes)
    assert SEED_NDCG_2 in by_stream


def test_dev_stdin_reads_the_judgments() -> None:
    code, by_stream, _ = evaluate("/dev/stdin", str(SEED / "run.txt"), stdin=(SEED / "qrels.txt").read_bytes())
    assert code == 0
    assert by_stream == evaluate(str(SEED / "qrels.txt"), str(SEED / "run.txt"))[1]


def test_a_fifo_is_read_once(tmp_path: Path) -> None:
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    assert is_stream(fifo) and not is_stream(SEED / "run.txt")
    writer = threading.Thread(target=lambda: fifo.write_bytes((SEED / "run.txt").read_bytes()))
    writer.start()
    code, by_stream, _ = evaluate(str(SEED / "qrels.txt"), str(fifo))
    writer.join(timeout=30)
    assert code == 0
    assert by_stream == evaluate(str(SEED / "qrels.txt"), str(SEED / "run.txt"))[1]


def test_process_substitution_of_a_gzipped_run() -> None:
    script = f'{BIN}/judged evaluate {SEED}/qrels.txt <(gzip -c {SEED}/run.txt) --cutoffs 2 --format trec'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"nDCG@2[judged:gain=linear]\tall\t{SEED_NDCG_2}" in done.stdout.splitlines()


def test_errors_name_the_stream_as_given() -> None:
    code, stdout, stderr = evaluate(str(SEED / "qrels.txt"), "-", stdin=b"q1 Q0 d1 one 1.0 t\n")
    assert (code, stdout) == (1, "")
    assert stderr == "judged: error: -, line 1: rank 'one' is not an integer\n"


def test_standard_input_for_two_inputs_is_refused() -> None:
    code, _, stderr = evaluate("-", "-", stdin=b"")
    assert code == 1
    assert stderr == "judged: error: -: standard input can be given for one input only\n"


def test_materialized_files_are_removed_afterwards(tmp_path: Path) -> None:
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(b"q1 0 d1 1\n"))
    writer.start()
    with materialized([SEED / "run.txt", fifo]) as (files, names):
        assert files[0] == SEED / "run.txt"
        assert files[1].read_bytes() == b"q1 0 d1 1\n"
        assert names == {str(files[1]): str(fifo)}
    writer.join(timeout=30)
    assert not files[1].exists()
