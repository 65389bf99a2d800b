"""The HTML report of evaluations and their comparison: one self-contained file, plots inlined as SVG.

Belongs here: laying out what the evaluations and the comparison already hold (summary with intervals, per-query
differences coloured by robustness, unjudged coverage by cutoff, the distribution of per-query values, the
significance table, provenance) as HTML and matplotlib figures. No statistics are computed here.

matplotlib renders with its Agg backend, offline, to SVG whose text is drawn as paths: the file needs no network, no
font and no script to be read, and the figures are vector graphics that stay sharp when zoomed.
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from judged.flows.pipeline.compare import (
    NO_INTERVALS_NOTE,
    ComparedEvaluation,
    ComparisonResult,
    compare_evaluations,
    from_warehouse,
    store_comparison,
)
from judged.flows.engine.versions import implementation_commit, implementation_version, library_versions
from judged.flows.store.outputs import replace_atomically
from judged.flows.store.warehouse import Store
from judged.schemas.comparison import ComparisonSettings, measure_at

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ROBUSTNESS_COLOURS = {"robust_win": "#1a7f37", "robust_loss": "#cf222e", "robust_tie": "#0969da", "unresolved": "#8c959f"}
SIGN_COLOURS = {"win": "#7fbf8f", "loss": "#e6949a", "tie": "#8c959f"}  # when robustness is unknown
STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1100px;
       color: #1f2328; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border: 1px solid #d0d7de; padding: 0.25em 0.6em; text-align: right; }
th { background: #f6f8fa; } td.text, th.text { text-align: left; }
.note { background: #fff8c5; border: 1px solid #d4a72c; padding: 0.5em 0.8em; margin: 0.5em 0; }
.plot svg { max-width: 100%; height: auto; }
code { font-size: 0.9em; } .muted { color: #656d76; }
"""


def _figure() -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(10, 3.6), layout="constrained")


def _svg(figure: Figure) -> str:
    """The figure as inline SVG markup (text as paths, no date, ids salted by a constant: same figure, same bytes)."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "judged"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _primary_measure(evaluation: ComparedEvaluation) -> tuple[str, int | None]:
    """The measure and cutoff the plots show: the summary's first (nDCG@10 for cutoffs 10,100,1000)."""
    first = evaluation.summary.row(0, named=True)
    return first.get("measure") or evaluation.spec.label(first["cutoff"]), first["cutoff"]


def _measure_rows(frame: pl.DataFrame, measure: str, cutoff: int | None) -> pl.DataFrame:
    at_cutoff = frame.filter(pl.col("cutoff").eq_missing(cutoff))
    return at_cutoff.filter(pl.col("measure") == measure) if "measure" in frame.columns else at_cutoff


def difference_plot(comparison: ComparisonResult, measure: str, cutoff: int | None) -> str:
    """Per run against the baseline: each query's difference as a bar, sorted, coloured by robustness (or, without
    intervals, by sign in lighter colours)."""
    rows = _measure_rows(comparison.per_query, measure, cutoff)
    runs = [name for name in rows["run"].unique(maintain_order=True)]
    figure = _figure()
    figure.set_size_inches(10, 2.8 * max(len(runs), 1))
    axes = figure.subplots(max(len(runs), 1), 1, squeeze=False)[:, 0]
    known = rows["robustness"].null_count() < rows.height
    tolerance = comparison.settings.tie_tolerance
    for ax, run in zip(axes, runs, strict=False):
        pairs = rows.filter(pl.col("run") == run).sort("difference", descending=True)
        differences = pairs["difference"].to_list()
        if known:
            colours = [ROBUSTNESS_COLOURS[str(r)] for r in pairs["robustness"].cast(pl.String)]
        else:
            colours = [SIGN_COLOURS["win" if d > tolerance else "loss" if d < -tolerance else "tie"]
                       for d in differences]
        ax.bar(range(len(differences)), differences, color=colours, width=0.85)
        ax.axhline(0, color="#1f2328", linewidth=0.8)
        ax.set_xlim(-0.5, max(len(differences), 1) - 0.5)
        ax.set_xticks([])
        ax.set_ylabel(f"{run}\n- {comparison.baseline}")
        ax.set_title(f"{run} against {comparison.baseline}: {len(differences)} queries, sorted by difference",
                     fontsize=10, loc="left")
    if known:
        from matplotlib.patches import Patch

        axes[0].legend(handles=[Patch(color=c, label=k.replace("_", " ")) for k, c in ROBUSTNESS_COLOURS.items()],
                       loc="upper right", fontsize=8)
    return _svg(figure)


