"""The pipeline's Prefect flows: ingest judgments, ingest runs, evaluate, and the nightly job over an inbox.

Belongs here: flows that read as the pipeline's story and thin tasks around plain functions (which stay testable
without orchestration). Tasks pass paths, identifiers and content hashes, never DataFrames.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl
from prefect import flow, get_run_logger, task
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.runtime import flow_run
from prefect.settings import (
    PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings,
)

from judged.flows.engine.evaluate import (
    EvaluationResult, Part, Plan, assemble, check_before_storing, evaluate, evaluate_part, plan,
)
from judged.flows.store.hashing import content_hashes
from judged.flows.store.readers import SIDECAR_SUFFIX, Metadata, load_table, open_stored
from judged.flows.engine.limits import DEFAULT_LIMITS, Limits
from judged.flows.engine.phases import Phases
from judged.flows.report.text import interval_lines
from judged.flows.engine.ties import with_tie_warning
from judged.flows.engine.versions import implementation_commit, implementation_version, library_versions
from judged.flows.store.warehouse import StoreReport, Store, hold_lock, now_utc, write_parquet_atomically
from judged.flows.report.wording import counted
from judged.schemas.provenance import METHOD_VERSION, InputRecord, ProvenanceRecord
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import EVALUATIONS, NIGHTLY, STORED_PER_QUERY, STORED_SUMMARY
from judged.transforms.errors import InputError

DEFAULT_WAREHOUSE = "warehouse"
# Shards evaluated at once in one process: each already uses every core through Polars, and memory grows with each.
LOCAL_SHARD_WORKERS = 2
PROCESSED = "processed"
REJECTED = "rejected"
# Files a nightly process is handling: <inbox>/.claimed/<claim id>/<file>, held by a lock on <claim id>.lock.
CLAIMED = ".claimed"
# In a claim folder, made just before the claim's run is stored: whether the warehouse already had that run. A
# rerun after a kill that came after the store reads it, so the file's outcome is the one the first attempt saw.
RUN_WAS_NEW, RUN_WAS_STORED = ".run-was-new", ".run-was-already-stored"


# -- which Prefect API the flows report to (flows/pipeline/server.py chooses) ---------------------------------------------


def configured_api_url() -> str | None:
    """The Prefect API URL the user configured (environment, profile or prefect.toml), or None."""
    return get_current_settings().api.url


@contextmanager
def using_api(api_url: str | None) -> Iterator[None]:
    """Flows called in this block report to the Prefect API at `api_url` (None: Prefect's temporary server), a
    server judged chose, whose flow runs send no heartbeat unless one is configured.

    A flow run's heartbeat is an event every 180 s by default, for an automation that marks a silent run crashed;
    Prefect's heartbeat thread sleeps a second at a time, so every flow run waits up to a second for it at its end
    (benchmarks/README.md, the fixed cost of a warehouse command). judged's own crash safety does not rely on it
    (staged writes, the warehouse lock). A configured frequency, and any server the user configured, keep
    Prefect's behaviour."""
    updates: dict[Any, Any] = {} if api_url is None else {PREFECT_API_URL: api_url}
    if "heartbeat_frequency" not in get_current_settings().flows.model_fields_set:
        updates[PREFECT_FLOWS_HEARTBEAT_FREQUENCY] = None
    with temporary_settings(updates=updates):
        yield


# -- plain functions: what the tasks do ---------------------------------------------------------------------------


def ingest_file(
    warehouse: Store, path: str | Path, kind: str, metadata: Metadata | None = None,
    limits: Limits = DEFAULT_LIMITS, allow_empty: bool = False,
) -> StoreReport:
    """Read, validate and store one file. Bad input raises InputError and writes nothing (an empty table is bad
    input unless `allow_empty`). The report's `seconds` is the time this took (reading to the last file written),
    without any orchestration around it, and its `phases` where that time went."""
    started = time.perf_counter()
    phases = Phases()
    with phases.measure("read and check"):
        loaded = load_table(path, kind, metadata, limits=limits, allow_empty=allow_empty)  # type: ignore[arg-type]
    report = warehouse.store_table(loaded, limits, phases)
    return replace(report, seconds=time.perf_counter() - started, phases=phases.as_tuples())


def check_inputs_before_storing(
    warehouse: Store, judgments: str, runs: list[str], specs: list[EvaluationSpec],
    judgments_metadata: Metadata | None = None, allow_empty: bool = False,
) -> None:
    """Every check that could refuse these inputs under these specs, before anything of them is stored: files are
    read and validated, ids resolved, and each run checked against the judgments as its evaluation would check it.
    Raises InputError naming the input. When nothing would be stored (every input is already in the warehouse),
    the evaluation's own checks refuse what is wrong, and these are skipped."""
    if not _stores_something(warehouse, judgments, runs):
        return
    judgment_table = (
        load_table(judgments, "judgments", judgments_metadata, allow_empty=allow_empty) if Path(judgments).is_file()
        else warehouse.load_stored("judgments", warehouse.resolve_judgment_set(judgments))
    )
    for run in runs:
        if Path(run).is_file():
            run_table = load_table(run, "run", allow_empty=allow_empty)
        elif Path(run).is_dir():
            run_table = open_stored(Path(run), "run").load()
        else:
            run_table = warehouse.load_stored("run", warehouse.require_run(run))
        for spec in specs:
            check_before_storing(run_table, judgment_table, spec)


def _stores_something(warehouse: Store, judgments: str, runs: list[str]) -> bool:
    """Whether evaluating these inputs would store any of them: a file, or a stored run from another warehouse."""
    return Path(judgments).is_file() or any(
        Path(run).is_file()
        or (Path(run).is_dir() and not warehouse.run_record(open_stored(Path(run), "run").table_id).exists())
        for run in runs
    )


def ingest_checked_run(
    warehouse: Store, path: str | Path, judgment_set_id: str, specs: list[EvaluationSpec],
    claim_folder: Path | None = None, allow_empty: bool = False,
) -> StoreReport:
    """Read and validate a run, check it against a stored judgment set under every spec, and only then store it:
    a run its evaluation would refuse is never stored. With a nightly `claim_folder`, whether the run was new is
    noted there before storing (see `run_was_new`)."""
    started = time.perf_counter()
    run = load_table(path, "run", allow_empty=allow_empty)
    judgments = warehouse.load_stored("judgments", judgment_set_id)
    for spec in specs:
        check_before_storing(run, judgments, spec)
    if claim_folder is not None and run_was_new(claim_folder) is None:
        note = RUN_WAS_STORED if warehouse.run_record(run.table_id).exists() else RUN_WAS_NEW
        (claim_folder / note).touch()
    report = warehouse.store_table(run)
    return replace(report, seconds=time.perf_counter() - started)


@dataclass(frozen=True)
class EvaluationReport:
    evaluation_id: str
    created: bool
    run_id: str
    judgment_set_id: str


def task_runner(dask: str | None) -> Any:
    """The task runner for shard tasks: the local thread pool by default; `local:N` for an in-process Dask
    cluster of N workers; any other value is the address of an existing Dask scheduler (tcp://host:8786), whose
    workers need judged installed and the warehouse directory at the same path."""
    if dask is None:
        return ThreadPoolTaskRunner(max_workers=LOCAL_SHARD_WORKERS)
    from prefect_dask import DaskTaskRunner

    if dask.startswith("local:"):
        workers = int(dask.removeprefix("local:") or "2")
        return DaskTaskRunner(
            cluster_class="distributed.LocalCluster",
            cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": False,
                            "dashboard_address": None},
        )
    return DaskTaskRunner(address=dask)


