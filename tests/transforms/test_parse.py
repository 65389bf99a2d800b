"""Parsing TREC qrels and run lines into the judgments and run tables (transforms.parse).

Every case is a small inline TREC string turned into the (line_number, line) LazyFrame that `flows.io.read_lines`
produces, so the transforms are tested without touching the disk.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from judged.transforms.errors import InputError
from judged.transforms.parse import (
    conform_run, parse_trec_qrels, parse_trec_run, raise_first_problem, run_problem_probe,
)


def lines_of(text: str) -> pl.LazyFrame:
    """`text` as `read_lines` gives it: one row per line, numbered from 1, blank lines kept, no final empty line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return pl.LazyFrame(
        {"line_number": list(range(1, len(lines) + 1)), "line": lines},
        schema={"line_number": pl.UInt32, "line": pl.String},
    )


def qrels(text: str) -> pl.DataFrame:
    return parse_trec_qrels(lines_of(text)).collect()


def run(text: str) -> pl.DataFrame:
    return parse_trec_run(lines_of(text)).collect()


def only_row(frame: pl.DataFrame) -> dict[str, Any]:
    assert frame.height == 1, frame
    return frame.row(0, named=True)


# -- qrels -----------------------------------------------------------------------------------------------------------


def test_qrels_columns_and_types() -> None:
    frame = qrels("q1 0 d1 3\n")
    assert frame.schema == pl.Schema(
        {
            "query_id": pl.String(),
            "iteration": pl.String(),
            "doc_id": pl.String(),
            "relevance": pl.Int32(),
            "source_line": pl.Int64(),
            "problem": pl.String(),
        }
    )
    assert only_row(frame) == {
        "query_id": "q1",
        "iteration": "0",
        "doc_id": "d1",
        "relevance": 3,
        "source_line": 1,
        "problem": None,
    }


@pytest.mark.parametrize(
    "line",
    [
        "q1 0 d1 2",
        "q1\t0\td1\t2",
        "q1  \t 0\t\t d1     2",
        "  \tq1 0 d1 2 \t ",  # leading and trailing blanks
        "q1 0 d1 2\r",  # a CRLF file's line keeps its \r
    ],
)
def test_qrels_any_run_of_spaces_or_tabs_separates_columns(line: str) -> None:
    row = only_row(qrels(line + "\n"))
    assert (row["query_id"], row["iteration"], row["doc_id"], row["relevance"], row["problem"]) == (
        "q1",
        "0",
        "d1",
        2,
        None,
    )


def test_qrels_comments_and_blank_lines_are_skipped_and_line_numbers_kept() -> None:
    text = "# header comment\nq1 0 d1 1\n\n   \n\t# indented comment\nq1 0 d2 0\n#q1 0 d3 2\nq2 0 d1 2\n"
    frame = qrels(text)
    # Lines 1, 3, 4, 5 and 7 are comments or blank; the judgments sit on lines 2, 6 and 8 of the file.
    assert frame.select("query_id", "doc_id", "relevance", "source_line").rows() == [
        ("q1", "d1", 1, 2),
        ("q1", "d2", 0, 6),
        ("q2", "d1", 2, 8),
    ]
    assert frame["problem"].null_count() == 3


def test_qrels_iteration_column_is_kept_verbatim() -> None:
    frame = qrels("q1 0 d1 1\nq1 Q7 d2 1\nq1 007 d3 1\n")
    assert frame["iteration"].to_list() == ["0", "Q7", "007"]


def test_qrels_identifiers_stay_strings_with_leading_zeros() -> None:
    frame = qrels("007 0 007 1\n7 0 7 1\n0.10 0 1e3 1\n")
    assert frame["query_id"].to_list() == ["007", "7", "0.10"]
    assert frame["doc_id"].to_list() == ["007", "7", "1e3"]
    # "007" and "7" are two documents (and two queries), not one.
    assert frame.select("query_id", "doc_id").n_unique() == 3


