"""Empty inputs and ignored run columns, as the command line treats them.

An input without rows (an empty file, blank or comment lines only, a 0-row Parquet table) is refused unless
`--allow-empty`; then it evaluates as the method says (docs/method.md): an empty run leaves every judged query
missing from the run (scored 0 and counted as missing under the query set `judged`), empty judgments leave every
query of the run without judgments (never scored: the mean is undefined, not 0). Run lines with more than six
columns are read as trec_eval reads them, with one warning naming the count and the first such line.

Inputs are the seed fixture (data/seed: query q1, documents graded 3, 0, 2 in returned order).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.pipeline.nightly import REJECTED
from judged.flows.store.sql import run_query
from judged.flows.store.warehouse import Store
from tests.conftest import REPO

runner = CliRunner()
SEED_QRELS = REPO / "data" / "seed" / "qrels.txt"
SEED_RUN = REPO / "data" / "seed" / "run.txt"


def evaluated(*arguments: str) -> dict:
    result = runner.invoke(app, ["evaluate", *arguments, "--cutoffs", "10", "--format", "json", "--allow-empty"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["evaluations"][0]


@pytest.mark.parametrize("content", ["", "\n\n", "  \t\n"], ids=["empty", "blank lines", "blanks"])
def test_an_allowed_empty_run_scores_every_judged_query_as_missing(tmp_path: Path, content: str) -> None:
    run = tmp_path / "run.txt"
    run.write_text(content)
    evaluation = evaluated(str(SEED_QRELS), str(run))
    (summary,) = evaluation["summary"]
    assert (summary["value"], summary["n_scored"], summary["n_missing"]) == (0.0, 1, 1)
    assert summary["mean_unjudged_fraction"] is None  # no retrieved document: no share (never NaN)
    assert [row["status"] for row in evaluation["per_query"]] == ["missing_from_run"]


@pytest.mark.parametrize("content", ["", "# to be judged\n"], ids=["empty", "comments only"])
def test_allowed_empty_judgments_score_nothing_and_the_mean_is_undefined(tmp_path: Path, content: str) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(content)
    evaluation = evaluated(str(qrels), str(SEED_RUN))
    (summary,) = evaluation["summary"]
    assert (summary["value"], summary["n_scored"], summary["n_no_judgments"]) == (None, 0, 1)
    assert [row["status"] for row in evaluation["per_query"]] == ["no_judgments"]


def test_an_empty_file_in_the_inbox_is_rejected_with_its_reason_unless_allowed(
    prefect_harness: str, tmp_path: Path
) -> None:
    warehouse = tmp_path / "warehouse"
    for night, allow in enumerate(([], ["--allow-empty"])):
        inbox = tmp_path / f"inbox-{night}"
        inbox.mkdir()
        (inbox / "empty.run").write_text("\n")
        (inbox / "good.run").write_text(SEED_RUN.read_text())
        result = runner.invoke(app, ["nightly", "--inbox", str(inbox), "--judgments", str(SEED_QRELS), "--warehouse",
                                     str(warehouse), "--cutoffs", "10", *allow])
        assert result.exit_code == 0, result.output
    rows = run_query(Store(warehouse), "SELECT file, outcome, error FROM nightly ORDER BY outcome, file").rows
    # night 0: empty.run rejected; night 1 (--allow-empty): evaluated; good.run evaluated, then already stored
    assert [row[:2] for row in rows] == [("good.run", "duplicate"), ("empty.run", "evaluated"),
                                         ("good.run", "evaluated"), ("empty.run", "rejected")]
    assert "has no rows" in rows[-1][2] and "--allow-empty" in rows[-1][2]
    assert "has no rows" in (tmp_path / "inbox-0" / REJECTED / "empty.run.error.txt").read_text()
    assert not (tmp_path / "inbox-1" / REJECTED / "empty.run").exists()


def test_ingest_run_stores_an_empty_run_only_when_allowed(prefect_harness: str, tmp_path: Path) -> None:
    warehouse, run = tmp_path / "warehouse", tmp_path / "empty.txt"
    run.write_text("")
    refused = runner.invoke(app, ["ingest-run", str(run), "--warehouse", str(warehouse)])
    assert refused.exit_code == 1 and "has no rows" in refused.stderr
    assert not (warehouse / "runs").exists() or not any((warehouse / "runs").glob("*.parquet"))
    stored = runner.invoke(app, ["ingest-run", str(run), "--warehouse", str(warehouse), "--allow-empty"])
    assert stored.exit_code == 0, stored.output
    assert run_query(Store(warehouse), "SELECT n_rows FROM runs").rows == [(0,)]


WIDE_RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t extra\nq1 Q0 d3 3 1.0 t more columns\n"


def test_extra_run_columns_are_ignored_with_one_warning(tmp_path: Path) -> None:
    wide = tmp_path / "wide.txt"
    wide.write_text(WIDE_RUN)
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(wide), "--cutoffs", "10", "--format", "trec"])
    six = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(SEED_RUN), "--cutoffs", "10", "--format", "trec"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == six.stdout.splitlines()[0]  # the same value as the six-column run
    warnings = [line for line in result.stderr.splitlines() if line.startswith("judged: warning:")]
    assert warnings == [f"judged: warning: {wide}, line 2: 2 lines have more than 6 columns; the columns after the "
                        "sixth were ignored, as trec_eval ignores them (a document id with a space?)"]


def test_extra_run_columns_are_warned_of_once_through_the_warehouse(prefect_harness: str, tmp_path: Path) -> None:
    wide = tmp_path / "wide-once.txt"  # a file of its own: a file is warned of once per process
    wide.write_text(WIDE_RUN)
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(wide), "--cutoffs", "10",
                                 "--warehouse", str(tmp_path / "warehouse")])
    assert result.exit_code == 0, result.output
    assert sum("more than 6 columns" in line for line in result.stderr.splitlines()) == 1
