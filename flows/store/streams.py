"""Inputs that are streams: `-` (standard input), /dev/stdin, and pipes such as process substitution
(`judged evaluate qrels.txt <(zcat run.gz)`, a path like /dev/fd/63).

Belongs here: reading each such stream once, into a file of a temporary folder, so that the readers, the format
sniffing and the hashing treat it like any other file (a stream cannot be read twice), and the names that messages
show instead of the temporary file's. A stream may keep the command waiting (a FIFO nobody writes to yet, a producer
that stalls): after a moment without input one line on stderr says what is awaited, and an optional input timeout
bounds every wait.
"""

from __future__ import annotations

import io
import os
import select
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from judged.schemas.spec import NumericRange
from judged.transforms.errors import InputError

STANDARD_INPUT = ("-", "/dev/stdin")
# How long a stream may be silent before the command says it is waiting for it.
WAITING_NOTICE_SECONDS = 1.0
# --input-timeout: the longest wait for a stream's next bytes (a day at most, as for `judged sql --timeout`).
INPUT_TIMEOUT = NumericRange(0, 86_400, integer=False, low_excluded=True)
_CHUNK = 8 << 20


def is_stream(path: Path) -> bool:
    """Standard input, or a path that is a pipe or a socket (process substitution gives a pipe). A character
    device such as /dev/zero is not read as a stream: it may never end, and `load_table` names it."""
    if str(path) in STANDARD_INPUT:
        return True
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextmanager
def materialized(paths: list[Path], timeout: float | None = None) -> Iterator[tuple[list[Path], dict[str, str]]]:
    """`paths` with every stream among them copied into a temporary file (removed on exit), and for messages,
    each temporary file's path -> the name the user gave. Standard input can be only one of the inputs. `timeout`:
    the longest a stream may go without input (seconds; None: no bound), then an InputError naming it."""
    if sum(str(path) in STANDARD_INPUT for path in paths) > 1:
        raise InputError("-", "standard input can be given for one input only")
    if not any(is_stream(path) for path in paths):
        yield paths, {}
        return
    with tempfile.TemporaryDirectory(prefix="judged-stream-") as folder:
        files, names = [], {}
        for number, path in enumerate(paths):
            if not is_stream(path):
                files.append(path)
                continue
            given = "-" if str(path) in STANDARD_INPUT else str(path)
            target = Path(folder) / f"{number}-{'stdin' if given == '-' else path.name}"
            try:
                with target.open("wb") as sink:
                    if given == "-":
                        _copy_standard_input(sink, timeout)
                    else:
                        # Opened without waiting: the open of a FIFO would otherwise wait for a writer, unbounded.
                        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                        try:
                            copy_waiting(descriptor, sink, given, timeout)
                        finally:
                            os.close(descriptor)
            except OSError as error:
                raise InputError(given, f"cannot read the stream: {error.strerror or error}") from None
            files.append(target)
            names[str(target)] = given
        yield files, names


def _copy_standard_input(sink: BinaryIO, timeout: float | None) -> None:
    try:
        descriptor = sys.stdin.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):  # replaced by an in-memory stream (tests, embedding)
        shutil.copyfileobj(sys.stdin.buffer, sink, _CHUNK)
        return
    copy_waiting(descriptor, sink, "-", timeout)


def copy_waiting(descriptor: int, sink: BinaryIO, given: str, timeout: float | None) -> None:
    """Copy everything `descriptor` yields until its end into `sink`. After WAITING_NOTICE_SECONDS without input
    one line on stderr says the command waits for `given` (once); after `timeout` seconds without input (None: no
    bound) an InputError. poll() waits instead of read(): a FIFO opened before any writer reports nothing until one
    writes or has come and gone (Linux), so a wait for a writer is bounded like any other."""
    poller = select.poll()
    poller.register(descriptor, select.POLLIN | select.POLLPRI)
    last_input = time.monotonic()
    announced = False
    while True:
        now = time.monotonic()
        wakes = [] if announced else [last_input + WAITING_NOTICE_SECONDS]
        if timeout is not None:
            wakes.append(last_input + timeout)
        wait_ms = max(0, round((min(wakes) - now) * 1000)) if wakes else None
        if not poller.poll(wait_ms):
            now = time.monotonic()
            if timeout is not None and now >= last_input + timeout:
                raise InputError(given, f"no input for {timeout:g} s (--input-timeout): nothing was read from it")
            if not announced and now >= last_input + WAITING_NOTICE_SECONDS:
                print(f"judged: waiting for input on {given} ...", file=sys.stderr, flush=True)
                announced = True
            continue
        try:
            chunk = os.read(descriptor, _CHUNK)
        except BlockingIOError:  # woken without bytes to read: wait again
            continue
        if not chunk:
            return
        sink.write(chunk)
        last_input = time.monotonic()


def shown(message: str, names: dict[str, str]) -> str:
    """A message with each temporary file's path replaced by the name the user gave."""
    for temporary, given in names.items():
        message = message.replace(temporary, given)
    return message
