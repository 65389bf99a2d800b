"""What a flow run shows in Prefect's UI about its evaluations: a table of every summary value and a markdown
page of what was evaluated, its unjudged coverage and its warnings.

Belongs here: the artifacts' content, read back from the warehouse, and publishing them (inside a flow run).
"""

from __future__ import annotations

from pathlib import Path

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from judged.flows.pipeline.evaluation import EvaluationReport
from judged.flows.report.text import interval_lines
from judged.flows.store.warehouse import Store


def publish_artifacts(warehouse: Store, reports: list[EvaluationReport], report: str | None = None) -> None:
    """The artifacts `judged-summary` (when anything was evaluated) and `judged-evaluation`, which links the HTML
    `report` when there is one."""
    if reports:
        create_table_artifact(key="judged-summary", table=summary_rows(warehouse, reports),
                              description="Summary per run, measure and cutoff")
    link = f"\n[HTML report: runs compared, plots, provenance]({Path(report).as_uri()})\n" if report else ""
    create_markdown_artifact(key="judged-evaluation", markdown=evaluation_markdown(warehouse, reports) + link,
                             description="What was evaluated, unjudged coverage, warnings")


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
