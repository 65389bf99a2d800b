"""The analyst queries of docs/warehouse.md on a warehouse with two judgment versions and two nights, as the judging
loop leaves it: the quick start's night on NIST's judgments, a worklist answered and ingested as version v2
(`ingest-judgments --extends`), and a second night of the same runs, evaluated and compared against v2. Each query
answers once per run, query or document, on the newest version, and says which version it is on; the catalog opens
in DuckDB 1.0.0 too. Uses the session's temporary Prefect server (`prefect_harness`)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from tests.conftest import REPO, SAMPLE
from tests.e2e.test_quickstart import (  # noqa: F401 - fixtures
    _RUN_IN_OLD_CLIENT, OLDEST_CLIENT, demo_night, oldest_duckdb,
)

PAGE = (REPO / "docs" / "warehouse.md").read_text()
QUERIES = re.findall(r"```sql\n(.*?)```", PAGE, flags=re.S)
COMPARISON_QUERIES = re.findall(r"```sql comparison\n(.*?)```", PAGE, flags=re.S)
RUNS = ("DoRA_Large", "p_bm25", "pash_r3")
runner = CliRunner()


def judged(*args: object) -> str:
    result = runner.invoke(app, [str(arg) for arg in args])
    assert result.exit_code == 0, result.output
    return result.stdout


def sql(warehouse: Path, query: str) -> list[dict]:
    return json.loads(judged("sql", query, "--warehouse", warehouse, "--format", "json"))


@pytest.fixture(scope="module")
def two_versions(
    prefect_harness: str, demo_night: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    root = tmp_path_factory.mktemp("two-versions")
    warehouse, inbox = root / "warehouse", root / "inbox"
    # The quick start's night (`judged demo`), run once for tests/e2e/test_quickstart.py too: a copy of its
    # warehouse and inbox (a warehouse answers from its own files wherever it lies).
    shutil.copytree(demo_night[0] / "warehouse", warehouse)
    shutil.copytree(demo_night[0] / "inbox", inbox)
    worklist = root / "worklist.txt"
    judged("worklist", "--judgments", "trec-dl-2020-passage", "--cutoff", "10", "--budget", "40", "--out", worklist,
           "--warehouse", warehouse)
    answers = root / "answers.txt"  # every pair asked for judged relevant (grade 1)
    answers.write_text("".join(f"{line.rstrip()} 1\n" for line in worklist.read_text().splitlines()))
    judged("ingest-judgments", answers, "--extends", "trec-dl-2020-passage", "--version", "v2",
           "--warehouse", warehouse)
    for path in (SAMPLE / "runs").iterdir():  # the second night: the same runs again, now against v2
        shutil.copy(path, inbox / path.name)
    judged("nightly", "--inbox", inbox, "--judgments", "trec-dl-2020-passage", "--preset", "trec_eval",
           "--cutoffs", "10,100,1000", "--warehouse", warehouse)
    assert sql(warehouse, "SELECT version FROM judgment_sets ORDER BY ingested_at") == [
        {"version": "nist-final"}, {"version": "v2"}
    ]
    assert sql(warehouse, "SELECT count(*) AS n FROM comparison_records") == [{"n": 2}]
    return warehouse


def test_the_views_an_analyst_joins_carry_the_judgment_version(two_versions: Path) -> None:
    for view in ("summary", "per_query", "judged_run_rows", "comparisons"):
        rows = sql(two_versions, f"SELECT DISTINCT judgment_set_id, judgment_version FROM {view} ORDER BY ALL")
        assert sorted(r["judgment_version"] for r in rows) == ["nist-final", "v2"], view
    for view in ("latest_summary", "latest_per_query", "latest_judgment_sets"):
        rows = sql(two_versions, f"SELECT DISTINCT judgment_set_id FROM {view}")
        assert rows == sql(two_versions, "SELECT judgment_set_id FROM judgment_sets WHERE version = 'v2'"), view


def test_mean_ndcg_per_run_once_per_run(two_versions: Path) -> None:
    rows = sql(two_versions, QUERIES[0])
    assert sorted(r["run_name"] for r in rows) == sorted(RUNS)
    assert {r["judgment_version"] for r in rows} == {"v2"}
    assert [r["ndcg_10"] for r in rows] == sorted((r["ndcg_10"] for r in rows), reverse=True)


def test_per_query_differences_once_per_query(two_versions: Path) -> None:
    rows = sql(two_versions, QUERIES[1])
    assert len(rows) == 10 and len({r["query_id"] for r in rows}) == 10
    assert {r["judgment_version"] for r in rows} == {"v2"}
    assert all(r["difference"] == pytest.approx(r["pash_r3"] - r["p_bm25"], abs=2e-4) for r in rows)


def test_unjudged_in_top_10_counts_each_document_once(two_versions: Path) -> None:
    rows = sql(two_versions, QUERIES[2])
    assert len(rows) == 10 and {r["judgment_version"] for r in rows} == {"v2"}
    # The true count: the evaluation's own n_unjudged_at_k on v2 (no unresolved grades in these judgments).
    truth = {
        (r["run"], r["query_id"]): r["n_unjudged_at_k"]
        for r in sql(two_versions, "SELECT e.run_name AS run, p.query_id, p.n_unjudged_at_k FROM latest_per_query p "
                                   "JOIN evaluations e USING (evaluation_id) WHERE p.cutoff = 10")
    }
    for row in rows:
        assert row["unjudged_in_top_10"] == len(row["documents"]) == len(set(row["documents"]))
        assert row["unjudged_in_top_10"] == truth[(row["run"], row["query_id"])]


def test_coverage_by_judgment_version_shows_both(two_versions: Path) -> None:
    rows = sql(two_versions, QUERIES[3])
    assert len(rows) == 2 * 3 * 3  # versions x runs x cutoffs
    assert len({(r["version"], r["run_name"], r["cutoff"]) for r in rows}) == len(rows)


def test_provenance_of_one_result_is_one_row(two_versions: Path) -> None:
    (row,) = sql(two_versions, QUERIES[4])
    assert row["judgments_version"] == "v2"


def test_comparison_queries_read_the_newest_comparison_with_its_cutoff(two_versions: Path) -> None:
    better = sql(two_versions, COMPARISON_QUERIES[0])
    # One row per pair, measure and cutoff: one comparison, each pair read once as better > worse.
    keys = [(frozenset((r["better"], r["worse"])), r["measure"], r["cutoff"]) for r in better]
    assert better and len(set(keys)) == len(keys)
    assert all(r["better"] != r["worse"] and {r["better"], r["worse"]} <= set(RUNS) for r in better)
    assert {r["judgment_version"] for r in better} == {"v2"}
    assert {r["cutoff"] for r in better} == {10, 100, 1000}
    lost = sql(two_versions, COMPARISON_QUERIES[1])
    keys = [(r["run"], r["measure"], r["cutoff"], r["query_id"]) for r in lost]
    assert len(set(keys)) == len(keys) and all(r["difference"] < -0.2 for r in lost)


def test_the_queries_run_in_duckdb_1_0_with_the_same_answers(two_versions: Path, oldest_duckdb: Path) -> None:
    queries = [*QUERIES, *COMPARISON_QUERIES]
    done = subprocess.run(
        [str(oldest_duckdb), "-c", _RUN_IN_OLD_CLIENT, str(two_versions / "catalog.duckdb")],
        input=json.dumps(queries), capture_output=True, text=True, timeout=300, cwd=two_versions,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["version"] == OLDEST_CLIENT
    assert [len(rows) for rows in answer["rows"]] == [len(sql(two_versions, q)) for q in queries]
    latest = answer["rows"][0]
    assert [(row[0], row[1]) for row in latest] == [(r["run_name"], "v2") for r in sql(two_versions, QUERIES[0])]
