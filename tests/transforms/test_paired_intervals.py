"""Paired difference intervals (transforms.paired_intervals) against brute force over every assignment of grades to
the unjudged documents either run retrieved, with both runs seeing the same assignment; and their properties."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.transforms.intervals import ndcg_interval
from judged.transforms.judging import ranked_and_judged
from judged.transforms.measures import per_query_measures
from judged.transforms.paired_intervals import difference_interval, difference_intervals, differences_of_worlds
from judged.transforms.ranking import candidate_rows
from tests.transforms.test_intervals import SCALES, cases_by_setting
from tests.transforms.test_intervals import SPECS as PER_RUN_SPECS
from tests.transforms.test_ndcg import judgment_frame, run_frame

# The per-run intervals' specs and scales whose ideal two runs share (`ideal='judged'`).
SPECS: tuple[EvaluationSpec, ...] = tuple(spec for spec in PER_RUN_SPECS if spec.ideal == "judged")
CASES = 1_100
RUNS = ("a", "b", "c")


def random_case(rng: random.Random, scale: tuple[int, ...]) -> tuple[dict[str, list[tuple[str, float]]], list]:
    """A query: two or three runs over one pool of up to 8 documents (so they share some, scores from 3 values so
    ties are common, a run may retrieve nothing), each pooled document judged with a grade of the scale, unresolved
    (null) or unjudged (at most 6 unjudged), plus up to 2 judged documents nobody retrieved."""
    pool = [f"d{i}" for i in rng.sample(range(20), rng.randint(1, 8))]
    n_runs = rng.choice((2, 3))
    runs = {
        name: [(doc, float(rng.choice((1, 2, 3)))) for doc in rng.sample(pool, rng.randint(0, min(6, len(pool))))]
        for name in RUNS[:n_runs]
    }
    judgments: list[tuple[str, int | None]] = []
    unjudged = 0
    for doc in pool:
        draw = rng.random()
        if draw < 0.4 and unjudged < 6:
            unjudged += 1
            if draw < 0.05:
                judgments.append((doc, None))
        else:
            judgments.append((doc, rng.choice(scale)))
    judgments += [(f"x{extra}", rng.choice(scale)) for extra in range(rng.randint(0, 2))]
    return runs, judgments


def pairs_of(runs: dict) -> list[tuple[str, str]]:
    return [(base, run) for base, run in itertools.combinations(sorted(runs), 2)]


def brute_force(cases: dict[str, tuple], spec: EvaluationSpec, scale: tuple[int, ...]) -> dict:
    """(min, max) of each measure's value(run) - value(baseline) per (case, baseline, run, measure, cutoff) over every
    assignment of the scale's grades to the unjudged documents within depth of either run of the pair, both runs
    valued by the engine on the fully judged lists, one assignment for both; left out where either value is null."""
    grades = [g for g in scale if spec.unjudged != "condensed" or g >= 0]
    run_rows: dict[str, list] = defaultdict(list)
    judgment_rows: list = []
    for case, (runs, judgments) in cases.items():
        known = {doc: grade for doc, grade in judgments if grade is not None}
        if not known:  # a query without judgments is never scored, whatever its documents would get
            continue
        for base, run in pairs_of(runs):
            unjudged: list[str] = []
            for rows in (runs[base], runs[run]):
                ranked = sorted(sorted(rows, key=lambda r: r[0], reverse=spec.ties != "docid_asc"), key=lambda r: -r[1])
                unjudged += [doc for doc, _ in ranked[: spec.depth] if doc not in known and doc not in unjudged]
            for number, assignment in enumerate(itertools.product(grades, repeat=len(unjudged))):
                query = f"{case}/{base}/{run}/{number}"
                run_rows["baseline"] += [(query, doc, score) for doc, score in runs[base]]
                run_rows["run"] += [(query, doc, score) for doc, score in runs[run]]
                judgment_rows += [(query, doc, grade) for doc, grade in judgments if grade is not None]
                judgment_rows += [(query, doc, grade) for doc, grade in zip(unjudged, assignment)]
    judgments_frame = judgment_frame(judgment_rows)
    keys = ["query_id", "measure", "cutoff"]
    values = [
        per_query_measures(candidate_rows(run_frame(run_rows[side]), spec), judgments_frame, spec, intervals=False)
        .select(*keys, pl.col("value").alias(side)).collect()
        for side in ("baseline", "run")
    ]
    differences = (
        values[0].join(values[1], on=keys, nulls_equal=True)
        .drop_nulls(["baseline", "run"])
        .with_columns(
            difference=pl.col("run") - pl.col("baseline"),
            pair=pl.col("query_id").str.split("/").list.slice(0, 3).list.join("/"),
        )
        .group_by("pair", "measure", "cutoff").agg(low=pl.col("difference").min(), high=pl.col("difference").max())
    )
    return {(*row["pair"].split("/"), row["measure"], row["cutoff"]): (row["low"], row["high"])
            for row in differences.iter_rows(named=True)}


def computed(cases: dict[str, tuple], spec: EvaluationSpec, scale: tuple[int, ...], top_k_read: bool) -> dict:
    """difference_min, difference_max, difference_kind per (case, baseline, run, cutoff) from every run's ranked
    rows: whole, or each query's candidate rows only, as a top-k read gives them."""
    judgments = judgment_frame([(case, doc, g) for case, (_, rows) in cases.items() for doc, g in rows])
    if top_k_read:
        spec = spec.with_options(cutoffs=tuple(k for k in spec.cutoffs if k is not None))
    ranked = []
    for name in RUNS:
        rows = [(case, doc, score) for case, (runs, _) in cases.items() for doc, score in runs.get(name, [])]
        if not rows:
            continue
        run = run_frame(rows)
        if top_k_read:
            candidates = candidate_rows(run, spec)
        else:
            retrieved = pl.len().over("query_id")
            if spec.depth is not None:
                retrieved = pl.min_horizontal(retrieved, pl.lit(spec.depth))
            candidates = run.with_columns(n_retrieved=retrieved)
        ranked.append(ranked_and_judged(candidates, judgments, spec).with_columns(run=pl.lit(name)))
    pairs = pl.LazyFrame(
        [(base, run) for base, run in itertools.combinations(RUNS, 2)], schema=["baseline", "run"], orient="row"
    )
    rows = difference_intervals(pl.concat(ranked, how="diagonal_relaxed"), judgments, spec, pairs, scale).collect()
    return {(r["query_id"], r["baseline"], r["run"], r["cutoff"]): r for r in rows.iter_rows(named=True)}


