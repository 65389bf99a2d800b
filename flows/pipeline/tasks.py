"""The pipeline's Prefect tasks, and the plain ingest functions they wrap (which stay testable without
orchestration; an evaluation's steps are in flows/pipeline/evaluation.py).

Belongs here: thin tasks that log what they did. Tasks pass paths, identifiers and content hashes, never DataFrames.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from judged.flows.engine.evaluate import Part, Plan, check_before_storing, check_judgments_before_storing
from judged.flows.engine.limits import DEFAULT_LIMITS, Limits
from judged.flows.engine.phases import Phases
from judged.flows.pipeline.artifacts import publish_artifacts
from judged.flows.pipeline.evaluation import EvaluationReport, evaluate_shard, finish_evaluation, stored_plan
from judged.flows.pipeline.nightly import RUN_WAS_NEW, RUN_WAS_STORED, run_was_new
from judged.flows.report.wording import counted
from judged.flows.store.assessor_files import load_judgments
from judged.flows.store.kinds import input_kind
from judged.flows.store.inputs import input_judgments, input_run
from judged.flows.store.readers import (
    Metadata, Window, load_table, open_stored, proven_duplicate_free,
)
from judged.flows.store.scaled import ShardGroup, Survey, survey_piece, write_shard_group
from judged.flows.store.warehouse import ReadRun, Store, StoreReport, read_run, staging_area
from judged.schemas.provenance import JudgmentSetMetadata, RunMetadata
from judged.schemas.spec import EvaluationSpec
from judged.transforms.errors import InputError

# -- plain functions: what the ingest tasks do ----------------------------------------------------------------------


def ingest_file(
    warehouse: Store, path: str | Path, kind: str, metadata: Metadata | None = None,
    limits: Limits = DEFAULT_LIMITS, allow_empty: bool = False, staged_shards: Path | None = None,
) -> StoreReport:
    """Read, validate and store one file. Bad input raises InputError and writes nothing (an empty table is bad input
    unless `allow_empty`). The report's `seconds` is the time this took (reading to the last file written), without any
    orchestration around it, and its `phases` where that time went. A large text run (or a Parquet run) is stored from
    the pass that reads and checks it (`read_run`): here, or, with `staged_shards`, the checks' own pass, which staged
    its shards there (`check_inputs_before_storing`; the table is the one those checks read)."""
    started = time.perf_counter()
    phases = Phases()
    with ExitStack() as staging:
        with phases.measure("read and check"):
            if input_kind(kind).ranked and staged_shards is None:  # a run: stored by position from its pass
                read = read_run(path, staging.enter_context(staging_area(warehouse.root)), metadata, limits,
                                allow_empty, phases)
                table, staged_shards = read.table, read.staged_shards
            else:  # judgments, or a run its checks read in this process (the table they keep)
                table = load_table(path, kind, metadata,  # type: ignore[arg-type]
                                   limits=limits, allow_empty=allow_empty)
        report = warehouse.store_table(table, limits, phases, staged_shards)
    return replace(report, seconds=time.perf_counter() - started, phases=phases.as_tuples())


def ingest_judgment_files(
    warehouse: Store, paths: list[str], assessors: list[str], metadata: JudgmentSetMetadata | None = None,
    kinds: dict[str, str] | None = None, limits: Limits = DEFAULT_LIMITS, allow_empty: bool = False,
) -> StoreReport:
    """Read judgment files as one set that names its assessors (`assessor_files.load_judgments`: one name per TREC
    file, or a Parquet table's `assessor` column; `kinds` declares their kinds) and store it with their agreement.
    Bad input raises InputError (or UsageError) and writes nothing. The report's `seconds` and `phases` as
    `ingest_file` gives them."""
    started = time.perf_counter()
    phases = Phases()
    with phases.measure("read and check"):
        table = load_judgments(paths, assessors, metadata, kinds, limits, allow_empty)
    report = warehouse.store_table(table, limits, phases)
    return replace(report, seconds=time.perf_counter() - started, phases=phases.as_tuples())


def check_inputs_before_storing(
    warehouse: Store, judgments: str, runs: list[str], specs: list[EvaluationSpec],
    judgments_metadata: Metadata | None = None, allow_empty: bool = False, staging: Path | None = None,
) -> dict[str, str]:
    """Every check that could refuse these inputs under these specs, before anything of them is stored: files are read
    and validated, ids resolved, and each run checked against the judgments as its evaluation would check it. Raises
    InputError naming the input. When nothing would be stored (every input is already in the warehouse), the
    evaluation's own checks refuse what is wrong, and these are skipped. With a `staging` folder (a `staging_area` of
    this warehouse, held until the runs are stored), a large text run's (or a Parquet run's) reading pass stages its
    shards there (`read_run`): returned is the folder of each run file that has them, by the run as given, for its store
    (`ingest_file(staged_shards=...)`); what refused inputs staged stays in `staging`, removed with it."""
    if not _stores_something(warehouse, judgments, runs):
        return {}
    judgment_table = input_judgments(warehouse, judgments, judgments_metadata, allow_empty)
    staged: dict[str, str] = {}
    for run in runs:
        read = input_run(warehouse, run, allow_empty, staging)
        run_table = read.table
        for spec in specs:  # once proven free of repeated pairs, the run is not looked at for them again
            if check_before_storing(run_table, judgment_table, spec):
                run_table = proven_duplicate_free(run_table)  # and the store of its file next takes the proof
        if read.staged_shards is not None:
            staged[run] = str(read.staged_shards)
    return staged


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
    noted there before storing (see `run_was_new`). A large text run (or a Parquet run) is stored from the pass
    that reads and checks it (`read_run`): what it staged is published, or removed with its staging area when the
    checks refuse it."""
    started = time.perf_counter()
    with staging_area(warehouse.root) as staging:
        run = check_run(warehouse, path, judgment_set_id, specs, claim_folder, allow_empty, staging)
        report = warehouse.store_table(run.table, staged_shards=run.staged_shards)
    return replace(report, seconds=time.perf_counter() - started)


