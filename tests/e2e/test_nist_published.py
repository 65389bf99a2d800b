"""NIST's published TREC Deep Learning passage scores (../shared/data), reproduced under declared specs.

`passages-eval` is trec_eval on the graded qrels (gain = grade); the 2020 `trec_eval` summary mapped grade 1 to 0.
Both are reproduced to 5e-5, each under its own spec and label.
"""

from __future__ import annotations

import csv
import gzip
from functools import cache
from pathlib import Path

import pytest

from judged.flows.engine.evaluate import EvaluationResult, evaluate
from judged.flows.store.readers import LoadedTable, load_table
from judged.schemas.spec import PRESETS, EvaluationSpec

CUTOFFS = (10, 100, 1000)
LINEAR = PRESETS["trec_eval"].with_options(cutoffs=CUTOFFS)
GRADE1_AS_ZERO = LINEAR.with_options(gain="map", gain_map=((0, 0), (1, 0), (2, 2), (3, 3)))
YEARS = {2019: "qrels.dl19-passage.txt", 2020: "qrels.dl20-passage.txt"}


def track(shared: Path, year: int) -> Path:
    return shared / "data" / f"trec-dl-{year}-passage"


@cache
def _judgments(path: Path) -> LoadedTable:
    return load_table(path, "judgments")


@cache
def _evaluate(run_path: Path, qrels_path: Path, spec: EvaluationSpec) -> EvaluationResult:
    return evaluate(load_table(run_path, "run"), _judgments(qrels_path), spec)


def published(shared: Path, year: int) -> dict[tuple[str, str, str], float]:
    with (track(shared, year) / "published_metrics.tsv").open() as handle:
        return {(r["run"], r["summary"], r["metric"]): float(r["value"]) for r in csv.DictReader(handle, delimiter="\t")}


def runs(shared: Path, year: int) -> list[Path]:
    return sorted((track(shared, year) / "runs").glob("input.*.gz"))


def check(result: EvaluationResult, expected: dict[tuple[str, str, str], float], summary_name: str) -> None:
    for row in result.summary.iter_rows(named=True):
        key = (result.run_name, summary_name, f"ndcg_cut_{row['cutoff']}")
        assert key in expected, key
        assert row["value"] == pytest.approx(expected[key], abs=5e-5), key


@pytest.mark.parametrize("year", list(YEARS))
def test_passages_eval_summary(shared: Path, year: int) -> None:
    expected = published(shared, year)
    qrels = track(shared, year) / YEARS[year]
    assert runs(shared, year), "no runs shipped"
    for run in runs(shared, year):
        check(_evaluate(run, qrels, LINEAR), expected, "passages-eval")


def test_2020_trec_eval_summary_with_grade_1_as_zero(shared: Path) -> None:
    expected = published(shared, 2020)
    qrels = track(shared, 2020) / YEARS[2020]
    for run in runs(shared, 2020):
        mapped = _evaluate(run, qrels, GRADE1_AS_ZERO)
        check(mapped, expected, "trec_eval")
        plain = _evaluate(run, qrels, LINEAR)
        assert mapped.spec.label(10) != plain.spec.label(10)
        assert mapped.evaluation_id != plain.evaluation_id
    assert "gain={0:0,1:0,2:2,3:3}" in GRADE1_AS_ZERO.label(10)


def test_dora_large_unjudged_counts_at_10(shared: Path) -> None:
    """Hand count: rank DoRA_Large by score desc, doc id desc; count top-10 documents without a judgment."""
    base = track(shared, 2020)
    judged = {tuple(line.split()[::2][:2]) for line in (base / YEARS[2020]).read_text().splitlines()}
    by_query: dict[str, list[tuple[float, str]]] = {}
    with gzip.open(base / "runs" / "input.DoRA_Large.gz", "rt") as handle:
        for line in handle:
            query, _, doc, _, score, _ = line.split()[:6]
            by_query.setdefault(query, []).append((float(score), doc))
    judged_queries = {query for query, _ in judged}
    hand = {
        query: sum((query, doc) not in judged for _, doc in sorted(rows, reverse=True)[:10])
        for query, rows in by_query.items()
        if query in judged_queries
    }
    result = _evaluate(base / "runs" / "input.DoRA_Large.gz", base / YEARS[2020], LINEAR)
    at10 = result.per_query.filter(result.per_query["cutoff"] == 10)
    computed = {r["query_id"]: r["n_unjudged_at_k"] for r in at10.iter_rows(named=True) if r["status"] == "scored"}
    assert computed == hand
    share = sum(hand.values()) / (10 * len(hand))
    assert 0.32 <= share <= 0.43  # the data README: 32-43% unjudged in the top 10
