"""nDCG intervals over unjudged documents (transforms.intervals) against brute force over every assignment of grades,
the issue's worked example, and the seed fixture (no unjudged document: min = max = value)."""

from __future__ import annotations

import itertools
import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
import pytest

from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.transforms.intervals import (
    WORLD_INPUTS,
    interval_of_world,
    intervals_of_worlds,
    ndcg_interval,
    ndcg_intervals,
    padded_rows,
    with_intervals,
    worlds_without_relevant_judgments,
)
from judged.transforms.judging import attach_judgments
from judged.transforms.measures import per_query_values as per_query_ndcg
from judged.transforms.ranking import candidate_rows, rank_run
from judged.transforms.summary import summarize
from tests.transforms.test_ndcg import judgment_frame, run_frame

CUTOFFS = (1, 2, 3, 5, None)
SCALES = ((0, 1, 2, 3), (0, 1), (-1, 0, 2))
SPECS: tuple[EvaluationSpec, ...] = tuple(
    PRESETS["judged"].with_options(cutoffs=CUTOFFS, **options)
    for options in (
        {},
        {"no_relevant": "zero"},
        {"ties": "docid_asc"},
        {"ties": "average"},
        {"ties": "average", "ideal": "retrieved", "no_relevant": "zero"},
        {"unjudged": "condensed"},
        {"unjudged": "condensed", "ties": "average", "no_relevant": "zero"},
        {"gain": "exponential"},
        {"gain": "map", "gain_map": ((-1, -0.5), (0, 0.0), (1, 0.0), (2, 2.0), (3, 5.0))},
        {"ideal": "retrieved"},
        {"depth": 4, "no_relevant": "zero"},
    )
)
CASES = 1_100


def random_case(rng: random.Random, scale: tuple[int, ...]) -> tuple[list[tuple[str, float]], list[tuple[str, int | None]]]:
    """A query: up to 6 retrieved documents (scores drawn from 3 values, so ties are common), each judged with a
    grade of the scale, unresolved (null) or unjudged, plus up to 2 judged documents nobody retrieved."""
    n_docs = rng.randint(1, 6)
    docs = [f"d{i}" for i in rng.sample(range(20), n_docs)]
    run = [(doc, float(rng.choice((1, 2, 3)))) for doc in docs]
    judgments: list[tuple[str, int | None]] = []
    unjudged = 0
    for doc in docs:
        draw = rng.random()
        if draw < 0.35 and unjudged < 4:
            unjudged += 1
        elif draw < 0.4 and unjudged < 4:
            unjudged += 1
            judgments.append((doc, None))
        else:
            judgments.append((doc, rng.choice(scale)))
    for extra in range(rng.randint(0, 2)):
        judgments.append((f"x{extra}", rng.choice(scale)))
    return run, judgments


def brute_force(cases: dict[str, tuple], spec: EvaluationSpec, scale: tuple[int, ...]) -> dict[tuple[str, int | None], tuple]:
    """(min, max) of the value over every assignment of the scale's grades to each case's unjudged retrieved
    documents, computed by the engine itself on the fully judged lists; None where no assignment has a value."""
    grades = [g for g in scale if spec.unjudged != "condensed" or g >= 0]
    run_rows: list[tuple[str, str, float]] = []
    judgment_rows: list[tuple[str, str, int | None]] = []
    for case, (run, judgments) in cases.items():
        known = {doc: grade for doc, grade in judgments if grade is not None}
        # Only the documents within the depth are in the world (ranked by score, then doc_id descending).
        ranked = sorted(sorted(run, key=lambda row: row[0], reverse=spec.ties != "docid_asc"), key=lambda row: -row[1])
        unjudged = [doc for doc, _ in ranked[: spec.depth] if doc not in known]
        for number, assignment in enumerate(itertools.product(grades, repeat=len(unjudged))):
            query = f"{case}/{number}"
            run_rows += [(query, doc, score) for doc, score in run]
            judgment_rows += [(query, doc, grade) for doc, grade in judgments if grade is not None]
            judgment_rows += [(query, doc, grade) for doc, grade in zip(unjudged, assignment)]
    values = per_query_ndcg(run_frame(run_rows), judgment_frame(judgment_rows), spec).collect()
    values = values.with_columns(case=pl.col("query_id").str.split("/").list.first())
    extremes = values.group_by("case", "cutoff").agg(low=pl.col("value").min(), high=pl.col("value").max())
    return {(r["case"], r["cutoff"]): (r["low"], r["high"]) for r in extremes.iter_rows(named=True)}


