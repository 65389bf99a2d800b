"""Which run a comparison takes as baseline when none is named, and why (flows/engine/compare.py
`choose_baseline`): the first run listed by the user; for the nightly's runs, in no order of the user's, the previous
stored comparison's baseline when it is among them, else the first in name order. No Prefect needed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.engine.compare import IncomparableError, choose_baseline
from judged.flows.store.kinds import COMPARISON
from judged.flows.store.warehouse import Store

RUNS = ["pash_r3", "p_bm25", "DoRA_Large"]


def with_comparison(store: Store, identifier: str, baseline: str, created_at: datetime) -> None:
    """A stored comparison record (the record is what the rule reads)."""
    row = {name: None for name in COMPARISON.record.schema} | {
        "comparison_id": identifier, "evaluation_ids": [], "run_names": RUNS, "baseline": baseline,
        "created_at": created_at, "notes": [],
    }
    path = store.ensure().record_path(COMPARISON, identifier)
    pl.DataFrame([row], schema=COMPARISON.record.schema).write_parquet(path)


def test_a_named_baseline_is_taken_and_an_unknown_one_refused_when_the_runs_are_listed() -> None:
    assert choose_baseline(None, RUNS, "p_bm25") == ("p_bm25", "named as the baseline")
    with pytest.raises(IncomparableError, match="--baseline 'nope' is none of the runs compared"):
        choose_baseline(None, RUNS, "nope")


def test_runs_listed_by_the_user_take_the_first_listed() -> None:
    name, reason = choose_baseline(None, RUNS, None)
    assert name == "pash_r3" and reason.startswith("the first run given")


def test_the_nightly_takes_the_first_in_name_order_without_an_earlier_comparison(tmp_path: Path) -> None:
    name, reason = choose_baseline(Store(tmp_path / "warehouse"), RUNS, None, listed=False)
    assert name == "DoRA_Large"  # byte order: upper case first
    assert "no stored comparison has one of these runs as its baseline: the first run in name order" in reason


def test_the_nightly_keeps_the_previous_comparisons_baseline(tmp_path: Path) -> None:
    store = Store(tmp_path / "warehouse")
    with_comparison(store, "a" * 32, "pash_r3", datetime(2026, 1, 1, tzinfo=UTC))
    with_comparison(store, "b" * 32, "p_bm25", datetime(2026, 1, 2, tzinfo=UTC))
    with_comparison(store, "c" * 32, "other_run", datetime(2026, 1, 3, tzinfo=UTC))  # not among tonight's runs
    name, reason = choose_baseline(store, RUNS, None, listed=False)
    assert name == "p_bm25"
    assert reason.startswith(f"the baseline of the previous stored comparison {'b' * 12} (2026-01-02 00:00 UTC")
    # A configured baseline wins; one that is none of tonight's runs does not stop the night, and is named.
    assert choose_baseline(store, RUNS, "pash_r3", listed=False) == ("pash_r3", "named as the baseline")
    name, reason = choose_baseline(store, RUNS, "gone", listed=False)
    assert name == "p_bm25" and reason.startswith("the baseline named, 'gone', is none of these runs; the baseline of")


def test_the_comparison_says_which_baseline_and_why(tmp_path: Path) -> None:
    qrels, run_a, run_b = tmp_path / "qrels.txt", tmp_path / "a.txt", tmp_path / "b.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    run_a.write_text("q1 Q0 d1 1 2.0 zeta\nq2 Q0 d3 1 2.0 zeta\n")
    run_b.write_text("q1 Q0 d4 1 2.0 alpha\nq2 Q0 d2 1 2.0 alpha\n")
    result = CliRunner().invoke(app, ["compare", str(qrels), str(run_a), str(run_b), "--format", "json",
                                      "--permutations", "100", "--resamples", "100"])
    assert result.exit_code == 0, result.output
    assert "baseline: zeta, the first run given (name another with --baseline)" in json.loads(result.stdout)["notes"]


def test_nightly_takes_a_baseline() -> None:
    result = CliRunner().invoke(app, ["nightly", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--baseline" in result.stdout


@pytest.mark.parametrize("command", ["nightly", "serve"])
def test_nightly_takes_all_or_baseline_pairs_and_refuses_a_list(command: str, tmp_path) -> None:
    help_text = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).stdout
    assert "--pairs" in help_text
    result = CliRunner().invoke(app, [command, "--pairs", "p_bm25:pash_r3", "--warehouse", str(tmp_path / "w"),
                                      "--inbox", str(tmp_path / "inbox")], env={"COLUMNS": "200"})
    assert result.exit_code != 0 and not (tmp_path / "w").exists()
    assert result.output.strip().splitlines() == [
        "judged: error: --pairs: 'p_bm25:pash_r3': the nightly job takes all or baseline (its runs change night by "
        "night; compare listed pairs with judged compare --pairs A:B)"]
