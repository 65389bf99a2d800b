"""Benchmark harness: time whole processes of judged and the reference tools on the same generated files, and check
that every tool's per-query NDCG@10 agrees with judged's `trec_eval` preset.

    python benchmarks/run.py --size M [--reps 3] [--tools judged-text,pytrec_eval,...] [--data-dir DIR] [--markdown]
    python -m benchmarks.run --size S

Each repetition of each tool is one process, timed from outside: wall time, user+system CPU time and peak RSS by
`/usr/bin/time -f '%e %M %U %S'` when it exists (the peak is the kernel's maximum resident set of the process and of
any descendant it waited for, i.e. the largest single process of the tree), plus the sum of the RSS of the whole
process tree sampled every 50 ms with psutil (what Prefect's server subprocess adds). Without /usr/bin/time the wall
time comes from the harness's clock and the peak from psutil's sampled tree sum, or from
getrusage(RUSAGE_CHILDREN) as a last resort. The 1-minute load average before each repetition is recorded: the
machine is shared, and a busy machine shows there. Every tool writes one `ndcg_cut_10 <tab> query <tab> value` line
per query; the harness reads them and compares.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.generate import SIZES, generate  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TOOLS_DIR = HERE / "tools"
DEFAULT_DATA_DIR = Path(tempfile.gettempdir()) / "judged-bench"
TIME_BINARY = "/usr/bin/time"
MEASURE = "ndcg_cut_10"
CUTOFF = 10
TOLERANCE = 1e-6
TREC_EVAL_TOLERANCE = 5e-5  # trec_eval prints 4 decimals
REFERENCE = "judged-text"


# -- tools --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Inputs:
    """The files a benchmark runs on, and where it writes."""

    qrels: Path
    run_text: Path | None
    run_parquet: Path
    judged_run: Path  # what the judged Parquet and flow paths read (a file, or later a sharded directory)
    stored_run: Path | None  # a run stored by `judged ingest-run` (W/run_rows/<run_id>), for judged-stored
    work: Path  # outputs, warehouses
    prefect_home: Path
    run_rows: int = 0  # the run's rows (the manifest's), from which a tool's memory is foreseen


@dataclass(frozen=True)
class Tool:
    name: str  # as given to --tools
    description: str
    argv: Callable[[Inputs, Path], list[str]]  # (inputs, scratch dir of this repetition) -> command
    needs: Callable[[Inputs], str | None]  # None when it can run, else why not
    env: Callable[[Inputs], dict[str, str]] = lambda inputs: {}
    tolerance: float = TOLERANCE
    prints_values: bool = True  # False: its output is not per-query NDCG (the ingest), so nothing to compare
    # The peak RSS (MiB) it is foreseen to reach on these inputs: it is skipped, with the reason, where that does not
    # fit (`memory_shortfall`). None: not foreseen.
    expected_peak_mib: Callable[[Inputs], float] | None = None


def _judged() -> list[str]:
    """The `judged` command of this interpreter's environment (its console script, else `python -m judged.flows.cli`)."""
    script = Path(sys.executable).with_name("judged")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "judged.flows.cli"]


def _judged_args(qrels: Path, run: Path, *extra: str, output: str = "trec") -> list[str]:
    return [*_judged(), "evaluate", str(qrels), str(run), *extra, "--preset", "trec_eval", "--cutoffs",
            str(CUTOFF), "--format", output]


def _module(name: str) -> Callable[[Inputs], str | None]:
    def needs(inputs: Inputs) -> str | None:
        return None if importlib.util.find_spec(name) else f"{name} is not importable (pip install -e '.[bench]')"

    return needs


def _text_run(inputs: Inputs) -> str | None:
    return None if inputs.run_text and inputs.run_text.is_file() else "no run.txt at this size (Parquet only)"


def _all(*checks: Callable[[Inputs], str | None]) -> Callable[[Inputs], str | None]:
    return lambda inputs: next((reason for check in checks if (reason := check(inputs))), None)


def _trec_eval_binary(inputs: Inputs) -> str | None:
    binary = os.environ.get("TREC_EVAL")
    if not binary:
        return "TREC_EVAL is not set (point it at a trec_eval binary)"
    return None if os.access(binary, os.X_OK) else f"TREC_EVAL={binary} is not executable"


def _always(inputs: Inputs) -> str | None:
    return None


# pytrec_eval holds both parsed files as Python dicts of dicts: its peak grows with the run's rows, 1,197 MiB at M
# (6.87M rows) and 8,367 MiB at L (48.99M rows) as measured by this harness, ~179 bytes a row over ~30 MiB. A little
# more is foreseen, so that a machine where it would only just fit skips it.
PYTREC_EVAL_BYTES_PER_ROW = 180
PYTREC_EVAL_BASE_MIB = 40.0
# What a tool's foreseen peak must leave of the available memory: the harness, the page cache of the files it reads,
# and the estimate's own error.
MEMORY_HEADROOM = 1.15


def _pytrec_eval_peak_mib(inputs: Inputs) -> float:
    return PYTREC_EVAL_BASE_MIB + inputs.run_rows * PYTREC_EVAL_BYTES_PER_ROW / 2**20


def available_memory_mib() -> float | None:
    """The memory the kernel says a new process could take without swapping (`MemAvailable`), in MiB; None where it
    does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    try:
        import psutil

        return psutil.virtual_memory().available / 2**20
    except ImportError:
        return None


def memory_shortfall(expected_mib: float, available_mib: float | None, max_rss_mib: float | None) -> str | None:
    """Why a tool foreseen to peak at `expected_mib` is not run (None: it fits): above the harness's own bound
    (`--max-rss-mib`, which would kill it after most of its time), or more than the available memory allows with
    `MEMORY_HEADROOM`."""
    if max_rss_mib and expected_mib > max_rss_mib:
        return (f"needs about {expected_mib / 1024:.1f} GiB at this size, above --max-rss-mib {max_rss_mib:.0f}, "
                "which would kill it")
    if available_mib is not None and expected_mib * MEMORY_HEADROOM > available_mib:
        return (f"needs about {expected_mib / 1024:.1f} GiB at this size ({expected_mib * MEMORY_HEADROOM / 1024:.1f} "
                f"GiB with headroom), {available_mib / 1024:.1f} GiB available (MemAvailable)")
    return None


def _stored_run(inputs: Inputs) -> str | None:
    return None if inputs.stored_run and inputs.stored_run.is_dir() else "no stored run (its ingest failed)"


def _ingest_source(inputs: Inputs, tool: str = "judged-ingest") -> Path:
    """The run an ingest tool stores: judged-ingest the text run (the Parquet one at XL), judged-ingest-parquet the
    Parquet run."""
    if tool == "judged-ingest" and inputs.run_text:
        return inputs.run_text
    return inputs.run_parquet


def _ingest_args(inputs: Inputs, warehouse: Path, tool: str = "judged-ingest") -> list[str]:
    """`judged ingest-run` of the tool's run (`_ingest_source`) into a warehouse."""
    return [*_judged(), "ingest-run", str(_ingest_source(inputs, tool)), "--warehouse", str(warehouse), "--profile"]