@pytest.mark.slow  # an oracle: every assignment of grades, over 1100 random cases
def test_brute_force_agreement_on_random_cases() -> None:
    groups = cases_by_setting(20261204, CASES, len(SPECS), SCALES, random_case)
    checked = exact = bounds = shared = undefined = 0
    for (spec_index, scale_index), cases in groups.items():
        spec, scale = SPECS[spec_index], SCALES[scale_index]
        expected = brute_force(cases, spec, scale)
        for top_k_read in (False, True):
            found = computed(cases, spec, scale, top_k_read)
            for (case, base, run, _, cutoff), (low, high) in expected.items():
                if top_k_read and cutoff is None:
                    continue
                assert -1.0 <= low <= high <= 1.0 or min(scale) < 0
                where = f"{case} {base}-{run} cutoff={cutoff} spec={spec.method_label()} scale={scale} {top_k_read=}"
                row = found.get((case, base, run, cutoff))
                if row is None:  # nothing unjudged in either list: the difference is fixed
                    assert low == pytest.approx(high, abs=1e-12), where
                    continue
                assert row["difference_min"] is not None, where  # some world gives both runs a value
                gains = dict(spec.gain_map)
                if not any(gains.get(g, g) > 0 for d, g in cases[case][1] if g is not None):
                    assert spec.no_relevant == "null" or low <= 0 <= high, where
                    undefined += spec.no_relevant == "null"
                if row["difference_kind"] == "exact":
                    assert row["difference_min"] == pytest.approx(low, abs=1e-12), where
                    assert row["difference_max"] == pytest.approx(high, abs=1e-12), where
                    exact += 1
                else:
                    assert top_k_read, where
                    assert row["difference_min"] <= low + 1e-12 and row["difference_max"] >= high - 1e-12, where
                    bounds += 1
                checked += 1
                runs, judgments = cases[case]
                known = {d for d, g in judgments if g is not None}
                shared += bool(
                    {d for d, _ in runs[base]} & {d for d, _ in runs[run]} - known
                )
    assert exact >= 1_000 and shared >= 300 and undefined >= 20
    print(f"\ndifference intervals checked against brute force: {checked} (pair, query, cutoff) rows: {exact} exact "
          f"and equal, {bounds} bounds containing the exact interval; {shared} with unjudged documents both runs share; "
          f"{undefined} without a value now (no relevant judgment), over the worlds that give both runs one")


