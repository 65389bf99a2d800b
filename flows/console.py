"""The `judged` console script: what runs before the command line loads, then the command line (flows/cli/).

Belongs here: only what must start before `judged.flows.cli` is imported. Loading Typer, pydantic and the spec
models keeps one core busy and leaves the other idle; `judged evaluate` starts hashing its inputs first
(flows/store/hashing.py, `hash_ahead`), so that the hash of a large run takes that idle core instead of the cores
Polars parses on later (benchmarks/README.md, "The command line's tunings"). Nothing heavy is imported here.
"""

from __future__ import annotations

import sys
from pathlib import Path


def inputs_hashed_ahead(args: list[str]) -> list[Path]:
    """The files whose hashes `judged evaluate` will need, as far as its arguments tell before Typer reads them:
    every argument that names a regular file, unless the output is trec_eval's lines (which show no evaluation id,
    so nothing is hashed). A file named for another reason (an option's value) is hashed for nothing, never taken
    for another: a hash started ahead is only given to the file it was made of (`hashing.hash_in_background`)."""
    if not args or args[0] != "evaluate":
        return []
    output_format = None
    for index, arg in enumerate(args):  # the last `--format` given is the one Typer keeps
        if arg == "--format" and index + 1 < len(args):
            output_format = args[index + 1]
        elif arg.startswith("--format="):
            output_format = arg.removeprefix("--format=")
    if output_format == "trec":
        return []
    return [Path(arg) for arg in args[1:] if not arg.startswith("-") and Path(arg).is_file()]


def main() -> None:
    """The console script's entry point."""
    from judged.flows.store.hashing import hash_ahead

    hash_ahead(inputs_hashed_ahead(sys.argv[1:]))
    from judged.flows.cli import main as command_line

    command_line()
