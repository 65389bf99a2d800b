"""Intervals over set-valued grades (assessor models `set` and `range`): per run and for a pair of runs, for nDCG at
several cutoffs and every other measure with an interval, against every assignment that gives each unjudged
document a grade of the scale and each disputed judged document (retrieved or not) one of its grades, valued by the
engine on point judgments."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import polars as pl
import pytest

from judged.schemas.measures import parse_measures
from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.transforms.binary_intervals import binary_difference_intervals
from judged.transforms.judging import ranked_and_judged
from judged.transforms.measures import per_query_measures
from judged.transforms.paired_intervals import difference_intervals
from judged.transforms.ranking import candidate_rows
from tests.transforms.test_ndcg import run_frame

MEASURES = ("nDCG@2", "nDCG@5", "nDCG", "AP", "AP@3", "RR", "P@3", "R@3", "R-Prec", "RBP(p=0.8)", "AP(rel=2)")
SCALE = (0, 1, 2, 3)


def judgments_frame(rows: list[tuple[str, str, int | None, list[int] | None]]) -> pl.LazyFrame:
    """(query, doc, grade, grade set) rows, as `resolve_assessors` gives them."""
    return pl.LazyFrame(
        {"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows], "relevance": [r[2] for r in rows],
         "grade_set": [r[3] for r in rows], "source_line": list(range(1, len(rows) + 1))},
        schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int32, "grade_set": pl.List(pl.Int32),
                "source_line": pl.Int64},
    )


def random_case(rng: random.Random) -> tuple[dict[str, list[tuple[str, float]]], list]:
    """Two runs over a pool of up to 7 documents (ties common); each pooled document unjudged, judged with one grade,
    or disputed (two or three grades: `set`), at most 5 open in all; plus up to 2 judged documents nobody retrieved,
    possibly disputed."""
    pool = [f"d{i}" for i in rng.sample(range(20), rng.randint(1, 7))]
    runs = {name: [(doc, float(rng.choice((1, 2, 3)))) for doc in rng.sample(pool, rng.randint(0, len(pool)))]
            for name in "ab"}
    judgments, open_docs = [], 0
    for doc in [*pool, *(f"x{e}" for e in range(rng.randint(0, 2)))]:
        draw = rng.random()
        if draw < 0.25 and open_docs < 5 and doc.startswith("d"):
            open_docs += 1  # unjudged
        elif draw < 0.55 and open_docs < 5:
            open_docs += 1
            grades = sorted(rng.sample(SCALE, rng.randint(2, 3)))
            judgments.append((doc, grades[(len(grades) - 1) // 2], grades))
        else:
            judgments.append((doc, rng.choice(SCALE), None))
    return runs, judgments


def truth(cases: dict, spec: EvaluationSpec, world: str) -> dict:
    """Per (case, measure, cutoff): the (min, max) of run a's value (`world` "a") or of b - a (`world` "ab") over
    every assignment, on point judgments."""
    runs_rows: dict[str, list] = {"a": [], "b": []}
    judgment_rows: list = []
    for case, (runs, judgments) in cases.items():
        judged = {doc for doc, _, _ in judgments}
        retrieved = {doc for name in world for doc, _ in runs[name]}
        unjudged = sorted(retrieved - judged)
        disputed = [(doc, grades) for doc, _, grades in judgments if grades is not None]
        certain = [(doc, grade) for doc, grade, grades in judgments if grades is None]
        choices = [SCALE] * len(unjudged) + [grades for _, grades in disputed]
        for number, chosen in enumerate(itertools.product(*choices)):
            query = f"{case}/{number}"
            for name in "ab":
                runs_rows[name] += [(query, doc, score) for doc, score in runs[name]]
            docs = [*unjudged, *(doc for doc, _ in disputed)]
            judgment_rows += [(query, doc, grade, None) for doc, grade in [*certain, *zip(docs, chosen)]]
    judgments_lf = judgments_frame(judgment_rows).drop("grade_set")
    values = {
        name: per_query_measures(candidate_rows(run_frame(rows), spec), judgments_lf, spec, intervals=False)
        .select("query_id", "measure", "cutoff", pl.col("value").alias(name)).collect()
        for name, rows in runs_rows.items()
    }
    keys = ["query_id", "measure", "cutoff"]
    both = values["a"].join(values["b"], on=keys, nulls_equal=True)
    value = pl.col("a") if world == "a" else pl.col("b") - pl.col("a")
    found = (both.filter(value.is_not_null()) if world == "a" else both.drop_nulls(["a", "b"])).with_columns(
        v=value, case=pl.col("query_id").str.split("/").list.first()
    ).group_by("case", "measure", "cutoff").agg(low=pl.col("v").min(), high=pl.col("v").max())
    return {(r["case"], r["measure"], r["cutoff"]): (r["low"], r["high"]) for r in found.iter_rows(named=True)}


@pytest.mark.slow  # an oracle: every assignment of grades and of disputed grades, over 300 random cases
@pytest.mark.parametrize("no_relevant", ["null", "zero"])
def test_set_valued_intervals_against_every_assignment(no_relevant: str) -> None:
    rng = random.Random(3700 + len(no_relevant))
    cases = {f"c{n}": random_case(rng) for n in range(150)}
    cases = {case: value for case, value in cases.items() if value[1]}  # a query needs judgments to be scored
    spec = PRESETS["judged"].with_options(measures=parse_measures(list(MEASURES)), no_relevant=no_relevant)
    judgments = judgments_frame([(case, doc, g, gs) for case, (_, rows) in cases.items() for doc, g, gs in rows])
    run = {name: run_frame([(case, doc, s) for case, (runs, _) in cases.items() for doc, s in runs[name]])
           for name in "ab"}
    per_run = per_query_measures(candidate_rows(run["a"], spec), judgments, spec, SCALE).collect()
    expected = truth(cases, spec, "a")
    checked = disputed_rows = 0
    for row in per_run.filter(pl.col("measure") != "Judged").iter_rows(named=True):
        where = f"run a {row['query_id']} {row['measure']}@{row['cutoff']} {no_relevant}"
        low, high = expected.get((row["query_id"], row["measure"], row["cutoff"]), (None, None))
        if low is None:
            assert row["value_min"] is None, where
            continue
        assert row["interval_kind"] == "exact", where
        assert (row["value_min"], row["value_max"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12)), where
        checked += 1
        disputed_rows += any(gs for _, _, gs in cases[row["query_id"]][1])
    ranked = pl.concat([ranked_and_judged(candidate_rows(r, spec), judgments, spec).with_columns(run=pl.lit(name))
                        for name, r in run.items()])
    pairs = pl.LazyFrame({"baseline": ["a"], "run": ["b"]})
    ndcg_spec = spec.model_copy(update={"cutoffs": tuple(m.cutoff for m in spec.measure_list() if m.name == "nDCG")})
    paired = pl.concat([
        difference_intervals(ranked, judgments, ndcg_spec, pairs, SCALE),
        binary_difference_intervals(ranked, judgments, spec, [m for m in spec.measure_list() if m.name != "nDCG"],
                                    pairs, SCALE),
    ], how="vertical_relaxed").collect()
    expected = truth(cases, spec, "ab")
    for row in paired.iter_rows(named=True):
        where = f"b - a {row['query_id']} {row['measure']}@{row['cutoff']} {no_relevant}"
        low, high = expected.get((row["query_id"], row["measure"], row["cutoff"]), (None, None))
        if low is None:
            assert row["difference_min"] is None, where
            continue
        assert row["difference_kind"] == "exact", where
        assert (row["difference_min"], row["difference_max"]) == (
            pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12)), where
        checked += 1
    assert checked >= 1_000 and disputed_rows >= 300
    print(f"\nset-valued intervals checked against every assignment: {checked} rows ({disputed_rows} per-run rows of "
          f"queries with disputed grades), no_relevant={no_relevant}")


def random_pair_worlds(rng: random.Random, count: int) -> pl.DataFrame:
    """Paired worlds (`DIFFERENCE_INPUTS` rows) larger than brute force can value: up to 8 credited disputed
    documents of either sign, up to 2 credited unjudged slots, up to 4 ideal-only disputed documents and up to 3
    ideal-only unjudged ones, with or without a judged relevant document, at cutoffs from 1 to all."""
    rows = []
    for _ in range(count):
        disputed = [rng.choice((-1.0, 1.0)) / np.log2(rng.randint(2, 12)) for _ in range(rng.randint(0, 8))]
        docs = [f"d{i}" for i in range(len(disputed))]
        ideal_only = [f"i{i}" for i in range(rng.randint(0 if disputed else 1, 4))]
        sets = [sorted(rng.sample((0.0, 1.0, 2.0, 3.0), rng.randint(2, 3))) for _ in docs + ideal_only]
        fewest = rng.randint(0, 3)
        rows.append({
            "cutoff": rng.choice((1, 3, 5, 10, None)),
            "fixed": rng.choice((0.0, rng.uniform(-2.0, 2.0))),
            "weights": [rng.choice((-1.0, 1.0)) / np.log2(rng.randint(2, 12)) for _ in range(rng.randint(0, 2))],
            "ideal_only_fewest": fewest,
            "ideal_only_most": fewest + rng.choice((0, 0, 2)),
            # Half without a judged relevant document: the ideal may stay 0.
            "judged_ideal": [float(rng.randint(1, 3)) for _ in range(rng.choice((0, 0, 0, 1, 3, 12)))],
            "levels": [0.0, 1.0, 2.0, 3.0],
            "disputed_weights": disputed,
            "disputed_sets": sets[: len(docs)],
            "disputed_docs": docs,
            "disputed_universe_docs": docs + ideal_only,
            "disputed_universe_sets": sets,
        })
    return pl.DataFrame(rows, schema_overrides={"cutoff": pl.Int32})


@pytest.mark.parametrize("zero_if_no_ideal", [False, pytest.param(True, marks=pytest.mark.slow)])  # ~1 s each
def test_the_batched_disputed_worlds_are_the_programme_one_multiset_at_a_time(
    zero_if_no_ideal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The paired worlds with disputed documents, valued together (`differences_of_worlds`: the batched kernel of
    transforms/disputed_worlds.py, worlds of several cutoffs, sizes and caps in one call), equal each world valued
    alone by the other method: one `ndcg_interval` per multiset of the disputed documents' gains (the dictionary
    programme `disputed_sums`), which `interval_with_disputes` takes when the kernel's cell limit is 0."""
    from judged.transforms import disputed_worlds, intervals, paired_intervals
    from judged.transforms.paired_intervals import DIFFERENCE_INPUTS, difference_interval, differences_of_worlds

    frame = random_pair_worlds(random.Random(37 + zero_if_no_ideal), 50)
    # A deep list with a disputed document, which the kernel leaves to the programme (too many multisets of grades
    # over its 40 unjudged slots): it is never laid out as a matrix with the worlds the kernel takes.
    deep = frame.head(1).with_columns(
        cutoff=pl.lit(None, pl.Int32), weights=pl.lit([1 / math.log2(p + 1) for p in range(2, 42)]),
        disputed_weights=pl.lit([0.5]), disputed_sets=pl.lit([[0.0, 2.0]]), disputed_docs=pl.lit(["deep"]),
        disputed_universe_docs=pl.lit(["deep"]), disputed_universe_sets=pl.lit([[0.0, 2.0]]))
    frame = pl.concat([frame, deep])
    padded: list[int] = []

    def padded_rows_seen(lists: pl.Series) -> tuple[np.ndarray, np.ndarray]:
        padded.append(int(lists.list.len().max() or 0))
        return intervals.padded_rows(lists)

    with monkeypatch.context() as patched:
        patched.setattr(paired_intervals, "padded_rows", padded_rows_seen)
        patched.setattr(disputed_worlds, "padded_rows", padded_rows_seen)
        batched = differences_of_worlds(frame.select(pl.struct(DIFFERENCE_INPUTS).alias("w"))["w"], zero_if_no_ideal)
    assert padded and max(padded) <= 8
    monkeypatch.setattr(disputed_worlds, "DISPUTED_WORLD_CELLS_MAX", 0)
    valued = 0
    for row, found in zip(frame.iter_rows(named=True), batched.struct.unnest().iter_rows(), strict=True):
        ideal_only = [s for d, s in zip(row["disputed_universe_docs"], row["disputed_universe_sets"])
                      if d not in row["disputed_docs"]]
        alone = difference_interval(
            row["fixed"], row["weights"], row["judged_ideal"], row["levels"], row["cutoff"], zero_if_no_ideal,
            row["ideal_only_fewest"], row["ideal_only_most"], row["disputed_weights"], row["disputed_sets"], ideal_only,
        )
        if alone is None:
            assert found == (None, None, None), row
            continue
        assert found[2] == ("exact" if alone[2] else "bound"), row
        assert (found[0], found[1]) == (pytest.approx(alone[0], abs=1e-12), pytest.approx(alone[1], abs=1e-12)), row
        valued += 1
    assert valued >= 40
