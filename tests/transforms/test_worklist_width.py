"""The width objective of the judging worklist (transforms.worklist.judging_worklist) against its rule computed
directly: for every unjudged document of a run's top k (under `ties='average'`, of a tie group that starts within
k, which shares its credit with its members below k), and every grade g of the scale, the measure's interval width
W_g of an evaluation in which the document is judged g, from the engine on hand-built inputs; the document's
removed width is `sum_g p(g) (W - W_g)`. Under both doc id tie rules and `average`, condensed lists (with and
without negative grades), and measures other than nDCG."""

from __future__ import annotations

import random

import polars as pl
import pytest

from judged.schemas.spec import PRESETS, EvaluationSpec, build_spec
from judged.transforms.measures import per_query_measures
from judged.transforms.ranking import candidate_rows, rank_run
from judged.transforms.worklist import judging_worklist
from tests.transforms.test_ndcg import judgment_frame, run_frame

SCALE = (0, 1, 2, 3)
PRIOR = list(zip(SCALE, (0.4, 0.3, 0.2, 0.1), strict=True))
K = 3
SPECS: dict[str, EvaluationSpec] = {
    "docid": PRESETS["trec_eval"].with_options(cutoffs=(K,)),
    "docid-ascending": PRESETS["judged"].with_options(cutoffs=(K,), ties="docid_asc"),
    "average-ties": PRESETS["trec_eval"].with_options(cutoffs=(K,), ties="average"),
    "condensed": PRESETS["trec_eval"].with_options(cutoffs=(K,), unjudged="condensed"),
    "condensed-negative": PRESETS["judged"].with_options(cutoffs=(K,), unjudged="condensed"),
    "P@3": build_spec("trec_eval", measures="P@3"),
    "AP@3": build_spec("judged", measures="AP@3"),
}


def random_query(rng: random.Random) -> tuple[list[tuple[str, float]], list[tuple[str, int | None]]]:
    """One run's list of up to 7 documents (scores from 3 values: ties are common) and the judgments: each
    retrieved document judged with a grade of the scale (or -1), unresolved or unjudged, plus one nobody retrieved."""
    docs = [f"d{i}" for i in rng.sample(range(12), rng.randint(1, 7))]
    rows = [(doc, float(rng.choice((1, 2, 3)))) for doc in docs]
    judgments: list[tuple[str, int | None]] = []
    for doc in docs:
        draw = rng.random()
        if draw < 0.1:
            judgments.append((doc, None))
        elif draw >= 0.45:
            judgments.append((doc, rng.choice((-1, *SCALE))))
    judgments.append(("x", rng.choice(SCALE)))
    return rows, judgments


def expected_widths(queries: dict, spec: EvaluationSpec) -> dict[tuple[str, str], float]:
    """(query, document) -> the removed width, for every unjudged document the run retrieved, each world evaluated
    by the engine as a query of its own (the query's rows; its resolved judgments plus the document's grade)."""
    worlds: dict[str, tuple[str, str | None, int | None]] = {}
    run_rows, judgment_rows = [], []
    for query, (rows, judgments) in queries.items():
        resolved = [(doc, grade) for doc, grade in judgments if grade is not None]
        judged = {doc for doc, _ in resolved}
        for doc, grade in [(None, None), *((d, g) for d, _ in rows if d not in judged for g in SCALE)]:
            world = f"{query}/{doc}/{grade}"
            worlds[world] = (query, doc, grade)
            run_rows += [(world, d, score) for d, score in rows]
            judgment_rows += [(world, d, g) for d, g in resolved] + ([(world, doc, grade)] if doc else [])
    frame = per_query_measures(candidate_rows(run_frame(run_rows), spec), judgment_frame(judgment_rows), spec,
                               SCALE).collect()
    width = {world: (high - low if low is not None else None)
             for world, low, high in frame.select("query_id", "value_min", "value_max").iter_rows()}
    probability = dict(PRIOR)
    removed: dict[tuple[str, str], float] = {}
    for world, (query, doc, grade) in worlds.items():
        current, after = width[f"{query}/None/None"], width[world]
        if doc is None or current is None or after is None:
            continue
        removed[query, doc] = removed.get((query, doc), 0.0) + probability[grade] * (current - after)
    return {key: max(value, 0.0) for key, value in removed.items()}


