"""Where a warehouse command's time goes, phase by phase: the `judged` command run with the wall time of each flow
task, and of the steps inside them, printed on stderr with the process's CPU time (all its threads) at each line;
and those lines summed into a table of wall and CPU seconds per phase. The command runs with the command line's
process tunings (`tune_process`: its jemalloc options, set before Polars loads), as `judged` runs it.

Usage: `python benchmarks/tools/flow_phases.py run evaluate QRELS RUN --warehouse FRESH ... 2> LOG` (any judged
command line after `run`; the flow's tasks run as they do in `judged`), then `python benchmarks/tools/flow_phases.py
table LOG [LOG ...]` for one column per log. The steps are wrapped by name, so a checkout whose functions moved gives
fewer lines. benchmarks/README.md ("The flow at L, phase by phase"; with CPU, "The flow at L against pytrec_eval and
trec_eval, on the Intel Xeon") shows what it found.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

STARTED = time.perf_counter()

# (module, attribute): the steps timed inside the tasks (an attribute may be `Class.method`).
STEPS = [
    ("judged.flows.pipeline.tasks", "load_table"),
    ("judged.flows.pipeline.tasks", "read_run"),
    ("judged.flows.pipeline.tasks", "check_inputs_before_storing"),
    ("judged.flows.pipeline.tasks", "input_judgments"),
    ("judged.flows.pipeline.tasks", "check_before_storing"),
    ("judged.flows.engine.evaluate", "may_repeat_documents"),
    ("judged.flows.store.hashing", "content_hashes"),
    ("judged.flows.store.warehouse", "Store.store_table"),
    ("judged.flows.store.warehouse", "position_blocks"),
    ("judged.flows.pipeline.tasks", "evaluate_shard"),
    ("judged.flows.pipeline.tasks", "finish_evaluation"),
]
TASKS = ["check_inputs_task", "ingest_file_task", "plan_task", "finish_task", "refresh_catalog_task",
         "publish_artifacts_task"]


def _say(line: str) -> None:
    """A log line: seconds since the start, the process's CPU seconds so far (every thread's), the thread (its id
    and the start of its name, 18 characters), `line`."""
    thread = f"{threading.get_native_id():>7} {threading.current_thread().name[:10]:10s}"
    print(f"[{time.perf_counter() - STARTED:8.2f} {time.process_time():8.2f}] {thread} {line}", file=sys.stderr,
          flush=True)


def _timed(function: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        _say(f"> {label}")
        try:
            return function(*args, **kwargs)
        finally:
            _say(f"< {label} {time.perf_counter() - started:.2f} s")

    return timed


def _with_store_phases(module_name: str, name: str) -> None:
    """Wrap `read_run` where the checks call it so that it is timed and measures its store's phases (`Phases`:
    the order, duplicates and write of the shards it stages; wall summed over the writer threads, CPU the whole
    process's), printed as `phase NAME: W s wall, C s CPU` lines after it, as `judged ingest-run --profile` prints
    them."""
    from judged.flows.engine.phases import Phases, profile_lines

    module: Any = importlib.import_module(module_name)
    original = getattr(module, name)

    @functools.wraps(original)
    def measured(*args: Any, **kwargs: Any) -> Any:
        phases = kwargs.get("phases") or Phases()
        kwargs["phases"] = phases
        try:
            return original(*args, **kwargs)
        finally:
            for line in profile_lines(phases.as_tuples()):
                _say(line)

    setattr(module, name, _timed(measured, name))


def wrap() -> None:
    """Wrap the steps and the tasks' bodies (a flow's own function is left alone: Prefect validates its
    parameters against its module)."""
    for module_name, attribute in STEPS:
        owner: Any = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        if hasattr(owner, name):
            setattr(owner, name, _timed(getattr(owner, name), attribute))
    _with_store_phases("judged.flows.store.inputs", "read_run")
    flows = importlib.import_module("judged.flows.pipeline.flows")
    for name in TASKS:
        task = getattr(flows, name)
        task.fn = _timed(task.fn, f"TASK {name}")
    flow_type = type(flows.evaluate_flow)
    call = flow_type.__call__
    flow_type.__call__ = lambda self, *args, **kwargs: _timed(call, f"FLOW {self.name}")(self, *args, **kwargs)


def run(argv: list[str]) -> None:
    import atexit

    # The command line's tunings before anything imports Polars (`wrap` does), which reads its allocator's options
    # once: otherwise the phases would be those of another allocator setting than `judged`'s.
    from judged.flows.cli.app import tune_process

    tune_process()
    atexit.register(lambda: _say("exit"))
    wrap()
    _say("imports done")
    from judged.flows.cli import app

    sys.argv = ["judged", *argv]
    app()


# A span: (start, end, wall seconds, process CPU seconds at its start, at its end).
Span = tuple[float, float, float, float, float]
_LINE = re.compile(r"\[\s*([\d.]+)(?:\s+([\d.]+))?\] (.{18}) (?:< (.+?) ([\d.]+) s|> (.+)|(exit))$")


def _spans(log: str) -> tuple[dict[str, list[Span]], tuple[float, float]]:
    """Each label's spans, and when the process said `exit` (wall, CPU). A log of the first form, without CPU
    stamps, gives 0 CPU throughout."""
    spans: dict[str, list[Span]] = {}
    opened: dict[tuple[str, str], list[float]] = {}  # (label, thread) -> the CPU stamps of its open spans
    ended = (0.0, 0.0)
    for line in open(log, encoding="utf-8"):
        if not (found := _LINE.match(line.rstrip())):
            continue
        at, cpu, thread = float(found[1]), float(found[2] or 0.0), found[3]
        if found[6]:
            opened.setdefault((found[6], thread), []).append(cpu)
        elif found[4]:
            label, seconds = found[4], float(found[5])
            starts = opened.get((label, thread)) or [cpu]
            spans.setdefault(label, []).append((at - seconds, at, seconds, starts.pop(), cpu))
        else:
            ended = (at, cpu)
    return spans, ended


def phases(log: str) -> dict[str, tuple[float, float]]:
    """One evaluate flow's phases, (wall seconds, the process's CPU seconds over that time), from its log."""
    spans, ended = _spans(log)
    flow = spans["FLOW evaluate"][0]
    check = spans["TASK check_inputs_task"][0]
    judgments, run_ingest = spans["TASK ingest_file_task"][:2]
    judgments_read = spans["input_judgments"][0]
    # The run's reading pass: `read_run` (which stages its shards), or in a checkout without it `load_table`.
    reads = spans.get("read_run") or spans["load_table"]
    run_read = max((s for s in reads if judgments_read[1] - 0.05 <= s[0] and s[1] <= check[1] + 0.05),
                   key=lambda s: s[2])
    looks = [s for s in spans.get("may_repeat_documents", []) if s[1] <= check[1] + 0.05]
    parts = spans["evaluate_shard"]
    first, last = min(parts, key=lambda s: s[0]), max(parts, key=lambda s: s[1])
    evaluated = (last[1] - first[0], last[4] - first[3])
    task = {name: spans[f"TASK {name}"][0] for name in ("plan_task", "finish_task", "refresh_catalog_task",
                                                         "publish_artifacts_task")}

    def of(span: Span) -> tuple[float, float]:
        return span[2], span[4] - span[3]

    worked = [of(check), of(judgments), of(run_ingest), evaluated, *(of(span) for span in task.values())]
    return {
        "process start, imports, server check (to the flow call)": (flow[0], flow[3]),
        "check: judgments read and validated": of(judgments_read),
        "check: run read and checked (read_run: load_table, and the shards staged)": of(run_read),
        **{f"  within it, {name} (summed over threads; CPU the process's)": seconds
           for name, seconds in _store_phases(log).items()},
        "check: judgments and run looked at for repeated pairs": (sum(s[2] for s in looks),
                                                                  sum(s[4] - s[3] for s in looks)),
        "check task, whole": of(check),
        "store judgments (ingest-file task)": of(judgments),
        "store run (ingest-file task)": of(run_ingest),
        "plan evaluation": of(task["plan_task"]),
        "evaluate the parts (2 threads, with intervals)": evaluated,
        "finish (summary, tie check, provenance, write)": of(task["finish_task"]),
        "catalog refresh": of(task["refresh_catalog_task"]),
        "artifacts": of(task["publish_artifacts_task"]),
        "Prefect: flow and task runs around the work": (flow[2] - sum(w for w, _ in worked),
                                                        flow[4] - flow[3] - sum(c for _, c in worked)),
        "read the result back, print, exit": (ended[0] - flow[1], ended[1] - flow[4]),
        "whole process": ended,
    }


def _store_phases(log: str) -> dict[str, tuple[float, float]]:
    """The `phase NAME: W s wall, C s CPU` lines the wrapped `read_run` printed (its staged shards' phases), the
    first run's."""
    found: dict[str, tuple[float, float]] = {}
    for line in open(log, encoding="utf-8"):
        if matched := re.search(r"\] .{18} phase (.+): ([\d.]+) s wall, ([\d.]+) s CPU$", line.rstrip()):
            if matched[1] in found:
                break
            found[matched[1]] = (float(matched[2]), float(matched[3]))
    return found


def table(logs: list[str]) -> str:
    """One column per log: each phase's wall and CPU seconds (the process's, every thread's, over the phase's
    time: a phase beside another, as the run's hash beside the imports, shares its CPU figure)."""
    columns = [phases(log) for log in logs]
    names = list(dict.fromkeys(name for column in columns for name in column))
    lines = ["| phase (wall s / CPU s) | " + " | ".join(logs) + " |", "|---|" + "---:|" * len(logs)]
    lines += [f"| {name} | " + " | ".join(f"{column[name][0]:.2f} / {column[name][1]:.2f}" if name in column else "-"
                                          for column in columns) + " |" for name in names]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "run":
        run(sys.argv[2:])
    elif len(sys.argv) > 2 and sys.argv[1] == "table":
        print(table(sys.argv[2:]))
    else:
        sys.exit(__doc__)
