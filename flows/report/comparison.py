"""Printing a comparison: one JSON object, or a readable rich table.

Belongs here: turning a `ComparisonResult` into text. No computation of values.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import polars as pl

from judged.flows.engine.compare import ComparisonResult
from judged.flows.report.wording import counted, doubt_legend
from judged.schemas.comparison import measure_at

if TYPE_CHECKING:
    from rich.console import Console


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def as_json(result: ComparisonResult) -> str:
    """The comparison's identity and settings, its notes, one object per pair, measure and cutoff
    (`comparisons`, in the order computed; `pair_table`, each pair read in its direction, decided pairs first) and
    the per-query differences (`per_query`)."""
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
            "pair_table": [{k: _clean(v) for k, v in row.items()} for row in result.pair_table().iter_rows(named=True)],
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


def _yes(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def _range(low: float | None, high: float | None, digits: int = 3) -> str:
    return "-" if low is None or high is None else f"{low:+.{digits}f}..{high:+.{digits}f}"


def print_table(result: ComparisonResult, console: Console | None = None) -> None:
    """One pair table per measure and cutoff (`ComparisonResult.pair_table`: each pair read in its direction,
    decided pairs first, then significant ones), its legend, the settings and the notes. On a terminal the tables
    fit its width, run names and numbers whole, and piped they are plain lines (flows/report/terminal.py; rich is
    imported only there and then)."""
    from judged.flows.report.terminal import Column, Kind, TextTable, output_console, print_line, print_table

    console = console or output_console()
    settings = result.settings
    first = result.evaluations[0]
    print_line(console, f"{first.judgments_label} · {first.spec.full_label()} · comparison {result.comparison_id}")
    table = result.pair_table()
    has_tukey = table["p_tukey_hsd"].null_count() < table.height
    has_unresolved = table["unresolved"].null_count() < table.height
    has_intervals = table["mean_difference_min"].null_count() < table.height
    has_assessors = table["assessor_worlds"].null_count() < table.height
    headers = ["diff", *(["over unjudged"] if has_intervals else []), *(["assessors"] if has_assessors else []),
               f"{settings.confidence_level:.0%} CI", f"p {settings.correction}",
               *(["decided"] if has_intervals else []), "signif.", "n", "p t", "p rand",
               *(["p HSD"] if has_tukey else []), "d_z", "W/T/L", *(["unres."] if has_unresolved else [])]
    # The pair as two key columns: each run's name stays whole at any width (a name never breaks, a pair would).
    columns = (Column("better", Kind.NAME, key=True), Column("worse", Kind.NAME, key=True),
               *(Column(header) for header in headers))
    for (measure, cutoff), rows in table.group_by(["measure", "cutoff"], maintain_order=True):
        cells = []
        for row in rows.iter_rows(named=True):
            agree = (f"{row['assessor_worlds_agree']}/{row['assessor_worlds']}"
                     if row["assessor_worlds"] is not None else "-")
            cells.append((
                row["better"], row["worse"], _number(row["mean_difference"], 3),
                *([_range(row["mean_difference_min"], row["mean_difference_max"])] if has_intervals else []),
                *([agree] if has_assessors else []),
                _range(row["ci_low"], row["ci_high"]), _p(row["p_adjusted"]),
                *([_yes(row["decided"])] if has_intervals else []), _yes(row["significant"]),
                str(row["n_queries"]), _p(row["p_t"]), _p(row["p_randomization"]),
                *([_p(row["p_tukey_hsd"])] if has_tukey else []),
                _number(row["effect_size"], 2), f"{row['wins']}/{row['ties']}/{row['losses']}",
                *([str(row["unresolved"])] if has_unresolved else []),
            ))
        label = measure_at(measure, cutoff)
        decided = rows.filter(pl.col("decided").fill_null(False)).height
        significant = rows.filter(pl.col("significant").fill_null(False)).height
        title = (f"{label}: {counted(rows.height, 'pair')}, diff = better - worse (0: equal); "
                 + (f"{decided} decided, " if has_intervals else "") + f"{significant} significant")
        print_table(TextTable(columns, cells, title=title), console)
    print_line(console, doubt_legend(settings.confidence_level, settings.correction, has_assessors))
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
