"""The catalog's views against their declarations (schemas.tables.VIEWS): every view is declared, its columns are the
declared ones in the declared order, and its DuckDB comments are the declared descriptions. No Prefect needed: the
catalog of an empty warehouse has every view. A refresh with nothing new to write leaves the catalog as it is."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import judged.flows.store.warehouse as warehouse_module
from judged.flows.store.readers import load_table
from judged.flows.store.warehouse import CATALOG_MARK, Store
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


def _identity(path: Path) -> tuple[int, int, int]:
    status = path.stat()
    return status.st_ino, status.st_size, status.st_mtime_ns


def test_a_catalog_built_from_the_same_views_is_kept_and_sees_tables_stored_after_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "w")
    catalog = store.refresh_catalog()
    built = _identity(catalog)
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 tag\nq1 Q0 d2 2 1.0 tag\n")
    run_id = store.store_table(load_table(run, "run")).id
    assert store.refresh_catalog() == catalog and _identity(catalog) == built  # nothing new to write
    with duckdb.connect(str(catalog), read_only=True) as connection:
        connection.execute(f"SET file_search_path = '{store.root}'")
        assert connection.sql(f"SELECT count(*) FROM run_rows WHERE run_id = '{run_id}'").fetchall() == [(2,)]


def test_a_catalog_changed_since_or_built_from_other_views_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "w")
    catalog = store.refresh_catalog()
    with duckdb.connect(str(catalog)) as connection:  # an analyst's own view, written into the file
        connection.execute("CREATE VIEW mine AS SELECT 1 AS one")
    store.refresh_catalog()
    with duckdb.connect(str(catalog), read_only=True) as connection:
        assert "mine" not in {name for (name,) in connection.sql("SELECT view_name FROM duckdb_views()").fetchall()}
    built = _identity(catalog)
    assert _identity(store.refresh_catalog()) == built
    monkeypatch.setattr(warehouse_module, "views_sql", lambda: "CREATE VIEW other AS SELECT 2 AS two;")
    store.refresh_catalog()
    with duckdb.connect(str(catalog), read_only=True) as connection:
        assert connection.sql("SELECT * FROM other").fetchall() == [(2,)]
    (store.root / CATALOG_MARK).unlink()
    monkeypatch.undo()
    store.refresh_catalog()  # no mark: built again, with the real views
    with duckdb.connect(str(catalog), read_only=True) as connection:
        assert set(VIEWS) <= {name for (name,) in connection.sql("SELECT view_name FROM duckdb_views()").fetchall()}