def _flow_env(inputs: Inputs) -> dict[str, str]:
    return {"PREFECT_HOME": str(inputs.prefect_home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}


# The one-query seed: a warehouse command on it does almost no work, so its wall time is the command's fixed cost.
SEED = REPO / "data" / "seed"


def _seed_args(*extra: str) -> list[str]:
    return [*_judged(), "evaluate", str(SEED / "qrels.txt"), str(SEED / "run.txt"), *extra, "--preset", "trec_eval",
            "--cutoffs", str(CUTOFF), "--format", "trec"]


def server_to_start(inputs: Inputs) -> bool:
    """Whether a flow command started now starts a Prefect server of its own: no server is configured
    (PREFECT_API_URL) and judged's local server does not run under the harness's PREFECT_HOME (its state file
    names no live server whose API answers), or every command starts Prefect's temporary server
    (JUDGED_PREFECT_SERVER=temporary). A warehouse command after the first reuses the local server."""
    from judged.flows.pipeline.server import MODE_VARIABLE, running_server

    if os.environ.get("PREFECT_API_URL"):
        return False
    if os.environ.get(MODE_VARIABLE) == "temporary":
        return True
    return running_server(inputs.prefect_home) is None


def stop_local_server(inputs: Inputs, log: Callable[[str], None]) -> None:
    """Stop the local Prefect server the flow tools' first repetition started under the harness's PREFECT_HOME
    (`judged server stop`), so that the harness leaves nothing running."""
    done = subprocess.run([*_judged(), "server", "stop"], env={**os.environ, **_flow_env(inputs)},
                          capture_output=True, text=True)
    log(f"judged server stop: {(done.stdout or done.stderr).strip()}")


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "judged-text",
            "judged evaluate, direct path, TREC text run",
            lambda i, scratch: _judged_args(i.qrels, i.run_text),  # type: ignore[arg-type]
            _text_run,
        ),
        Tool(
            "judged-text-json",
            "judged evaluate, direct path, TREC text run, --format json: every per-query value with its interval "
            "and counts",
            lambda i, scratch: _judged_args(i.qrels, i.run_text, output="json"),  # type: ignore[arg-type]
            _text_run,
        ),
        Tool(
            "judged-parquet",
            "judged evaluate, direct path, Parquet run",
            lambda i, scratch: _judged_args(i.qrels, i.judged_run),
            _always,
        ),
        Tool(
            "judged-stored",
            "judged evaluate, direct path, a run stored by `judged ingest-run` (its shard folder)",
            lambda i, scratch: _judged_args(i.qrels, i.stored_run),  # type: ignore[arg-type]
            _stored_run,
        ),
        Tool(
            "judged-ingest",
            "judged ingest-run (Prefect flow on judged's local Prefect server) of the text run into a fresh warehouse",
            lambda i, scratch: _ingest_args(i, scratch / "warehouse"),
            _always,
            _flow_env,
            prints_values=False,
        ),
        Tool(
            "judged-ingest-parquet",
            "judged ingest-run (as judged-ingest) of the Parquet run into a fresh warehouse",
            lambda i, scratch: _ingest_args(i, scratch / "warehouse", "judged-ingest-parquet"),
            _always,
            _flow_env,
            prints_values=False,
        ),
        Tool(
            "judged-flow",
            "judged evaluate --warehouse (Prefect flow on judged's local Prefect server, started by the first "
            "repetition and reused by the later ones; fresh warehouse per repetition)",
            lambda i, scratch: _judged_args(i.qrels, i.judged_run, "--warehouse", str(scratch / "warehouse")),
            _always,
            _flow_env,
        ),
        Tool(
            "judged-flow-text",
            "judged evaluate --warehouse (as judged-flow) of the TREC text run: the nightly inbox's files",
            lambda i, scratch: _judged_args(i.qrels, i.run_text, "--warehouse",  # type: ignore[arg-type]
                                            str(scratch / "warehouse")),
            _text_run,
            _flow_env,
        ),
        Tool(
            "judged-seed",
            "judged evaluate, direct path, on the one-query seed (data/seed): a command's start-up without work",
            lambda i, scratch: _seed_args(),
            _always,
            prints_values=False,
        ),
        Tool(
            "judged-seed-flow",
            "judged evaluate --warehouse on the one-query seed, fresh warehouse per repetition, the local Prefect "
            "server started by the first repetition (unless one runs) and reused: the fixed cost of a warehouse command",
            lambda i, scratch: _seed_args("--warehouse", str(scratch / "warehouse")),
            _always,
            _flow_env,
            prints_values=False,
        ),
        Tool(
            "pytrec_eval",
            "pytrec_eval-terrier: parse_qrel/parse_run in Python, RelevanceEvaluator ndcg_cut.10",
            lambda i, scratch: [sys.executable, str(TOOLS_DIR / "pytrec_eval_ndcg.py"), str(i.qrels), str(i.run_text)],
            _all(_text_run, _module("pytrec_eval")),
            expected_peak_mib=_pytrec_eval_peak_mib,
        ),
        Tool(
            "ir_measures",
            "ir_measures: read_trec_qrels/read_trec_run, iter_calc([nDCG@10]) (pytrec_eval provider)",
            lambda i, scratch: [sys.executable, str(TOOLS_DIR / "ir_measures_ndcg.py"), str(i.qrels), str(i.run_text)],
            _all(_text_run, _module("ir_measures")),
            expected_peak_mib=_pytrec_eval_peak_mib,  # its provider for nDCG@10 is pytrec_eval
        ),
        Tool(
            "ranx-text",
            "ranx: Qrels.from_file, Run.from_file (TREC text), evaluate ndcg@10, make_comparable",
            lambda i, scratch: [sys.executable, str(TOOLS_DIR / "ranx_ndcg.py"), str(i.qrels), str(i.run_text)],
            _all(_text_run, _module("ranx")),
        ),
        Tool(
            "ranx-parquet",
            "ranx: Qrels.from_file, run from Parquet (Run.from_parquet / from_df), evaluate ndcg@10, make_comparable",
            lambda i, scratch: [sys.executable, str(TOOLS_DIR / "ranx_ndcg.py"), str(i.qrels), str(i.run_parquet),
                                "--parquet"],
            _module("ranx"),
        ),
        Tool(
            "trec_eval",
            "trec_eval binary from $TREC_EVAL: -q -c -m ndcg_cut.10",
            lambda i, scratch: [os.environ.get("TREC_EVAL", "trec_eval"), "-q", "-c", "-m", "ndcg_cut.10",
                                str(i.qrels), str(i.run_text)],
            _all(_text_run, _trec_eval_binary),
            tolerance=TREC_EVAL_TOLERANCE,
        ),
    )
}
XL_TOOLS = ("judged-stored", "judged-flow", "judged-ingest")
# Tools whose commands run Prefect flows (and so may start the local Prefect server, stopped at the end).
FLOW_TOOLS = ("judged-ingest", "judged-ingest-parquet", "judged-flow", "judged-flow-text", "judged-seed-flow")
JUDGED_TOOLS = ("judged-text", "judged-text-json", "judged-parquet", "judged-stored", "judged-flow",
                "judged-flow-text")