def _current_flow_run_id() -> str | None:
    run_id = flow_run.get_id()
    return str(run_id) if run_id else None


def result_tables(
    frame: pl.DataFrame, spec: EvaluationSpec, identifier: str, run_id: str, judgment_set_id: str
) -> pl.DataFrame:
    """Per-query rows or a summary with the evaluation's keys and each measure's labels, as stored."""
    measures = spec.measure_list()
    cutoffs = pl.DataFrame(
        {
            "measure": [m.family for m in measures],
            "cutoff": [m.cutoff for m in measures],
            "label": [spec.measure_label(m) for m in measures],
            "trec_eval_measure": [spec.measure_trec_eval_name(m) for m in measures],
        },
        schema={"measure": pl.String, "cutoff": pl.Int32, "label": pl.String, "trec_eval_measure": pl.String},
    )
    contract = STORED_PER_QUERY if "query_id" in frame.columns else STORED_SUMMARY
    return (
        frame.join(cutoffs, on=["measure", "cutoff"], how="left", nulls_equal=True, maintain_order="left")
        .with_columns(
            evaluation_id=pl.lit(identifier),
            run_id=pl.lit(run_id),
            judgment_set_id=pl.lit(judgment_set_id),
            spec_hash=pl.lit(spec.spec_hash),
        )
        .select(list(contract))
        .cast(contract)
    )


def stored_plan(
    warehouse: Store, run_id: str, judgment_set_id: str, spec: EvaluationSpec, limits: Limits = DEFAULT_LIMITS
) -> Plan:
    """The plan (engine.plan) of a stored run against a stored judgment set under a spec."""
    return plan(warehouse.stored("run", run_id), warehouse.stored("judgments", judgment_set_id), spec, limits)


def evaluate_shard(warehouse: Store, planned: Plan, part: Part) -> Path:
    """Evaluate one part of a stored plan; stage its per-query rows (and the warnings of its checks) for
    `finish_evaluation`. Returns the staged file."""
    per_query, warnings = evaluate_part(planned, part)
    staged = warehouse.staging_part(planned.evaluation_id, part.shard, part.of)
    write_parquet_atomically(per_query, staged, {"judged.warnings": json.dumps(warnings)}, warehouse.root)
    return staged


