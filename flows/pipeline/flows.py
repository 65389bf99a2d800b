"""The pipeline's Prefect flows: ingest judgments, ingest runs, evaluate, compare, and the nightly job over an inbox.

Belongs here: flows that read as the pipeline's story, and how their tasks run. The tasks are in tasks.py, an
evaluation's steps in evaluation.py, the inbox's claim protocol in nightly.py, the flow runs' artifacts in
artifacts.py; which Prefect API the flows report to is chosen in server.py.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
from prefect import flow, get_run_logger
from prefect.futures import PrefectFuture, wait
from prefect.task_runners import ThreadPoolTaskRunner

from judged.flows.engine.evaluate import Plan
from judged.flows.engine.limits import DEFAULT_LIMITS, Limits
from judged.flows.pipeline.evaluation import EvaluationReport, parts_staging
from judged.flows.pipeline.nightly import (
    PROCESSED, REJECTED, NightlyReport, claimed_files, free_target, ignored_inbox_entries, inbox_files, prepare_inbox,
    run_was_new, set_aside,
)
from judged.flows.pipeline.scheduler import require_scheduler
from judged.flows.pipeline.tasks import (
    check_inputs_task, check_night_judgments_task, check_run_task, compare_task, current_flow_run_id,
    evaluate_shard_task, finish_task, ingest_checked_run_task, ingest_file_task, ingest_judgment_files_task,
    nightly_report_task, plan_task,
    log_stored, publish_artifacts_task, refresh_catalog_task, survey_piece_task, write_shard_group_task,
)
from judged.flows.report.wording import counted
from judged.flows.store.hashing import content_hashes, hash_in_background
from judged.flows.store.readers import Metadata, open_stored, print_once, read_sidecar, require_regular_file
from judged.flows.store.scaled import Local, PiecesPlan, cut_pieces, plan_pieces
from judged.flows.store.warehouse import Store, StoreReport, now_utc, staging_area
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import NIGHTLY
from judged.transforms.errors import InputError, UsageError
from judged.transforms.parse import without_order_hint

DEFAULT_WAREHOUSE = "warehouse"
# Shards evaluated at once in one process: each already uses every core through Polars, and memory grows with each.
LOCAL_SHARD_WORKERS = 2


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


def evaluate_runs(
    warehouse_root: str,
    run_ids: list[str],
    judgment_set_id: str,
    specs: list[EvaluationSpec],
    limits: Limits = DEFAULT_LIMITS,
    moved_to: dict[str, str] | None = None,
) -> list[EvaluationReport]:
    """Inside a flow: each distinct evaluation among the (run, spec) pairs planned once, the parts of each submitted
    to the flow's task runner (threads, or a Dask cluster) and staged in this call's own staging folder, then each
    finished once all its parts are staged. Stored evaluations are reused. Returns a report per pair, run by run and
    spec by spec: a pair given twice (the same run or spec twice) gets its evaluation's report twice.
    `moved_to` gives, per run id, where the nightly job puts the run's file (for the provenance record)."""
    started = now_utc()
    distinct_specs = list({spec.spec_hash: spec for spec in specs}.values())
    evaluation_of: dict[tuple[str, str], str] = {}  # (run id, spec hash) -> evaluation id
    reports: dict[str, EvaluationReport] = {}
    pending: dict[str, tuple[str, Plan, list[PrefectFuture[str]]]] = {}
    with parts_staging(Store(warehouse_root)) as staging_folder:
        for run_id in dict.fromkeys(run_ids):
            for spec in distinct_specs:
                planned, stored = plan_task(warehouse_root, run_id, judgment_set_id, spec, limits)
                identifier = planned.evaluation_id
                evaluation_of[(run_id, spec.spec_hash)] = identifier
                if identifier in reports or identifier in pending:
                    continue
                if stored:
                    reports[identifier] = EvaluationReport(identifier, False, run_id, judgment_set_id)
                    continue
                futures = [evaluate_shard_task.submit(planned, part, str(staging_folder)) for part in planned.parts]
                pending[identifier] = (run_id, planned, futures)
        for identifier, (run_id, planned, futures) in pending.items():
            staged = [future.result() for future in futures]
            reports[identifier] = finish_task(warehouse_root, planned, staged, started, (moved_to or {}).get(run_id))
    return [reports[evaluation_of[(run_id, spec.spec_hash)]] for run_id in run_ids for spec in specs]


