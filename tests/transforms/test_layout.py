"""The stored order of a run (transforms.layout): trec_eval's ranking per query, bands, and which specs read a head."""

from __future__ import annotations

import random

import polars as pl
import pytest

from judged.schemas.spec import PRESETS
from judged.transforms.layout import head_positions, head_rows, in_stored_order, in_stored_order_of_ranked, is_ranked
from judged.transforms.measures import per_query_values as per_query_ndcg
from judged.transforms.ranking import rank_run
from tests.transforms.test_ndcg import judgment_frame, run_frame


def test_positions_follow_score_then_doc_id_descending() -> None:
    run = run_frame(
        [("q1", "a", 1.0), ("q1", "b", 3.0), ("q1", "c", 1.0), ("q2", "x", -0.0), ("q2", "y", 0.0), ("q2", "z", 5.0)]
    )
    stored = in_stored_order(run).collect()
    order = {(r["query_id"], r["position"]): r["doc_id"] for r in stored.iter_rows(named=True)}
    # Equal scores: doc_id descending ("c" before "a"); -0.0 and 0.0 are one score ("y" before "x").
    assert order == {("q1", 1): "b", ("q1", 2): "c", ("q1", 3): "a", ("q2", 1): "z", ("q2", 2): "y", ("q2", 3): "x"}
    assert stored.filter(pl.col("query_id") == "q1")["query_rows"].to_list() == [3, 3, 3]
    assert stored.schema["position"] == pl.Int32 and stored.schema["query_rows"] == pl.Int32


def test_rows_are_written_band_by_band() -> None:
    run = run_frame([(q, f"d{i:04d}", float(-i)) for q in ("q1", "q2") for i in range(1, 1_200)])
    stored = in_stored_order(run).collect()
    assert stored["band"].to_list() == sorted(stored["band"].to_list())
    first_band = stored.filter(pl.col("band") == 0)
    assert first_band["query_id"].to_list() == ["q1"] * 11 + ["q2"] * 11
    assert first_band["position"].to_list() == list(range(1, 12)) * 2
    assert stored.group_by("band").agg(pl.col("position").max()).sort("band")["position"].to_list() == [
        11, 101, 1001, 1199
    ]


@pytest.mark.parametrize(
    ("spec", "positions"),
    [
        (PRESETS["trec_eval"].with_options(cutoffs=(10,)), 11),
        (PRESETS["judged"].with_options(cutoffs=(5, 10, 100)), 101),
        (PRESETS["judged"].with_options(cutoffs=(10, 100), depth=50), 51),
        (PRESETS["judged"].with_options(cutoffs=(10, None)), None),  # the whole list
        (PRESETS["trec_eval9"].with_options(cutoffs=(10,)), None),  # float32 scores tie differently
        (PRESETS["sklearn"].with_options(cutoffs=(10,)), None),  # averaged ties, ideal over the retrieved
        (PRESETS["judged"].with_options(cutoffs=(10,), ties="docid_asc"), None),
        (PRESETS["judged"].with_options(cutoffs=(10,), ranking="rank"), None),
        (PRESETS["judged"].with_options(cutoffs=(10,), unjudged="condensed"), None),
    ],
)
def test_which_specs_read_only_the_head(spec, positions) -> None:
    assert head_positions(spec) == positions


def test_head_gives_the_values_and_evidence_of_the_whole_run() -> None:
    # q1: a tie group (scores 2.0) straddles k=2 and runs past the head (positions 2-5); q2 has fewer rows than k.
    run = run_frame(
        [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 2.0), ("q1", "d", 2.0), ("q1", "e", 2.0), ("q1", "f", 1.0)]
        + [("q2", "x", 1.0)]
    )
    judgments = judgment_frame([("q1", "a", 1), ("q1", "c", 2), ("q1", "e", 3), ("q1", "f", 3), ("q2", "x", 1)])
    spec = PRESETS["trec_eval"].with_options(cutoffs=(2,))
    whole = per_query_ndcg(run, judgments, spec).collect()
    head = per_query_ndcg(head_rows(in_stored_order(run), head_positions(spec)), judgments, spec).collect()
    assert head.equals(whole)
    q1 = head.filter(pl.col("query_id") == "q1").row(0, named=True)
    assert q1["ties_straddling_k"] == 1 and q1["n_retrieved"] == 6


def test_rows_of_a_stored_run_are_ordered_by_their_position_not_ranked_again() -> None:
    # Positions deliberately contradict the scores: a stored run's position is its order under the stored ranking,
    # so a spec that follows it takes the rows in position order; any other ranking sorts by its own key.
    rows = pl.LazyFrame(
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0], "position": [3, 1, 2]},
        schema_overrides={"position": pl.Int32},
    )
    by_position = rank_run(rows, PRESETS["judged"]).collect()
    assert by_position["doc_id"].to_list() == ["b", "c", "a"] and by_position["rank"].to_list() == [1, 2, 3]
    by_score = rank_run(rows, PRESETS["trec_eval9"]).collect()  # float32 scores: not the stored order
    assert by_score["doc_id"].to_list() == ["a", "b", "c"]


def ranked_run(seed: int) -> list[tuple[str, str, float]]:
    """Queries in file order that is not their byte order, each in rank order with its tie groups' documents in
    random order; a one-row query; -0.0 beside 0.0; queries deeper than the last band's start."""
    rng = random.Random(seed)
    rows = []
    for query in ("q9", "q10", "q1", "q100", "q2"):
        depth = 1 if query == "q2" else rng.randint(1, 1_300)
        scores = sorted((rng.randint(-3, 60) / 2 for _ in range(depth)), reverse=True)
        docs = [f"d{doc}" for doc in rng.sample(range(100_000), depth)]
        by_score: dict[float, list[str]] = {}
        for score, doc in zip(scores, docs, strict=True):
            by_score.setdefault(score, []).append(doc)
        for score, members in by_score.items():
            rng.shuffle(members)
            rows += [(query, doc, -0.0 if score == 0 and rng.random() < 0.5 else score) for doc in members]
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_a_ranked_run_takes_the_same_order_without_a_sort(seed: int) -> None:
    run = run_frame(ranked_run(seed))
    assert is_ranked(run).collect().item()
    assert in_stored_order_of_ranked(run).collect().equals(in_stored_order(run).collect())


@pytest.mark.parametrize(
    "rows",
    [
        [("q1", "a", 1.0), ("q1", "b", 2.0)],  # a score grows within a query
        [("q1", "a", 2.0), ("q2", "b", 2.0), ("q1", "c", 1.0)],  # a query in two stretches
    ],
    ids=["score-grows", "query-split"],
)
def test_rows_out_of_rank_order_are_not_ranked(rows: list[tuple[str, str, float]]) -> None:
    assert not is_ranked(run_frame(rows)).collect().item()
