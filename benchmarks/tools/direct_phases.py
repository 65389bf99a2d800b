"""`judged evaluate` on the direct path, with the wall and CPU seconds, page faults and RSS of each of its phases on
stderr: the imports, the start of the inputs' hashes, each input's read (the CSV pieces and the blank check within
it), the plan, the candidates, the per-query rows (the nDCG intervals within them), the summary and the writer.

Usage: `python benchmarks/tools/direct_phases.py evaluate QRELS RUN --preset trec_eval --cutoffs 10 --format json`
(any arguments of `judged`; stdout is the command's own). CPU is the whole process's (`time.process_time`: every
thread, the hash's included), so a phase's CPU counts what ran beside it; the phases of a phase are indented under
it. The command runs as `judged` runs it (`tune_process` first); each phase is timed by wrapping the function that
does it, once the engine is imported, so the imports and the hashes start where the command starts them.
benchmarks/README.md ("The direct path with JSON output at M") shows the figures.
"""

from __future__ import annotations

import functools
import importlib
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

STARTED = time.perf_counter(), time.process_time()

# (module, function, phase name): each call of the function is one phase.
PHASES = (
    ("judged.flows.store.readers", "load_table", "read and check an input"),
    ("judged.flows.store.readers", "_read_csv_in_pieces", "CSV pieces"),
    ("judged.flows.store.reading_pass", "blank_in_slices", "blank check"),
    ("judged.flows.engine.evaluate", "evaluate", "evaluate"),
    ("judged.flows.engine.evaluate", "plan", "plan"),
    ("judged.flows.engine.evaluate", "may_repeat_documents", "judgments: repeats?"),
    ("judged.flows.engine.evaluate", "checked_candidates", "candidates (top k, checks)"),
    ("judged.flows.engine.evaluate", "per_query_measures", "per-query plan (lazy)"),
    ("judged.transforms.intervals", "intervals_of_worlds", "nDCG interval kernel"),
    ("judged.flows.engine.evaluate", "assemble", "summary"),
    ("judged.flows.engine.ties", "with_tie_warning", "tie warning"),
    ("judged.flows.report.text", "as_json", "JSON writer"),
    ("judged.flows.report.text", "as_trec", "trec lines writer"),
)

# (start seconds, depth, name, wall seconds, CPU seconds, page faults, RSS MiB at the end)
measured: list[tuple[float, int, str, float, float, int, float]] = []
_depth = [0]


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def _record(name: str, depth: int, wall: float, cpu: float, faults: int) -> None:
    measured.append((wall - STARTED[0], depth, name, time.perf_counter() - wall, time.process_time() - cpu,
                     _faults() - faults, _rss_mib()))


def _timed(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def phase(*args: Any, **kwargs: Any) -> Any:
        depth, _depth[0] = _depth[0], _depth[0] + 1
        wall, cpu, faults = time.perf_counter(), time.process_time(), _faults()
        try:
            return function(*args, **kwargs)
        finally:
            _depth[0] -= 1
            _record(name, depth, wall, cpu, faults)

    return phase


def _wrap_engine() -> None:
    """Imports the engine as `evaluate` does, timed, and wraps the functions of `PHASES` (where this checkout has
    them). readers.py takes `blank_in_slices` by name: its own reference is wrapped too."""
    wall, cpu, faults = time.perf_counter(), time.process_time(), _faults()
    for module in ("judged.flows.engine.evaluate", "judged.flows.store.readers", "judged.flows.report.text",
                   "judged.flows.engine.ties", "judged.transforms.intervals"):
        importlib.import_module(module)
    _record("import the engine", 0, wall, cpu, faults)
    for module_name, function, name in PHASES:
        module = sys.modules[module_name]
        if hasattr(module, function):
            setattr(module, function, _timed(getattr(module, function), name))
    readers, reading_pass = sys.modules["judged.flows.store.readers"], sys.modules["judged.flows.store.reading_pass"]
    readers.blank_in_slices = reading_pass.blank_in_slices  # type: ignore[attr-defined]


def _wrap_hashing() -> None:
    """The evaluate command starts the hashes, then imports the engine: the engine is wrapped right after."""
    hashing = importlib.import_module("judged.flows.store.hashing")
    for name in ("hash_in_background", "hashes_on_demand"):
        start_hashes = getattr(hashing, name)

        def started(paths: Any, start_hashes: Callable[..., Any] = start_hashes) -> Any:
            wall, cpu, faults = time.perf_counter(), time.process_time(), _faults()
            futures = start_hashes(paths)
            _record("start the hashes", 0, wall, cpu, faults)
            _wrap_engine()
            return futures

        setattr(hashing, name, started)


def main() -> None:
    wall, cpu, faults = time.perf_counter(), time.process_time(), _faults()
    cli = importlib.import_module("judged.flows.cli.app")
    importlib.import_module("judged.flows.cli")
    _record("import the command line", 0, wall, cpu, faults)
    _wrap_hashing()
    cli.tune_process()
    sys.argv = ["judged", *sys.argv[1:]]
    wall, cpu, faults = time.perf_counter(), time.process_time(), _faults()
    try:
        cli.app(standalone_mode=False)
    except SystemExit:
        pass
    finally:
        sys.stdout.flush()
        _record("the command", 0, wall, cpu, faults)
        for start, depth, name, seconds, cpu_seconds, page_faults, rss in sorted(measured):
            print(f"{start:6.3f} {'  ' * depth}{name:<{34 - 2 * depth}} wall {seconds:6.3f}  CPU {cpu_seconds:6.3f}  "
                  f"faults {page_faults:7d}  RSS {rss:5.0f} MiB", file=sys.stderr)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(f"process: wall {time.perf_counter() - STARTED[0]:.3f} s, CPU {time.process_time() - STARTED[1]:.3f} s "
              f"(user {usage.ru_utime:.3f}, system {usage.ru_stime:.3f}), {usage.ru_minflt} page faults, peak RSS "
              f"{usage.ru_maxrss / 1024:.0f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
