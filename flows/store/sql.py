"""Read-only SQL over the warehouse's views, locked down and bounded, for analysts and `judged sql`.

Belongs here: opening the warehouse's views on a locked-down connection, refusing every statement that is not a
query (with DuckDB's own parser), and running a query within a time, memory and row limit. The view definitions
themselves are `transforms/views.sql`.

Why spilling is off: DuckDB adds its temporary folder (`.tmp` in the current folder by default) to the allowed
directories when external access is turned off, which would open the current folder's `.tmp/` to reading. With no
temporary folder nothing is added; the settings are read back after the lockdown and the connection is refused
unless the warehouse is the only place it may read. A FIFO, socket or device inside the warehouse would block a read
that no time limit can stop (an open() of a FIFO waits for a writer before DuckDB's interrupt is checked), so a
warehouse holding one, or a link, is refused: judged writes regular files and folders only.

Why a statement filter and not only DuckDB's lockdown: `allowed_directories` grants writing as well as reading, and
the warehouse has to be readable, so a `COPY ... TO '<warehouse>/...'` would pass the lockdown. Every statement is
therefore parsed by DuckDB and only SELECT-type statements run (DESCRIBE, SUMMARIZE, SHOW and FROM-first queries
are SELECTs to DuckDB's parser); EXPLAIN and EXPLAIN ANALYZE only over a statement that is itself one SELECT.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from judged.flows.store.warehouse import Store, views_sql
from judged.flows.report.wording import with_article
from judged.schemas.spec import NumericRange

DEFAULT_TIMEOUT_SECONDS = 60.0
# A day: a timer thread cannot wait for an unbounded time.
MAX_TIMEOUT_SECONDS = 86_400
TIMEOUT_SECONDS = NumericRange(0, MAX_TIMEOUT_SECONDS, integer=False, low_excluded=True)
DEFAULT_ROW_LIMIT = 10_000
# The rows printed are held in memory, outside DuckDB's memory limit: ten million bounds them.
ROW_LIMIT = NumericRange(1, 10_000_000, integer=True)
DEFAULT_MEMORY_LIMIT = "2GB"
# DuckDB's size syntax: a number and a unit (KB, MB, GB, TB, or KiB, MiB, GiB, TiB).
MEMORY_LIMIT_PATTERN = re.compile(r"^\s*[0-9]+(\.[0-9]+)?\s*([KMGT]i?B)\s*$", re.IGNORECASE)
_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?:ANALY[SZ]E\s+)?(?P<statement>.*)$", re.IGNORECASE | re.DOTALL)


class QueryRefused(ValueError):
    """A statement `judged sql` does not run, one DuckDB's lockdown refused, or one stopped at a limit."""


@dataclass(frozen=True)
class QueryLimits:
    """What one `judged sql` call may use: wall time, memory, and rows returned (more are cut, and said so)."""

    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    row_limit: int = DEFAULT_ROW_LIMIT
    memory_limit: str = DEFAULT_MEMORY_LIMIT

    def __post_init__(self) -> None:
        TIMEOUT_SECONDS.check(self.timeout_seconds, "--timeout")  # SpecError, a ValueError
        ROW_LIMIT.check(self.row_limit, "--limit")
        if not MEMORY_LIMIT_PATTERN.match(self.memory_limit):
            raise ValueError(f"--memory-limit must be a size such as 2GB or 512MiB, not {self.memory_limit!r}")


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False  # more rows than the row limit: only the first ones are here


def open_readonly(warehouse: Store, memory_limit: str = DEFAULT_MEMORY_LIMIT) -> duckdb.DuckDBPyConnection:
    """The warehouse's views on an in-memory connection built for this warehouse's own files (so a copied or
    moved warehouse answers from its files): external access off except the warehouse directory, a memory limit,
    configuration locked."""
    if not warehouse.catalog.exists():
        raise QueryRefused(f"{warehouse.catalog}: no catalog here; ingest or evaluate something first")
    refuse_special_files(warehouse)
    connection = duckdb.connect(":memory:")
    allowed = str(warehouse.root) + "/"
    try:
        connection.execute(views_sql(warehouse.root))
        # No temporary folder: DuckDB would add it to the allowed directories (see the module's docstring).
        connection.execute("SET temp_directory = ''")
        # The order matters: allowed_directories cannot be set once external access is off.
        connection.execute("SET allowed_directories = [?]", [allowed])
        connection.execute("SET enable_external_access = false")
        connection.execute(f"SET memory_limit = '{memory_limit}'")
        connection.execute("SET lock_configuration = true")
        settings = dict(connection.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN ('allowed_directories', 'allowed_paths', "
            "'enable_external_access', 'temp_directory', 'lock_configuration')").fetchall())
    except duckdb.Error as error:
        connection.close()
        raise QueryRefused(f"{warehouse.root}: cannot open the warehouse's views: {_first_line(error)}") from None
    expected = {"allowed_directories": f"[{allowed}]", "allowed_paths": "[]", "enable_external_access": "false",
                "temp_directory": "", "lock_configuration": "true"}
    if settings != expected:
        connection.close()
        differing = ", ".join(f"{name} = {settings.get(name)!r}" for name in expected
                              if settings.get(name) != expected[name])
        raise QueryRefused(f"{warehouse.root}: the read-only lockdown did not hold ({differing}); refusing to query")
    return connection


