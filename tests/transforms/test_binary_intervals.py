"""Intervals of P@k, R@k, RR, R-Prec, AP and RBP over unjudged documents (transforms.binary_intervals) against brute
force over every assignment of the scale's grades, on random small cases, read whole and as a top-k read."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from judged.schemas.measures import parse_measure
from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.transforms.binary_intervals import PairWorld, binary_difference_intervals, difference_interval
from judged.transforms.judging import ranked_and_judged
from judged.transforms.measures import per_query_measures
from judged.transforms.ranking import candidate_rows
from tests.transforms.test_paired_intervals import RUNS
from tests.transforms.test_paired_intervals import brute_force as paired_brute_force
from tests.transforms.test_paired_intervals import random_case as paired_random_case
from tests.transforms.test_intervals import SCALES, cases_by_setting, random_case
from tests.transforms.test_ndcg import judgment_frame, run_frame

CUT_MEASURES = ("P@1", "P@3", "P(rel=2)@2", "R@2", "R@5", "RR@3", "AP@3", "AP(rel=2)@5")
WHOLE_MEASURES = (*CUT_MEASURES, "RR", "AP", "R-Prec", "R-Prec(rel=2)", "RBP(p=0.8)", "nDCG@3")
SPECS: tuple[dict, ...] = (
    {},
    {"no_relevant": "zero"},
    {"ties": "docid_asc"},
    {"unjudged": "condensed"},
    {"unjudged": "condensed", "no_relevant": "zero"},
    {"depth": 4, "no_relevant": "zero"},
)
CASES = 600


def spec_of(options: dict, measures: tuple[str, ...]) -> EvaluationSpec:
    return PRESETS["judged"].with_options(measures=tuple(parse_measure(m) for m in measures), **options)


def evaluate(run_rows: list, judgment_rows: list, spec: EvaluationSpec, scale: tuple[int, ...]) -> pl.DataFrame:
    run, judgments = run_frame(run_rows), judgment_frame(judgment_rows)
    return per_query_measures(candidate_rows(run, spec), judgments, spec, scale).collect()


def brute_force(cases: dict[str, tuple], spec: EvaluationSpec, scale: tuple[int, ...]) -> dict:
    """(min, max) of each measure's value over every assignment of the scale's grades to each case's unjudged
    retrieved documents (within the depth), computed by the engine on the fully judged lists."""
    grades = [g for g in scale if spec.unjudged != "condensed" or g >= 0]
    run_rows: list[tuple[str, str, float]] = []
    judgment_rows: list[tuple[str, str, int | None]] = []
    for case, (run, judgments) in cases.items():
        known = {doc: grade for doc, grade in judgments if grade is not None}
        ranked = sorted(sorted(run, key=lambda row: row[0], reverse=spec.ties != "docid_asc"), key=lambda row: -row[1])
        unjudged = [doc for doc, _ in ranked[: spec.depth] if doc not in known]
        for number, assignment in enumerate(itertools.product(grades, repeat=len(unjudged))):
            query = f"{case}/{number}"
            run_rows += [(query, doc, score) for doc, score in run]
            judgment_rows += [(query, doc, grade) for doc, grade in judgments if grade is not None]
            judgment_rows += [(query, doc, grade) for doc, grade in zip(unjudged, assignment)]
    values = evaluate(run_rows, judgment_rows, spec, scale)
    values = values.with_columns(case=pl.col("query_id").str.split("/").list.first())
    extremes = values.group_by("case", "measure", "cutoff").agg(low=pl.col("value").min(), high=pl.col("value").max())
    return {(r["case"], r["measure"], r["cutoff"]): (r["low"], r["high"]) for r in extremes.iter_rows(named=True)}


@pytest.mark.slow  # an oracle: every assignment of grades, over 600 random cases
def test_brute_force_agreement_on_random_cases() -> None:
    groups = cases_by_setting(20261204, CASES, len(SPECS), SCALES, random_case)
    exact = bounds = undefined = 0
    for (spec_index, scale_index), cases in groups.items():
        scale = SCALES[scale_index]
        for measures in (CUT_MEASURES, WHOLE_MEASURES):  # a top-k read, then the whole list
            spec = spec_of(SPECS[spec_index], measures)
            expected = brute_force(cases, spec, scale)
            run_rows = [(case, doc, score) for case, (rows, _) in cases.items() for doc, score in rows]
            judgment_rows = [(case, doc, grade) for case, (_, rows) in cases.items() for doc, grade in rows]
            for row in evaluate(run_rows, judgment_rows, spec, scale).iter_rows(named=True):
                where = f"{row} spec={spec.method_label()} scale={scale}"
                low, high = expected[row["query_id"], row["measure"], row["cutoff"]]
                if row["status"] == "no_judgments" or (row["value"] is None and low is None):
                    # Never scored (the brute force's assignments would make it judged), or no world gives it one.
                    assert row["value_min"] is None and row["value_max"] is None, where
                    continue
                if row["value"] is not None:
                    assert row["value_min"] <= row["value"] <= row["value_max"], where
                else:
                    undefined += 1  # no relevant judgment now: over the worlds that give the query a value
                if spec.unjudged == "condensed" and row["value"] is not None:
                    # The condensed value (the list without its unjudged documents) is held too: with_intervals.
                    low, high = min(low, row["value"]), max(high, row["value"])
                if row["interval_kind"] == "exact":
                    assert row["value_min"] == pytest.approx(low, abs=1e-12), where
                    assert row["value_max"] == pytest.approx(high, abs=1e-12), where
                    exact += 1
                else:
                    assert row["interval_kind"] == "bound", where
                    assert row["value_min"] <= low + 1e-12 and row["value_max"] >= high - 1e-12, where
                    bounds += 1
    assert exact >= 3_000 and undefined >= 20
    print(f"\nbinary intervals checked against brute force: {exact} exact and equal, {bounds} bounds; {undefined} "
          "rows without a value now, over the worlds that give them one")


def test_every_measure_but_judged_has_an_interval_that_holds_its_value() -> None:
    # q1: judged relevant at 1, unjudged at 2 and 4, judged non-relevant at 3; q2: nothing unjudged.
    run = [("q1", "a", 4.0), ("q1", "u", 3.0), ("q1", "n", 2.0), ("q1", "v", 1.0), ("q2", "b", 1.0)]
    judgments = [("q1", "a", 1), ("q1", "n", 0), ("q1", "x", 2), ("q2", "b", 2)]
    spec = spec_of({}, ("P@2", "R@2", "RR", "R-Prec", "AP", "RBP(p=0.5)", "Judged@2"))
    rows = {(r["query_id"], r["measure"]): r for r in evaluate(run, judgments, spec, (0, 1, 2)).iter_rows(named=True)}
    q1 = {measure: (rows["q1", measure]["value_min"], rows["q1", measure]["value_max"]) for measure in
          ("P", "R", "RR", "R-Prec", "AP", "RBP(p=0.5)", "Judged")}
    assert q1["P"] == (0.5, 1.0)
    # R@2 (J = 2: a and x): 1 / (2 + 1) with u non-relevant and v relevant; 2 / 3 with u relevant and v not.
    assert q1["R"] == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert q1["RR"] == (1.0, 1.0)
    # R-Prec: R = 2 (neither relevant): 1/2; R = 3: 2/3 (u relevant) or 1/3 (v relevant); R = 4 (both): 3/4.
    assert q1["R-Prec"] == (pytest.approx(1 / 3), 0.75)
    # AP: none 1/2, u (1 + 2/2) / 3, v (1 + 2/4) / 3 = 1/2, both (1 + 2/2 + 3/4) / 4 = 0.6875.
    assert q1["AP"] == (0.5, 0.6875)
    # RBP(p=0.5): a at 1 gives 0.5; u at 2 and v at 4 may add 0.5 * 0.5 and 0.5 * 0.5^3 (the tail past the list,
    # which the residual counts, is no document's to gain): [0.5, 0.8125], exact.
    rbp = rows["q1", "RBP(p=0.5)"]
    assert q1["RBP(p=0.5)"] == (0.5, 0.8125) and rbp["interval_kind"] == "exact"
    assert rbp["residual"] == pytest.approx(0.3125 + 0.5**4)
    assert q1["Judged"] == (None, None)
    for measure in ("P", "R", "RR", "R-Prec", "AP", "RBP(p=0.5)"):
        q2 = rows["q2", measure]
        assert q2["value_min"] == q2["value"] == q2["value_max"] and q2["interval_kind"] == "exact"


def test_ap_takes_every_count_of_unjudged_documents_made_relevant() -> None:
    # Relevant at 1, unjudged at 2..4, J = 1 plus one judged relevant nobody retrieved (J = 2): making the unjudged
    # relevant raises the numerator and the denominator together; the maximum is at all three, the minimum at none.
    world = PairWorld(np.array([1.0]), np.zeros(0), np.array([2.0, 3.0, 4.0]), np.full(3, np.inf), 2)
    low, high, exact = difference_interval("AP", None, world, True, True, False)
    # Earliest m: 1/2, 2/3, 3/4, 4/5; latest m: 1/2, (1 + 2/4) / 3 = 1/2, (1 + 2/3 + 3/4) / 4, 4/5.
    assert exact and low == pytest.approx(1 / 2) and high == pytest.approx(4 / 5)


def paired_computed(cases: dict[str, tuple], spec: EvaluationSpec, scale: tuple[int, ...]) -> dict:
    judgments = judgment_frame([(case, doc, g) for case, (_, rows) in cases.items() for doc, g in rows])
    ranked = []
    for name in RUNS:
        rows = [(case, doc, score) for case, (runs, _) in cases.items() for doc, score in runs.get(name, [])]
        if rows:
            ranked.append(ranked_and_judged(candidate_rows(run_frame(rows), spec), judgments, spec)
                          .with_columns(run=pl.lit(name)))
    pairs = pl.LazyFrame(list(itertools.combinations(RUNS, 2)), schema=["baseline", "run"], orient="row")
    measures = [m for m in spec.measure_list() if m.name != "nDCG"]
    rows = binary_difference_intervals(pl.concat(ranked, how="diagonal_relaxed"), judgments, spec, measures, pairs,
                                       scale).collect()
    return {(r["query_id"], r["baseline"], r["run"], r["measure"], r["cutoff"]): r for r in rows.iter_rows(named=True)}


@pytest.mark.slow  # an oracle: every assignment of grades to two runs' documents, over 600 random cases
def test_paired_brute_force_agreement_on_random_cases() -> None:
    groups = cases_by_setting(20261206, CASES, len(SPECS), SCALES, paired_random_case)
    exact = bounds = undefined = 0
    for (spec_index, scale_index), cases in groups.items():
        scale = SCALES[scale_index]
        for measures in (CUT_MEASURES, WHOLE_MEASURES):
            spec = spec_of(SPECS[spec_index], measures)
            expected = paired_brute_force(cases, spec, scale)
            found = paired_computed(cases, spec, scale)
            for (case, base, run, measure, cutoff), (low, high) in expected.items():
                if measure == "nDCG":
                    continue
                where = f"{case} {base}-{run} {measure}@{cutoff} spec={spec.method_label()} scale={scale}"
                assert -1.0 - 1e-12 <= low <= high <= 1.0 + 1e-12, where
                row = found.get((case, base, run, measure, cutoff))
                if row is None:  # nothing unjudged in either list: the difference is fixed
                    assert low == pytest.approx(high, abs=1e-12), where
                    continue
                undefined += not any(g is not None and g >= 1 for _, g in cases[case][1])
                if row["difference_kind"] == "exact":
                    assert row["difference_min"] == pytest.approx(low, abs=1e-12), where
                    assert row["difference_max"] == pytest.approx(high, abs=1e-12), where
                    exact += 1
                else:
                    assert row["difference_min"] <= low + 1e-12 and row["difference_max"] >= high - 1e-12, where
                    bounds += 1
    assert exact >= 3_000 and undefined >= 20
    print(f"\npaired intervals of P, R, RR, R-Prec, AP and RBP checked against brute force: {exact} exact and equal, "
          f"{bounds} bounds; {undefined} of queries without a relevant judgment")
