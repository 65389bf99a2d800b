"""The floor under storing a run on this machine: the CPU seconds of the work that any store of it must do, each
measured alone in this one process, and the most rows per second they leave room for.

    python benchmarks/store_floor.py [--size L] [--input text|parquet] [--data-dir /tmp/judged-bench] [--cores N]

On the harness's generated run (benchmarks/generate.py; generated when missing), its text (the store's throughput
target) or its Parquet file (what the harness's flow stores), with judged's own code for each step:
- parse: the run read once into typed rows by the reader the store uses (Polars' streaming CSV or Parquet reader,
  in batches), the rows then dropped;
- spill: what storing in bounded memory adds. A shard holds queries from the whole file, so no shard can be
  written before the last line is read, and the rows do not fit in memory (about 1.5 GiB as Polars holds them at
  49M rows, against 2 GiB for the whole store): each row goes to its shard's spill file and is read back
  (`spill_by_shard` reads the run again, so its figure is given less the parse's);
- order and duplicates: each shard put in stored order and its duplicate pairs counted, as the store does
  (`stored_order_counted`: a shard whose queries are in rank order is not sorted);
- write: each shard's Parquet file written from rows already in stored order (`write_stored_part`).

The read-and-write floor is (parse + write) CPU seconds spread perfectly over the cores: no store can be faster,
whatever its checks, order or duplicate counts cost. The order floor adds the order and duplicates as the store
makes them: no store by position (no spill) with judged's order can be faster. The bounded-memory floor adds the
spill to the read-and-write floor. They are the bounds the store's own figure (`judged ingest-run --profile`, the
harness's judged-ingest) is to be read against. Prints one line per step and the bounds in rows per second.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polars as pl  # noqa: E402

from benchmarks.generate import SIZES, generate  # noqa: E402
from judged.flows.store.readers import load_table  # noqa: E402
from judged.flows.engine.limits import DEFAULT_LIMITS  # noqa: E402
from judged.flows.store.warehouse import (  # noqa: E402
    read_spilled, spill_by_shard, spilled_shards, stored_order_counted, write_stored_part,
)
from judged.transforms.shards import query_buckets, shard_count  # noqa: E402

DEFAULT_DATA_DIR = Path(tempfile.gettempdir()) / "judged-bench"
# The run id's width: the stored rows carry it on every row.
RUN_ID = "0" * 32


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Steps:
    """Wall and CPU seconds per named step, summed over the times it is measured."""

    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = {}

    @contextmanager
    def measure(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), cpu_seconds()
        try:
            yield
        finally:
            spent = self.seconds.setdefault(name, [0.0, 0.0])
            spent[0] += time.perf_counter() - wall
            spent[1] += cpu_seconds() - cpu


def measure_floor(run: Path, scratch: Path, steps: Steps) -> int:
    """Measure each step on the `run` file (spill files under `scratch`); returns the run's rows."""
    table = load_table(run, "run")
    n_rows = table.counts["n_rows"]
    rows = table.scan
    with steps.measure("parse"):
        for _batch in rows.collect_batches(chunk_size=DEFAULT_LIMITS.sink_batch_rows, engine="streaming"):
            pass
    shards = shard_count(n_rows, DEFAULT_LIMITS.rows_per_shard)
    buckets = query_buckets(table.query_rows.lazy() if table.query_rows is not None else rows).collect()
    spill, written = scratch / "spill", scratch / "parts"
    written.mkdir(parents=True)
    with steps.measure("spill, with its parse"):
        spill_by_shard(rows, buckets, shards, spill)
    for shard in spilled_shards(spill):
        with steps.measure("spill read back"):
            # With the run id, as the store adds it; one chunk a column, as a store by position cuts its shards.
            part = read_spilled(spill, shard).select(pl.lit(RUN_ID).alias("run_id"), pl.all()).rechunk()
        with steps.measure("order and duplicates"):
            stored, _ = stored_order_counted(part)
        with steps.measure("write"):
            write_stored_part(stored, written / f"{shard}.parquet", {})
    return n_rows


def report(steps: Steps, n_rows: int, cores: int, print_line: Callable[[str], None] = print) -> None:
    seconds = steps.seconds
    parse_cpu = seconds["parse"][1]
    spill_cpu = seconds["spill, with its parse"][1] - parse_cpu + seconds["spill read back"][1]
    for name, (wall, cpu) in seconds.items():
        print_line(f"{name}: {wall:.2f} s wall, {cpu:.2f} s CPU")
    print_line(f"spill alone (less its parse, with its read back): {spill_cpu:.2f} s CPU")
    floors = {
        "read-and-write floor (parse + write)": parse_cpu + seconds["write"][1],
        "order floor (parse + order and duplicates + write)":
            parse_cpu + seconds["order and duplicates"][1] + seconds["write"][1],
        "bounded-memory floor (parse + spill + write)": parse_cpu + spill_cpu + seconds["write"][1],
    }
    for name, cpu in floors.items():
        wall = cpu / cores
        print_line(f"{name}: {cpu:.2f} s CPU = {wall:.2f} s on {cores} cores at best = "
                   f"{n_rows / wall / 1e6:.2f}M rows/s at most ({n_rows:,} rows)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=list(SIZES), default="L")
    parser.add_argument("--input", choices=["text", "parquet"], default="text")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1,
                        help="cores the CPU seconds are spread over (default: this machine's)")
    args = parser.parse_args(argv)
    if args.input == "text" and not SIZES[args.size].text_run:
        parser.error(f"size {args.size} has no text run; use --input parquet")
    inputs = args.data_dir / args.size
    generate(args.size, inputs)
    run = inputs / ("run.txt" if args.input == "text" else "run.parquet")
    scratch = Path(tempfile.mkdtemp(prefix="judged-store-floor-"))
    steps = Steps()
    try:
        n_rows = measure_floor(run, scratch, steps)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"size {args.size}, {run.name}, polars {pl.__version__}, {os.cpu_count()} cores on this machine")
    report(steps, n_rows, args.cores)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
