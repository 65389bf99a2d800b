"""`judged.compare` and `judged.worklist`: the Python API of comparisons and worklists, with the JSON field names."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import judged

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "trec-dl-2020-sample"
QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUNS = {name: SAMPLE / "runs" / f"input.{name}.gz" for name in ("DoRA_Large", "p_bm25", "pash_r3")}


def test_compare_says_which_pairs_are_decided() -> None:
    comparison = judged.compare(QRELS, RUNS, measures=["nDCG@10"], preset="trec_eval")
    assert comparison.baseline == "DoRA_Large"
    pairs = {row["run"]: row for row in comparison.pairs.iter_rows(named=True)}
    # pash_r3 beats DoRA_Large whatever its unjudged documents are; p_bm25 against DoRA_Large stays open.
    assert pairs["pash_r3"]["decided"] and pairs["pash_r3"]["decided_direction"] == "run"
    assert pairs["pash_r3"]["mean_difference_min"] > 0
    assert not pairs["p_bm25"]["decided"] and pairs["p_bm25"]["decided_direction"] is None
    assert pairs["p_bm25"]["mean_difference_min"] < 0 < pairs["p_bm25"]["mean_difference_max"]
    assert comparison.summary.row(0, named=True) | {} == {"measure": "nDCG", "cutoff": 10, "pairs": 2,
                                                         "pairs_decided": 1}
    per_query = comparison.per_query
    assert {"difference_min", "difference_max", "difference_kind", "robustness"} <= set(per_query.columns)
    inside = per_query.select(
        ((pl.col("difference_min") <= pl.col("difference")) & (pl.col("difference") <= pl.col("difference_max"))).all()
    ).item()
    assert inside and set(per_query["difference_kind"].cast(pl.String).unique()) <= {"exact", "bound"}
    # The paired interval is never wider than what the two per-run intervals allow.
    assert per_query.select(
        (pl.col("difference_min") >= pl.col("run_value_min") - pl.col("baseline_value_max") - 1e-12).all()
        & (pl.col("difference_max") <= pl.col("run_value_max") - pl.col("baseline_value_min") + 1e-12).all()
    ).item()


def test_compare_takes_what_evaluate_takes_and_refuses_with_its_errors() -> None:
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}
    runs = {"x": {"q1": {"a": 2.0, "u": 1.0}, "q2": {"c": 1.0}}, "y": {"q1": {"u": 2.0, "a": 1.0}, "q2": {"v": 1.0}}}
    comparison = judged.compare(qrels, runs, measures="nDCG@10", baseline="y")
    assert comparison.baseline == "y" and comparison.pairs.height == 1
    with pytest.raises(judged.InputError, match="at least two runs"):
        judged.compare(qrels, {"x": runs["x"]})
    with pytest.raises(judged.SpecError, match="runs must be a dict"):
        judged.compare(qrels, 5)
    with pytest.raises(judged.InputError, match="--baseline 'z' is none of the runs"):
        judged.compare(qrels, runs, baseline="z")


@pytest.mark.slow  # two worklists of three DL runs; the fast loop has the worklists of tests/transforms
def test_worklist_returns_the_documents_to_judge_first() -> None:
    listed = judged.worklist(QRELS, RUNS, budget=7, cutoff=10, preset="trec_eval")
    assert listed.columns == ["query_id", "doc_id", "priority", "rank"] and listed.height == 7
    assert listed["rank"].to_list() == list(range(1, 8))
    assert listed["priority"].to_list() == sorted(listed["priority"].to_list(), reverse=True)
    width = judged.worklist(QRELS, RUNS, budget=7, objective="width", preset="trec_eval")
    assert width.height == 7 and width.columns == listed.columns
    with pytest.raises(judged.SpecError, match="budget must be a positive"):
        judged.worklist(QRELS, RUNS, budget=0)
    with pytest.raises(judged.SpecError, match="expected pairs or width"):
        judged.worklist(QRELS, RUNS, objective="depth")
