"""The bad-input catalogue: malformed files and bad option values through the CLI, each refused with one line
`judged: error: ...` naming the file (or the option), exit 1 (bad input) or 2 (bad option value), never a
traceback; refused before anything is stored, so a warehouse is left byte for byte as it was.

Most cases run in-process (typer's CliRunner) through `judged evaluate` without a warehouse; the file cases run
again through `judged evaluate --warehouse` against a warehouse that already holds the seed, compared before and
after with a tree listing and hashes; a few run through a real subprocess.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from tests.conftest import REPO
from tests.helpers import assert_refused as _assert_refused, tree_listing

runner = CliRunner()
SEED_QRELS = REPO / "data" / "seed" / "qrels.txt"
SEED_RUN = REPO / "data" / "seed" / "run.txt"
GOOD_RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\n"
EMPTY = "an empty {} is refused unless --allow-empty is given"
NO_ROWS = "has no rows (no lines, or only blank or comment lines): " + EMPTY
ZERO_ROWS = "is a Parquet table of 0 rows: " + EMPTY
EMPTY_RUN_FRAME = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64})
EMPTY_QRELS_FRAME = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int32})
UNREACHABLE_API = "http://127.0.0.1:9/api"
NULL_GRADE_FRAME = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": [1, None]},
                                schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int32})


def text(content: str | bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "input.txt"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return path
    return make


def gz(content: bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "input.gz"
        path.write_bytes(content)
        return path
    return make


def parquet(frame: pl.DataFrame) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "input.parquet"
        frame.write_parquet(path)
        return path
    return make


def directory(folder: Path) -> Path:
    (folder / "a-folder").mkdir()
    return folder / "a-folder"


def sidecar_folder(folder: Path) -> Path:
    path = folder / "input.txt"
    path.write_text(GOOD_RUN)
    (folder / "input.txt.meta.toml").mkdir()
    return path


def with_sidecar(content: bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "input.txt"
        path.write_text(GOOD_RUN)
        (folder / "input.txt.meta.toml").write_bytes(content)
        return path
    return make


# (case id, how to make the bad run file, words the message must hold)
BAD_RUNS: list[tuple[str, Callable[[Path], Path], str]] = [
    ("inf score", text("q1 Q0 d1 1 inf t\n"), "line 1: score 'inf' is not finite"),
    ("-inf score", text(GOOD_RUN + "q1 Q0 d3 3 -inf t\n"), "line 3: score '-inf' is not finite"),
    ("1e999 score", text("q1 Q0 d1 1 1e999 t\n"), "line 1: score '1e999' is not finite"),
    ("Infinity score", text("q1 Q0 d1 1 Infinity t\n"), "is not finite"),
    ("nan score", text("q1 Q0 d1 1 nan t\n"), "line 1: score 'nan' is NaN"),
    ("text score", text("q1 Q0 d1 1 high t\n"), "line 1: score 'high' is not a number"),
    ("empty score field", text("q1\tQ0\td1\t1\t\tt\n"), "line 1"),
    ("rank not integer", text("q1 Q0 d1 one 1.0 t\n"), "line 1: rank 'one' is not an integer"),
    ("rank float", text("q1 Q0 d1 1.5 1.0 t\n"), "rank '1.5' is not an integer"),
    ("rank beyond int64", text("q1 Q0 d1 99999999999999999999 1.0 t\n"), "is not an integer"),
    ("five columns", text("q1 Q0 d1 1 1.0\n"), "line 1: expected 6 columns"),
    ("one column", text("hello\n"), "expected 6 columns"),
    ("bad Q0", text("q1 X d1 1 1.0 t\n"), "second column must be Q0 or 0"),
    ("qrels given as run", text("q1 0 d1 1\n"), "expected 6 columns"),
    ("bad line after good", text(GOOD_RUN * 50 + "q1 Q0 d9 9\n"), "line 101"),
    ("invalid UTF-8", text(GOOD_RUN.encode() + b"q1 Q0 d\xff 3 1.0 t\n"), "line 3: is not UTF-8 text"),
    ("latin-1 file", text("q1 Q0 caf\xe9 1 1.0 t\n".encode("latin-1")), "line 1: is not UTF-8 text"),
    ("binary junk", text(bytes(range(256)) * 4), "input.txt"),
    ("NUL bytes", text(b"\x00" * 100), "input.txt"),
    ("truncated gzip", gz(gzip.compress(GOOD_RUN.encode() * 100)[:40]), "cannot be read as text"),
    ("gzip of junk", gz(gzip.compress(bytes(range(256)))), "input.gz"),
    ("gzip header only", gz(b"\x1f\x8b"), "input.gz"),
    ("parquet without score", parquet(pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"]})), "missing column"),
    ("parquet integer ids", parquet(pl.DataFrame({"query_id": [1], "doc_id": ["d1"], "score": [1.0]})),
     "identifiers must be strings"),
    ("parquet text score", parquet(pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": ["x"]})),
     "scores must be numbers"),
    ("parquet null score", parquet(pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [None]},
                                                schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64})),
     "row 1: score is null"),
    ("parquet inf score", parquet(pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [float("inf")]})),
     "row 1: score is not finite"),
    ("parquet nan score", parquet(pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [float("nan")]})),
     "row 1: score is NaN"),
    ("parquet null doc", parquet(pl.DataFrame({"query_id": ["q1"], "doc_id": [None], "score": [1.0]},
                                              schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64})),
     "doc_id is null"),
    ("parquet float rank", parquet(pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0], "rank": [1.5]})),
     "ranks must be integers"),
    ("truncated parquet", text(b"PAR1" + b"\x00" * 64), "cannot be read as Parquet"),
    ("duplicate document", text(GOOD_RUN + "q1 Q0 d1 3 1.0 t\n"), "duplicate"),
    ("a directory", directory, "not a stored table"),  # a folder names a stored run
    ("sidecar not UTF-8", with_sidecar(b'tag = "caf\xe9"\n'), "is not UTF-8 text (a sidecar)"),
    ("sidecar not TOML", with_sidecar(b"tag = \n"), "not valid TOML"),
    ("sidecar unknown field", with_sidecar(b'colour = "blue"\n'), "colour"),
    ("sidecar too large", with_sidecar(b"# " + b"x" * (1 << 20) + b"\n"), "the limit for a sidecar"),
    ("sidecar a directory", sidecar_folder, "input.txt.meta.toml: is a directory, not a sidecar"),
    ("empty run", text(""), "input.txt: " + NO_ROWS.format("run")),
    ("blank-only run", text("\n   \n\t\n"), "input.txt: " + NO_ROWS.format("run")),
    # comment lines are skipped in a run as in qrels (docs/trec-format.md): a run of comments only has no rows
    ("comment-only run", text("# nothing retrieved\n"), "input.txt: " + NO_ROWS.format("run")),
    ("empty gzip run", gz(gzip.compress(b"")), "input.gz: " + NO_ROWS.format("run")),
    ("0-row parquet run", parquet(EMPTY_RUN_FRAME), "input.parquet: " + ZERO_ROWS.format("run")),
]


@pytest.mark.parametrize("make, message", [case[1:] for case in BAD_RUNS], ids=[case[0] for case in BAD_RUNS])
def test_a_bad_run_file_is_one_line_naming_it(tmp_path: Path, make: Callable[[Path], Path], message: str) -> None:
    path = make(tmp_path)
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(path), "--preset", "trec_eval"])
    _assert_refused(result, 1, message, path.name)


BAD_OPTIONS: list[tuple[str, list[str], int, str]] = [
    ("cutoff beyond int64", ["--cutoffs", "99999999999999999999"], 2, "cutoff 99999999999999999999 is beyond"),
    ("cutoff beyond int32", ["--cutoffs", "4294967296"], 2, "is beyond 2,147,483,647"),
    ("cutoff zero", ["--cutoffs", "0"], 2, "cutoff 0 must be positive"),
    ("cutoff negative", ["--cutoffs", "-5"], 2, "must be positive"),
    ("cutoff text", ["--cutoffs", "ten"], 2, "cutoff 'ten' is not a positive integer"),
    ("cutoffs empty", ["--cutoffs", ""], 2, "no cutoff given"),
    ("depth beyond int32", ["--depth", "9999999999"], 2, "--depth 9999999999 is beyond"),
    ("depth zero", ["--depth", "0"], 2, "--depth 0 must be positive"),
    ("depth text", ["--depth", "deep"], 2, "--depth 'deep'"),
    ("unknown preset", ["--preset", "nope"], 2, "nope"),
    ("unknown gain", ["--gain", "cubic"], 2, "gain: Input should be"),
    ("gain map not pairs", ["--gain-map", "1:2"], 2, "1:2"),
    ("unknown ties", ["--ties", "random"], 2, "ties: Input should be"),
    ("unknown duplicates policy", ["--run-duplicates", "sometimes"], 2, "run_duplicates: Input should be"),
    ("unknown query set", ["--query-set", "every"], 2, "query_set: Input should be"),
    ("unknown format", ["--format", "xml"], 2, "--format must be"),
    ("dask without warehouse", ["--dask", "local:2"], 2, "give --warehouse too"),
    ("dask local:abc", ["--dask", "local:abc", "--warehouse", "{tmp}/w"], 2, "--dask must be local:N"),
    ("dask local:0", ["--dask", "local:0", "--warehouse", "{tmp}/w"], 2, "--dask must be local:N"),
    ("dask unknown scheme", ["--dask", "ftp://host", "--warehouse", "{tmp}/w"], 2, "--dask must be"),
    ("warehouse is a file", ["--warehouse", str(SEED_RUN)], 2, "--warehouse must be a folder"),
    # root passes every permission check, and /proc refuses a new folder anyway
    ("warehouse in /proc", ["--warehouse", "/proc/judged-warehouse"], 2, "/proc/judged-warehouse: --warehouse cannot "
     "be written here (no folder can be made in /proc"),
    ("warehouse /proc itself", ["--warehouse", "/proc"], 2, "/proc: --warehouse cannot be written here"),
    ("query weights missing", ["--query-weights", "{tmp}/missing.txt"], 1, "missing.txt: no such file"),
    ("query weights /dev/zero", ["--query-weights", "/dev/zero"], 1, "/dev/zero: is not a regular file"),
    ("query weights a folder", ["--query-weights", "{tmp}"], 1, "is a directory"),
    ("query weights bad line", ["--query-weights", "{tmp}/weights.txt"], 1, "weights.txt, line 1"),
    ("query weights inf", ["--query-weights", "{tmp}/inf-weights.txt"], 1, "inf-weights.txt, line 1"),
    ("input timeout zero", ["--input-timeout", "0"], 2, "--input-timeout must be a number above 0 and at most 86,400"),
    ("input timeout inf", ["--input-timeout", "inf"], 2, "--input-timeout must be a number above 0 and at most 86,400"),
    ("input timeout text", ["--input-timeout", "soon"], 2, "--input-timeout 'soon' is not a number"),
]


@pytest.mark.parametrize("options, code, message", [case[1:] for case in BAD_OPTIONS],
                         ids=[case[0] for case in BAD_OPTIONS])
def test_a_bad_option_value_is_one_line(tmp_path: Path, options: list[str], code: int, message: str) -> None:
    (tmp_path / "weights.txt").write_text("q1\n")
    (tmp_path / "inf-weights.txt").write_text("q1 inf\n")
    options = [option.replace("{tmp}", str(tmp_path)) for option in options]
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(SEED_RUN), *options])
    _assert_refused(result, code, message)
    assert not (tmp_path / "w").exists()


BAD_QRELS: list[tuple[str, Callable[[Path], Path], str]] = [
    ("grade not integer", text("q1 0 d1 high\n"), "line 1: grade 'high' is not an integer"),
    ("grade beyond int32", text("q1 0 d1 99999999999\n"), "out of range"),
    ("three columns", text("q1 0 d1\n"), "expected 4 columns"),
    ("run given as qrels", text(GOOD_RUN), "expected 4 columns"),
    ("qrels not UTF-8", text(b"q1 0 d\xff 1\n"), "line 1: is not UTF-8 text"),
    ("qrels a directory", directory, "is a directory"),
    ("qrels duplicate judgment", text("q1 0 d1 1\nq1 0 d1 2\n"), "duplicate"),
    ("empty qrels", text(""), "input.txt: " + NO_ROWS.format("judgment set")),
    ("blank-only qrels", text("\n \n"), "input.txt: " + NO_ROWS.format("judgment set")),
    ("comment-only qrels", text("# judged later\n# nothing yet\n"), "input.txt: " + NO_ROWS.format("judgment set")),
    ("0-row parquet qrels", parquet(EMPTY_QRELS_FRAME), "input.parquet: " + ZERO_ROWS.format("judgment set")),
    # a null grade means an unresolved judgment only where the set declares unresolved judgments (its sidecar)
    ("parquet null grade", parquet(NULL_GRADE_FRAME), "input.parquet, row 2: grade is null"),
    ("parquet all-null grade column",
     parquet(pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [None]})),
     "input.parquet, row 1: grade is null"),
]


@pytest.mark.parametrize("make, message", [case[1:] for case in BAD_QRELS], ids=[case[0] for case in BAD_QRELS])
def test_bad_judgments_are_one_line_naming_the_file(tmp_path: Path, make: Callable[[Path], Path], message: str) -> None:
    path = make(tmp_path)
    result = runner.invoke(app, ["evaluate", str(path), str(SEED_RUN), "--preset", "trec_eval"])
    _assert_refused(result, 1, message, path.name)


# Judgments a spec cannot use: (case id, the judgments, the spec options, words the message must hold)
BAD_GAINS: list[tuple[str, Callable[[Path], Path], list[str], str]] = [
    ("grade 1024 under exponential gain", text("q1 0 d1 3\nq1 0 d2 1024\n"), ["--gain", "exponential"],
     "input.txt, line 2: grade 1024: under gain exponential, its gain is beyond float64, so nDCG would not be finite"),
    ("grade 2^31-1 under exponential gain", text("q1 0 d1 2147483647\n"), ["--gain", "exponential"],
     "line 1: grade 2147483647: under gain exponential, its gain is beyond float64"),
    # 2^1023 - 1 is finite, two of them in one query are not: the sum is named with the query's highest grade
    ("two grades 1023 under exponential gain", text("q1 0 d1 1\nq1 0 d2 1023\nq1 0 d3 1023\n"),
     ["--gain", "exponential"], "line 2: grade 1023: under gain exponential, the gains of query 'q1' add up beyond"),
    ("gain map adding up beyond float64", text("q1 0 d1 1\nq1 0 d2 1\n"), ["--gain-map", "0=0,1=1e308"],
     "the gains of query 'q1' add up beyond float64, so nDCG would not be finite"),
]


@pytest.mark.parametrize("make, options, message", [case[1:] for case in BAD_GAINS],
                         ids=[case[0] for case in BAD_GAINS])
def test_a_gain_beyond_float64_is_refused_naming_the_line_and_grade(
    tmp_path: Path, make: Callable[[Path], Path], options: list[str], message: str
) -> None:
    path = make(tmp_path)
    result = runner.invoke(app, ["evaluate", str(path), str(SEED_RUN), "--cutoffs", "10", *options])
    _assert_refused(result, 1, message, path.name)


def test_large_grades_under_linear_gain_and_1023_alone_under_exponential_are_finite(tmp_path: Path) -> None:
    """Grades are 32-bit integers and a linear gain is the grade as a float64, so no grade overflows it; 2^1023 - 1
    alone is finite, and nDCG of a run ranking that document first is 1."""
    for grades, options in ((("2147483647", "2147483647", "1"), []), (("1023", "0", "1"), ["--gain", "exponential"])):
        qrels = tmp_path / "qrels.txt"
        qrels.write_text("".join(f"q1 0 d{i} {grade}\n" for i, grade in enumerate(grades, start=1)))
        result = runner.invoke(app, ["evaluate", str(qrels), str(SEED_RUN), "--cutoffs", "10", "--format", "trec",
                                     *options])
        assert result.exit_code == 0, result.output
        # seed run: d1, d2, d3 in that order, the ideal order for both sets of grades
        assert result.stdout.splitlines()[0].endswith("\tq1\t1.0")


def test_the_catalogue_has_at_least_60_cases() -> None:
    assert len(BAD_RUNS) + len(BAD_OPTIONS) + len(BAD_QRELS) + len(BAD_GAINS) >= 60


@pytest.fixture(scope="module")
def seeded_warehouse(prefect_harness: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    warehouse = tmp_path_factory.mktemp("bad-inputs") / "warehouse"
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(SEED_RUN), "--warehouse", str(warehouse)])
    assert result.exit_code == 0, result.output
    return warehouse


STORED_CASES = [case for case in BAD_RUNS if case[0] in {
    "inf score", "1e999 score", "invalid UTF-8", "truncated gzip", "duplicate document", "parquet inf score",
    "a directory", "sidecar not UTF-8", "rank not integer", "bad line after good", "empty run", "0-row parquet run",
    "comment-only run"}]


@pytest.mark.parametrize("make, message", [case[1:] for case in STORED_CASES], ids=[case[0] for case in STORED_CASES])
def test_a_refused_run_leaves_the_warehouse_unchanged(
    seeded_warehouse: Path, tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    before = tree_listing(seeded_warehouse)
    path = make(tmp_path)
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(path), "--preset", "trec_eval",
                                 "--warehouse", str(seeded_warehouse)])
    _assert_refused(result, 1, message, path.name)
    assert tree_listing(seeded_warehouse) == before


@pytest.mark.parametrize("arguments, code, message", [
    (["evaluate", str(SEED_QRELS), "/dev/zero"], 1, "/dev/zero: is not a regular file"),
    (["evaluate", str(SEED_QRELS), str(SEED_RUN), "--cutoffs", "99999999999999999999"], 2, "is beyond"),
    (["sql", "EXPLAIN ANALYZE COPY (SELECT 1) TO 'x.parquet'", "--warehouse", str(REPO / "data")], 1, "no catalog"),
    (["ingest-run", str(SEED_RUN), "--warehouse", "/proc/judged-warehouse"], 2, "--warehouse cannot be written here"),
    (["nightly", "--judgments", "/dev/zero", "--warehouse", "/tmp/judged-no-warehouse/w", "--inbox",
      "/tmp/judged-no-warehouse/inbox"], 1, "/dev/zero: is not a regular file"),
])
def test_through_a_real_process(arguments: list[str], code: int, message: str) -> None:
    judged = Path(sys.executable).with_name("judged")
    done = subprocess.run([str(judged), *arguments], capture_output=True, text=True, timeout=300)
    assert done.returncode == code
    assert done.stderr.startswith("judged: error: ") and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize("make, message", [case[1:] for case in BAD_QRELS if "empty" in case[0] or "0-row" in case[0]],
                         ids=[case[0] for case in BAD_QRELS if "empty" in case[0] or "0-row" in case[0]])
def test_refused_judgments_leave_the_warehouse_unchanged(
    seeded_warehouse: Path, tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    before = tree_listing(seeded_warehouse)
    path = make(tmp_path)
    for arguments in (["evaluate", str(path), str(SEED_RUN)], ["ingest-judgments", str(path)]):
        result = runner.invoke(app, [*arguments, "--warehouse", str(seeded_warehouse)])
        _assert_refused(result, 1, message, path.name)
        assert tree_listing(seeded_warehouse) == before


@pytest.mark.parametrize("case", [case for case in BAD_GAINS if "1024" in case[0] or "two" in case[0]],
                         ids=lambda case: case[0])
def test_a_gain_overflow_leaves_the_warehouse_unchanged(seeded_warehouse: Path, tmp_path: Path, case: tuple) -> None:
    _, make, options, message = case
    before = tree_listing(seeded_warehouse)
    path = make(tmp_path)
    result = runner.invoke(app, ["evaluate", str(path), str(SEED_RUN), "--cutoffs", "10", *options,
                                 "--warehouse", str(seeded_warehouse)])
    _assert_refused(result, 1, message, path.name)
    assert tree_listing(seeded_warehouse) == before


def test_an_empty_run_ingested_alone_leaves_the_warehouse_unchanged(seeded_warehouse: Path, tmp_path: Path) -> None:
    before = tree_listing(seeded_warehouse)
    path = text("\n\n")(tmp_path)
    _assert_refused(runner.invoke(app, ["ingest-run", str(path), "--warehouse", str(seeded_warehouse)]), 1,
                    NO_ROWS.format("run"), path.name)
    assert tree_listing(seeded_warehouse) == before


@pytest.mark.parametrize("arguments", [
    ["evaluate", str(SEED_QRELS), str(SEED_RUN), "--warehouse", "{warehouse}"],
    ["ingest-run", str(SEED_RUN), "--warehouse", "{warehouse}"],
    ["ingest-judgments", str(SEED_QRELS), "--warehouse", "{warehouse}"],
    ["nightly", "--inbox", "{tmp}/inbox", "--judgments", str(SEED_QRELS), "--warehouse", "{warehouse}"],
    ["compare", str(SEED_QRELS), str(SEED_RUN),
     str(REPO / "data" / "trec-dl-2020-sample" / "runs" / "input.p_bm25.gz"), "--warehouse", "{warehouse}"],
], ids=["evaluate", "ingest-run", "ingest-judgments", "nightly", "compare"])
def test_an_unreachable_prefect_api_url_is_one_line_naming_it(
    seeded_warehouse: Path, tmp_path: Path, arguments: list[str]
) -> None:
    before = tree_listing(seeded_warehouse)
    arguments = [a.replace("{warehouse}", str(seeded_warehouse)).replace("{tmp}", str(tmp_path)) for a in arguments]
    result = runner.invoke(app, arguments, env={"PREFECT_API_URL": UNREACHABLE_API})
    _assert_refused(result, 1, f"PREFECT_API_URL={UNREACHABLE_API}: no Prefect API answers there")
    assert "unset PREFECT_API_URL" in result.stderr and "prefect server start" in result.stderr
    assert tree_listing(seeded_warehouse) == before
    assert not (tmp_path / "inbox").exists()


def test_an_unreachable_prefect_api_url_through_a_real_process(tmp_path: Path) -> None:
    judged = Path(sys.executable).with_name("judged")
    warehouse = tmp_path / "warehouse"
    done = subprocess.run([str(judged), "ingest-run", str(SEED_RUN), "--warehouse", str(warehouse)],
                          capture_output=True, text=True, timeout=300,
                          env=os.environ | {"PREFECT_API_URL": UNREACHABLE_API})
    assert done.returncode == 1
    assert done.stderr.startswith(f"judged: error: PREFECT_API_URL={UNREACHABLE_API}: no Prefect API answers")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr + done.stdout
    assert not warehouse.exists()


BAD_READ_WAREHOUSES: list[tuple[str, str, int, str]] = [
    ("a file", str(SEED_RUN), 2, "--warehouse must be a folder, and this is a file"),
    ("below a file", f"{SEED_RUN}/warehouse", 2, "--warehouse cannot be a folder here"),
    ("a missing folder", "{tmp}/missing/warehouse", 1, "no such folder"),
    ("a folder that is not a warehouse", "{tmp}", 1, "not a judged warehouse (no catalog, catalog.duckdb)"),
]


@pytest.mark.parametrize("command", [["sql", "SELECT count(*) FROM runs"], ["show", "abc"]], ids=["sql", "show"])
@pytest.mark.parametrize("where, code, message", [case[1:] for case in BAD_READ_WAREHOUSES],
                         ids=[case[0] for case in BAD_READ_WAREHOUSES])
def test_sql_and_show_check_the_warehouse_and_create_nothing(
    tmp_path: Path, command: list[str], where: str, code: int, message: str
) -> None:
    (tmp_path / "stray.txt").write_text("not a warehouse\n")
    before = tree_listing(tmp_path)
    where = where.replace("{tmp}", str(tmp_path))
    result = runner.invoke(app, [*command, "--warehouse", where])
    _assert_refused(result, code, message, where)
    assert tree_listing(tmp_path) == before and not (tmp_path / "missing").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder: an unreadable warehouse cannot be made")
@pytest.mark.parametrize("command", [["sql", "SELECT 1"], ["show", "abc"]], ids=["sql", "show"])
def test_sql_and_show_refuse_an_unreadable_warehouse(tmp_path: Path, command: list[str]) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        result = runner.invoke(app, [*command, "--warehouse", str(locked)])
        _assert_refused(result, 2, "--warehouse cannot be read here", str(locked))
    finally:
        locked.chmod(0o700)


# Output files (`--out` of report and worklist) and `--extends`: refused before anything is stored. Placeholders:
# {warehouse} the seeded warehouse, {tmp} a folder holding `mine.html` (someone's file) and `pipe` (a FIFO),
# {part} a stored summary part, {judgments} the stored judgment set's id.
BAD_OUTPUTS: list[tuple[str, list[str], int, str]] = [
    ("report --out the catalog", ["report", str(SEED_QRELS), str(SEED_RUN), "--out", "{warehouse}/catalog.duckdb",
                                  "--force"], 2, "--out is inside the warehouse"),
    ("report --out a stored part", ["report", str(SEED_QRELS), str(SEED_RUN), "--out", "{part}", "--force"], 2,
     "--out is inside the warehouse"),
    ("report --out a new file in a warehouse", ["report", str(SEED_QRELS), str(SEED_RUN), "--out",
                                               "{warehouse}/report.html"], 2, "--out is inside the warehouse"),
    ("report --out into its own new warehouse", ["report", str(SEED_QRELS), str(SEED_RUN), "--warehouse",
                                                 "{tmp}/new", "--out", "{tmp}/new/report.html"], 2,
     "--out is inside the warehouse"),
    ("report --out an existing file", ["report", str(SEED_QRELS), str(SEED_RUN), "--out", "{tmp}/mine.html"], 2,
     "--out already exists: give --force to replace it"),
    ("report --out a folder", ["report", str(SEED_QRELS), str(SEED_RUN), "--out", "{tmp}", "--force"], 2,
     "--out is a folder"),
    ("report --out below a file", ["report", str(SEED_QRELS), str(SEED_RUN), "--out", "{tmp}/mine.html/r.html"], 2,
     "--out cannot be written"),
    ("report --out a FIFO", ["report", str(SEED_QRELS), str(SEED_RUN), "--out", "{tmp}/pipe", "--force"], 2,
     "--out is not a regular file"),
    ("worklist --out the catalog", ["worklist", "--judgments", "{judgments}", "--warehouse", "{warehouse}",
                                    "--out", "{warehouse}/catalog.duckdb", "--force"], 2,
     "--out is inside the warehouse"),
    ("worklist --out an existing file", ["worklist", "--judgments", "{judgments}", "--warehouse", "{warehouse}",
                                         "--out", "{tmp}/mine.html"], 2, "--out already exists"),
    ("--extends an unknown --worklist", ["ingest-judgments", str(SEED_QRELS), "--extends", "{judgments}", "--version",
                                         "v2", "--worklist", "nope", "--warehouse", "{warehouse}"], 1,
     "--worklist: no worklist with id 'nope'"),
]


@pytest.mark.parametrize("arguments, code, message", [case[1:] for case in BAD_OUTPUTS],
                         ids=[case[0] for case in BAD_OUTPUTS])
def test_a_refused_output_or_extension_leaves_everything_as_it_was(
    seeded_warehouse: Path, tmp_path: Path, arguments: list[str], code: int, message: str
) -> None:
    (tmp_path / "mine.html").write_text("someone's file\n")
    os.mkfifo(tmp_path / "pipe")
    judgments = next(path.stem for path in (seeded_warehouse / "judgment_sets").glob("*.parquet")
                     if not path.name.startswith("_"))
    part = next((seeded_warehouse / "summary").glob("*/part-0.parquet"))
    places = {"{warehouse}": str(seeded_warehouse), "{tmp}": str(tmp_path), "{part}": str(part),
              "{judgments}": judgments}
    for placeholder, value in places.items():
        arguments = [argument.replace(placeholder, value) for argument in arguments]
    before, mine = tree_listing(seeded_warehouse), tree_listing(tmp_path)
    _assert_refused(runner.invoke(app, arguments), code, message)
    assert tree_listing(seeded_warehouse) == before and tree_listing(tmp_path) == mine
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mine.html", "pipe"]


def test_a_parquet_null_grade_is_refused_in_the_warehouse_too(seeded_warehouse: Path, tmp_path: Path) -> None:
    before = tree_listing(seeded_warehouse)
    path = parquet(NULL_GRADE_FRAME)(tmp_path)
    for arguments in (["evaluate", str(path), str(SEED_RUN)], ["ingest-judgments", str(path)]):
        result = runner.invoke(app, [*arguments, "--warehouse", str(seeded_warehouse)])
        _assert_refused(result, 1, "input.parquet, row 2: grade is null", path.name)
        assert "unresolved_token" in result.stderr
        assert tree_listing(seeded_warehouse) == before


@pytest.mark.parametrize("declared", [["--unresolved-token", "?"], []], ids=["option", "sidecar"])
def test_a_parquet_null_grade_is_unresolved_where_the_set_declares_unresolved_judgments(
    tmp_path: Path, declared: list[str]
) -> None:
    """As TREC text's `unresolved_token`: declared (sidecar or --unresolved-token), a null grade is stored as an
    unresolved judgment and counted."""
    path = parquet(NULL_GRADE_FRAME)(tmp_path)
    if not declared:
        (tmp_path / "input.parquet.meta.toml").write_text('unresolved_token = "?"\n')
    warehouse = tmp_path / "warehouse"
    result = runner.invoke(app, ["ingest-judgments", str(path), *declared, "--warehouse", str(warehouse)])
    assert result.exit_code == 0, result.output
    counted = runner.invoke(app, ["sql", "SELECT n_rows, n_unresolved FROM judgment_sets", "--format", "csv",
                                  "--warehouse", str(warehouse)])
    assert counted.exit_code == 0, counted.output
    assert counted.stdout.split() == ["n_rows,n_unresolved", "2,1"]


def test_a_sidecar_that_is_a_directory_leaves_the_warehouse_unchanged(seeded_warehouse: Path, tmp_path: Path) -> None:
    before = tree_listing(seeded_warehouse)
    path = sidecar_folder(tmp_path)
    for arguments in (["evaluate", str(SEED_QRELS), str(path)], ["ingest-run", str(path)]):
        result = runner.invoke(app, [*arguments, "--warehouse", str(seeded_warehouse)])
        _assert_refused(result, 1, "input.txt.meta.toml: is a directory, not a sidecar")
        assert tree_listing(seeded_warehouse) == before


@pytest.mark.parametrize("command", [["ingest-run", str(SEED_RUN)], ["ingest-judgments", str(SEED_QRELS)],
                                     ["nightly", "--judgments", str(SEED_QRELS), "--inbox", "{tmp}/inbox"]],
                         ids=["ingest-run", "ingest-judgments", "nightly"])
@pytest.mark.parametrize("where", ["/proc/judged-warehouse", "/proc/judged/deeper", "/proc", "/sys/judged-warehouse"])
def test_a_warehouse_where_no_folder_can_be_made_is_one_line(tmp_path: Path, command: list[str], where: str) -> None:
    """/proc and /sys refuse new folders whatever the permission bits say (and root passes every `os.access`)."""
    top = Path("/", Path(where).parts[1])
    if not top.is_dir():
        pytest.skip(f"no {top} here")
    command = [part.replace("{tmp}", str(tmp_path)) for part in command]
    result = runner.invoke(app, [*command, "--warehouse", where])
    _assert_refused(result, 2, "--warehouse cannot be written here", where)
    assert not (tmp_path / "inbox").exists()


def test_show_refuses_an_id_that_is_a_path(seeded_warehouse: Path) -> None:
    """`../runs/<run id>` would resolve to the run's record file beside the evaluations' folder."""
    before = tree_listing(seeded_warehouse)
    run_id = next(path.stem for path in (seeded_warehouse / "runs").glob("*.parquet") if not path.stem.startswith("_"))
    for evaluation_id in (f"../runs/{run_id}", f"../judgment_sets/{run_id}", "/etc/passwd", "..", "abc/def"):
        result = runner.invoke(app, ["show", evaluation_id, "--warehouse", str(seeded_warehouse)])
        _assert_refused(result, 1, f"no evaluation with id or id prefix {evaluation_id!r} in the warehouse",
                        str(seeded_warehouse))
    assert tree_listing(seeded_warehouse) == before


def _unreadable_file(tmp_path: Path) -> Path:
    """A regular file this process cannot read: one without permissions, or (root reads those) a write-only sysfs
    file, which refuses even root."""
    if os.geteuid() != 0:
        path = tmp_path / "unreadable.txt"
        path.write_text("q1 0 d1 1\n")
        path.chmod(0)
        return path
    path = Path("/sys/bus/pci/rescan")
    try:
        path.open("rb").close()
    except PermissionError:
        return path
    except OSError:
        pass
    pytest.skip("no unreadable regular file for root here")


@pytest.mark.parametrize("kind", ["unreadable", "device"])
def test_nightly_refuses_judgments_it_cannot_read(seeded_warehouse: Path, tmp_path: Path, kind: str) -> None:
    before = tree_listing(seeded_warehouse)
    path = _unreadable_file(tmp_path) if kind == "unreadable" else Path("/dev/zero")
    result = runner.invoke(app, ["nightly", "--inbox", str(tmp_path / "inbox"), "--judgments", str(path),
                                 "--warehouse", str(seeded_warehouse)])
    _assert_refused(result, 1, "--judgments", str(path))
    assert ("cannot be read" if kind == "unreadable" else "is not a regular file") in result.stderr
    assert tree_listing(seeded_warehouse) == before and not (tmp_path / "inbox").exists()


def test_evaluate_refuses_a_file_it_cannot_read(tmp_path: Path) -> None:
    path = _unreadable_file(tmp_path)
    result = runner.invoke(app, ["evaluate", str(path), str(SEED_RUN)])
    _assert_refused(result, 1, "cannot be read", str(path))


# -- numeric options: each has a declared range, checked before anything is read or stored --------------------------

# (case id, command and options, the line's words); every one exits 2. "{q}" "{r}": the seed qrels and run.
BAD_NUMBERS: list[tuple[str, list[str], str]] = [
    ("compare seed -1", ["compare", "{q}", "{r}", "{r2}", "--seed", "-1"],
     "--seed must be an integer from 0 to 9,223,372,036,854,775,807, not '-1'"),
    ("compare seed 2^64", ["compare", "{q}", "{r}", "{r2}", "--seed", str(2**64)],
     f"--seed must be an integer from 0 to 9,223,372,036,854,775,807, not '{2**64}'"),
    ("compare seed text", ["compare", "{q}", "{r}", "{r2}", "--seed", "lucky"],
     "--seed 'lucky' is not an integer"),
    ("compare permutations 10^20", ["compare", "{q}", "{r}", "{r2}", "--permutations", str(10**20)],
     "--permutations must be an integer from 100 to 1,000,000"),
    ("compare permutations 1e20", ["compare", "{q}", "{r}", "{r2}", "--permutations", "1e20"],
     "--permutations '1e20' is not an integer"),
    ("compare resamples 10^12", ["compare", "{q}", "{r}", "{r2}", "--resamples", str(10**12)],
     "--resamples must be an integer from 100 to 1,000,000, not '1000000000000'"),
    ("compare resamples 99", ["compare", "{q}", "{r}", "{r2}", "--resamples", "99"],
     "--resamples must be an integer from 100 to 1,000,000, not '99'"),
    ("compare tie tolerance inf", ["compare", "{q}", "{r}", "{r2}", "--tie-tolerance", "inf"],
     "--tie-tolerance must be a number from 0 to 1, not 'inf'"),
    ("compare tie tolerance nan", ["compare", "{q}", "{r}", "{r2}", "--tie-tolerance", "nan"],
     "--tie-tolerance must be a number from 0 to 1, not 'nan'"),
    ("compare tie tolerance negative", ["compare", "{q}", "{r}", "{r2}", "--tie-tolerance", "-1e-9"],
     "--tie-tolerance must be a number from 0 to 1"),
    ("compare unknown queries", ["compare", "{q}", "{r}", "{r2}", "--queries", "all"], "--queries: Input should be"),
    ("report seed -1", ["report", "{q}", "{r}", "--out", "{tmp}/report.html", "--seed", "-1"],
     "--seed must be an integer from 0"),
    ("report resamples 10^12", ["report", "{q}", "{r}", "{r2}", "--out", "{tmp}/report.html", "--resamples",
                                str(10**12)], "--resamples must be an integer from 100 to 1,000,000"),
    ("worklist budget 2^63", ["worklist", "--judgments", "seed", "--budget", str(2**63)],
     f"--budget must be an integer from 1 to 1,000,000, not '{2**63}'"),
    ("worklist budget text", ["worklist", "--judgments", "seed", "--budget", "many"],
     "--budget 'many' is not an integer"),
    ("worklist cutoff text", ["worklist", "--judgments", "seed", "--cutoff", "ten"],
     "--cutoff 'ten' is not a positive integer"),
    ("evaluate interval width inf", ["evaluate", "{q}", "{r}", "--interval-width", "inf"],
     "--interval-width must be a number above 0 and at most 1, not 'inf'"),
    ("evaluate interval width 2", ["evaluate", "{q}", "{r}", "--interval-width", "2"],
     "--interval-width must be a number above 0 and at most 1, not '2'"),
    ("evaluate depth 2^63", ["evaluate", "{q}", "{r}", "--depth", str(2**63)], "is beyond 2,147,483,647"),
]


def _other_run(folder: Path) -> Path:
    path = folder / "other.txt"
    path.write_text("".join(" ".join([*line.split()[:5], "other"]) + "\n"
                            for line in SEED_RUN.read_text().splitlines() if line.strip()))
    return path


def _numbers_arguments(arguments: list[str], folder: Path) -> list[str]:
    values = {"{q}": str(SEED_QRELS), "{r}": str(SEED_RUN), "{r2}": str(_other_run(folder))}
    return [values.get(a, a).replace("{tmp}", str(folder)) for a in arguments]


@pytest.mark.parametrize("arguments, message", [case[1:] for case in BAD_NUMBERS], ids=[c[0] for c in BAD_NUMBERS])
def test_a_number_out_of_its_range_is_one_line_naming_the_range(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    arguments = _numbers_arguments(arguments, tmp_path)
    if arguments[0] == "worklist":
        arguments += ["--warehouse", str(tmp_path / "w")]
    _assert_refused(runner.invoke(app, arguments), 2, message)
    assert not (tmp_path / "report.html").exists() and not (tmp_path / "w").exists()


@pytest.mark.parametrize("arguments, message",
                         [case[1:] for case in BAD_NUMBERS if case[1][0] in ("compare", "report", "worklist")],
                         ids=[case[0] for case in BAD_NUMBERS if case[1][0] in ("compare", "report", "worklist")])
def test_a_number_out_of_its_range_leaves_the_warehouse_unchanged(
    seeded_warehouse: Path, tmp_path: Path, arguments: list[str], message: str
) -> None:
    before = tree_listing(seeded_warehouse)
    arguments = _numbers_arguments(arguments, tmp_path)
    _assert_refused(runner.invoke(app, [*arguments, "--warehouse", str(seeded_warehouse)]), 2, message)
    assert tree_listing(seeded_warehouse) == before


def test_the_largest_numbers_in_range_are_accepted(tmp_path: Path) -> None:
    other = _other_run(tmp_path)
    result = runner.invoke(app, ["compare", str(SEED_QRELS), str(SEED_RUN), str(other), "--cutoffs", "10",
                                 "--seed", str(2**63 - 1), "--tie-tolerance", "1", "--permutations", "100",
                                 "--resamples", "100", "--format", "json"])
    assert result.exit_code == 0, result.output


# The Python API: the same values raise the same errors (SpecError, a ValueError with one line naming the range).
BAD_API_NUMBERS: list[tuple[str, dict, str]] = [
    ("seed -1", {"seed": -1}, "seed must be an integer from 0 to 9,223,372,036,854,775,807, not -1"),
    ("seed 2^64", {"seed": 2**64}, "seed must be an integer from 0"),
    ("seed True", {"seed": True}, "seed must be an integer"),
    ("permutations 10^20", {"permutations": 10**20}, "permutations must be an integer from 100 to 1,000,000"),
    ("resamples 10^12", {"bootstrap_resamples": 10**12}, "bootstrap_resamples must be an integer from 100 to 1,000,000"),
    ("tie tolerance inf", {"tie_tolerance": float("inf")}, "tie_tolerance must be a number from 0 to 1, not inf"),
    ("unknown correction", {"correction": "none"}, "correction: Input should be"),
]


@pytest.mark.parametrize("values, message", [case[1:] for case in BAD_API_NUMBERS], ids=[c[0] for c in BAD_API_NUMBERS])
def test_the_python_api_refuses_the_same_comparison_settings(values: dict, message: str) -> None:
    from judged import SpecError
    from judged.schemas.comparison import ComparisonSettings

    with pytest.raises(SpecError) as refused:
        ComparisonSettings(**values)
    assert message in str(refused.value) and len(str(refused.value).splitlines()) == 1


@pytest.mark.parametrize("options, message", [
    ({"depth": 2**40}, "depth"), ({"depth": 0}, "depth"), ({"cutoffs": (2**40,)}, "cutoffs"),
    ({"interval_width": float("inf")}, "interval_width"), ({"interval_width": 2.0}, "interval_width"),
], ids=["depth 2^40", "depth 0", "cutoff 2^40", "interval width inf", "interval width 2"])
def test_the_python_api_refuses_the_spec_numbers_the_cli_refuses(options: dict, message: str) -> None:
    import judged

    with pytest.raises(judged.SpecError) as refused:
        judged.evaluate(SEED_QRELS, SEED_RUN, **options)
    assert message in str(refused.value) and len(str(refused.value).splitlines()) == 1


def test_a_fifo_input_that_stays_silent_is_one_line_and_leaves_the_warehouse_unchanged(
    seeded_warehouse: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)  # nobody writes; the timeout ends the wait before the waiting notice is due
    before = tree_listing(seeded_warehouse)
    result = runner.invoke(app, ["evaluate", str(SEED_QRELS), str(fifo), "--input-timeout", "0.5",
                                 "--warehouse", str(seeded_warehouse)])
    _assert_refused(result, 1, "no input for 0.5 s (--input-timeout)", str(fifo))
    assert tree_listing(seeded_warehouse) == before


@pytest.mark.parametrize(
    ("command", "text", "looks"),
    [("ingest-run", "q1 0 d1 3\n", "found 4: this looks like qrels"),
     ("ingest-judgments", "q1 Q0 d1 1 3.0 t\n", "found 6: this looks like a run")],
)
def test_a_command_without_qrels_and_run_gives_no_order(
    prefect_harness: str, tmp_path: Path, command: str, text: str, looks: str
) -> None:
    """`the order is QRELS RUN` is for the commands that take both (evaluate, compare, report): ingest-run and
    ingest-judgments take one file, so a file of the other kind is named as such, with no order to give."""
    path = tmp_path / "input.txt"
    path.write_text(text)
    result = runner.invoke(app, [command, str(path), "--warehouse", str(tmp_path / "warehouse")])
    _assert_refused(result, 1, looks, path.name)
    assert "QRELS RUN" not in result.stderr
    assert not (tmp_path / "warehouse").exists() or not list((tmp_path / "warehouse").rglob("*.parquet"))
