"""The measures beyond nDCG (transforms/measures/): hand-worked cases (values worked out in the comments), and
property tests against pytrec_eval for `map`, `map_cut`, `recip_rank`, `P`, `recall` and `Rprec`."""

from __future__ import annotations

import polars as pl
import pytest
import pytrec_eval
from hypothesis import example, given, settings

from judged.schemas.measures import MEASURES
from judged.schemas.spec import EvaluationSpec, build_spec
from judged.transforms.measures import COMPUTATIONS, per_query_values
from tests.transforms.test_ndcg import judgment_frame, run_frame
from tests.transforms.test_reference_tools import (
    CUTOFF_SETS,
    FLOAT32_TIE_EXAMPLE,
    Collection,
    Cutoff,
    all_negative_queries,
    collections,
)

# One query, six retrieved documents in score order d1..d6; grades: d1 2, d2 unjudged, d3 0, d4 1, d5 -1,
# d6 unjudged; d7 (grade 3) and d8 (grade 1) are judged but never retrieved.
RUN = run_frame([("q", f"d{i}", 10.0 - i) for i in range(1, 7)])
JUDGMENTS = judgment_frame(
    [("q", "d1", 2), ("q", "d3", 0), ("q", "d4", 1), ("q", "d5", -1), ("q", "d7", 3), ("q", "d8", 1)]
)


def values(spec: EvaluationSpec, run: pl.LazyFrame = RUN, judgments: pl.LazyFrame = JUDGMENTS) -> dict:
    rows = per_query_values(run, judgments, spec).collect()
    return {(r["measure"], r["cutoff"]): r for r in rows.iter_rows(named=True)}


def test_every_declared_measure_has_a_computation() -> None:
    assert set(COMPUTATIONS) == set(MEASURES)


def test_binary_measures_by_hand() -> None:
    rows = values(build_spec("trec_eval", measures="AP,AP@3,RR,RR(rel=2)@3,P@5,R@4,R-Prec,AP(rel=2)"))
    # Relevant (grade >= 1): d1 (rank 1), d4 (rank 4); R = 4 (d1, d4, d7, d8).
    # AP = (1/1 + 2/4) / 4 = 0.375; AP@3 = (1/1) / 4 = 0.25 (the cut version still divides by R).
    assert rows["AP", None]["value"] == pytest.approx(0.375, abs=1e-12)
    assert rows["AP", 3]["value"] == pytest.approx(0.25, abs=1e-12)
    # RR = 1/1; with rel=2 only d1 (rank 1) counts: 1.
    assert rows["RR", None]["value"] == 1.0 and rows["RR(rel=2)", 3]["value"] == 1.0
    # P@5 = 2/5; R@4 = 2/4; R-Prec = relevant in the first R = 4 positions / 4 = 2/4.
    assert rows["P", 5]["value"] == pytest.approx(0.4, abs=1e-12)
    assert rows["R", 4]["value"] == pytest.approx(0.5, abs=1e-12)
    assert rows["R-Prec", None]["value"] == pytest.approx(0.5, abs=1e-12)
    # rel=2: relevant d1 (rank 1) and d7 (not retrieved): R = 2, AP = (1/1) / 2.
    assert rows["AP(rel=2)", None]["value"] == pytest.approx(0.5, abs=1e-12)
    # Evidence within the first 5 for P (rel 1): relevant d1, d4; non-relevant d3, d5; unjudged d2.
    p5 = rows["P", 5]
    assert (p5["n_relevant_at_k"], p5["n_nonrelevant_at_k"], p5["n_unjudged_at_k"]) == (2, 2, 1)
    assert p5["dcg"] is None and p5["idcg"] is None and p5["residual"] is None


