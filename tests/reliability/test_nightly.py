"""A night survives bad runs, and two nightly processes can share one inbox.

Inputs are the seed fixture (data/seed: one query, documents graded 3, 0, 2 in returned order): its NDCG@10 is
(3 + 0 + 2/log2(4)) / (3 + 2/log2(3) + 0) = 4 / 4.2619 = 0.9386. Runs that differ only by their tag are different
runs with the same value.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.pipeline.flows import nightly
from judged.flows.pipeline.nightly import CLAIMED, RUN_WAS_NEW
from judged.flows.pipeline.tasks import ingest_file
from judged.flows.store.sql import run_query
from judged.flows.store.warehouse import Store
from judged.schemas.spec import PRESETS
from tests.conftest import REPO
from tests.helpers import tree_listing

SEED_QRELS = REPO / "data" / "seed" / "qrels.txt"
SEED_NDCG_10 = 0.9386
SPEC = PRESETS["trec_eval"].with_options(cutoffs=(10,))
runner = CliRunner()


def seed_run(tag: str) -> str:
    return f"q1 Q0 d1 1 3.0 {tag}\nq1 Q0 d2 2 2.0 {tag}\nq1 Q0 d3 3 1.0 {tag}\n"


REPEATED_DOCUMENT = "q1 Q0 d1 1 3.0 rep\nq1 Q0 d2 2 2.0 rep\nq1 Q0 d1 3 1.0 rep\n"


def test_a_run_its_evaluation_refuses_is_rejected_before_storing_and_the_night_goes_on(
    prefect_harness: str, tmp_path: Path
) -> None:
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.run").write_text(seed_run("a"))
    (inbox / "b-repeated.run").write_text(REPEATED_DOCUMENT)  # run_duplicates = error (the trec_eval preset)
    (inbox / "c.run").write_text(seed_run("c"))
    report = nightly(str(inbox), str(SEED_QRELS), [SPEC.canonical_json()], str(warehouse))

    assert set(report.rejected) == {"b-repeated.run"}
    assert "duplicate" in report.rejected["b-repeated.run"] and "line 3" in report.rejected["b-repeated.run"]
    assert len(report.evaluated) == 2
    assert sorted(p.name for p in (inbox / "processed").iterdir()) == ["a.run", "c.run"]
    assert "line 3" in (inbox / "rejected" / "b-repeated.run.error.txt").read_text()
    assert not any((inbox / CLAIMED).iterdir())
    store = Store(warehouse)
    rows = run_query(store, "SELECT file, outcome, run_id IS NULL FROM nightly ORDER BY file").rows
    assert rows == [("a.run", "evaluated", False), ("b-repeated.run", "rejected", True), ("c.run", "evaluated", False)]
    # Nothing of the refused run was stored: only the two good runs are in the warehouse.
    assert run_query(store, "SELECT count(*) FROM runs").rows == [(2,)]
    values = run_query(store, "SELECT value FROM summary").rows
    assert [v for (v,) in values] == pytest.approx([SEED_NDCG_10] * 2, abs=5e-5)


def test_evaluate_into_a_warehouse_refuses_before_storing(prefect_harness: str, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    good, repeated = tmp_path / "good.run", tmp_path / "repeated.run"
    good.write_text(seed_run("good"))
    repeated.write_text(REPEATED_DOCUMENT)
    assert runner.invoke(app, ["evaluate", str(SEED_QRELS), str(good), "--warehouse", str(warehouse)]).exit_code == 0
    before = tree_listing(warehouse)
    duplicated_qrels = tmp_path / "qrels.txt"
    duplicated_qrels.write_text(SEED_QRELS.read_text() + "q1 0 d1 1\n")
    for arguments in ([str(SEED_QRELS), str(repeated)], [str(duplicated_qrels), str(good)],
                      [str(SEED_QRELS), str(good), "--query-set", "judged_strict", "--gain-map", "0=0,3=3"]):
        result = runner.invoke(app, ["evaluate", *arguments, "--warehouse", str(warehouse)])
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith("judged: error: ") and len(result.stderr.strip().splitlines()) == 1
        assert tree_listing(warehouse) == before, arguments


TWO_NIGHTLIES = textwrap.dedent(
    """
    import sys
    from judged.flows.pipeline.flows import nightly
    report = nightly(sys.argv[1], sys.argv[2], [sys.argv[3]], sys.argv[4])
    print(len(report.evaluated), len(report.rejected))
    """
)


def test_two_nightly_processes_on_one_inbox_handle_each_file_once(prefect_harness: str, tmp_path: Path) -> None:
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    inbox.mkdir()
    names = [f"run-{i:02d}.txt" for i in range(8)]
    for name in names:
        (inbox / name).write_text(seed_run(name))
    (inbox / "bad.txt").write_text("q1 Q0 d1 one 3.0 bad\n")
    env = os.environ | {"PREFECT_API_URL": prefect_harness}
    arguments = [str(inbox), str(SEED_QRELS), SPEC.canonical_json(), str(warehouse)]
    children = [subprocess.Popen([sys.executable, "-c", TWO_NIGHTLIES, *arguments], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [child.communicate(timeout=600) for child in children]
    assert [child.returncode for child in children] == [0, 0], [err[-2000:] for _, err in outputs]
    assert sorted(p.name for p in (inbox / "processed").iterdir()) == names
    assert sorted(p.name for p in (inbox / "rejected").iterdir()) == ["bad.txt", "bad.txt.error.txt"]
    recorded = run_query(Store(warehouse), "SELECT file, count(*) FROM nightly GROUP BY file ORDER BY file").rows
    assert recorded == [("bad.txt", 1), *[(name, 1) for name in names]]
    handled = [tuple(map(int, out.split())) for out, _ in outputs]
    assert sum(evaluated for evaluated, _ in handled) == len(names)
    assert pl.read_parquet(warehouse / "summary" / "*" / "*.parquet")["value"].to_list() == pytest.approx(
        [SEED_NDCG_10] * len(names), abs=5e-5)


def test_nightly_takes_the_spec_options_evaluate_takes(prefect_harness: str, tmp_path: Path) -> None:
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "repeated.run").write_text(REPEATED_DOCUMENT)
    result = runner.invoke(app, ["nightly", "--inbox", str(inbox), "--judgments", str(SEED_QRELS), "--warehouse",
                                 str(warehouse), "--preset", "trec_eval", "--cutoffs", "10", "--run-duplicates", "first"])
    assert result.exit_code == 0, result.output
    assert "1 evaluation, 0 files rejected" in result.stdout
    # The first d1 (rank 1, score 3.0) is kept: d1, d2 graded 3, 0 -> 3 / (3 + 2/log2(3)) = 3 / 4.2619 = 0.7039.
    (value,) = run_query(Store(warehouse), "SELECT value FROM summary").rows[0]
    assert value == pytest.approx(0.7039, abs=5e-5)
    bad = runner.invoke(app, ["nightly", "--inbox", str(inbox), "--judgments", str(SEED_QRELS), "--warehouse",
                              str(warehouse), "--run-duplicates", "sometimes"])
    assert bad.exit_code == 2 and "run" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_nightly_prints_where_its_report_is(prefect_harness: str, tmp_path: Path) -> None:
    """Issue 38: the night's HTML report is named by its absolute path; a night without evaluations says none."""
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "seed.run").write_text(seed_run("seed"))
    arguments = ["nightly", "--inbox", str(inbox), "--judgments", str(SEED_QRELS), "--warehouse", str(warehouse),
                 "--cutoffs", "10"]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("report: ")]
    report = Path(line.removeprefix("report: "))
    assert report.is_absolute() and report.is_file() and report.parent == (warehouse / "reports").absolute()
    again = runner.invoke(app, arguments)  # the inbox is empty now
    assert again.exit_code == 0 and "report: none written (nothing was evaluated)" in again.stdout


