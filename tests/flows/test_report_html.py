"""The HTML report's wording and figures, on small hand-made evaluations (fast): the opening sentences, one p-value
format, the significance table's headers, plain cutoff ticks, and outcomes told by hatching and text besides colour."""

from __future__ import annotations

import re

import polars as pl
import pytest

from judged.flows.engine.compare import ComparedEvaluation, ComparisonResult
from judged.flows.report import html as report
from judged.schemas.comparison import ComparisonSettings

MEASURES = [("nDCG", 10), ("P", 10), ("Judged", 10)]
SUMMARIES = {  # run: (value, value_min, value_max) per measure; Judged@k has no interval
    "base": [(0.40, 0.35, 0.45), (0.50, 0.40, 0.70), (0.9, None, None)],
    "better": [(0.60, 0.55, 0.65), (0.55, 0.45, 0.60), (0.8, None, None)],
}


def evaluation(name: str) -> ComparedEvaluation:
    summary = pl.DataFrame(
        [{"measure": m, "cutoff": k, "value": v, "value_min": lo, "value_max": hi, "n_scored": 3, "n_missing": 0,
          "mean_unjudged_fraction": 0.1 * k / 10} for (m, k), (v, lo, hi) in zip(MEASURES, SUMMARIES[name],
                                                                                   strict=True)],
        schema_overrides={"cutoff": pl.Int32, "value_min": pl.Float64, "value_max": pl.Float64})
    per_query = pl.DataFrame({"measure": ["nDCG"] * 3, "cutoff": [10] * 3, "query_id": ["q1", "q2", "q3"],
                              "value": [0.1, 0.5, 0.9], "value_min": [0.1, 0.4, 0.8], "value_max": [0.2, 0.5, 0.9]},
                             schema_overrides={"cutoff": pl.Int32})
    return ComparedEvaluation(name, f"e-{name}", None, "j", "set v1", per_query, summary, {})  # type: ignore[arg-type]


def comparison(evaluations: list[ComparedEvaluation]) -> ComparisonResult:
    pairs = pl.DataFrame(
        [{"run": "better", "measure": m, "cutoff": k, "n_queries": 3, "run_mean": r[0], "baseline_mean": b[0],
          "mean_difference": r[0] - b[0], "ci_low": r[0] - b[0] - 0.05, "ci_high": r[0] - b[0] + 0.05,
          "p_t": p / 2, "p_randomization": p, "p_adjusted": p, "p_tukey_hsd": None, "effect_size": 1.0,
          "wins": 2, "ties": 0, "losses": 1, "unresolved": 1}
         for (m, k), b, r, p in zip(MEASURES, SUMMARIES["base"], SUMMARIES["better"], [0.00001, 0.3, 0.2],
                                    strict=True)],
        schema_overrides={"cutoff": pl.Int32, "p_tukey_hsd": pl.Float64})
    per_query = pl.DataFrame({
        "run": ["better"] * 3, "measure": ["nDCG"] * 3, "cutoff": [10] * 3, "query_id": ["q1", "q2", "q3"],
        "difference": [0.3, -0.2, 0.0], "baseline_value_min": [0.1, 0.4, 0.5], "baseline_value_max": [0.2, 0.6, 0.5],
        "run_value_min": [0.4, 0.2, 0.5], "run_value_max": [0.5, 0.4, 0.5],
        "difference_min": [0.25, -0.35, 0.0], "difference_max": [0.35, 0.05, 0.0],
        "robustness": pl.Series(["robust_win", "unresolved", "robust_tie"],
                                dtype=pl.Enum(["robust_win", "robust_loss", "robust_tie", "unresolved"]))},
        schema_overrides={"cutoff": pl.Int32})
    return ComparisonResult("c", "base", ComparisonSettings(), tuple(evaluations), pairs, per_query, ())


def test_conclusions_name_the_best_run_the_significant_differences_and_what_the_unjudged_could_change() -> None:
    evaluations = [evaluation("base"), evaluation("better")]
    sentences = report.conclusion_sentences(evaluations, comparison(evaluations))
    assert 3 <= len(sentences) <= 5
    text = " ".join(sentences)
    assert "better on nDCG@10 (0.6000) and P@10 (0.5500); base on Judged@10 (0.9000)" in text
    assert ("1 of 3 differences from the baseline base are significant after holm correction at 0.05: better above "
            "base on nDCG@10 (+0.2000, p adjusted <0.0001)") in text
    assert "cannot change which run is best on nDCG@10 (better)" in text  # 0.55 > 0.45
    assert "could change which run is best on P@10 (better)" in text  # 0.45 < 0.70
    assert "For Judged@10 there is no interval" in text


def test_one_p_value_format() -> None:
    assert [report.p_value(p) for p in (0.5, 0.01234, 0.0001, 0.00001, None)] == \
        ["0.5000", "0.0123", "0.0001", "<0.0001", "-"]


def test_significance_table_has_both_means_and_says_run_minus_baseline() -> None:
    evaluations = [evaluation("base"), evaluation("better")]
    table = report.significance_table(comparison(evaluations))
    assert "run mean" in table and "baseline mean (base)" in table and "mean diff (run − baseline)" in table
    assert "(- base)" not in table and "&lt;0.0001" in table and "e-05" not in table


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list:
    import matplotlib

    matplotlib.use("Agg")
    drawn: list = []
    monkeypatch.setattr(report, "_svg", lambda figure: drawn.append(figure) or "<svg></svg>")
    return drawn


def test_cutoff_axis_has_plain_tick_labels(figures: list) -> None:
    evaluations = [evaluation("base"), evaluation("better")]
    for each in evaluations:
        object.__setattr__(each, "summary", pl.concat([each.summary, each.summary.with_columns(
            cutoff=pl.lit(100, pl.Int32), mean_unjudged_fraction=pl.lit(0.5))]))
    report.coverage_plot(evaluations)
    axes = figures[0].axes[0]
    figures[0].canvas.draw()
    labels = [t.get_text() for t in axes.get_xticklabels() + axes.get_xticklabels(minor=True) if t.get_text()]
    assert labels == ["10", "100"]


def test_measure_plot_tells_outcomes_by_hatching_and_text_and_names_queries(figures: list) -> None:
    evaluations = [evaluation("base"), evaluation("better")]
    report.measure_plot(evaluations, comparison(evaluations), "nDCG", 10)
    values, differences, per_query = figures[0].axes
    assert [t.get_text() for t in values.get_yticklabels()] == ["base", "better"]
    assert [t.get_text() for t in differences.get_yticklabels()] == ["better − base"]
    assert [t.get_text() for t in per_query.get_xticklabels()] == ["q1", "q3", "q2"]  # sorted by difference
    hatches = {bar.get_hatch() or "" for bar in per_query.patches[:3]}
    assert len(hatches) == 3  # win, tie, unresolved: each its own hatching
    legend = [t.get_text() for t in per_query.get_legend().get_texts()]
    assert any(t.startswith("win") for t in legend) and any(t.startswith("loss") for t in legend)
    assert set(report.ROBUSTNESS_COLOURS.values()) <= set(report.OKABE_ITO.values())
