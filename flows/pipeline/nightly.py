"""The nightly job's inbox protocol: which run files wait, how one nightly process claims a file so that no other
handles it, takes over the claims of processes that died, and sets a handled file aside (processed/ or rejected/).

Belongs here: the inbox's folders and claim files, plain functions on paths (no Prefect); the `nightly` flow that
follows this protocol is in flows/pipeline/flows.py.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from judged.flows.pipeline.evaluation import EvaluationReport
from judged.flows.store.readers import SIDECAR_SUFFIX
from judged.flows.store.warehouse import hold_lock, now_utc
from judged.transforms.errors import InputError

PROCESSED = "processed"
REJECTED = "rejected"
# Files a nightly process is handling: <inbox>/.claimed/<claim id>/<file>, held by a lock on <claim id>.lock.
CLAIMED = ".claimed"
# In a claim folder, made just before the claim's run is stored: whether the warehouse already had that run. A
# rerun after a kill that came after the store reads it, so the file's outcome is the one the first attempt saw.
RUN_WAS_NEW, RUN_WAS_STORED = ".run-was-new", ".run-was-already-stored"


@dataclass(frozen=True)
class NightlyReport:
    flow_run_id: str
    evaluated: list[EvaluationReport]
    rejected: dict[str, str]  # file -> error
    ignored: dict[str, str] = field(default_factory=dict)  # inbox entry -> why it is not a run file (left in place)
    report: str | None = None  # the night's HTML report (absolute path); None when nothing was evaluated


def prepare_inbox(inbox: Path) -> list[Path]:
    """Create the inbox and its processed/ and rejected/ folders where missing; returns those it created."""
    for folder in (inbox, inbox / PROCESSED, inbox / REJECTED):
        if folder.exists() and not folder.is_dir():
            raise InputError(str(folder), "is a file, not a folder: the inbox and its processed/ and rejected/ "
                                          "must be folders")
    created = []
    for folder in (inbox, inbox / PROCESSED, inbox / REJECTED):
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            created.append(folder)
    return created


def inbox_files(inbox: Path) -> list[Path]:
    """Run files waiting in the inbox (sidecars travel with their file; processed/, rejected/ and the claims of
    running nightlies are folders)."""
    return sorted(p for p in inbox.iterdir() if p.is_file() and not p.name.endswith(SIDECAR_SUFFIX)
                  and not p.name.startswith("."))


def ignored_inbox_entries(inbox: Path) -> dict[str, str]:
    """What lies in the inbox but is no run file the night takes, and why (left where it is): a folder other than
    processed/ and rejected/, a FIFO, a socket or a device. Hidden entries (the claims) and sidecars are the night's
    own and not listed."""
    ignored = {}
    for entry in sorted(inbox.iterdir()):
        if entry.name.startswith(".") or entry.name in (PROCESSED, REJECTED) or entry.name.endswith(SIDECAR_SUFFIX):
            continue
        if entry.is_dir():
            ignored[entry.name] = "a folder, not a run file: runs are files dropped in the inbox itself"
        elif not entry.is_file():
            ignored[entry.name] = "not a regular file (a FIFO, socket or device): a run is a regular file"
    return ignored


@dataclass(frozen=True)
class Claim:
    """A run file one nightly process has taken from the inbox: `<inbox>/.claimed/<id>/<file>`, held by a lock
    on `<id>.lock` until it is set aside (or the process ends, however it ends: then another takes it over)."""

    id: str
    file: Path
    lock: BinaryIO

    @property
    def folder(self) -> Path:
        return self.file.parent

    def release(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.with_name(f"{self.id}.lock").unlink(missing_ok=True)
        self.lock.close()


def claimed_files(inbox: Path) -> Iterator[Claim]:
    """The inbox's files, each claimed by this process just before it is handled: first the claims of nightly
    processes that died (their lock is free), then waiting files, each taken by renaming it into a claim folder of
    our own. A file another process renamed first is theirs: it is skipped, never handled twice."""
    claims = inbox / CLAIMED
    while True:
        claim = _take_over_dead_claim(claims) or _claim_waiting_file(inbox, claims)
        if claim is None:
            return
        yield claim


def run_was_new(claim_folder: Path) -> bool | None:
    """Whether the claim's run was new to the warehouse when the claim first came to store it; None before that."""
    if (claim_folder / RUN_WAS_NEW).exists():
        return True
    return False if (claim_folder / RUN_WAS_STORED).exists() else None


def _take_over_dead_claim(claims: Path) -> Claim | None:
    if not claims.is_dir():
        return None
    for folder in sorted(p for p in claims.iterdir() if p.is_dir()):
        lock = hold_lock(folder.with_name(f"{folder.name}.lock"))
        if lock is None:
            continue  # a live nightly is handling it
        files = sorted(p for p in folder.iterdir()
                       if not p.name.endswith(SIDECAR_SUFFIX) and not p.name.startswith("."))
        if not files:  # its file was already set aside (the file moves last) when its process died
            Claim(folder.name, folder / "-", lock).release()
            continue
        # A process killed between claiming the file and its sidecar left the sidecar in the inbox.
        _move_if_present(claims.parent / f"{files[0].name}{SIDECAR_SUFFIX}", folder)
        return Claim(folder.name, files[0], lock)
    return None


def _claim_waiting_file(inbox: Path, claims: Path) -> Claim | None:
    for path in inbox_files(inbox):
        claim_id = uuid.uuid4().hex
        claims.mkdir(exist_ok=True)
        lock = hold_lock(claims / f"{claim_id}.lock")
        if lock is None:
            continue
        claim = Claim(claim_id, claims / claim_id / path.name, lock)
        claim.folder.mkdir()
        try:
            os.rename(path, claim.file)
        except FileNotFoundError:  # another nightly claimed it first
            claim.release()
            continue
        _move_if_present(path.with_name(path.name + SIDECAR_SUFFIX), claim.folder)
        return claim
    return None


def _move_if_present(path: Path, folder: Path) -> None:
    try:
        os.rename(path, folder / path.name)
    except FileNotFoundError:
        pass


def free_target(path: Path, folder: Path) -> Path:
    """Where `path` goes in `folder`: its own name, or, when that is taken, its name with the time added."""
    target = folder / path.name
    if target.exists():
        target = folder / f"{path.stem}.{now_utc().strftime('%Y%m%dT%H%M%S%f')}{path.suffix}"
    return target


def set_aside(path: Path, target: Path, error: str | None = None) -> Path:
    """Move a processed or rejected file (and its sidecar) out of the inbox to `target` (see `free_target`); a
    rejected one gets its error beside it. The file moves last: while it is where it was, a rerun after a kill
    finishes setting it aside."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
    if sidecar.exists():
        shutil.move(sidecar, target.with_name(target.name + SIDECAR_SUFFIX))
    if error is not None:
        target.with_name(target.name + ".error.txt").write_text(error + "\n")
    shutil.move(path, target)
    return target