def coverage_plot(evaluations: Sequence[ComparedEvaluation]) -> str:
    """Mean share of unjudged documents among the first k retrieved, per cutoff, one line per run."""
    figure = _figure()
    ax = figure.subplots()
    for evaluation in evaluations:
        summary = evaluation.summary.filter(pl.col("cutoff").is_not_null())
        if "measure" in summary.columns:  # one row per cutoff: the share does not depend on the measure
            summary = summary.unique("cutoff", keep="first", maintain_order=True)
        summary = summary.sort("cutoff")
        ax.plot(summary["cutoff"].to_list(), [v or 0.0 for v in summary["mean_unjudged_fraction"].to_list()],
                marker="o", label=evaluation.run_name)
    ax.set_xscale("log")
    ax.set_xlabel("cutoff k")
    ax.set_ylabel("unjudged share of the first k")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _svg(figure)


def distribution_plot(evaluations: Sequence[ComparedEvaluation], measure: str, cutoff: int | None) -> str:
    """The per-query values of each run (scored queries) as box plots with every query drawn as a point."""
    figure = _figure()
    ax = figure.subplots()
    values = []
    for evaluation in evaluations:
        rows = _measure_rows(evaluation.per_query, measure, cutoff).filter(pl.col("value").is_not_null())
        values.append(rows["value"].to_list())
    ax.boxplot(values, showfliers=False)
    for index, run_values in enumerate(values, start=1):
        offsets = [index + 0.25 * ((i * 0.618) % 1 - 0.5) for i in range(len(run_values))]
        ax.scatter(offsets, run_values, s=8, alpha=0.5, color="#0969da")
    ax.set_xticks(range(1, len(evaluations) + 1), [e.run_name for e in evaluations])
    ax.set_ylabel(measure_at(measure, cutoff))
    ax.grid(alpha=0.3, axis="y")
    return _svg(figure)


def _cell(value: object, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) >= 10 ** -digits or value == 0 else f"{value:.1e}"
    return html.escape(str(value))


