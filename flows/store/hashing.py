"""Content hashes of input files, computed beside the rest of the work (or only when asked for).

Belongs here: hashing a file's bytes (and its decompressed content) and running that in a background thread. No
Polars and nothing heavy is imported here, so the command line can start hashing its inputs before it loads the
engine: the hash of a large run then takes the core that imports leave idle.
"""

from __future__ import annotations

import gzip
import hashlib
import stat
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 1 << 23


def is_gzipped(path: Path) -> bool:
    """Whether the file's bytes are gzip (its magic number, whatever its name says)."""
    with path.open("rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def content_hashes(path: Path) -> tuple[str, str]:
    """(source sha256, content sha256): of the bytes as stored, and of the content once decompressed (a gzipped
    file and its plain text have the same content hash). hashlib releases the GIL while it hashes."""
    # One reused buffer: each 8 MB read takes the GIL back once (fewer handoffs with the main thread than reads
    # into new bytes objects), and the file's pages never count in this process's memory (a mapped file would add
    # its whole size to the peak while the hash runs).
    buffer = bytearray(_BLOCK)
    view = memoryview(buffer)
    source = hashlib.sha256()
    with path.open("rb", buffering=0) as handle:
        while size := handle.readinto(buffer):
            source.update(view[:size])
    if not is_gzipped(path):
        return source.hexdigest(), source.hexdigest()
    content = hashlib.sha256()
    with gzip.open(path, "rb") as handle:
        while size := handle.readinto(buffer):
            content.update(view[:size])
    return source.hexdigest(), content.hexdigest()


# Hashes started ahead (`hash_ahead`), by file identity (path, device, inode, size, modification time), each
# until a reading pass takes it (`hash_in_background`). A long-lived process keeps the last few.
_AHEAD: dict[tuple[object, ...], Future[tuple[str, str]]] = {}
_AHEAD_KEPT = 8
_AHEAD_LOCK = threading.Lock()


def file_identity(path: Path) -> tuple[object, ...] | None:
    """A regular file's identity, as this process tells an unchanged file from a changed one (its path, device,
    inode, size and modification time); None for anything else, or a path that is gone."""
    try:
        status = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    return str(path.resolve()), status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _in_background(paths: Iterable[Path]) -> dict[Path, Future[tuple[str, str]]]:
    """Hash the files among `paths`, one after another, in one daemon thread: a command that ends first (a usage
    error found once its inputs' hashes have started, or a `--help`) does not wait at exit for hashes nobody takes."""
    futures: dict[Path, Future[tuple[str, str]]] = {path: Future() for path in paths if path.is_file()}

    def hash_each() -> None:
        for path, future in futures.items():
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(content_hashes(path))
            except BaseException as error:  # raised again to whoever takes the hash
                future.set_exception(error)

    if futures:
        threading.Thread(target=hash_each, name="judged-hash", daemon=True).start()
    return futures


def hash_in_background(paths: Iterable[Path]) -> dict[Path, Future[tuple[str, str]]]:
    """Start hashing the files among `paths` (one after another, in one thread); the futures by path. A file whose
    hash was started ahead (`hash_ahead`) and that is unchanged since takes that hash instead, once. Folders and
    missing paths are left out: whoever opens them reports the problem."""
    paths = list(paths)
    taken: dict[Path, Future[tuple[str, str]]] = {}
    with _AHEAD_LOCK:
        for path in paths:
            key = file_identity(path)
            if key is not None and key in _AHEAD:
                taken[path] = _AHEAD.pop(key)
    return taken | _in_background(path for path in paths if path not in taken)


def hash_ahead(paths: Iterable[Path]) -> None:
    """Start hashing the files among `paths` now, for this process's reading passes to take later
    (`hash_in_background`): a command that hashes its inputs before it imports the engine uses the core the imports
    leave idle. A file whose hash was started ahead already, and is unchanged since, is not hashed again."""
    # Each file's identity is taken before its hash starts: a file changed after that is not taken as it was.
    with _AHEAD_LOCK:
        identities = {path: key for path in paths if (key := file_identity(path)) is not None and key not in _AHEAD}
    futures = _in_background(identities)
    with _AHEAD_LOCK:
        for path, future in futures.items():
            _AHEAD[identities[path]] = future
        while len(_AHEAD) > _AHEAD_KEPT:
            del _AHEAD[next(iter(_AHEAD))]


class _HashesOnDemand(Future[tuple[str, str]]):
    """A file's `content_hashes`, computed in the caller's thread by the first `result()` call."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._path = path
        self._computing = threading.Lock()

    def result(self, timeout: float | None = None) -> tuple[str, str]:
        with self._computing:
            if not self.done():
                self.set_result(content_hashes(self._path))
        return super().result(timeout)


def hashes_on_demand(paths: Iterable[Path]) -> dict[Path, Future[tuple[str, str]]]:
    """Like `hash_in_background`, but each file is hashed only if and when its hashes are asked for: for output
    that shows no identity (trec_eval-style lines), where the hash of a large run would only take a core away
    from the work."""
    return {path: _HashesOnDemand(path) for path in paths if path.is_file()}


def known_hashes(source_sha256: str, content_sha256: str) -> Future[tuple[str, str]]:
    """Hashes already known (a stored table's record), in the form `hash_in_background` gives."""
    future: Future[tuple[str, str]] = Future()
    future.set_result((source_sha256, content_sha256))
    return future
