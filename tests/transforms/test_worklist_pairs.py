"""The pairs objective of the worklist (transforms.worklist.pairs_worklist, pair_states) on small synthetic cases, read
as benchmarks/judging_loop.py reads the 59 DL 2020 runs (each run's top k, `candidate_rows`, with more rows below):
judging the worklist's first documents, in its order, never widens any pair's mean difference interval, and a pair
once decided is never decided the other way, nor undecided again, and agrees with the fully judged difference.

And a known limit, kept as a strict xfail: a pair's interval ranges over the documents either of its two runs
retrieved. When nothing hides below the lists read (each list read whole), a document only a third run retrieved
can still raise the shared ideal once judged relevant, and move the pair's interval off its former range."""

from __future__ import annotations

import itertools
import random

import polars as pl
import pytest

from judged.schemas.spec import PRESETS
from judged.transforms.judging import ranked_and_judged
from judged.transforms.measures import per_query_values
from judged.transforms.ranking import candidate_rows
from judged.transforms.worklist import pair_states, pairs_worklist
from tests.transforms.test_ndcg import judgment_frame, run_frame

SCALE = (0, 1, 2, 3)
SPEC = PRESETS["trec_eval"].with_options(cutoffs=(3,))
RUNS = ("a", "b", "c", "d")
QUERIES = ("q1", "q2", "q3")
PAIRS = pl.LazyFrame(list(itertools.combinations(RUNS, 2)), schema=["baseline", "run"], orient="row")
Grades = dict[tuple[str, str], int]


def synthetic(
    seed: int, queries: tuple[str, ...] = QUERIES
) -> tuple[dict[str, list[tuple[str, str, float]]], Grades]:
    """Four runs over `queries` (three) of 9 documents each, each run retrieving 5 to 8 of them (scores from 4
    values, so ties occur), and every retrieved document's true grade (0 for 40% of them, else uniform over the
    scale)."""
    rng = random.Random(seed)
    runs: dict[str, list[tuple[str, str, float]]] = {name: [] for name in RUNS}
    truth: Grades = {}
    for query in queries:
        pool = [f"d{i}" for i in range(9)]
        for name in RUNS:
            for doc in rng.sample(pool, rng.randint(5, 8)):
                runs[name].append((query, doc, float(rng.choice((1, 2, 3, 4)))))
                truth.setdefault((query, doc), rng.choice(SCALE) if rng.random() < 0.6 else 0)
    return runs, truth


def frame_of(judgments: Grades) -> pl.LazyFrame:
    return judgment_frame([(q, d, g) for (q, d), g in sorted(judgments.items())])


def ranked_of(runs: dict, judgments: Grades, whole: bool) -> pl.LazyFrame:
    """Every run's ranked-and-judged rows with `run`, as `flows.engine.evaluate.ranked_rows` builds them: the top k
    (`candidate_rows`), or each list read whole."""
    def candidates(rows):
        run = run_frame(rows)
        return run.with_columns(n_retrieved=pl.len().over("query_id")) if whole else candidate_rows(run, SPEC)

    return pl.concat([
        ranked_and_judged(candidates(rows), frame_of(judgments), SPEC).with_columns(run=pl.lit(name))
        for name, rows in runs.items()
    ])


def states_of(runs: dict, judgments: Grades, whole: bool = False) -> dict[tuple[str, str], dict]:
    _, per_pair = pair_states(ranked_of(runs, judgments, whole), frame_of(judgments), SPEC, SCALE, PAIRS)
    return {(r["baseline"], r["run"]): r for r in per_pair.iter_rows(named=True)}


def start_of(runs: dict, truth: Grades) -> Grades:
    """The true grades of the top 2 of runs a and b in every query."""
    start: Grades = {}
    for query, name in itertools.product(QUERIES, ("a", "b")):
        top = sorted((r for r in runs[name] if r[0] == query), key=lambda r: (-r[2], r[1]))[:2]
        start.update({(query, doc): truth[query, doc] for _, doc, _ in top})
    return start


def assert_nested(before: dict, after: dict) -> None:
    for pair, old in before.items():
        assert after[pair]["mean_difference_min"] >= old["mean_difference_min"] - 1e-12, pair
        assert after[pair]["mean_difference_max"] <= old["mean_difference_max"] + 1e-12, pair


@pytest.mark.slow  # judges five documents one at a time, recomputing every pair's interval
def test_judging_the_worklist_in_order_never_widens_nor_reverses() -> None:
    runs, truth = synthetic(1)
    start = start_of(runs, truth)
    listed, states = pairs_worklist(ranked_of(runs, start, False), frame_of(start), SPEC, SCALE, PAIRS, budget=5)
    assert listed["position"].to_list() == [1, 2, 3, 4, 5]
    assert not set(zip(listed["query_id"], listed["doc_id"], strict=True)) & set(start)
    at_start = states_of(runs, start)
    assert {p: s["decided"] for p, s in at_start.items()} == {
        (r["baseline"], r["run"]): r["decided"] for r in states.iter_rows(named=True)
    }
    assert not any(s["decided"] for s in at_start.values())

    # The first document, whatever its grade, narrows or keeps every pair's interval.
    first = (listed["query_id"][0], listed["doc_id"][0])
    for grade in SCALE:
        assert_nested(at_start, states_of(runs, {**start, first: grade}))

    # Judged in the worklist's order with the true grades: nested intervals, no reversal, the truth's sign.
    truth_frame = frame_of(truth)
    means = {name: per_query_values(run_frame(rows), truth_frame, SPEC).collect()["value"].mean()
             for name, rows in runs.items()}
    judged, previous, direction = dict(start), at_start, {}
    for query, doc in zip(listed["query_id"], listed["doc_id"], strict=True):
        judged[query, doc] = truth[query, doc]
        now = states_of(runs, judged)
        assert_nested(previous, now)
        for pair, state in now.items():
            if pair in direction:
                assert state["decided_direction"] == direction[pair], pair  # never reversed nor undone
            elif state["decided"]:
                direction[pair] = state["decided_direction"]
                assert (means[pair[1]] > means[pair[0]]) == (direction[pair] == "run"), pair
        previous = now
    assert len(direction) >= 3  # the five documents decided pairs


