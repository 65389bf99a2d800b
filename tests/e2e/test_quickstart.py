"""The README's quick start job (`judged demo`: the nightly flow over the bundled sample) and the five analyst
queries of docs/warehouse.md, run as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.store.warehouse import CATALOG_STORAGE_VERSION
from tests.conftest import REPO, once_per_run

runner = CliRunner()
ANALYST_QUERIES = re.findall(r"```sql\n(.*?)```", (REPO / "docs" / "warehouse.md").read_text(), flags=re.S)


def _run_the_demo(folder: Path) -> str:
    result = runner.invoke(app, ["demo", "--warehouse", str(folder / "warehouse"), "--inbox", str(folder / "inbox")])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def demo_night(prefect_harness: str, request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(folder holding `warehouse` and `inbox`, what `judged demo` printed): the quick start's night, run once per
    test run (about 20 s in CI). The tests here only read it; tests/e2e/test_sql_versions.py goes on from a copy."""
    folder, output = once_per_run(request.config, tmp_path_factory, "quickstart-demo", _run_the_demo)
    return folder, str(output)


@pytest.fixture(scope="module")
def demo_warehouse(demo_night: tuple[Path, str]) -> tuple[Path, str]:
    folder, output = demo_night
    return folder / "warehouse", output


def sql_rows(warehouse: Path, query: str) -> list[dict]:
    result = runner.invoke(app, ["sql", query, "--warehouse", str(warehouse), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_demo_prints_summaries_and_the_next_command(demo_warehouse: tuple[Path, str]) -> None:
    _, output = demo_warehouse
    assert "p_bm25" in output and "0.4796" in output  # NIST passages-eval ndcg_cut_10
    assert "pash_r3" in output and "0.8031" in output
    assert "DoRA_Large" in output and "0.0414" in output
    # The stored evaluation carries the tie warning too (34 of DoRA_Large's 54 queries have ties across k = 10).
    assert "nDCG@10 in 34 of 54 scored queries (63%), mean 0.0365 to 0.0414" in output.replace("\n", " ")
    assert "3 evaluations, 0 files rejected" in output
    assert "judged sql" in output
    (report,) = re.findall(r"^report: (.+\.html)$", output, flags=re.M)  # where the night's report is
    assert Path(report).is_absolute() and Path(report).is_file()
    assert Path(report).parent == (demo_warehouse[0] / "reports").absolute()


def test_the_docs_have_five_analyst_queries() -> None:
    assert len(ANALYST_QUERIES) == 5


def test_mean_ndcg_per_run(demo_warehouse: tuple[Path, str]) -> None:
    rows = sql_rows(demo_warehouse[0], ANALYST_QUERIES[0])
    assert [(r["run_name"], r["ndcg_10"]) for r in rows] == [("pash_r3", 0.8031), ("p_bm25", 0.4796), ("DoRA_Large", 0.0414)]


def test_per_query_differences(demo_warehouse: tuple[Path, str]) -> None:
    rows = sql_rows(demo_warehouse[0], ANALYST_QUERIES[1])
    assert len(rows) == 10
    assert all(r["difference"] == pytest.approx(r["pash_r3"] - r["p_bm25"], abs=2e-4) for r in rows)
    assert rows == sorted(rows, key=lambda r: -r["difference"])


def test_unjudged_in_top_10(demo_warehouse: tuple[Path, str]) -> None:
    rows = sql_rows(demo_warehouse[0], ANALYST_QUERIES[2])
    assert len(rows) == 10 and rows[0]["run"] == "DoRA_Large"
    assert all(r["unjudged_in_top_10"] == len(r["documents"]) for r in rows)


def test_coverage_by_judgment_version(demo_warehouse: tuple[Path, str]) -> None:
    rows = sql_rows(demo_warehouse[0], ANALYST_QUERIES[3])
    assert len(rows) == 9  # 3 runs x 3 cutoffs
    assert {(r["name"], r["version"]) for r in rows} == {("trec-dl-2020-passage", "nist-final")}
    dora_10 = next(r for r in rows if r["run_name"] == "DoRA_Large" and r["cutoff"] == 10)
    assert 0.32 <= dora_10["unjudged_share"] <= 0.43


def test_provenance_of_one_result(demo_warehouse: tuple[Path, str]) -> None:
    (row,) = sql_rows(demo_warehouse[0], ANALYST_QUERIES[4])
    assert len(row["run_sha256"]) == 64 and len(row["qrels_sha256"]) == 64
    assert row["judgments_version"] == "nist-final"
    assert row["flow_run_id"]
    assert "polars" in row["libraries"]


# The oldest DuckDB client that opens the catalog (its storage format, CATALOG_STORAGE_VERSION, is DuckDB 1.0.0's).
OLDEST_CLIENT = "1.0.0"
_RUN_IN_OLD_CLIENT = """
import json, sys, duckdb
queries = json.loads(sys.stdin.read())
connection = duckdb.connect(sys.argv[1], read_only=True)
connection.execute("SET enable_progress_bar = false")  # it would print on stdout
print(json.dumps({"version": duckdb.__version__,
                  "rows": [[list(row) for row in connection.sql(q).fetchall()] for q in queries]}, default=str))
"""


@pytest.fixture(scope="module")
def oldest_duckdb(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A separate environment with DuckDB 1.0.0 installed from the package registry, made once per test run (the
    modules using it, and pytest-xdist's workers, share it); skips when pip cannot get it."""

    def make(folder: Path) -> str | None:
        """Why it cannot be made, or None."""
        # Without a pip of its own, as the wheel's environment (tests/e2e/test_wheel.py): this one's installs it.
        venv.create(folder, with_pip=False)
        installed = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(folder / "bin" / "python"), "install", "--quiet",
             "--disable-pip-version-check", f"duckdb=={OLDEST_CLIENT}"],
            capture_output=True, text=True, timeout=600,
        )
        if installed.returncode != 0:
            return f"cannot install duckdb=={OLDEST_CLIENT} into a separate venv: {installed.stderr.strip()[-300:]}"
        return None

    folder, refused = once_per_run(request.config, tmp_path_factory, "duckdb-oldest", make)
    if refused:
        pytest.skip(str(refused))
    return folder / "bin" / "python"


def test_catalog_opens_in_duckdb_1_0_with_the_analyst_queries(
    demo_warehouse: tuple[Path, str], oldest_duckdb: Path
) -> None:
    assert CATALOG_STORAGE_VERSION == f"v{OLDEST_CLIENT}"
    catalog = demo_warehouse[0] / "catalog.duckdb"
    done = subprocess.run(
        [str(oldest_duckdb), "-c", _RUN_IN_OLD_CLIENT, str(catalog)], input=json.dumps(ANALYST_QUERIES),
        capture_output=True, text=True, timeout=300, cwd=demo_warehouse[0],  # the views' paths are relative to it
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["version"] == OLDEST_CLIENT
    # Same answers as DuckDB 2 through `judged sql`: the mean NDCG@10 per run, and each query's number of rows.
    assert [(row[0], row[2]) for row in answer["rows"][0]] == [("pash_r3", 0.8031), ("p_bm25", 0.4796), ("DoRA_Large", 0.0414)]
    assert [len(rows) for rows in answer["rows"]] == [len(sql_rows(demo_warehouse[0], q)) for q in ANALYST_QUERIES]
    assert [len(rows) for rows in answer["rows"]] == [3, 10, 10, 9, 1]