def refuse_special_files(warehouse: Store) -> None:
    """QueryRefused naming the first entry of the warehouse that is neither a regular file nor a folder (a FIFO,
    socket, device or link): a read of it could wait forever or leave the warehouse."""
    folders = [warehouse.root]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:  # unreadable folders: DuckDB cannot read them either
            continue
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:  # gone since the listing: a writer renamed or removed it
                continue
            if stat.S_ISDIR(mode):
                folders.append(Path(entry.path))
            elif not stat.S_ISREG(mode):
                kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                        else "a link" if stat.S_ISLNK(mode) else "a device")
                raise QueryRefused(f"{entry.path}: is {kind} inside the warehouse, not a file judged wrote; "
                                   "judged sql reads only regular files: remove it")


def readable_statements(connection: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    """The statements of `sql`, each checked by DuckDB's parser to be a query; QueryRefused names the first that
    is not."""
    statements = _parsed(connection, sql)
    if not statements:
        raise QueryRefused("no statement given")
    for statement in statements:
        if statement.type == duckdb.StatementType.EXPLAIN:
            explained = _EXPLAIN.match(statement.query)
            inner = _parsed(connection, explained["statement"]) if explained else []
            if len(inner) != 1 or inner[0].type != duckdb.StatementType.SELECT:
                what = with_article(statement_keyword(inner[0])) if len(inner) == 1 else "an unparsed"
                raise QueryRefused(f"refused EXPLAIN of {what} statement: judged sql explains a single SELECT only")
        elif statement.type != duckdb.StatementType.SELECT:
            raise QueryRefused(f"refused {with_article(statement_keyword(statement))} statement: "
                               "judged sql runs read-only queries (SELECT) only")
    return [statement.query for statement in statements]


def run_query(warehouse: Store, sql: str, limits: QueryLimits = QueryLimits()) -> QueryResult:
    """Run one or more read-only statements within `limits`; the last one's result is returned (at most
    `limits.row_limit` rows)."""
    connection = open_readonly(warehouse, limits.memory_limit)
    # Interrupting from a timer thread stops any query, including one that never yields a row.
    timer = threading.Timer(limits.timeout_seconds, connection.interrupt)
    try:
        statements = readable_statements(connection, sql)
        timer.start()
        try:
            cursor = None
            for statement in statements:
                cursor = connection.execute(statement)
            if cursor is None or cursor.description is None:
                return QueryResult([], [])
            columns = [column[0] for column in cursor.description]
            rows = cursor.fetchmany(limits.row_limit + 1)
        except duckdb.InterruptException:
            raise QueryRefused(
                f"query stopped at its time limit of {limits.timeout_seconds:g} s (raise it with --timeout)"
            ) from None
        except duckdb.OutOfMemoryException as error:
            raise QueryRefused(
                f"query stopped at its memory limit of {limits.memory_limit} (--memory-limit): {_first_line(error)}"
            ) from None
        except duckdb.Error as error:
            raise QueryRefused(_first_line(error)) from None
        return QueryResult(columns, rows[: limits.row_limit], truncated=len(rows) > limits.row_limit)
    finally:
        timer.cancel()
        connection.close()


_LEADING_KEYWORD = re.compile(r"(?:\s|--[^\n]*\n?|/\*.*?\*/)*(FORCE\s+INSTALL|[A-Za-z_]+)", re.S | re.I)


def statement_keyword(statement: duckdb.Statement) -> str:
    """The statement as its author wrote it (`INSTALL`, `ATTACH`), not DuckDB's statement type, which names
    several statements after one (INSTALL is a LOAD there)."""
    found = _LEADING_KEYWORD.match(statement.query)
    return " ".join(found.group(1).upper().split()) if found else statement.type.name


def _parsed(connection: duckdb.DuckDBPyConnection, sql: str) -> list[Any]:
    try:
        return connection.extract_statements(sql)
    except duckdb.Error as error:
        raise QueryRefused(_first_line(error)) from None


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0]