def test_a_document_both_runs_rank_alike_cancels() -> None:
    # Runs A and B both rank unjudged u at position 1; B also has unjudged v at 2, A a judged relevant j there.
    judged = [1.0]  # j
    alone = difference_interval(0.0 - 1.0 / np.log2(3), [1.0 / np.log2(3)], judged, [0.0, 1.0], 10, False, 1, 1)
    # Without u at all (it only raises the ideal now): the same ends as counting it ideal-only.
    assert alone is not None and alone[2]
    brute = []
    for u, v in itertools.product((0.0, 1.0), repeat=2):
        ideal = sorted([1.0, u, v], reverse=True)
        idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
        b = (u + v / np.log2(3)) / idcg
        a = (u + 1.0 / np.log2(3)) / idcg
        brute.append(b - a)
    assert alone[0] == pytest.approx(min(brute)) and alone[1] == pytest.approx(max(brute))


@settings(deadline=None)
@given(
    weights=st.lists(st.floats(-1, 1, allow_nan=False).filter(lambda w: abs(w) > 1e-3), max_size=5),
    judged=st.lists(st.sampled_from((1.0, 2.0, 3.0)), min_size=1, max_size=4),
    fixed=st.floats(-2, 2, allow_nan=False),
    ideal_only=st.integers(0, 3),
    cutoff=st.sampled_from((1, 3, 5, None)),
)
def test_judging_a_document_never_widens_and_the_full_judgment_lies_inside(
    weights: list[float], judged: list[float], fixed: float, ideal_only: int, cutoff: int | None
) -> None:
    levels = [0.0, 1.0, 2.0, 3.0]
    whole = difference_interval(fixed, weights, judged, levels, cutoff, False, ideal_only, ideal_only)
    assert whole is not None
    for index, weight in enumerate(weights):
        for gain in levels:
            others = weights[:index] + weights[index + 1 :]
            after = difference_interval(
                fixed + gain * weight, others, judged + [gain], levels, cutoff, False, ideal_only, ideal_only
            )
            assert after is not None
            assert whole[0] <= after[0] + 1e-12 and after[1] <= whole[1] + 1e-12
    if ideal_only:
        for gain in levels:
            after = difference_interval(fixed, weights, judged + [gain], levels, cutoff, False,
                                        ideal_only - 1, ideal_only - 1)
            assert after is not None and whole[0] <= after[0] + 1e-12 and after[1] <= whole[1] + 1e-12
    nothing_left = difference_interval(fixed, [], judged, levels, cutoff, False)
    assert nothing_left is not None and nothing_left[0] == nothing_left[1]


def test_kernel_with_mixed_signs_agrees_with_the_programme() -> None:
    # Enumeration (few slots) and the exact programme (a low enumeration limit) agree on weights of either sign.
    rng = np.random.default_rng(7)
    for _ in range(200):
        weights = list(rng.uniform(-1, 1, rng.integers(1, 7)))
        judged = list(rng.choice([1.0, 2.0, 3.0], rng.integers(1, 4)))
        fixed = float(rng.uniform(-1, 1))
        enumerated = ndcg_interval(fixed, weights, judged, [0.0, 1.0, 2.0, 3.0], 5, False)
        programme = ndcg_interval(fixed, weights, judged, [0.0, 1.0, 2.0, 3.0], 5, False, enumeration_limit=0)
        assert enumerated is not None and programme is not None
        assert enumerated[0] == pytest.approx(programme[0], abs=1e-12)
        assert enumerated[1] == pytest.approx(programme[1], abs=1e-12)


@pytest.mark.parametrize("zero_if_no_ideal", [False, True])
def test_batched_worlds_equal_one_by_one(zero_if_no_ideal: bool) -> None:
    rng = np.random.default_rng(11)
    rows = []
    for _ in range(400):
        slots = int(rng.integers(0, 7))
        fewest = int(rng.integers(0, 4))
        rows.append({
            "cutoff": [3, 5, 10, None][int(rng.integers(0, 4))],
            "fixed": float(rng.uniform(-1, 1)),
            "weights": [float(w) for w in rng.uniform(-1, 1, slots)],
            "ideal_only_fewest": fewest,
            "ideal_only_most": fewest + int(rng.integers(0, 2)),
            "judged_ideal": [float(g) for g in rng.choice([0.0, 1.0, 2.0, 3.0], int(rng.integers(0, 4)))],
            "levels": [0.0, 1.0, 2.0, 3.0],
        })
    worlds = pl.DataFrame(rows, schema={
        "cutoff": pl.Int32, "fixed": pl.Float64, "weights": pl.List(pl.Float64), "ideal_only_fewest": pl.Int64,
        "ideal_only_most": pl.Int64, "judged_ideal": pl.List(pl.Float64), "levels": pl.List(pl.Float64),
    }).to_struct("w")
    batched = differences_of_worlds(worlds, zero_if_no_ideal).struct.unnest()
    for row, got in zip(rows, batched.iter_rows(named=True), strict=True):
        one = difference_interval(row["fixed"], row["weights"], row["judged_ideal"], row["levels"], row["cutoff"],
                                  zero_if_no_ideal, row["ideal_only_fewest"], row["ideal_only_most"])
        if one is None:
            assert got["difference_min"] is None
            continue
        assert (got["difference_min"], got["difference_max"]) == (one[0], one[1])  # the same bits
        assert got["difference_kind"] == ("exact" if one[2] else "bound")


