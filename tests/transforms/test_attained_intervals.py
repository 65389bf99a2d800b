"""Every interval end is attained: per run and for a pair of runs, for nDCG at every cutoff (1,000 and the whole list
included), AP, RR, P, R, R-Prec and RBP, each `exact` end equals the value of one explicit assignment of grades to the
unjudged documents, built here and valued by the engine, and no end leaves the measure's range ([0, 1], a difference
[-1, 1]). Long lists with a few unjudged documents deep in them, and queries without any relevant judgment."""

from __future__ import annotations

import itertools
import random

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judged.schemas.measures import parse_measures
from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.transforms.binary_intervals import binary_difference_intervals
from judged.transforms.judging import ranked_and_judged
from judged.transforms.measures import per_query_measures
from judged.transforms.paired_intervals import difference_intervals
from judged.transforms.ranking import candidate_rows
from tests.transforms.test_ndcg import judgment_frame, run_frame

MEASURES = ("nDCG@10", "nDCG@100", "nDCG@1000", "nDCG", "AP", "AP@1000", "RR", "RR@1000", "P@1000", "R@1000",
            "R-Prec", "RBP(p=0.99)")
SCALE = (0, 1, 2, 3)

Runs = dict[str, list[tuple[str, float]]]
Judgments = list[tuple[str, int]]


def long_case(rng: random.Random, length: int, unjudged: int, no_relevant: bool) -> tuple[Runs, Judgments]:
    """Two runs of `length` documents over one pool (sharing about half), every pooled document judged but
    `unjudged` of them (placed anywhere, deep ones included), and one judged document nobody retrieved; with
    `no_relevant`, every judgment is 0."""
    pool = [f"d{i}" for i in range(int(length * 1.5))]
    runs = {name: [(doc, float(length - i)) for i, doc in enumerate(rng.sample(pool, length))] for name in "ab"}
    retrieved = sorted({doc for rows in runs.values() for doc, _ in rows})
    open_docs = set(rng.sample(retrieved, unjudged))
    judgments = [(doc, 0 if no_relevant else rng.choice((0, 0, 0, 1, 2, 3))) for doc in [*pool, "x"]
                 if doc not in open_docs]
    return runs, judgments


def assignments(runs: Runs, judgments: Judgments, spec: EvaluationSpec) -> tuple[list[str], list[tuple[int, ...]]]:
    """The unjudged documents the lists `runs` retrieved (to the depth), and every assignment of grades to them."""
    judged = {doc for doc, _ in judgments}
    open_docs = sorted({doc for rows in runs.values() for doc, _ in rows[: spec.depth] if doc not in judged})
    return open_docs, list(itertools.product(SCALE, repeat=len(open_docs)))


def values_of_every_assignment(
    cases: dict[str, tuple[Runs, Judgments]], spec: EvaluationSpec, world: tuple[str, ...] = ("a", "b")
) -> pl.DataFrame:
    """Per case, assignment, run, measure and cutoff: the engine's value with that assignment's grades given to the
    unjudged documents the runs of `world` retrieved, the others staying unjudged (each assignment one query of its
    own)."""
    run_rows: dict[str, list] = {"a": [], "b": []}
    judgment_rows: list = []
    for case, (runs, judgments) in cases.items():
        open_docs, every = assignments({name: runs[name] for name in world}, judgments, spec)
        for number, grades in enumerate(every):
            query = f"{case}/{number}"
            for name, rows in runs.items():
                run_rows[name] += [(query, doc, score) for doc, score in rows]
            judgment_rows += [(query, doc, grade) for doc, grade in judgments]
            judgment_rows += [(query, doc, grade) for doc, grade in zip(open_docs, grades, strict=True)]
    frames = []
    for name, rows in run_rows.items():
        values = per_query_measures(candidate_rows(run_frame(rows), spec), judgment_frame(judgment_rows), spec,
                                    intervals=False)
        frames.append(values.select("query_id", "measure", "cutoff", "value").with_columns(run=pl.lit(name)).collect())
    return pl.concat(frames).with_columns(
        case=pl.col("query_id").str.split("/").list.first(),
        assignment=pl.col("query_id").str.split("/").list.last().cast(pl.Int64),
    )


def computed(cases: dict[str, tuple[Runs, Judgments]], spec: EvaluationSpec) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The engine's per-run intervals of run `a`, and the paired intervals of `b` against `a`."""
    judgments = judgment_frame([(case, doc, g) for case, (_, rows) in cases.items() for doc, g in rows])
    runs = {name: run_frame([(case, doc, s) for case, (runs, _) in cases.items() for doc, s in runs[name]])
            for name in "ab"}
    per_run = per_query_measures(candidate_rows(runs["a"], spec), judgments, spec, SCALE).collect()
    ranked = pl.concat([ranked_and_judged(candidate_rows(run, spec), judgments, spec).with_columns(run=pl.lit(name))
                        for name, run in runs.items()])
    pairs = pl.LazyFrame({"baseline": ["a"], "run": ["b"]})
    ndcg_spec = spec.model_copy(update={"cutoffs": tuple(m.cutoff for m in spec.measure_list() if m.name == "nDCG")})
    others = [m for m in spec.measure_list() if m.name != "nDCG"]
    paired = pl.concat([
        difference_intervals(ranked, judgments, ndcg_spec, pairs, SCALE).drop("n_unjudged"),
        binary_difference_intervals(ranked, judgments, spec, others, pairs, SCALE).drop("n_unjudged"),
    ], how="vertical_relaxed").collect()
    return per_run, paired


