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
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from judged.flows.engine.compare import (
    NO_INTERVALS_NOTE,
    ComparedEvaluation,
    ComparisonResult,
    compare_evaluations,
    from_warehouse,
    store_comparison,
)
from judged.flows.engine.versions import implementation_commit, implementation_version, library_versions
from judged.flows.store.outputs import replace_atomically
from judged.flows.report.wording import pair_verdict
from judged.flows.store.warehouse import REPORTS, Store
from judged.schemas.comparison import ComparisonSettings, measure_at

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe-Ito (colour-blind safe), each outcome also hatched and named in the legend: colour is never the only cue.
OKABE_ITO = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
             "vermillion": "#D55E00", "purple": "#CC79A7", "grey": "#999999"}
ROBUSTNESS_COLOURS = {"robust_win": OKABE_ITO["green"], "robust_loss": OKABE_ITO["vermillion"],
                      "robust_tie": OKABE_ITO["blue"], "unresolved": OKABE_ITO["grey"]}
ROBUSTNESS_HATCHES = {"robust_win": "", "robust_loss": "///", "robust_tie": "...", "unresolved": "xx"}
ROBUSTNESS_LABELS = {"robust_win": "win (whatever the unjudged are)", "robust_loss": "loss (whatever the unjudged are)",
                     "robust_tie": "tie (whatever the unjudged are)", "unresolved": "unresolved (the unjudged decide)"}