INGEST_TOOLS = ("judged-ingest", "judged-ingest-parquet")
REFERENCE_TOOLS = ("trec_eval", "pytrec_eval", "ir_measures", "ranx-text", "ranx-parquet")


# -- measuring one process ----------------------------------------------------------------------------------------


@dataclass
class Measurement:
    wall: float | None  # seconds
    cpu: float | None  # user + system seconds of the tree (/usr/bin/time %U + %S), None without /usr/bin/time
    peak_rss_mib: float | None  # largest process of the tree (/usr/bin/time %M), or the sampled tree sum
    tree_rss_mib: float | None  # sum over the tree, sampled
    exit_code: int
    output: Path
    stderr_tail: str = ""
    started_server: bool = False  # a flow tool's repetition that started a Prefect server (`server_to_start`)


def _tree_rss(process: object) -> int:
    import psutil

    total = 0
    try:
        members = [process, *process.children(recursive=True)]  # type: ignore[attr-defined]
    except psutil.Error:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(argv: Sequence[str], output: Path, env: dict[str, str], timeout: float | None,
            max_rss_mib: float | None = None) -> Measurement:
    """Run `argv` once with stdout to `output`; its wall time and peak memory. The process tree is killed after
    `timeout` seconds, or when its sampled RSS sum passes `max_rss_mib` (needs psutil)."""
    use_time = os.access(TIME_BINARY, os.X_OK)
    time_file = output.with_suffix(".time")
    time_file.unlink(missing_ok=True)  # a stale file from an earlier run must not be read
    command = [TIME_BINARY, "-f", "%e %M %U %S", "-o", str(time_file), *argv] if use_time else list(argv)
    try:
        import psutil
    except ImportError:
        psutil = None  # type: ignore[assignment]
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    peak_sum = 0
    killed: list[str] = []
    started = time.perf_counter()
    with output.open("wb") as out, output.with_suffix(".stderr").open("wb") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env={**os.environ, **env}, cwd=output.parent)
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak_sum
            try:
                watched = psutil.Process(process.pid)
            except psutil.Error:  # already gone
                return
            while not stop.is_set():
                peak_sum = max(peak_sum, _tree_rss(watched))
                if max_rss_mib and peak_sum > max_rss_mib * 2**20 and not killed:
                    killed.append(f"killed by the harness: tree RSS passed --max-rss-mib {max_rss_mib:.0f}")
                    _kill_tree(process.pid)
                stop.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True) if psutil else None
        if sampler:
            sampler.start()
        try:
            exit_code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed.append(f"killed by the harness after --timeout {timeout:.0f} s")
            _kill_tree(process.pid)
            exit_code = process.wait()
        finally:
            stop.set()
            if sampler:
                sampler.join()
    elapsed = time.perf_counter() - started
    tree_mib = peak_sum / 2**20 if psutil and peak_sum else None
    wall, peak, cpu = elapsed, tree_mib, None
    if use_time and time_file.is_file():
        fields = time_file.read_text().split()
        # On failure GNU time writes "Command exited with non-zero status N" before the numbers.
        if len(fields) >= 4:
            wall, peak = float(fields[-4]), int(fields[-3]) / 1024
            cpu = float(fields[-2]) + float(fields[-1])
    elif not psutil:
        after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        peak = after / 1024 if after > children_before else None
    stderr = output.with_suffix(".stderr").read_text(errors="replace").strip().splitlines()
    return Measurement(wall, cpu, peak, tree_mib, exit_code or (-9 if killed else 0), output,
                       "\n".join(killed + stderr[-5:]))


def _kill_tree(pid: int) -> None:
    """End the process we started and its descendants, by id."""
    try:
        import psutil

        parent = psutil.Process(pid)
        for child in parent.children(recursive=True):
            child.kill()
        parent.kill()
    except Exception:  # noqa: BLE001 (already gone, or psutil missing)
        try:
            os.kill(pid, 9)
        except OSError:
            pass


# -- reading and comparing per-query values -----------------------------------------------------------------------


def read_values(path: Path) -> dict[str, float]:
    """`measure query value` lines (any whitespace) of ndcg_cut_10, skipping the `all` lines; or, from judged's
    `--format json`, the per-query nDCG@10 values."""
    values: dict[str, float] = {}
    with path.open() as handle:
        if handle.read(1) == "{":
            handle.seek(0)
            rows = json.load(handle)["evaluations"][0]["per_query"]
            return {row["query_id"]: row["value"] for row in rows
                    if row["measure"] == "nDCG" and row["cutoff"] == CUTOFF and row["value"] is not None}
        handle.seek(0)
        for line in handle:
            parts = line.split()
            if len(parts) == 3 and parts[0] == MEASURE and parts[1] != "all":
                values[parts[1]] = float(parts[2])
    return values


