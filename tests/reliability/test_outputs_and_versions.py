"""Outputs never land inside a warehouse or on a file judged did not make, their checks run before anything is
stored, and judgment version labels mean one set each.

`report --out` and `worklist --out` refuse a path inside a warehouse (its catalog, a stored part, a new file in
it) and an existing file unless --force, before the comparison or worklist is stored; `ingest-judgments` refuses a
version label its name already has (from --version, the sidecar or --extends) unless it is the very same set, and
`--extends` refuses a grade off the declared scale, an unknown --worklist and a parent-child cycle; `compare` and
`report` with --warehouse refuse an unknown --baseline, or one run given twice, before files or --rebase store
evaluations. Each refusal is one `judged: error:` line, with the warehouse byte for byte as it was. Uses the session's
Prefect server.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from judged.flows.cli.app import app
from tests.helpers import assert_refused as refused, tree_listing

QRELS = "".join(f"q{q} 0 d{d} {(q + d) % 4}\n" for q in range(1, 5) for d in range(1, 6))
RUNS = {
    name: "".join(f"q{q} Q0 d{d} {rank} {10 - rank + shift} {name}\n"
                  for q in range(1, 5) for rank, d in enumerate(order, start=1))
    for name, order, shift in (("alpha", (1, 2, 3, 4, 5, 6), 0), ("beta", (5, 4, 3, 2, 1, 7), 0.5))
}
GRADES = ["--grade", "0=no", "--grade", "1=some", "--grade", "2=good", "--grade", "3=perfect"]


def judged(*arguments: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in arguments])




@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "qrels.txt").write_text(QRELS)
    for name, rows in RUNS.items():
        (folder / f"{name}.txt").write_text(rows)
    return folder


@pytest.fixture(scope="module")
def stored(prefect_harness: str, inputs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A warehouse with the judgment set `toy@v1` (grades 0-3 declared) and both runs evaluated against it."""
    warehouse = tmp_path_factory.mktemp("stored") / "warehouse"
    result = judged("ingest-judgments", inputs / "qrels.txt", "--name", "toy", "--version", "v1", *GRADES,
                    "--warehouse", warehouse)
    assert result.exit_code == 0, result.output
    result = judged("evaluate", "toy", inputs / "alpha.txt", inputs / "beta.txt", "--cutoffs", "5",
                    "--warehouse", warehouse, "--format", "json")
    assert result.exit_code == 0, result.output
    evaluations = sorted(path.stem for path in (warehouse / "evaluations").glob("*.parquet")
                         if not path.name.startswith("_"))
    assert len(evaluations) == 2
    return {"warehouse": warehouse, "evaluations": evaluations}


# -- report --out and worklist --out ------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["catalog.duckdb", "summary/{evaluation}/part-0.parquet", "report.html",
                                    "evaluations/{evaluation}.parquet"])
def test_report_out_refuses_any_path_inside_the_warehouse(stored: dict, inputs: Path, target: str) -> None:
    warehouse = stored["warehouse"]
    out = warehouse / target.format(evaluation=stored["evaluations"][0])
    before = tree_listing(warehouse)
    for force in ([], ["--force"]):  # --force replaces a file of one's own, never the warehouse's
        result = judged("report", inputs / "qrels.txt", inputs / "alpha.txt", "--out", out, *force)
        refused(result, 2, f"--out is inside the warehouse {warehouse.resolve()}", str(out))
    assert tree_listing(warehouse) == before
    result = judged("sql", "SELECT count(*) AS n FROM evaluations", "--warehouse", warehouse, "--format", "csv")
    assert result.exit_code == 0 and result.stdout.splitlines() == ["n", "2"]


