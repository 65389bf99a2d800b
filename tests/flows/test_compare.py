"""`judged compare` without a warehouse (flows/engine/compare.py, flows/cli/compare.py) on the bundled TREC DL 2020 sample:
every field of the JSON output, the numbers against independent computations (scipy on the per-query values that
`judged evaluate` prints, NIST's published p_bm25 NDCG@10, ranx's t-test), the table, seeds and refusals."""

from __future__ import annotations

import json
from functools import cache

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner, Result

from judged.flows.cli.app import app
from judged.flows.engine.compare import (
    ComparedEvaluation,
    IncomparableError,
    compare,
    compare_evaluations,
    from_result,
    store_comparison,
)
from judged.flows.store.warehouse import Store
from judged.schemas.comparison import ComparisonSettings
from judged.schemas.spec import build_spec
from judged.schemas.tables import COMPARISON_PER_QUERY_TABLE, COMPARISON_RECORDS_TABLE, COMPARISONS_TABLE
from judged.transforms.compare import holm
from tests.conftest import SAMPLE

QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUNS = [SAMPLE / "runs" / f"input.{name}.gz" for name in ("p_bm25", "pash_r3", "DoRA_Large")]
FIELDS = {"baseline", "run", "measure", "cutoff", "n_queries", "mean_difference", "ci_low", "ci_high", "p_t",
          "p_randomization", "p_adjusted", "correction", "effect_size", "wins", "ties", "losses", "unresolved"}
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}


def judged(*args: object) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args], env=ENV)


@cache
def compared_json() -> dict:
    result = judged("compare", QRELS, *RUNS, "--preset", "trec_eval", "--cutoffs", "10,100", "--format", "json",
                    "--permutations", "2000", "--resamples", "2000")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@cache
def per_query_values() -> dict[str, dict[tuple[str, int], float]]:
    """Each run's per-query NDCG as `judged evaluate --format json` prints it (scored queries)."""
    result = judged("evaluate", QRELS, *RUNS, "--preset", "trec_eval", "--cutoffs", "10,100", "--format", "json")
    assert result.exit_code == 0, result.output
    return {
        evaluation["run"]: {(row["query_id"], row["cutoff"]): row["value"] for row in evaluation["per_query"]
                            if row["status"] == "scored"}
        for evaluation in json.loads(result.stdout)["evaluations"]
    }


def test_json_has_one_object_per_pair_measure_and_cutoff() -> None:
    output = compared_json()
    rows = output["comparisons"]
    # Three runs: every pair (the default up to 12 runs), the baseline's pairs first, each pair's first run its
    # reference.
    assert [(r["baseline"], r["run"], r["cutoff"]) for r in rows] == [
        ("p_bm25", "pash_r3", 10), ("p_bm25", "pash_r3", 100), ("p_bm25", "DoRA_Large", 10),
        ("p_bm25", "DoRA_Large", 100), ("pash_r3", "DoRA_Large", 10), ("pash_r3", "DoRA_Large", 100),
    ]
    assert "pairs: all 3 pairs of the 3 runs" in " ".join(output["notes"])
    for row in rows:
        assert FIELDS <= set(row)
        assert row["correction"] == "holm" and row["effect_size_kind"] == "d_z"
        assert row["n_queries"] == 54 and row["wins"] + row["ties"] + row["losses"] == 54
        assert row["ci_low"] < row["mean_difference"] < row["ci_high"]
        assert row["unresolved"] is not None  # the per-query intervals (value_min/value_max) say which signs are open
        assert row["p_tukey_hsd"] is not None  # three runs
    assert len(output["per_query"]) == 3 * 2 * 54