def finish_evaluation(
    warehouse: Store, planned: Plan, staged: list[Path], started: datetime, flow_run_id: str | None,
    run_moved_to: str | None = None,
) -> EvaluationReport:
    """Summary over every part, provenance, then the stored files (the record last); staging is removed.
    `run_moved_to` is where the run's file lies once the nightly job has moved it out of the inbox."""
    identifier, spec = planned.evaluation_id, planned.spec
    run_record, judgments_record = planned.run.record, planned.judgments.record  # type: ignore[union-attr]
    run_id, judgment_set_id = str(run_record["run_id"]), str(judgments_record["judgment_set_id"])
    parts = [pl.read_parquet(path) for path in staged]
    shard_warnings = [w for path in staged for w in json.loads(pl.read_parquet_metadata(path)["judged.warnings"])]
    # The tie warning evaluates the stored inputs again under the other tie rules, here in the finishing task, and
    # only when the share of queries with ties across a cutoff calls for it (its means need no intervals).
    result = with_tie_warning(assemble(planned, parts, shard_warnings),
                              partial(evaluate, planned.run, planned.judgments, limits=planned.limits, intervals=False))
    finished = now_utc()
    provenance = ProvenanceRecord(
        evaluation_id=identifier,
        label=spec.full_label(),
        spec=spec.canonical_payload(),
        spec_hash=spec.spec_hash,
        run=InputRecord.from_stored(run_id, run_record, run_moved_to),
        judgments=InputRecord.from_stored(judgment_set_id, judgments_record),
        implementation_version=implementation_version(),
        implementation_commit=implementation_commit(),
        libraries=library_versions(),
        flow_run_id=flow_run_id,
        started_at=started.isoformat(),
        finished_at=finished.isoformat(),
        warnings=result.warnings,
        method_version=METHOD_VERSION,
    )
    record = pl.DataFrame(
        [
            {
                "evaluation_id": identifier,
                "run_id": run_id,
                "judgment_set_id": judgment_set_id,
                "run_name": planned.run_name,
                "spec_hash": spec.spec_hash,
                "spec_json": spec.canonical_json(),
                "label": spec.full_label(),
                "implementation_version": provenance.implementation_version,
                "implementation_commit": provenance.implementation_commit,
                "flow_run_id": flow_run_id,
                "started_at": started,
                "finished_at": finished,
                "warnings": list(result.warnings),
                "provenance_json": provenance.to_json(),
                "method_version": provenance.method_version,
            }
        ],
        schema=EVALUATIONS,
    )
    keyed_parts = [result_tables(part, spec, identifier, run_id, judgment_set_id) for part in parts]
    summary = result_tables(result.summary, spec, identifier, run_id, judgment_set_id)
    created = warehouse.store_evaluation(record, keyed_parts, summary, provenance.to_json(), spec)
    warehouse.clear_staging(identifier)
    return EvaluationReport(identifier, created, run_id, judgment_set_id)



def load_result(warehouse: Store, evaluation_id: str) -> EvaluationResult:
    """A stored evaluation, in the shape the reports print."""
    record, per_query, summary = warehouse.load_evaluation(evaluation_id)
    keys = ["evaluation_id", "run_id", "judgment_set_id", "spec_hash", "label", "trec_eval_measure"]
    return EvaluationResult(
        run_name=record["run_name"],
        identify=lambda: evaluation_id,
        spec=EvaluationSpec.from_canonical_json(record["spec_json"]),
        per_query=per_query.drop(keys),
        summary=summary.drop(keys),
        warnings=tuple(record["warnings"]),
    )


def evaluation_markdown(warehouse: Store, reports: list[EvaluationReport]) -> str:
    """What was evaluated, the unjudged coverage at each cutoff, and the warnings: the flow's markdown artifact."""
    lines = ["# judged evaluation", ""]
    for report in reports:
        record, per_query, summary = warehouse.load_evaluation(report.evaluation_id)
        state = "new" if report.created else "already stored"
        lines += [
            f"## {record['run_name']} ({state})",
            f"- evaluation `{report.evaluation_id}`, run `{report.run_id}`, judgment set `{report.judgment_set_id}`",
            f"- method `{record['label']}`",
            "",
            "| measure | value | scored | missing | unjudged share |",
            "|---|---|---|---|---|",
        ]
        for row in summary.iter_rows(named=True):
            value = "undefined" if row["value"] is None else f"{row['value']:.4f}"
            share = "-" if row["mean_unjudged_fraction"] is None else f"{row['mean_unjudged_fraction']:.1%}"
            lines.append(f"| {row['trec_eval_measure'] or row['label']} | {value} | {row['n_scored']} "
                         f"| {row['n_missing']} | {share} |")
        lines += ["", "Intervals over the unjudged documents each run retrieved (closed world):", ""]
        lines += [f"- {line.strip()}" for line in interval_lines(per_query, summary)]
        lines += [""] + [f"- warning: {w}" for w in record["warnings"]] + [""]
    return "\n".join(lines)