@dataclass
class Agreement:
    n_reference: int
    n_tool: int
    n_common: int
    only_reference: list[str]  # queries judged scores that the tool does not report
    only_reference_nonzero: int  # of those, how many judged does not score 0
    only_tool: list[str]
    mismatches: dict[str, tuple[float, float]]  # query -> (judged, tool)
    max_difference: float
    causes: dict[str, str] = field(default_factory=dict)  # query -> explanation

    @property
    def unexplained(self) -> list[str]:
        return [query for query in self.mismatches if self.causes.get(query, "unexplained") == "unexplained"]

    @property
    def ok(self) -> bool:
        """No value differs beyond the tolerance on the common queries, nothing only the tool reports, and every
        query only judged reports is one judged scores 0 (missing from the run, trec_eval -c)."""
        return not self.mismatches and not self.only_tool and not self.only_reference_nonzero

    def summary(self) -> str:
        if self.ok:
            return "ok"
        parts = []
        if self.mismatches:
            counts: dict[str, int] = {}
            for query in self.mismatches:
                cause = self.causes.get(query, "unexplained")
                counts[cause] = counts.get(cause, 0) + 1
            causes = ", ".join(f"{cause}: {count}" for cause, count in sorted(counts.items()))
            parts.append(f"{len(self.mismatches)} mismatches ({causes})")
        if self.only_tool:
            parts.append(f"{len(self.only_tool)} queries only in tool")
        if self.only_reference_nonzero:
            parts.append(f"{self.only_reference_nonzero} nonzero queries missing")
        return "; ".join(parts)


def compare(reference: dict[str, float], values: dict[str, float], tolerance: float) -> Agreement:
    common = reference.keys() & values.keys()
    mismatches = {
        query: (reference[query], values[query])
        for query in sorted(common)
        if not (abs(reference[query] - values[query]) <= tolerance)
    }
    only_reference = sorted(reference.keys() - values.keys())
    return Agreement(
        n_reference=len(reference),
        n_tool=len(values),
        n_common=len(common),
        only_reference=only_reference,
        only_reference_nonzero=sum(1 for query in only_reference if reference[query] != 0.0),
        only_tool=sorted(values.keys() - reference.keys()),
        mismatches=mismatches,
        max_difference=max((abs(a - b) for a, b in mismatches.values()), default=0.0),
    )


def _dcg(gains: Sequence[float]) -> float:
    return sum(gain / math.log2(position + 2) for position, gain in enumerate(gains[:CUTOFF]))


def explain_mismatches(agreements: dict[str, Agreement], inputs: Inputs) -> None:
    """For each mismatched query, say whether the tool's value is what a different order of tied documents gives
    (`benchmarks/explain.py` then reproduces the tools' own orders):
    - `float32 ties`: trec_eval 9's order (scores rounded to float32, then doc id descending) gives the tool's value
      and exactly equal scores leave no choice;
    - `tie order`: the value lies between the best and worst orders of documents with exactly equal scores;
    - `float32 tie order`: the same with the groups of equal float32 scores;
    - `unexplained` otherwise. Values are matched within the tool's tolerance."""
    wanted = sorted({query for agreement in agreements.values() for query in agreement.mismatches})
    if not wanted:
        return
    import numpy as np
    import polars as pl

    run = (
        pl.scan_parquet(inputs.run_parquet)
        .filter(pl.col("query_id").is_in(wanted))
        .select("query_id", "doc_id", "score")
        .collect()
    )
    qrels = (
        pl.scan_csv(
            inputs.qrels, separator=" ", has_header=False, new_columns=["query_id", "iteration", "doc_id", "grade"],
            schema_overrides={"query_id": pl.String, "iteration": pl.String, "doc_id": pl.String, "grade": pl.Int64},
        )
        .filter(pl.col("query_id").is_in(wanted))
        .collect()
    )
    grades = {(q, d): g for q, d, g in qrels.select("query_id", "doc_id", "grade").iter_rows()}
    ideal = {
        query: _dcg(sorted((max(g, 0) for g in group["grade"].to_list()), reverse=True))
        for (query,), group in qrels.group_by("query_id")
    }
    per_query = {query: group for (query,), group in run.group_by("query_id")}

    def ndcg(order_gains: list[float], query: str) -> float:
        return _dcg(order_gains) / ideal[query] if ideal.get(query) else 0.0

    for tool, agreement in agreements.items():
        slack = TOOLS[tool].tolerance
        for query, (_, theirs) in agreement.mismatches.items():
            rows = per_query.get(query)
            if rows is None:
                agreement.causes[query] = "unexplained"
                continue
            docs = rows["doc_id"].to_list()
            scores64 = np.asarray(rows["score"].to_list(), dtype=np.float64)
            scores32 = scores64.astype(np.float32).astype(np.float64)
            gains = [max(grades.get((query, doc), 0), 0) for doc in docs]

            def ordered(keys: np.ndarray, tiebreak: list) -> list[float]:
                order = sorted(range(len(docs)), key=lambda i: (-keys[i], tiebreak[i]))
                return [gains[i] for i in order]

            descending_doc = [_Reverse(doc.encode()) for doc in docs]
            trec_eval9 = ndcg(ordered(scores32, descending_doc), query)
            best64 = ndcg(ordered(scores64, [-g for g in gains]), query)
            worst64 = ndcg(ordered(scores64, gains), query)
            best32 = ndcg(ordered(scores32, [-g for g in gains]), query)
            worst32 = ndcg(ordered(scores32, gains), query)
            if abs(trec_eval9 - theirs) <= slack and abs(best64 - worst64) <= slack:
                cause = "float32 ties"
            elif worst64 - slack <= theirs <= best64 + slack and best64 - worst64 > slack:
                cause = "tie order"
            elif worst32 - slack <= theirs <= best32 + slack and best32 - worst32 > slack:
                cause = "float32 tie order"
            else:
                cause = "unexplained"
            agreement.causes[query] = cause


class _Reverse:
    """Sort key for descending byte order (trec_eval breaks score ties by doc id, strcmp, descending)."""

    __slots__ = ("value",)

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __lt__(self, other: _Reverse) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reverse) and self.value == other.value


# -- the benchmark ------------------------------------------------------------------------------------------------


@dataclass
class ToolResult:
    tool: str
    command: str
    env: dict[str, str]
    codes: list[str] = field(default_factory=list)  # code_fingerprint() before each repetition
    load: list[float] = field(default_factory=list)  # 1-minute load average before each repetition
    measurements: list[Measurement] = field(default_factory=list)
    skipped: str | None = None
    agreement: Agreement | None = None
    outputs_identical: bool = True

    @property
    def ok_runs(self) -> list[Measurement]:
        return [m for m in self.measurements if m.exit_code == 0]

    def median(self, attribute: str) -> float | None:
        values = [getattr(m, attribute) for m in self.ok_runs if getattr(m, attribute) is not None]
        return statistics.median(values) if values else None

    @property
    def failed(self) -> str | None:
        bad = [m for m in self.measurements if m.exit_code != 0]
        if not bad:
            return None
        return f"exit {bad[0].exit_code} in {len(bad)}/{len(self.measurements)} reps: {bad[0].stderr_tail[-300:]}"


