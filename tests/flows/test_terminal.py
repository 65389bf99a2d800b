"""Tables read at a glance (issue 38): `judged compare` of five runs, evaluate's table, `show` and `sql` at 80
columns keep every run name and every number whole (a table too wide is split into parts that repeat the run
column), and piped they are plain lines, one per row. The 80-column output is printed, so `pytest -s` (or a
failure's captured output) shows it as a user's terminal would."""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.report.terminal import Column, Kind, TextTable, layout, print_table

RUN_NAMES = ("bm25-baseline", "bm25+rm3-tuned", "splade-v3-distil", "colbertv2-rerank", "monot5-3b-rerank")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# A terminal of 80 columns, to rich (TTY_COMPATIBLE=1: the output is a terminal though the test captures it).
TERMINAL_80 = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "PREFECT_API_URL": None}
PIPED = {"COLUMNS": "80", "TTY_COMPATIBLE": None, "FORCE_COLOR": None, "NO_COLOR": "1", "PREFECT_API_URL": None}


@pytest.fixture(scope="module")
def five_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Graded judgments of 30 queries (some documents left unjudged) and five runs of realistic names that differ
    by how much noise is in their scores."""
    folder = tmp_path_factory.mktemp("five-runs")
    generator = random.Random(38)
    grades = {(q, d): generator.choice([0, 0, 1, 2, 3]) for q in range(30) for d in range(40) if d % 7}
    qrels = folder / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {grade}\n" for (q, d), grade in grades.items()))
    runs = []
    for number, name in enumerate(RUN_NAMES):
        lines = []
        for q in range(30):
            scores = {d: grades.get((q, d), 1) + generator.gauss(0, 0.5 + number) for d in range(40)}
            ranked = sorted(scores, key=lambda d: -scores[d])
            lines += [f"q{q} Q0 d{d} {rank} {scores[d]:.6f} {name}\n" for rank, d in enumerate(ranked, start=1)]
        run = folder / f"{name}.txt"
        run.write_text("".join(lines))
        runs.append(run)
    return qrels, runs


def invoke(arguments: list[object], env: dict[str, str | None]) -> str:
    result = CliRunner().invoke(app, [str(item) for item in arguments], env=env)
    assert result.exit_code == 0, result.output
    return ANSI.sub("", result.stdout)


def compared(five_runs: tuple[Path, list[Path]], env: dict[str, str | None]) -> tuple[str, dict]:
    qrels, runs = five_runs
    options = ["--cutoffs", "10", "--permutations", "500", "--resamples", "500"]
    text = invoke(["compare", qrels, *runs, *options], env)
    numbers = json.loads(invoke(["compare", qrels, *runs, *options, "--format", "json"], PIPED))
    return text, numbers


def p_text(value: float) -> str:
    """A p-value as the table prints it (flows/report/comparison.py)."""
    return f"{value:.4f}" if value >= 1e-3 else f"{value:.0e}"


def _pair_lines(lines: list[str], row: dict) -> list[str]:
    """The table lines of one pair (better, worse: its two key columns)."""
    return [line for line in lines if line.split()[:2] == [row["better"], row["worse"]]]


def test_compare_of_five_runs_at_80_columns_keeps_run_names_and_numbers_whole(five_runs) -> None:  # type: ignore[no-untyped-def]
    text, numbers = compared(five_runs, TERMINAL_80)
    print(f"\n--- judged compare, five runs, an 80-column terminal ---\n{text}--- end ---")
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text
    assert len(numbers["pair_table"]) == 10  # every pair of five runs
    for row in numbers["pair_table"]:
        mine = _pair_lines(lines, row)
        assert len(mine) >= 2  # the table is split into parts, each with both run names whole
        cells = " ".join(line.split(None, 2)[2] for line in mine).split()
        for value in ("p_t", "p_randomization", "p_adjusted", "p_tukey_hsd"):
            assert p_text(row[value]) in cells, (value, row[value], mine)
        assert f"{row['mean_difference']:+.3f}" in cells
        assert f"{row['ci_low']:+.3f}..{row['ci_high']:+.3f}" in cells
        assert f"{row['mean_difference_min']:+.3f}..{row['mean_difference_max']:+.3f}" in cells
        assert f"{row['wins']}/{row['ties']}/{row['losses']}" in cells
        assert ("yes" if row["decided"] else "no") in cells and ("yes" if row["significant"] else "no") in cells
    headers = " ".join(line for line in lines if line.startswith("better "))
    for header in ("diff", "over unjudged", "95% CI", "p t", "p rand", "p holm", "decided", "signif.", "p HSD", "d_z",
                   "W/T/L", "unres."):
        assert header in headers


def test_compare_piped_prints_plain_lines_one_per_pair(five_runs) -> None:  # type: ignore[no-untyped-def]
    text, numbers = compared(five_runs, PIPED)
    assert not set(text) & set("─━│┃╭╰…")
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("better "))
    assert header.split() == ["better", "worse", "diff", "over", "unjudged", "95%", "CI", "p", "holm", "decided",
                              "signif.", "n", "p", "t", "p", "rand", "p", "HSD", "d_z", "W/T/L", "unres."]
    for row in numbers["pair_table"]:
        (line,) = _pair_lines(lines, row)
        cells = line.split()
        assert cells[2] == f"{row['mean_difference']:+.3f}" and cells[5] == p_text(row["p_adjusted"])
        assert [p_text(row[value]) for value in ("p_t", "p_randomization", "p_tukey_hsd")] == cells[9:12]
    legend = next(line for line in lines if line.startswith("diff: mean per-query difference"))
    assert legend.endswith("unres.: queries whose sign the missing judgments leave open")  # one line, not wrapped
    assert next(line for line in lines if line.startswith("Three kinds of doubt.")).endswith("as non-relevant.")


def test_evaluate_and_sql_tables_at_80_columns_and_piped(five_runs, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    qrels, runs = five_runs
    options = ["--measures", "nDCG@10,AP(rel=2)@100,Judged(convention=trec_eval)@10,RBP(p=0.9,rel=2),P@5"]
    terminal = invoke(["evaluate", qrels, *runs, *options], TERMINAL_80)
    print(f"\n--- judged evaluate, an 80-column terminal ---\n{terminal}--- end ---")
    assert max(len(line) for line in terminal.splitlines()) <= 80
    # The longest measure name leaves no room for every column: two parts, each repeating the names whole.
    for measure in ("nDCG@10", "AP(rel=2)@100", "Judged(convention=trec_eval)@10", "RBP(p=0.9,rel=2)", "P@5"):
        assert sum(line.startswith(measure + "  ") for line in terminal.splitlines()) == 2 * 5
    headers = " ".join(line for line in terminal.splitlines() if line.startswith("measure "))
    assert headers.split() == 5 * ["measure", "value", "scored", "missing", "measure", "undefined", "no",
                                   "judgments", "unjudged", "share"]
    piped = invoke(["evaluate", qrels, *runs, *options], PIPED)
    header = [line for line in piped.splitlines() if line.startswith("measure ")]
    assert len(header) == 5 and header[0].split() == ["measure", "value", "scored", "missing", "undefined", "no",
                                                      "judgments", "unjudged", "share"]
    assert max(len(line) for line in piped.splitlines()) > 80  # the widest-queries lines are not wrapped

    # sql: a hash (64 characters) beside numbers, in a terminal too narrow for the hash whole.
    from judged.flows.cli.app import _print_rows

    columns = ["evaluation_id", "run_name", "value", "n_scored"]
    rows = [("ab" * 32, name, 0.25 * i, 30) for i, name in enumerate(RUN_NAMES)]
    out = io.StringIO()
    monkeypatch.setattr("judged.flows.report.terminal.output_console",
                        lambda stderr=False: Console(file=out, width=60, force_terminal=True, no_color=True))
    _print_rows(columns, rows, "table")
    text = ANSI.sub("", out.getvalue())
    print(f"\n--- judged sql, a 60-column terminal ---\n{text}--- end ---")
    assert max(len(line) for line in text.splitlines()) <= 60
    for name in RUN_NAMES:
        assert name in text  # whole: the hash takes the rest of the room, folded
    hash_lines = [line.split()[0] for line in text.splitlines() if line.startswith(("ab", "ba"))]
    assert "".join(hash_lines) == "ab" * 32 * len(RUN_NAMES)  # nothing of it lost


def rendered(table: TextTable, width: int) -> str:
    out = io.StringIO()
    print_table(table, Console(file=out, width=width, force_terminal=True, no_color=True, legacy_windows=False))
    return ANSI.sub("", out.getvalue())


WIDE = TextTable(
    [Column("run", Kind.NAME, key=True), *(Column(f"column {i}") for i in range(10))],
    [(name, *(f"{-0.123456 * (i + 1):+.6f}" for i in range(10))) for name in RUN_NAMES],
    title="a table wider than the terminal",
)


@pytest.mark.parametrize("width", [200, 80, 60, 40])
def test_a_wide_table_splits_into_parts_that_repeat_the_key_column(width: int) -> None:
    text = rendered(WIDE, width)
    assert max(len(line) for line in text.splitlines()) <= width
    parts = layout(WIDE, width)
    assert parts is not None and [indexes[0] for indexes, _ in parts] == [0] * len(parts)
    assert sorted(i for indexes, _ in parts for i in indexes[1:]) == list(range(1, 11))  # every column once
    assert (len(parts) == 1) == (width == 200)
    for name in RUN_NAMES:
        assert sum(line.startswith(name + " ") for line in text.splitlines()) == len(parts)
    for i in range(10):
        assert text.count(f"{-0.123456 * (i + 1):+.6f}") == len(RUN_NAMES)  # every number whole


def test_too_narrow_for_a_part_each_row_is_a_block_and_nothing_is_cut() -> None:
    assert layout(WIDE, 24) is None
    text = rendered(WIDE, 24)
    assert "…" not in text
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 24
    for name in RUN_NAMES:
        assert name in lines
    assert f"  column 9: {-0.123456 * 10:+.6f}" in lines


def test_parts_are_as_even_as_they_can_be() -> None:
    """Three wide columns and three narrow ones in 40 columns: two parts either way, the widest as narrow as it can
    be (two wide columns in the first part, not three)."""
    table = TextTable([Column("k", Kind.NAME, key=True), *(Column("c", Kind.NUMBER) for _ in range(6))],
                      [("key", *("9" * 10 for _ in range(3)), "1", "2", "3")])
    parts = layout(table, 40)
    assert parts is not None and [indexes for indexes, _ in parts] == [[0, 1, 2], [0, 3, 4, 5, 6]]


def test_piped_a_row_is_one_line_aligned_by_cells_on_screen() -> None:
    table = TextTable([Column("query", Kind.TEXT, key=True), Column("value")],
                      [("two\nlines", "0.5"), ("检索", "0.25")])
    out = io.StringIO()
    print_table(table, Console(file=out, width=80, no_color=True))
    assert out.getvalue().splitlines() == ["query       value", "two\\nlines    0.5", "检索         0.25"]