def summary_rows(warehouse: Store, reports: list[EvaluationReport]) -> list[dict[str, object]]:
    rows = []
    for report in reports:
        record, _, summary = warehouse.load_evaluation(report.evaluation_id)
        for row in summary.iter_rows(named=True):
            rows.append({"run": record["run_name"], "measure": row["trec_eval_measure"] or row["label"],
                         "value": row["value"], "n_scored": row["n_scored"], "n_missing": row["n_missing"],
                         "mean_unjudged_fraction": row["mean_unjudged_fraction"],
                         "evaluation_id": report.evaluation_id})
    return rows


# -- tasks --------------------------------------------------------------------------------------------------------


@task(name="ingest-file")
def ingest_file_task(
    warehouse_root: str, path: str, kind: str, metadata: Metadata | None = None, limits: Limits = DEFAULT_LIMITS,
    allow_empty: bool = False,
) -> StoreReport:
    return _logged(path, kind, ingest_file(Store(warehouse_root), path, kind, metadata, limits, allow_empty))


def _logged(path: str, kind: str, report: StoreReport) -> StoreReport:
    """The report, after saying in the task's log what was stored."""
    what = "judgment set" if kind == "judgments" else kind
    if report.created:
        get_run_logger().info("%s: stored %s %s, %s in %.2f s", path, what, report.id, counted(report.n_rows, "row"),
                              report.seconds or 0.0)
    else:
        get_run_logger().info("%s: %s %s already stored (%s), nothing written", path, what, report.id,
                              counted(report.n_rows, "row"))
    return report


@task(name="check-inputs")
def check_inputs_task(
    warehouse_root: str, judgments: str, runs: list[str], spec_jsons: list[str], judgments_metadata: Metadata | None,
    allow_empty: bool = False,
) -> None:
    specs = [EvaluationSpec.from_canonical_json(text) for text in spec_jsons]
    check_inputs_before_storing(Store(warehouse_root), judgments, runs, specs, judgments_metadata, allow_empty)


@task(name="ingest-checked-run")
def ingest_checked_run_task(
    warehouse_root: str, path: str, judgment_set_id: str, spec_jsons: list[str], claim_folder: str | None = None,
    allow_empty: bool = False,
) -> StoreReport:
    specs = [EvaluationSpec.from_canonical_json(text) for text in spec_jsons]
    folder = Path(claim_folder) if claim_folder else None
    stored = ingest_checked_run(Store(warehouse_root), path, judgment_set_id, specs, folder, allow_empty)
    return _logged(path, "run", stored)


@task(name="plan-evaluation")
def plan_task(
    warehouse_root: str, run_id: str, judgment_set_id: str, spec: EvaluationSpec, limits: Limits
) -> tuple[Plan, bool]:
    """The stored plan, and whether its evaluation is already stored."""
    warehouse = Store(warehouse_root)
    planned = stored_plan(warehouse, run_id, judgment_set_id, spec, limits)
    stored = warehouse.has_evaluation(planned.evaluation_id)
    state = "already stored, reused" if stored else f"to evaluate in {counted(len(planned.parts), 'part')}"
    get_run_logger().info("evaluation %s of run %s against judgment set %s under %s: %s", planned.evaluation_id,
                          run_id, judgment_set_id, spec.full_label(), state)
    return planned, stored


@task(name="evaluate-shard")
def evaluate_shard_task(warehouse_root: str, planned: Plan, part: Part) -> str:
    started = time.perf_counter()
    staged = evaluate_shard(Store(warehouse_root), planned, part)
    get_run_logger().info("evaluation %s, part %d of %d: per-query rows staged in %s (%.2f s)",
                          planned.evaluation_id, part.shard + 1, part.of, staged, time.perf_counter() - started)
    return str(staged)


@task(name="finish-evaluation")
def finish_task(
    warehouse_root: str, planned: Plan, staged: list[str], started: datetime, run_moved_to: str | None = None
) -> EvaluationReport:
    warehouse = Store(warehouse_root)
    report = finish_evaluation(
        warehouse, planned, [Path(p) for p in staged], started, _current_flow_run_id(), run_moved_to
    )
    logger = get_run_logger()
    record, _, summary = warehouse.load_evaluation(report.evaluation_id)
    values = ", ".join(f"{row['trec_eval_measure'] or row['measure']} = "
                       f"{'undefined' if row['value'] is None else format(row['value'], '.4f')}"
                       for row in summary.iter_rows(named=True))
    logger.info("evaluation %s (%s) %s: %s", report.evaluation_id, record["run_name"],
                "stored" if report.created else "was already stored", values)
    for warning in record["warnings"]:
        logger.warning("%s: %s", record["run_name"], warning)
    return report


