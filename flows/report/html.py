"""The HTML report of evaluations and their comparison: one self-contained file, plots inlined as SVG.

Belongs here: laying out what the evaluations and the comparison already hold (summary with intervals, per-query
differences coloured by robustness, unjudged coverage by cutoff, the distribution of per-query values, the
pair table and the pairs plot, provenance) as HTML and matplotlib figures. No statistics are computed here.

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
from judged.flows.report.wording import counted, doubt_legend, pair_sentence
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
# The runs take the Okabe-Ito colours the outcomes leave free (win green, loss vermillion, tie blue, unresolved grey),
# and black; with the markers, 40 runs differ in colour or shape before any look alike.
RUN_COLOURS = (OKABE_ITO["orange"], OKABE_ITO["sky"], OKABE_ITO["purple"], "#1f2328", OKABE_ITO["yellow"])
MOST_QUERY_PANELS = 6  # per measure, the per-query differences of this many of the baseline's pairs
MOST_PLOTTED_PAIRS = 60  # per measure, the pairs plot shows this many, in the pair table's order
STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1100px;
       color: #1f2328; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
.wide { max-width: 100%; overflow-x: auto; } .tall { max-height: 40em; overflow-y: auto; }
th, td { border: 1px solid #d0d7de; padding: 0.25em 0.6em; text-align: right; }
th { background: #f6f8fa; } td.text, th.text { text-align: left; } td { white-space: nowrap; }
.note { background: #fff8c5; border: 1px solid #d4a72c; padding: 0.5em 0.8em; margin: 0.5em 0; }
.plot svg { max-width: 100%; height: auto; }
code { font-size: 0.9em; } .muted { color: #656d76; }
h3 { font-size: 1em; margin-bottom: 0.2em; }
.legend { font-size: 0.9em; }
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
    """At most five short sentences, whatever the number of runs (the rest is in the pair table): the best run on
    each measure; whether the unjudged documents could change the best run (the per-run intervals: the best run's
    lower end against every other run's upper end); with a comparison, on its first measure, how many pairs are
    decided and significant; and, from the pair table, the best run against the runner-up and against the
    baseline, each saying whether the unjudged documents (and the assessors) could reverse it and whether the
    paired test is significant (`wording.pair_sentence`)."""
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
    if len(evaluations) > 1 and best:
        settled, open_, unknown = [], [], []
        for label, name, top, others in best:
            if top.get("value_min") is None or any(o.get("value_max") is None for o in others):
                unknown.append(label)
            elif all(top["value_min"] > o["value_max"] for o in others):
                settled.append(label)
            else:
                open_.append(label)
        said = []
        if settled:
            said.append(f"cannot change which run is best on {_names(settled)}")
        if open_:
            said.append(f"could change it on {_names(open_)}" if settled
                        else f"could change which run is best on {_names(open_)}")
        if said:
            sentences.append(f"The unjudged documents {' but '.join(said)}"
                             + (f" (no interval on {_names(unknown)})" if unknown else "") + ".")
        elif unknown:
            sentences.append(f"Without intervals over the unjudged documents on {_names(unknown)}, whether they "
                             "could change the best run is not known.")
    if comparison is not None and comparison.pairs.height and best:
        sentences += _pair_sentences(comparison, {label: name for label, name, _, _ in best})
    if len(evaluations) == 1 and best:
        label, name, top, _ = best[0]
        if top.get("value_min") is not None:
            sentences.append(f"Whatever the unjudged documents are, its {label} lies between {top['value_min']:.4f} "
                             f"and {top['value_max']:.4f}.")
    return sentences[:5]


def _pair_sentences(comparison: ComparisonResult, best_runs: dict[str, str]) -> list[str]:
    """On the comparison's first measure: how many pairs are decided and significant, then its best run (of
    `best_runs`: measure label -> best run) against the runner-up and against the baseline (one sentence each, or
    one when they are one pair)."""
    settings = comparison.settings
    table = comparison.pair_table()
    measure, cutoff = table.row(0, named=True)["measure"], table.row(0, named=True)["cutoff"]
    first = table.filter((pl.col("measure") == measure) & pl.col("cutoff").eq_missing(cutoff))
    label = measure_at(measure, cutoff)
    best_run = best_runs.get(label, comparison.baseline)
    decided = first.filter(pl.col("decided").fill_null(False)).height
    significant = first.filter(pl.col("significant").fill_null(False)).height
    has_intervals = first["decided"].null_count() < first.height
    counts = (f"Of the {counted(first.height, 'pair')} compared on {label}, "
              + (f"{decided} {'is' if decided == 1 else 'are'} decided whatever the unjudged documents are and "
                 if has_intervals else "")
              + f"{significant} significant after {settings.correction} correction"
              + ("; the pair table below lists every pair and measure." if comparison.pairs.height > 1 else "."))
    sentences = [counts]
    involving = first.filter((pl.col("better") == best_run) | (pl.col("worse") == best_run))
    runner_up = (involving.filter(pl.col("better") == best_run).sort("mean_difference").head(1)
                 if best_run in first["better"].to_list() else involving.head(0))
    chosen = runner_up.to_dicts()
    against_baseline = involving.filter((pl.col("better") == comparison.baseline)
                                        | (pl.col("worse") == comparison.baseline))
    chosen += [row for row in against_baseline.to_dicts() if row not in chosen]
    sentences += [pair_sentence(row, label, settings.correction) for row in chosen[:2]]
    return sentences


def _slug(measure: str, cutoff: int | None) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", measure_at(measure, cutoff)).strip("-")


def _baseline_runs(comparison: ComparisonResult | None, measure: str, cutoff: int | None) -> list[str]:
    """The runs whose per-query differences from the baseline the report draws: the baseline's pairs, in order."""
    if comparison is None:
        return []
    rows = comparison.pairs.filter((pl.col("measure") == measure) & pl.col("cutoff").eq_missing(cutoff)
                                   & (pl.col("baseline") == comparison.baseline))
    return rows["run"].to_list()


