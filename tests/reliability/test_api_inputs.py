"""The bad-input catalogue of the Python API (`judged.evaluate`): it refuses what the command line refuses, with the
same messages and the same switch for empty inputs (`allow_empty=True`, the CLI's `--allow-empty`), and every bad
argument raises `InputError` (an input) or `SpecError` (an option or argument), one line, never a TypeError, an
AttributeError or an error of Polars or Arrow.

Inputs are the seed fixture (data/seed: query q1, documents graded 3, 0, 2 in returned order) in every form the
API takes: paths, Polars (eager and lazy), pandas, Arrow and pytrec_eval-style dicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import judged
from judged.flows.cli.app import app
from tests.conftest import REPO

runner = CliRunner()
SEED_QRELS = REPO / "data" / "seed" / "qrels.txt"
SEED_RUN = REPO / "data" / "seed" / "run.txt"
QRELS = {"q1": {"d1": 3, "d2": 0, "d3": 2}}
RUN = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}
RUN_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}
QRELS_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int32}
EMPTY_RUN = pl.DataFrame(schema=RUN_SCHEMA)
EMPTY_QRELS = pl.DataFrame(schema=QRELS_SCHEMA)
NULL_GRADE = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": [3, None]},
                          schema=QRELS_SCHEMA)
EMPTY = "has no rows: an empty {} is refused unless allow_empty=True is given"
NULL = "grade is null: a null grade is an unresolved judgment only where the judgment set declares one"


def file(name: str, write: Callable[[Path], None]) -> Callable[[Path], Path]:
    """An input written as a file under the test's folder (the API reads a path as the CLI does)."""
    def make(folder: Path) -> Path:
        path = folder / name
        write(path)
        return path
    return make


def failing_lazy_frame() -> pl.LazyFrame:
    return pl.LazyFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": ["x"]}).with_columns(
        pl.col("score").cast(pl.Float64, strict=True))


def sidecar_folder(path: Path) -> None:
    path.write_text("q1 Q0 d1 1 3.0 t\n")
    path.with_name(path.name + ".meta.toml").mkdir()