def check_attained(cases: dict[str, tuple[Runs, Judgments]], spec: EvaluationSpec) -> tuple[int, int]:
    """Every exact end equals an assignment's value (and a bound contains them all); every end in range. Returns the
    per-run and paired ends checked."""
    every = values_of_every_assignment(cases, spec)
    keys = ["case", "measure", "cutoff"]
    # A run's own world: the documents only the other run retrieved stay unjudged.
    per_run_truth = values_of_every_assignment(cases, spec, ("a",)).filter(pl.col("run") == "a").group_by(keys).agg(
        low=pl.col("value").min(), high=pl.col("value").max())
    wide = every.pivot(on="run", index=[*keys, "assignment"], values="value")
    pair_truth = wide.drop_nulls(["a", "b"]).group_by(keys).agg(
        low=(pl.col("b") - pl.col("a")).min(), high=(pl.col("b") - pl.col("a")).max())
    per_run, paired = computed(cases, spec)
    checked_run = checked_pair = 0
    truth = {(r["case"], r["measure"], r["cutoff"]): (r["low"], r["high"]) for r in per_run_truth.iter_rows(named=True)}
    for row in per_run.iter_rows(named=True):
        where = f"run a {row['query_id']} {row['measure']}@{row['cutoff']} {spec.method_label()}"
        if row["measure"] == "Judged":
            continue
        low, high = truth[row["query_id"], row["measure"], row["cutoff"]]
        if low is None:
            assert row["value_min"] is None and row["value_max"] is None, where
            continue
        assert 0.0 <= row["value_min"] <= row["value_max"] <= 1.0, where
        assert row["interval_kind"] == "exact", where
        assert row["value_min"] == pytest.approx(low, abs=1e-12), where
        assert row["value_max"] == pytest.approx(high, abs=1e-12), where
        checked_run += 2
    truth = {(r["case"], r["measure"], r["cutoff"]): (r["low"], r["high"]) for r in pair_truth.iter_rows(named=True)}
    for row in paired.iter_rows(named=True):
        where = f"b - a {row['query_id']} {row['measure']}@{row['cutoff']} {spec.method_label()}"
        low, high = truth.get((row["query_id"], row["measure"], row["cutoff"]), (None, None))
        if low is None:  # no assignment gives both runs a value
            assert row["difference_min"] is None, where
            continue
        assert -1.0 <= row["difference_min"] <= row["difference_max"] <= 1.0, where
        if row["difference_kind"] == "exact":
            assert row["difference_min"] == pytest.approx(low, abs=1e-12), where
            assert row["difference_max"] == pytest.approx(high, abs=1e-12), where
        else:
            assert row["difference_min"] <= low + 1e-12 and row["difference_max"] >= high - 1e-12, where
        checked_pair += 2
    return checked_run, checked_pair


@pytest.mark.slow  # an oracle: 256 assignments of lists of 1,000 documents, every measure, per run and paired
@pytest.mark.parametrize("no_relevant", ["null", "zero"])
def test_every_end_is_an_assignment_at_large_cutoffs(no_relevant: str) -> None:
    rng = random.Random(1000 + len(no_relevant))
    cases = {f"c{n}": long_case(rng, 1_000, 4, no_relevant=n % 3 == 2) for n in range(6)}
    spec = PRESETS["judged"].with_options(measures=parse_measures(list(MEASURES)), no_relevant=no_relevant)
    checked_run, checked_pair = check_attained(cases, spec)
    assert checked_run >= 100 and checked_pair >= 100
    print(f"\n{checked_run} per-run and {checked_pair} paired interval ends at cutoffs up to 1,000 and whole lists of "
          f"1,000 documents, each the value of an assignment (no_relevant={no_relevant})")


@pytest.mark.slow  # a property test
# Each example values every assignment through the engine (~0.6 s): an eighth of the profile's count.
@settings(max_examples=max(1, settings.default.max_examples // 8), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    length=st.integers(1, 40),
    unjudged=st.integers(0, 4),
    no_relevant=st.sampled_from(["null", "zero"]),
    ties=st.sampled_from(["docid_desc", "average"]),
    condensed=st.booleans(),
)
def test_every_end_is_an_assignment_and_in_range(
    seed: int, length: int, unjudged: int, no_relevant: str, ties: str, condensed: bool
) -> None:
    rng = random.Random(seed)
    cases = {"c0": long_case(rng, length, min(unjudged, length), no_relevant=rng.random() < 0.3)}
    # Ties come from scores that repeat.
    cases["c0"] = ({name: [(doc, float(int(score) // 3)) for doc, score in rows]
                    for name, rows in cases["c0"][0].items()}, cases["c0"][1])
    measures = ["nDCG@5", "nDCG@50", "nDCG"] if ties == "average" else list(MEASURES)
    spec = PRESETS["judged"].with_options(
        measures=parse_measures(measures), no_relevant=no_relevant, ties=ties,
        unjudged="condensed" if condensed and ties != "average" else "zero",
    )
    check_attained(cases, spec)