def check_run(
    warehouse: Store, path: str | Path, judgment_set_id: str, specs: list[EvaluationSpec],
    claim_folder: Path | None = None, allow_empty: bool = False, staging: Path | None = None,
) -> ReadRun:
    """`ingest_checked_run` short of storing the run: read, validated, checked under every spec, and with a
    `claim_folder`, whether it is new noted there. With a `staging` folder, a large text run's (or a Parquet run's)
    shards are staged there by its reading pass (`read_run`) for its store; without (the nightly job with --dask, whose
    workers then store the run in pieces), nothing is staged."""
    read = read_run(path, staging, allow_empty=allow_empty)
    run = read.table
    judgments = warehouse.load_stored("judgments", judgment_set_id)
    for spec in specs:  # once proven free of repeated pairs, the run is not looked at for them again
        if check_before_storing(run, judgments, spec):
            run = proven_duplicate_free(run)
    if claim_folder is not None and run_was_new(claim_folder) is None:
        note = RUN_WAS_STORED if warehouse.run_record(run.table_id).exists() else RUN_WAS_NEW
        (claim_folder / note).touch()
    return replace(read, table=run)


def current_flow_run_id() -> str | None:
    run_id = flow_run.get_id()
    return str(run_id) if run_id else None


# -- tasks --------------------------------------------------------------------------------------------------------


@task(name="ingest-file")
def ingest_file_task(
    warehouse_root: str, path: str, kind: str, metadata: Metadata | None = None, limits: Limits = DEFAULT_LIMITS,
    allow_empty: bool = False, staged_shards: str | None = None,
) -> StoreReport:
    staged = Path(staged_shards) if staged_shards else None
    return log_stored(path, kind, ingest_file(Store(warehouse_root), path, kind, metadata, limits, allow_empty, staged))


