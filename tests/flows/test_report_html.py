"""The HTML report's wording and figures, on small hand-made evaluations (fast): the opening sentences, one p-value
format, the pair table's headers, plain cutoff ticks, and outcomes told by hatching and text besides colour."""

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
        [{"baseline": "base", "run": "better", "measure": m, "cutoff": k, "n_queries": 3, "run_mean": r[0],
          "baseline_mean": b[0], "mean_difference": r[0] - b[0], "ci_low": r[0] - b[0] - 0.05,
          "ci_high": r[0] - b[0] + 0.05, "p_t": p / 2, "p_randomization": p, "p_adjusted": p, "significant": p < 0.05,
          "p_tukey_hsd": None, "effect_size": 1.0, "wins": 2, "ties": 0, "losses": 1, "unresolved": 1,
          "mean_difference_min": lo, "mean_difference_max": hi, "decided": None if lo is None else lo > 0,
          "unjudged_documents": None if lo is None else 4, "open_queries": None if lo is None else 2,
          "disputed_documents": None, "disputed_queries": None, "assessor_worlds": None,
          "assessor_worlds_agree": None}
         for (m, k), b, r, p, (lo, hi) in zip(MEASURES, SUMMARIES["base"], SUMMARIES["better"],
                                              [0.00001, 0.3, 0.2], [(0.1, 0.3), (-0.25, 0.2), (None, None)],
                                              strict=True)],
        schema_overrides={"cutoff": pl.Int32, "p_tukey_hsd": pl.Float64, "mean_difference_min": pl.Float64,
                          "mean_difference_max": pl.Float64, "decided": pl.Boolean, "unjudged_documents": pl.Int64,
                          "open_queries": pl.Int64, "disputed_documents": pl.Int64, "disputed_queries": pl.Int64,
                          "assessor_worlds": pl.Int64, "assessor_worlds_agree": pl.Int64})
    per_query = pl.DataFrame({
        "baseline": ["base"] * 3, "run": ["better"] * 3, "measure": ["nDCG"] * 3, "cutoff": [10] * 3, "query_id": ["q1", "q2", "q3"],
        "difference": [0.3, -0.2, 0.0], "baseline_value_min": [0.1, 0.4, 0.5], "baseline_value_max": [0.2, 0.6, 0.5],
        "run_value_min": [0.4, 0.2, 0.5], "run_value_max": [0.5, 0.4, 0.5],
        "difference_min": [0.25, -0.35, 0.0], "difference_max": [0.35, 0.05, 0.0],
        "robustness": pl.Series(["robust_win", "unresolved", "robust_tie"],
                                dtype=pl.Enum(["robust_win", "robust_loss", "robust_tie", "unresolved"]))},
        schema_overrides={"cutoff": pl.Int32})
    return ComparisonResult("c", "base", ComparisonSettings(), tuple(evaluations), pairs, per_query, ())


def test_conclusions_name_the_best_run_what_the_unjudged_could_change_and_each_kind_of_doubt() -> None:
    evaluations = [evaluation("base"), evaluation("better")]
    sentences = report.conclusion_sentences(evaluations, comparison(evaluations))
    assert sentences == [
        "Highest scoring run: better on nDCG@10 (0.6000) and P@10 (0.5500); base on Judged@10 (0.9000).",
        # 0.55 > 0.45 on nDCG@10; 0.45 < 0.70 on P@10
        "The unjudged documents cannot change which run is best on nDCG@10 but could change it on P@10 (no "
        "interval on Judged@10).",
        "Of the 1 pair compared on nDCG@10, 1 is decided whatever the unjudged documents are and 1 significant "
        "after holm correction; the pair table below lists every pair and measure.",
        "better > base on nDCG@10 whatever the 4 unjudged documents it reads are; significant (p holm <0.0001).",
    ]