def test_a_rerun_after_a_kill_records_the_file_as_its_first_attempt_saw_it(
    prefect_harness: str, tmp_path: Path
) -> None:
    """What a nightly killed after storing a run leaves: the claim folder (its lock free) with the file, the note
    that the run was new, and the run stored; its sidecar still in the inbox (killed before moving it too). The
    rerun records the file once, as `evaluated` with the sidecar's tag, like a night that was never killed; a file
    whose run was in the warehouse before any night took it is a `duplicate`."""
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    claim = inbox / CLAIMED / "0123456789abcdef0123456789abcdef"
    claim.mkdir(parents=True)
    (claim / "killed.run").write_text(seed_run("file-tag"))
    (inbox / "killed.run.meta.toml").write_text('tag = "sidecar-tag"\n')
    (claim / RUN_WAS_NEW).touch()
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "killed.run").write_text(seed_run("file-tag"))
    (earlier / "killed.run.meta.toml").write_text('tag = "sidecar-tag"\n')
    store = Store(warehouse).ensure()
    stored_by_the_killed_night = ingest_file(store, earlier / "killed.run", "run").id
    (inbox / "seen-before.run").write_text(seed_run("seen"))
    ingest_file(store, inbox / "seen-before.run", "run")

    nightly(str(inbox), str(SEED_QRELS), [SPEC.canonical_json()], str(warehouse))

    rows = run_query(store, "SELECT file, outcome, run_id FROM nightly ORDER BY file").rows
    assert rows[0] == ("killed.run", "evaluated", stored_by_the_killed_night)
    assert rows[1][:2] == ("seen-before.run", "duplicate") and len(rows) == 2
    assert sorted(p.name for p in (inbox / "processed").iterdir()) == [
        "killed.run", "killed.run.meta.toml", "seen-before.run"]
    assert [p.name for p in inbox.iterdir() if p.is_file()] == []
    assert not any((inbox / CLAIMED).iterdir())


