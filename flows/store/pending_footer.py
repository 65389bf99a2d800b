"""A Parquet file written before one of its key-value metadata values is known, and that value filled in later.

Belongs here, and only here: the one place that edits a Parquet file's footer. A run's part files carry the run's
record in their metadata (`judged.record`), which holds what only the end of the file says (the row and query
counts, the shard count). A run stored in the same pass that reads its text (flows/store/warehouse.py,
`OnePassShards`) writes each part as soon as its rows are read, with a unique placeholder as that value
(`pending_value`), and `fill_pending_value` puts the record in its place once it is known: holding the parts until
then would hold the whole run in memory, and rewriting them would write every part twice.

Why this gives the bytes a direct write gives: a Parquet file is its row groups, then its footer (the Thrift
compact encoding of `FileMetaData`), the footer's length (4 bytes, little-endian) and `PAR1`. The key-value
metadata are strings in the footer, each a varint length and its bytes; the row groups come before the footer and
every offset in the footer points into them. So replacing the placeholder's length and bytes by the value's, and
rewriting the length that follows, gives exactly the file Polars writes with the value in the first place
(tests/flows/test_pending_footer.py checks it byte for byte).
"""

from __future__ import annotations

import os
import struct
import uuid
from pathlib import Path

_TAIL = 8  # the footer's length (4 bytes) and the magic `PAR1`
_MAGIC = b"PAR1"


def pending_value() -> str:
    """A placeholder no real value holds (a fresh uuid behind a NUL byte), to be written where a value will be."""
    return f"\x00judged-pending-{uuid.uuid4().hex}"


def fill_pending_value(path: Path, placeholder: str, value: str) -> None:
    """Put `value` where `placeholder` is in the key-value metadata of the Parquet file at `path`: the footer is
    rewritten after the row groups, which stay as they are. A RuntimeError when the footer does not hold the
    placeholder exactly once as a whole string (a file this module did not prepare)."""
    with path.open("r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(size - _TAIL, 0))
        tail = handle.read(_TAIL)
        if size < len(_MAGIC) + _TAIL or tail[4:] != _MAGIC:
            raise RuntimeError(f"{path}: not a Parquet file (no PAR1 at its end)")
        footer_length = struct.unpack("<I", tail[:4])[0]
        footer_start = size - _TAIL - footer_length
        if footer_start < len(_MAGIC):
            raise RuntimeError(f"{path}: not a Parquet file (its footer's length runs past its start)")
        handle.seek(footer_start)
        footer = handle.read(footer_length)
        old = _thrift_string(placeholder)
        if footer.count(old) != 1:
            raise RuntimeError(f"{path}: the footer does not hold the pending value once")
        filled = footer.replace(old, _thrift_string(value))
        handle.seek(footer_start)
        handle.write(filled + struct.pack("<I", len(filled)) + _MAGIC)
        handle.truncate()


def _thrift_string(text: str) -> bytes:
    """A string as Thrift's compact protocol writes it: its UTF-8 length as a varint, then its bytes."""
    data = text.encode()
    length, prefix = len(data), bytearray()
    while length >= 0x80:
        prefix.append(length & 0x7F | 0x80)
        length >>= 7
    prefix.append(length)
    return bytes(prefix) + data
