"""`judged show` by a unique prefix of the evaluation id; an ambiguous or unknown prefix is a one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from judged.flows.store.warehouse import Store
from judged.transforms.errors import InputError


def warehouse_with(tmp_path: Path, *ids: str) -> Store:
    folder = tmp_path / "evaluations"
    folder.mkdir(parents=True)
    for name in (*ids, "_empty"):
        (folder / f"{name}.parquet").write_bytes(b"")
    return Store(tmp_path)


def test_unique_prefix_and_full_id(tmp_path: Path) -> None:
    store = warehouse_with(tmp_path, "abc123", "abd456")
    assert store.resolve_evaluation("abc") == "abc123"
    assert store.resolve_evaluation("abd456") == "abd456"


def test_ambiguous_prefix_lists_the_candidates(tmp_path: Path) -> None:
    store = warehouse_with(tmp_path, "abc123", "abd456")
    with pytest.raises(InputError) as raised:
        store.resolve_evaluation("ab")
    assert str(raised.value) == (f"{tmp_path}: the prefix 'ab' matches 2 evaluations: abc123, abd456; "
                                 "give more of the id")


@pytest.mark.parametrize("prefix", ["zz", "", "_e"])
def test_unknown_prefix(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(InputError, match="no evaluation with id or id prefix"):
        warehouse_with(tmp_path, "abc123").resolve_evaluation(prefix)