def _pair_interval(runs: dict[str, list[tuple[str, float]]], judgments: list, spec: EvaluationSpec) -> dict:
    """difference_min/max of b - a at each cutoff of the spec, from whole lists (one query `q`)."""
    judgment_rows = judgment_frame([("q", doc, g) for doc, g in judgments])
    ranked = [
        ranked_and_judged(run_frame([("q", doc, s) for doc, s in rows]).with_columns(n_retrieved=pl.lit(len(rows))),
                          judgment_rows, spec).with_columns(run=pl.lit(name))
        for name, rows in runs.items()
    ]
    pairs = pl.LazyFrame({"baseline": ["a"], "run": ["b"]})
    found = difference_intervals(pl.concat(ranked, how="diagonal_relaxed"), judgment_rows, spec, pairs, (0, 1, 2, 3))
    return {r["cutoff"]: (r["difference_min"], r["difference_max"]) for r in found.collect().iter_rows(named=True)}


@pytest.mark.slow  # a property over 60 random pairs, each through the columnar path three times
def test_a_document_both_runs_rank_at_one_position_within_k_counts_as_one_below_k() -> None:
    # Both runs rank unjudged u at one position within k: its grade moves both DCGs alike and cancels, so the pair's
    # interval is the one where u lies below k in both (only raising the shared ideal). And two runs with the same
    # top k are tied whatever the unjudged documents are.
    rng = random.Random(3)
    k = 5
    spec = PRESETS["judged"].with_options(cutoffs=(k,))
    checked = 0
    for _ in range(60):
        pool = [f"d{i}" for i in range(8)]
        judgments = [(doc, rng.choice((0, 1, 2, 3))) for doc in pool if rng.random() < 0.5]
        if not any(g > 0 for _, g in judgments):
            judgments.append(("x", 2))
        length = rng.randint(0, k - 1)
        a, b = rng.sample(pool, length), rng.sample(pool, length)
        scored = lambda docs: [(doc, float(100 - i)) for i, doc in enumerate(docs)]  # noqa: E731
        fillers = [f"f{i}" for i in range(k - length)]  # judged 0 in both: nothing in either DCG or the ideal
        within = _pair_interval({"a": scored(a + ["u"]), "b": scored(b + ["u"])}, judgments, spec)
        below = _pair_interval({"a": scored(a + fillers + ["u"]), "b": scored(b + fillers + ["u"])},
                               judgments + [(f, 0) for f in fillers], spec)
        assert within[k] == pytest.approx(below[k], abs=1e-12)
        same = _pair_interval({"a": scored(a + ["u"]), "b": scored(a + ["u"])}, judgments, spec)
        assert same.get(k, (0.0, 0.0)) == (0.0, 0.0)
        checked += 1
    assert checked == 60


def test_documents_read_by_pair_count_what_the_cutoff_reads() -> None:
    # Run a reads u (unjudged) at 1, v (unjudged) at 2, d (disputed: grades 1 or 2) at 3; b reads u at 1 and w
    # (unjudged) at 5. At k = 2 the pair reads u and v (u once, though both read it); the whole lists add d and w.
    from judged.transforms.paired_intervals import documents_read_by_pair

    ranked = pl.LazyFrame(
        {"run": ["a", "a", "a", "b", "b"], "query_id": ["q"] * 5, "doc_id": ["u", "v", "d", "u", "w"],
         "rank": [1, 2, 3, 1, 5], "relevance": [None, None, 2, None, None],
         "grade_set": [None, None, [1, 2], None, None]},
        schema_overrides={"relevance": pl.Int32, "grade_set": pl.List(pl.Int32)},
    )
    found = documents_read_by_pair(ranked, pl.LazyFrame({"baseline": ["a"], "run": ["b"]}), [2, None]).collect()
    assert {(r["cutoff"], r["n_unjudged"], tuple(r["disputed_docs"])) for r in found.iter_rows(named=True)} == {
        (2, 2, ()), (None, 3, ("d",))}