def test_rr_of_a_ranking_without_relevant_document_is_zero() -> None:
    run = run_frame([("q", "a", 2.0), ("q", "b", 1.0)])
    judgments = judgment_frame([("q", "a", 0), ("q", "z", 1)])
    rows = values(build_spec("judged", measures="RR,AP,P@2"), run, judgments)
    # Nothing relevant retrieved: RR 0, AP 0 / 1 = 0, P@2 0; all defined (R = 1), status scored.
    assert [rows[m]["value"] for m in (("RR", None), ("AP", None), ("P", 2))] == [0.0, 0.0, 0.0]
    assert {rows[m]["status"] for m in rows} == {"scored"}


def test_no_relevant_judgment_is_undefined_only_for_measures_dividing_by_r() -> None:
    run = run_frame([("q", "a", 2.0)])
    judgments = judgment_frame([("q", "a", 0)])
    rows = values(build_spec("judged", measures="AP,R@5,R-Prec,RR,P@5,RBP(p=0.5)"), run, judgments)
    # R = 0: AP, R@k, R-Prec divide by it (null under no_relevant='null'); RR, P, RBP are 0.
    assert [rows[m]["value"] for m in (("AP", None), ("R", 5), ("R-Prec", None))] == [None, None, None]
    assert [rows[m]["value"] for m in (("RR", None), ("P", 5), ("RBP(p=0.5)", None))] == [0.0, 0.0, 0.0]
    assert {rows[m]["status"] for m in rows} == {"no_relevant_judgments"}


def test_judged_at_k_both_conventions_by_hand() -> None:
    rows = values(build_spec("judged", measures="Judged@5,Judged(convention=trec_eval)@5,Judged@10,"
                                                "Judged(convention=trec_eval)@10"))
    # First 5: d1 (2), d2 (unjudged), d3 (0), d4 (1), d5 (-1).
    # ir_measures: any qrels entry is judged, d5's -1 too: 4 of min(5, 6) = 4/5.
    assert rows["Judged", 5]["value"] == pytest.approx(0.8, abs=1e-12)
    # trec_eval 10 unj_5: unjudged or negative = d2, d5 -> 2/5; Judged = 1 - 2/5 = 3/5.
    assert rows["Judged(convention=trec_eval)", 5]["value"] == pytest.approx(0.6, abs=1e-12)
    # k = 10 beyond the 6 retrieved: ir_measures 4 judged of min(10, 6) = 4/6;
    # trec_eval unj_10 = (d2, d5, d6) / 10 = 0.3 -> 0.7.
    assert rows["Judged", 10]["value"] == pytest.approx(4 / 6, abs=1e-12)
    assert rows["Judged(convention=trec_eval)", 10]["value"] == pytest.approx(0.7, abs=1e-12)


def test_judged_of_a_query_missing_from_the_run() -> None:
    judgments = judgment_frame([("q", "a", 1), ("other", "b", 1)])
    rows = per_query_values(run_frame([("q", "a", 1.0)]), judgments,
                            build_spec("judged", measures="Judged@5,Judged(convention=trec_eval)@5")).collect()
    missing = {r["measure"]: r for r in rows.iter_rows(named=True) if r["query_id"] == "other"}
    # Nothing retrieved: ir_measures' share has no denominator (null); trec_eval -c prints unj_5 = 0 -> 1.
    assert missing["Judged"]["value"] is None
    assert missing["Judged(convention=trec_eval)"]["value"] == 1.0
    assert {r["status"] for r in missing.values()} == {"missing_from_run"}


def test_rbp_and_residual_by_hand() -> None:
    rows = values(build_spec("judged", measures="RBP(p=0.5),RBP(p=0.5,rel=2)"))
    # p = 0.5, weights (1-p) p^(i-1): 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625 for ranks 1..6.
    # Relevant (>= 1): ranks 1 and 4 -> RBP = 0.5 + 0.0625 = 0.5625.
    # Unjudged: ranks 2 and 6 -> 0.25 + 0.015625; tail p^6 = 0.015625 -> residual 0.28125.
    rbp = rows["RBP(p=0.5)", None]
    assert rbp["value"] == pytest.approx(0.5625, abs=1e-12)
    assert rbp["residual"] == pytest.approx(0.28125, abs=1e-12)
    # rel=2: only rank 1 -> 0.5, same residual; the bound [0.5, 0.78125].
    assert rows["RBP(p=0.5,rel=2)", None]["value"] == pytest.approx(0.5, abs=1e-12)
    assert rows["RBP(p=0.5,rel=2)", None]["residual"] == pytest.approx(0.28125, abs=1e-12)


