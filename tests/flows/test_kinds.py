"""The registry of table kinds (flows/store/kinds.py) against the store and the catalog that read it."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import polars as pl
import pytest

from judged.flows.store.kinds import INPUT_KINDS, KINDS, STORED_TABLES, Kind, Layout, input_kind, kind_named
from judged.flows.store.warehouse import Store
from judged.schemas.tables import VIEW_ONLY_COLUMNS, VIEWS, Table

VIEWS_SQL = resources.files("judged.transforms").joinpath("views.sql").read_text()
# `CREATE VIEW name AS SELECT ... FROM read_parquet({glob}...) [AS x SEMI JOIN record USING (id)];`
VIEW = re.compile(
    r"CREATE VIEW (?P<name>\w+) AS\s+SELECT [^;]*?read_parquet\(\{(?P<glob>\w+)\}[^;]*?"
    r"(?:SEMI JOIN (?P<record>\w+) USING \((?P<id>\w+)\))?;",
    re.S,
)
STORED_VIEWS = {m["name"]: m for m in VIEW.finditer(VIEWS_SQL) if m["glob"]}


def test_every_kinds_folders_exist_after_ensure(tmp_path: Path) -> None:
    store = Store(tmp_path / "warehouse").ensure()
    for kind in KINDS.values():
        for table in kind.tables:
            assert (store.root / table.name).is_dir(), table.name
            empty = pl.read_parquet(store.root / table.empty_file)
            assert empty.height == 0 and empty.schema == table.schema, table.name


@pytest.mark.parametrize("kind", KINDS.values(), ids=list(KINDS))
def test_every_views_glob_finds_its_kinds_files_and_no_others(tmp_path: Path, kind: Kind) -> None:
    root = tmp_path / "warehouse"
    Store(root).ensure()
    written = {}
    for table in kind.tables:
        path = table.path(root, "0123abcd")
        if table.layout is Layout.PARTS:
            path = path / "part-0000-of-0001.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pl.DataFrame(schema=table.schema).write_parquet(path)
        written[table.name] = path
    for table in STORED_TABLES.values():
        found = [path for path in root.glob(table.glob) if "_empty" not in path.as_posix()]
        assert found == ([written[table.name]] if table.name in written else []), table.name


def test_the_catalog_has_a_view_per_stored_table_on_its_glob_joined_to_its_kinds_record() -> None:
    assert set(STORED_VIEWS) == set(STORED_TABLES)
    # The views not over files of their own: the judged rows, and the results on the newest judgment versions.
    assert set(VIEWS) - set(STORED_TABLES) == {
        "judged_run_rows", "latest_judgment_sets", "latest_summary", "latest_per_query"
    }
    for kind in KINDS.values():
        assert STORED_VIEWS[kind.record.name]["record"] is None, kind.name
        for table in kind.parts:
            view = STORED_VIEWS[table.name]
            assert view["glob"] == table.name
            assert (view["record"], view["id"]) == (kind.record.name, kind.id_column), table.name


def _view_of(contract: Table) -> Table:
    """The view declared for a stored table: its contract itself, or the contract with the catalog's own columns
    (VIEW_ONLY_COLUMNS) behind the stored ones."""
    view = VIEWS[contract.name]
    if view is contract:
        return view
    assert list(view.columns) == [*contract.columns, *VIEW_ONLY_COLUMNS], contract.name
    assert all(view.columns[name] == column for name, column in contract.columns.items()), contract.name
    assert (view.row, view.primary_key, view.description) == (contract.row, contract.primary_key, contract.description)
    return view


def test_the_id_column_is_in_every_contract_of_its_kind() -> None:
    for kind in KINDS.values():
        if kind.id_column is None:
            assert kind.parts == (), f"{kind.name}: parts need an id column to be joined to their record"
            continue
        for table in kind.tables:
            assert kind.id_column in table.schema, (kind.name, table.name)
            assert _view_of(table.contract) is VIEWS[table.name], table.name
        assert kind.id_column in kind.record.contract.primary_key, kind.name


def test_the_input_kinds_are_the_readers_kinds() -> None:
    assert set(INPUT_KINDS) == {"judgments", "run"}
    for name, kind in INPUT_KINDS.items():
        assert input_kind(name) is kind and kind_named(kind) is kind
        assert kind.value_column in kind.input_contract.schema
        assert set(kind.input_contract.schema) <= set(kind.rows.schema)
    with pytest.raises(ValueError, match="not a kind of input"):
        input_kind("evaluation")
    with pytest.raises(ValueError, match="not a kind of stored table"):
        kind_named("evaluations")


def test_a_kind_without_parts_has_no_rows_folder() -> None:
    with pytest.raises(ValueError, match="keeps its rows in its record"):
        kind_named("worklist").rows_folder
