"""The comparison as a Prefect flow: compare stored evaluations (re-evaluated on one basis first with `rebase`),
store the comparison with its provenance, refresh the catalog.

Belongs here: the flow and its thin task; what they do is in `flows/compare.py`.
"""

from __future__ import annotations

from prefect import flow, task

from judged.flows.compare import (
    compare_evaluations,
    from_warehouse,
    rebase_basis,
    store_comparison,
)
from judged.flows.pipeline import _current_flow_run_id, evaluate_runs, refresh_catalog_task
from judged.flows.warehouse import Warehouse
from judged.schemas.comparison import ComparisonSettings
from judged.schemas.spec import EvaluationSpec


@task(name="compare-evaluations")
def compare_task(warehouse_root: str, evaluation_ids: list[str], settings_json: str, baseline: str | None) -> str:
    """Compare stored evaluations and store the comparison (nothing new if it is stored already); its id."""
    warehouse = Warehouse(warehouse_root)
    evaluations = [from_warehouse(warehouse, identifier) for identifier in evaluation_ids]
    result = compare_evaluations(evaluations, ComparisonSettings.model_validate_json(settings_json), baseline)
    store_comparison(warehouse, result, _current_flow_run_id())
    return result.comparison_id


@flow(name="compare")
def compare_flow(
    evaluation_ids: list[str],
    settings_json: str,
    warehouse: str,
    baseline: str | None = None,
    rebase: bool = False,
    spec_json: str | None = None,
) -> str:
    """Compare stored evaluations of runs on one judgment basis. With `rebase`, every run is first evaluated (or
    its stored evaluation reused) against the newest version of the judgment set under one spec (`spec_json`, or
    the first evaluation's)."""
    if rebase:
        spec = EvaluationSpec.from_canonical_json(spec_json) if spec_json else None
        judgment_set_id, run_ids, chosen = rebase_basis(Warehouse(warehouse), evaluation_ids, spec)
        reports = evaluate_runs(warehouse, run_ids, judgment_set_id, [chosen.canonical_json()])
        evaluation_ids = [report.evaluation_id for report in reports]
    identifier = compare_task(warehouse, evaluation_ids, settings_json, baseline)
    refresh_catalog_task(warehouse)
    return identifier
