"""One stored evaluation, step by step: its plan, its parts evaluated and staged, then the summary, provenance
and stored files; and a stored evaluation read back.

Belongs here: the plain functions the pipeline's evaluation tasks run (testable without Prefect). A flow's parts
are staged in one private folder of the warehouse's `_staging/` (`parts_staging`), locked by the flow's process for
as long as it runs: the staging every writer uses (flows/store/warehouse.py, `staged`), so a killed flow's parts are
removed by the next writer, and two flows (or two evaluations) never share a folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

import polars as pl

from judged.flows.engine.evaluate import (
    EvaluationResult, Part, Plan, assemble, evaluate, evaluate_part, grade_scale, names_depend_on_grades, plan,
)
from judged.flows.engine.limits import DEFAULT_LIMITS, Limits
from judged.flows.engine.ties import with_tie_warning
from judged.flows.engine.versions import implementation_commit, implementation_version, library_versions
from judged.flows.report.text import result_trec_eval_names
from judged.flows.store.warehouse import Store, now_utc, shard_file, staged
from judged.schemas.provenance import METHOD_VERSION, InputRecord, ProvenanceRecord, canonical_json
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import EVALUATIONS, STORED_PER_QUERY, STORED_SUMMARY

# In a flow's staging folder: <evaluation id>/part-SSSS-of-NNNN.parquet, one file per evaluated part.
STAGED_PARTS = "evaluation_parts"


@dataclass(frozen=True)
class EvaluationReport:
    evaluation_id: str
    created: bool
    run_id: str
    judgment_set_id: str


def stored_plan(
    warehouse: Store, run_id: str, judgment_set_id: str, spec: EvaluationSpec, limits: Limits = DEFAULT_LIMITS
) -> Plan:
    """The plan (engine.plan) of a stored run against a stored judgment set under a spec."""
    return plan(warehouse.stored("run", run_id), warehouse.stored("judgments", judgment_set_id), spec, limits)


@contextmanager
def parts_staging(warehouse: Store) -> Iterator[Path]:
    """A folder of the warehouse's `_staging/` for the parts a flow evaluates (see the module docstring), held by
    this process for the block and removed after it. Tasks on other processes (a Dask cluster) write into it too."""
    with staged(warehouse.root, warehouse.root / STAGED_PARTS) as folder:
        folder.mkdir()
        yield folder


def evaluate_shard(planned: Plan, part: Part, folder: Path) -> Path:
    """Evaluate one part of a stored plan; stage its per-query rows (and the warnings of its checks) in the flow's
    staging `folder` for `finish_evaluation`. Returns the staged file."""
    per_query, warnings = evaluate_part(planned, part)
    path = folder / planned.evaluation_id / shard_file(part.shard, part.of)
    path.parent.mkdir(parents=True, exist_ok=True)
    per_query.write_parquet(path, metadata={"judged.warnings": json.dumps(warnings)})
    return path


def result_tables(
    frame: pl.DataFrame, result: EvaluationResult, identifier: str, run_id: str, judgment_set_id: str
) -> pl.DataFrame:
    """Per-query rows or a summary of `result` with the evaluation's keys and each measure's labels and trec_eval
    name (where trec_eval prints that number: `result_trec_eval_names`), as stored."""
    spec = result.spec
    measures = spec.measure_list()
    trec_eval_names = result_trec_eval_names(result)
    cutoffs = pl.DataFrame(
        {
            "measure": [m.family for m in measures],
            "cutoff": [m.cutoff for m in measures],
            "label": [spec.measure_label(m) for m in measures],
            "trec_eval_measure": [trec_eval_names[(m.family, m.cutoff)] for m in measures],
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


def evaluation_row(provenance: ProvenanceRecord, run_name: str) -> pl.DataFrame:
    """The evaluation's `evaluations` row: every column but the run's name read from its provenance record."""
    return pl.DataFrame(
        [
            {
                "evaluation_id": provenance.evaluation_id,
                "run_id": provenance.run.id,
                "judgment_set_id": provenance.judgments.id,
                "run_name": run_name,
                "spec_hash": provenance.spec_hash,
                "spec_json": canonical_json(provenance.spec),
                "label": provenance.label,
                "implementation_version": provenance.implementation_version,
                "implementation_commit": provenance.implementation_commit,
                "flow_run_id": provenance.flow_run_id,
                "started_at": datetime.fromisoformat(provenance.started_at),
                "finished_at": datetime.fromisoformat(provenance.finished_at),
                "warnings": list(provenance.warnings),
                "provenance_json": provenance.to_json(),
                "method_version": provenance.method_version,
            }
        ],
        schema=EVALUATIONS,
    )


def finish_evaluation(
    warehouse: Store, planned: Plan, staged_parts: list[Path], started: datetime, flow_run_id: str | None,
    run_moved_to: str | None = None,
) -> EvaluationReport:
    """Summary over every part, provenance, then the stored files (the record last); the staged parts are removed.
    `run_moved_to` is where the run's file lies once the nightly job has moved it out of the inbox."""
    identifier, spec = planned.evaluation_id, planned.spec
    run_record, judgments_record = planned.run.record, planned.judgments.record  # type: ignore[union-attr]
    run_id, judgment_set_id = str(run_record["run_id"]), str(judgments_record["judgment_set_id"])
    parts = [pl.read_parquet(path) for path in staged_parts]
    shard_warnings = [w for path in staged_parts for w in json.loads(pl.read_parquet_metadata(path)["judged.warnings"])]
    # The tie warning evaluates the stored inputs again under the other tie rules, here in the finishing task, and
    # only when the share of queries whose value a tie could change calls for it (its means need no intervals).
    result = with_tie_warning(assemble(planned, parts, shard_warnings),
                              partial(evaluate, planned.run, planned.judgments, limits=planned.limits, intervals=False))
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
        finished_at=now_utc().isoformat(),
        warnings=result.warnings,
        method_version=METHOD_VERSION,
    )
    keyed_parts = [result_tables(part, result, identifier, run_id, judgment_set_id) for part in parts]
    summary = result_tables(result.summary, result, identifier, run_id, judgment_set_id)
    created = warehouse.store_evaluation(
        evaluation_row(provenance, planned.run_name), keyed_parts, summary, provenance.to_json(), spec
    )
    for path in staged_parts:
        path.unlink()
    return EvaluationReport(identifier, created, run_id, judgment_set_id)


def load_result(warehouse: Store, evaluation_id: str) -> EvaluationResult:
    """A stored evaluation, in the shape the reports print."""
    record, per_query, summary = warehouse.load_evaluation(evaluation_id)
    keys = ["evaluation_id", "run_id", "judgment_set_id", "spec_hash", "label", "trec_eval_measure"]
    spec = EvaluationSpec.from_canonical_json(record["spec_json"])
    return EvaluationResult(
        run_name=record["run_name"],
        identify=lambda: evaluation_id,
        spec=spec,
        per_query=per_query.drop(keys),
        summary=summary.drop(keys),
        warnings=tuple(record["warnings"]),
        # The grades decide RBP's trec_eval name, as when the evaluation was computed.
        grades=(grade_scale(warehouse.stored("judgments", record["judgment_set_id"])) if names_depend_on_grades(spec)
                else None),
    )
