"""Parsing TREC text and conforming Parquet tables to the judgments and run contracts.

Belongs here: pure functions from a LazyFrame of raw lines (`line_number`, `line`) or of Parquet columns to the typed
tables of `schemas.tables`, with a `problem` column (null on good rows), and the check that turns the first problem
into an `InputError`. Reading bytes from disk is the flows' job.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from judged.schemas.fields import PAIR
from judged.schemas.tables import JUDGMENTS, PARQUET_JUDGMENTS_REQUIRED, PARQUET_RUN_REQUIRED, RUN, Table
from judged.transforms.errors import InputError
from judged.transforms.trec_grammar import QRELS_COLUMNS, RUN_COLUMNS, RUN_Q0, Columns, field_count, is_skipped

_INTEGER = r"^[+-]?[0-9]+$"


# Arguments given in the wrong order are the likeliest reason for a line with the other kind's column count.
SWAPPED_HINT = "the order is QRELS RUN"


def without_order_hint(error: InputError) -> InputError:
    """`error` as a command that takes no QRELS RUN arguments gives it: without SWAPPED_HINT, whose order it has
    none of (the file's look, `this looks like qrels`, stays)."""
    if SWAPPED_HINT not in error.first_problem:
        return error
    problem = error.first_problem.replace(f"; {SWAPPED_HINT}", "")
    return InputError(error.source, problem, error.line, error.unit, error.more)


def _looks_like(other_kind: str, other: Columns) -> pl.Expr:
    """`: this looks like a run; the order is QRELS RUN` when the line has the other kind's column count."""
    return (
        pl.when(field_count(pl.col("line")) == other.count)
        .then(pl.lit(f": this looks like {other_kind}; {SWAPPED_HINT}"))
        .otherwise(pl.lit(""))
    )


def _columns_problem(columns: Columns, other_kind: str, other: Columns) -> pl.Expr:
    """The problem of a line that does not hold `columns` (null when it does)."""
    return pl.when(pl.col("_f").struct.field(columns.names[0]).is_null()).then(
        pl.format(f"{columns.expected()}, found {{}}{{}}", field_count(pl.col("line")), _looks_like(other_kind, other))
    )


def parse_trec_qrels(lines: pl.LazyFrame, unresolved_token: str | None = None) -> pl.LazyFrame:
    """`qid iter docid grade` lines (transforms/trec_grammar.py) -> the judgments table plus `problem`. Blank and
    comment lines are skipped. A grade equal to `unresolved_token` (if given) is an unresolved judgment: kept, with a
    null grade."""
    field = pl.col("_f").struct.field
    grade_text = field("relevance")
    unresolved = pl.lit(False) if unresolved_token is None else grade_text == unresolved_token
    problem = (
        pl.when(field("query_id").is_null())
        .then(_columns_problem(QRELS_COLUMNS, "a run", RUN_COLUMNS))
        .when(unresolved)
        .then(pl.lit(None, pl.String))
        .when(~grade_text.str.contains(_INTEGER))
        .then(pl.format("grade '{}' is not an integer", grade_text))
        .when(grade_text.cast(pl.Int32, strict=False).is_null())
        .then(pl.format("grade '{}' is out of range", grade_text))
    )
    return (
        lines.filter(~is_skipped(pl.col("line")))
        .with_columns(_f=QRELS_COLUMNS.fields(pl.col("line")))
        .select(
            query_id=field("query_id"),
            iteration=field("iteration"),
            doc_id=field("doc_id"),
            relevance=grade_text.cast(pl.Int32, strict=False),
            source_line=pl.col("line_number").cast(pl.Int64),
            problem=problem,
        )
    )


def parse_trec_run(lines: pl.LazyFrame, unresolved_token: None = None) -> pl.LazyFrame:
    """`qid Q0 docid rank score tag [ignored ...]` lines (transforms/trec_grammar.py) -> the run table plus
    `problem`. Blank and comment lines are skipped. (A run declares no unresolved scores: `unresolved_token` is
    `parse_trec_qrels`', in the signature both kinds share, flows/store/kinds.py.)"""
    field = pl.col("_f").struct.field
    q0 = field("q0")
    rank_text = field("source_rank")
    score_text = field("score")
    score = score_text.cast(pl.Float64, strict=False)
    problem = (
        pl.when(field("query_id").is_null())
        .then(_columns_problem(RUN_COLUMNS, "qrels", QRELS_COLUMNS))
        .when(~q0.is_in(RUN_Q0))
        .then(pl.format("second column must be Q0 or 0, found '{}' (columns shifted?)", q0))
        .when(~rank_text.str.contains(_INTEGER) | rank_text.cast(pl.Int64, strict=False).is_null())
        .then(pl.format("rank '{}' is not an integer", rank_text))
        .when(score.is_null())
        .then(pl.format("score '{}' is not a number", score_text))
        .when(score.is_nan())
        .then(pl.format("score '{}' is NaN", score_text))
        .when(score.is_infinite())
        .then(pl.format("score '{}' is not finite (inf, -inf, or beyond float64)", score_text))
    )
    return (
        lines.filter(~is_skipped(pl.col("line")))
        .with_columns(_f=RUN_COLUMNS.fields(pl.col("line")))
        .select(
            query_id=field("query_id"),
            doc_id=field("doc_id"),
            source_rank=rank_text.cast(pl.Int64, strict=False),
            score=score,
            run_tag=field("run_tag"),
            source_line=pl.col("line_number").cast(pl.Int64),
            problem=problem,
        )
    )


def ignored_run_columns(lines: pl.LazyFrame) -> pl.LazyFrame:
    """One row: how many run lines have more than six columns (`n_lines`), whose extra columns are ignored as
    trec_eval ignores them, and the number of the first (`first_line`, null when there is none). A document id
    holding a space is the usual cause, and then silently becomes other columns: the caller says so."""
    extra = ~is_skipped(pl.col("line")) & (field_count(pl.col("line")) > RUN_COLUMNS.count)
    return lines.select(n_lines=extra.sum(), first_line=pl.col("line_number").filter(extra).min().cast(pl.Int64))


def in_contract(rows: pl.LazyFrame, contract: dict[str, pl.DataType] | Table, *extra: str) -> pl.LazyFrame:
    """The contract's columns in order (then `extra` ones), each of its type; of a `Table`, without the optional
    columns the rows lack (`Table.optional`). Only columns of another type are cast: a cast to the same string type
    still copies every string."""
    schema = rows.collect_schema()
    if isinstance(contract, Table):
        contract = contract.schema_for(schema.names())
    differing = {name: dtype for name, dtype in contract.items() if schema[name] != dtype}
    selected = rows.select(*contract, *extra)
    return selected.cast(differing) if differing else selected


def _require_columns(schema: pl.Schema, required: tuple[str, ...], source: str, other_kind: str = "",
                     other_kind_column: str = "") -> None:
    missing = [name for name in required if name not in schema]
    if missing:
        hint = f": this looks like {other_kind}; {SWAPPED_HINT}" if other_kind_column in schema else ""
        raise InputError(source, f"missing column(s) {missing}; found {list(schema.names())}{hint}")
    for name in PAIR:
        if schema[name] != pl.String:
            raise InputError(
                source, f"column {name!r} has type {schema[name]}; identifiers must be strings ('007' is not '7')"
            )


# Why a null grade is refused where the judgment set declares no unresolved judgments.
NULL_GRADE = ("grade is null: a null grade is an unresolved judgment only where the judgment set declares one "
              "(unresolved_token in its sidecar <file>.meta.toml, or --unresolved-token)")


# Types a judgments table's `assessor` column may have: text, or nothing but nulls.
_ASSESSOR_TYPES = (pl.String, pl.Categorical, pl.Enum, pl.Null)


def conform_judgments(
    table: pl.LazyFrame, source: str, first_row: int = 1, unresolved_declared: bool = False
) -> pl.LazyFrame:
    """A Parquet judgments table (query_id, doc_id, relevance[, iteration][, assessor]) -> the contract plus
    `problem`, rows numbered from `first_row`. A null grade is an unresolved judgment (kept null) when the set
    declares unresolved judgments (`unresolved_declared`: its metadata has an `unresolved_token`, as TREC text
    declares the token that `parse_trec_qrels` reads as null); otherwise it is a problem, like a grade that is not a
    number. An `assessor` column names who gave each grade (`assessor_problem`: every row names one, or none does;
    a column of nulls only is kept, and read as naming none by `names_assessors`)."""
    schema = table.collect_schema()
    _require_columns(schema, PARQUET_JUDGMENTS_REQUIRED, source, "a run", "score")
    if not schema["relevance"].is_integer() and schema["relevance"] != pl.Null:
        raise InputError(source, f"column 'relevance' has type {schema['relevance']}; grades must be integers")
    named = "assessor" in schema
    if named and not isinstance(schema["assessor"], _ASSESSOR_TYPES):
        raise InputError(source, f"column 'assessor' has type {schema['assessor']}; assessors are named by text")
    iteration = pl.col("iteration").cast(pl.String) if "iteration" in schema else pl.lit("0")
    grade = pl.col("relevance").cast(pl.Int32, strict=False)
    problem = (
        pl.when(pl.col("relevance").is_not_null() & grade.is_null())
        .then(pl.format("grade {} is out of range", pl.col("relevance")))
        .otherwise(
            _missing_id_problem() if unresolved_declared
            else pl.coalesce(_missing_id_problem(), pl.when(pl.col("relevance").is_null()).then(pl.lit(NULL_GRADE)))
        )
    )
    if named:
        problem = pl.coalesce(problem, assessor_problem(pl.col("assessor").cast(pl.String)))
    contract = {name: dtype for name, dtype in JUDGMENTS.items() if named or name != "assessor"}
    return table.with_row_index("source_line", offset=first_row).select(
        query_id=pl.col("query_id"),
        iteration=iteration,
        doc_id=pl.col("doc_id"),
        relevance=grade,
        **({"assessor": pl.col("assessor").cast(pl.String)} if named else {}),
        source_line=pl.col("source_line"),
        problem=problem,
    ).cast(contract | {"problem": pl.String()})


def assessor_problem(assessor: pl.Expr) -> pl.Expr:
    """The problem of a row's assessor name (null: none): a null where another row names its assessor (a set names
    every row's assessor or none), an empty name, or one with blanks around it or a line break (the rules of
    `schemas.provenance.assessor_name_problem`)."""
    return (
        pl.when(assessor.is_null() & assessor.is_not_null().any())
        .then(pl.lit("assessor is null while other rows name theirs: name every row's assessor, or none"))
        .when(assessor == "")
        .then(pl.lit("assessor is empty"))
        .when((assessor != assessor.str.strip_chars()) | assessor.str.contains(r"[\r\n]"))
        .then(pl.format("assessor '{}' has blanks around it or a line break", assessor))
    )


def conform_run(
    table: pl.LazyFrame, source: str, first_row: int = 1, unresolved_declared: Literal[False] = False
) -> pl.LazyFrame:
    """A Parquet run table (query_id, doc_id, score[, source_rank or rank][, run_tag]) -> the contract plus `problem`.
    Rows are numbered from `first_row` (`source_line`): a stretch of a file's rows read alone keeps the file's
    numbers. (A run declares no unresolved scores: `unresolved_declared` is `conform_judgments`', in the signature
    both kinds share, flows/store/kinds.py.)"""
    schema = table.collect_schema()
    _require_columns(schema, PARQUET_RUN_REQUIRED, source, "qrels", "relevance")
    if not schema["score"].is_numeric():
        raise InputError(source, f"column 'score' has type {schema['score']}; scores must be numbers")
    rank_column = _rank_column(schema)
    if rank_column and not (schema[rank_column].is_integer() or schema[rank_column] == pl.Null):
        raise InputError(source, f"column {rank_column!r} has type {schema[rank_column]}; ranks must be integers")
    source_rank = pl.col(rank_column).cast(pl.Int64) if rank_column else pl.lit(None, pl.Int64)
    run_tag = pl.col("run_tag").cast(pl.String) if "run_tag" in schema else pl.lit(None, pl.String)
    score = pl.col("score").cast(pl.Float64)
    problem = pl.coalesce(_score_problem(score), _missing_id_problem())
    return table.with_row_index("source_line", offset=first_row).select(
        query_id=pl.col("query_id"),
        doc_id=pl.col("doc_id"),
        source_rank=source_rank,
        score=score,
        run_tag=run_tag,
        source_line=pl.col("source_line"),
        problem=problem,
    ).cast(RUN | {"problem": pl.String()})


def _rank_column(schema: pl.Schema) -> str | None:
    """A Parquet run's rank column: `source_rank` (the contract's name), else `rank`, else none."""
    return next((name for name in ("source_rank", "rank") if name in schema), None)


# Types a Parquet run's rank and tag columns may have for `conform_run`'s casts never to fail (a UInt64 rank may
# not fit an Int64; a binary tag may not be text).
_SAFE_RANK = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.Null)
_SAFE_TAG = (pl.String, pl.Categorical, pl.Enum, pl.Null)