# -- flows --------------------------------------------------------------------------------------------------------


@flow(name="ingest-judgments")
def ingest_judgments(
    path: str | list[str], warehouse: str = DEFAULT_WAREHOUSE, metadata: Metadata | None = None,
    rows_per_shard: int = DEFAULT_LIMITS.rows_per_shard, allow_empty: bool = False,
    assessors: list[str] | None = None, assessor_kinds: dict[str, str] | None = None,
) -> StoreReport:
    """Validate a qrels file (TREC text, .gz or Parquet) and store it as a content-addressed judgment set, split
    into shards of about `rows_per_shard` rows by query. An empty one is refused unless `allow_empty`. Several
    files (a list), each named by its assessor in `assessors` (in order), are one set whose rows name their
    assessor; `assessor_kinds` declares their kinds (flows/store/assessor_files.py). A set that names its assessors
    is stored with their agreement."""
    limits = replace(DEFAULT_LIMITS, rows_per_shard=rows_per_shard)
    paths = [path] if isinstance(path, str) else path
    if len(paths) == 1 and not assessors and not assessor_kinds:
        report = ingest_file_task(warehouse, paths[0], "judgments", metadata, limits, allow_empty)
    else:
        report = ingest_judgment_files_task(warehouse, paths, assessors or [], metadata, assessor_kinds or {},
                                            limits, allow_empty)
    refresh_catalog_task(warehouse)
    return report


@flow(name="ingest-run")
def ingest_run(
    path: str, warehouse: str = DEFAULT_WAREHOUSE, metadata: Metadata | None = None,
    rows_per_shard: int = DEFAULT_LIMITS.rows_per_shard, allow_empty: bool = False, scale_out: bool = False,
    limits: Limits | None = None,
) -> StoreReport:
    """Validate a run file (TREC text, .gz or Parquet) and store it as a content-addressed run, split into shards
    of about `rows_per_shard` rows by query. An empty one is refused unless `allow_empty`. With `scale_out`, the
    flow's task runner (a Dask cluster: `task_runner`) reads, checks and writes it in pieces (`ingest_in_pieces`),
    storing the same bytes. `limits` (tests) replaces every size, `rows_per_shard` included."""
    limits = limits or replace(DEFAULT_LIMITS, rows_per_shard=rows_per_shard)
    if scale_out:
        report = ingest_in_pieces(warehouse, path, metadata, limits, allow_empty)
    else:
        report = ingest_file_task(warehouse, path, "run", metadata, limits, allow_empty)
    refresh_catalog_task(warehouse)
    return report


def ingest_in_pieces(
    warehouse_root: str, path: str, metadata: Metadata | None = None, limits: Limits = DEFAULT_LIMITS,
    allow_empty: bool = False,
) -> StoreReport:
    """Inside a flow: a run file cut at query boundaries into pieces (flows/store/scaled.py), each surveyed by a
    task of the flow's task runner (on Dask, a worker parses and checks it); from what they found, this process
    names the file's first problem or plans the shards a local ingest would cut, then tasks parse their windows of
    whole shards again and write them into this warehouse's staging area, and `Store.store_by_position` publishes
    them whole and writes the record last. Every task has ended before anything is published or the staging
    folder removed. Stored byte for byte as `ingest_file_task` stores the file, with the same run id. A run this
    cannot cut or store by position is ingested locally, and the log says why."""
    logger = get_run_logger()
    started = time.perf_counter()
    file = Path(path)
    require_regular_file(file, "run file")
    if metadata is None:
        metadata = read_sidecar(file, "run")
    pieces = cut_pieces(file, limits)
    planned: PiecesPlan | Local
    if isinstance(pieces, Local):
        planned = pieces
    else:
        hashes = hash_in_background([file])[file]
        logger.info("%s: read in %s by the task runner", path, counted(len(pieces.windows), "piece"))
        surveys = _all_results([survey_piece_task.submit(path, pieces.source_format, metadata, limits, window)
                                for window in pieces.windows])
        planned = plan_pieces(file, pieces, surveys, metadata, hashes, limits)
    if isinstance(planned, Local):
        logger.info("%s: ingested locally, not in pieces: %s", path, planned.reason)
        return ingest_file_task(warehouse_root, path, "run", metadata, limits, allow_empty)
    warnings: list[str] = []

    def write(folder: Path, part_metadata: dict[str, str]) -> None:
        for found in _all_results([
            write_shard_group_task.submit(path, planned.source_format, planned.metadata, limits, group,
                                          planned.shards, planned.table_id, str(folder), part_metadata)
            for group in planned.groups
        ]):
            warnings.extend(found)

    report = Store(warehouse_root).store_by_position(planned, planned.blocks, write)
    print_once(file, tuple(warnings))
    return log_stored(path, "run", replace(report, seconds=time.perf_counter() - started))


