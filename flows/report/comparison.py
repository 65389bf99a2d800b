"""Printing a comparison: one JSON object, or a readable rich table.

Belongs here: turning a `ComparisonResult` into text. No computation of values.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from judged.flows.engine.compare import ComparisonResult
from judged.flows.report.wording import pair_verdict
from judged.schemas.comparison import measure_at

if TYPE_CHECKING:
    from rich.console import Console


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def as_json(result: ComparisonResult) -> str:
    """The comparison's identity and settings, its notes, one object per pair, measure and cutoff
    (`comparisons`) and the per-query differences (`per_query`)."""
    return json.dumps(
        {
            "comparison_id": result.comparison_id,
            "baseline": result.baseline,
            "runs": [{"run": e.run_name, "evaluation_id": e.evaluation_id} for e in result.evaluations],
            "judgments": result.evaluations[0].judgments_label,
            "label": result.evaluations[0].spec.full_label(),
            "settings": result.settings.model_dump(mode="json"),
            "notes": list(result.notes),
            "summary": result.family_summary(),
            "comparisons": [{k: _clean(v) for k, v in row.items()} for row in result.pairs.iter_rows(named=True)],
            "per_query": [{k: _clean(v) for k, v in row.items()} for row in result.per_query.iter_rows(named=True)],
        },
        indent=1,
    )


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if value >= 1e-3 else f"{value:.0e}"


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:+.{digits}f}"


def print_table(result: ComparisonResult, console: Console | None = None) -> None:
    """One table per measure and cutoff with a row per run against the baseline, then the settings and notes. On a
    terminal the tables fit its width, run names and numbers whole, and piped they are plain lines
    (flows/report/terminal.py; rich is imported only there and then)."""
    from judged.flows.report.terminal import Column, Kind, TextTable, output_console, print_line, print_table

    console = console or output_console()
    settings = result.settings
    first = result.evaluations[0]
    print_line(console, f"{first.judgments_label} · {first.spec.full_label()} · comparison {result.comparison_id}")
    has_tukey = result.pairs["p_tukey_hsd"].null_count() < result.pairs.height
    has_unresolved = result.pairs["unresolved"].null_count() < result.pairs.height
    headers = ["n", "diff", f"{settings.confidence_level:.0%} CI", "p t", "p rand", f"p {settings.correction}",
               *(["p HSD"] if has_tukey else []), "d_z", "W/T/L", *(["unres."] if has_unresolved else [])]
    columns = (Column("run", Kind.NAME, key=True), *(Column(header) for header in headers))
    for (measure, cutoff), rows in result.pairs.group_by(["measure", "cutoff"], maintain_order=True):
        cells = []
        for row in rows.iter_rows(named=True):
            ci = "-" if row["ci_low"] is None else f"{row['ci_low']:+.3f}..{row['ci_high']:+.3f}"
            cells.append((
                row["run"], str(row["n_queries"]), _number(row["mean_difference"], 3), ci,
                _p(row["p_t"]), _p(row["p_randomization"]), _p(row["p_adjusted"]),
                *([_p(row["p_tukey_hsd"])] if has_tukey else []),
                _number(row["effect_size"], 2), f"{row['wins']}/{row['ties']}/{row['losses']}",
                *([str(row["unresolved"])] if has_unresolved else []),
            ))
        verdicts = [pair_verdict(row, result.baseline, measure_at(measure, cutoff))
                    for row in rows.iter_rows(named=True)]
        print_table(TextTable(columns, cells, title=f"{measure_at(measure, cutoff)}: each run - {result.baseline}",
                              notes=[verdict for verdict in verdicts if verdict is not None]), console)
    print_line(
        console,
        f"diff: mean per-query difference; p rand: paired randomization test ({settings.permutations} sign "
        f"flips, exact when 2^n is fewer; seed {settings.seed}); p {settings.correction}: p rand corrected over "
        f"all {result.pairs.height} tests; "
        + ("p HSD: randomised Tukey HSD blocked by query; " if has_tukey else "")
        + f"CI: paired percentile bootstrap ({settings.bootstrap_resamples} resamples); d_z: Cohen's d of the "
        f"differences; ties: |difference| <= {settings.tie_tolerance:g}; queries: {settings.query_set}; "
        "unres.: queries whose sign the missing judgments leave open",
    )
    for note in result.notes:
        print_line(console, note, "note:", "yellow")