def test_pair_table_reads_each_pair_in_its_direction() -> None:
    output = compared_json()
    table = output["pair_table"]
    assert len(table) == len(output["comparisons"]) == 6
    assert all(row["mean_difference"] >= 0 and row["direction"] == ">" for row in table)
    assert [row["cutoff"] for row in table] == [10, 10, 10, 100, 100, 100]
    # Per cutoff, decided pairs come first; a pair read the other way round has its interval mirrored.
    for cutoff in (10, 100):
        decided = [row["decided"] for row in table if row["cutoff"] == cutoff]
        assert decided == sorted(decided, reverse=True)
    computed = {(r["baseline"], r["run"], r["cutoff"]): r for r in output["comparisons"]}
    for row in table:
        same = computed.get((row["worse"], row["better"], row["cutoff"]))
        mirrored = computed.get((row["better"], row["worse"], row["cutoff"]))
        if same is not None:
            assert row["ci_low"] == same["ci_low"] and row["mean_difference_min"] == same["mean_difference_min"]
        else:
            assert row["ci_low"] == -mirrored["ci_high"]
            assert row["mean_difference_min"] == -mirrored["mean_difference_max"]


def test_pairs_option_selects_the_pairs_and_refuses_what_is_no_pair() -> None:
    result = judged("compare", QRELS, *RUNS[:3], "--preset", "trec_eval", "--cutoffs", "10", "--format", "json",
                    "--permutations", "200", "--resamples", "200", "--pairs", "DoRA_Large:p_bm25")
    assert result.exit_code == 0, result.output
    output = json.loads(result.stdout)
    assert [(r["baseline"], r["run"]) for r in output["comparisons"]] == [("DoRA_Large", "p_bm25")]
    assert "pairs: the pair listed" in output["notes"] and output["settings"]["pairs"] == [["DoRA_Large", "p_bm25"]]
    unknown = judged("compare", QRELS, *RUNS[:2], "--pairs", "p_bm25:bm99")
    assert unknown.exit_code != 0
    assert "--pairs: bm99 is none of the runs compared: p_bm25, pash_r3" in unknown.output
    malformed = judged("compare", QRELS, *RUNS[:2], "--pairs", "p_bm25")
    assert malformed.exit_code != 0 and "--pairs: 'p_bm25': expected all, baseline or REFERENCE:RUN" in malformed.output
    assert len(malformed.output.strip().splitlines()) == 1


def test_numbers_against_independent_computations() -> None:
    rows = compared_json()["comparisons"]
    values = per_query_values()
    for row in rows:
        base, run = values[row["baseline"]], values[row["run"]]
        queries = sorted(q for q in base if q[1] == row["cutoff"] and q in run)
        a = np.array([base[q] for q in queries])
        b = np.array([run[q] for q in queries])
        assert row["n_queries"] == len(queries)
        assert row["mean_difference"] == pytest.approx(float((b - a).mean()), abs=1e-12)
        assert row["p_t"] == pytest.approx(float(stats.ttest_rel(b, a).pvalue), abs=1e-12)
        assert row["effect_size"] == pytest.approx(float((b - a).mean() / (b - a).std(ddof=1)), abs=1e-12)
    # NIST's published mean NDCG@10 of p_bm25 under trec_eval -c: 0.4796 (README); every judged query is scored
    assert rows[0]["baseline_mean"] == pytest.approx(0.4796, abs=5e-5)
    assert [r["p_adjusted"] for r in rows] == pytest.approx(list(holm(np.array([r["p_randomization"] for r in rows]))))


def test_ranx_student_t_agrees() -> None:
    ranx = pytest.importorskip("ranx", reason="ranx is in the `bench` extra, not installed here")
    from ranx.statistical_tests import paired_student_t_test

    row = compared_json()["comparisons"][0]  # pash_r3 against p_bm25 at 10
    values = per_query_values()
    queries = sorted(q for q in values["p_bm25"] if q[1] == 10 and q in values["pash_r3"])
    control = np.array([values["p_bm25"][q] for q in queries])
    treatment = np.array([values["pash_r3"][q] for q in queries])
    p_value, _ = paired_student_t_test(control, treatment, 0.05)
    assert ranx is not None and row["p_t"] == pytest.approx(float(p_value), abs=1e-9)