def computed(cases: dict[str, tuple], spec: EvaluationSpec, scale: tuple[int, ...], top_k_read: bool) -> dict:
    """value, value_min, value_max, interval_kind per (case, cutoff), from the whole ranked list or, as a top-k
    read does, from each query's candidate rows only (the rest counted by n_retrieved)."""
    run = run_frame([(case, doc, score) for case, (rows, _) in cases.items() for doc, score in rows])
    judgments = judgment_frame([(case, doc, grade) for case, (_, rows) in cases.items() for doc, grade in rows])
    if top_k_read:
        spec = spec.with_options(cutoffs=tuple(k for k in spec.cutoffs if k is not None))
        candidates = candidate_rows(run, spec)
    else:
        retrieved = pl.len().over("query_id")
        if spec.depth is not None:
            retrieved = pl.min_horizontal(retrieved, pl.lit(spec.depth))
        candidates = run.with_columns(n_retrieved=retrieved)
    ranked = attach_judgments(rank_run(candidates, spec), judgments)
    intervals = ndcg_intervals(ranked, judgments, spec, scale)
    values = with_intervals(per_query_ndcg(run, judgments, spec), intervals)
    return {(r["query_id"], r["cutoff"]): r for r in values.collect().iter_rows(named=True)}


def cases_by_setting(
    seed: int, count: int, n_specs: int, scales: Sequence[tuple[int, ...]], make_case: Callable[..., tuple]
) -> dict[tuple[int, int], dict[str, tuple]]:
    """`count` random cases of the brute-force oracles, `make_case(rng, scale)` each, dealt round the settings: case n
    gets spec n % n_specs and scale (n // n_specs) % len(scales). Grouped by (spec index, scale index), each case
    named c<n>, so each group is evaluated in one call."""
    rng = random.Random(seed)
    groups: dict[tuple[int, int], dict[str, tuple]] = defaultdict(dict)
    for number in range(count):
        spec_index, scale_index = number % n_specs, (number // n_specs) % len(scales)
        groups[spec_index, scale_index][f"c{number}"] = make_case(rng, scales[scale_index])
    return groups


@pytest.mark.slow  # an oracle: every assignment of grades, over 1100 random cases
def test_brute_force_agreement_on_random_cases() -> None:
    groups = cases_by_setting(20261203, CASES, len(SPECS), SCALES, random_case)
    checked = exact = bounds = undefined = 0
    for (spec_index, scale_index), cases in groups.items():
        spec, scale = SPECS[spec_index], SCALES[scale_index]
        expected = brute_force(cases, spec, scale)
        for top_k_read in (False, True):
            for (case, cutoff), row in computed(cases, spec, scale, top_k_read).items():
                where = f"{case} cutoff={cutoff} spec={spec.method_label()} scale={scale} top_k_read={top_k_read}"
                low, high = expected[case, cutoff]
                if row["status"] == "no_judgments" or (row["value"] is None and low is None):
                    # Never scored (the brute force's assignments would make it judged), or no world gives it a value.
                    assert row["value_min"] is None and row["value_max"] is None, where
                    continue
                if row["value"] is None:
                    # No relevant judgment now: the interval over the worlds in which the query has a value.
                    undefined += 1
                else:
                    assert row["value_min"] <= row["value"] <= row["value_max"], where
                if spec.unjudged == "condensed" and row["value"] is not None:
                    # The condensed value (the list without its unjudged documents) is held too: with_intervals.
                    low, high = min(low, row["value"]), max(high, row["value"])
                if row["interval_kind"] == "exact":
                    assert row["value_min"] == pytest.approx(low, abs=1e-12), where
                    assert row["value_max"] == pytest.approx(high, abs=1e-12), where
                    exact += 1
                else:
                    assert row["interval_kind"] == "bound" and top_k_read, where
                    assert row["value_min"] <= low + 1e-12 and row["value_max"] >= high - 1e-12, where
                    bounds += 1
                checked += 1
    assert exact >= 1_000 and undefined >= 20
    print(f"\nintervals checked against brute force: {checked} (query, cutoff) rows of {CASES} random cases: "
          f"{exact} exact and equal, {bounds} bounds containing the exact interval; {undefined} of queries without "
          "a value now, over the worlds that give them one")


def test_programme_equals_enumeration_on_random_worlds() -> None:
    # The engine's small lists are enumerated (checked against brute force above); longer ones go through the
    # dynamic programme inside Dinkelbach's iteration: both must give the same ends on the same worlds.
    rng = random.Random(7)
    compared = 0
    for _ in range(400):
        cutoff = rng.choice((3, 5, 10, None))
        slots = rng.randint(0, 7)
        weights = [rng.choice((0.0, rng.random())) for _ in range(slots)]
        levels = rng.choice(((0, 1, 2, 3), (0, 1), (0, 2, 7), (-0.5, 0, 2), (1, 3)))
        judged = [rng.choice((0, 1, 2, 3)) for _ in range(rng.randint(0, 4))]
        fixed = sum(rng.choice(judged or [0]) * rng.random() for _ in range(rng.randint(0, 3)))
        zero = rng.random() < 0.5
        enumerated = ndcg_interval(fixed, weights, judged, levels, cutoff, zero)
        programmed = ndcg_interval(fixed, weights, judged, levels, cutoff, zero, enumeration_limit=0)
        if enumerated is None or programmed is None:
            assert enumerated is programmed is None
            continue
        assert programmed[0] == pytest.approx(enumerated[0], abs=1e-12)
        assert programmed[1] == pytest.approx(enumerated[1], abs=1e-12)
        compared += 1
    assert compared >= 300


WORLD_SCHEMA = {
    "cutoff": pl.Int32, "fixed": pl.Float64, "weights": pl.List(pl.Float64), "unjudged_below": pl.Int64,
    "unseen": pl.Int64, "unseen_unjudged_min": pl.Int64, "judged_ideal": pl.List(pl.Float64),
    "levels": pl.List(pl.Float64), "disputed_weights": pl.List(pl.Float64),
    "disputed_sets": pl.List(pl.List(pl.Float64)), "disputed_docs": pl.List(pl.String),
    "disputed_universe_docs": pl.List(pl.String), "disputed_universe_sets": pl.List(pl.List(pl.Float64)),
}


# Each case computes many worlds both ways: the fast loop keeps the usual four grades.
@pytest.mark.parametrize("levels", [(0.0, 1.0, 2.0, 3.0), *(pytest.param(levels, marks=pytest.mark.slow)
                                    for levels in ((0.0, 1.0, 3.0, 7.0), (1.0, 2.0), (0.0, 1.0)))])
@pytest.mark.parametrize("zero_if_no_ideal", [False, True])
def test_batched_worlds_equal_one_by_one(levels: tuple[float, ...], zero_if_no_ideal: bool) -> None:
    # The evaluation computes a batch's usual worlds in shared numpy operations (`intervals_of_worlds`); each end
    # must be the same bits as the one-world kernel gives it, and the unusual worlds (no judged relevant document,
    # a judged gain off the scale, negative credit, long lists) go one by one.
    rng = random.Random(hash(levels) ^ zero_if_no_ideal)
    rows = []
    for _ in range(500):
        slots = rng.choice((0, 1, 2, 3, 5, 9, 12))
        unseen = rng.choice((0, 0, 3, 989))
        rows.append({
            "cutoff": rng.choice((1, 5, 10, 20, None)),
            "fixed": rng.random() * 4 if rng.random() > 0.03 else -0.25,
            "weights": sorted((1 / math.log2(rng.randint(1, 20) + 1) for _ in range(slots)), reverse=True),
            "unjudged_below": rng.randint(0, 6),
            "unseen": unseen,
            "unseen_unjudged_min": rng.randint(0, unseen),
            "judged_ideal": [
                rng.choice((*levels, 0.0, 5.5 if rng.random() < 0.05 else 0.0)) for _ in range(rng.randint(0, 12))
            ],
            "levels": list(levels),
            "disputed_weights": [], "disputed_sets": [], "disputed_docs": [], "disputed_universe_docs": [],
            "disputed_universe_sets": [],
        })
    worlds = pl.DataFrame(rows, schema=WORLD_SCHEMA)
    batched = intervals_of_worlds(worlds.select(pl.struct(WORLD_INPUTS).alias("w"))["w"], zero_if_no_ideal)
    one_by_one = [interval_of_world(world, zero_if_no_ideal) for world in worlds.iter_rows(named=True)]
    assert batched.struct.unnest().to_dicts() == one_by_one


@pytest.mark.parametrize("zero_if_no_ideal", [False, True])
def test_worlds_without_relevant_judgments_batched_equal_one_by_one(
    zero_if_no_ideal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A query without a judged relevant document takes a value only where some unjudged document is made relevant:
    # its documents below k stay slots of the enumeration, and with the fewest of them no assignment may have a
    # value (then one more than the fewest is tried), or none at all. Batched, each end is the one-world kernel's.
    def world(cutoff: int | None, weights: list[float], below: int, unseen: int, unseen_min: int,
              judged: list[float], fixed: float = 0.0) -> dict:
        return {"cutoff": cutoff, "fixed": fixed, "weights": weights, "unjudged_below": below, "unseen": unseen,
                "unseen_unjudged_min": unseen_min, "judged_ideal": judged, "levels": [0.0, 1.0, 2.0, 3.0],
                "disputed_weights": [], "disputed_sets": [], "disputed_docs": [], "disputed_universe_docs": [],
                "disputed_universe_sets": []}

    rows = [
        world(10, [], 0, 5, 0, [0.0]),  # no slot with the fewest: one more than the fewest
        world(10, [], 0, 5, 2, []),  # slots of weight 0 only
        world(10, [], 0, 0, 0, [0.0, 0.0]),  # nothing to assign: the ideal stays 0
        world(10, [], 2, 0, 0, []),  # below k only, as many in every world
        world(10, [0.5], 0, 989, 980, [0.0], fixed=-0.3),  # a negative judged gain's credit
        world(5, [1.0, 0.63, 0.5], 1, 30, 0, [0.0, 0.0]),
        world(None, [1.0, 0.43], 1, 3, 1, []),
        world(1, [1.0], 0, 989, 989, []),
        world(20, [0.39] * 9, 4, 989, 0, []),  # too many multisets with the most: one by one
    ]
    rng = random.Random(20261207)
    for _ in range(200):
        slots = rng.randint(0, 6)
        unseen = rng.choice((0, 2, 989))
        rows.append(world(rng.choice((1, 3, 10, None)), sorted((1 / math.log2(rng.randint(1, 12) + 1)
                                                              for _ in range(slots)), reverse=True),
                          rng.randint(0, 3), unseen, rng.randint(0, unseen), [0.0] * rng.randint(0, 3)))
    rows.append(world(None, [1 / math.log2(p + 1) for p in range(1, 3_001)], 0, 0, 0, []))  # a whole deep list
    worlds = pl.DataFrame(rows, schema=WORLD_SCHEMA)
    assert worlds_without_relevant_judgments(worlds.head(9), np.array([0.0, 1.0, 2.0, 3.0])).tolist() == [
        True] * 8 + [False]
    padded: list[int] = []

    def padded_rows_seen(lists: pl.Series) -> tuple[np.ndarray, np.ndarray]:
        padded.append(int(lists.list.len().max()))
        return padded_rows(lists)

    # Only the worlds the batch takes are laid out as a matrix: a deep list left to the programme is not padded.
    monkeypatch.setattr("judged.transforms.intervals.padded_rows", padded_rows_seen)
    batched = intervals_of_worlds(worlds.select(pl.struct(WORLD_INPUTS).alias("w"))["w"], zero_if_no_ideal)
    assert padded and max(padded) <= 9
    one_by_one = [interval_of_world(row, zero_if_no_ideal) for row in worlds.iter_rows(named=True)]
    assert batched.struct.unnest().to_dicts() == one_by_one
    kinds = {(row["value_min"] is None, row["interval_kind"]) for row in one_by_one}
    assert (False, "exact") in kinds and (False, "bound") in kinds
    assert ((True, None) in kinds) is not zero_if_no_ideal


def test_issue_example() -> None:
    # A judged grade-1 document at rank 1 and an unjudged one at rank 10: trec_eval says 1.0; graded 3 it gives
    # (1 + 3/log2(11)) / (3 + 1/log2(3)) ~= 0.514.
    low, high, exact = ndcg_interval(1.0, [1 / math.log2(11)], [1.0], [0, 1, 2, 3], 10, zero_if_no_ideal=True)
    assert exact and high == 1.0
    assert low == pytest.approx((1 + 3 / math.log2(11)) / (3 + 1 / math.log2(3)), abs=1e-15)


@pytest.mark.parametrize("zero_if_no_ideal", [False, True])
def test_deep_lists_are_exact_at_every_length(zero_if_no_ideal: bool) -> None:
    # Long lists of unjudged slots (a cutoff of 1,000, or the whole list) go through the programme, whose work is
    # linear in the slots per level and step: exact at any length. On a binary scale the enumeration of multisets is
    # cheap even for 1,000 slots (1,001 multisets), so it is the oracle; on four grades, 40 slots (12,341 multisets).
    rng = random.Random(1000)
    for slots, levels in ((1_000, (0.0, 1.0)), (700, (0.0, 2.0)), (40, (0.0, 1.0, 2.0, 3.0)), (25, (-1.0, 0.0, 3.0))):
        for _ in range(3):
            cutoff = rng.choice((None, 1_000, 100))
            positions = sorted(rng.sample(range(2, 1_400), slots))
            weights = [1 / math.log2(p + 1) if cutoff is None or p <= cutoff else 0.0 for p in positions]
            judged = [rng.choice((0.0, 1.0, 2.0, 3.0)) for _ in range(rng.randint(0, 6))]
            fixed = sum(g / math.log2(i + 2) for i, g in enumerate(judged[:1]))
            enumerated = ndcg_interval(fixed, weights, judged, levels, cutoff, zero_if_no_ideal, enumeration_limit=10**7)
            programmed = ndcg_interval(fixed, weights, judged, levels, cutoff, zero_if_no_ideal, enumeration_limit=0)
            if enumerated is None:
                assert programmed is None
                continue
            assert programmed[2] and enumerated[2]
            assert programmed[0] == pytest.approx(enumerated[0], abs=1e-12)
            assert programmed[1] == pytest.approx(enumerated[1], abs=1e-12)
            if levels[0] >= 0:
                assert 0.0 <= programmed[0] <= programmed[1] <= 1.0


def test_a_query_without_relevant_judgments_is_bounded_over_the_worlds_that_give_it_a_value() -> None:
    # No judged relevant document, one unjudged at rank 1 and one at rank 2 (binary scale), no_relevant='null': the
    # value is null now, but it exists as soon as one of them is relevant: 1 (rank 1 relevant), 1/log2(3) / 1 =
    # 0.631 (rank 2 only), or 1 (both): [0.631, 1]. Under 'zero' the all-non-relevant world scores 0 as well.
    weights = [1.0, 1 / math.log2(3)]
    low, high, exact = ndcg_interval(0.0, weights, [], [0, 1], 10, zero_if_no_ideal=False)
    assert exact and low == pytest.approx(1 / math.log2(3), abs=1e-15) and high == 1.0
    assert ndcg_interval(0.0, weights, [], [0, 1], 10, zero_if_no_ideal=True)[:2] == (0.0, 1.0)
    # Nothing unjudged can be relevant: no world gives it a value.
    assert ndcg_interval(0.0, weights, [], [0], 10, zero_if_no_ideal=False) is None
    assert ndcg_interval(0.0, [], [], [0, 1], 10, zero_if_no_ideal=False) is None


def test_seed_has_no_unjudged_so_min_equals_max_equals_value() -> None:
    # data/seed: one query, three candidates graded 3, 0, 2 in returned order; nothing unjudged.
    spec = PRESETS["trec_eval"].with_options(cutoffs=(1, 2, 3))
    run = run_frame([("q1", "d1", 3.0), ("q1", "d2", 2.0), ("q1", "d3", 1.0)])
    judgments = judgment_frame([("q1", "d1", 3), ("q1", "d2", 0), ("q1", "d3", 2)])
    rows = per_query_ndcg(run, judgments, spec).collect()
    expected = [1.0, 0.7039180890341348, 0.9385574520455131]
    assert rows["value"].to_list() == pytest.approx(expected, abs=1e-15)
    assert rows["value_min"].to_list() == rows["value"].to_list() == rows["value_max"].to_list()
    assert rows["interval_kind"].to_list() == ["exact"] * 3


def test_summary_carries_the_aggregate_interval_and_counts_wide_ones() -> None:
    # q1: a judged grade-1 document at rank 1, an unjudged one at rank 2: NDCG@2 in [(1 + 3/log2(3)) / (3 + 1/log2(3)),
    # 1] ~= [0.7967, 1]. q2: everything judged, min = max = value = 1.
    run = run_frame([("q1", "a", 2.0), ("q1", "u", 1.0), ("q2", "b", 1.0)])
    judgments = judgment_frame([("q1", "a", 1), ("q2", "b", 2), ("q2", "z", 3)])
    low = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    for width, wide in ((0.1, 1), (0.25, 0)):
        spec = PRESETS["judged"].with_options(cutoffs=(2,), interval_width=width)
        per_query = per_query_ndcg(run, judgments, spec).sort("query_id")
        rows = per_query.collect()
        # q2: b (grade 2) first, z (grade 3) not retrieved: 2 / (3 + 2/log2(3)), nothing unjudged
        q2 = 2 / (3 + 2 / math.log2(3))
        assert rows["value_min"].to_list() == pytest.approx([low, q2], abs=1e-15)
        assert rows["value_max"].to_list() == pytest.approx([1.0, q2], abs=1e-15)
        summary = summarize(per_query, spec).collect().row(0, named=True)
        assert summary["value_min"] == pytest.approx((low + q2) / 2, abs=1e-15)
        assert summary["value_max"] == pytest.approx((1.0 + q2) / 2, abs=1e-15)
        assert (summary["interval_width"], summary["n_wide_intervals"], summary["n_bound_intervals"]) == (width, wide, 0)


def test_the_default_width_leaves_the_spec_hash_as_it_was() -> None:
    assert "interval_width" not in PRESETS["judged"].canonical_json()
    assert PRESETS["judged"].with_options(interval_width=0.2).spec_hash != PRESETS["judged"].spec_hash


def _direct_ndcg(numerator: float, gains: Sequence[float], cutoff: int | None, zero: bool) -> float | None:
    """numerator / the ideal DCG of `gains` cut at `cutoff` (positive gains only)."""
    ordered = sorted((g for g in gains if g > 0), reverse=True)[:cutoff]
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(ordered))
    if ideal > 0:
        return numerator / ideal
    return 0.0 if zero else None


@pytest.mark.slow  # an oracle: every assignment over 300 random worlds
def test_disputed_gains_against_every_assignment() -> None:
    # Judged documents with several assessors' grades may take any of them (the `set` model): the interval over
    # every choice for them and every grade for the unjudged documents, credited with weights of either sign (a
    # paired difference's) or only in the ideal, equals brute force; with no dispute it is ndcg_interval's.
    from judged.transforms.intervals import interval_with_disputes

    rng = random.Random(37)
    levels = (0.0, 1.0, 2.0, 3.0)
    compared = 0
    for _ in range(300):
        cutoff = rng.choice((2, 3, 5, None))
        weights = [rng.choice((0.0, 1 / math.log2(rng.randint(2, 6)))) for _ in range(rng.randint(0, 3))]
        disputed = [rng.choice((-1.0, 1.0)) / math.log2(rng.randint(2, 6)) for _ in range(rng.randint(0, 3))]
        if rng.random() < 0.5:
            disputed = [abs(w) for w in disputed]
        sets = [sorted(rng.sample(levels, rng.randint(1, 3))) for _ in disputed]
        ideal_only = [sorted(rng.sample(levels, rng.randint(1, 3))) for _ in range(rng.randint(0, 2))]
        judged = [rng.choice(levels) for _ in range(rng.randint(0, 3))]
        fixed = sum(rng.choice(judged or [0.0]) * rng.random() for _ in range(rng.randint(0, 2)))
        zero = rng.random() < 0.5
        values = []
        for open_gains in itertools.product(levels, repeat=len(weights)):
            for disputed_gains in itertools.product(*sets):
                for ideal_gains in itertools.product(*ideal_only):
                    numerator = fixed + sum(g * w for g, w in zip(open_gains, weights))
                    numerator += sum(g * w for g, w in zip(disputed_gains, disputed))
                    value = _direct_ndcg(numerator, [*judged, *open_gains, *disputed_gains, *ideal_gains], cutoff,
                                         zero)
                    if value is not None:
                        values.append(value)
        found = interval_with_disputes(fixed, weights, judged, levels, cutoff, zero, disputed, sets, ideal_only)
        if not values:
            assert found is None
            continue
        assert found is not None and found[2]
        assert found[0] == pytest.approx(min(values), abs=1e-12)
        assert found[1] == pytest.approx(max(values), abs=1e-12)
        compared += 1
    assert compared >= 250


def test_the_mean_interval_of_no_rows_is_no_row_in_an_eager_group_by() -> None:
    """An empty comparison (a night whose only run was empty) aggregates a frame without rows eagerly: no group, not
    a Polars error about the cumulative sums' type."""
    from judged.transforms.summary import aggregate_interval

    ends = {"difference": pl.Float64, "difference_min": pl.Float64, "difference_max": pl.Float64,
            "weight": pl.Float64}
    empty = pl.DataFrame(schema={"pair": pl.String, **ends})
    may_join = pl.col("difference").is_null() & pl.col("difference_min").is_not_null()
    low, high = aggregate_interval("difference_min", "difference_max", "difference", pl.col("weight"), may_join)
    assert empty.group_by("pair").agg(low=low, high=high).height == 0
    one = pl.DataFrame({"pair": ["a", "a", "a"], "difference": [0.5, None, None], "difference_min": [0.2, -0.4, 0.9],
                        "difference_max": [0.6, 0.1, 1.0], "weight": [1.0, 1.0, 1.0]})
    # The mean's low end takes the may-join row of the lowest end (-0.4): (0.2 - 0.4) / 2; its high end the row
    # of 1.0, and not the one whose highest end (0.1) would lower it: (0.6 + 1.0) / 2.
    assert one.group_by("pair").agg(low=low, high=high).row(0) == ("a", pytest.approx(-0.1), pytest.approx(0.8))
