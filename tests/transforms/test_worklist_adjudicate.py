"""The adjudicate objective of the worklist (transforms.worklist.adjudication_worklist) on a hand-worked case: one
query, two assessors who disagree on one passage, two runs whose order that passage decides; adjudicating it (an
adjudicator's grade settles the pair: transforms.assessors) decides the pair either way."""

from __future__ import annotations

import polars as pl
import pytest

from judged.schemas.spec import PRESETS
from judged.transforms.assessors import resolve_assessors
from judged.transforms.judging import ranked_and_judged
from judged.transforms.worklist import adjudication_worklist, pair_states
from tests.transforms.test_ndcg import run_frame

SPEC = PRESETS["trec_eval"].with_options(cutoffs=(10,), assessor_model="set")
SCALE = (0, 1, 2)
PAIRS = pl.LazyFrame({"baseline": ["A"], "run": ["B"]})
RUNS = {"A": [("q1", "d2", 1.0)], "B": [("q1", "d1", 1.0)]}


def assessed(extra: list[tuple[str, str, int, str]] = ()) -> pl.LazyFrame:
    """d1: a and b say 1; d2: a says 0, b says 2; then `extra` rows (query, doc, grade, assessor)."""
    rows = [("q1", "d1", 1, "a"), ("q1", "d1", 1, "b"), ("q1", "d2", 0, "a"), ("q1", "d2", 2, "b"), *extra]
    return pl.LazyFrame(
        {"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows], "relevance": [r[2] for r in rows],
         "assessor": [r[3] for r in rows], "source_line": list(range(1, len(rows) + 1))},
        schema_overrides={"relevance": pl.Int32},
    )


def state_of(judgments: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    resolved = resolve_assessors(judgments, "set", SCALE, adjudicators=["carol"])
    ranked = pl.concat([ranked_and_judged(run_frame(rows).with_columns(n_retrieved=pl.len().over("query_id")),
                                          resolved, SPEC).with_columns(run=pl.lit(name))
                        for name, rows in RUNS.items()])
    return ranked, resolved


def test_adjudicating_the_one_disputed_passage_decides_the_pair() -> None:
    ranked, resolved = state_of(assessed())
    # Gains linear, nDCG@10. d2 = 0: ideal 1 (d1), A = 0, B = 1: B - A = 1.
    # d2 = 2: ideal 2 + 1/log2(3) = 2.63093, A = 2/2.63093 = 0.76019, B = 1/2.63093 = 0.38009: B - A = -0.38009.
    _, states = pair_states(ranked, resolved, SPEC, SCALE, PAIRS)
    (state,) = states.iter_rows(named=True)
    assert state["mean_difference_min"] == pytest.approx(-1 / (2 + 1 / 1.5849625007211563), abs=1e-12)
    assert state["mean_difference_max"] == pytest.approx(1.0) and not state["decided"]

    listed, states = adjudication_worklist(ranked, resolved, SPEC, SCALE, PAIRS, budget=5)
    # Only d2 is disputed; its need is min(1, 0.38009) and it covers all of it: priority 1.
    assert listed.select("position", "query_id", "doc_id", "best_rank", "evaluations").rows() == [
        (1, "q1", "d2", 1, ["A", "B"])]
    assert listed["priority"][0] == pytest.approx(1.0)
    assert states["could_decide"].to_list() == [True]

    # Adjudicated 2 (an adjudicator's row beside a's and b's): A ahead by 0.38009, decided; adjudicated 0: B by 1.
    for grade, direction, low, high in ((2, "baseline", -0.38009, -0.38009), (0, "run", 1.0, 1.0)):
        ranked, resolved = state_of(assessed([("q1", "d2", grade, "carol")]))
        _, states = pair_states(ranked, resolved, SPEC, SCALE, PAIRS)
        (state,) = states.iter_rows(named=True)
        assert state["decided_direction"] == direction
        assert (state["mean_difference_min"], state["mean_difference_max"]) == pytest.approx((low, high), abs=1e-5)
        listed, _ = adjudication_worklist(ranked, resolved, SPEC, SCALE, PAIRS, budget=5)
        assert listed.height == 0  # nothing disputed is left to settle


def test_the_objective_needs_a_set_model() -> None:
    ranked, resolved = state_of(assessed())
    with pytest.raises(ValueError, match="needs the assessor model set or range"):
        adjudication_worklist(ranked, resolved, SPEC.with_options(assessor_model="median"), SCALE, PAIRS, budget=5)