@task(name="ingest-judgment-files")
def ingest_judgment_files_task(
    warehouse_root: str, paths: list[str], assessors: list[str], metadata: Metadata | None = None,
    kinds: dict[str, str] | None = None, limits: Limits = DEFAULT_LIMITS, allow_empty: bool = False,
) -> StoreReport:
    declared = metadata if isinstance(metadata, JudgmentSetMetadata) or metadata is None else None
    if metadata is not None and declared is None:
        raise InputError(", ".join(paths), "judgments take a judgment set's metadata, not a run's")
    report = ingest_judgment_files(Store(warehouse_root), paths, assessors, declared, kinds, limits, allow_empty)
    return log_stored(", ".join(paths), "judgments", report)


def log_stored(path: str, kind: str, report: StoreReport) -> StoreReport:
    """The report, after saying in the task's log what was stored."""
    what = input_kind(kind).noun
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
    allow_empty: bool = False, staging: str | None = None,
) -> dict[str, str]:
    specs = [EvaluationSpec.from_canonical_json(text) for text in spec_jsons]
    return check_inputs_before_storing(Store(warehouse_root), judgments, runs, specs, judgments_metadata, allow_empty,
                                       Path(staging) if staging else None)


@task(name="check-night-judgments")
def check_night_judgments_task(warehouse_root: str, judgment_set_id: str, spec_jsons: list[str]) -> None:
    """The night's judgments checked under each spec before any run is taken from the inbox: judgments a spec
    cannot use (a conflicting duplicate under `error`, a grade the gain omits) fail the night, and every run stays
    in the inbox for the next night, instead of each run being rejected for the judgments' fault."""
    judgments = Store(warehouse_root).load_stored("judgments", judgment_set_id)
    for text in spec_jsons:
        spec = EvaluationSpec.from_canonical_json(text)
        try:
            check_judgments_before_storing(judgments, spec)
        except InputError as error:
            raise InputError(
                error.source,
                f"{error.problem}: the night's judgment set {judgment_set_id} cannot be evaluated under "
                f"{spec.full_label()}, so no run was taken from the inbox (fix the judgments, or the spec's "
                "--judgment-duplicates, and run the night again)",
                error.line, error.unit,
            ) from None


@task(name="ingest-checked-run")
def ingest_checked_run_task(
    warehouse_root: str, path: str, judgment_set_id: str, spec_jsons: list[str], claim_folder: str | None = None,
    allow_empty: bool = False,
) -> StoreReport:
    stored = ingest_checked_run(*_night_arguments(warehouse_root, path, judgment_set_id, spec_jsons, claim_folder),
                                allow_empty)
    return log_stored(path, "run", stored)


@task(name="check-run")
def check_run_task(
    warehouse_root: str, path: str, judgment_set_id: str, spec_jsons: list[str], claim_folder: str | None = None,
    allow_empty: bool = False,
) -> None:
    check_run(*_night_arguments(warehouse_root, path, judgment_set_id, spec_jsons, claim_folder), allow_empty)


def _night_arguments(
    warehouse_root: str, path: str, judgment_set_id: str, spec_jsons: list[str], claim_folder: str | None
) -> tuple[Store, str, str, list[EvaluationSpec], Path | None]:
    """A nightly task's arguments (paths, ids, JSON) as `ingest_checked_run` and `check_run` take them."""
    specs = [EvaluationSpec.from_canonical_json(text) for text in spec_jsons]
    return Store(warehouse_root), path, judgment_set_id, specs, Path(claim_folder) if claim_folder else None


# A scaled-out ingest's tasks pass windows, plans and metadata, each used once: nothing to cache or key.
@task(name="survey-piece", cache_policy=NO_CACHE)
def survey_piece_task(path: str, source_format: str, metadata: RunMetadata, limits: Limits, window: Window) -> Survey:
    return survey_piece(path, source_format, metadata, limits, window)


@task(name="write-shards", cache_policy=NO_CACHE)
def write_shard_group_task(
    path: str, source_format: str, metadata: RunMetadata, limits: Limits, group: ShardGroup, of: int, run_id: str,
    folder: str, part_metadata: dict[str, str],
) -> tuple[str, ...]:
    started = time.perf_counter()
    warnings = write_shard_group(path, source_format, metadata, limits, group, of, run_id, folder, part_metadata)
    shards = sorted({shard for _, _, shard in group.blocks})
    get_run_logger().info("%s: shards %d-%d of %d written (%s) in %.2f s", path, shards[0] + 1, shards[-1] + 1, of,
                          counted(sum(rows for _, rows, _ in group.blocks), "row"), time.perf_counter() - started)
    return warnings


