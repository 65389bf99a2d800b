"""Where a user-named output file may go (flows/store/outputs.py): never inside a warehouse, whether it has its
catalog yet or only its layout, through a symbolic link too; never over a file unless forced, nor over a folder
or a special file; written whole, and never over a file that appears while it is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from judged.flows.store.outputs import check_output_target, replace_atomically, write_output_file
from judged.flows.store.warehouse import Store
from judged.transforms.errors import InputError, UsageError


@pytest.fixture()
def warehouse(tmp_path: Path) -> Path:
    """A warehouse's layout without its catalog, as `Store.ensure` leaves it before the first refresh."""
    return Store(tmp_path / "warehouse").ensure().root


def test_a_path_inside_a_warehouse_is_refused_with_or_without_its_catalog(warehouse: Path, tmp_path: Path) -> None:
    for path in (warehouse / "report.html", warehouse / "summary" / "x" / "part-0.parquet", warehouse / "a" / "b"):
        with pytest.raises(UsageError, match="--out is inside the warehouse"):
            check_output_target(path, force=True)
    (warehouse / "catalog.duckdb").write_bytes(b"views")
    link = tmp_path / "link.html"
    link.symlink_to(warehouse / "catalog.duckdb")
    with pytest.raises(UsageError, match="--out is inside the warehouse"):
        write_output_file(link, "<html>", force=True)
    assert (warehouse / "catalog.duckdb").read_bytes() == b"views" and link.is_symlink()


def test_the_warehouse_a_command_is_about_to_make_counts_already(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="inside the warehouse"):
        check_output_target(tmp_path / "new" / "report.html", warehouse=tmp_path / "new")
    check_output_target(tmp_path / "report.html", warehouse=tmp_path / "new")


def test_existing_files_folders_and_special_files(tmp_path: Path) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_text("mine\n")
    with pytest.raises(UsageError, match="already exists: give --force"):
        write_output_file(mine, "new\n")
    assert mine.read_text() == "mine\n"
    assert write_output_file(mine, "new\n", force=True).read_text() == "new\n"
    with pytest.raises(UsageError, match="is a folder"):
        check_output_target(tmp_path, force=True)
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UsageError, match="not a regular file"):
        check_output_target(tmp_path / "pipe", force=True)
    with pytest.raises(UsageError, match="cannot be written: .* is not a folder"):
        check_output_target(mine / "below.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt", "pipe"]  # no temporary file left


def test_a_file_that_appears_meanwhile_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    check_output_target(target)
    target.write_text("theirs\n")  # between the check and the write
    with pytest.raises(FileExistsError):
        replace_atomically(target, "ours\n", replace=False)
    assert target.read_text() == "theirs\n" and sorted(tmp_path.iterdir()) == [target]


def test_new_folders_are_made_and_a_failed_write_names_the_file(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.txt"
    assert write_output_file(target, "text\n").read_text() == "text\n"
    with pytest.raises(InputError, match="out.txt: --out already exists"):
        write_output_file(target, "again\n")
