"""AP, RR, P@k, R@k and R-Prec on the TREC Deep Learning 2019/2020 passage runs (../shared/data): NIST's published
summaries to 5e-5, and pytrec_eval per query to 1e-9.

NIST's binary measures count a passage relevant from grade 2 in 2019's `passages-eval` summary (trec_eval -l 2)
and in 2020's `trec_eval` summary (which mapped grade 1 to 0), from grade 1 in 2019's `trec_eval` summary. Each is
reproduced under its own declared threshold (`rel`).
pytrec_eval-terrier wraps trec_eval 9 (float32 scores, queries in both run and qrels): it is compared under the
`trec_eval9` preset on the queries it reports.
"""

from __future__ import annotations

import csv
import gzip
from functools import cache
from pathlib import Path

import pytest
import pytrec_eval

from judged.flows.engine.evaluate import EvaluationResult, evaluate
from judged.flows.store.readers import LoadedTable, load_table
from judged.schemas.spec import build_spec

CUTOFFS = (10, 100, 1000)
YEARS = {2019: "qrels.dl19-passage.txt", 2020: "qrels.dl20-passage.txt"}
SUMMARY_THRESHOLDS = {2019: {"passages-eval": 2, "trec_eval": 1}, 2020: {"trec_eval": 2}}


def measures(rel: int) -> list[str]:
    at = f"(rel={rel})"
    return [f"AP{at}", f"RR{at}", f"R-Prec{at}", *(f"{m}{at}@{k}" for m in ("AP", "P", "R") for k in CUTOFFS)]


TREC_EVAL = build_spec("trec_eval", measures=measures(1) + measures(2))
TREC_EVAL9 = build_spec("trec_eval9", measures=measures(1) + measures(2))


def track(shared: Path, year: int) -> Path:
    return shared / "data" / f"trec-dl-{year}-passage"


def run_paths(shared: Path, year: int) -> list[Path]:
    return sorted((track(shared, year) / "runs").glob("input.*.gz"))


@cache
def _judgments(path: Path) -> LoadedTable:
    return load_table(path, "judgments")


def _names(result: EvaluationResult, rel: int) -> dict[tuple[str, int | None], str]:
    """(measure, cutoff) -> trec_eval name, for the measures of threshold `rel`."""
    spec = result.spec
    return {
        (m.family, m.cutoff): name
        for m in spec.measure_list()
        if getattr(m, "rel", None) == rel and (name := spec.measure_trec_eval_name(m)) is not None
    }


@pytest.mark.parametrize("year", list(YEARS))
def test_published_binary_measures(shared: Path, year: int) -> None:
    expected: dict[tuple[str, str, str], float] = {}
    with open(track(shared, year) / "published_metrics.tsv") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["metric"].split("_")[0] in ("map", "recip", "P", "recall"):
                expected[(row["run"], row["summary"], row["metric"])] = float(row["value"])
    computed: dict[tuple[str, str, str], float] = {}
    for path in run_paths(shared, year):
        result = evaluate(load_table(path, "run"), _judgments(track(shared, year) / YEARS[year]), TREC_EVAL)
        for summary, rel in SUMMARY_THRESHOLDS[year].items():
            names = _names(result, rel)
            for row in result.summary.iter_rows(named=True):
                if (row["measure"], row["cutoff"]) in names:
                    computed[(result.run_name, summary, names[row["measure"], row["cutoff"]])] = row["value"]
    assert len(expected) >= 4 * 3  # 4 runs or more, at least map, recip_rank and P_10 each
    mismatches = {key: (value, computed.get(key)) for key, value in expected.items()
                  if computed.get(key) is None or abs(computed[key] - value) > 5e-5}
    assert not mismatches


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        query_id, _, doc_id, grade = line.split()
        qrels.setdefault(query_id, {})[doc_id] = int(grade)
    return qrels


def _read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    with gzip.open(path, "rt") as handle:
        for line in handle:
            query_id, _, doc_id, _, score, _ = line.split()
            run.setdefault(query_id, {})[doc_id] = float(score)
    return run


PYTREC_MEASURES = {"map", "map_cut.10,100,1000", "recip_rank", "Rprec", "P.10,100,1000", "recall.10,100,1000"}


@pytest.mark.parametrize("year", list(YEARS))
def test_pytrec_eval_agrees_per_query(shared: Path, year: int) -> None:
    qrels_path = track(shared, year) / YEARS[year]
    qrels = _read_qrels(qrels_path)
    compared = 0
    for path in run_paths(shared, year):
        result = evaluate(load_table(path, "run"), _judgments(qrels_path), TREC_EVAL9)
        run = _read_run(path)
        for rel in (1, 2):
            theirs = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=rel).evaluate(run)
            names = _names(result, rel)
            for row in result.per_query.iter_rows(named=True):
                name = names.get((row["measure"], row["cutoff"]))
                if name is None or row["query_id"] not in theirs:
                    continue
                assert abs(row["value"] - theirs[row["query_id"]][name]) <= 1e-9, (path.name, rel, name, row)
                compared += 1
    assert compared >= 4 * 2 * 12 * 43  # runs, thresholds, measures, queries (43 judged in 2019, 54 in 2020)