# (case id, qrels, run, keyword arguments, the error's class, words its message must hold). A callable input is
# made under the test's folder first.
BAD: list[tuple[str, object, object, dict, type[ValueError], str]] = [
    # empty inputs: refused unless allow_empty=True, as the CLI refuses them unless --allow-empty
    ("empty Polars qrels", EMPTY_QRELS, RUN, {}, judged.InputError, "qrels: " + EMPTY.format("judgment set")),
    ("empty lazy qrels", EMPTY_QRELS.lazy(), RUN, {}, judged.InputError, "qrels: " + EMPTY.format("judgment set")),
    ("empty pandas run", QRELS, EMPTY_RUN.to_pandas(), {}, judged.InputError, "run: " + EMPTY.format("run")),
    ("empty Arrow run", QRELS, EMPTY_RUN.to_arrow(), {}, judged.InputError, "run: " + EMPTY.format("run")),
    ("empty qrels dict", {}, RUN, {}, judged.InputError, "qrels: " + EMPTY.format("judgment set")),
    ("qrels dict of an empty query", {"q1": {}}, RUN, {}, judged.InputError, "qrels: " + EMPTY.format("judgment set")),
    ("run dict of an empty query", QRELS, {"q1": {}}, {}, judged.InputError, "run: " + EMPTY.format("run")),
    ("an empty run among runs by name", QRELS, {"a": RUN, "b": EMPTY_RUN}, {}, judged.InputError,
     "run 'b': " + EMPTY.format("run")),
    ("empty qrels file", file("qrels.txt", lambda p: p.write_text("# to be judged\n")), RUN, {}, judged.InputError,
     "qrels.txt: has no rows (no lines, or only blank or comment lines): an empty judgment set is refused unless "
     "allow_empty=True is given"),
    ("0-row Parquet run file", QRELS, file("run.parquet", EMPTY_RUN.write_parquet), {}, judged.InputError,
     "run.parquet: is a Parquet table of 0 rows: an empty run is refused unless allow_empty=True is given"),
    # null grades: an unresolved judgment needs a set that declares one
    ("None grade in a dict", {"q1": {"d1": 3, "d2": None}}, RUN, {}, judged.InputError,
     "qrels: relevance None is not a number"),
    ("null grade in Polars", NULL_GRADE, RUN, {}, judged.InputError, "qrels, row 2: " + NULL),
    ("null grade in pandas", NULL_GRADE.to_pandas(use_pyarrow_extension_array=True), RUN, {}, judged.InputError,
     "qrels, row 2: " + NULL),
    ("null-typed grade column in Arrow",
     pa.table({"query_id": ["q1"], "doc_id": ["d1"], "relevance": pa.nulls(1)}), RUN, {}, judged.InputError,
     "qrels, row 1: " + NULL),
    ("null grade in a Parquet file", file("qrels.parquet", NULL_GRADE.write_parquet), RUN, {}, judged.InputError,
     "qrels.parquet, row 2: " + NULL),
    ("None score in a dict", QRELS, {"q1": {"d1": None}}, {}, judged.InputError, "run: score None is not a number"),
    # arguments of the wrong type: SpecError, not TypeError or AttributeError
    ("measures a number", QRELS, RUN, {"measures": 10}, judged.SpecError, "measures must be a measure's name"),
    ("measures holding a number", QRELS, RUN, {"measures": ["AP", 10]}, judged.SpecError,
     "measures must be a measure's name"),
    ("measures holding None", QRELS, RUN, {"measures": [None]}, judged.SpecError, "measures must be a measure's name"),
    ("preset a list", QRELS, RUN, {"preset": ["trec_eval"]}, judged.SpecError, "preset must be a preset's name"),
    ("preset None", QRELS, RUN, {"preset": None}, judged.SpecError, "preset must be a preset's name"),
    ("spec a preset's name", QRELS, RUN, {"spec": "trec_eval"}, judged.SpecError, "spec must be an EvaluationSpec"),
    ("spec a dict", QRELS, RUN, {"spec": {"cutoffs": [10]}}, judged.SpecError, "spec must be an EvaluationSpec"),
    ("cutoffs a number", QRELS, RUN, {"cutoffs": 10}, judged.SpecError, "cutoffs"),
    ("allow_empty not a bool", QRELS, RUN, {"allow_empty": "yes"}, judged.SpecError,
     "allow_empty must be True or False"),
    # frames that cannot be read: InputError, not an error of Polars, Arrow or pandas
    ("pandas column of objects", pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [object()]}), RUN,
     {}, judged.InputError, "qrels: cannot be read as a table"),
    ("pandas duplicate column names", QRELS,
     pd.DataFrame([["q1", "d1", 1.0]], columns=["query_id", "query_id", "score"]), {}, judged.InputError,
     "run: cannot be read as a table: Duplicate column names"),
    ("a LazyFrame whose query fails", QRELS, failing_lazy_frame(), {}, judged.InputError,
     "run: cannot be read as a table"),
    ("a rank beyond Int64", QRELS, pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0],
                                                 "source_rank": pl.Series([2**63 + 5], dtype=pl.UInt64)}), {},
     judged.InputError, "run: cannot be read as a run"),
    ("an iteration column of lists", pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1],
                                                   "iteration": [[1]]}), RUN, {}, judged.InputError,
     "qrels: cannot be read as a judgment set"),
    # dicts of the wrong shape and values that are not numbers
    ("a query mapped to a list", {"q1": [("d1", 1)]}, RUN, {}, judged.InputError, "qrels: query 'q1' maps to a list"),
    ("a grade that is text", {"q1": {"d1": "3"}}, RUN, {}, judged.InputError, "qrels: relevance '3' is not a number"),
    ("a grade that is a bool", {"q1": {"d1": True}}, RUN, {}, judged.InputError, "relevance True is not a number"),
    ("a grade that is a float", {"q1": {"d1": 1.5}}, RUN, {}, judged.InputError, "grade 1.5 is not an integer"),
    ("a score that is text", QRELS, {"q1": {"d1": "high"}}, {}, judged.InputError, "score 'high' is not a number"),
    ("a grade beyond 64 bits", {"q1": {"d1": 3, "d2": 2**70}}, RUN, {}, judged.InputError,
     "qrels, row 2: grade 1180591620717411303424 is out of range"),
    ("a grade beyond 32 bits", {"q1": {"d1": 2**40}}, RUN, {}, judged.InputError,
     "qrels, row 1: grade 1099511627776 is out of range"),
    ("a score beyond float64", QRELS, {"q1": {"d1": 10**400}}, {}, judged.InputError,
     "run, row 1: score is not finite (beyond float64)"),
    ("a text grade column", pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": ["3"]}), RUN, {},
     judged.InputError, "grades must be integers"),
    ("judgments of no readable type", 42, RUN, {}, judged.InputError, "qrels: cannot read a int"),
    ("a run of no readable type", QRELS, b"q1 Q0 d1 1 1.0 t", {}, judged.InputError, "run: cannot read a bytes"),
    ("a run file whose sidecar is a folder", QRELS, file("run.txt", sidecar_folder), {}, judged.InputError,
     "run.txt.meta.toml: is a directory, not a sidecar"),
]


