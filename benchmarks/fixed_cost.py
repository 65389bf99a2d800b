"""Where the fixed cost of a warehouse command goes, on the one-query seed (data/seed: the work itself is nil):

    python benchmarks/fixed_cost.py [--reps 3] [--data-dir /tmp/judged-fixed-cost]

Each figure is a whole process (or a phase inside one), timed with perf_counter, with the CPU time of the process
(user + system, of the process and the children it waited for) and the 1-minute load average before it:
- Prefect's import (`import judged.flows.pipeline.flows`), against the direct path's own imports;
- `judged server start` with a fresh PREFECT_HOME (the database is created: migrations) and again with the same
  home after `judged server stop`;
- the direct seed evaluation, and the seed through the flow on the local server (started beforehand), with its
  phases: the imports, the flow call, the time its task runs spent running (from the Prefect API: the tasks' own
  work), the catalog refresh and artifact tasks among them, and what follows the flow until the process ends;
- the seed through the flow on Prefect's temporary server (JUDGED_PREFECT_SERVER=temporary), first use of a home
  and later.
Nothing is left running: the server is stopped at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "data" / "seed"
JUDGED = [sys.executable, "-m", "judged.flows.cli"]

# Run in a child process: the seed through the evaluate flow, with its phases.
PHASES = r"""
import json, os, sys, time
started = time.perf_counter()
from judged.flows.pipeline.progress import Feedback
from judged.flows.pipeline.server import orchestration
from judged.schemas.spec import build_spec
import judged.flows.pipeline.flows as pipeline
imported = time.perf_counter()
spec = build_spec("trec_eval", cutoffs=(10,))
with orchestration(Feedback(), "seed"):
    called = time.perf_counter()
    reports = pipeline.evaluate_flow(sys.argv[1], [sys.argv[2]], spec.canonical_json(), sys.argv[3])
    returned = time.perf_counter()
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, TaskRunFilter, TaskRunFilterFlowRunId
    with get_client(sync_client=True) as client:
        flow_run_id = client.read_flow_runs(limit=1, sort="START_TIME_DESC")[0].id
        task_runs = client.read_task_runs(task_run_filter=TaskRunFilter(
            flow_run_id=TaskRunFilterFlowRunId(any_=[flow_run_id])))
by_task = {}
for run in task_runs:  # a task run's name is its task's name and a suffix: ingest-file-3f2
    task = run.name.rsplit("-", 1)[0]
    by_task[task] = by_task.get(task, 0.0) + run.total_run_time.total_seconds()
print(json.dumps({"imports": imported - started, "flow_call": returned - called, "task_runs": len(task_runs),
                  "task_seconds": sum(by_task.values()), "by_task": by_task, "until_flow_end": returned - started}))
"""


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """(wall, CPU of the process and its waited-for children, load before, stdout) of one process."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, load, done.stdout


def line(what: str, measured: list[tuple[float, float, float, str]]) -> str:
    walls = [m[0] for m in measured]
    cpus = [m[1] for m in measured]
    loads = " / ".join(f"{m[2]:.1f}" for m in measured)
    return (f"| {what} | {statistics.median(walls):.2f} | {' / '.join(f'{w:.2f}' for w in walls)} | "
            f"{statistics.median(cpus):.2f} | {loads} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--data-dir", default="/tmp/judged-fixed-cost")
    args = parser.parse_args()
    root = Path(args.data_dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    base = {name: value for name, value in os.environ.items() if name not in ("PREFECT_API_URL",)}
    base |= {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING",
             "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL"}
    local = base | {"PREFECT_HOME": str(root / "home-local"), "JUDGED_PREFECT_SERVER": "local"}
    seed = [str(SEED / "qrels.txt"), str(SEED / "run.txt")]
    rows: list[str] = []
    phases: list[dict] = []
    try:
        rows.append(line("import of the direct path (`import judged.flows.engine.evaluate`)", [
            run([sys.executable, "-c", "import judged.flows.engine.evaluate"], base) for _ in range(args.reps)]))
        rows.append(line("import of Prefect (`import judged.flows.pipeline.flows`)", [
            run([sys.executable, "-c", "import judged.flows.pipeline.flows"], base) for _ in range(args.reps)]))
        rows.append(line("`judged server start`, fresh PREFECT_HOME (database created)",
                         [run([*JUDGED, "server", "start"], local)]))
        run([*JUDGED, "server", "stop"], local)
        rows.append(line("`judged server start`, existing PREFECT_HOME", [run([*JUDGED, "server", "start"], local)]))
        rows.append(line("seed, direct path (`judged evaluate seed/qrels.txt seed/run.txt`)", [
            run([*JUDGED, "evaluate", *seed], base) for _ in range(args.reps)]))
        flows = []
        for rep in range(args.reps):
            warehouse = root / f"warehouse-local-{rep}"
            flows.append(run([*JUDGED, "evaluate", *seed, "--warehouse", str(warehouse)], local))
        rows.append(line("seed, warehouse command on the running local server", flows))
        for rep in range(args.reps):
            measured = run([sys.executable, "-c", PHASES, *seed, str(root / f"warehouse-phases-{rep}")], local)
            phases.append(json.loads(measured[3]) | {"wall": measured[0], "cpu": measured[1]})
        temporary = base | {"PREFECT_HOME": str(root / "home-temporary"), "JUDGED_PREFECT_SERVER": "temporary"}
        rows.append(line("seed, warehouse command on Prefect's temporary server, first use of its home", [
            run([*JUDGED, "evaluate", *seed, "--warehouse", str(root / "warehouse-temporary-0")], temporary)]))
        rows.append(line("seed, warehouse command on Prefect's temporary server, later", [
            run([*JUDGED, "evaluate", *seed, "--warehouse", str(root / f"warehouse-temporary-{rep + 1}")], temporary)
            for rep in range(args.reps)]))
    finally:
        subprocess.run([*JUDGED, "server", "stop"], env=local, capture_output=True, cwd=REPO)
    print("| what | wall median (s) | reps (s) | CPU median (s) | load before |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nthe seed's flow on the running local server, phase by phase (medians of "
          f"{len(phases)} processes):")
    def median(key: str) -> float:
        return statistics.median(p[key] for p in phases)
    tasks = sorted({name for p in phases for name in p["by_task"]})
    print(f"- whole process {median('wall'):.2f} s (CPU {median('cpu'):.2f} s); imports {median('imports'):.2f} s; "
          f"flow call {median('flow_call'):.2f} s, of which its {median('task_runs'):.0f} task runs ran "
          f"{median('task_seconds'):.2f} s; after the flow until the process ended "
          f"{median('wall') - median('until_flow_end'):.2f} s (the API query above included)")
    print("- task runs' running time: " + ", ".join(
        f"{name} {statistics.median(p['by_task'].get(name, 0.0) for p in phases):.3f} s" for name in tasks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