@pytest.mark.parametrize(
    ("grade_text", "grade"),
    [("0", 0), ("3", 3), ("-1", -1), ("+2", 2), ("01", 1), ("-2147483648", -(2**31))],
)
def test_qrels_integer_grades(grade_text: str, grade: int) -> None:
    row = only_row(qrels(f"q1 0 d1 {grade_text}\n"))
    assert row["relevance"] == grade
    assert row["problem"] is None


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("q1 0 d1", "expected 4 columns `qid iter docid grade`, found 3"),
        ("q1 d1 1", "expected 4 columns `qid iter docid grade`, found 3"),
        ("q1", "expected 4 columns `qid iter docid grade`, found 1"),
        ("q1 0 d1 1 extra", "expected 4 columns `qid iter docid grade`, found 5"),
        ("q1 0 d1 1.5", "grade '1.5' is not an integer"),
        ("q1 0 d1 x", "grade 'x' is not an integer"),
        ("q1 0 d1 1e2", "grade '1e2' is not an integer"),
        ("q1 0 d1 2147483648", "grade '2147483648' is out of range"),  # 2^31 does not fit Int32
    ],
)
def test_qrels_problems(line: str, problem: str) -> None:
    text = f"q1 0 d0 1\n{line}\n"
    frame = qrels(text)
    bad = frame.filter(pl.col("problem").is_not_null())
    assert bad.select("source_line", "problem").rows() == [(2, problem)]
    assert bad["relevance"].to_list() == [None]


# -- runs ------------------------------------------------------------------------------------------------------------


def test_run_columns_and_types() -> None:
    frame = run("q1 Q0 d1 1 3.5 tag\n")
    assert frame.schema == pl.Schema(
        {
            "query_id": pl.String(),
            "doc_id": pl.String(),
            "source_rank": pl.Int64(),
            "score": pl.Float64(),
            "run_tag": pl.String(),
            "source_line": pl.Int64(),
            "problem": pl.String(),
        }
    )
    assert only_row(frame) == {
        "query_id": "q1",
        "doc_id": "d1",
        "source_rank": 1,
        "score": 3.5,
        "run_tag": "tag",
        "source_line": 1,
        "problem": None,
    }


@pytest.mark.parametrize(
    "line",
    [
        "q1 Q0 d1 4 -0.25 tag",
        "q1\tQ0\td1\t4\t-0.25\ttag",
        "q1 \t Q0\t\td1    4\t \t-0.25  tag",
        " \t q1 Q0 d1 4 -0.25 tag\t ",
        "q1 Q0 d1 4 -0.25 tag\r",
        "q1 0 d1 4 -0.25 tag",  # `0` in place of `Q0`, as many systems write it
    ],
)
def test_run_any_run_of_spaces_or_tabs_and_0_for_q0(line: str) -> None:
    row = only_row(run(line + "\n"))
    assert (row["query_id"], row["doc_id"], row["source_rank"], row["score"], row["run_tag"], row["problem"]) == (
        "q1",
        "d1",
        4,
        -0.25,
        "tag",
        None,
    )


def test_run_trailing_columns_are_ignored_as_in_trec_eval_results_trunc() -> None:
    # A line of trec_eval's own test/results.trunc: tabs, a score padded with spaces, junk after the tag.
    row = only_row(run("301\tQ0\tFBIS3-27619\t99\t  2.138276\tSTANDARD more junk at\n"))
    assert row == {
        "query_id": "301",
        "doc_id": "FBIS3-27619",
        "source_rank": 99,
        "score": 2.138276,
        "run_tag": "STANDARD",
        "source_line": 1,
        "problem": None,
    }


def test_run_blank_lines_are_skipped_and_line_numbers_kept() -> None:
    frame = run("\nq1 Q0 d1 1 2.0 t\n \t\n\nq1 Q0 d2 2 1.0 t\n")
    # The two rows are lines 2 and 5 of the text.
    assert frame.select("doc_id", "source_line").rows() == [("d1", 2), ("d2", 5)]
    assert frame["problem"].null_count() == 2


