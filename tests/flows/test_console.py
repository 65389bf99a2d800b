"""The `judged` console script (judged.flows.console): the inputs whose hashes it starts before the command line
loads, and that it starts them then."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judged.flows.console import inputs_hashed_ahead

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(3) for d in range(0, 10, 2)))
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {100 - d} t\n" for q in range(3) for d in range(10)))
    return qrels, run


@pytest.mark.parametrize(
    ("extra", "hashed"),
    [
        ([], True),  # the default table shows the evaluation id
        (["--format", "json"], True),
        (["--format", "trec"], False),  # trec_eval's lines show no id: nothing is hashed
        (["--format=trec"], False),
        (["--format", "trec", "--format", "json"], True),  # Typer keeps the last
        (["--format", "trec", "--warehouse", "w"], False),  # the command starts them itself, as before
    ],
)
def test_evaluate_hashes_the_files_it_names_unless_it_prints_trec_lines(
    inputs: tuple[Path, Path], extra: list[str], hashed: bool
) -> None:
    qrels, run = inputs
    named = ["evaluate", str(qrels), str(run), "--preset", "trec_eval", *extra]
    assert inputs_hashed_ahead(named) == ([qrels, run] if hashed else [])


def test_only_existing_regular_files_of_evaluate_are_hashed_ahead(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    qrels, run = inputs
    assert inputs_hashed_ahead(["evaluate", str(qrels), "-", str(tmp_path), str(tmp_path / "missing.txt"),
                                str(run)]) == [qrels, run]
    assert inputs_hashed_ahead(["compare", str(qrels), str(run)]) == []
    assert inputs_hashed_ahead(["ingest-run", str(run)]) == []
    assert inputs_hashed_ahead([]) == []


def test_the_console_script_starts_the_hashes_before_the_command_line_loads(inputs: tuple[Path, Path]) -> None:
    """`main` hands `hash_ahead` the inputs before `judged.flows.cli` (Typer, the spec models) is imported, and the
    command takes those hashes: each file is hashed once, and the output is the command line's."""
    qrels, run = inputs
    script = (
        "import atexit, json, sys\n"
        "import judged.flows.store.hashing as hashing\n"
        "calls, hashed = [], []\n"
        "ahead, hashes = hashing.hash_ahead, hashing.content_hashes\n"
        "hashing.hash_ahead = lambda paths: calls.append(([str(p) for p in paths], 'judged.flows.cli' in sys.modules))"
        " or ahead(paths)\n"
        "hashing.content_hashes = lambda path: hashed.append(str(path)) or hashes(path)\n"
        "atexit.register(lambda: print(json.dumps({'calls': calls, 'hashed': hashed}), file=sys.stderr))\n"
        "sys.argv = ['judged', 'evaluate', sys.argv[1], sys.argv[2], '--preset', 'trec_eval', '--format', 'json']\n"
        "from judged.flows.console import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(qrels), str(run)], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    seen = json.loads(done.stderr.strip().splitlines()[-1])
    assert seen["calls"][0] == [[str(qrels), str(run)], False]
    assert sorted(seen["hashed"]) == sorted([str(qrels), str(run)])
    direct = subprocess.run([sys.executable, "-m", "judged.flows.cli", "evaluate", str(qrels), str(run), "--preset",
                             "trec_eval", "--format", "json"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(done.stdout) == json.loads(direct.stdout)
