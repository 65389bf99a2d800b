"""Small hand-worked cases for each declared option of transforms.measures.ndcg (values worked out in the comments)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.transforms.judging import judged_run_rows
from judged.transforms.measures import per_query_values as per_query_ndcg
from judged.transforms.ranking import candidate_rows
from judged.transforms.summary import summarize

L2 = math.log2


def run_frame(rows: list[tuple[str, str, float]]) -> pl.LazyFrame:
    """(query, doc, score) rows; the file rank is the row order."""
    return pl.LazyFrame(
        {
            "query_id": [q for q, _, _ in rows],
            "doc_id": [d for _, d, _ in rows],
            "source_rank": list(range(1, len(rows) + 1)),
            "score": [s for _, _, s in rows],
            "run_tag": ["t"] * len(rows),
            "source_line": list(range(1, len(rows) + 1)),
        }
    )


def judgment_frame(rows: list[tuple[str, str, int | None]]) -> pl.LazyFrame:
    return pl.LazyFrame(
        {
            "query_id": [q for q, _, _ in rows],
            "doc_id": [d for _, d, _ in rows],
            "relevance": [g for _, _, g in rows],
            "source_line": list(range(1, len(rows) + 1)),
        },
        schema_overrides={"relevance": pl.Int32},
    )


def values(run: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> dict[tuple[str, int | None], float | None]:
    rows = per_query_ndcg(run, judgments, spec).collect()
    return {(r["query_id"], r["cutoff"]): r["value"] for r in rows.iter_rows(named=True)}


def rows_of(run: pl.LazyFrame, judgments: pl.LazyFrame, spec: EvaluationSpec) -> dict[tuple[str, int | None], dict]:
    rows = per_query_ndcg(run, judgments, spec).collect()
    return {(r["query_id"], r["cutoff"]): r for r in rows.iter_rows(named=True)}


# q1 returns u (unjudged), a (grade 2), b (grade 0); c (grade 1) is judged but not retrieved.
THREE_STATES_RUN = run_frame([("q1", "u", 3.0), ("q1", "a", 2.0), ("q1", "b", 1.0)])
THREE_STATES_QRELS = judgment_frame([("q1", "a", 2), ("q1", "b", 0), ("q1", "c", 1)])


def test_unjudged_stays_null_and_is_counted() -> None:
    spec = PRESETS["judged"].with_options(cutoffs=(1, 2, None))
    joined = judged_run_rows(THREE_STATES_RUN, THREE_STATES_QRELS, spec).collect().sort("rank")
    assert joined["relevance"].to_list() == [None, 2, 0]
    rows = rows_of(THREE_STATES_RUN, THREE_STATES_QRELS, spec)
    assert rows[("q1", 1)]["n_unjudged_at_k"] == 1
    assert rows[("q1", 1)]["unjudged_fraction_at_k"] == 1.0
    assert (rows[("q1", 2)]["n_relevant_at_k"], rows[("q1", 2)]["n_unjudged_at_k"]) == (1, 1)
    assert rows[("q1", 2)]["unjudged_fraction_at_k"] == 0.5
    whole = rows[("q1", None)]
    assert (whole["n_relevant_at_k"], whole["n_nonrelevant_at_k"], whole["n_unjudged_at_k"]) == (1, 1, 1)
    # DCG: 0 (unjudged as 0) + 2/log2(3); IDCG over the judged universe: 2 + 1/log2(3)
    assert whole["value"] == pytest.approx((2 / L2(3)) / (2 + 1 / L2(3)))


def test_condensed_list_removes_unjudged_before_ranking() -> None:
    spec = PRESETS["judged"].with_options(cutoffs=(1, None), unjudged="condensed")
    got = values(THREE_STATES_RUN, THREE_STATES_QRELS, spec)
    assert got[("q1", 1)] == pytest.approx(1.0)  # a moves to rank 1: 2 / 2
    assert got[("q1", None)] == pytest.approx(2 / (2 + 1 / L2(3)))  # DCG 2 + 0; IDCG 2 + 1/log2(3)
    rows = rows_of(THREE_STATES_RUN, THREE_STATES_QRELS, spec)
    assert rows[("q1", 1)]["n_unjudged_at_k"] == 1  # evidence describes the submitted ranking


def test_statuses_and_query_sets() -> None:
    run = run_frame([("q1", "a", 1.0), ("q2", "x", 1.0), ("q4", "z", 1.0)])
    qrels = judgment_frame([("q1", "a", 1), ("q2", "x", 0), ("q3", "m", 2)])
    # q1 scored; q2 judged, nothing relevant; q3 judged, missing from the run; q4 in the run only.
    judged = rows_of(run, qrels, PRESETS["judged"].with_options(cutoffs=(10,)))
    assert {q: judged[(q, 10)]["status"] for q in ("q1", "q2", "q3", "q4")} == {
        "q1": "scored",
        "q2": "no_relevant_judgments",
        "q3": "missing_from_run",
        "q4": "no_judgments",
    }
    assert [judged[(q, 10)]["value"] for q in ("q1", "q2", "q3", "q4")] == [1.0, None, 0.0, None]
    assert judged[("q4", 10)]["dcg"] is None and judged[("q4", 10)]["idcg"] is None
    trec = values(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(10,)))
    assert [trec[(q, 10)] for q in ("q1", "q2", "q3", "q4")] == [1.0, 0.0, 0.0, None]
    both = values(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(10,), query_set="both"))
    assert [both[(q, 10)] for q in ("q1", "q2", "q3", "q4")] == [1.0, 0.0, None, None]

    spec = PRESETS["judged"].with_options(cutoffs=(10,))
    summary = summarize(per_query_ndcg(run, qrels, spec), spec).collect().row(0, named=True)
    assert summary["value"] == pytest.approx(0.5)  # mean of q1 = 1 and q3 = 0; q2 undefined, q4 unjudged
    assert (summary["n_queries"], summary["n_scored"], summary["n_missing"]) == (4, 2, 1)
    assert (summary["n_undefined"], summary["n_no_judgments"]) == (1, 1)


def test_average_ties_straddling_the_cutoff() -> None:
    # scores 3, 2, 2, 1 with grades 0, 2, 0, 1: the tie group at positions 2-3 has mean gain 1.
    run = run_frame([("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 2.0), ("q", "d", 1.0)])
    qrels = judgment_frame([("q", "a", 0), ("q", "b", 2), ("q", "c", 0), ("q", "d", 1)])
    spec = PRESETS["sklearn"].with_options(cutoffs=(2, 3))
    rows = rows_of(run, qrels, spec)
    # @2: DCG = 0 + 1/log2(3) (half of the group's credit); IDCG (retrieved) = 2 + 1/log2(3)
    assert rows[("q", 2)]["value"] == pytest.approx((1 / L2(3)) / (2 + 1 / L2(3)))
    assert rows[("q", 2)]["ties_straddling_k"] == 1
    # @3: the whole group: 1/log2(3) + 1/log2(4); IDCG = 2 + 1/log2(3) + 0
    assert rows[("q", 3)]["value"] == pytest.approx((1 / L2(3) + 1 / L2(4)) / (2 + 1 / L2(3)))
    assert rows[("q", 3)]["ties_straddling_k"] == 0


def test_tie_break_by_doc_id_byte_order() -> None:
    # Equal scores: trec_eval puts the larger doc id (byte order: 'a' > 'B') first.
    run = run_frame([("q", "B", 1.0), ("q", "a", 1.0)])
    qrels = judgment_frame([("q", "B", 1)])
    desc = values(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(1,)))
    asc = values(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(1,), ties="docid_asc"))
    assert (desc[("q", 1)], asc[("q", 1)]) == (0.0, 1.0)


def test_float32_precision_creates_ties() -> None:
    # 12.3456791 > 12.3456789 in float64, but both round to the same float32.
    run = run_frame([("q", "a", 12.3456791), ("q", "z", 12.3456789)])
    qrels = judgment_frame([("q", "a", 1)])
    assert values(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(1,)))[("q", 1)] == 1.0
    # float32: tie, 'z' > 'a' comes first
    assert values(run, qrels, PRESETS["trec_eval9"].with_options(cutoffs=(1,)))[("q", 1)] == 0.0


def test_ranking_by_file_rank_and_depth() -> None:
    # file order a, b but scores say b first; a is relevant
    run = run_frame([("q", "a", 1.0), ("q", "b", 2.0)])
    qrels = judgment_frame([("q", "a", 1)])
    assert values(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(1,)))[("q", 1)] == 0.0
    assert values(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(1,), ranking="rank"))[("q", 1)] == 1.0
    # depth 1 keeps only b; the whole-list NDCG is then 0 and one document was retrieved
    rows = rows_of(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(None,), depth=1))
    assert (rows[("q", None)]["value"], rows[("q", None)]["n_retrieved"]) == (0.0, 1)


def test_gains_exponential_map_and_negative_grades() -> None:
    run = run_frame([("q", "a", 3.0), ("q", "b", 2.0), ("q", "n", 1.0)])
    qrels = judgment_frame([("q", "a", 1), ("q", "b", 3), ("q", "n", -1)])
    exp = values(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(2,), gain="exponential"))
    # gains 1, 7: DCG = 1 + 7/log2(3); IDCG = 7 + 1/log2(3)
    assert exp[("q", 2)] == pytest.approx((1 + 7 / L2(3)) / (7 + 1 / L2(3)))
    mapped = values(
        run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(2,), gain="map", gain_map=((1, 0), (3, 3)))
    )
    # grade 1 counts 0: DCG = 3/log2(3); IDCG = 3
    assert mapped[("q", 2)] == pytest.approx(1 / L2(3))
    penal = values(
        run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(3,), gain="map", gain_map=((-1, -1), (1, 1), (3, 3)))
    )
    # an explicit negative gain costs: DCG = 1 + 3/log2(3) - 1/2; IDCG = 3 + 1/log2(3) (negatives never help)
    assert penal[("q", 3)] == pytest.approx((1 + 3 / L2(3) - 0.5) / (3 + 1 / L2(3)))


def test_weighted_mean() -> None:
    run = run_frame([("q1", "a", 1.0), ("q2", "b", 1.0)])
    qrels = judgment_frame([("q1", "a", 1), ("q2", "x", 1)])  # q1 scores 1, q2 scores 0
    spec = PRESETS["judged"].with_options(
        cutoffs=(10,), aggregation="weighted_mean", query_weights=(("q1", 3.0),)
    )
    summary = summarize(per_query_ndcg(run, qrels, spec), spec).collect()
    assert summary["value"][0] == pytest.approx(3 / 4)  # (3*1 + 1*0) / (3 + 1); q2's weight defaults to 1


def test_unresolved_judgment_is_unjudged() -> None:
    run = run_frame([("q", "a", 2.0), ("q", "b", 1.0)])
    qrels = judgment_frame([("q", "a", None), ("q", "b", 1)])
    rows = rows_of(run, qrels, PRESETS["judged"].with_options(cutoffs=(1,)))
    assert rows[("q", 1)]["n_unjudged_at_k"] == 1
    assert rows[("q", 1)]["value"] == 0.0


@pytest.mark.slow  # eleven evaluations of 1,500 rows at three cutoffs
def test_repeated_evaluations_are_bit_identical() -> None:
    """Polars may add floats of a group in a different order from call to call; our sums must not."""
    import random

    rng = random.Random(7)
    run_rows = [(f"q{q}", f"d{d}", rng.random()) for q in range(5) for d in range(300)]
    qrels = judgment_frame([(f"q{q}", f"d{d}", rng.choice([0, 1, 2, 3])) for q in range(5) for d in range(0, 300, 2)])
    spec = PRESETS["judged"].with_options(cutoffs=(10, 100, None))
    first = per_query_ndcg(run_frame(run_rows), qrels, spec).collect()
    first_summary = summarize(first.lazy(), spec).collect()
    for _ in range(10):
        again = per_query_ndcg(run_frame(run_rows), qrels, spec).collect()
        assert again.equals(first)
        assert summarize(again.lazy(), spec).collect().equals(first_summary)


@pytest.mark.parametrize(
    "spec",
    [
        PRESETS["trec_eval"].with_options(cutoffs=(10,)),
        PRESETS["judged"].with_options(cutoffs=(5, 20, None)),
        PRESETS["trec_eval9"].with_options(cutoffs=(5, 20), unjudged="condensed", depth=30),
        PRESETS["sklearn"].with_options(cutoffs=(10,)),
    ],
    ids=["trec_eval@10", "judged@5,20,all", "condensed-depth", "sklearn@10"],
)
def test_interleaved_queries_give_the_result_of_grouped_ones(spec: EvaluationSpec) -> None:
    """Candidates are found per stretch of one query id: a run whose queries are interleaved (every row its own
    stretch, or a query in several blocks) must score exactly as the same rows listed query by query."""
    import random

    rng = random.Random(11)
    grouped = [(f"q{q}", f"d{d}", float(rng.randint(0, 25))) for q in range(4) for d in range(60)]  # many ties
    qrels = judgment_frame([(f"q{q}", f"d{d}", rng.choice([0, 1, 2, 3])) for q in range(4) for d in range(0, 60, 3)])
    expected = per_query_ndcg(run_frame(grouped), qrels, spec).collect()
    shuffled = grouped[:]
    rng.shuffle(shuffled)
    blocks = grouped[100:] + grouped[:100]  # q1 in two blocks around q2 and q3
    for rows in (shuffled, blocks):
        assert per_query_ndcg(run_frame(rows), qrels, spec).collect().equals(expected)


def test_candidate_rows_flag_queries_that_may_repeat_a_document() -> None:
    run = run_frame(
        [("a", "d1", 3.0), ("a", "d2", 2.0), ("b", "d1", 3.0), ("b", "d1", 1.0), ("c", "d1", 1.0), ("a", "d3", 1.0)]
    )
    candidates = candidate_rows(run, PRESETS["trec_eval"].with_options(cutoffs=(10,))).collect()
    flags = dict(candidates.group_by("query_id").agg(pl.col("docs_may_repeat").first(), pl.col("n_retrieved").first())
                 .select("query_id", pl.struct("docs_may_repeat", "n_retrieved")).iter_rows())
    # b repeats d1; a has no repeat but lies in two stretches, which only a full check can clear.
    assert flags == {
        "a": {"docs_may_repeat": True, "n_retrieved": 3},
        "b": {"docs_may_repeat": True, "n_retrieved": 2},
        "c": {"docs_may_repeat": False, "n_retrieved": 1},
    }