@pytest.mark.slow  # a comparison of its own; the fast loop reads the JSON of `compared_json`
def test_table_names_the_corrected_p_values_intervals_and_effect_sizes() -> None:
    result = judged("compare", QRELS, *RUNS, "--preset", "trec_eval", "--cutoffs", "10", "--permutations", "500",
                    "--resamples", "500")
    assert result.exit_code == 0, result.output
    for text in ("nDCG@10: 3 pairs, diff = better - worse", "95% CI", "p holm", "p HSD", "d_z", "decided",
                 "signif.", "Three kinds of doubt.", "count unjudged documents as non-relevant"):
        assert text in result.stdout
    assert any(line.split()[:2] == ["pash_r3", "p_bm25"] for line in result.stdout.splitlines())


@pytest.mark.slow  # three comparisons of its own
def test_same_seed_same_numbers_and_settings_in_the_id() -> None:
    spec = build_spec("trec_eval", cutoffs=(10,))
    settings = ComparisonSettings(permutations=500, bootstrap_resamples=500, seed=3)
    first = compare(QRELS, RUNS[:2], spec, settings)
    again = compare(QRELS, RUNS[:2], spec, settings)
    assert first.comparison_id == again.comparison_id and first.pairs.equals(again.pairs)
    other = compare(QRELS, RUNS[:2], spec, settings.model_copy(update={"seed": 4}))
    assert other.comparison_id != first.comparison_id
    assert other.pairs["p_t"].equals(first.pairs["p_t"])  # the t-test draws nothing


@pytest.mark.slow  # two comparisons of its own
def test_judged_query_set_scores_missing_queries_zero(tmp_path) -> None:
    """A run that lost one judged query: `common` leaves it out, `judged` scores it 0 there."""
    text = (QRELS.parent / "runs" / "input.p_bm25.gz")
    import gzip

    lines = gzip.decompress(text.read_bytes()).decode().splitlines()
    dropped = QRELS.read_text().split()[0]  # a judged query
    partial = tmp_path / "partial.txt"
    partial.write_text("\n".join(line for line in lines if line.split()[0] != dropped) + "\n")
    spec = build_spec("judged", cutoffs=(10,))
    settings = ComparisonSettings(permutations=200, bootstrap_resamples=200)
    common = compare(QRELS, [RUNS[0], partial], spec, settings)
    judged_set = compare(QRELS, [RUNS[0], partial], spec, settings.model_copy(update={"query_set": "judged"}))
    assert common.pairs["n_queries"].item() == 53 and judged_set.pairs["n_queries"].item() == 54
    row = judged_set.per_query.filter(judged_set.per_query["query_id"] == dropped).row(0, named=True)
    assert row["run_value"] == 0.0 and row["difference"] == -row["baseline_value"]


def test_refuses_different_specs_naming_both() -> None:
    from judged.flows.engine.evaluate import evaluate
    from judged.flows.store.readers import load_table

    judgments = load_table(QRELS, "judgments")
    run = load_table(RUNS[0], "run")
    a = evaluate(run, judgments, build_spec("trec_eval", cutoffs=(10,)))
    b = evaluate(run, judgments, build_spec("judged", cutoffs=(10,)))
    label = "trec-dl-2020-passage version nist-final"
    with pytest.raises(IncomparableError, match=r"different specs.*trec_eval.*judged"):
        compare_evaluations([from_result(a, "j", label, {}), from_result(b, "j", label, {})], ComparisonSettings())
    with pytest.raises(IncomparableError, match="version nist-final.*version nist-2"):
        compare_evaluations([from_result(a, "j1", label, {}), from_result(a, "j2", label.replace("final", "2"), {})],
                            ComparisonSettings())



def per_query(values: dict[tuple[int | None, str], float]) -> pl.DataFrame:
    """An evaluation's per-query rows as a comparison reads them (no intervals): the value of each (cutoff, query)."""
    return pl.DataFrame(
        [{"measure": "nDCG", "cutoff": cutoff, "query_id": query, "status": "scored", "value": value}
         for (cutoff, query), value in values.items()],
        schema={"measure": pl.String, "cutoff": pl.Int32, "query_id": pl.String, "status": pl.String,
                "value": pl.Float64},
    )


