"""Printing evaluation results: a readable rich table, one JSON object, or trec_eval `-q` style lines.

Belongs here: turning collected results into text. No computation of values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from judged.flows.engine.evaluate import EvaluationResult
from judged.schemas.measures import MeasureBase, binary_grades, trec_eval_names
from judged.transforms.summary import residual_means

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console


def _declared(result: EvaluationResult) -> dict[tuple[str, int | None], MeasureBase]:
    """The spec's measures by the (measure, cutoff) keys of the result's rows."""
    return {(m.family, m.cutoff): m for m in result.spec.measure_list()}


def result_trec_eval_names(result: EvaluationResult) -> dict[tuple[str, int | None], str | None]:
    """trec_eval's name of each measure of the result where trec_eval prints exactly its number (the spec is
    trec_eval's method, RBP's judgments are binary, and no earlier measure of the result prints under that name),
    None otherwise; by the (measure, cutoff) keys of the result's rows."""
    measures = result.spec.measure_list()
    names = (trec_eval_names(measures, binary_grades(result.grades)) if result.spec.trec_eval_compatible()
             else (None,) * len(measures))
    return {(m.family, m.cutoff): name for m, name in zip(measures, names, strict=True)}


def _printed_names(result: EvaluationResult) -> dict[tuple[str, int | None], tuple[str, str]]:
    """What each measure and its residual print as: trec_eval's names where they hold, our labels otherwise."""
    spec, binary = result.spec, binary_grades(result.grades)
    printed = {}
    for key, trec_name in result_trec_eval_names(result).items():
        measure = _declared(result)[key]
        label = spec.measure_label(measure)
        residual = (measure.trec_eval_residual_name(binary) if trec_name else None) or f"{label}:residual"
        printed[key] = (trec_name or label, residual)
    return printed


def _residuals(result: EvaluationResult) -> dict[tuple[str, int | None], float | None]:
    """The summary's aggregate of each RBP measure's per-query residuals."""
    means = residual_means(result.per_query.lazy(), result.spec).collect()
    return {(m, k): r for m, k, r in means.select("measure", "cutoff", "residual").iter_rows()}


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


INTERVAL_WORLD = (
    "closed: value_min and value_max range over every grade of the judgment set's scale given to each unjudged "
    "document the run retrieved (to its depth); documents nobody retrieved stay as judged"
)


def interval_lines(
    per_query: pl.DataFrame, summary: pl.DataFrame, widest: int = 5,
    residuals: dict[tuple[str, int | None], float | None] | None = None,
) -> list[str]:
    """Per measure and cutoff, the aggregate with its interval over the unjudged documents ("AP@10 = 0.4000,
    [0.3100, 0.5800] over 37 unjudged documents"), then the `widest` queries with the widest intervals. A measure
    without intervals says so; `residuals` adds RBP's mean residual to its line."""
    import polars as pl

    lines = []
    for row in summary.iter_rows(named=True):
        key = (row["measure"], row["cutoff"])
        name = row["measure"] if row["cutoff"] is None else f"{row['measure']}@{row['cutoff']}"
        if row["value"] is None:
            why = "no query scored" if not row["n_scored"] else "the scored queries' weights sum to 0"
            lines.append(f"{name} undefined ({why})")
            continue
        at_measure = per_query.filter(
            pl.col("measure") == row["measure"], pl.col("cutoff").eq_missing(row["cutoff"]),
            pl.col("value").is_not_null(),
        )
        unjudged = f"{int(at_measure['n_unjudged_at_k'].sum())} unjudged documents"
        residual = (residuals or {}).get(key)
        residual_text = "" if residual is None else f", mean residual {residual:.4f}"
        if row["value_min"] is None or row["value_max"] is None:
            lines.append(f"{name} = {row['value']:.4f}{residual_text}, no interval computed for this measure "
                         f"({unjudged})")
            continue
        bound = f", {row['n_bound_intervals']} bound" if row.get("n_bound_intervals") else ""
        lines.append(
            f"{name} = {row['value']:.4f}, [{row['value_min']:.4f}, {row['value_max']:.4f}] over {unjudged}"
            f"{residual_text} ({row['n_wide_intervals']} of {row['n_scored']} queries wider than "
            f"{row['interval_width']:g}{bound})"
        )
        wide = (
            at_measure.with_columns(width=pl.col("value_max") - pl.col("value_min"))
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
    rows_of: dict[str, str] = {}
    for result in results:
        spec = result.spec
        declared = _declared(result)
        trec_names = result_trec_eval_names(result)
        residuals = _residuals(result)
        summary = [
            {
                "cutoff": row["cutoff"],
                "label": spec.measure_label(declared[row["measure"], row["cutoff"]]),
                "trec_eval_measure": trec_names[row["measure"], row["cutoff"]],
                **{key: _clean(value) for key, value in row.items() if key != "cutoff"},
                "residual": _clean(residuals.get((row["measure"], row["cutoff"]))),
            }
            for row in result.summary.iter_rows(named=True)
        ]
        # A NUL cannot occur unescaped in json.dumps's output: the placeholder is found only where it was put.
        placeholder = f"\x00per_query of evaluation {len(evaluations)}\x00"
        rows_of[placeholder] = _rows_json(result.per_query)
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
                "per_query": placeholder,
            }
        )
    document = json.dumps({"evaluations": evaluations}, indent=1)
    for placeholder, rows in rows_of.items():
        document = document.replace(json.dumps(placeholder), rows, 1)
    return document