def test_rbp_residual_is_zero_when_nothing_is_unjudged() -> None:
    run = run_frame([("q", "a", 2.0), ("q", "b", 1.0)])
    judgments = judgment_frame([("q", "a", 1), ("q", "b", 0)])
    row = values(build_spec("judged", measures="RBP(p=0.8)"), run, judgments)["RBP(p=0.8)", None]
    # RBP = 0.2 * 1 = 0.2; nothing unjudged: residual 0, as trec_eval 10 prints it (not the tail 0.8^2).
    assert row["value"] == pytest.approx(0.2, abs=1e-12) and row["residual"] == 0.0


def test_condensed_lists_apply_to_binary_measures() -> None:
    rows = values(build_spec("trec_eval", unjudged="condensed", measures="P@2,RR"))
    # Condensed (trec_eval -J): d2, d5, d6 leave; the list is d1 (2), d3 (0), d4 (1): P@2 = 1/2, RR = 1.
    assert rows["P", 2]["value"] == pytest.approx(0.5, abs=1e-12)
    assert rows["RR", None]["value"] == 1.0


# -- pytrec_eval ---------------------------------------------------------------------------------------------------

PYTREC_NAMES = {"AP": "map_cut_{k}", "P": "P_{k}", "R": "recall_{k}"}


def pytrec_values(collection: Collection, cutoffs: tuple[int, ...]) -> dict[str, dict[str, float]]:
    excluded = all_negative_queries(collection)
    qrels = {q: collection.grades(q) for q in collection.judged_queries() - excluded}
    run = {q: docs for q, docs in collection.run.items() if q not in excluded}
    ks = ",".join(str(k) for k in cutoffs)
    measures = {"map", "recip_rank", "Rprec", f"map_cut.{ks}", f"P.{ks}", f"recall.{ks}"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


# Each example runs every binary measure through the engine (~70 ms): half the profile's count, as the NDCG
# properties against pytrec_eval in tests/transforms/test_reference_tools.py.
@settings(max_examples=max(1, settings.default.max_examples // 2), deadline=None)
@given(collection=collections(min_grade=-1), cutoffs=CUTOFF_SETS)
@example(collection=FLOAT32_TIE_EXAMPLE, cutoffs=(1, 2, None))
def test_binary_measures_match_pytrec_eval(collection: Collection, cutoffs: tuple[Cutoff, ...]) -> None:
    """Property: under `trec_eval9`, AP, AP@k, RR, P@k, R@k and R-Prec equal pytrec_eval's per query, for every
    query it reports (judged and retrieved)."""
    ks = tuple(k for k in cutoffs if k is not None) or (5,)
    names = ["AP", "RR", "R-Prec", *(f"{m}@{k}" for m in PYTREC_NAMES for k in ks)]
    spec = build_spec("trec_eval9", measures=names)
    ours = {(r["query_id"], r["measure"], r["cutoff"]): r["value"]
            for r in per_query_values(collection.run_frame(), collection.judgments_frame(), spec).collect().iter_rows(named=True)}
    theirs = pytrec_values(collection, ks)
    for query_id, measured in theirs.items():
        expected = {("AP", None): measured["map"], ("RR", None): measured["recip_rank"],
                    ("R-Prec", None): measured["Rprec"]}
        expected |= {(m, k): measured[name.format(k=k)] for m, name in PYTREC_NAMES.items() for k in ks}
        for (measure, cutoff), value in expected.items():
            got = ours[query_id, measure, cutoff]
            assert got is not None and abs(got - value) <= 1e-9, (query_id, measure, cutoff, got, value)