def test_stored_comparison_tables_are_null_exactly_where_declared(tmp_path: Path) -> None:
    """The comparison tables' nullability is declared, not guessed: a comparison with a whole-list cutoff (a null
    key), a cutoff with no query in both runs (every statistic undefined), two runs (no Tukey HSD) and no intervals
    stores nulls in exactly the columns declared nullable, and the stored files pass their contracts."""
    spec = build_spec("trec_eval", cutoffs=(None, 10))
    baseline = per_query({(None, "q1"): 0.5, (None, "q2"): 0.7, (None, "q3"): 0.2, (10, "q1"): 0.4})
    run = per_query({(None, "q1"): 0.6, (None, "q2"): 0.6, (None, "q3"): 0.5, (10, "q2"): 0.3})
    evaluations = [
        ComparedEvaluation(name, f"e-{name}", spec, "j", "toy version 1", frame, pl.DataFrame(), {})
        for name, frame in (("base", baseline), ("other", run))
    ]
    result = compare_evaluations(evaluations, ComparisonSettings(permutations=100, bootstrap_resamples=100))
    assert store_comparison(Store(tmp_path), result)
    for table, folder in ((COMPARISON_RECORDS_TABLE, "comparison_records"), (COMPARISONS_TABLE, "comparisons"),
                          (COMPARISON_PER_QUERY_TABLE, "comparison_per_query")):
        (path,) = [p for p in (tmp_path / folder).rglob("*.parquet") if result.comparison_id in (p.stem, p.parent.name)]
        stored = table.validate(pl.read_parquet(path))
        # A query's values are null only where it has no relevant judgment (next test), which needs intervals.
        only_when_undefined = {"baseline_value", "run_value", "difference"}
        expected = tuple(c for c in table.nullable if c not in only_when_undefined)
        assert tuple(c for c in stored.columns if stored[c].null_count()) == expected, table.name