@pytest.mark.xfail(strict=True, reason="a pair's interval covers only its two runs' documents: with each list read "
                   "whole, judging a document only a third run retrieved can raise the ideal beyond it")
def test_a_document_neither_run_retrieved_can_move_a_pair_when_lists_are_read_whole() -> None:
    runs, truth = synthetic(6)
    start = {(q, d): truth[q, d] for q, d in [("q1", "d6"), ("q1", "d7"), ("q1", "d0"), ("q1", "d3"), ("q1", "d4"),
                                               ("q1", "d2"), ("q1", "d5")]}
    start.update({key: grade for key, grade in truth.items() if key[0] != "q1"})
    assert all(doc != "d1" for q, doc, _ in runs["b"] + runs["c"] if q == "q1")  # only runs a retrieves d1
    before = states_of(runs, start, whole=True)
    after = states_of(runs, {**start, ("q1", "d1"): 2}, whole=True)
    assert_nested(before, after)


def test_priorities_are_widths_of_the_mean_whatever_pairs_are_asked_about() -> None:
    """A document's priority is the width it removes from the pairs' aggregate intervals (each query's weight over
    the queries' total): asking also about pairs that have no width left (a run against itself) changes nothing,
    and a pair the full judgments decide could be decided, at best, by judging every listed document."""
    runs, truth = synthetic(1)
    runs["e"] = list(runs["a"])
    start = start_of(runs, truth)
    ranked = ranked_of(runs, start, False)
    one = pl.LazyFrame({"baseline": ["a"], "run": ["b"]})
    with_copy = pl.LazyFrame({"baseline": ["a", "a"], "run": ["b", "e"]})
    alone, _ = pairs_worklist(ranked, frame_of(start), SPEC, SCALE, one, budget=50)
    beside, states = pairs_worklist(ranked, frame_of(start), SPEC, SCALE, with_copy, budget=50)
    assert alone.height > 0
    assert alone.select("query_id", "doc_id", "priority").equals(beside.select("query_id", "doc_id", "priority"))
    # Removing all of a pair's width is removing mean_difference_max - mean_difference_min.
    pair = states.filter(pl.col("run") == "b").row(0, named=True)
    assert alone["width_removed"].sum() / len(QUERIES) == pytest.approx(
        pair["mean_difference_max"] - pair["mean_difference_min"], rel=1e-9
    )
    assert not pair["decided"] and states_of(runs, truth)["a", "b"]["decided"]
    assert pair["could_decide"]


def test_a_batch_counts_no_query_width_twice() -> None:
    """The list is one batch judged together: what its documents remove from one (pair, query) interval adds up to
    no more than that interval's width, and each document is priced by the width the ones before it left."""
    runs, truth = synthetic(3)
    start = start_of(runs, truth)
    ranked = ranked_of(runs, start, False)
    worlds, _ = pair_states(ranked, frame_of(start), SPEC, SCALE, PAIRS)
    listed, _ = pairs_worklist(ranked, frame_of(start), SPEC, SCALE, PAIRS, budget=100)
    assert listed["priority"].is_sorted(descending=True)  # the lazy greedy's gains only shrink
    total_width = worlds.join(
        pl.DataFrame({"baseline": [b for b, _ in PAIRS.collect().iter_rows()],
                      "run": [r for _, r in PAIRS.collect().iter_rows()]}), on=["baseline", "run"]
    )["width"].sum()
    assert listed["width_removed"].sum() <= total_width + 1e-9


def test_the_same_inputs_in_another_order_give_the_same_bits() -> None:
    # Every sum of the worklist (a pair's mean difference bounds, a document's priority, what a batch removes) adds
    # in an order of its own keys, not in the order the runs' rows, the judgments and the pairs came in: rounding
    # then never moves a number printed, a pair's `decided` or a document's place in the list.
    runs, truth = synthetic(11, tuple(f"q{i}" for i in range(40)))
    judged = dict(random.Random(11).sample(sorted(truth.items()), len(truth) // 3))
    ranked = ranked_of(runs, judged, whole=False).collect()
    judgments = frame_of(judged).collect()
    found = set()
    for seed in range(4):
        shuffle = random.Random(seed)
        rows = shuffle.sample(range(ranked.height), ranked.height)
        listed, states = pairs_worklist(
            ranked[rows].lazy(), judgments.sample(fraction=1.0, shuffle=True, seed=seed).lazy(), SPEC, SCALE,
            PAIRS.collect().sample(fraction=1.0, shuffle=True, seed=seed).lazy(), 30)
        found.add(repr((listed.rows(), states.sort("baseline", "run").rows())))
    assert len(found) == 1