def measure_plot(evaluations: Sequence[ComparedEvaluation], comparison: ComparisonResult | None, measure: str,
                 cutoff: int | None) -> str:
    """One figure for one measure and cutoff: each run's value as a dot with its interval over the unjudged
    documents as a whisker; with a comparison, the per-query differences of the first MOST_QUERY_PANELS of the
    baseline's pairs (query ids on the axis, whiskers from the paired difference intervals, outcome (robustness,
    from the comparison) by colour, hatching and legend text). Every pair's mean difference is in `pairs_plot`."""
    label = measure_at(measure, cutoff)
    runs = _baseline_runs(comparison, measure, cutoff)[:MOST_QUERY_PANELS]
    figure = _figure()
    heights = [1.0 + 0.3 * len(evaluations)] + [3.2] * len(runs)
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
        ax.annotate(text, (high if high is not None else row["value"], index), xytext=(6, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=7)
    ax.margins(x=0.15)
    ax.set_yticks(range(len(evaluations)), [e.run_name for e in evaluations], fontsize=8)
    ax.set_ylim(len(evaluations) - 0.4, -0.6)
    ax.set_title(f"{label} per run: dot = value, whisker = range over the unjudged documents", fontsize=10,
                 loc="left")
    ax.grid(alpha=0.3, axis="x")
    if runs:
        assert comparison is not None
        _query_differences(axes[1:], comparison, runs, measure, cutoff)
    return _svg(figure)


def pairs_plot(comparison: ComparisonResult, measure: str, cutoff: int | None) -> str:
    """Every pair of one measure and cutoff (the first MOST_PLOTTED_PAIRS, in the pair table's order), read in
    its direction: on the left its mean difference's range over the unjudged documents, on the right its bootstrap
    CI, both against 0 (solid: decided, resp. significant; dotted: not)."""
    label = measure_at(measure, cutoff)
    table = comparison.pair_table().filter((pl.col("measure") == measure) & pl.col("cutoff").eq_missing(cutoff))
    shown = table.head(MOST_PLOTTED_PAIRS)
    figure = _figure()
    figure.set_size_inches(11, 1.2 + 0.24 * max(shown.height, 1))
    unjudged, sampling = figure.subplots(1, 2, sharey=True)
    names = [f"{r['better']} {r['direction']} {r['worse']}" for r in shown.iter_rows(named=True)]
    for ax, (low, high, solid) in ((unjudged, ("mean_difference_min", "mean_difference_max", "decided")),
                                   (sampling, ("ci_low", "ci_high", "significant"))):
        for index, row in enumerate(shown.iter_rows(named=True)):
            if row[low] is not None and row[high] is not None:
                ax.plot([row[low], row[high]], [index, index], color="#1f2328", linewidth=1.8,
                        linestyle="-" if row[solid] else ":")
                ax.plot([row[low], row[high]], [index, index], linestyle="none", marker="|", markersize=8,
                        color="#1f2328")
            if row["mean_difference"] is not None:
                ax.plot([row["mean_difference"]], [index], marker="D", markersize=5, color="white",
                        markeredgecolor="#1f2328", linestyle="none")
        ax.axvline(0, color="#1f2328", linewidth=0.9, linestyle="--")
        ax.grid(alpha=0.3, axis="x")
        ax.margins(x=0.08)
    unjudged.set_yticks(range(shown.height), names, fontsize=8)
    unjudged.set_ylim(shown.height - 0.4, -0.6)
    more = f" (first {shown.height} of {table.height})" if shown.height < table.height else ""
    unjudged.set_title(f"{label}{more}: range over the unjudged\n(solid: decided, 0 outside; diamond: mean difference)", fontsize=9,
                       loc="left")
    sampling.set_title(f"{comparison.settings.confidence_level:.0%} bootstrap CI, query sampling\n"
                       "(solid: significant)", fontsize=9, loc="left")
    return _svg(figure)


def _query_differences(axes: Sequence, comparison: ComparisonResult, runs: list[str], measure: str,
                       cutoff: int | None) -> None:
    from matplotlib.patches import Patch

    rows = _measure_rows(comparison.per_query, measure, cutoff)
    known = rows.height > 0 and rows["robustness"].null_count() < rows.height
    tolerance = comparison.settings.tie_tolerance
    for ax, run in zip(axes, runs, strict=False):
        pairs = rows.filter((pl.col("run") == run) & (pl.col("baseline") == comparison.baseline)).sort(
            "difference", "query_id", descending=[True, False])
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
        ax.set_title(f"{measure_at(measure, cutoff)}: {run} − {comparison.baseline}, {len(differences)} queries "
                     "(bar = difference, whisker = range over the unjudged)", fontsize=9, loc="left")
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
    columns = 1 + (len(evaluations) - 1) // 15  # 15 runs a legend column, beside the plot
    if len(evaluations) > 15:
        figure.set_size_inches(11, 4.5)
    ax.legend(fontsize=7 if len(evaluations) > 8 else 8, ncols=columns, loc="upper left", bbox_to_anchor=(1.01, 1))
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
    many = len(evaluations) > 8
    ax.set_xticks(range(1, len(evaluations) + 1), [e.run_name for e in evaluations], rotation=90 if many else 0,
                  fontsize=7 if many else 9)
    if many:
        figure.set_size_inches(11, 5)
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


def _range(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:+.3f}, {high:+.3f}]"


