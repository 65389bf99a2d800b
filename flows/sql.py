"""Read-only SQL over the warehouse catalog, locked down, for analysts and `judged sql`.

Belongs here: opening the catalog read-only with DuckDB's lockdown settings, refusing anything but queries, and
turning a result into rows. The view definitions themselves are `transforms/views.sql`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import duckdb

from judged.flows.warehouse import Warehouse
from judged.flows.wording import with_article

ALLOWED_STATEMENTS = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


class QueryRefused(ValueError):
    """A statement `judged sql` does not run, or one DuckDB's lockdown refused."""


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def open_readonly(warehouse: Warehouse) -> duckdb.DuckDBPyConnection:
    """The catalog, read-only: external access off except the warehouse directory, configuration locked."""
    if not warehouse.catalog.exists():
        raise QueryRefused(f"{warehouse.catalog}: no catalog here; ingest or evaluate something first")
    connection = duckdb.connect(str(warehouse.catalog), read_only=True)
    allowed = str(warehouse.root).replace("'", "''") + "/"
    # The order matters: allowed_directories cannot be set once external access is off.
    connection.execute(f"SET allowed_directories = ['{allowed}']")
    connection.execute("SET enable_external_access = false")
    connection.execute("SET lock_configuration = true")
    return connection


def run_query(warehouse: Warehouse, sql: str) -> QueryResult:
    """Run one or more read-only statements; the last one's result is returned."""
    connection = open_readonly(warehouse)
    try:
        try:
            statements = connection.extract_statements(sql)
        except duckdb.Error as error:
            raise QueryRefused(_first_line(error)) from None
        if not statements:
            raise QueryRefused("no statement given")
        for statement in statements:
            if statement.type not in ALLOWED_STATEMENTS:
                raise QueryRefused(f"refused {with_article(statement_keyword(statement))} statement: "
                                   "judged sql runs read-only queries (SELECT) only")
        try:
            result = None
            for statement in statements:
                result = connection.sql(statement.query)
            if result is None:
                return QueryResult([], [])
            return QueryResult(list(result.columns), result.fetchall())
        except duckdb.Error as error:
            raise QueryRefused(_first_line(error)) from None
    finally:
        connection.close()


_LEADING_KEYWORD = re.compile(r"(?:\s|--[^\n]*\n?|/\*.*?\*/)*(FORCE\s+INSTALL|[A-Za-z_]+)", re.S | re.I)


def statement_keyword(statement: duckdb.Statement) -> str:
    """The statement as its author wrote it (`INSTALL`, `ATTACH`), not DuckDB's statement type, which names
    several statements after one (INSTALL is a LOAD there)."""
    found = _LEADING_KEYWORD.match(statement.query)
    return " ".join(found.group(1).upper().split()) if found else statement.type.name


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0]