def test_run_comment_lines_are_skipped_as_in_qrels() -> None:
    # One grammar for both kinds, trec_eval 10's for runs: a line whose first field begins with `#` is a comment,
    # indented or not, whatever follows; a `#` further on belongs to its field.
    frame = run("# comment\nq1 Q0 d1 1 2.0 t\n  # indented\n#q1 Q0 d2 2 1.5 t\nq1 Q0 d#3 3 1.0 t#\n")
    assert frame.select("doc_id", "run_tag", "source_line").rows() == [("d1", "t", 2), ("d#3", "t#", 5)]
    assert frame["problem"].null_count() == 2


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("q1\t0\td1 \t1", ("q1", "0", "d1", 1)),  # a blank beside a tab is part of the separator (issue 36)
        ("q1 \t0\x0b\x0cd1\r\t1\r", ("q1", "0", "d1", 1)),  # every C isspace byte but the line feed is a blank
        ("q1\t0\td1\u00a0\t1", ("q1", "0", "d1\u00a0", 1)),  # non-ASCII white space belongs to its field
        ("q\u00e9\u4e00 0 d\u3000x 1", ("q\u00e9\u4e00", "0", "d\u3000x", 1)),  # ideographic space too
    ],
)
def test_blanks_are_the_ascii_white_space_of_trec_eval(text: str, fields: tuple[object, ...]) -> None:
    row = only_row(qrels(text + "\n"))
    assert (row["query_id"], row["iteration"], row["doc_id"], row["relevance"], row["problem"]) == (*fields, None)


def test_a_carriage_return_inside_a_line_separates_fields() -> None:
    # trec_eval reads a lone CR as white space: `d1\rx` is two fields, so the line has five.
    assert only_row(qrels("q1 0 d1\rx 1\n"))["problem"] == "expected 4 columns `qid iter docid grade`, found 5"


def test_run_identifiers_stay_strings_with_leading_zeros() -> None:
    frame = run("007 Q0 007 1 2.0 t\n7 Q0 7 2 1.0 t\n")
    assert frame["query_id"].to_list() == ["007", "7"]
    assert frame["doc_id"].to_list() == ["007", "7"]
    assert frame.select("query_id", "doc_id").n_unique() == 2


@pytest.mark.parametrize(
    ("score_text", "score"),
    [("1", 1.0), ("-3", -3.0), ("1e3", 1000.0), (".5", 0.5), ("5.", 5.0), ("-0.0", -0.0), ("12.3456789", 12.3456789)],
)
def test_run_scores_as_float64(score_text: str, score: float) -> None:
    row = only_row(run(f"q1 Q0 d1 1 {score_text} t\n"))
    assert row["score"] == score
    assert row["problem"] is None


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("q1 Q0 d1 1 2.0", "expected 6 columns `qid Q0 docid rank score tag`, found 5"),
        ("q1 d1 1 2.0 t", "expected 6 columns `qid Q0 docid rank score tag`, found 5"),
        ("q1", "expected 6 columns `qid Q0 docid rank score tag`, found 1"),
        ("q1 Q1 d1 1 2.0 t", "second column must be Q0 or 0, found 'Q1' (columns shifted?)"),
        ("q1 d1 Q0 1 2.0 t", "second column must be Q0 or 0, found 'd1' (columns shifted?)"),
        ("q1 q0 d1 1 2.0 t", "second column must be Q0 or 0, found 'q0' (columns shifted?)"),
        ("q1 Q0 d1 1.0 2.0 t", "rank '1.0' is not an integer"),
        ("q1 Q0 d1 first 2.0 t", "rank 'first' is not an integer"),
        ("q1 Q0 d1 99999999999999999999 2.0 t", "rank '99999999999999999999' is not an integer"),  # > 2^63
        ("q1 Q0 d1 1 abc t", "score 'abc' is not a number"),
        ("q1 Q0 d1 1 1,5 t", "score '1,5' is not a number"),
        ("q1 Q0 d1 1 NaN t", "score 'NaN' is NaN"),
        ("q1 Q0 d1 1 nan t", "score 'nan' is NaN"),
        ("q1 Q0 d1 t 2.0 1", "rank 't' is not an integer"),  # rank and tag swapped
    ],
)
def test_run_problems(line: str, problem: str) -> None:
    frame = run(f"q1 Q0 d0 1 9.0 t\n{line}\n")
    bad = frame.filter(pl.col("problem").is_not_null())
    assert bad.select("source_line", "problem").rows() == [(2, problem)]


def test_run_first_failing_check_wins() -> None:
    # Bad second column AND bad rank AND bad score: the column check comes first.
    row = only_row(run("q1 X d1 r s t\n"))
    assert row["problem"] == "second column must be Q0 or 0, found 'X' (columns shifted?)"


# -- raise_first_problem ---------------------------------------------------------------------------------------------