@pytest.mark.parametrize("name", list(SPECS))
def test_width_removed_is_the_rule_on_the_engines_intervals(name: str) -> None:
    spec = SPECS[name]
    rng = random.Random(36)
    queries = {f"q{i}": random_query(rng) for i in range(40)}
    rows = [(query, doc, score) for query, (docs, _) in queries.items() for doc, score in docs]
    judgments = judgment_frame([(query, doc, grade) for query, (_, judged) in queries.items() for doc, grade in judged])
    candidates = candidate_rows(run_frame(rows), spec).with_columns(evaluation=pl.lit("a"))
    listed = judging_worklist(candidates, judgments, spec, SCALE, PRIOR, budget=1_000).collect()
    got = {(q, d): w for q, d, w in listed.select("query_id", "doc_id", "width_removed").iter_rows()}
    # A run's top k: under condensed lists, of the list without its judged documents of a negative grade.
    negative = {(query, doc) for query, (_, judged) in queries.items() for doc, grade in judged
                if grade is not None and grade < 0}
    kept = [(q, d, score) for q, d, score in rows if spec.unjudged != "condensed" or (q, d) not in negative]
    ranked = rank_run(candidate_rows(run_frame(kept), spec), spec).with_columns(
        group_first=pl.col("rank").min().over("query_id", "sort_key")).collect()
    credited = (ranked["rank"] <= K) | ((ranked["group_first"] <= K) & (spec.ties == "average"))
    top = set(ranked.filter(credited).select("query_id", "doc_id").iter_rows())
    expected = {key: width for key, width in expected_widths(queries, spec).items() if key in top}
    assert set(got) <= set(expected), set(got) - set(expected)
    moving = {key for key, width in expected.items() if width > 1e-12}
    assert moving <= set(got), f"documents whose judging moves the interval are missing: {sorted(moving - set(got))}"
    assert len(moving) >= 20
    for key, width in got.items():
        assert width == pytest.approx(expected[key], abs=1e-12), key


@pytest.mark.parametrize(
    ("spec", "queries"),
    [
        (PRESETS["judged"].with_options(cutoffs=(K,)), ["q1"]),  # nDCG undefined without a relevant document
        (PRESETS["trec_eval"].with_options(cutoffs=(K,)), ["q1", "q2"]),  # ... scored 0 under no_relevant='zero'
        (build_spec("judged", measures="P@3"), ["q1", "q2"]),  # P@3 is defined there
        (build_spec("judged", measures="AP(rel=2)@3"), []),  # q1's grade 1 is not relevant at rel 2
    ],
    ids=["nDCG-null", "nDCG-zero", "P@3", "AP(rel=2)@3"],
)
def test_the_weights_that_count_are_those_of_the_queries_with_a_value(spec: EvaluationSpec, queries: list) -> None:
    from judged.transforms.worklist import weights_of_scored

    judgments = judgment_frame([("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 0), ("q3", "d", None)])
    weights = pl.LazyFrame({"query_id": ["q2"], "weight": [4.0]})
    scored = weights_of_scored(judgments, spec, weights).collect().sort("query_id")
    assert scored["query_id"].to_list() == queries
    assert scored["weight"].to_list() == [4.0 if q == "q2" else 1.0 for q in queries]


def test_the_same_inputs_in_another_order_give_the_same_bits() -> None:
    # A document's priority sums its width removed over the evaluations, and each width removed over the grades:
    # in an order of their own keys, so the numbers printed and the list's order never depend on the input order.
    spec = SPECS["docid"]
    rng = random.Random(36)
    queries = {f"q{i}": random_query(rng) for i in range(40)}
    rows = [(query, doc, score) for query, (docs, _) in queries.items() for doc, score in docs]
    judgments = judgment_frame(
        [(query, doc, grade) for query, (_, judged) in queries.items() for doc, grade in judged]).collect()
    # Three runs of the same documents in orders of their own.
    candidates = pl.concat([
        candidate_rows(run_frame([(q, d, float(rng.choice((1, 2, 3)))) for q, d, _ in rows]), spec)
        .with_columns(evaluation=pl.lit(name))
        for name in ("a", "b", "c")
    ]).collect()
    found = set()
    for seed in range(3):
        listed = judging_worklist(
            candidates.sample(fraction=1.0, shuffle=True, seed=seed).lazy(),
            judgments.sample(fraction=1.0, shuffle=True, seed=seed).lazy(), spec, SCALE, PRIOR, budget=1_000,
        ).collect()
        found.add(repr(listed.rows()))
    assert len(found) == 1
