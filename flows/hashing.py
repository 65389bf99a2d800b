"""Content hashes of input files, computed beside the rest of the work.

Belongs here: hashing a file's bytes (and its decompressed content) and running that in a background thread. No
Polars and nothing heavy is imported here, so the command line can start hashing its inputs before it loads the
engine: the hash of a large run then takes the core that imports leave idle.
"""

from __future__ import annotations

import gzip
import hashlib
import mmap
import os
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 1 << 22


def is_gzipped(path: Path) -> bool:
    """Whether the file's bytes are gzip (its magic number, whatever its name says)."""
    with path.open("rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def content_hashes(path: Path) -> tuple[str, str]:
    """(source sha256, content sha256): of the bytes as stored, and of the content once decompressed (a gzipped
    file and its plain text have the same content hash). hashlib releases the GIL while it hashes."""
    with path.open("rb") as handle:
        # One update over the mapped file: the GIL is let go once for the whole hash instead of being taken back
        # for every block read while the main thread imports (done 50 ms sooner at 265 MB). mmap refuses 0 bytes.
        if os.fstat(handle.fileno()).st_size == 0:
            source = hashlib.sha256()
        else:
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                source = hashlib.sha256(mapped)
    if not is_gzipped(path):
        return source.hexdigest(), source.hexdigest()
    content = hashlib.sha256()
    with gzip.open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            content.update(block)
    return source.hexdigest(), content.hexdigest()


def _lowest_priority() -> None:
    """The hashing thread takes the cores the work leaves idle (imports, single-threaded steps) rather than a share
    of the ones a parse keeps busy: it asks for the lowest priority, which Linux sets per thread."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):  # elsewhere: an ordinary thread
        pass


def hash_in_background(paths: Iterable[Path]) -> dict[Path, Future[tuple[str, str]]]:
    """Start hashing the files among `paths` (one after another, in one low-priority thread); the futures by path.
    Folders and missing paths are left out: whoever opens them reports the problem."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judged-hash", initializer=_lowest_priority)
    futures = {path: pool.submit(content_hashes, path) for path in paths if path.is_file()}
    pool.shutdown(wait=False)
    return futures


def known_hashes(source_sha256: str, content_sha256: str) -> Future[tuple[str, str]]:
    """Hashes already known (a stored table's record), in the form `hash_in_background` gives."""
    future: Future[tuple[str, str]] = Future()
    future.set_result((source_sha256, content_sha256))
    return future
