"""Where a warehouse command's time goes, phase by phase: the `judged` command run with the wall time of each flow
task, and of the steps inside them, printed on stderr; and those lines summed into a table.

Usage: `python benchmarks/tools/flow_phases.py run evaluate QRELS RUN --warehouse FRESH ... 2> LOG` (any judged
command line after `run`; the flow's tasks run as they do in `judged`), then `python benchmarks/tools/flow_phases.py
table LOG [LOG ...]` for one column per log. The steps are wrapped by name, so a checkout whose functions moved gives
fewer lines. benchmarks/README.md ("The flow at L, phase by phase") shows what it found.
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
    print(f"[{time.perf_counter() - STARTED:8.2f}] {threading.current_thread().name[:18]:18s} {line}",
          file=sys.stderr, flush=True)


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
    flows = importlib.import_module("judged.flows.pipeline.flows")
    for name in TASKS:
        task = getattr(flows, name)
        task.fn = _timed(task.fn, f"TASK {name}")
    flow_type = type(flows.evaluate_flow)
    call = flow_type.__call__
    flow_type.__call__ = lambda self, *args, **kwargs: _timed(call, f"FLOW {self.name}")(self, *args, **kwargs)


def run(argv: list[str]) -> None:
    import atexit

    atexit.register(lambda: _say("exit"))
    wrap()
    _say("imports done")
    from judged.flows.cli import main

    sys.argv = ["judged", *argv]
    main()


def _spans(log: str) -> tuple[dict[str, list[tuple[float, float, float]]], float]:
    """Each label's (start, end, seconds), and when the process said `exit`."""
    spans: dict[str, list[tuple[float, float, float]]] = {}
    ended = 0.0
    for line in open(log, encoding="utf-8"):
        if found := re.match(r"\[\s*([\d.]+)\] \S+\s+< (.+?) ([\d.]+) s$", line.rstrip()):
            at, label, seconds = float(found[1]), found[2], float(found[3])
            spans.setdefault(label, []).append((at - seconds, at, seconds))
        elif found := re.match(r"\[\s*([\d.]+)\] \S+\s+exit$", line.rstrip()):
            ended = float(found[1])
    return spans, ended


def phases(log: str) -> dict[str, float]:
    """One evaluate flow's phases, in wall seconds, from its log."""
    spans, ended = _spans(log)
    flow = spans["FLOW evaluate"][0]
    check = spans["TASK check_inputs_task"][0]
    judgments, run_ingest = spans["TASK ingest_file_task"][:2]
    judgments_read = spans["input_judgments"][0]
    # The run's reading pass: `read_run` (which stages its shards), or in a checkout without it `load_table`.
    reads = spans.get("read_run") or spans["load_table"]
    run_read = max((s for s in reads if judgments_read[1] - 0.05 <= s[0] and s[1] <= check[1] + 0.05),
                   key=lambda s: s[2])
    looks = sum(s[2] for s in spans.get("may_repeat_documents", []) if s[1] <= check[1] + 0.05)
    parts = spans["evaluate_shard"]
    evaluated = max(s[1] for s in parts) - min(s[0] for s in parts)
    task = {name: spans[f"TASK {name}"][0][2] for name in ("plan_task", "finish_task", "refresh_catalog_task",
                                                            "publish_artifacts_task")}
    tasks = check[2] + judgments[2] + run_ingest[2] + evaluated + sum(task.values())
    return {
        "process start, imports, server check (to the flow call)": flow[0],
        "check: judgments read and validated": judgments_read[2],
        "check: run read and checked (read_run: load_table, and the shards staged)": run_read[2],
        "check: judgments and run looked at for repeated pairs": looks,
        "check task, whole": check[2],
        "store judgments (ingest-file task)": judgments[2],
        "store run (ingest-file task)": run_ingest[2],
        "plan evaluation": task["plan_task"],
        "evaluate the parts (2 threads, with intervals)": evaluated,
        "finish (summary, tie check, provenance, write)": task["finish_task"],
        "catalog refresh": task["refresh_catalog_task"],
        "artifacts": task["publish_artifacts_task"],
        "Prefect: flow and task runs around the work": flow[2] - tasks,
        "read the result back, print, exit": ended - flow[1],
        "whole process": ended,
    }


def table(logs: list[str]) -> str:
    columns = [phases(log) for log in logs]
    lines = ["| phase (wall s) | " + " | ".join(logs) + " |", "|---|" + "---:|" * len(logs)]
    lines += [f"| {name} | " + " | ".join(f"{column[name]:.2f}" for column in columns) + " |" for name in columns[0]]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "run":
        run(sys.argv[2:])
    elif len(sys.argv) > 2 and sys.argv[1] == "table":
        print(table(sys.argv[2:]))
    else:
        sys.exit(__doc__)