def _table(headers: list[str], rows: list[list[object]], text_columns: int = 1) -> str:
    head = "".join(f"<th class='{'text' if i < text_columns else ''}'>{html.escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td class='{'text' if i < text_columns else ''}'>{_cell(v)}</td>" for i, v in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def summary_table(evaluations: Sequence[ComparedEvaluation]) -> str:
    """Per run and cutoff: the aggregate, its interval over the unjudged documents when the evaluation has one (the
    mean of the per-query bounds over the scored queries), the counts and the unjudged share."""
    rows = []
    for evaluation in evaluations:
        per_query = evaluation.per_query
        for row in evaluation.summary.iter_rows(named=True):
            measure = row.get("measure") or evaluation.spec.label(row["cutoff"])
            low, high = row.get("value_min"), row.get("value_max")
            if "value_min" not in row and "value_min" in per_query.columns:
                scored = _measure_rows(per_query, measure, row["cutoff"]).filter(pl.col("value").is_not_null())
                low, high = scored["value_min"].mean(), scored["value_max"].mean()
            interval = "-" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"
            rows.append([evaluation.run_name, measure_at(measure, row["cutoff"]), row["value"], interval,
                         row["n_scored"], row["n_missing"], row["mean_unjudged_fraction"]])
    return _table(["run", "measure", "value", "interval over unjudged", "scored", "missing", "unjudged share"], rows,
                  text_columns=2)


def significance_table(comparison: ComparisonResult) -> str:
    settings = comparison.settings
    rows = [
        [r["run"], measure_at(r["measure"], r["cutoff"]), r["n_queries"], r["mean_difference"], r["ci_low"], r["ci_high"],
         r["p_t"], r["p_randomization"], r["p_adjusted"], r["p_tukey_hsd"], r["effect_size"],
         f"{r['wins']}/{r['ties']}/{r['losses']}", r["unresolved"]]
        for r in comparison.pairs.iter_rows(named=True)
    ]
    headers = ["run", "measure", "n", f"mean diff (- {comparison.baseline})", f"{settings.confidence_level:.0%} CI low",
               "CI high", "p t", "p randomization", f"p adjusted ({settings.correction})", "p Tukey HSD", "d_z",
               "W/T/L", "unresolved"]
    return _table(headers, rows, text_columns=2)


def provenance_section(evaluations: Sequence[ComparedEvaluation], comparison: ComparisonResult | None) -> str:
    first = evaluations[0]
    items = [
        ("judgment set", f"{first.judgments_label} ({first.judgment_set_id})"),
        ("judgments sha256", str((first.provenance.get("judgments") or {}).get("source_sha256", "-"))),
        ("spec", f"{first.spec.full_label()} (hash {first.spec.spec_hash})"),
        *[(f"run {e.run_name}", f"evaluation {e.evaluation_id}; source sha256 "
                                f"{(e.provenance.get('run') or {}).get('source_sha256', '-')}") for e in evaluations],
        ("judged", f"{implementation_version()} (commit {implementation_commit()})"),
        ("libraries", ", ".join(f"{k} {v}" for k, v in library_versions().items())),
    ]
    if comparison is not None:
        items.insert(0, ("comparison", f"{comparison.comparison_id}; settings "
                                       f"{comparison.settings.canonical_json()}"))
    rows = "".join(f"<tr><th class='text'>{html.escape(k)}</th><td class='text'><code>{html.escape(v)}</code></td></tr>"
                   for k, v in items)
    return f"<table id='provenance'>{rows}</table>"


def render_report(evaluations: Sequence[ComparedEvaluation], comparison: ComparisonResult | None) -> str:
    """The whole report as one HTML document."""
    import matplotlib

    matplotlib.use("Agg")
    first = evaluations[0]
    measure, cutoff = _primary_measure(first)
    short = measure_at(measure, cutoff)
    parts = [
        f"<h1>judged report: {html.escape(', '.join(e.run_name for e in evaluations))}</h1>",
        f"<p class='muted'>{html.escape(first.judgments_label)} · <code>{html.escape(first.spec.full_label())}</code>"
        f" · written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        "<h2 id='summary'>Summary</h2>", summary_table(evaluations),
    ]
    if "value_min" not in first.per_query.columns and comparison is None:
        parts.append("<p class='note'>No intervals: these evaluations carry no per-query value_min/value_max over "
                     "their unjudged documents.</p>")
    if comparison is not None:
        parts += [
            f"<h2 id='differences'>Per-query differences, {html.escape(short)}</h2>",
            *[f"<p class='note'>{html.escape(note)}</p>" for note in comparison.notes if note == NO_INTERVALS_NOTE],
            f"<div class='plot' id='difference-plot'>{difference_plot(comparison, measure, cutoff)}</div>",
        ]
    parts += [
        "<h2 id='coverage'>Unjudged coverage by cutoff</h2>",
        f"<div class='plot' id='coverage-plot'>{coverage_plot(evaluations)}</div>",
        f"<h2 id='distribution'>Per-query {html.escape(short)} per run</h2>",
        f"<div class='plot' id='distribution-plot'>{distribution_plot(evaluations, measure, cutoff)}</div>",
    ]
    if comparison is not None:
        settings = comparison.settings
        parts += [
            "<h2 id='significance'>Significance</h2>",
            significance_table(comparison),
            f"<p class='muted'>Randomization test: {settings.permutations} sign flips (exact enumeration when 2^n is"
            f" fewer), seed {settings.seed}; CI: paired percentile bootstrap, {settings.bootstrap_resamples} "
            f"resamples; p adjusted: {settings.correction} over all {comparison.pairs.height} tests; d_z: mean "
            f"difference / sd of the differences; ties: |difference| &lt;= {settings.tie_tolerance:g}; queries: "
            f"{settings.query_set}.</p>",
        ]
    parts += ["<h2 id='provenance-heading'>Provenance</h2>", provenance_section(evaluations, comparison)]
    title = html.escape(f"judged report: {', '.join(e.run_name for e in evaluations)}")
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>\n")


def write_report(path: Path, evaluations: Sequence[ComparedEvaluation], comparison: ComparisonResult | None) -> Path:
    """Render, then write under a temporary name beside the target and rename: never a half-written report. For
    the warehouse's own reports; a file the user names goes through `write_output_file`."""
    return replace_atomically(path, render_report(evaluations, comparison))


def nightly_report(warehouse: Store, evaluation_ids: Sequence[str], name: str, baseline: str | None = None) -> Path:
    """A night's report in the warehouse (`reports/<name>.html`): its evaluations, compared (and the comparison
    stored) under the default settings when there are at least two, against `baseline` (the nightly's
    configuration) or else the one `choose_baseline` picks for runs in no order of the user's."""
    evaluations = [from_warehouse(warehouse, identifier) for identifier in evaluation_ids]
    comparison = None
    if len(evaluations) >= 2:
        comparison = compare_evaluations(evaluations, ComparisonSettings(), baseline, warehouse, listed=False)
        store_comparison(warehouse, comparison, name)
    return write_report(warehouse.root / "reports" / f"{name}.html", evaluations, comparison)
