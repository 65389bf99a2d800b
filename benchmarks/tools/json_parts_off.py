"""The `judged` command with parts of what its JSON output promises switched off, to measure what each costs.

Usage: `PARTS_OFF=NAMES python benchmarks/tools/json_parts_off.py evaluate ...`, NAMES a comma-separated list of
`hash` (the inputs' content hashes replaced by constants, none started: the evaluation id then names no real
input), `intervals` (`evaluate(..., intervals=False)`, as `--format trec` runs it) and `kernel` (the nDCG interval
kernel, `intervals_of_worlds`, replaced by a stub that gives every world [0, 1]), or `none` (the console script as
`judged` runs it). The output is wrong on purpose whenever a part is off: this is for timing only.
benchmarks/README.md ("The direct path with JSON output at M") shows the alternated runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

PARTS = ("hash", "intervals", "kernel")
OFF = {name for name in os.environ.get("PARTS_OFF", "none").split(",") if name != "none"}
if not OFF <= set(PARTS):
    sys.exit(f"json_parts_off: PARTS_OFF must be none or names among {', '.join(PARTS)}, not "
             f"{sorted(OFF - set(PARTS))}")

import judged.flows.store.hashing as hashing  # noqa: E402
from judged.flows.console import inputs_hashed_ahead, main  # noqa: E402

if "hash" in OFF:

    def constant_hashes(paths: Iterable[Path]) -> dict[Path, Future[tuple[str, str]]]:
        futures: dict[Path, Future[tuple[str, str]]] = {}
        for path in paths:
            futures[path] = Future()
            futures[path].set_result(("0" * 64, "0" * 64))
        return futures

    hashing.hash_in_background = constant_hashes
    hashing.hash_ahead = lambda paths: None
else:  # as the console script starts them, before anything below loads (its `main` then finds them started)
    hashing.hash_ahead(inputs_hashed_ahead(sys.argv[1:]))

# The command line's process-wide tunings, applied before the patches below load Polars (which reads its
# allocator's options once); `main` applies them again, which adds nothing.
from judged.flows.cli.app import tune_process  # noqa: E402

tune_process()

if "intervals" in OFF:
    import judged.flows.engine.evaluate as engine

    evaluate_with_intervals = engine.evaluate

    def evaluate_without_intervals(*args: Any, intervals: bool = True, **kwargs: Any) -> Any:
        return evaluate_with_intervals(*args, intervals=False, **kwargs)

    engine.evaluate = evaluate_without_intervals

if "kernel" in OFF:
    import polars as pl

    import judged.transforms.intervals as intervals

    def stub(worlds: pl.Series, zero_if_no_ideal: bool) -> pl.Series:
        n = len(worlds)
        return pl.DataFrame(
            {"value_min": [0.0] * n, "value_max": [1.0] * n, "interval_kind": ["bound"] * n},
            schema={"value_min": pl.Float64, "value_max": pl.Float64, "interval_kind": pl.String},
        ).to_struct(worlds.name)

    intervals.intervals_of_worlds = stub

sys.argv[0] = "judged"
sys.exit(main())