@dataclass
class Report:
    size: str
    reps: int
    machine: dict[str, str]
    manifest: dict
    inputs: Inputs
    results: list[ToolResult]
    reference: str | None = None  # whose output the others were compared with

    def result(self, tool: str) -> ToolResult | None:
        return next((r for r in self.results if r.tool == tool), None)


def cpu_model() -> str:
    """The first processor's model name, with its family, model number and clock from /proc/cpuinfo: a virtual
    machine often names only the brand ("Intel(R) Xeon(R) Processor"), and the numbers tell its generations apart."""
    found: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if not key and found:
                break  # the first processor's block ends
            found.setdefault(key, value.strip())
    except OSError:
        pass
    name = found.get("model name") or platform.processor() or platform.machine()
    details = [f"{label} {found[key]}" for key, label in (("cpu family", "family"), ("model", "model"),
                                                          ("cpu MHz", "MHz")) if found.get(key)]
    return f"{name} ({', '.join(details)})" if details else name


def machine_info() -> dict[str, str]:
    cpu = cpu_model()
    memory = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    versions = []
    for package in ("judged", "polars", "pyarrow", "numpy", "duckdb", "prefect", "pytrec-eval-terrier", "ir-measures",
                    "ranx", "numba", "pandas", "psutil"):
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    commit = "?"
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "flows", "transforms", "schemas"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        if dirty:
            commit += " + uncommitted changes in flows/transforms/schemas"
    except (OSError, subprocess.CalledProcessError):
        pass
    return {
        "cpu": cpu,
        "cores": f"{os.cpu_count()} ({usable} usable)",
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "packages": ", ".join(versions),
        "judged commit": commit,
        "trec_eval": os.environ.get("TREC_EVAL", "not set"),
        "timer": f"{TIME_BINARY} -f '%e %M %U %S'" if os.access(TIME_BINARY, os.X_OK) else "perf_counter + psutil",
    }


def code_fingerprint() -> str:
    """sha256 (16 hex) of judged's source as it is on disk now (flows, transforms, schemas): judged is measured as
    it was when each tool ran, so a change during a benchmark shows up as two fingerprints."""
    digest = hashlib.sha256()
    for folder in ("flows", "transforms", "schemas"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".sql"):
                digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _command_text(argv: list[str], env: dict[str, str], output: str) -> str:
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    return (prefix + " " if prefix else "") + shlex.join(argv) + f" > {output}"


def default_tools(size: str) -> list[str]:
    if size == "XL":
        return list(XL_TOOLS)
    return [name for name in TOOLS if name != "trec_eval" or os.environ.get("TREC_EVAL")]


def byte_compile_judged(log: Callable[[str], None]) -> None:
    """Byte-compile judged's sources, as installing its wheel does. An editable install compiles them on first
    import and keeps the bytecode, except where PYTHONDONTWRITEBYTECODE is set: then every `judged` process would
    compile them again at its start, a cost no installed copy pays (benchmarks/README.md, "What is measured")."""
    import compileall

    root = Path(__file__).resolve().parents[1]
    compiled = [compileall.compile_dir(root / name, quiet=1) for name in ("flows", "schemas", "transforms")]
    compiled.append(compileall.compile_file(root / "__init__.py", quiet=1))
    log("judged's sources byte-compiled" if all(compiled) else "judged's sources: some did not byte-compile")


def run_benchmark(
    size: str,
    data_dir: str | Path = DEFAULT_DATA_DIR,
    reps: int = 3,
    tools: Sequence[str] | None = None,
    judged_run: str | Path | None = None,
    stored_run: str | Path | None = None,
    timeout: float | None = None,
    tool_reps: dict[str, int] | None = None,
    max_rss_mib: float | None = None,
    log: Callable[[str], None] = lambda message: print(message, file=sys.stderr, flush=True),
    shuffled: bool = False,
) -> Report:
    """Generate (or reuse) the files of `size` under `data_dir/size` (`data_dir/size-shuffled` for the shuffled
    variant), run every tool `reps` times, compare."""
    tools = list(tools) if tools else default_tools(size)
    unknown = [name for name in tools if name not in TOOLS]
    if unknown:
        raise ValueError(f"unknown tools {unknown}; choose from {', '.join(TOOLS)}")
    variant = f"{size}-shuffled" if shuffled else size
    data = Path(data_dir) / variant
    log(f"data: {data} (generating {variant} if needed)")
    manifest = generate(size, data, quiet=True, shuffled=shuffled)
    work = Path(data_dir) / "work" / variant
    work.mkdir(parents=True, exist_ok=True)
    run_text = data / "run.txt"
    inputs = Inputs(
        qrels=data / "qrels.txt",
        run_text=run_text if run_text.is_file() else None,
        run_parquet=data / "run.parquet",
        judged_run=Path(judged_run) if judged_run else data / "run.parquet",
        stored_run=Path(stored_run) if stored_run else None,
        work=work,
        prefect_home=Path(data_dir) / "prefect-home",
        run_rows=int(manifest["run_rows"]),
    )
    inputs.prefect_home.mkdir(parents=True, exist_ok=True)
    byte_compile_judged(log)
    if "judged-stored" in tools and inputs.stored_run is None:
        inputs = replace(inputs, stored_run=prepare_stored_run(inputs, timeout, log))
    results: list[ToolResult] = []
    try:
        _run_tools(tools, inputs, reps, tool_reps, timeout, max_rss_mib, results, log)
    finally:
        if (inputs.prefect_home / "judged-server").is_dir():
            stop_local_server(inputs, log)
    reference = _check_agreement(results, inputs, log)
    return Report(size, reps, machine_info(), manifest, inputs, results, reference)


