"""The direct evaluation path (judged.flows.engine): what it does beyond the transforms, here how it collects a run's
candidates a part at a time, and what a result keeps."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import judged.flows.engine
from judged.flows.engine import evaluate, plan
from judged.flows.io import load_table
from judged.flows.limits import Limits
from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.transforms.ranking import candidate_rows

SPECS = {
    "trec_eval@10": PRESETS["trec_eval"].with_options(cutoffs=(10,)),
    "judged@5,20,all": PRESETS["judged"].with_options(cutoffs=(5, 20, None)),
    "condensed-depth": PRESETS["trec_eval9"].with_options(cutoffs=(5, 20), unjudged="condensed", depth=30),
}


def run_lines(order: str) -> list[str]:
    """Six queries of 40 rows with many exact ties, listed query by query, with q1 split in two blocks far
    apart, or every row shuffled."""
    rng = random.Random(3)
    rows = [f"q{q} Q0 d{d} {d + 1} {rng.randint(0, 12)} t" for q in range(6) for d in range(40)]
    if order == "blocks":
        rows = rows[60:] + rows[:60]  # q1's rows 20-39 first, its rows 0-19 last
    elif order == "shuffled":
        rng.shuffle(rows)
    return rows


@pytest.mark.parametrize("spec_name", list(SPECS))
@pytest.mark.parametrize("order", ["grouped", "blocks", "shuffled"])
def test_candidates_in_parts_give_the_whole_runs_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str, spec_name: str
) -> None:
    """Parts end where a query id changes. A query listed in several parts (blocks, shuffled) makes the engine
    take the whole run at once: per part, its rows would be counted and ranked apart."""
    spec: EvaluationSpec = SPECS[spec_name]
    rng = random.Random(4)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {rng.randint(0, 3)}\n" for q in range(6) for d in range(0, 60, 2)))
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines(order)) + "\n")
    whole = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), spec)
    calls = []
    monkeypatch.setattr(judged.flows.engine, "candidate_rows", lambda *args: calls.append(1) or candidate_rows(*args))
    limits = Limits(candidate_part_rows=50)
    in_parts = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), spec, limits=limits)
    assert in_parts.per_query.equals(whole.per_query)
    assert in_parts.summary.equals(whole.summary)
    if order == "grouped":  # queries start at rows 0, 40, ..., 200: parts from 0, 80, 120, 160 and 200, no retake
        assert len(calls) == 5


def test_a_result_does_not_keep_its_run_alive(tmp_path: Path) -> None:
    """The result's id is made on first use from the inputs' hashes and metadata: the loaded run (its rows) can go
    as soon as the evaluation returns, and the id is the one made at once."""
    import gc
    import weakref

    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 0\n")
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines("grouped")) + "\n")
    spec = SPECS["trec_eval@10"]
    loaded = load_table(run, "run")
    judgments = load_table(qrels, "judgments")
    expected = evaluate(load_table(run, "run"), judgments, spec).evaluation_id
    result = evaluate(loaded, judgments, spec)
    gone = weakref.ref(loaded)
    del loaded
    gc.collect()
    assert gone() is None
    assert result.evaluation_id == expected


def test_results_and_tables_compare_by_identity(tmp_path: Path) -> None:
    """Regression: frozen dataclasses with generated equality over frames made `result == result` and
    `hash(result)` raise TypeError. A result, a loaded or stored table and a plan are each equal to itself only;
    two evaluations of the same inputs tell their sameness by their ids."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 0\n")
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines("grouped")) + "\n")
    judgments = load_table(qrels, "judgments")
    loaded = load_table(run, "run")
    first = evaluate(loaded, judgments, SPECS["trec_eval@10"])
    second = evaluate(loaded, judgments, SPECS["trec_eval@10"])
    planned = plan(loaded, judgments, SPECS["trec_eval@10"])
    for item in (first, loaded, judgments, planned):
        assert item == item and len({item, item}) == 1
    assert first != second and len({first, second}) == 2
    assert first.evaluation_id == second.evaluation_id == planned.evaluation_id
    assert loaded != load_table(run, "run")
