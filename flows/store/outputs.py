"""Files written where the user says (`report --out`, `worklist --out`): checked before anything is stored, then
written whole under a temporary name beside the target and renamed into place.

Belongs here: where an output file may go (never inside a warehouse, never over a file judged did not make unless
the caller forces it, never over a folder or a special file) and the one atomic write of such a file. What is
written is the caller's; a warehouse's own files are written by flows/store/warehouse.py.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

from judged.flows.store.kinds import STORED_TABLES
from judged.flows.store.warehouse import CATALOG
from judged.transforms.errors import InputError, UsageError


def is_warehouse(folder: Path) -> bool:
    """Whether `folder` holds a judged warehouse: its catalog, or the empty file each table's view resolves to
    (written by `Store.ensure` before the first catalog)."""
    if (folder / CATALOG).exists():
        return True
    return any((folder / table.empty_file).exists() for table in STORED_TABLES.values())


def enclosing_warehouse(path: Path) -> Path | None:
    """The warehouse `path` lies in (itself or any folder above it, symbolic links followed), else None."""
    resolved = path.resolve()
    for folder in (resolved, *resolved.parents):
        if folder.is_dir() and is_warehouse(folder):
            return folder
    return None


def check_output_target(
    path: Path, force: bool = False, option: str = "--out", warehouse: Path | None = None
) -> None:
    """Raise a UsageError naming `option` and `path` unless `path` can take a new output file: not inside a
    warehouse (nor inside `warehouse`, the one the command writes, which may not exist yet), not a folder or
    special file, not an existing file unless `force`, in a folder that exists (or can be made) and can be
    written."""
    if warehouse is not None and path.resolve().is_relative_to(warehouse.resolve()):
        warehouse = warehouse.resolve()
    else:
        warehouse = enclosing_warehouse(path)
    if warehouse is not None:
        raise UsageError(str(path), f"{option} is inside the warehouse {warehouse}: write outputs outside any "
                                    "warehouse (its files are judged's own)")
    if path.is_dir():
        raise UsageError(str(path), f"{option} is a folder: give a file name")
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise UsageError(str(path), f"{option} is not a regular file: give a file name")
        if not force:
            raise UsageError(str(path), f"{option} already exists: give --force to replace it, or another name")
    existing = path.absolute().parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(str(path), f"{option} cannot be written: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(str(path), f"{option} cannot be written: {existing} is not writable")
    refused = creation_refused(existing)
    if refused:
        raise UsageError(str(path), f"{option} cannot be written: no file can be made in {existing} ({refused})")


def creation_refused(folder: Path) -> str | None:
    """Why no new entry can be made in `folder` (an existing folder), or None: a file made and removed at once.
    Permission bits do not tell everything: root passes `os.access` everywhere, and /proc, /sys or a read-only mount
    refuse a new file anyway."""
    try:
        handle, name = tempfile.mkstemp(prefix=".judged-write-check-", dir=folder)
    except OSError as error:
        return error.strerror or str(error)
    os.close(handle)
    os.unlink(name)
    return None


def replace_atomically(path: Path, text: str, replace: bool = True) -> Path:
    """Write `text` under a temporary name beside `path` and rename it into place: never a half-written file. When
    not `replace`, a file that appeared at `path` meanwhile is kept (FileExistsError)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(temporary, path)
        else:
            _link_new(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def _link_new(temporary: Path, path: Path) -> None:
    """Give `temporary` the name `path` unless that name is taken (FileExistsError): a hard link, atomic, where the
    file system has them; else a rename after a last look."""
    try:
        os.link(temporary, path)
    except FileExistsError:
        raise
    except OSError:
        if path.exists() or path.is_symlink():
            raise FileExistsError(str(path)) from None
        os.replace(temporary, path)


def write_output_file(
    path: Path, text: str, force: bool = False, option: str = "--out", warehouse: Path | None = None
) -> Path:
    """Write a user-named output file: `check_output_target`, then `replace_atomically`. A failed write is an
    InputError naming the path; nothing is left behind."""
    check_output_target(path, force, option, warehouse)
    try:
        return replace_atomically(path, text, replace=force)
    except FileExistsError:
        raise UsageError(str(path), f"{option} already exists: give --force to replace it, or another name") from None
    except OSError as error:
        raise InputError(str(path), f"{option} cannot be written: {error.strerror or error}") from None