def _run_tools(
    tools: list[str], inputs: Inputs, reps: int, tool_reps: dict[str, int] | None, timeout: float | None,
    max_rss_mib: float | None, results: list[ToolResult], log: Callable[[str], None],
) -> None:
    """Every repetition of every tool, each measured into `results`."""
    work = inputs.work
    for name in tools:
        tool = TOOLS[name]
        env = tool.env(inputs)
        command = _command_text(tool.argv(inputs, Path("<fresh temporary dir>")), env, f"{work}/{name}.repN.out")
        result = ToolResult(name, command, env)
        results.append(result)
        reason = tool.needs(inputs)
        if not reason and tool.expected_peak_mib:
            reason = memory_shortfall(tool.expected_peak_mib(inputs), available_memory_mib(), max_rss_mib)
        if reason:
            result.skipped = reason
            log(f"{name}: skipped ({reason})")
            continue
        n_reps = (tool_reps or {}).get(name, reps)
        for rep in range(1, n_reps + 1):
            result.load.append(os.getloadavg()[0])
            result.codes.append(code_fingerprint())
            scratch = Path(tempfile.mkdtemp(prefix=f"{name}-rep{rep}-", dir=work))
            cold = name in FLOW_TOOLS and server_to_start(inputs)
            try:
                m = measure(tool.argv(inputs, scratch), work / f"{name}.rep{rep}.out", env, timeout, max_rss_mib)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)  # the warehouse is fresh for every repetition
            m.started_server = cold
            result.measurements.append(m)
            peak = f"{m.peak_rss_mib:.0f} MiB" if m.peak_rss_mib is not None else "?"
            failed = f", exit {m.exit_code}" if m.exit_code else ""
            log(f"{name} rep {rep}/{n_reps}: {m.wall:.2f} s, {peak}, load before {result.load[-1]:.2f}{failed}")
            if m.exit_code:
                log(f"  {m.stderr_tail}")


def prepare_stored_run(inputs: Inputs, timeout: float | None, log: Callable[[str], None]) -> Path | None:
    """Ingest the run once, untimed by the table (its figures are logged), into a fresh warehouse of this
    benchmark; returns the stored run's folder."""
    warehouse = inputs.work / "stored-warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    output = inputs.work / "stored-ingest.out"
    m = measure(_ingest_args(inputs, warehouse), output, _flow_env(inputs), timeout, None)
    stored = output.read_text().split() if m.exit_code == 0 else []
    if "stored" not in stored:
        log(f"judged-stored: the ingest failed (exit {m.exit_code}): {m.stderr_tail[-300:]}")
        return None
    run_id = stored[stored.index("run") + 1]
    log(f"judged-stored: ingested run {run_id} for it in {m.wall:.2f} s, peak {m.peak_rss_mib:.0f} MiB (untimed)")
    return warehouse / "run_rows" / run_id


def _check_agreement(results: list[ToolResult], inputs: Inputs, log: Callable[[str], None]) -> str | None:
    """Compare every tool's values with judged's; returns what the reference was (None: no check was possible)."""
    # judged's trec_eval preset: from the text path, else from another judged path that was measured (XL has no
    # text), else computed once, untimed.
    reference_result = next(
        (r for name in JUDGED_TOOLS for r in results if r.tool == name and r.ok_runs), None
    )
    if reference_result is not None:
        reference_file = reference_result.ok_runs[0].output
        reference_name = reference_result.tool
        if reference_result.tool != REFERENCE:
            log(f"reference: the output of {reference_result.tool}")
    elif any(r.tool in JUDGED_TOOLS for r in results):
        log("reference: no judged path succeeded; agreement not checked")
        return None
    else:  # judged was not benchmarked: compute the reference once, untimed
        reference_file = inputs.work / "reference.out"
        source = inputs.run_text if inputs.run_text else inputs.run_parquet
        log(f"reference: judged trec_eval preset on {source.name} (untimed)")
        reference_name = f"judged on {source.name}, untimed"
        with reference_file.open("wb") as out:
            subprocess.run(_judged_args(inputs.qrels, source), stdout=out, check=True)
    reference = read_values(reference_file)
    agreements: dict[str, Agreement] = {}
    for result in results:
        if not result.ok_runs or not TOOLS[result.tool].prints_values:
            continue
        digests = {hashlib.sha256(m.output.read_bytes()).hexdigest() for m in result.ok_runs}
        result.outputs_identical = len(digests) == 1
        result.agreement = compare(reference, read_values(result.ok_runs[-1].output), TOOLS[result.tool].tolerance)
        agreements[result.tool] = result.agreement
    explain_mismatches(agreements, inputs)
    return reference_name


# -- printing -----------------------------------------------------------------------------------------------------