@task(name="plan-evaluation")
def plan_task(
    warehouse_root: str, run_id: str, judgment_set_id: str, spec: EvaluationSpec, limits: Limits
) -> tuple[Plan, bool]:
    """The stored plan, and whether its evaluation is already stored."""
    warehouse = Store(warehouse_root)
    planned = stored_plan(warehouse, run_id, judgment_set_id, spec, limits)
    stored = warehouse.has_evaluation(planned.evaluation_id)
    state = "already stored, reused" if stored else f"to evaluate in {counted(len(planned.parts), 'part')}"
    logger = get_run_logger()
    logger.info("evaluation %s of run %s against judgment set %s under %s: %s", planned.evaluation_id, run_id,
                judgment_set_id, spec.full_label(), state)
    if not stored:
        for line in planned.describe():
            logger.info("evaluation %s, %s", planned.evaluation_id, line)
    return planned, stored


@task(name="evaluate-shard")
def evaluate_shard_task(planned: Plan, part: Part, staging_folder: str) -> str:
    started = time.perf_counter()
    staged = evaluate_shard(planned, part, Path(staging_folder))
    get_run_logger().info("evaluation %s, part %d of %d: per-query rows staged in %s (%.2f s)",
                          planned.evaluation_id, part.shard + 1, part.of, staged, time.perf_counter() - started)
    return str(staged)


@task(name="finish-evaluation")
def finish_task(
    warehouse_root: str, planned: Plan, staged: list[str], started: datetime, run_moved_to: str | None = None
) -> EvaluationReport:
    warehouse = Store(warehouse_root)
    report = finish_evaluation(
        warehouse, planned, [Path(p) for p in staged], started, current_flow_run_id(), run_moved_to
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


@task(name="refresh-catalog", retries=2, retry_delay_seconds=1)
def refresh_catalog_task(warehouse_root: str) -> str:
    catalog = Store(warehouse_root).refresh_catalog()
    get_run_logger().info("catalog regenerated: %s", catalog)
    return str(catalog)


@task(name="publish-artifacts")
def publish_artifacts_task(warehouse_root: str, reports: list[EvaluationReport], report: str | None = None) -> None:
    publish_artifacts(Store(warehouse_root), reports, report)
    get_run_logger().info("published the artifacts judged-summary and judged-evaluation (%s)",
                          counted(len(reports), "evaluation"))


# -- comparisons (flows/engine/compare.py holds what they do; imported when used: the statistics load scipy) ------


@task(name="compare-evaluations")
def compare_task(warehouse_root: str, evaluation_ids: list[str], settings_json: str, baseline: str | None) -> str:
    """Compare stored evaluations and store the comparison (nothing new if it is stored already); its id."""
    from judged.flows.engine.compare import compare_evaluations, from_warehouse, store_comparison
    from judged.schemas.comparison import ComparisonSettings

    store = Store(warehouse_root)
    evaluations = [from_warehouse(store, identifier) for identifier in evaluation_ids]
    result = compare_evaluations(evaluations, ComparisonSettings.model_validate_json(settings_json), baseline)
    store_comparison(store, result, current_flow_run_id())
    return result.comparison_id


@task(name="nightly-report")
def nightly_report_task(
    warehouse_root: str, evaluation_ids: list[str], flow_run_id: str, baseline: str | None = None,
    pairs: str | None = None,
) -> str | None:
    """The night's HTML report (warehouse/reports/<flow run id>.html), its runs compared when there are several;
    None when nothing was evaluated."""
    if not evaluation_ids:
        return None
    from judged.flows.report.html import nightly_report

    return str(nightly_report(Store(warehouse_root), evaluation_ids, flow_run_id, baseline, pairs))