def test_report_out_refuses_an_existing_file_unless_forced(inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "notes.html"
    out.write_text("someone's notes\n")
    result = judged("report", inputs / "qrels.txt", inputs / "alpha.txt", inputs / "beta.txt", "--out", out)
    refused(result, 2, "--out already exists: give --force to replace it", str(out))
    assert out.read_text() == "someone's notes\n"
    result = judged("report", inputs / "qrels.txt", inputs / "alpha.txt", inputs / "beta.txt", "--out", out,
                    "--force", "--permutations", "100", "--resamples", "100")
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>") and sorted(tmp_path.iterdir()) == [out]


def test_a_refused_report_stores_no_comparison(stored: dict, tmp_path: Path) -> None:
    warehouse = stored["warehouse"]
    (tmp_path / "a-file").write_text("")
    before = tree_listing(warehouse)
    # /proc passes os.access for root, yet no file can be made there (before, the comparison was stored first).
    for out, message in ((tmp_path / "a-file" / "report.html", "--out cannot be written"),
                         (tmp_path, "--out is a folder"),
                         (tmp_path / "a-file", "--out already exists"),
                         (Path("/proc/report.html"), "--out cannot be written: no file can be made in /proc"),
                         (Path("/proc/self/new/report.html"), "--out cannot be written")):
        result = judged("report", *stored["evaluations"], "--warehouse", warehouse, "--out", out,
                        "--permutations", "100", "--resamples", "100")
        refused(result, 2, message, str(out))
        assert tree_listing(warehouse) == before


def test_a_refused_worklist_is_not_stored(stored: dict, tmp_path: Path) -> None:
    warehouse = stored["warehouse"]
    (tmp_path / "a-file").write_text("mine\n")
    before = tree_listing(warehouse)
    for out, message in ((tmp_path / "a-file" / "list.txt", "--out cannot be written"),
                         (tmp_path / "a-file", "--out already exists"),
                         (warehouse / "list.txt", "--out is inside the warehouse"),
                         (Path("/proc/list.txt"), "--out cannot be written: no file can be made in /proc")):
        result = judged("worklist", "--judgments", "toy", "--budget", 3, "--cutoff", 6, "--warehouse", warehouse,
                        "--out", out)
        refused(result, 2, message, str(out))
        assert tree_listing(warehouse) == before
    assert (tmp_path / "a-file").read_text() == "mine\n"
    refused(judged("worklist", "--judgments", "toy", "--warehouse", warehouse, "--force"), 2, "give --out too")
    result = judged("worklist", "--judgments", "toy", "--budget", 3, "--cutoff", 6, "--warehouse", warehouse,
                    "--out", tmp_path / "a-file", "--force")
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "a-file").read_text().splitlines()) == 3


# -- version labels -------------------------------------------------------------------------------------------------


@pytest.fixture()
def versioned(prefect_harness: str, inputs: Path, tmp_path: Path) -> Path:
    """A warehouse with toy@v1 (grades 0-3 declared) and toy@v2 extending it by one pair."""
    warehouse = tmp_path / "warehouse"
    result = judged("ingest-judgments", inputs / "qrels.txt", "--name", "toy", "--version", "v1", *GRADES,
                    "--warehouse", warehouse)
    assert result.exit_code == 0, result.output
    (tmp_path / "answers.txt").write_text("q1 0 d6 2\n")
    result = judged("ingest-judgments", tmp_path / "answers.txt", "--extends", "toy@v1", "--version", "v2",
                    "--warehouse", warehouse)
    assert result.exit_code == 0 and "1 pair added" in result.stdout, result.output
    return warehouse


def _sets(warehouse: Path) -> list[str]:
    result = judged("sql", "SELECT name || '@' || version AS label FROM judgment_sets ORDER BY label",
                    "--warehouse", warehouse, "--format", "csv")
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()[1:]


def test_extends_refuses_a_label_its_name_has(versioned: Path, tmp_path: Path) -> None:
    (tmp_path / "more.txt").write_text("q2 0 d7 1\n")
    before = tree_listing(versioned)
    for parent, label in (("toy@v2", "v1"), ("toy@v1", "v2"), ("toy", "v1")):
        result = judged("ingest-judgments", tmp_path / "more.txt", "--extends", parent, "--version", label,
                        "--warehouse", versioned)
        refused(result, 1, f"judgment set 'toy' has a version '{label}' already", f"--version {label}")
        assert tree_listing(versioned) == before
    assert _sets(versioned) == ["toy@v1", "toy@v2"]