def _rows_json(frame: pl.DataFrame) -> str:
    """A table's rows as a JSON array, one object per line, written by Polars (NaN as null, as `_clean` does).

    json.dumps with indent encodes in Python, a dict per row, a cost that grows with the queries (benchmarks/README,
    the direct path with JSON output). `as_json` puts a placeholder string where the rows go and splices them in."""
    import polars as pl  # loaded already by the evaluation; this module stays light for the commands that print less

    lines = frame.with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None)).write_ndjson().splitlines()
    return "[\n" + ",\n".join(lines) + "\n]" if lines else "[]"


def as_trec(results: Sequence[EvaluationResult]) -> str:
    """`measure <tab> query <tab> value` per query (queries with a value), then the `all` lines, full precision.
    RBP's residual follows it as trec_eval's `rbp_resid` where that is its number (else our label with
    `:residual`), per query and in `all` (the summary's aggregate of the residuals)."""
    lines: list[str] = []
    for result in results:
        rows = result.per_query.filter(result.per_query["value"].is_not_null())
        printed = _printed_names(result)
        residuals = _residuals(result)
        for query, measure, cutoff, value, residual in zip(
            rows["query_id"], rows["measure"], rows["cutoff"], rows["value"], rows["residual"], strict=True
        ):
            name, residual_name = printed[measure, cutoff]
            lines.append(f"{name}\t{query}\t{value!r}")
            if residual is not None:
                lines.append(f"{residual_name}\t{query}\t{residual!r}")
        lines.append(f"runid\tall\t{result.run_name}")
        lines.append(f"num_q\tall\t{result.summary['n_scored'].max()}")
        for row in result.summary.iter_rows(named=True):
            key = (row["measure"], row["cutoff"])
            lines.append(f"{printed[key][0]}\tall\t{_trec_value(row['value'])}")
            if key in residuals:
                lines.append(f"{printed[key][1]}\tall\t{_trec_value(residuals[key])}")
    return "\n".join(lines)


def _trec_value(value: float | None) -> str:
    return "null" if value is None or math.isnan(value) else repr(value)


def print_tables(results: Sequence[EvaluationResult], console: Console | None = None) -> None:
    """The summary table of each result, then its warnings; a warning that every one of several results has is
    printed once, after them all. On a terminal the tables fit its width and piped they are plain lines
    (flows/report/terminal.py; rich is imported only there and then: the other formats never load it)."""
    from judged.flows.report.terminal import Column, Kind, TextTable, output_console, print_line, print_table

    console = console or output_console()
    shared = set(results[0].warnings).intersection(*(r.warnings for r in results[1:])) if len(results) > 1 else set()
    columns = (Column("measure", Kind.NAME, key=True), Column("value"), Column("scored"), Column("missing"),
               Column("undefined"), Column("no judgments"), Column("unjudged share"))
    for result in results:
        spec = result.spec
        declared = _declared(result)
        trec_names = result_trec_eval_names(result)
        rows = []
        for row in result.summary.iter_rows(named=True):
            fraction = row["mean_unjudged_fraction"]
            key = (row["measure"], row["cutoff"])
            rows.append((
                trec_names[key] or declared[key].canonical,
                "undefined" if row["value"] is None else f"{row['value']:.4f}",
                str(row["n_scored"]),
                str(row["n_missing"]),
                str(row["n_undefined"]),
                str(row["n_no_judgments"]),
                "-" if fraction is None else f"{fraction:.1%}",
            ))
        print_table(TextTable(
            columns, rows, title=f"{result.run_name}: {spec.full_label()}",
            caption=f"evaluation {result.evaluation_id} · spec {spec.spec_hash[:16]}",
            notes=interval_lines(result.per_query, result.summary, residuals=_residuals(result)),
        ), console)
        for warning in result.warnings:
            if warning not in shared:
                print_line(console, warning, "warning:", "yellow")
    for warning in (w for w in results[0].warnings if w in shared) if results else ():
        print_line(console, warning, f"warning (all {len(results)} runs):", "yellow")