SIGN_COLOURS = {"win": OKABE_ITO["green"], "loss": OKABE_ITO["vermillion"], "tie": OKABE_ITO["grey"]}
SIGN_HATCHES = {"win": "", "loss": "///", "tie": "..."}
RUN_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*")
RUN_COLOURS = tuple(OKABE_ITO[k] for k in ("blue", "orange", "green", "purple", "vermillion", "sky", "yellow", "grey"))
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
h3 { font-size: 1em; margin-bottom: 0.2em; }
.conclusions { font-size: 1.05em; line-height: 1.5; background: #f6f8fa; border: 1px solid #d0d7de; padding: 0.6em 0.8em 0.6em 2em; }
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


def _measures(evaluation: ComparedEvaluation) -> list[tuple[str, int | None]]:
    """Every measure and cutoff the evaluation holds, in its summary's order."""
    return [(row.get("measure") or evaluation.spec.label(row["cutoff"]), row["cutoff"])
            for row in evaluation.summary.iter_rows(named=True)]


def _measure_rows(frame: pl.DataFrame, measure: str, cutoff: int | None) -> pl.DataFrame:
    at_cutoff = frame.filter(pl.col("cutoff").eq_missing(cutoff))
    return at_cutoff.filter(pl.col("measure") == measure) if "measure" in frame.columns else at_cutoff


def _summary_row(evaluation: ComparedEvaluation, measure: str, cutoff: int | None) -> dict | None:
    """The evaluation's summary row for one measure and cutoff, with its interval (the summary's own, else the mean
    of the scored queries' bounds), or None."""
    rows = _measure_rows(evaluation.summary, measure, cutoff)
    if rows.height == 0:
        return None
    row = dict(rows.row(0, named=True))
    if "value_min" not in row and "value_min" in evaluation.per_query.columns:
        scored = _measure_rows(evaluation.per_query, measure, cutoff).filter(pl.col("value").is_not_null())
        row["value_min"], row["value_max"] = scored["value_min"].mean(), scored["value_max"].mean()
    return row


def p_value(value: float | None) -> str:
    """Every p-value in the report in one format: four decimals, or `<0.0001`."""
    if value is None or value != value:
        return "-"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _names(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def conclusion_sentences(evaluations: Sequence[ComparedEvaluation], comparison: ComparisonResult | None) -> list[str]:
    """Three to five plain sentences: the best run on each measure, the differences significant after correction,
    whether the unjudged documents could change each best-run conclusion (from the per-run intervals: the best
    run's lower end against every other run's upper end), and, for each pair of the comparison, whether it is
    decided over one grading of the unjudged documents for both runs (the paired difference intervals)."""
    measures = _measures(evaluations[0])
    best: list[tuple[str, str, dict, list[dict]]] = []
    for measure, cutoff in measures:
        rows = [(e.run_name, _summary_row(e, measure, cutoff)) for e in evaluations]
        rows = [(name, row) for name, row in rows if row is not None and row["value"] is not None]
        if not rows:
            continue
        name, top = max(rows, key=lambda item: item[1]["value"])
        best.append((measure_at(measure, cutoff), name, top, [row for other, row in rows if other != name]))
    sentences = []
    if best:
        winners: dict[str, list[str]] = {}
        for label, name, top, _ in best:
            winners.setdefault(name, []).append(f"{label} ({top['value']:.4f})")
        parts = [f"{name} on {_names(labels)}" for name, labels in winners.items()]
        sentences.append(f"Highest scoring run: {'; '.join(parts)}." if len(evaluations) > 1
                         else f"{evaluations[0].run_name} scores {_names(parts[0].split(' on ', 1)[1:])}.")
    if comparison is not None and comparison.pairs.height:
        settings = comparison.settings
        alpha = 1 - settings.confidence_level
        significant = comparison.pairs.filter(pl.col("p_adjusted") < alpha)
        grouped: dict[tuple[str, str], list[str]] = {}  # (run, above or below): its significant measures
        for r in significant.iter_rows(named=True):
            grouped.setdefault((r["run"], "above" if r["mean_difference"] > 0 else "below"), []).append(
                f"{measure_at(r['measure'], r['cutoff'])} ({r['mean_difference']:+.4f}, p adjusted "
                f"{p_value(r['p_adjusted'])})")
        described = [f"{run} {side} {comparison.baseline} on "
                     f"{_names(items[:4] + ([f'{len(items) - 4} more'] if len(items) > 4 else []))}"
                     for (run, side), items in grouped.items()]
        total = comparison.pairs.height
        if described:
            sentences.append(f"{significant.height} of {total} differences from the baseline {comparison.baseline} "
                             f"are significant after {settings.correction} correction at {alpha:g}: "
                             f"{'; '.join(described)}.")
        else:
            sentences.append(f"None of the {total} differences from the baseline {comparison.baseline} is "
                             f"significant after {settings.correction} correction at {alpha:g}.")
    if len(evaluations) > 1:
        settled, open_, unknown = [], [], []
        for label, name, top, others in best:
            if top.get("value_min") is None or any(o.get("value_max") is None for o in others):
                unknown.append(label)
            elif all(top["value_min"] > o["value_max"] for o in others):
                settled.append(f"{label} ({name})")
            else:
                open_.append(f"{label} ({name})")
        if settled:
            sentences.append(f"The unjudged documents cannot change which run is best on {_names(settled)}: its "
                             "lowest possible value is above every other run's highest.")
        if open_:
            sentences.append(f"The unjudged documents could change which run is best on {_names(open_)}: the "
                             "runs' intervals over the unjudged documents overlap.")
        if unknown:
            sentences.append(f"For {_names(unknown)} there is no interval over the unjudged documents, so whether "
                             "they could change the best run is not known.")
    if comparison is not None and len(evaluations) > 1:
        verdicts = [pair_verdict(r, comparison.baseline, measure_at(r["measure"], r["cutoff"]))
                    for r in comparison.pairs.iter_rows(named=True)]
        verdicts = [v for v in verdicts if v is not None]
        if verdicts:
            shown = verdicts[:10] + ([f"{len(verdicts) - 10} more pairs in the table below"] if len(verdicts) > 10 else [])
            decided = int(comparison.pairs["decided"].fill_null(False).sum())
            sentences.append(f"Over one grading of the unjudged documents for both runs of a pair, {decided} of "
                             f"{len(verdicts)} pairs are decided: " + "; ".join(shown) + ".")
    if len(evaluations) == 1 and best:
        label, name, top, _ = best[0]
        if top.get("value_min") is not None:
            sentences.append(f"Whatever the unjudged documents are, its {label} lies between {top['value_min']:.4f} "
                             f"and {top['value_max']:.4f}.")
    return sentences


def _slug(measure: str, cutoff: int | None) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", measure_at(measure, cutoff)).strip("-")


def measure_plot(evaluations: Sequence[ComparedEvaluation], comparison: ComparisonResult | None, measure: str,
                 cutoff: int | None) -> str:
    """One figure for one measure and cutoff: each run's value as a dot with its interval over the unjudged
    documents as a whisker; with a comparison, each run's mean difference from the baseline with its bootstrap CI,
    and per run the per-query differences (query ids on the axis, whiskers from the paired difference intervals,
    outcome (robustness, from the comparison) by colour, hatching and legend text)."""
    label = measure_at(measure, cutoff)
    runs = [] if comparison is None else [r for r in comparison.pairs.filter(
        (pl.col("measure") == measure) & pl.col("cutoff").eq_missing(cutoff))["run"].to_list()]
    figure = _figure()
    heights = [1.0 + 0.35 * len(evaluations)] + ([1.0 + 0.35 * len(runs)] if runs else []) + [3.2] * len(runs)
    figure.set_size_inches(11, sum(heights) + 0.6)
    axes = figure.subplots(len(heights), 1, squeeze=False, height_ratios=heights)[:, 0]

    ax = axes[0]
    for index, evaluation in enumerate(evaluations):
        row = _summary_row(evaluation, measure, cutoff)
        if row is None or row["value"] is None:
            continue
        colour, marker = RUN_COLOURS[index % len(RUN_COLOURS)], RUN_MARKERS[index % len(RUN_MARKERS)]
        low, high = row.get("value_min"), row.get("value_max")
        if low is not None and high is not None:
            ax.plot([low, high], [index, index], color=colour, linewidth=2.5, solid_capstyle="butt")
            ax.plot([low, high], [index, index], linestyle="none", marker="|", markersize=10, color=colour)
        ax.plot([row["value"]], [index], marker=marker, markersize=8, color=colour, markeredgecolor="#1f2328",
                linestyle="none")
        text = f"{row['value']:.4f}" + ("" if low is None or high is None else f"  [{low:.4f}, {high:.4f}]")
        ax.annotate(text, (row["value"], index), xytext=(0, 7), textcoords="offset points", ha="center", fontsize=7)
    ax.margins(x=0.08)
    ax.set_yticks(range(len(evaluations)), [e.run_name for e in evaluations])
    ax.set_ylim(len(evaluations) - 0.4, -0.6)
    ax.set_title(f"{label} per run: dot = value, whisker = interval over the unjudged documents", fontsize=10,
                 loc="left")
    ax.grid(alpha=0.3, axis="x")

    if runs:
        assert comparison is not None
        ax = axes[1]
        pairs = comparison.pairs.filter((pl.col("measure") == measure) & pl.col("cutoff").eq_missing(cutoff))
        for index, row in enumerate(pairs.iter_rows(named=True)):
            if row["mean_difference"] is None:
                continue
            if row["ci_low"] is not None:
                ax.plot([row["ci_low"], row["ci_high"]], [index, index], color="#1f2328", linewidth=1.5)
                ax.plot([row["ci_low"], row["ci_high"]], [index, index], linestyle="none", marker="|",
                        markersize=10, color="#1f2328")
            ax.plot([row["mean_difference"]], [index], marker="D", markersize=7, color=OKABE_ITO["blue"],
                    linestyle="none")
            ax.annotate(f"{row['mean_difference']:+.4f}, p adjusted {p_value(row['p_adjusted'])}",
                        (row["mean_difference"], index), xytext=(0, 7), textcoords="offset points", ha="center",
                        fontsize=7)
        ax.axvline(0, color="#1f2328", linewidth=0.8, linestyle="--")
        ax.margins(x=0.1)
        ax.set_yticks(range(pairs.height), [f"{r} − {comparison.baseline}" for r in pairs["run"]])
        ax.set_ylim(pairs.height - 0.4, -0.6)
        ax.set_title(f"{label}: mean difference run − baseline with its "
                     f"{comparison.settings.confidence_level:.0%} bootstrap CI", fontsize=10, loc="left")
        ax.grid(alpha=0.3, axis="x")
        _query_differences(axes[2:], comparison, runs, measure, cutoff)
    return _svg(figure)


def _query_differences(axes: Sequence, comparison: ComparisonResult, runs: list[str], measure: str,
                       cutoff: int | None) -> None:
    from matplotlib.patches import Patch

    rows = _measure_rows(comparison.per_query, measure, cutoff)
    known = rows.height > 0 and rows["robustness"].null_count() < rows.height
    tolerance = comparison.settings.tie_tolerance
    for ax, run in zip(axes, runs, strict=False):
        pairs = rows.filter(pl.col("run") == run).sort("difference", "query_id", descending=[True, False])
        differences = pairs["difference"].to_list()
        if known:
            kinds = [str(r) for r in pairs["robustness"].cast(pl.String)]
            colours, hatches = [ROBUSTNESS_COLOURS[k] for k in kinds], [ROBUSTNESS_HATCHES[k] for k in kinds]
        else:
            kinds = ["win" if d > tolerance else "loss" if d < -tolerance else "tie" for d in differences]
            colours, hatches = [SIGN_COLOURS[k] for k in kinds], [SIGN_HATCHES[k] for k in kinds]
        positions = range(len(differences))
        bars = ax.bar(positions, differences, color=colours, width=0.8, edgecolor="#1f2328", linewidth=0.3)
        for bar, hatch in zip(bars, hatches, strict=True):
            bar.set_hatch(hatch)
        if pairs.height and pairs["difference_min"].null_count() < pairs.height:
            low, high = pairs["difference_min"].to_list(), pairs["difference_max"].to_list()
            whiskers = [(x, lo, hi) for x, lo, hi in zip(positions, low, high, strict=True)
                        if lo is not None and hi is not None]
            if whiskers:
                xs, los, his = zip(*whiskers, strict=True)
                ax.vlines(xs, los, his, color="#1f2328", linewidth=0.8)
        ax.axhline(0, color="#1f2328", linewidth=0.8)
        ax.set_xlim(-0.5, max(len(differences), 1) - 0.5)
        ax.set_xticks(list(positions), pairs["query_id"].to_list(), rotation=90, fontsize=6)
        ax.set_ylabel(f"{run}\n− {comparison.baseline}", fontsize=8)
        ax.set_title(f"{measure_at(measure, cutoff)}, {run} − {comparison.baseline} per query ({len(differences)} "
                     "queries, sorted): bar = difference, whisker = its interval over one grading of the unjudged "
                     "documents",
                     fontsize=9, loc="left")
        ax.grid(alpha=0.3, axis="y")
        legend = ROBUSTNESS_LABELS if known else {k: k for k in SIGN_COLOURS}
        palette, hatching = (ROBUSTNESS_COLOURS, ROBUSTNESS_HATCHES) if known else (SIGN_COLOURS, SIGN_HATCHES)
        ax.legend(handles=[Patch(facecolor=palette[k], hatch=hatching[k], edgecolor="#1f2328", label=text)
                           for k, text in legend.items()], loc="upper right", fontsize=7)


def coverage_plot(evaluations: Sequence[ComparedEvaluation]) -> str:
    """Mean share of unjudged documents among the first k retrieved, per cutoff, one line per run (each its own
    colour and marker), the cutoffs as plain tick labels."""
    from matplotlib.ticker import NullFormatter, NullLocator

    figure = _figure()
    ax = figure.subplots()
    cutoffs: set[int] = set()
    for index, evaluation in enumerate(evaluations):
        summary = evaluation.summary.filter(pl.col("cutoff").is_not_null())
        if "measure" in summary.columns:  # one row per cutoff: the share does not depend on the measure
            summary = summary.unique("cutoff", keep="first", maintain_order=True)
        summary = summary.sort("cutoff")
        cutoffs.update(summary["cutoff"].to_list())
        ax.plot(summary["cutoff"].to_list(), [v or 0.0 for v in summary["mean_unjudged_fraction"].to_list()],
                marker=RUN_MARKERS[index % len(RUN_MARKERS)], color=RUN_COLOURS[index % len(RUN_COLOURS)],
                label=evaluation.run_name)
    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(sorted(cutoffs), [str(k) for k in sorted(cutoffs)])
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
        ax.scatter(offsets, run_values, s=8, alpha=0.5, color=RUN_COLOURS[(index - 1) % len(RUN_COLOURS)],
                   marker=RUN_MARKERS[(index - 1) % len(RUN_MARKERS)])
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
        for measure, cutoff in _measures(evaluation):
            row = _summary_row(evaluation, measure, cutoff)
            assert row is not None
            low, high = row.get("value_min"), row.get("value_max")
            interval = "-" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"
            rows.append([evaluation.run_name, measure_at(measure, cutoff), row["value"], interval,
                         row["n_scored"], row["n_missing"], row["mean_unjudged_fraction"]])
    return _table(["run", "measure", "value", "interval over unjudged", "scored", "missing", "unjudged share"], rows,
                  text_columns=2)


def significance_table(comparison: ComparisonResult) -> str:
    """Per run, measure and cutoff against the baseline: both means, their difference (run − baseline) with its CI,
    the p-values in one format, the effect size and the wins, ties and losses."""
    settings = comparison.settings
    rows = [
        [r["run"], measure_at(r["measure"], r["cutoff"]), r["n_queries"], r["run_mean"], r["baseline_mean"],
         r["mean_difference"], r["ci_low"], r["ci_high"], p_value(r["p_t"]), p_value(r["p_randomization"]),
         p_value(r["p_adjusted"]), p_value(r["p_tukey_hsd"]), r["effect_size"],
         f"{r['wins']}/{r['ties']}/{r['losses']}", r["unresolved"]]
        for r in comparison.pairs.iter_rows(named=True)
    ]
    headers = ["run", "measure", "n", "run mean", f"baseline mean ({comparison.baseline})",
               "mean diff (run − baseline)", f"{settings.confidence_level:.0%} CI low", "CI high", "p t",
               "p randomization", f"p adjusted ({settings.correction})", "p Tukey HSD", "d_z", "W/T/L", "unresolved"]
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
    measures = _measures(first)
    measure, cutoff = measures[0]
    short = measure_at(measure, cutoff)
    sentences = "".join(f"<li>{html.escape(sentence)}</li>" for sentence in conclusion_sentences(evaluations, comparison))
    parts = [
        f"<h1>judged report: {html.escape(', '.join(e.run_name for e in evaluations))}</h1>",
        f"<p class='muted'>{html.escape(first.judgments_label)} · <code>{html.escape(first.spec.full_label())}</code>"
        f" · written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        f"<ul id='conclusions' class='conclusions'>{sentences}</ul>",
        "<h2 id='summary'>Summary</h2>", summary_table(evaluations),
    ]
    if "value_min" not in first.per_query.columns and comparison is None:
        parts.append("<p class='note'>No intervals: these evaluations carry no per-query value_min/value_max over "
                     "their unjudged documents.</p>")
    if comparison is not None:
        parts += [f"<p class='note'>{html.escape(note)}</p>" for note in comparison.notes if note == NO_INTERVALS_NOTE]
    parts.append("<h2 id='measures'>Every measure and cutoff</h2>")
    for each, at in measures:
        label = measure_at(each, at)
        parts += [f"<h3>{html.escape(label)}</h3>",
                  f"<div class='plot measure-plot' id='measure-plot-{_slug(each, at)}' "
                  f"data-measure='{html.escape(label)}'>{measure_plot(evaluations, comparison, each, at)}</div>"]
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
    return write_report(warehouse.root / REPORTS / f"{name}.html", evaluations, comparison)