def evaluate_runs(
    warehouse_root: str,
    run_ids: list[str],
    judgment_set_id: str,
    specs: list[EvaluationSpec],
    limits: Limits = DEFAULT_LIMITS,
    moved_to: dict[str, str] | None = None,
) -> list[EvaluationReport]:
    """Inside a flow: every (run, spec) evaluation planned, the parts of each submitted to the flow's task runner
    (threads, or a Dask cluster), then each finished once all its parts are staged. Stored evaluations are reused.
    `moved_to` gives, per run id, where the nightly job puts the run's file (for the provenance record)."""
    started = now_utc()
    pending = []
    reports: dict[tuple[int, int], EvaluationReport] = {}
    for r, run_id in enumerate(run_ids):
        for s, spec in enumerate(specs):
            planned, stored = plan_task(warehouse_root, run_id, judgment_set_id, spec, limits)
            if stored:
                reports[(r, s)] = EvaluationReport(planned.evaluation_id, False, run_id, judgment_set_id)
                continue
            futures = [evaluate_shard_task.submit(warehouse_root, planned, part) for part in planned.parts]
            pending.append(((r, s), planned, futures))
    for key, planned, futures in pending:
        staged = [future.result() for future in futures]
        run_id = run_ids[key[0]]
        reports[key] = finish_task(warehouse_root, planned, staged, started, (moved_to or {}).get(run_id))
    return [reports[(r, s)] for r in range(len(run_ids)) for s in range(len(specs))]


@task(name="refresh-catalog", retries=2, retry_delay_seconds=1)
def refresh_catalog_task(warehouse_root: str) -> str:
    catalog = Store(warehouse_root).refresh_catalog()
    get_run_logger().info("catalog regenerated: %s", catalog)
    return str(catalog)


@task(name="publish-artifacts")
def publish_artifacts_task(warehouse_root: str, reports: list[EvaluationReport], report: str | None = None) -> None:
    warehouse = Store(warehouse_root)
    if reports:
        create_table_artifact(key="judged-summary", table=summary_rows(warehouse, reports),
                              description="Summary per run, measure and cutoff")
    link = f"\n[HTML report: runs compared, plots, provenance]({Path(report).as_uri()})\n" if report else ""
    create_markdown_artifact(key="judged-evaluation", markdown=evaluation_markdown(warehouse, reports) + link,
                             description="What was evaluated, unjudged coverage, warnings")
    get_run_logger().info("published the artifacts judged-summary and judged-evaluation (%s)",
                          counted(len(reports), "evaluation"))


# -- flows --------------------------------------------------------------------------------------------------------


@flow(name="ingest-judgments")
def ingest_judgments(
    path: str, warehouse: str = DEFAULT_WAREHOUSE, metadata: Metadata | None = None,
    rows_per_shard: int = DEFAULT_LIMITS.rows_per_shard, allow_empty: bool = False,
) -> StoreReport:
    """Validate a qrels file (TREC text, .gz or Parquet) and store it as a content-addressed judgment set, split
    into shards of about `rows_per_shard` rows by query. An empty one is refused unless `allow_empty`."""
    limits = replace(DEFAULT_LIMITS, rows_per_shard=rows_per_shard)
    report = ingest_file_task(warehouse, path, "judgments", metadata, limits, allow_empty)
    refresh_catalog_task(warehouse)
    return report


@flow(name="ingest-run")
def ingest_run(
    path: str, warehouse: str = DEFAULT_WAREHOUSE, metadata: Metadata | None = None,
    rows_per_shard: int = DEFAULT_LIMITS.rows_per_shard, allow_empty: bool = False,
) -> StoreReport:
    """Validate a run file (TREC text, .gz or Parquet) and store it as a content-addressed run, split into shards
    of about `rows_per_shard` rows by query. An empty one is refused unless `allow_empty`."""
    limits = replace(DEFAULT_LIMITS, rows_per_shard=rows_per_shard)
    report = ingest_file_task(warehouse, path, "run", metadata, limits, allow_empty)
    refresh_catalog_task(warehouse)
    return report