def _format(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _fingerprints(report: Report) -> str:
    seen = sorted({code for r in report.results for code in r.codes})
    if len(seen) <= 1:
        return (seen[0] if seen else "-") + " (unchanged during the run)"
    return "CHANGED during the run (judged's source was edited while it was measured): " + ", ".join(
        f"{r.tool} {'/'.join(code[:8] for code in r.codes)}" for r in report.results if r.codes)


def table_rows(report: Report) -> list[list[str]]:
    reference = report.result(REFERENCE)
    reference_wall = reference.median("wall") if reference else None
    rows = []
    for result in report.results:
        if result.skipped:
            rows.append([result.tool, *["-"] * (len(HEADER) - 2), f"skipped: {result.skipped}"])
            continue
        wall = result.median("wall")
        ratio = f"{wall / reference_wall:.1f}x" if wall and reference_wall else "-"
        reps = " / ".join(_format(m.wall, 2) + ("^" if m.started_server else "") + ("!" if m.exit_code else "")
                          for m in result.measurements)
        if result.failed and not result.ok_runs:
            agreement = f"FAILED ({result.failed.splitlines()[0]})"
        else:
            agreement = result.agreement.summary() if result.agreement else "-"
            if result.tool == report.reference and agreement == "ok":
                agreement = "reference"
            if result.failed:
                agreement += f"; {result.failed.splitlines()[0]}"
            if not result.outputs_identical:
                agreement += "; outputs differ between reps"
        load = " / ".join(f"{value:.1f}" for value in result.load)
        rows.append([result.tool, _format(wall, 2), reps, spread(result), _format(result.median("cpu"), 2), load,
                     _format(result.median("peak_rss_mib"), 0),
                     _format(result.median("tree_rss_mib"), 0), ratio, agreement])
    return rows


def spread(result: ToolResult) -> str:
    """The run-to-run spread of a tool's successful repetitions: the range of their walls, and that range as a share
    of their median ("-" for fewer than two)."""
    walls = [m.wall for m in result.ok_runs if m.wall is not None]
    if len(walls) < 2:
        return "-"
    low, high = min(walls), max(walls)
    return f"{low:.2f}-{high:.2f} ({(high - low) / statistics.median(walls):.0%})"


HEADER = ["tool", "wall median (s)", "reps (s)", "spread: min-max (s, % of median)", "CPU user+sys median (s)",
          "load avg before reps",
          "peak RSS median (MiB)", "tree RSS sum, sampled (MiB)",
          "wall vs judged-text", "agreement with judged trec_eval preset"]


def speed_ups(report: Report, markdown: bool = False) -> list[str]:
    """How many times faster each judged path was than each other tool (their median walls; a flow tool's over the
    repetitions on a running local server when it has any, as a warehouse command after the first finds it), and the
    ingest rate."""
    def wall(tool: str) -> float | None:
        result = report.result(tool)
        return result.median("wall") if result and not result.skipped else None

    def judged_wall(tool: str) -> float | None:
        if tool in FLOW_TOOLS and wall(tool):
            return warm_wall(report.result(tool))  # type: ignore[arg-type]
        return wall(tool)

    judged = [tool for tool in JUDGED_TOOLS if judged_wall(tool)]
    others = [tool for tool in REFERENCE_TOOLS if wall(tool)]
    lines = []
    if any(m.started_server for r in report.results for m in r.measurements):
        lines.append("^: the repetition started a Prefect server (no local server ran; the later flow commands "
                     "reuse the one it started, unless each starts Prefect's temporary server)")
    if judged and others:
        header = ["speed-up (tool wall / judged wall)", *others]
        rows = [[tool, *(f"{wall(other) / judged_wall(tool):.1f}x" for other in others)]  # type: ignore[operator]
                for tool in judged]
        if markdown:
            lines += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            lines += ["| " + " | ".join(row) + " |" for row in rows]
        else:
            widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
            lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *rows]]
        warm = [tool for tool in judged if tool in FLOW_TOOLS and judged_wall(tool) != wall(tool)]
        if warm:
            lines.append(f"({', '.join(warm)}: the median of the repetitions on a running local server, "
                         + ", ".join(f"{judged_wall(tool):.2f} s" for tool in warm) + ")")
    for tool in INGEST_TOOLS:
        ingest = wall(tool)
        if not ingest:
            continue
        rows_count = report.manifest["run_rows"]
        name = f"{tool} ({_ingest_source(report.inputs, tool).name})"
        lines.append(f"{name}: {rows_count:,} rows in {ingest:.2f} s whole process (Prefect's flow included, on "
                     f"the local server the first flow command started) = {rows_count / ingest / 1e6:.2f}M rows/s")
        stores = [store_seconds(m.output) for m in report.result(tool).ok_runs]  # type: ignore[union-attr]
        stores = [seconds for seconds in stores if seconds]
        if stores:
            store = statistics.median(stores)
            lines.append(f"{name}, the reading and storing itself (as `judged ingest-run` reports it): "
                         f"{store:.2f} s = {rows_count / store / 1e6:.2f}M rows/s")
        phases = store_phases([m.output for m in report.result(tool).ok_runs])  # type: ignore[union-attr]
        if phases:
            lines.append(f"{name}, where the store's time went (`judged ingest-run --profile`, medians; CPU is the "
                         "whole process's): " + "; ".join(f"{phase} {wall:.2f} s wall / {cpu:.2f} s CPU"
                                                          for phase, (wall, cpu) in phases.items()))
    return lines


def warm_wall(result: ToolResult) -> float | None:
    """A flow tool's median wall over its repetitions on a running local server (a warehouse command after the
    first); over all of them when every one started it."""
    warm = [m.wall for m in result.ok_runs if not m.started_server and m.wall is not None]
    return statistics.median(warm) if warm else result.median("wall")


def store_phases(outputs: list[Path]) -> dict[str, tuple[float, float]]:
    """Per phase that `judged ingest-run --profile` printed ("phase NAME: W s wall, C s CPU"), the median wall and
    CPU seconds over the repetitions' outputs."""
    found: dict[str, list[tuple[float, float]]] = {}
    for output in outputs:
        for name, wall, cpu in re.findall(r"^phase (.+): ([0-9.]+) s wall, ([0-9.]+) s CPU$", output.read_text(),
                                          re.MULTILINE):
            found.setdefault(name, []).append((float(wall), float(cpu)))
    return {name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
            for name, values in found.items()}


def fixed_cost_lines(report: Report) -> list[str]:
    """The fixed cost of a warehouse command: the seed's flow minus its direct path (the first repetition, which
    starts the local Prefect server unless one runs, apart from the later ones), and at this size the flow minus
    the run's store and its stored evaluation, as the issue defines it."""
    def ok(tool: str) -> list[Measurement]:
        result = report.result(tool)
        return result.ok_runs if result and not result.skipped else []

    lines = []
    seed_flow, seed = ok("judged-seed-flow"), ok("judged-seed")
    if seed_flow and seed:
        direct = statistics.median(m.wall for m in seed)  # type: ignore[type-var]
        direct_cpu = statistics.median(m.cpu or 0.0 for m in seed)
        first, later = seed_flow[0], seed_flow[1:]
        lines.append(f"fixed cost of a warehouse command (judged-seed-flow minus judged-seed, {direct:.2f} s wall, "
                     f"{direct_cpu:.2f} s CPU): first repetition {first.wall - direct:.2f} s wall "  # type: ignore[operator]
                     f"({(first.cpu or 0.0) - direct_cpu:.2f} s CPU)")
        if later:
            walls = statistics.median(m.wall for m in later)  # type: ignore[type-var]
            cpus = statistics.median(m.cpu or 0.0 for m in later)
            lines[-1] += (f", later ones (the server reused) median {walls - direct:.2f} s wall "
                          f"({cpus - direct_cpu:.2f} s CPU)")
    stored = ok("judged-stored")
    flow_sources = {"judged-flow": report.inputs.judged_run, "judged-flow-text": report.inputs.run_text}
    for flow_tool, source in flow_sources.items():
        flow = ok(flow_tool)
        # The store of the same file when it was measured, else of the other one (the line names which).
        ingests = sorted(INGEST_TOOLS, key=lambda tool: _ingest_source(report.inputs, tool) != source)
        ingest_tool = next((tool for tool in ingests if ok(tool)), None)
        if not (flow and stored and ingest_tool):
            continue
        stores = [seconds for m in ok(ingest_tool) if (seconds := store_seconds(m.output))]
        if not stores:
            continue
        later_flow = flow[1:] or flow
        rest = (statistics.median(m.wall for m in later_flow) - statistics.median(stores)  # type: ignore[type-var]
                - statistics.median(m.wall for m in stored))  # type: ignore[type-var]
        lines.append(f"{flow_tool} minus the run's store ({ingest_tool}'s reported seconds, "
                     f"{_ingest_source(report.inputs, ingest_tool).name}) and its stored evaluation "
                     f"(judged-stored): {rest:.2f} s ({flow_tool}'s repetitions after the first)")
    return lines