def made(value: object, folder: Path) -> object:
    return value(folder) if callable(value) and not isinstance(value, type) else value


@pytest.mark.parametrize("qrels, run, arguments, error, message", [case[1:] for case in BAD],
                         ids=[case[0] for case in BAD])
def test_bad_input_is_one_line_input_or_spec_error(
    tmp_path: Path, qrels: object, run: object, arguments: dict, error: type[ValueError], message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        judged.evaluate(made(qrels, tmp_path), made(run, tmp_path), **arguments)
    assert type(raised.value) is error, repr(raised.value)
    assert message in str(raised.value) and "\n" not in str(raised.value), str(raised.value)


def test_the_catalogue_covers_every_kind_of_refusal() -> None:
    assert len(BAD) >= 35
    assert {case[4] for case in BAD} == {judged.InputError, judged.SpecError}


def cli_evaluation(qrels: Path, run: Path, *options: str) -> dict:
    result = runner.invoke(app, ["evaluate", str(qrels), str(run), "--cutoffs", "10", "--format", "json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["evaluations"][0]


@pytest.mark.parametrize("form", ["polars", "pandas", "arrow", "dict", "path"])
def test_allow_empty_accepts_an_empty_run_as_the_cli_does(tmp_path: Path, form: str) -> None:
    """An allowed empty run leaves the judged query missing: scored 0, as `--allow-empty` gives."""
    empty_file = tmp_path / "run.txt"
    empty_file.write_text("")
    run = {"polars": EMPTY_RUN, "pandas": EMPTY_RUN.to_pandas(), "arrow": EMPTY_RUN.to_arrow(), "dict": {"q1": {}},
           "path": empty_file}[form]
    api = judged.evaluate(SEED_QRELS, run, cutoffs=(10,), allow_empty=True)
    cli = cli_evaluation(SEED_QRELS, empty_file, "--allow-empty")
    assert api.summary.select("value", "n_scored", "n_missing").row(0) == (0.0, 1, 1)
    assert [api.summary["value"][0]] == [row["value"] for row in cli["summary"]]
    assert api.per_query["status"].to_list() == ["missing_from_run"]


@pytest.mark.parametrize("form", ["polars", "dict", "path"])
def test_allow_empty_accepts_empty_judgments_as_the_cli_does(tmp_path: Path, form: str) -> None:
    empty_file = tmp_path / "qrels.txt"
    empty_file.write_text("# to be judged\n")
    qrels = {"polars": EMPTY_QRELS, "dict": {}, "path": empty_file}[form]
    api = judged.evaluate(qrels, SEED_RUN, cutoffs=(10,), allow_empty=True)
    cli = cli_evaluation(empty_file, SEED_RUN, "--allow-empty")
    assert api.summary.select("value", "n_scored", "n_no_judgments").row(0) == (None, 0, 1)
    assert cli["summary"][0]["value"] is None


def test_a_declared_null_grade_is_an_unresolved_judgment_through_the_api_and_the_cli(tmp_path: Path) -> None:
    """A Parquet file whose sidecar declares unresolved judgments: its null grade is unjudged (not 0), the same
    through both."""
    qrels = tmp_path / "qrels.parquet"
    NULL_GRADE.write_parquet(qrels)
    (tmp_path / "qrels.parquet.meta.toml").write_text('unresolved_token = "?"\n')
    api = judged.evaluate(qrels, RUN, cutoffs=(10,))
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 1.0 t\n")
    cli = cli_evaluation(qrels, run)
    assert api.per_query["n_unjudged_at_k"].to_list() == [2]  # d2 unresolved, d3 never judged
    assert api.summary["value"].to_list() == [row["value"] for row in cli["summary"]] == [1.0]


def test_numbers_of_numpy_and_negative_grades_are_taken_as_the_cli_takes_them(tmp_path: Path) -> None:
    """A NumPy integer is a grade and a NumPy float a score; a negative grade is accepted by the CLI (trec_eval
    reads it as not relevant), so by the API too, with the same value."""
    with_numpy = judged.evaluate({"q1": {"d1": np.int64(3), "d2": np.int32(0), "d3": np.int16(2)}},
                                 {"q1": {d: np.float64(s) for d, s in RUN["q1"].items()}}, cutoffs=(10,))
    assert with_numpy.evaluation_id == judged.evaluate(QRELS, RUN, cutoffs=(10,)).evaluation_id
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 -1\nq1 0 d2 1\n")
    api = judged.evaluate({"q1": {"d1": -1, "d2": 1}}, SEED_RUN, cutoffs=(10,))
    assert api.summary["value"].to_list() == [row["value"] for row in cli_evaluation(qrels, SEED_RUN)["summary"]]