def test_ingest_refuses_a_taken_label_unless_it_is_the_same_set(versioned: Path, inputs: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.txt"
    other.write_text(QRELS.replace("q1 0 d1 2", "q1 0 d1 3"))
    before = tree_listing(versioned)
    result = judged("ingest-judgments", other, "--name", "toy", "--version", "v1", "--warehouse", versioned)
    refused(result, 1, "judgment set 'toy' has a version 'v1' already", "--version v1")
    (tmp_path / "other.txt.meta.toml").write_text('name = "toy"\nversion = "v2"\n')
    result = judged("ingest-judgments", other, "--warehouse", versioned)
    refused(result, 1, "judgment set 'toy' has a version 'v2' already", "--version v2")
    assert tree_listing(versioned) == before
    # The very same set again is stored already, and reused.
    result = judged("ingest-judgments", inputs / "qrels.txt", "--name", "toy", "--version", "v1", *GRADES,
                    "--warehouse", versioned)
    assert result.exit_code == 0 and "already in the warehouse: nothing new written" in result.stdout, result.output
    assert _sets(versioned) == ["toy@v1", "toy@v2"]


def test_extends_refuses_a_grade_off_the_declared_scale_and_an_unknown_worklist(
    versioned: Path, tmp_path: Path
) -> None:
    answers = tmp_path / "off-scale.txt"
    answers.write_text("q3 0 d8 1\nq3 0 d9 7\n")
    before = tree_listing(versioned)
    result = judged("ingest-judgments", answers, "--extends", "toy", "--version", "v3", "--warehouse", versioned)
    refused(result, 1, "grade 7 is not on the declared scale of toy@v2 (0, 1, 2, 3)", f"{answers}, line 2")
    answers.write_text("q3 0 d8 1\n")
    result = judged("ingest-judgments", answers, "--extends", "toy", "--version", "v3", "--worklist", "no-such-list",
                    "--warehouse", versioned)
    refused(result, 1, "no worklist with id 'no-such-list'", "--worklist")
    assert tree_listing(versioned) == before


def test_an_extends_rerun_says_nothing_was_added(versioned: Path, tmp_path: Path) -> None:
    before = tree_listing(versioned)
    result = judged("ingest-judgments", tmp_path / "answers.txt", "--extends", "toy@v1", "--version", "v2",
                    "--warehouse", versioned)
    assert result.exit_code == 0, result.output
    assert "already stored with these answers: nothing added" in result.stdout and "added," not in result.stdout
    assert tree_listing(versioned) == before


def test_extends_refuses_a_parent_child_cycle(versioned: Path, tmp_path: Path) -> None:
    # v3 revises a pair of v2; extending v3 with the answers file that made v2 (now also reverting the revision)
    # would give v2 itself, content and metadata alike: v2 would become the child of its own child.
    answers = tmp_path / "answers.txt"
    (tmp_path / "revision.txt").write_text("q1 0 d1 0\n")
    result = judged("ingest-judgments", tmp_path / "revision.txt", "--extends", "toy@v2", "--version", "v3",
                    "--revise", "--warehouse", versioned)
    assert result.exit_code == 0, result.output
    answers.write_text("q1 0 d1 2\nq1 0 d6 2\n")
    before = tree_listing(versioned)
    result = judged("ingest-judgments", answers, "--extends", "toy@v3", "--version", "v2", "--revise",
                    "--warehouse", versioned)
    refused(result, 1, "toy@v2 would be the child of its own descendant toy@v3", "--extends")
    assert tree_listing(versioned) == before


# -- compare and report: what the comparison would refuse is refused before anything is stored -------------------


@pytest.mark.parametrize("command", ["compare", "report"])
def test_an_unknown_baseline_is_refused_before_files_are_stored(
    stored: dict, inputs: Path, tmp_path: Path, command: str
) -> None:
    """Files with --warehouse are ingested and evaluated into it before they are compared: a --baseline that is none
    of their runs is refused first, and the warehouse keeps no new judgment set, run or evaluation. (Each test of
    this section evaluates under cutoffs of its own, which nothing else in the module stores.)"""
    warehouse = stored["warehouse"]
    out = ["--out", tmp_path / "report.html"] if command == "report" else []
    before = tree_listing(warehouse)
    cutoff = {"compare": "7", "report": "8"}[command]
    for place in (warehouse, tmp_path / "new-warehouse"):
        result = judged(command, inputs / "qrels.txt", inputs / "alpha.txt", inputs / "beta.txt", "--cutoffs", cutoff,
                        "--warehouse", place, "--baseline", "gamma", *out)
        # The runs in the order given: the evaluations' ids sorted, which hold the method version.
    refused(result, 1, "--baseline 'gamma' is none of the runs compared: ")
    assert sorted(result.stderr.strip().rsplit(": ", 1)[1].split(", ")) == ["alpha", "beta"]
    assert tree_listing(warehouse) == before
    assert list(tmp_path.iterdir()) == []  # neither the new warehouse nor the report


def test_an_unknown_baseline_is_refused_before_a_rebase_stores_evaluations(stored: dict) -> None:
    warehouse = stored["warehouse"]
    before = tree_listing(warehouse)
    result = judged("compare", *stored["evaluations"], "--warehouse", warehouse, "--rebase", "--cutoffs", "9",
                    "--baseline", "gamma")
    # The runs in the order given: the evaluations' ids sorted, which hold the method version.
    refused(result, 1, "--baseline 'gamma' is none of the runs compared: ")
    assert sorted(result.stderr.strip().rsplit(": ", 1)[1].split(", ")) == ["alpha", "beta"]
    assert tree_listing(warehouse) == before


def test_one_run_in_two_files_is_refused_before_it_is_stored(stored: dict, inputs: Path, tmp_path: Path) -> None:
    """Two files with the same rows and tag are one run, hence one evaluation given twice."""
    warehouse = stored["warehouse"]
    copy = tmp_path / "alpha-copy.txt"
    copy.write_text((inputs / "alpha.txt").read_text())
    before = tree_listing(warehouse)
    result = judged("compare", inputs / "qrels.txt", inputs / "alpha.txt", copy, "--cutoffs", "11",
                    "--warehouse", warehouse)
    refused(result, 1, "alpha: one evaluation (one run on one judgment set under one spec) is given twice")
    assert tree_listing(warehouse) == before
