"""Message wording: plurals, throughput units, articles, and the statement names of `judged sql` refusals."""

from __future__ import annotations

import duckdb
import pytest

from judged.flows.store.sql import statement_keyword
from judged.flows.report.wording import counted, rows_per_second, with_article


@pytest.mark.parametrize(
    "count, noun, expected",
    [(0, "file", "0 files"), (1, "file", "1 file"), (2, "query", "2 queries"), (1, "query", "1 query"),
     (3, "evaluation", "3 evaluations"), (2, "day", "2 days")],
)
def test_counted(count: int, noun: str, expected: str) -> None:
    assert counted(count, noun) == expected


@pytest.mark.parametrize(
    "rows, seconds, expected",
    [(3, 0.05, "60 rows/s"),  # the seed: never "(0.00M rows/s)"
     (45_000, 1.5, "30.0k rows/s"), (2_280_000, 1.0, "2.28M rows/s")],
)
def test_rows_per_second_in_a_unit_that_shows_digits(rows: int, seconds: float, expected: str) -> None:
    assert rows_per_second(rows, seconds) == expected


@pytest.mark.parametrize(
    "word, expected",
    [("CREATE", "a CREATE"), ("ATTACH", "an ATTACH"), ("INSTALL", "an INSTALL"), ("UPDATE", "an UPDATE"),
     ("USE", "a USE"), ("EXPORT", "an EXPORT"), ("LOAD", "a LOAD")],
)
def test_with_article(word: str, expected: str) -> None:
    assert with_article(word) == expected


@pytest.mark.parametrize(
    "sql, keyword",
    [("INSTALL httpfs", "INSTALL"), ("force  install httpfs", "FORCE INSTALL"), ("LOAD httpfs", "LOAD"),
     ("-- a comment\n  attach 'x.duckdb'", "ATTACH"), ("/* c */ COPY (SELECT 1) TO 'x.csv'", "COPY")],
)
def test_statement_keyword_is_what_the_author_wrote(sql: str, keyword: str) -> None:
    (statement,) = duckdb.connect().extract_statements(sql)
    assert statement_keyword(statement) == keyword
