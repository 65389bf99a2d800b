"""Every output format of `judged evaluate` (table, json, trec) with every measure of schemas.measures.MEASURES:
each measure gets its own interval line and counts in the table, its own summary entry in JSON, and its own name in
trec_eval's lines, never another measure's. On the seed, a real TREC DL run, and a case whose measures have no
interval at all (nothing relevant judged: undefined values, null intervals)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.schemas.measures import MEASURES, MeasureBase, parse_measures
from tests.conftest import REPO, SAMPLE

runner = CliRunner()


def every_measure() -> tuple[MeasureBase, ...]:
    """Each measure of MEASURES with a cutoff and, where it takes none, without; a second threshold of AP (both
    are trec_eval's `map`) and both of RBP's trec_eval forms (`rbp`, `rbp_p=0.8`)."""
    names = []
    for name, model in MEASURES.items():
        if model.cutoff_allowed:
            names.append(f"{name}@10")
        if not model.cutoff_required:
            names.append("RBP(p=0.9)" if name == "RBP" else name)
    names += ["AP(rel=2)", "RBP(p=0.8)", "Judged(convention=trec_eval)@10"]
    return parse_measures(names)


MEASURE_LIST = every_measure()
MEASURE_TEXT = ",".join(m.canonical for m in MEASURE_LIST)
BINARY = REPO.parent / "shared" / "conformance" / "trec_eval"


def no_relevant(folder: Path) -> tuple[Path, Path]:
    """Nothing judged relevant: nDCG, AP, R and R-Prec undefined for the one query, and no interval anywhere."""
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    qrels.write_text("q1 0 d1 0\nq1 0 d2 0\n")
    run.write_text("q1 Q0 d1 1 3.0 t\nq1 Q0 d3 2 2.0 t\nq1 Q0 d2 3 1.0 t\n")
    return qrels, run


# The no-interval case leaves undefined measures null (the trec_eval preset would score them 0).
OPTIONS = {"no-interval": ("--no-relevant", "null")}
CASES = {
    "seed": lambda _: (REPO / "data" / "seed" / "qrels.txt", REPO / "data" / "seed" / "run.txt"),
    "dl": lambda _: (SAMPLE / "qrels.dl20-passage.txt", SAMPLE / "runs" / "input.p_bm25.gz"),
    "no-interval": no_relevant,
}
PARAMS = [pytest.param(case, marks=pytest.mark.slow) if case == "dl" else case for case in CASES]


def evaluate(tmp_path: Path, case: str, output_format: str, *options: str) -> str:
    qrels, run = CASES[case](tmp_path)
    result = runner.invoke(app, ["evaluate", str(qrels), str(run), "--preset", "trec_eval", "--measures",
                                 MEASURE_TEXT, "--format", output_format, *OPTIONS.get(case, ()), *options])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "failed unexpectedly" not in result.stderr
    return result.stdout


@pytest.mark.parametrize("case", PARAMS)
def test_table_has_one_interval_line_per_measure(tmp_path: Path, case: str) -> None:
    text = " ".join(evaluate(tmp_path, case, "table").split())
    data = json.loads(evaluate(tmp_path, case, "json"))["evaluations"][0]
    for row in data["summary"]:
        name = row["measure"] if row["cutoff"] is None else f"{row['measure']}@{row['cutoff']}"
        if row["value"] is None:
            assert f"{name} undefined (no query scored)" in text
            continue
        # The measure's own unjudged documents: not a sum over the measures sharing its cutoff.
        unjudged = sum(q["n_unjudged_at_k"] for q in data["per_query"]
                       if (q["measure"], q["cutoff"]) == (row["measure"], row["cutoff"]) and q["value"] is not None)
        if row["value_min"] is None:
            assert f"{name} = {row['value']:.4f}" in text
            assert f"no interval computed for this measure ({unjudged} unjudged documents)" in text.split(
                f"{name} = {row['value']:.4f}", 1)[1][:120]
        else:
            assert (f"{name} = {row['value']:.4f}, [{row['value_min']:.4f}, {row['value_max']:.4f}] over "
                    f"{unjudged} unjudged documents") in text


@pytest.mark.parametrize("case", PARAMS)
def test_json_has_each_measure_once_with_a_name_of_its_own(tmp_path: Path, case: str) -> None:
    data = json.loads(evaluate(tmp_path, case, "json"))["evaluations"][0]
    keys = [(row["measure"], row["cutoff"]) for row in data["summary"]]
    assert keys == [(m.family, m.cutoff) for m in MEASURE_LIST]
    names = [row["trec_eval_measure"] for row in data["summary"] if row["trec_eval_measure"] is not None]
    assert len(names) == len(set(names))  # AP and AP(rel=2): one `map`
    for row in data["summary"]:
        assert (row["residual"] is not None) == (row["measure"].startswith("RBP") and row["value"] is not None)
        assert row["value"] is None or row["value_min"] is None or row["value_min"] <= row["value"] + 1e-12


@pytest.mark.parametrize("case", PARAMS)
def test_trec_lines_name_each_number_once(tmp_path: Path, case: str) -> None:
    lines = [line.split("\t") for line in evaluate(tmp_path, case, "trec").splitlines()]
    assert all(len(parts) == 3 for parts in lines)
    keys = [(name, query) for name, query, _ in lines]
    assert len(keys) == len(set(keys))
    summary = {name: value for name, query, value in lines if query == "all"}
    # Every measure has its `all` line, and RBP its residual's.
    assert len(summary) == 2 + len(MEASURE_LIST) + 2
    assert [name for name in summary if name.startswith("AP(rel=2)[")]
    if case == "no-interval":  # the spec is not trec_eval's (--no-relevant null): our labels only
        assert all("[" in name for name in summary if name not in ("runid", "num_q"))
    else:  # graded judgments: judged's binary RBP is not trec_eval's rbp there
        assert "map" in summary and not {"rbp", "rbp_resid", "rbp_p=0.8"} & set(summary)


def test_rbp_prints_as_trec_eval_on_binary_judgments(shared: Path) -> None:
    conformance = shared / "conformance" / "trec_eval"
    result = runner.invoke(app, ["evaluate", str(conformance / "qrels.test"), str(conformance / "results.test"),
                                 "--preset", "trec_eval", "--measures", MEASURE_TEXT, "--format", "trec"])
    assert result.exit_code == 0, result.output
    summary = {name: float(value) for name, query, value in (line.split("\t") for line in result.stdout.splitlines())
               if query == "all" and name != "runid"}
    # trec_eval 10 (out.test.a): rbp 0.3234, rbp_resid 0.0204 over the same three queries.
    assert round(summary["rbp"], 4) == 0.3234 and round(summary["rbp_resid"], 4) == 0.0204
    assert "rbp_p=0.8" in summary and "RBP(p=0.8)[trec_eval:gain=linear]:residual" in summary


@pytest.mark.slow
def test_zero_total_weight_is_null_with_a_warning_in_every_format(tmp_path: Path) -> None:
    # The seed's one scored query weighs 0: the weighted mean is 0 / 0, undefined, never NaN.
    weights = tmp_path / "weights.txt"
    weights.write_text("q1 0\n")
    qrels, run = REPO / "data" / "seed" / "qrels.txt", REPO / "data" / "seed" / "run.txt"
    outputs = {}
    for output_format in ("table", "json", "trec"):
        result = runner.invoke(app, ["evaluate", str(qrels), str(run), "--measures", "nDCG@3,AP,RBP(p=0.8)",
                                     "--query-weights", str(weights), "--format", output_format])
        assert result.exit_code == 0, result.output
        outputs[output_format] = result.stdout
    warning = ("the declared query weights of the scored queries sum to 0, so the weighted mean is undefined (null): "
               "nDCG@3, AP, RBP(p=0.8)")
    data = json.loads(outputs["json"])["evaluations"][0]
    assert warning in data["warnings"]
    assert [(row["value"], row["value_min"], row["residual"]) for row in data["summary"]] == [(None, None, None)] * 3
    assert "nan" not in outputs["table"].lower() and "nan" not in outputs["trec"].lower()
    assert warning in " ".join(outputs["table"].split())
    assert "nDCG@3 undefined (the scored queries' weights sum to 0)" in outputs["table"]
    assert all(line.endswith("\tnull") for line in outputs["trec"].splitlines() if "\tall\t" in line
               and not line.startswith(("runid", "num_q")))


@pytest.mark.parametrize("weighted", [False, True], ids=["mean", "weighted-mean"])
def test_mean_residual_is_over_the_scored_queries_in_every_format(tmp_path: Path, weighted: bool) -> None:
    """RBP's mean residual takes the queries of its mean value: q2 and q3, which the run lists but nobody judged
    (residual 1: all of them unknown), are never scored and are left out of it, as trec_eval leaves them out of
    `rbp_resid ... all`. Before, the mean counted them: (0.28125 + 1 + 1) / 3."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    # q1: d1 relevant, d3 judged 0; d2 and d6 unjudged -> residual 0.5 * (0.5 + 0.03125) + 0.5^6 = 0.28125.
    qrels.write_text("q1 0 d1 1\nq1 0 d3 0\nq1 0 d4 0\nq1 0 d5 0\n")
    run.write_text("".join(f"q1 Q0 d{i} {i} {10 - i} t\n" for i in range(1, 7))
                   + "q2 Q0 x1 1 2.0 t\nq2 Q0 x2 2 1.0 t\nq3 Q0 y1 1 1.0 t\n")
    options = ["--measures", "RBP(p=0.5)", "--preset", "trec_eval"]
    if weighted:  # q1 weighs 3, the unjudged queries 5: the weighted mean of the scored queries is q1's alone
        (tmp_path / "weights.txt").write_text("q1 3\nq2 5\nq3 5\n")
        options += ["--query-weights", str(tmp_path / "weights.txt")]
    outputs = {}
    for output_format in ("table", "json", "trec"):
        result = runner.invoke(app, ["evaluate", str(qrels), str(run), *options, "--format", output_format])
        assert result.exit_code == 0, result.output
        outputs[output_format] = result.stdout
    data = json.loads(outputs["json"])["evaluations"][0]
    residuals = {row["query_id"]: row["residual"] for row in data["per_query"]}
    assert residuals["q1"] == pytest.approx(0.28125, abs=1e-12) and residuals["q2"] == residuals["q3"] == 1.0
    (summary,) = data["summary"]
    assert summary["n_scored"] == 1 and summary["residual"] == pytest.approx(0.28125, abs=1e-12)
    trec_all = {name: value for name, query, value in (line.split("\t") for line in outputs["trec"].splitlines())
                if query == "all"}
    (residual_all,) = [value for name, value in trec_all.items() if name.endswith(":residual")]
    assert float(residual_all) == pytest.approx(0.28125, abs=1e-12)
    assert "mean residual 0.2812" in " ".join(outputs["table"].split())


def test_one_trec_output_holds_one_trec_eval_invocation(tmp_path: Path) -> None:
    """`AP(rel=2)` is trec_eval's `map` at -l 2 and `P@10` its `P_10` at -l 1: no trec_eval run prints both, so the
    measures of the first one's invocation get trec_eval's names (nDCG, whose number is the same under any -l,
    among them) and P@10 keeps its label, in the lines, the table and JSON alike."""
    qrels, run = REPO / "data" / "seed" / "qrels.txt", REPO / "data" / "seed" / "run.txt"
    outputs = {}
    for output_format in ("trec", "json", "table"):
        result = runner.invoke(app, ["evaluate", str(qrels), str(run), "--preset", "trec_eval", "--measures",
                                     "AP(rel=2),P@10,nDCG@3", "--format", output_format])
        assert result.exit_code == 0, result.output
        outputs[output_format] = result.stdout
    names = [line.split("\t")[0] for line in outputs["trec"].splitlines() if "\tall\t" in line]
    assert names == ["runid", "num_q", "map", "P@10[trec_eval:gain=linear]", "ndcg_cut_3"]
    data = json.loads(outputs["json"])["evaluations"][0]
    assert [row["trec_eval_measure"] for row in data["summary"]] == ["map", None, "ndcg_cut_3"]
    table = " ".join(outputs["table"].split())
    assert "map " in table and "P@10 " in table and "P_10" not in table