def test_a_pair_sentence_names_the_unjudged_and_disputed_judgments_it_depends_on() -> None:
    from judged.flows.report.wording import pair_sentence

    row = {"better": "pash_r3", "worse": "p_bm25", "direction": ">", "decided": False, "unjudged_documents": 0,
           "open_queries": 4, "disputed_documents": 12, "disputed_queries": 4, "assessor_worlds": 3,
           "assessor_worlds_agree": 2, "significant": True, "p_adjusted": 0.003}
    assert pair_sentence(row, "nDCG@10", "holm") == (
        "pash_r3 vs p_bm25 on nDCG@10 is undecided: it depends on 12 disputed judgments in 4 queries (decided in 2 "
        "of 3 single-assessor worlds); significant (p holm 0.0030).")
    decided = row | {"decided": True, "unjudged_documents": 1, "assessor_worlds_agree": 3, "significant": False,
                     "p_adjusted": 0.2}
    assert pair_sentence(decided, "nDCG@10", "holm") == (
        "pash_r3 > p_bm25 on nDCG@10 whatever the 1 unjudged document and the 12 disputed judgments it reads are and "
        "whichever assessor is right; not significant (p holm 0.2000).")
    judged_only = decided | {"unjudged_documents": 0, "disputed_documents": None, "assessor_worlds": None}
    assert pair_sentence(judged_only, "nDCG@10", "holm").startswith(
        "pash_r3 > p_bm25 on nDCG@10 with every document it reads judged; not significant")
    one = judged_only | {"unjudged_documents": 1}
    assert "whatever the 1 unjudged document it reads is;" in pair_sentence(one, "nDCG@10", "holm")
    split = decided | {"assessor_worlds_agree": 1}
    assert ", though decided in 1 of 3 single-assessor worlds;" in pair_sentence(split, "nDCG@10", "holm")


def test_one_p_value_format() -> None:
    assert [report.p_value(p) for p in (0.5, 0.01234, 0.0001, 0.00001, None)] == \
        ["0.5000", "0.0123", "0.0001", "<0.0001", "-"]


def test_pair_table_reads_better_minus_worse_with_each_kind_of_doubt_in_its_column() -> None:
    evaluations = [evaluation("base"), evaluation("better")]
    table = report.pair_table_html(comparison(evaluations))
    for header in ("pair (better &gt; worse)", "over unjudged", "95% CI", "p holm", "decided", "significant"):
        assert f">{header}</th>" in table
    assert "better &gt; base" in table and "&lt;0.0001" in table and "e-05" not in table
    assert "Three kinds of doubt." in table and "count unjudged documents as non-relevant" in table
    assert "assessors agree" not in table  # one assessor: no column for them


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
    values, per_query = figures[0].axes
    assert [t.get_text() for t in values.get_yticklabels()] == ["base", "better"]
    report.pairs_plot(comparison(evaluations), "nDCG", 10)
    unjudged, sampling = figures[1].axes
    assert [t.get_text() for t in unjudged.get_yticklabels()] == ["better > base"]
    assert "range over the unjudged" in unjudged.get_title(loc="left")
    assert "bootstrap CI" in sampling.get_title(loc="left")
    assert [t.get_text() for t in per_query.get_xticklabels()] == ["q1", "q3", "q2"]  # sorted by difference
    hatches = {bar.get_hatch() or "" for bar in per_query.patches[:3]}
    assert len(hatches) == 3  # win, tie, unresolved: each its own hatching
    legend = [t.get_text() for t in per_query.get_legend().get_texts()]
    assert any(t.startswith("win") for t in legend) and any(t.startswith("loss") for t in legend)
    assert set(report.ROBUSTNESS_COLOURS.values()) <= set(report.OKABE_ITO.values())
    # The runs' colours are never an outcome's: a run's line is not read as a win or a loss.
    assert not set(report.RUN_COLOURS) & (set(report.ROBUSTNESS_COLOURS.values()) | set(report.SIGN_COLOURS.values()))