@flow(name="evaluate", task_runner=ThreadPoolTaskRunner(max_workers=LOCAL_SHARD_WORKERS))
def evaluate_flow(
    judgments: str,
    runs: list[str],
    spec_json: str,
    warehouse: str = DEFAULT_WAREHOUSE,
    judgments_metadata: Metadata | None = None,
    allow_empty: bool = False,
) -> list[EvaluationReport]:
    """Evaluate runs against one judgment set under one spec. `judgments` and each run are a file (ingested
    first), a stored run's folder (warehouse/run_rows/<run_id>, of this warehouse or another) or an id already in
    the warehouse (a judgment set may also be named: its latest version is used). Empty files are refused unless
    `allow_empty`."""
    spec = EvaluationSpec.from_canonical_json(spec_json)
    store = Store(warehouse)
    # before anything is stored
    check_inputs_task(warehouse, judgments, runs, [spec_json], judgments_metadata, allow_empty)
    judgment_set_id = _judgment_set(store, judgments, judgments_metadata, allow_empty)
    run_ids = [_run(store, run, allow_empty) for run in runs]
    reports = evaluate_runs(warehouse, run_ids, judgment_set_id, [spec])
    refresh_catalog_task(warehouse)
    publish_artifacts_task(warehouse, reports)
    return reports


def _run(store: Store, reference: str, allow_empty: bool = False) -> str:
    """A run file is ingested; a stored run's folder gives its id (its rows are stored here first when it comes
    from another warehouse); otherwise an id already in the warehouse."""
    path = Path(reference)
    if path.is_file():
        return ingest_file_task(str(store.root), reference, "run", allow_empty=allow_empty).id
    if path.is_dir():
        stored = open_stored(path, "run")
        if not store.run_record(stored.table_id).exists():
            store.store_table(stored.load())
        return stored.table_id
    return store.require_run(reference)


def _judgment_set(store: Store, reference: str, metadata: Metadata | None, allow_empty: bool = False) -> str:
    """A qrels file is ingested (nothing new if unchanged); otherwise an id, or a name meaning its latest version."""
    if Path(reference).is_file():
        return ingest_file_task(str(store.root), reference, "judgments", metadata, allow_empty=allow_empty).id
    return store.resolve_judgment_set(reference)


@dataclass(frozen=True)
class NightlyReport:
    flow_run_id: str
    evaluated: list[EvaluationReport]
    rejected: dict[str, str]  # file -> error


def prepare_inbox(inbox: Path) -> list[Path]:
    """Create the inbox and its processed/ and rejected/ folders where missing; returns those it created."""
    for folder in (inbox, inbox / PROCESSED, inbox / REJECTED):
        if folder.exists() and not folder.is_dir():
            raise InputError(str(folder), "is a file, not a folder: the inbox and its processed/ and rejected/ "
                                          "must be folders")
    created = []
    for folder in (inbox, inbox / PROCESSED, inbox / REJECTED):
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            created.append(folder)
    return created


def inbox_files(inbox: Path) -> list[Path]:
    """Run files waiting in the inbox (sidecars travel with their file; processed/, rejected/ and the claims of
    running nightlies are folders)."""
    return sorted(p for p in inbox.iterdir() if p.is_file() and not p.name.endswith(SIDECAR_SUFFIX)
                  and not p.name.startswith("."))


