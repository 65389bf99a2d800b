"""Table contracts declared once (schemas.tables): the Polars and Arrow schemas, the validation and the table
of views all come from the declarations, and the validation lists every mismatch rather than the first."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pytest

from judged.schemas import tables
from judged.schemas.tables import (
    JUDGMENTS_TABLE,
    PER_QUERY_TABLE,
    STORED_PER_QUERY_TABLE,
    VIEWS,
    Column,
    ContractError,
    Table,
    views_markdown,
)
from tests.conftest import REPO


def test_the_polars_schemas_are_the_declarations() -> None:
    assert tables.JUDGMENTS == {name: column.dtype for name, column in JUDGMENTS_TABLE.columns.items()}
    assert tables.STORED_PER_QUERY == STORED_PER_QUERY_TABLE.schema
    # A stored table is its input's columns with the stored keys around them, in that order.
    assert list(tables.RUN_ROWS) == ["run_id", *tables.RUN, "bucket", "position", "query_rows"]
    assert list(tables.STORED_PER_QUERY)[-len(tables.PER_QUERY):] == list(tables.PER_QUERY)


def test_every_column_has_a_one_line_description_and_every_table_a_key() -> None:
    for table in VIEWS.values():
        assert table.row and table.description and table.primary_key, table.name
        for name, column in table.columns.items():
            assert column.description and "\n" not in column.description, (table.name, name)


def test_the_arrow_schema_carries_nullability_and_descriptions() -> None:
    schema = JUDGMENTS_TABLE.arrow_schema()
    assert schema.names == list(JUDGMENTS_TABLE.columns)
    assert schema.field("relevance").nullable and not schema.field("query_id").nullable
    assert schema.field("relevance").type == pa.int32() and schema.field("query_id").type in (pa.string(), pa.large_string(), pa.string_view())
    assert schema.field("relevance").metadata[b"description"].startswith(b"the judged grade")
    status = PER_QUERY_TABLE.arrow_schema().field("status")
    assert pa.types.is_dictionary(status.type) and not status.nullable


def test_validation_lists_every_mismatch() -> None:
    frame = pl.DataFrame(
        {
            "query_id": ["q1", "q1", None],
            "doc_id": ["a", "b", "c"],
            "relevance": [1, None, 2],  # Int64, declared Int32
            "source_line": [1, 1, 2],  # a repeated key
            "note": ["x", "y", "z"],  # undeclared
        }
    )
    problems = JUDGMENTS_TABLE.problems(frame)
    assert problems == [
        "missing column(s) ['iteration']",
        "undeclared column(s) ['note']",
        "column 'query_id' has 1 null(s), declared not nullable",
        "column 'relevance' is Int64, declared Int32",
        "2 rows repeat a primary key ['source_line']",
    ]
    with pytest.raises(ContractError, match="^judgments: missing column"):
        JUDGMENTS_TABLE.validate(frame)
    good = pl.DataFrame({"query_id": ["q1"], "iteration": [None], "doc_id": ["a"], "relevance": [None],
                         "source_line": [1]}, schema=JUDGMENTS_TABLE.schema_for(()))
    assert JUDGMENTS_TABLE.validate(good) is good  # nulls only where declared nullable
    reordered = good.select("doc_id", "query_id", "iteration", "relevance", "source_line")
    assert JUDGMENTS_TABLE.problems(reordered) == [
        "columns in the order ['doc_id', 'query_id', 'iteration', 'relevance', 'source_line'], declared "
        "['query_id', 'iteration', 'doc_id', 'relevance', 'source_line']"
    ]


def test_an_optional_column_may_be_absent_and_when_present_keys_its_rows() -> None:
    # A set that names no assessor has no `assessor` column; one that does is checked with it, in its place.
    one = pl.DataFrame({"query_id": ["q1", "q1"], "iteration": ["0", "0"], "doc_id": ["a", "a"],
                        "relevance": [1, 2], "source_line": [1, 2]}, schema=JUDGMENTS_TABLE.schema_for(()))
    assert JUDGMENTS_TABLE.problems(one) == []
    two = pl.DataFrame({"query_id": ["q1", "q1"], "iteration": ["0", "0"], "doc_id": ["a", "a"],
                        "relevance": [1, 2], "assessor": ["x", "y"], "source_line": [1, 1]},
                       schema=JUDGMENTS_TABLE.schema)
    assert JUDGMENTS_TABLE.problems(two) == []  # one line number in each assessor's file
    assert JUDGMENTS_TABLE.problems(two.with_columns(assessor=pl.lit("x"))) == [
        "2 rows repeat a primary key ['assessor', 'source_line']"
    ]
    assert JUDGMENTS_TABLE.problems(two.select("assessor", *tables.JUDGMENTS_TABLE.schema_for(()))) == [
        "columns in the order ['assessor', 'query_id', 'iteration', 'doc_id', 'relevance', 'source_line'], declared "
        "['query_id', 'iteration', 'doc_id', 'relevance', 'assessor', 'source_line']"
    ]
    with pytest.raises(ValueError, match=r"optional column\(s\) \['id'\] are not nullable"):
        Table("t", "thing", {"id": Column(pl.String(), "its id")}, (), optional=("id",))


def test_a_declaration_names_its_key_among_its_columns() -> None:
    with pytest.raises(ValueError, match=r"primary key column\(s\) \['id'\] are not declared"):
        Table("t", "thing", {"name": Column(pl.String(), "its name")}, ("id",))
    with pytest.raises(ValueError, match="are nullable"):
        Table("t", "thing", {"id": Column(pl.String(), "its id", nullable=True)}, ("id",))


def test_the_docs_table_of_views_is_the_declarations() -> None:
    page = (REPO / "docs" / "warehouse.md").read_text()
    assert views_markdown() in page
    assert page.count("| view | one row per |") == 1
