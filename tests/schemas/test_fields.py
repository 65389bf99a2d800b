"""Fields declared once (schemas/fields.py): every column of every declared table is a registered field, with the
registry's dtype and description unless its table overrides them; no description is missing or restated; and no
module outside schemas/ declares a column name, a list of them or a schema of its own."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from judged.schemas.fields import FIELDS, Field, _registry
from judged.schemas.tables import DECLARED, VIEWS, Override, Table, columns_of
from tests.conftest import REPO

PACKAGES = ("flows", "transforms")
# Module-level constants whose value happens to equal a field's name without naming a column.
NOT_COLUMNS = {("flows/api.py", "UNNAMED_RUN")}  # a run's display name when it has none ("run")


def test_every_column_is_its_registered_field_or_its_tables_override() -> None:
    for table in DECLARED:
        for name, column in table.columns.items():
            assert name in FIELDS, f"{table.name}.{name} is not registered in schemas/fields.py"
            registered, override = FIELDS[name], table.overrides.get(name)
            if override is None:
                assert (column.dtype, column.description) == (registered.dtype, registered.description), (table.name, name)
            else:
                assert column.description == override.description, (table.name, name)
                assert column.dtype == (override.dtype or registered.dtype), (table.name, name)


def declared_descriptions() -> list[tuple[str, str]]:
    """(where, text) of every description declared: each registered field's, each override's once (a table made
    by extending another shares its overrides, the same declaration)."""
    found = [(f"field {name}", field.description) for name, field in FIELDS.items()]
    overrides: dict[int, tuple[str, str]] = {}
    for table in DECLARED:
        for name, override in table.overrides.items():
            overrides.setdefault(id(override), (f"{table.name}.{name} override", override.description))
    return found + list(overrides.values())


def test_no_description_is_missing_or_restated() -> None:
    declared = declared_descriptions()
    missing = [where for where, text in declared if not text.strip() or "\n" in text]
    assert not missing, f"missing or not one line: {missing}"
    counts = Counter(text for _, text in declared)
    restated = {text: [where for where, t in declared if t == text] for text, n in counts.items() if n > 1}
    assert not restated, f"declared twice (say it once, or say what differs): {restated}"
    for table in DECLARED:
        for name, column in table.columns.items():
            assert column.description.strip(), (table.name, name)


def test_every_registered_field_is_a_column_of_some_table() -> None:
    used = {name for table in DECLARED for name in table.columns}
    assert set(FIELDS) - used == set()


def test_every_view_is_declared_and_every_table_once() -> None:
    assert all(table in DECLARED for table in VIEWS.values())
    assert len({id(table) for table in DECLARED}) == len(DECLARED)


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="'query_id' is registered twice"):
        _registry(Field("query_id", pl.String(), "a query"), Field("query_id", pl.String(), "another query"))


def test_a_table_lists_registered_fields_only() -> None:
    with pytest.raises(ValueError, match=r"\['no_such_field'\] are not registered"):
        columns_of(["query_id", "no_such_field"])
    with pytest.raises(ValueError, match=r"\['score'\] are not among the columns"):
        columns_of(["query_id"], nullable=["score"])
    with pytest.raises(ValueError, match="listed twice"):
        columns_of(["query_id", "query_id"])
    with pytest.raises(ValueError, match="listed again"):
        Table.of_fields("t", "thing", ["query_id"], ("query_id",), "a table").extended(
            "u", "thing", ("query_id",), before=["query_id"])
    table = Table.of_fields("t", "thing", ["query_id", "score"], ("query_id",), "a table", nullable=["score"],
                            overrides={"score": Override("a score of this table", pl.Float32())})
    assert table.schema == {"query_id": pl.String(), "score": pl.Float32()} and table.nullable == ("score",)
    assert table.columns["score"].description == "a score of this table"


def module_constants(path: Path) -> list[tuple[str, list[str]]]:
    """(name, the column names it spells) of each module-level constant whose value is a field's name, a list,
    tuple or set of them, or a dict keyed by them (a schema)."""
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(value, ast.Constant):
            items = [value]
        elif isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            items = value.elts
        elif isinstance(value, ast.Dict):
            items = value.keys
        else:
            continue
        # Names among the items are other constants (`[QUERY, "doc_id"]`): the spelled ones decide.
        names = [item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)]
        others = [item for item in items if not isinstance(item, ast.Constant | ast.Name)]
        if names and not others and len(names) == sum(isinstance(i, ast.Constant) for i in items) \
                and all(name in FIELDS for name in names):
            found.append((ast.unparse(target), names))
    return found


def test_module_constants_find_column_names_and_schemas(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text('QUERY = "query_id"\nPAIR = [QUERY, "doc_id"]\nKEYS = ("query_id", "doc_id")\n'
                      'SCHEMA: dict = {"query_id": pl.String(), "doc_id": pl.String()}\nLABEL = "a run"\n'
                      'def f():\n    keys = ["query_id"]\n')
    assert module_constants(module) == [("QUERY", ["query_id"]), ("PAIR", ["doc_id"]), ("KEYS", ["query_id", "doc_id"]),
                                        ("SCHEMA", ["query_id", "doc_id"])]


def test_no_module_outside_schemas_declares_columns() -> None:
    declared = []
    for path in sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py")):
        where = str(path.relative_to(REPO))
        declared += [f"{where}: {name} = {names}" for name, names in module_constants(path)
                     if (where, name) not in NOT_COLUMNS]
    assert not declared, f"import column names and schemas from judged.schemas (fields, tables): {declared}"