def test_a_night_whose_judgments_are_bad_fails_as_a_night_and_leaves_the_runs(
    prefect_harness: str, tmp_path: Path
) -> None:
    """Conflicting duplicate judgments under the `error` policy are the judgments' fault: the night exits non-zero
    with one line saying what to fix, and every run stays in the inbox (none is moved to rejected/)."""
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.run").write_text(seed_run("a"))
    (inbox / "b.run").write_text(seed_run("b"))
    conflicting = tmp_path / "qrels.txt"
    conflicting.write_text(SEED_QRELS.read_text() + "q1 0 d1 1\n")  # d1 is judged 3 in the seed
    before = sorted(p.name for p in inbox.iterdir())
    result = runner.invoke(app, ["nightly", "--inbox", str(inbox), "--judgments", str(conflicting), "--cutoffs", "10",
                                 "--warehouse", str(warehouse)])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("judged: error:")]
    assert len(errors) == 1 and "qrels.txt" in errors[0] and "no run was taken from the inbox" in errors[0]
    assert "Traceback" not in result.output
    assert sorted(p.name for p in inbox.iterdir() if p.is_file()) == before
    rejected = inbox / "rejected"
    assert not rejected.exists() or not any(rejected.iterdir())


def test_folders_and_fifos_in_the_inbox_are_named_and_left_where_they_are(prefect_harness: str, tmp_path: Path) -> None:
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.run").write_text(seed_run("a"))
    (inbox / "more-runs").mkdir()
    os.mkfifo(inbox / "pipe.run")
    result = runner.invoke(app, ["nightly", "--inbox", str(inbox), "--judgments", str(SEED_QRELS), "--cutoffs", "10",
                                 "--warehouse", str(warehouse)])
    assert result.exit_code == 0, result.output
    assert "ignored more-runs (left in the inbox): a folder, not a run file" in result.stderr
    assert "ignored pipe.run (left in the inbox): not a regular file" in result.stderr
    assert (inbox / "more-runs").is_dir() and (inbox / "pipe.run").is_fifo()
    assert (inbox / "processed" / "a.run").is_file()


def test_the_night_names_a_qrels_file_in_the_inbox_without_an_order_to_give(prefect_harness: str, tmp_path: Path) -> None:
    """The night takes no QRELS RUN arguments: a qrels file dropped into the inbox is rejected as one that looks like
    qrels, never with "the order is QRELS RUN" (before, its error.txt said so)."""
    warehouse, inbox = tmp_path / "warehouse", tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "judgments.txt").write_text("q1 0 d1 3\nq1 0 d2 0\n")
    report = nightly(str(inbox), str(SEED_QRELS), [SPEC.canonical_json()], str(warehouse))
    error = (inbox / "rejected" / "judgments.txt.error.txt").read_text()
    assert "found 4: this looks like qrels" in error and "QRELS RUN" not in error
    assert "QRELS RUN" not in report.rejected["judgments.txt"]
