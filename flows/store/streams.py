"""Inputs that are streams: `-` (standard input), /dev/stdin, and pipes such as process substitution
(`judged evaluate qrels.txt <(zcat run.gz)`, a path like /dev/fd/63).

Belongs here: reading each such stream once, into a file of a temporary folder, so that the readers, the format
sniffing and the hashing treat it like any other file (a stream cannot be read twice), and the names that messages
show instead of the temporary file's.
"""

from __future__ import annotations

import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from judged.transforms.errors import InputError

STANDARD_INPUT = ("-", "/dev/stdin")


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
def materialized(paths: list[Path]) -> Iterator[tuple[list[Path], dict[str, str]]]:
    """`paths` with every stream among them copied into a temporary file (removed on exit), and for messages,
    each temporary file's path -> the name the user gave. Standard input can be only one of the inputs."""
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
                if given == "-":
                    with target.open("wb") as sink:
                        shutil.copyfileobj(sys.stdin.buffer, sink, 8 << 20)
                else:
                    with path.open("rb") as source, target.open("wb") as sink:
                        shutil.copyfileobj(source, sink, 8 << 20)
            except OSError as error:
                raise InputError(given, f"cannot read the stream: {error.strerror or error}") from None
            files.append(target)
            names[str(target)] = given
        yield files, names


def shown(message: str, names: dict[str, str]) -> str:
    """A message with each temporary file's path replaced by the name the user gave."""
    for temporary, given in names.items():
        message = message.replace(temporary, given)
    return message
