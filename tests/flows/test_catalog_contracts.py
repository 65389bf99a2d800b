"""The catalog's views against their declarations (schemas.tables.VIEWS): every view is declared, its columns are the
declared ones in the declared order, and its DuckDB comments are the declared descriptions. No Prefect needed: the
catalog of an empty warehouse has every view."""

from __future__ import annotations

from pathlib import Path

import duckdb

from judged.flows.store.warehouse import Store
from judged.schemas.tables import VIEWS


def test_views_columns_and_comments_come_from_the_declarations(tmp_path: Path) -> None:
    catalog = Store(tmp_path).refresh_catalog()
    with duckdb.connect(str(catalog), read_only=True) as connection:
        views = dict(connection.sql("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
        assert set(views) == set(VIEWS), "every catalog view needs a declaration in schemas/tables.py VIEWS"
        for name, table in VIEWS.items():
            assert views[name] == f"One row per {table.row} (key: {', '.join(table.primary_key)}): {table.description}."
            columns = connection.sql(
                "SELECT column_name, comment FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
                params=[name],
            ).fetchall()
            assert [c for c, _ in columns] == list(table.columns), name
            expected = [column.description + (" (nullable)" if column.nullable else "") for column in table.columns.values()]
            assert [comment for _, comment in columns] == expected, name
