"""The `judged` command with one of its process-wide tunings switched off, to measure what each one pays.

Usage: `TUNING_OFF=NAME python benchmarks/tools/cli_tuning_off.py evaluate ...`, NAME one of `none` (every tuning
on, as `judged` runs), `arenas` (jemalloc's default arena count instead of one per core), `decay` (Polars' 0.5 s
before jemalloc gives freed pages back, instead of 5 s), `exit-freeze` (no `gc.freeze` at exit), `blas-threads`
(OpenBLAS's own thread count instead of one) and `early-hash` (each input hashed only when its hash is asked for,
in the main thread, instead of in a thread started before the engine's imports; with a warehouse, each file hashed
by the reading pass that needs it, as it reads the file).
benchmarks/README.md shows the alternated runs.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys

OFF = os.environ.get("TUNING_OFF", "none")
if OFF not in ("none", "arenas", "decay", "exit-freeze", "blas-threads", "early-hash"):
    sys.exit(f"cli_tuning_off: TUNING_OFF must be none, arenas, decay, exit-freeze, blas-threads or early-hash, not "
             f"{OFF!r}")

# The command line's module (the package's `app` is the Typer application); it loads neither Polars nor the engine.
cli = importlib.import_module("judged.flows.cli.app")

if OFF == "early-hash":
    import judged.flows.store.hashing as hashing

    hashing.hash_in_background = hashing.hashes_on_demand
    hashing.hash_ahead = lambda paths: None
# What `cli.tune_process` does, less the tuning switched off.
leave_out = {"arenas": ("narenas",), "decay": ("dirty_decay_ms",)}.get(OFF, ())
os.environ["_RJEM_MALLOC_CONF"] = cli.allocator_options(os.environ.get("_RJEM_MALLOC_CONF", ""), os.cpu_count() or 1,
                                                        leave_out)
if OFF != "blas-threads":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
if OFF != "exit-freeze":
    atexit.register(gc.freeze)
sys.argv[0] = "judged"
cli.app()
