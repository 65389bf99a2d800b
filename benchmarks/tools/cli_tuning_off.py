"""The `judged` command with one of its process-wide tunings switched off, to measure what each one pays.

Usage: `TUNING_OFF=NAME python benchmarks/tools/cli_tuning_off.py evaluate ...`, NAME one of `none` (every tuning
on, as `judged` runs), `arenas` (jemalloc's default arena count instead of one per core), `exit-freeze` (no
`gc.freeze` at exit) and `early-hash` (each input hashed only when its hash is asked for, in the main thread,
instead of in a thread started before the engine's imports). benchmarks/README.md shows the alternated runs.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

OFF = os.environ.get("TUNING_OFF", "none")
if OFF not in ("none", "arenas", "exit-freeze", "early-hash"):
    sys.exit(f"cli_tuning_off: TUNING_OFF must be none, arenas, exit-freeze or early-hash, not {OFF!r}")

import judged.flows.cli.app as cli  # noqa: E402  (it loads neither Polars nor the engine)

if OFF == "early-hash":
    import judged.flows.store.hashing as hashing

    hashing.hash_in_background = hashing.hashes_on_demand
# What `cli.tune_process` does, less the tuning switched off.
if OFF != "arenas":
    os.environ["_RJEM_MALLOC_CONF"] = cli.allocator_options(os.environ.get("_RJEM_MALLOC_CONF", ""), os.cpu_count() or 1)
if OFF != "exit-freeze":
    atexit.register(gc.freeze)
sys.argv[0] = "judged"
cli.app()
