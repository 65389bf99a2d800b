"""Printing evaluation results: a readable rich table, one JSON object, or trec_eval `-q` style lines.

Belongs here: turning collected results into text. No computation of values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from judged.flows.engine.evaluate import EvaluationResult
from judged.schemas.measures import MeasureBase

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console


def _declared(result: EvaluationResult) -> dict[tuple[str, int | None], MeasureBase]:
    """The spec's measures by the (measure, cutoff) keys of the result's rows."""
    return {(m.family, m.cutoff): m for m in result.spec.measure_list()}


def _measure_name(result: EvaluationResult, measure: MeasureBase) -> str:
    """trec_eval's name when trec_eval prints exactly this number, our label otherwise."""
    return result.spec.measure_trec_eval_name(measure) or result.spec.measure_label(measure)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


INTERVAL_WORLD = (
    "closed: value_min and value_max range over every grade of the judgment set's scale given to each unjudged "
    "document the run retrieved (to its depth); documents nobody retrieved stay as judged"
)


def interval_lines(per_query: pl.DataFrame, summary: pl.DataFrame, widest: int = 5) -> list[str]:
    """Per cutoff, the aggregate with its interval over the unjudged documents ("nDCG@10 = 0.4000, [0.3100, 0.5800]
    over 37 unjudged documents"), then the `widest` queries with the widest intervals."""
    import polars as pl

    lines = []
    for row in summary.iter_rows(named=True):
        name = "nDCG" if row["cutoff"] is None else f"nDCG@{row['cutoff']}"
        if row["value"] is None:
            lines.append(f"{name} undefined (no query scored)")
            continue
        at_cutoff = per_query.filter(pl.col("cutoff").eq_missing(row["cutoff"]) & pl.col("value").is_not_null())
        unjudged = int(at_cutoff["n_unjudged_at_k"].sum())
        bound = f", {row['n_bound_intervals']} bound" if row.get("n_bound_intervals") else ""
        lines.append(
            f"{name} = {row['value']:.4f}, [{row['value_min']:.4f}, {row['value_max']:.4f}] over {unjudged} unjudged "
            f"documents ({row['n_wide_intervals']} of {row['n_scored']} queries wider than {row['interval_width']:g}"
            f"{bound})"
        )
        wide = (
            at_cutoff.with_columns(width=pl.col("value_max") - pl.col("value_min"))
            .filter(pl.col("width") > 0)
            .sort(["width", "query_id"], descending=[True, False])
            .head(widest)
        )
        if wide.height:
            shown = ", ".join(
                f"{q} {v:.4f} [{lo:.4f}, {hi:.4f}]"
                for q, v, lo, hi in wide.select("query_id", "value", "value_min", "value_max").iter_rows()
            )
            lines.append(f"  widest: {shown}")
    return lines


def as_json(results: Sequence[EvaluationResult]) -> str:
    evaluations = []
    for result in results:
        spec = result.spec
        declared = _declared(result)
        summary = [
            {
                "cutoff": row["cutoff"],
                "label": spec.measure_label(declared[row["measure"], row["cutoff"]]),
                "trec_eval_measure": spec.measure_trec_eval_name(declared[row["measure"], row["cutoff"]]),
                **{key: _clean(value) for key, value in row.items() if key != "cutoff"},
            }
            for row in result.summary.iter_rows(named=True)
        ]
        per_query = [
            {key: _clean(value) for key, value in row.items()} for row in result.per_query.iter_rows(named=True)
        ]
        evaluations.append(
            {
                "run": result.run_name,
                "evaluation_id": result.evaluation_id,
                "label": spec.full_label(),
                "spec_hash": spec.spec_hash,
                "spec": spec.canonical_payload(),
                "warnings": list(result.warnings),
                "interval_world": INTERVAL_WORLD,
                "summary": summary,
                "per_query": per_query,
            }
        )
    return json.dumps({"evaluations": evaluations}, indent=1)


def as_trec(results: Sequence[EvaluationResult]) -> str:
    """`measure <tab> query <tab> value` per query (queries with a value), then the `all` lines, full precision.
    RBP's residual follows it as trec_eval's `rbp_resid` (or our label with `:residual`)."""
    lines: list[str] = []
    for result in results:
        rows = result.per_query.filter(result.per_query["value"].is_not_null())
        names = {key: _measure_name(result, measure) for key, measure in _declared(result).items()}
        residual_names = {key: _residual_name(name) for key, name in names.items()}
        for query, measure, cutoff, value, residual in zip(
            rows["query_id"], rows["measure"], rows["cutoff"], rows["value"], rows["residual"], strict=True
        ):
            lines.append(f"{names[measure, cutoff]}\t{query}\t{value!r}")
            if residual is not None:
                lines.append(f"{residual_names[measure, cutoff]}\t{query}\t{residual!r}")
        lines.append(f"runid\tall\t{result.run_name}")
        lines.append(f"num_q\tall\t{result.summary['n_scored'].max()}")
        for row in result.summary.iter_rows(named=True):
            value = "null" if row["value"] is None else repr(row["value"])
            lines.append(f"{names[row['measure'], row['cutoff']]}\tall\t{value}")
    return "\n".join(lines)


def _residual_name(name: str) -> str:
    return "rbp_resid" if name == "rbp" else f"{name}:residual"


def print_tables(results: Sequence[EvaluationResult], console: Console | None = None) -> None:
    """The summary table of each result, then its warnings; a warning that every one of several results has is
    printed once, after them all (rich is imported here only: the other formats never load it). Tables fit the
    terminal: headers wrap between words, and long values fold onto more lines rather than being cut."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    shared = set(results[0].warnings).intersection(*(r.warnings for r in results[1:])) if len(results) > 1 else set()
    for result in results:
        spec = result.spec
        table = Table(
            title=escape(f"{result.run_name}: {spec.full_label()}"),
            caption=f"evaluation {result.evaluation_id} · spec {spec.spec_hash[:16]}",
            pad_edge=False,
        )
        # Measure names stay whole; the other columns wrap (rich never breaks a header's word while the table's
        # narrowest form fits the terminal, which it does at 80 columns).
        for column in ("measure", "value", "scored", "missing", "undefined", "no judgments", "unjudged share"):
            table.add_column(column, justify="left" if column == "measure" else "right", no_wrap=column == "measure",
                             overflow="fold")
        declared = _declared(result)
        for row in result.summary.iter_rows(named=True):
            value = "undefined" if row["value"] is None else f"{row['value']:.4f}"
            fraction = row["mean_unjudged_fraction"]
            measure = declared[row["measure"], row["cutoff"]]
            table.add_row(
                spec.measure_trec_eval_name(measure) or measure.canonical,
                value,
                str(row["n_scored"]),
                str(row["n_missing"]),
                str(row["n_undefined"]),
                str(row["n_no_judgments"]),
                "-" if fraction is None else f"{fraction:.1%}",
            )
        console.print(table)
        for line in interval_lines(result.per_query, result.summary):
            console.print(escape(line), highlight=False)
        for warning in result.warnings:
            if warning not in shared:
                console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)
    for warning in (w for w in results[0].warnings if w in shared) if results else ():
        console.print(f"[yellow]warning (all {len(results)} runs):[/yellow] {escape(warning)}", highlight=False)