def run_problem_probe(table: pl.LazyFrame) -> pl.LazyFrame | None:
    """Rows of a Parquet run table (at most two) that `conform_run` would give a problem; none: it gives none.
    They are looked for on the table's own columns, without row numbers, so Polars skips every row group whose
    statistics show no null ids and reads the scores alone. None when a column needs a cast that could fail: only
    `conform_run`'s pass over every row can tell then. Call it after `conform_run`, which checks the columns."""
    schema = table.collect_schema()
    rank_column = _rank_column(schema)
    ids_are_text = schema["query_id"] == pl.String and schema["doc_id"] == pl.String
    if not ids_are_text or (rank_column and not isinstance(schema[rank_column], _SAFE_RANK)) or (
        "run_tag" in schema and not isinstance(schema["run_tag"], _SAFE_TAG)
    ):
        return None
    # Two filters, not one: a condition on the scores would keep Polars from skipping by the ids' statistics.
    return pl.concat([
        table.filter(pl.col("query_id").is_null() | pl.col("doc_id").is_null()).head(1).select("query_id"),
        table.filter(pl.any_horizontal(condition for condition, _ in _score_problems(pl.col("score").cast(pl.Float64))))
        .head(1).select("query_id"),
    ])


def _score_problems(score: pl.Expr) -> list[tuple[pl.Expr, str]]:
    """What makes a run's score (a Float64) unusable, and how a problem names it, first match first."""
    return [(score.is_null(), "score is null"), (score.is_nan(), "score is NaN"),
            (score.is_infinite(), "score is not finite (inf or -inf)")]


def _score_problem(score: pl.Expr) -> pl.Expr:
    """The first of `_score_problems` that holds (null: none)."""
    problem = pl.lit(None, pl.String)
    for condition, message in reversed(_score_problems(score)):
        problem = pl.when(condition).then(pl.lit(message)).otherwise(problem)
    return problem


def _missing_id_problem() -> pl.Expr:
    return (
        pl.when(pl.col("query_id").is_null())
        .then(pl.lit("query_id is null"))
        .when(pl.col("doc_id").is_null())
        .then(pl.lit("doc_id is null"))
    )


def raise_first_problem(problems: pl.DataFrame, source: str, unit: str = "line") -> None:
    """Raise an InputError for the earliest row whose `problem` is set (give it rows already filtered or not)."""
    bad = problems.filter(pl.col("problem").is_not_null()).sort("source_line").head(1)
    if bad.height:
        row = bad.row(0, named=True)
        count = problems.filter(pl.col("problem").is_not_null()).height
        raise InputError(source, row["problem"], line=row["source_line"], unit=unit, more=count - 1)