def test_raise_first_problem_names_source_earliest_line_and_count() -> None:
    frame = run("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 x 1.0 t\nq1 Q0 d3 3 abc t\n")
    with pytest.raises(InputError) as caught:
        raise_first_problem(frame.select("source_line", "problem"), "run.txt")
    error = caught.value
    # Lines 2 and 3 are bad; line 2 is reported, line 3 counted.
    assert str(error) == "run.txt, line 2: rank 'x' is not an integer (1 more bad lines)"
    assert (error.source, error.line, error.problem) == ("run.txt", 2, "rank 'x' is not an integer (1 more bad lines)")


def test_raise_first_problem_single_bad_line_has_no_count() -> None:
    frame = qrels("q1 0 d1 1\nq1 0 d2 x\n")
    with pytest.raises(InputError, match=r"^qrels\.txt, line 2: grade 'x' is not an integer$"):
        raise_first_problem(frame.select("source_line", "problem"), "qrels.txt")


def test_raise_first_problem_is_silent_on_good_input() -> None:
    frame = qrels("q1 0 d1 1\n\n# c\nq1 0 d2 0\n")
    raise_first_problem(frame.select("source_line", "problem"), "qrels.txt")


def test_swapped_arguments_get_a_hint() -> None:
    from judged.transforms.parse import SWAPPED_HINT

    run_line = pl.LazyFrame({"line_number": [1], "line": ["q1 Q0 d1 1 3.0 seed"]})
    (problem,) = parse_trec_qrels(run_line).collect()["problem"]
    assert problem == f"expected 4 columns `qid iter docid grade`, found 6: this looks like a run; {SWAPPED_HINT}"
    qrels_line = pl.LazyFrame({"line_number": [1], "line": ["q1 0 d1 3"]})
    (problem,) = parse_trec_run(qrels_line).collect()["problem"]
    assert problem == f"expected 6 columns `qid Q0 docid rank score tag`, found 4: this looks like qrels; {SWAPPED_HINT}"
    from judged.transforms.errors import InputError
    from judged.transforms.parse import without_order_hint

    error = without_order_hint(InputError("run.txt", problem, 1, more=2))
    assert str(error) == "run.txt, line 1: expected 6 columns `qid Q0 docid rank score tag`, found 4: this looks like " \
                         "qrels (2 more bad lines)"
    five = pl.LazyFrame({"line_number": [1], "line": ["q1 0 d1 3 x"]})
    assert parse_trec_qrels(five).collect()["problem"][0] == "expected 4 columns `qid iter docid grade`, found 5"


def _parquet_run(**columns: Any) -> pl.LazyFrame:
    base: dict[str, Any] = {"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d1"], "score": [2.0, 1.0, 0.5]}
    return pl.LazyFrame(base | columns)


@pytest.mark.parametrize(
    ("columns", "found"),
    [
        ({}, 0),
        ({"doc_id": ["d1", None, "d1"]}, 1),
        ({"query_id": [None, "q1", "q2"]}, 1),
        ({"score": [2.0, float("nan"), 0.5]}, 1),
        ({"score": [2.0, float("-inf"), None]}, 1),
        ({"doc_id": [None, "d2", "d1"], "score": [float("inf"), 1.0, 0.5]}, 2),
        ({"score": pl.Series([2, 1, 0], dtype=pl.Int16), "rank": pl.Series([1, 2, 1], dtype=pl.UInt32)}, 0),
    ],
)
def test_the_problem_probe_finds_a_row_exactly_when_conform_run_names_one(columns: dict, found: int) -> None:
    table = _parquet_run(**columns)
    probe = run_problem_probe(table)
    assert probe is not None
    assert probe.collect().height == found
    problems = conform_run(table, "run.parquet").filter(pl.col("problem").is_not_null()).collect()
    assert (problems.height > 0) == (found > 0)


@pytest.mark.parametrize(
    "columns",
    [
        {"rank": pl.Series([1, 2, 1], dtype=pl.UInt64)},  # may not fit the contract's Int64
        {"run_tag": pl.Series([b"a", b"b", b"c"], dtype=pl.Binary)},  # may not be text
        {"doc_id": pl.Series([1, 2, 1], dtype=pl.Int64)},  # cast to text
    ],
)
def test_no_probe_where_a_cast_of_conform_run_could_fail(columns: dict) -> None:
    assert run_problem_probe(_parquet_run(**columns)) is None
