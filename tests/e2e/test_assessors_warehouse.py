"""A judgment set of two assessors end to end, through the Prefect flows: `judged ingest-judgments` of one TREC file
per assessor (data/assessors-example, synthetic), its rows per assessor, its assessors and their agreement in SQL;
then `judged evaluate --warehouse` and `judged compare --warehouse` under `--assessor-model set`, whose values are
those of the same rows evaluated from one Parquet table with an `assessor` column, without a warehouse. A set
without assessors ingested beside it is stored as before.

Uses the session's temporary Prefect server (`prefect_harness`).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO, SAMPLE
from tests.e2e.test_compare_warehouse import judged, sql

EXAMPLE = REPO / "data" / "assessors-example"
FILES = [EXAMPLE / "synthetic_a.txt", EXAMPLE / "synthetic_b.txt"]
NAMES = ["--assessor", "synthetic_a", "--assessor", "synthetic_b"]
RUNS = [SAMPLE / "runs" / f"input.{name}.gz" for name in ("p_bm25", "pash_r3")]
SPEC = ["--assessor-model", "set", "--measures", "nDCG@10,P@10"]
FAST = ["--permutations", "1000", "--resamples", "1000"]


@pytest.fixture(scope="module")
def stored(prefect_harness: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    warehouse = tmp_path_factory.mktemp("warehouse")
    ingested = judged("ingest-judgments", *FILES, *NAMES, "--warehouse", warehouse)
    assert ingested.exit_code == 0, ingested.output
    plain = judged("ingest-judgments", REPO / "data" / "seed" / "qrels.txt", "--warehouse", warehouse)
    assert plain.exit_code == 0, plain.output
    evaluated = judged("evaluate", "assessors-example", *RUNS, "--warehouse", warehouse, *SPEC, "--format", "json")
    assert evaluated.exit_code == 0, evaluated.output
    compared = judged("compare", "assessors-example", *RUNS, "--warehouse", warehouse, *SPEC, *FAST,
                      "--format", "json")
    assert compared.exit_code == 0, compared.output
    return {"warehouse": warehouse, "evaluated": json.loads(evaluated.stdout), "compared": json.loads(compared.stdout)}


def test_the_rows_of_each_assessor_are_stored_and_queryable(stored: dict) -> None:
    warehouse = stored["warehouse"]
    rows = sql(warehouse, "SELECT j.assessor, count(*) AS n FROM judgments j JOIN judgment_sets s "
                          "USING (judgment_set_id) WHERE s.name = 'assessors-example' GROUP BY ALL ORDER BY 1")
    assert rows == [{"assessor": "synthetic_a", "n": 80}, {"assessor": "synthetic_b", "n": 75}]
    assessors = sql(warehouse, "SELECT assessor, assessor_kind, n_judgments FROM assessors ORDER BY assessor")
    assert assessors == [{"assessor": "synthetic_a", "assessor_kind": "human", "n_judgments": 80},
                         {"assessor": "synthetic_b", "assessor_kind": "model:synthetic-rule", "n_judgments": 75}]
    (pair,) = sql(warehouse, "SELECT * FROM assessor_agreement")
    printed = json.loads(judged("agreement", "assessors-example", "--warehouse", warehouse, "--format", "json").stdout)
    assert pair["relevant_from"] == 2 == printed[0]["relevant_from"]
    for key in ("shared_pairs", "agreement", "kappa", "weighted_kappa", "kappa_relevant"):
        assert pair[key] == printed[0]["pairs"][0][key], key
    assert pair["alpha"] == printed[0]["alpha"]
    # The set without assessors beside it: its rows name none, and it has no row in the assessors' views.
    assert sql(warehouse, "SELECT count(*) AS n, count(j.assessor) AS named FROM judgments j JOIN judgment_sets s "
                          "USING (judgment_set_id) WHERE s.name = ''") == [{"n": 3, "named": 0}]
    assert sql(warehouse, "SELECT count(DISTINCT judgment_set_id) AS n FROM assessors") == [{"n": 1}]


def _one_table(tmp_path: Path) -> Path:
    """The example's rows as one Parquet table with an `assessor` column."""
    frames = [
        pl.read_csv(path, separator=" ", has_header=False, new_columns=["query_id", "iteration", "doc_id", "relevance"],
                    schema_overrides={"query_id": pl.String, "iteration": pl.String, "doc_id": pl.String})
        .with_columns(assessor=pl.lit(name))
        for path, name in zip(FILES, ("synthetic_a", "synthetic_b"), strict=True)
    ]
    pl.concat(frames).write_parquet(tmp_path / "example.parquet")
    return tmp_path / "example.parquet"


def test_evaluate_with_the_set_model_gives_the_values_of_the_rows_without_a_warehouse(
    stored: dict, tmp_path: Path
) -> None:
    direct = judged("evaluate", _one_table(tmp_path), *RUNS, *SPEC, "--format", "json")
    assert direct.exit_code == 0, direct.output
    pairs = zip(stored["evaluated"]["evaluations"], json.loads(direct.stdout)["evaluations"], strict=True)
    for through_warehouse, alone in pairs:
        keys = ("measure", "cutoff", "value", "value_min", "value_max", "n_scored")
        assert [{k: row[k] for k in keys} for row in through_warehouse["summary"]] == \
            [{k: row[k] for k in keys} for row in alone["summary"]]
        wide = [row for row in through_warehouse["summary"] if row["value_max"] > row["value_min"]]
        assert wide, "the two assessors disagree on documents the runs retrieved: some interval is wide"


def test_compare_with_the_set_model_gives_the_values_of_the_rows_without_a_warehouse(
    stored: dict, tmp_path: Path
) -> None:
    direct = judged("compare", _one_table(tmp_path), *RUNS, *SPEC, *FAST, "--format", "json")
    assert direct.exit_code == 0, direct.output
    keys = ("run", "measure", "cutoff", "mean_difference", "mean_difference_min", "mean_difference_max", "decided",
            "p_randomization")
    assert [{k: row[k] for k in keys} for row in stored["compared"]["comparisons"]] == \
        [{k: row[k] for k in keys} for row in json.loads(direct.stdout)["comparisons"]]