def _all_results(futures: list[PrefectFuture[Any]]) -> list[Any]:
    """The futures' results once every one has ended (the first failure raised then): a task still running never
    writes into a staging folder that a failure has removed."""
    wait(futures)
    return [future.result() for future in futures]


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
    # Held until the runs are stored: a large text run's (or a Parquet run's) reading pass in the checks stages its
    # shards there, for its store to publish; whatever is left (refused inputs, a failed store) goes with it.
    with staging_area(store.root) as staging:
        # before anything is stored
        staged = check_inputs_task(warehouse, judgments, runs, [spec_json], judgments_metadata, allow_empty,
                                   str(staging))
        judgment_set_id = _judgment_set(store, judgments, judgments_metadata, allow_empty)
        run_ids = [_run(store, run, allow_empty, staged.get(run)) for run in runs]
    reports = evaluate_runs(warehouse, run_ids, judgment_set_id, [spec])
    refresh_catalog_task(warehouse)
    publish_artifacts_task(warehouse, reports)
    return reports


def _run(store: Store, reference: str, allow_empty: bool = False, staged_shards: str | None = None) -> str:
    """A run file is ingested (from the shards its checks staged, when they did); a stored run's folder gives its
    id (its rows are stored here first when it comes from another warehouse); otherwise an id already in the
    warehouse."""
    path = Path(reference)
    if path.is_file():
        return ingest_file_task(str(store.root), reference, "run", allow_empty=allow_empty,
                                staged_shards=staged_shards).id
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


def _failure_message(error: BaseException | None) -> str:
    # The night takes no QRELS RUN arguments: a file that looks like qrels is said to, not which order to give.
    return str(without_order_hint(error)) if isinstance(error, InputError) else f"{type(error).__name__}: {error}"


def dask_scheduler_address() -> str | None:
    """Inside a flow: the scheduler address its task runner sends tasks to, when that is a Dask scheduler's (not a
    cluster the runner starts itself), else None."""
    from prefect.context import FlowRunContext

    runner = getattr(FlowRunContext.get(), "task_runner", None)
    if runner is None or type(runner).__name__ != "DaskTaskRunner":  # prefect_dask (and Dask) loaded only for it
        return None
    return getattr(runner, "address", None)