@dataclass(frozen=True)
class Claim:
    """A run file one nightly process has taken from the inbox: `<inbox>/.claimed/<id>/<file>`, held by a lock
    on `<id>.lock` until it is set aside (or the process ends, however it ends: then another takes it over)."""

    id: str
    file: Path
    lock: BinaryIO

    @property
    def folder(self) -> Path:
        return self.file.parent

    def release(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.with_name(f"{self.id}.lock").unlink(missing_ok=True)
        self.lock.close()


def claimed_files(inbox: Path) -> Iterator[Claim]:
    """The inbox's files, each claimed by this process just before it is handled: first the claims of nightly
    processes that died (their lock is free), then waiting files, each taken by renaming it into a claim folder of
    our own. A file another process renamed first is theirs: it is skipped, never handled twice."""
    claims = inbox / CLAIMED
    while True:
        claim = _take_over_dead_claim(claims) or _claim_waiting_file(inbox, claims)
        if claim is None:
            return
        yield claim


def run_was_new(claim_folder: Path) -> bool | None:
    """Whether the claim's run was new to the warehouse when the claim first came to store it; None before that."""
    if (claim_folder / RUN_WAS_NEW).exists():
        return True
    return False if (claim_folder / RUN_WAS_STORED).exists() else None


def _take_over_dead_claim(claims: Path) -> Claim | None:
    if not claims.is_dir():
        return None
    for folder in sorted(p for p in claims.iterdir() if p.is_dir()):
        lock = hold_lock(folder.with_name(f"{folder.name}.lock"))
        if lock is None:
            continue  # a live nightly is handling it
        files = sorted(p for p in folder.iterdir()
                       if not p.name.endswith(SIDECAR_SUFFIX) and not p.name.startswith("."))
        if not files:  # its file was already set aside (the file moves last) when its process died
            Claim(folder.name, folder / "-", lock).release()
            continue
        # A process killed between claiming the file and its sidecar left the sidecar in the inbox.
        _move_if_present(claims.parent / f"{files[0].name}{SIDECAR_SUFFIX}", folder)
        return Claim(folder.name, files[0], lock)
    return None


def _claim_waiting_file(inbox: Path, claims: Path) -> Claim | None:
    for path in inbox_files(inbox):
        claim_id = uuid.uuid4().hex
        claims.mkdir(exist_ok=True)
        lock = hold_lock(claims / f"{claim_id}.lock")
        if lock is None:
            continue
        claim = Claim(claim_id, claims / claim_id / path.name, lock)
        claim.folder.mkdir()
        try:
            os.rename(path, claim.file)
        except FileNotFoundError:  # another nightly claimed it first
            claim.release()
            continue
        _move_if_present(path.with_name(path.name + SIDECAR_SUFFIX), claim.folder)
        return claim
    return None


def _move_if_present(path: Path, folder: Path) -> None:
    try:
        os.rename(path, folder / path.name)
    except FileNotFoundError:
        pass


def free_target(path: Path, folder: Path) -> Path:
    """Where `path` goes in `folder`: its own name, or, when that is taken, its name with the time added."""
    target = folder / path.name
    if target.exists():
        target = folder / f"{path.stem}.{now_utc().strftime('%Y%m%dT%H%M%S%f')}{path.suffix}"
    return target


def set_aside(path: Path, target: Path, error: str | None = None) -> Path:
    """Move a processed or rejected file (and its sidecar) out of the inbox to `target` (see `free_target`); a
    rejected one gets its error beside it. The file moves last: while it is where it was, a rerun after a kill
    finishes setting it aside."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
    if sidecar.exists():
        shutil.move(sidecar, target.with_name(target.name + SIDECAR_SUFFIX))
    if error is not None:
        target.with_name(target.name + ".error.txt").write_text(error + "\n")
    shutil.move(path, target)
    return target


def _failure_message(error: BaseException | None) -> str:
    return str(error) if isinstance(error, InputError) else f"{type(error).__name__}: {error}"


def _night_of_one_file(
    store: Store, path: Path, inbox: Path, judgment_set_id: str, specs: list[EvaluationSpec], allow_empty: bool
) -> tuple[dict[str, Any], list[EvaluationReport]]:
    """Inside the nightly flow: check, store and evaluate one claimed run file. Returns its `nightly` row (with
    where the file is to be moved) and its evaluations; any failure makes a `rejected` row (a bad file never stops
    the night)."""
    warehouse = str(store.root)
    row: dict[str, Any] = {"file": path.name, "run_id": None, "evaluation_ids": [], "error": None,
                           "source_sha256": None}
    spec_jsons = [spec.canonical_json() for spec in specs]
    state = ingest_checked_run_task(warehouse, str(path), judgment_set_id, spec_jsons, str(path.parent), allow_empty,
                                    return_state=True)
    if state.is_failed():
        message = _failure_message(state.result(raise_on_failure=False))
        return row | {"outcome": "rejected", "error": message,
                      "moved_to": str(free_target(path, inbox / REJECTED).absolute())}, []
    stored: StoreReport = state.result()
    row["run_id"] = stored.id
    # Chosen before the evaluation, so that its provenance record names where the file will lie.
    target = free_target(path, inbox / PROCESSED).absolute()
    try:
        reports = evaluate_runs(warehouse, [stored.id], judgment_set_id, specs, moved_to={stored.id: str(target)})
    except Exception as error:  # checked before storing; whatever still fails is recorded, and the night goes on
        return row | {"outcome": "rejected", "error": _failure_message(error),
                      "moved_to": str(free_target(path, inbox / REJECTED).absolute())}, []
    # New to the warehouse when this file's claim first stored it, even if a killed attempt of this night did.
    new = bool(run_was_new(path.parent))
    source_sha256 = store.record("run", stored.id)["source_sha256"] if new else content_hashes(path)[0]
    return row | {"outcome": "evaluated" if new else "duplicate", "source_sha256": source_sha256,
                  "evaluation_ids": [r.evaluation_id for r in reports], "moved_to": str(target)}, reports


@flow(name="nightly", task_runner=ThreadPoolTaskRunner(max_workers=LOCAL_SHARD_WORKERS))
def nightly(
    inbox: str,
    judgments: str,
    spec_jsons: list[str],
    warehouse: str = DEFAULT_WAREHOUSE,
    allow_empty: bool = False,
) -> NightlyReport:
    """Every run file dropped into the inbox since the last night: ingest it, evaluate it against the current
    version of the judgment set under each spec, move it to processed/ (or rejected/ with its error), record.
    An empty run file is rejected, and empty judgments refused, unless `allow_empty`."""
    logger = get_run_logger()
    store = Store(warehouse).ensure()
    flow_run_id = _current_flow_run_id() or f"local-{now_utc().strftime('%Y%m%dT%H%M%S%f')}"
    started = now_utc()
    inbox_path = Path(inbox)
    for folder in prepare_inbox(inbox_path):
        logger.info("created %s (it was missing)", folder)
    judgment_set_id = _judgment_set(store, judgments, None, allow_empty)
    specs = [EvaluationSpec.from_canonical_json(text) for text in spec_jsons]
    waiting = inbox_files(inbox_path)
    logger.info("%s waiting in %s; judgment set %s; %s: %s", counted(len(waiting), "run file"), inbox_path,
                judgment_set_id, counted(len(specs), "spec"), ", ".join(spec.full_label() for spec in specs))
    evaluated: list[EvaluationReport] = []
    rejected: dict[str, str] = {}
    for claim in claimed_files(inbox_path):
        # The file's row is written as part of finishing it (keyed by its claim): a night killed after the row
        # and rerun sets the file aside without a second row.
        record = store.nightly_record(claim.id)
        if record.exists():
            row = pl.read_parquet(record).row(0, named=True)
            reports = [EvaluationReport(e, False, row["run_id"], judgment_set_id) for e in row["evaluation_ids"]]
        else:
            row, reports = _night_of_one_file(store, claim.file, inbox_path, judgment_set_id, specs, allow_empty)
            row |= {"flow_run_id": flow_run_id, "started_at": started, "judgment_set_id": judgment_set_id}
            store.store_nightly(claim.id, pl.DataFrame([row], schema=NIGHTLY))
        target = set_aside(claim.file, Path(row["moved_to"]), row["error"])
        if row["outcome"] == "rejected":
            logger.warning("%s rejected, moved to %s: %s", row["file"], target, row["error"])
            rejected[row["file"]] = row["error"]
        else:
            logger.info("%s evaluated (%s), moved to %s", row["file"], counted(len(reports), "evaluation"), target)
            evaluated += reports
        claim.release()
    logger.info("night recorded in %s: %s evaluated, %s rejected", store.root / "nightly",
                counted(len(evaluated), "evaluation"), counted(len(rejected), "file"))
    # the night's report: its runs under the first spec (evaluate_runs lists each file's evaluations spec by spec)
    report = nightly_report_task(warehouse, [r.evaluation_id for r in evaluated[:: len(specs) or 1]], flow_run_id)
    refresh_catalog_task(warehouse)
    publish_artifacts_task(warehouse, evaluated, report)
    return NightlyReport(flow_run_id, evaluated, rejected)


# -- comparisons (flows/pipeline/compare.py holds what they do; imported when used: the statistics load scipy) -------------


@task(name="compare-evaluations")
def compare_task(warehouse_root: str, evaluation_ids: list[str], settings_json: str, baseline: str | None) -> str:
    """Compare stored evaluations and store the comparison (nothing new if it is stored already); its id."""
    from judged.flows.pipeline.compare import compare_evaluations, from_warehouse, store_comparison
    from judged.schemas.comparison import ComparisonSettings

    store = Store(warehouse_root)
    evaluations = [from_warehouse(store, identifier) for identifier in evaluation_ids]
    result = compare_evaluations(evaluations, ComparisonSettings.model_validate_json(settings_json), baseline)
    store_comparison(store, result, _current_flow_run_id())
    return result.comparison_id


@flow(name="compare", task_runner=ThreadPoolTaskRunner(max_workers=LOCAL_SHARD_WORKERS))
def compare_flow(
    evaluation_ids: list[str],
    settings_json: str,
    warehouse: str = DEFAULT_WAREHOUSE,
    baseline: str | None = None,
    rebase: bool = False,
    spec_json: str | None = None,
) -> str:
    """Compare stored evaluations of runs on one judgment basis and store the comparison. With `rebase`, every run
    is first evaluated (or its stored evaluation reused) against the newest version of the judgment set under one
    spec (`spec_json`, or the first evaluation's)."""
    from judged.flows.pipeline.compare import rebase_basis

    if rebase:
        spec = EvaluationSpec.from_canonical_json(spec_json) if spec_json else None
        judgment_set_id, run_ids, chosen = rebase_basis(Store(warehouse), evaluation_ids, spec)
        reports = evaluate_runs(warehouse, run_ids, judgment_set_id, [chosen])
        evaluation_ids = [report.evaluation_id for report in reports]
    identifier = compare_task(warehouse, evaluation_ids, settings_json, baseline)
    refresh_catalog_task(warehouse)
    return identifier


@task(name="nightly-report")
def nightly_report_task(warehouse_root: str, evaluation_ids: list[str], flow_run_id: str) -> str | None:
    """The night's HTML report (warehouse/reports/<flow run id>.html), its runs compared when there are several;
    None when nothing was evaluated."""
    if not evaluation_ids:
        return None
    from judged.flows.report.html import nightly_report

    return str(nightly_report(Store(warehouse_root), evaluation_ids, flow_run_id))