def test_a_query_without_relevant_judgments_joins_the_pair_in_the_worlds_that_give_it_a_value(tmp_path: Path) -> None:
    """q2 is judged but has no relevant document: a puts unjudged u at rank 1, b puts it at 2 behind judged-0 x. Its
    nDCG@2 is undefined now (no_relevant null), but defined as soon as u is relevant, and then b - a is
    1/log2(3) - 1 = -0.369 whatever u's grade. The pair's mean interval over every world lets q2 join: without it
    the pair would be decided (q1: b wins by a fixed margin), with it the interval reaches 0."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 r 1\nq1 0 s 0\nq2 0 x 0\n")
    run_a, run_b = tmp_path / "a.txt", tmp_path / "b.txt"
    run_a.write_text("q1 Q0 s 1 2 a\nq1 Q0 r 2 1 a\nq2 Q0 u 1 2 a\nq2 Q0 x 2 1 a\n")
    run_b.write_text("q1 Q0 r 1 2 b\nq1 Q0 s 2 1 b\nq2 Q0 x 1 2 b\nq2 Q0 u 2 1 b\n")
    result = compare(qrels, [run_a, run_b], build_spec("judged", cutoffs=(2,)),
                     ComparisonSettings(permutations=100, bootstrap_resamples=100))
    rows = {r["query_id"]: r for r in result.per_query.iter_rows(named=True)}
    # q1: a = (1/log2(3)) / 1, b = 1: b - a = 1 - 0.631 = 0.369, exact (nothing unjudged).
    assert rows["q1"]["difference"] == pytest.approx(1 - 1 / np.log2(3))
    # q2: undefined now; with u relevant, a = 1, b = (1/log2(3)) / 1: b - a = -0.369 in that world.
    assert rows["q2"]["difference"] is None and rows["q2"]["baseline_value"] is None
    assert rows["q2"]["difference_min"] == pytest.approx(1 / np.log2(3) - 1)
    assert rows["q2"]["difference_max"] == pytest.approx(1 / np.log2(3) - 1)
    pair = result.pairs.row(0, named=True)
    assert pair["n_queries"] == 1 and pair["mean_difference"] == pytest.approx(1 - 1 / np.log2(3))
    # Over every world the mean is q1's 0.369 alone, or (0.369 - 0.369) / 2 = 0 with q2 joining: not decided.
    assert pair["mean_difference_min"] == pytest.approx(0.0, abs=1e-12)
    assert pair["mean_difference_max"] == pytest.approx(1 - 1 / np.log2(3))
    assert pair["decided"] is False
    assert store_comparison(Store(tmp_path / "w"), result)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--correction", "bonferroni"], 2, "--correction"),
        (["--queries", "some"], 2, "--queries"),
        (["--permutations", "5"], 2, "--permutations"),
        (["--rebase"], 2, "--rebase re-evaluates stored evaluations"),
        (["--baseline", "nope"], 1, "--baseline 'nope' is none of the runs"),
    ],
)
def test_bad_options_are_one_line_errors(args: list[str], code: int, message: str) -> None:
    result = judged("compare", QRELS, *RUNS[:2], "--cutoffs", "10", "--permutations", "200", "--resamples", "200",
                    *args)
    assert result.exit_code == code, result.output
    assert result.stderr.startswith("judged: error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not result.stdout


def test_one_evaluation_twice_is_refused_in_one_line() -> None:
    """The same run given twice (or, after --rebase, two evaluations of one run that become one) is refused with a
    sentence, not a traceback about names."""
    spec = build_spec("trec_eval", cutoffs=(10,))
    frame = per_query({(10, "q1"): 0.5, (10, "q2"): 0.7})
    same = [ComparedEvaluation("p_bm25", "e-1", spec, "j", "toy version 1", frame, pl.DataFrame(), {})] * 2
    with pytest.raises(IncomparableError, match="p_bm25: one evaluation .* is given twice"):
        compare_evaluations(same, ComparisonSettings(permutations=100, bootstrap_resamples=100))
    twice = judged("compare", QRELS, SAMPLE / "runs" / "input.p_bm25.gz", SAMPLE / "runs" / "input.p_bm25.gz")
    assert twice.exit_code == 2 and "input.p_bm25.gz is given twice" in twice.stderr
    assert "Traceback" not in twice.output


@pytest.mark.slow  # a comparison and a report of its own
def test_report_takes_pairs_and_says_which(tmp_path) -> None:
    out = tmp_path / "report.html"
    result = judged("report", QRELS, *RUNS, "--preset", "trec_eval", "--cutoffs", "10", "--permutations", "200",
                    "--resamples", "200", "--pairs", "baseline", "--out", out)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "The baseline against each other run, 2 of the 3 pairs." in text
    table = text.split("id='pair-table'>", 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 1 + 2 and "pash_r3 &gt; p_bm25" in table and "pash_r3 &gt; DoRA_Large" not in table


def test_a_family_too_large_for_its_permutations_is_said_not_left_as_no_significance() -> None:
    """Three runs, two cutoffs: six tests. With 100 permutations the smallest p is 1/101, which Holm multiplies by
    6: 0.059, so no pair can be significant whatever the runs are; the notes say so and how many permutations let
    one be (6 / 0.05 = 120). With 2,000 (6/2001 = 0.003) nothing is said."""
    few = judged("compare", QRELS, *RUNS, "--preset", "trec_eval", "--cutoffs", "10,100", "--format", "json",
                 "--permutations", "100", "--resamples", "100")
    assert few.exit_code == 0, few.output
    document = json.loads(few.stdout)
    assert all(not row["significant"] for row in document["comparisons"])
    (note,) = [n for n in document["notes"] if n.startswith("significance:")]
    assert "family of 6" in note and "1/101" in note and "--permutations 120 or more" in note
    assert not [n for n in compared_json()["notes"] if n.startswith("significance:")]