def _night_of_one_file(
    store: Store, path: Path, inbox: Path, judgment_set_id: str, specs: list[EvaluationSpec], allow_empty: bool,
    scale_out: bool = False, scheduler: str | None = None,
) -> tuple[dict[str, Any], list[EvaluationReport]]:
    """Inside the nightly flow: check, store and evaluate one claimed run file (with `scale_out`, checked here and
    stored in pieces by the task runner: `ingest_in_pieces`). Returns its `nightly` row (with where the file is to
    be moved) and its evaluations; any failure makes a `rejected` row (a bad file never stops the night), but for
    the Dask `scheduler`'s: a failure while it no longer answers stops the night (an InputError naming it), and the
    file stays claimed in the inbox for the next night to take over."""
    warehouse = str(store.root)
    row: dict[str, Any] = {"file": path.name, "run_id": None, "evaluation_ids": [], "error": None,
                           "source_sha256": None}
    spec_jsons = [spec.canonical_json() for spec in specs]
    claim = (warehouse, str(path), judgment_set_id, spec_jsons, str(path.parent), allow_empty)

    def rejected(error: BaseException | None) -> tuple[dict[str, Any], list[EvaluationReport]]:
        if scheduler is not None and not isinstance(error, InputError):
            try:
                require_scheduler(scheduler)
            except UsageError as lost:
                raise InputError("--dask", f"the Dask scheduler stopped answering while {path.name} was handled "
                                           f"({lost.first_problem}): the night stops, and the file waits in the "
                                           "inbox for the next night") from None
        return row | {"outcome": "rejected", "error": _failure_message(error),
                      "moved_to": str(free_target(path, inbox / REJECTED).absolute())}, []

    if scale_out:
        try:
            check_run_task(*claim)
            stored = ingest_in_pieces(warehouse, str(path), None, DEFAULT_LIMITS, allow_empty)
        except Exception as error:  # as a failed ingest task: the file is rejected, and the night goes on
            return rejected(error)
    else:
        state = ingest_checked_run_task(*claim, return_state=True)
        if state.is_failed():
            return rejected(state.result(raise_on_failure=False))
        stored = state.result()
    row["run_id"] = stored.id
    # Chosen before the evaluation, so that its provenance record names where the file will lie.
    target = free_target(path, inbox / PROCESSED).absolute()
    try:
        reports = evaluate_runs(warehouse, [stored.id], judgment_set_id, specs, moved_to={stored.id: str(target)})
    except Exception as error:  # checked before storing; whatever still fails is recorded, and the night goes on
        return rejected(error)
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
    baseline: str | None = None,
    scale_out: bool = False,
    pairs: str | None = None,
) -> NightlyReport:
    """Every run file dropped into the inbox since the last night: ingest it, evaluate it against the current
    version of the judgment set under each spec, move it to processed/ (or rejected/ with its error), record.
    An empty run file is rejected, and empty judgments refused, unless `allow_empty`. The night's comparison takes
    `baseline` when it is among the night's runs, else the rule of `choose_baseline`, and compares `pairs` (`all`
    or `baseline`; None: all up to 12 runs, the baseline's beyond). With `scale_out`, each run
    is stored in pieces by the flow's task runner (`ingest_in_pieces`), as `ingest_run` stores it."""
    logger = get_run_logger()
    store = Store(warehouse).ensure()
    flow_run_id = current_flow_run_id() or f"local-{now_utc().strftime('%Y%m%dT%H%M%S%f')}"
    started = now_utc()
    inbox_path = Path(inbox)
    for folder in prepare_inbox(inbox_path):
        logger.info("created %s (it was missing)", folder)
    judgment_set_id = _judgment_set(store, judgments, None, allow_empty)
    specs = [EvaluationSpec.from_canonical_json(text) for text in spec_jsons]
    check_night_judgments_task(warehouse, judgment_set_id, spec_jsons)
    scheduler = dask_scheduler_address()
    if scheduler is not None:  # a night without its scheduler stops here, every run left in the inbox
        require_scheduler(scheduler)
    waiting = inbox_files(inbox_path)
    ignored = ignored_inbox_entries(inbox_path)
    for name, why in ignored.items():
        logger.warning("%s in the inbox is ignored, left where it is: %s", name, why)
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
            try:
                row, reports = _night_of_one_file(store, claim.file, inbox_path, judgment_set_id, specs, allow_empty,
                                                  scale_out, scheduler)
            except InputError:  # the night stops: the claim is let go, for the next night to take over
                claim.lock.close()
                raise
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
    report = nightly_report_task(warehouse, [r.evaluation_id for r in evaluated[:: len(specs) or 1]], flow_run_id,
                                 baseline, pairs)
    if report is not None:
        report = str(Path(report).absolute())
        logger.info("the night's report: %s", report)
    refresh_catalog_task(warehouse)
    publish_artifacts_task(warehouse, evaluated, report)
    return NightlyReport(flow_run_id, evaluated, rejected, ignored, report)


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
    from judged.flows.engine.compare import rebase_basis, refuse_before_evaluating

    if rebase:
        spec = EvaluationSpec.from_canonical_json(spec_json) if spec_json else None
        store = Store(warehouse)
        judgment_set_id, run_ids, chosen = rebase_basis(store, evaluation_ids, spec)
        names = [store.load_stored("run", run_id).name for run_id in run_ids]
        refuse_before_evaluating(names, run_ids, judgment_set_id, chosen, baseline)  # before anything is stored
        reports = evaluate_runs(warehouse, run_ids, judgment_set_id, [chosen])
        evaluation_ids = [report.evaluation_id for report in reports]
    identifier = compare_task(warehouse, evaluation_ids, settings_json, baseline)
    refresh_catalog_task(warehouse)
    return identifier