def _yes(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def pair_table_html(comparison: ComparisonResult) -> str:
    """Every pair, measure and cutoff read in its direction (`ComparisonResult.pair_table`, decided pairs first,
    then significant ones): the mean difference with its range over the unjudged documents, the assessor worlds
    that agree (with several assessors), the bootstrap CI, p adjusted, decided and significant as separate columns,
    then n, d_z and W/T/L (the other tests' p-values are in `judged compare` and the comparisons view: the table
    fits the page); its legend says what each kind of doubt means."""
    settings = comparison.settings
    table = comparison.pair_table()
    assessors = table["assessor_worlds"].null_count() < table.height
    rows = [
        [measure_at(r["measure"], r["cutoff"]), f"{r['better']} {r['direction']} {r['worse']}", r["mean_difference"],
         _range(r["mean_difference_min"], r["mean_difference_max"]),
         *([f"{r['assessor_worlds_agree']} of {r['assessor_worlds']}" if r["assessor_worlds"] else "-"]
           if assessors else []),
         _range(r["ci_low"], r["ci_high"]), p_value(r["p_adjusted"]), _yes(r["decided"]), _yes(r["significant"]),
         r["n_queries"], r["effect_size"], f"{r['wins']}/{r['ties']}/{r['losses']}"]
        for r in table.iter_rows(named=True)
    ]
    headers = ["measure", "pair (better > worse)", "mean diff", "over unjudged", *(["assessors agree"] if assessors
                                                                                      else []),
               f"{settings.confidence_level:.0%} CI", f"p {settings.correction}", "decided", "significant", "n",
               "d_z", "W/T/L"]
    legend = html.escape(doubt_legend(settings.confidence_level, settings.correction, assessors))
    return (f"<p class='legend'>{legend}</p>"
            f"<div class='wide tall' id='pair-table'>{_table(headers, rows, text_columns=2)}</div>")


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


def _runs_named(evaluations: Sequence[ComparedEvaluation], most: int = 5) -> str:
    """The runs' names, or beyond `most` runs their number and the first names (the summary lists them all)."""
    names = [e.run_name for e in evaluations]
    return ", ".join(names) if len(names) <= most else f"{len(names)} runs ({', '.join(names[:3])}, ...)"


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
        f"<h1>judged report: {html.escape(_runs_named(evaluations))}</h1>",
        f"<p class='muted'>{html.escape(first.judgments_label)} · <code>{html.escape(first.spec.full_label())}</code>"
        f" · written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        f"<ul id='conclusions' class='conclusions'>{sentences}</ul>",
        "<h2 id='summary'>Summary</h2>", f"<div class='wide tall'>{summary_table(evaluations)}</div>",
    ]
    if "value_min" not in first.per_query.columns and comparison is None:
        parts.append("<p class='note'>No intervals: these evaluations carry no per-query value_min/value_max over "
                     "their unjudged documents.</p>")
    if comparison is not None:
        parts += [f"<p class='note'>{html.escape(note)}</p>" for note in comparison.notes
                  if note == NO_INTERVALS_NOTE or note.startswith("significance: ")]
    if comparison is not None:
        settings = comparison.settings
        pairs_note = next((note for note in comparison.notes if note.startswith("pairs: ")), "")
        parts += [
            "<h2 id='pairs'>Pairs</h2>",
            f"<p class='muted'>{html.escape(pairs_note.removeprefix('pairs: ').capitalize())}. Differences read "
            "better − worse.</p>",
            pair_table_html(comparison),
            f"<p class='muted'>Randomization test: {settings.permutations} sign flips (exact enumeration when 2^n is"
            f" fewer), seed {settings.seed}; CI: paired percentile bootstrap, {settings.bootstrap_resamples} "
            f"resamples; p {settings.correction}: corrected over all {comparison.pairs.height} tests; d_z: mean "
            f"difference / sd of the differences; ties: |difference| &lt;= {settings.tie_tolerance:g}; queries: "
            f"{settings.query_set}. The t-test, the uncorrected and the Tukey HSD p-values: <code>judged compare</code>"
            " and the <code>comparisons</code> view.</p>",
        ]
    parts.append("<h2 id='measures'>Every measure and cutoff</h2>")
    for each, at in measures:
        label = measure_at(each, at)
        parts.append(f"<h3>{html.escape(label)}</h3>")
        if comparison is not None:
            parts.append(f"<div class='plot pairs-plot' id='pairs-plot-{_slug(each, at)}'>"
                         f"{pairs_plot(comparison, each, at)}</div>")
        parts.append(f"<div class='plot measure-plot' id='measure-plot-{_slug(each, at)}' "
                     f"data-measure='{html.escape(label)}'>{measure_plot(evaluations, comparison, each, at)}</div>")
    parts += [
        "<h2 id='coverage'>Unjudged coverage by cutoff</h2>",
        f"<div class='plot' id='coverage-plot'>{coverage_plot(evaluations)}</div>",
        f"<h2 id='distribution'>Per-query {html.escape(short)} per run</h2>",
        f"<div class='plot' id='distribution-plot'>{distribution_plot(evaluations, measure, cutoff)}</div>",
    ]
    parts += ["<h2 id='provenance-heading'>Provenance</h2>", provenance_section(evaluations, comparison)]
    title = html.escape(f"judged report: {_runs_named(evaluations)}")
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>\n")


def write_report(path: Path, evaluations: Sequence[ComparedEvaluation], comparison: ComparisonResult | None) -> Path:
    """Render, then write under a temporary name beside the target and rename: never a half-written report. For
    the warehouse's own reports; a file the user names goes through `write_output_file`."""
    return replace_atomically(path, render_report(evaluations, comparison))


def nightly_report(warehouse: Store, evaluation_ids: Sequence[str], name: str, baseline: str | None = None,
                   pairs: str | None = None) -> Path:
    """A night's report in the warehouse (`reports/<name>.html`): its evaluations, compared (and the comparison
    stored) under the default settings when there are at least two, against `baseline` (the nightly's
    configuration) or else the one `choose_baseline` picks for runs in no order of the user's, comparing `pairs`
    (`all` or `baseline`; None: the default by the number of runs)."""
    evaluations = [from_warehouse(warehouse, identifier) for identifier in evaluation_ids]
    comparison = None
    if len(evaluations) >= 2:
        comparison = compare_evaluations(evaluations, ComparisonSettings(pairs=pairs), baseline, warehouse,
                                         listed=False)
        store_comparison(warehouse, comparison, name)
    return write_report(warehouse.root / REPORTS / f"{name}.html", evaluations, comparison)
