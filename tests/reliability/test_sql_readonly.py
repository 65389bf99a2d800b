"""`judged sql` cannot change the warehouse, stops at its limits, and a copied warehouse answers from its own files.

Every refused statement leaves the warehouse byte for byte as it was (tree listing with hashes). The warehouse is
the bundled TREC DL 2020 sample's p_bm25 run, evaluated through the Prefect flow (the session's test server).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.pipeline.flows import evaluate_flow, ingest_judgments, ingest_run
from judged.schemas.spec import PRESETS
from tests.conftest import SAMPLE
from tests.helpers import tree_listing

SPEC = PRESETS["trec_eval"].with_options(cutoffs=(10,))
runner = CliRunner()
# NIST's published ndcg_cut_10 of p_bm25 on TREC DL 2020 passages.
P_BM25_NDCG_10 = 0.4796


@pytest.fixture(scope="module")
def warehouse(prefect_harness: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("sql") / "warehouse"
    judgments = ingest_judgments(str(SAMPLE / "qrels.dl20-passage.txt"), str(root)).id
    run = ingest_run(str(SAMPLE / "runs" / "input.p_bm25.gz"), str(root)).id
    (report,) = evaluate_flow(judgments, [run], SPEC.canonical_json(), str(root))
    return {"root": root, "evaluation_id": report.evaluation_id}


def _sql(root: Path, query: str, *options: str):
    return runner.invoke(app, ["sql", query, "--warehouse", str(root), *options])


def _ndcg_10(root: Path) -> float:
    result = _sql(root, "SELECT value FROM summary WHERE cutoff = 10", "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    return row["value"]


def _writes(root: Path, evaluation_id: str) -> list[str]:
    target = f"{root}/summary/{evaluation_id}/part-0.parquet"
    forged = "SELECT * REPLACE (0.99 AS value) FROM summary"
    return [
        f"EXPLAIN ANALYZE COPY ({forged}) TO '{target}' (FORMAT parquet)",  # the reported exploit
        f"explain analyze\n copy ({forged}) to '{target}' (format parquet)",
        f"/* note */ EXPLAIN ANALYZE COPY ({forged}) TO '{target}' (FORMAT parquet)",
        f"EXPLAIN ANALYSE COPY ({forged}) TO '{target}' (FORMAT parquet)",
        f"EXPLAIN COPY ({forged}) TO '{target}' (FORMAT parquet)",
        f"EXPLAIN (FORMAT json) COPY ({forged}) TO '{target}' (FORMAT parquet)",
        f"SELECT 1; EXPLAIN ANALYZE COPY ({forged}) TO '{target}' (FORMAT parquet)",
        f"COPY ({forged}) TO '{target}' (FORMAT parquet)",
        f"COPY summary TO '{root}/summary/forged/part-0.parquet' (FORMAT parquet)",
        f"EXPLAIN ANALYZE EXPORT DATABASE '{root}/export'",
        f"EXPORT DATABASE '{root}/export'",
        f"ATTACH '{root}/attached.duckdb'",
        f"EXPLAIN ANALYZE ATTACH '{root}/attached.duckdb'",
        "EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1",
        "EXPLAIN ANALYZE INSERT INTO summary SELECT * FROM summary",
        "CREATE TABLE t AS SELECT 1",
        "CREATE OR REPLACE VIEW summary AS SELECT 1",
        "DROP VIEW summary",
        "INSERT INTO summary SELECT * FROM summary",
        "UPDATE summary SET value = 1",
        "DELETE FROM summary",
        "CHECKPOINT",
        "VACUUM",
        "PRAGMA enable_profiling",
        "CALL pragma_version()",
        "SET enable_external_access = true",
        "RESET allowed_directories",
        "DETACH memory",
        "INSTALL httpfs",
        "LOAD httpfs",
        "PREPARE p AS SELECT 1",
        "BEGIN TRANSACTION",
    ]


def test_every_statement_that_writes_is_refused_and_nothing_changes(warehouse: dict) -> None:
    root: Path = warehouse["root"]
    before = tree_listing(root)
    for statement in _writes(root, warehouse["evaluation_id"]):
        result = _sql(root, statement)
        assert result.exit_code == 1, (statement, result.output)
        message = result.stderr.strip()
        assert message.startswith("judged: error: ") and len(message.splitlines()) == 1, (statement, message)
        assert "Traceback" not in result.output
    assert tree_listing(root) == before
    assert _ndcg_10(root) == pytest.approx(P_BM25_NDCG_10, abs=5e-5)


@pytest.mark.parametrize(
    "query",
    ["EXPLAIN SELECT * FROM summary", "EXPLAIN ANALYZE SELECT count(*) FROM per_query", "DESCRIBE summary",
     "SUMMARIZE summary", "SHOW TABLES", "FROM summary SELECT value",
     "WITH s AS (SELECT * FROM summary) SELECT value FROM s"],
)
def test_queries_of_every_select_kind_run(warehouse: dict, query: str) -> None:
    result = _sql(warehouse["root"], query, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)


def test_a_runaway_query_stops_at_its_timeout(warehouse: dict) -> None:
    endless = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t"
    result = _sql(warehouse["root"], endless, "--timeout", "0.5")
    assert result.exit_code == 1
    assert result.stderr.strip() == "judged: error: query stopped at its time limit of 0.5 s (raise it with --timeout)"
    cross = "SELECT count(*) FROM range(100000000) a, range(100000000) b"
    assert "time limit of 0.5 s" in _sql(warehouse["root"], cross, "--timeout", "0.5").stderr


def test_printed_rows_are_cut_at_the_limit_with_a_note(warehouse: dict) -> None:
    result = _sql(warehouse["root"], "SELECT * FROM range(25) ORDER BY 1", "--limit", "10", "--format", "csv")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["range", *map(str, range(10))]
    assert "only the first 10 rows are shown (--limit)" in result.stderr
    whole = _sql(warehouse["root"], "SELECT * FROM range(10)", "--limit", "10", "--format", "csv")
    assert len(whole.stdout.splitlines()) == 11 and whole.stderr == ""


@pytest.mark.parametrize(
    "options, message",
    [(["--timeout", "0"], "--timeout must be"), (["--timeout", "nan"], "--timeout must be"),
     (["--timeout", "1e999"], "--timeout must be"), (["--limit", "0"], "--limit must be"),
     (["--limit", str(10**30)], "--limit must be an integer from 1 to 10,000,000"),
     (["--memory-limit", "lots"], "--memory-limit must be")],
)
def test_bad_limits_are_usage_errors(warehouse: dict, options: list[str], message: str) -> None:
    result = _sql(warehouse["root"], "SELECT 1", *options)
    assert result.exit_code == 2 and message in result.stderr


def test_memory_limit_stops_a_large_query(warehouse: dict) -> None:
    big = "SELECT list(range) FROM range(50000000)"
    result = _sql(warehouse["root"], big, "--memory-limit", "64MB")
    assert result.exit_code == 1 and "memory limit of 64MB" in result.stderr


def test_a_copied_warehouse_answers_from_its_own_files(warehouse: dict, tmp_path: Path) -> None:
    original = tmp_path / "original"
    shutil.copytree(warehouse["root"], original)
    copy = tmp_path / "moved"
    shutil.copytree(original, copy)
    shutil.rmtree(original)

    assert _ndcg_10(copy) == pytest.approx(P_BM25_NDCG_10, abs=5e-5)
    # A plain DuckDB client reads the stored catalog's views relative to the warehouse directory.
    with duckdb.connect(str(copy / "catalog.duckdb"), read_only=True) as plain:
        plain.execute(f"SET file_search_path = '{copy}'")
        (value,) = plain.execute("SELECT value FROM summary WHERE cutoff = 10").fetchall()[0]
    assert value == pytest.approx(P_BM25_NDCG_10, abs=5e-5)
    cwd = Path.cwd()
    try:
        os.chdir(copy)
        with duckdb.connect("catalog.duckdb", read_only=True) as plain:
            (value,) = plain.execute("SELECT value FROM summary WHERE cutoff = 10").fetchall()[0]
        assert value == pytest.approx(P_BM25_NDCG_10, abs=5e-5)
    finally:
        os.chdir(cwd)


def _reads_outside(secret: Path) -> list[str]:
    return [f"SELECT * FROM read_csv('{secret}')", f"SELECT * FROM read_csv('{secret.relative_to(Path.cwd())}')",
            f"SELECT * FROM read_text('{secret}')", f"SELECT * FROM glob('{secret.parent}/*')"]


def test_duckdbs_temporary_folder_in_the_current_folder_is_not_readable(
    warehouse: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DuckDB's default temporary folder is `.tmp` in the current folder, and it allows reading there by default.
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".tmp").mkdir()
    secret = tmp_path / ".tmp" / "secret.csv"
    secret.write_text("secret,1\n")
    for query in _reads_outside(secret):
        result = _sql(warehouse["root"], query, "--format", "csv")
        assert result.exit_code == 1, (query, result.output)
        assert "secret" not in result.stdout and "Cannot access" in result.stderr, (query, result.output)
    result = _sql(warehouse["root"], "SELECT current_setting('temp_directory') AS t", "--format", "csv")
    assert result.exit_code == 0 and result.stdout.split() == ["t", '""'], result.output


def _unblock_later(fifo: Path, seconds: float) -> threading.Thread:
    """A writer that opens and closes `fifo` after `seconds`, so a reader blocked on it ends (the test then fails
    on its assertions instead of hanging)."""
    def write() -> None:
        time.sleep(seconds)
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # no reader waiting: nothing to unblock
            pass
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


@pytest.mark.parametrize("where", ["summary/waiting.csv", "waiting"])
def test_a_fifo_inside_the_warehouse_is_refused_at_once(warehouse: dict, tmp_path: Path, where: str) -> None:
    root = tmp_path / "warehouse"
    shutil.copytree(warehouse["root"], root)
    fifo = root / where
    os.mkfifo(fifo)
    before = tree_listing(root / "summary")
    writer = _unblock_later(fifo, 20)
    started = time.monotonic()
    for query in (f"SELECT * FROM read_csv('{fifo}')", "SELECT value FROM summary"):
        result = _sql(root, query, "--timeout", "5")
        assert result.exit_code == 1, (query, result.output)
        message = result.stderr.strip()
        assert message == (f"judged: error: {fifo}: is a FIFO inside the warehouse, not a file judged wrote; "
                           "judged sql reads only regular files: remove it"), message
    assert time.monotonic() - started < 10
    assert tree_listing(root / "summary") == before
    fifo.unlink()
    assert _ndcg_10(root) == pytest.approx(P_BM25_NDCG_10, abs=5e-5)
    writer.join(timeout=0)


def test_a_link_inside_the_warehouse_is_refused(warehouse: dict, tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    shutil.copytree(warehouse["root"], root)
    outside = tmp_path / "outside.csv"
    outside.write_text("secret,1\n")
    (root / "summary" / "outside.csv").symlink_to(outside)
    result = _sql(root, f"SELECT * FROM read_csv('{root}/summary/outside.csv')")
    assert result.exit_code == 1 and "is a link inside the warehouse" in result.stderr, result.output
    assert "secret" not in result.stdout