def store_seconds(output: Path) -> float | None:
    """The seconds `judged ingest-run` reports for reading and storing ("stored run ID (N rows) in S s ...")."""
    found = re.search(r"rows\) in ([0-9.]+) s", output.read_text())
    return float(found.group(1)) if found else None


def format_report(report: Report, markdown: bool = False) -> str:
    m = report.manifest
    lines = [
        f"judged benchmark, size {report.size}{' (shuffled run)' if m.get('shuffled') else ''}: {m['queries']:,} "
        f"queries x {m['depth']:,} docs; {m['run_rows']:,} run rows, {m['judgments']:,} judgments; {m['ties']:,} exact "
        f"score ties; {m['judged_queries_missing_from_run']} "
        f"judged queries missing from the run, {m['run_queries_without_judgments']} run queries without judgments, "
        f"{m['judged_queries_without_relevant']} judged queries without a relevant judgment; seed {m['seed']}; "
        f"{report.reps} reps (unless the reps column shows fewer), medians",
        "judged source fingerprint when each tool ran: " + _fingerprints(report),
        "machine: " + "; ".join(f"{key}: {value}" for key, value in report.machine.items()),
        "",
    ]
    rows = table_rows(report)
    if markdown:
        lines.append("| " + " | ".join(HEADER) + " |")
        lines.append("|" + "|".join("---" for _ in HEADER) + "|")
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    else:
        widths = [max(len(row[i]) for row in [HEADER, *rows]) for i in range(len(HEADER))]
        lines.append("  ".join(h.ljust(w) for h, w in zip(HEADER, widths)).rstrip())
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines += ["", *speed_ups(report, markdown), *fixed_cost_lines(report)]
    lines += ["", f"agreement details (reference: {report.reference or 'none'}, `--preset trec_eval`, "
                  "trec_eval 10 -c semantics):"]
    for result in report.results:
        a = result.agreement
        if a is None:
            continue
        detail = (f"- {result.tool}: {a.n_common:,} common queries (judged {a.n_reference:,}, tool {a.n_tool:,}); "
                  f"{len(a.only_reference)} only in judged")
        if a.only_reference:
            detail += (" (all judged queries missing from the run, which judged scores 0 as trec_eval -c does)"
                       if not a.only_reference_nonzero else f", {a.only_reference_nonzero} of them nonzero")
        detail += f"; {len(a.only_tool)} only in the tool; {len(a.mismatches)} values differ by more than " \
                  f"{TOOLS[result.tool].tolerance:g}"
        if a.mismatches:
            counts: dict[str, int] = {}
            for query in a.mismatches:
                counts[a.causes.get(query, "unexplained")] = counts.get(a.causes.get(query, "unexplained"), 0) + 1
            detail += f" (max difference {a.max_difference:.6f}; causes: " + ", ".join(
                f"{cause} {count}" for cause, count in sorted(counts.items())) + ")"
            examples = list(a.mismatches.items())[:3]
            detail += "; e.g. " + ", ".join(f"{q}: judged {x:.6f} vs {y:.6f} ({a.causes.get(q, '?')})"
                                            for q, (x, y) in examples)
        lines.append(detail)
    lines += ["", "commands (stdout to the file shown; each repetition is a fresh process):"]
    for result in report.results:
        lines.append(f"- {result.tool}: {result.command}")
    return "\n".join(lines)


def report_json(report: Report) -> dict:
    return {
        "size": report.size,
        "reps": report.reps,
        "machine": report.machine,
        "manifest": report.manifest,
        "results": [
            {
                "tool": r.tool,
                "command": r.command,
                "code_fingerprints": r.codes,
                "skipped": r.skipped,
                "walls": [m.wall for m in r.measurements],
                "cpu": [m.cpu for m in r.measurements],
                "load_before": r.load,
                "peak_rss_mib": [m.peak_rss_mib for m in r.measurements],
                "tree_rss_mib": [m.tree_rss_mib for m in r.measurements],
                "exit_codes": [m.exit_code for m in r.measurements],
                "started_server": [m.started_server for m in r.measurements],
                "agreement": None if r.agreement is None else {
                    "summary": r.agreement.summary(),
                    "common": r.agreement.n_common,
                    "only_judged": len(r.agreement.only_reference),
                    "only_tool": len(r.agreement.only_tool),
                    "mismatches": {q: list(v) for q, v in r.agreement.mismatches.items()},
                    "causes": r.agreement.causes,
                },
            }
            for r in report.results
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=list(SIZES), default="S")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tools", help=f"Comma list from: {', '.join(TOOLS)}. Default: all that can run "
                                        f"(XL: {', '.join(XL_TOOLS)}).")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR),
                        help="Generated data and outputs (default %(default)s)")
    parser.add_argument("--judged-run", help="Run input for judged's Parquet and flow paths (default: run.parquet)")
    parser.add_argument("--stored-run", help="A stored run folder (W/run_rows/<run_id>) for judged-stored "
                                             "(default: ingest the run into a fresh warehouse first, untimed)")
    parser.add_argument("--timeout", type=float, help="Seconds after which a repetition is killed (counts as failed)")
    parser.add_argument("--tool-reps", help="Per-tool repetitions overriding --reps, e.g. ranx-text=1,ranx-parquet=1")
    parser.add_argument("--max-rss-mib", type=float, help="Kill a repetition whose process tree's sampled RSS "
                                                          "passes this many MiB (counts as failed)")
    parser.add_argument("--markdown", action="store_true", help="Print the table as markdown")
    parser.add_argument("--shuffled", action="store_true", help="The generator's shuffled variant: each run's rows "
                                                                "in random order (data in <data-dir>/<size>-shuffled)")
    args = parser.parse_args(argv)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()] if args.tools else None
    tool_reps = {}
    for item in (args.tool_reps or "").split(","):
        if item.strip():
            name, _, count = item.partition("=")
            tool_reps[name.strip()] = int(count)
    report = run_benchmark(args.size, args.data_dir, args.reps, tools, args.judged_run, args.stored_run, args.timeout,
                           tool_reps, args.max_rss_mib, shuffled=args.shuffled)
    print(format_report(report, args.markdown))
    results_file = report.inputs.work / "results.json"
    results_file.write_text(json.dumps(report_json(report), indent=1, default=str))
    print(f"\n(raw results: {results_file})")
    broken = [r.tool for r in report.results if r.agreement and r.agreement.unexplained]
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
