"""The Python API (flows.api, exposed as `judged.evaluate`): every input form gives the seed's hand-worked values,
the same content gives the same evaluation id whatever its form, inputs are never modified, several runs come back
by name, bad input and bad options raise one-line errors, and the API gives the CLI's numbers and ids."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import judged
from judged.flows.cli.app import app
from tests.conftest import REPO, SAMPLE

SEED = REPO / "data" / "seed"
# The seed (SPEC section 2): returned order d1, d2, d3 graded 3, 0, 2, linear gain.
# NDCG@1 = 3/3 = 1; NDCG@2 = 3 / (3 + 2/log2(3)); NDCG@3 = (3 + 2/log2(4)) / (3 + 2/log2(3)).
IDCG_2 = 3 + 2 / math.log2(3)
SEED_NDCG = [1.0, 3 / IDCG_2, 4 / IDCG_2]
SEED_QRELS = {"q1": {"d1": 3, "d2": 0, "d3": 2}}
SEED_RUN = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}


def seed_frames() -> dict[str, tuple[object, object]]:
    qrels = pl.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "relevance": [3, 0, 2]})
    run = pl.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "score": [3.0, 2.0, 1.0]})
    return {
        "polars": (qrels, run),
        "lazy": (qrels.lazy(), run.lazy()),
        "pandas": (qrels.to_pandas(), run.to_pandas()),
        "arrow": (qrels.to_arrow(), run.to_arrow()),
        "dict": (SEED_QRELS, SEED_RUN),
    }


@pytest.mark.parametrize("form", ["path", "polars", "lazy", "pandas", "arrow", "dict"])
def test_every_input_form_gives_the_seed_values(form: str) -> None:
    qrels, run = (SEED / "qrels.txt", SEED / "run.txt") if form == "path" else seed_frames()[form]
    ev = judged.evaluate(qrels, run, measures=["nDCG@1", "nDCG@2", "nDCG@3"], preset="trec_eval")
    assert isinstance(ev, judged.Evaluation)
    assert ev.per_query["value"].to_list() == pytest.approx(SEED_NDCG, abs=1e-15)
    assert ev.summary["value"].to_list() == pytest.approx(SEED_NDCG, abs=1e-15)
    assert ev.per_query["status"].to_list() == ["scored"] * 3
    # nDCG at some cutoffs is the cutoffs form, however it was asked for: one method, one label.
    assert ev.label == "nDCG@1,2,3[trec_eval:gain=linear]"
    assert ev.provenance.evaluation_id == ev.evaluation_id
    assert ev.provenance.spec_hash == ev.spec.spec_hash
    assert judged.EvaluationSpec.from_canonical_json(json.dumps(ev.provenance.spec)) == ev.spec
    assert ev.provenance.run.n_rows == 3 and ev.provenance.judgments.n_rows == 3
    assert ev.summary.to_pandas()["value"].tolist() == pytest.approx(SEED_NDCG, abs=1e-15)


def test_the_same_content_in_any_form_has_the_same_id() -> None:
    ids = {form: judged.evaluate(q, r, cutoffs=(3,)).evaluation_id for form, (q, r) in seed_frames().items()}
    assert len(set(ids.values())) == 1, ids
    other = judged.evaluate(SEED_QRELS, {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.5}}, cutoffs=(3,))
    assert other.evaluation_id not in ids.values()


def test_inputs_are_never_modified() -> None:
    qrels_pd = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "relevance": [3, 0, 2]})
    run_pd = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d3", "d1", "d2"], "score": [1.0, 3.0, 2.0]})
    qrels_dict, run_dict = copy.deepcopy(SEED_QRELS), {"q1": {"d3": 1.0, "d1": 3.0, "d2": 2.0}}
    run_pl = pl.from_pandas(run_pd)
    run_arrow = run_pl.to_arrow()
    before = (qrels_pd.copy(deep=True), run_pd.copy(deep=True), copy.deepcopy(qrels_dict), copy.deepcopy(run_dict),
              run_pl.clone(), run_arrow)
    judged.evaluate(qrels_pd, {"a": run_pd, "b": run_dict, "c": run_pl, "d": run_arrow}, cutoffs=(1, 3))
    judged.evaluate(qrels_dict, run_dict, cutoffs=(1, 3), preset="sklearn")
    pd.testing.assert_frame_equal(qrels_pd, before[0])
    pd.testing.assert_frame_equal(run_pd, before[1])
    assert list(run_pd.index) == [0, 1, 2]  # not re-sorted in place
    assert qrels_dict == before[2] and list(run_dict["q1"]) == ["d3", "d1", "d2"] and run_dict == before[3]
    assert run_pl.equals(before[4]) and run_arrow.equals(before[5])


def test_several_runs_come_back_by_name_in_order() -> None:
    runs = {"good": SEED_RUN, "reversed": {"q1": {"d1": 1.0, "d2": 2.0, "d3": 3.0}}, "file": SEED / "run.txt"}
    results = judged.evaluate(SEED_QRELS, runs, cutoffs=(1,))
    assert isinstance(results, dict) and list(results) == ["good", "reversed", "file"]
    # reversed: d3 (grade 2) first, ideal 3 -> NDCG@1 = 2/3
    assert [results[name].summary["value"][0] for name in results] == pytest.approx([1.0, 2 / 3, 1.0])
    assert results["good"].run_name == "good" and results["file"].run_name == "seed"  # the file's own tag


def test_unjudged_documents_stay_null_and_are_counted() -> None:
    ev = judged.evaluate(SEED_QRELS, {"q1": {"x": 9.0, "d1": 3.0}, "q2": {"d1": 1.0}}, cutoffs=(2,))
    rows = {r["query_id"]: r for r in ev.per_query.iter_rows(named=True)}
    assert rows["q1"]["n_unjudged_at_k"] == 1 and rows["q1"]["unjudged_fraction_at_k"] == 0.5
    assert rows["q2"]["status"] == "no_judgments" and rows["q2"]["value"] is None
    # q1 under the judged preset: DCG@2 = 0 + 3/log2(3), IDCG@2 = 3 + 2/log2(3)
    assert rows["q1"]["value"] == pytest.approx((3 / math.log2(3)) / IDCG_2, abs=1e-15)


@pytest.mark.parametrize(
    ("qrels", "run", "message"),
    [
        ({"q1": {"d1": 1.5}}, SEED_RUN, "qrels: grade 1.5 is not an integer"),
        ({1: {"d1": 1}}, SEED_RUN, "qrels: query id 1 is a int: ids are strings"),
        (SEED_QRELS, {"q1": {"d1": "high"}}, "run: score 'high' is not a number"),
        (SEED_QRELS, {"q1": ["d1"]}, "run 'q1': cannot read a list"),  # not a run: runs by name, q1 a bad one
        (SEED_QRELS, pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [float("nan")]}),
         "run, row 1: score is NaN"),
        (SEED_QRELS, pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"]}), "run: missing column(s) ['score']"),
        (SEED_QRELS, {"a": SEED_RUN, "b": {"q1": {"d1": float("nan")}}}, "run 'b', row 1: score is NaN"),
        (SEED_QRELS, [("q1", "d1", 1.0)], "run: cannot read a list"),
        (SEED_QRELS, {}, "run: an empty dict"),
        (REPO / "no-such-file.txt", SEED_RUN, "no-such-file.txt: no such file"),
        # refused as the CLI refuses them (tests/reliability/test_api_inputs.py has the whole catalogue)
        ({}, SEED_RUN, "qrels: has no rows: an empty judgment set is refused unless allow_empty=True is given"),
        ({"q1": {"d1": None}}, SEED_RUN, "qrels: relevance None is not a number"),
        (pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [None]},
                      schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int32}),
         SEED_RUN, "qrels, row 1: grade is null"),
    ],
)
def test_bad_input_raises_one_line_input_error(qrels: object, run: object, message: str) -> None:
    with pytest.raises(judged.InputError) as error:
        judged.evaluate(qrels, run, cutoffs=(1,))
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"measures": ["nDCG@ten"]}, "cutoff 'ten' is not a positive integer"),
        ({"measures": ["AP", "AP"]}, "AP is given twice"),
        ({"measures": ["ERR@10"]}, "unknown measure 'ERR'"),
        ({"preset": "galago"}, "galago"),
        ({"ties": "random"}, "ties"),
        ({"spec": judged.EvaluationSpec(), "preset": "trec_eval"}, "either spec= or a preset"),
        ({"measures": 10}, "measures must be a measure's name"),
        ({"preset": ["trec_eval"]}, "preset must be a preset's name"),
        ({"spec": "trec_eval"}, "spec must be an EvaluationSpec"),
    ],
)
def test_bad_options_raise_spec_error(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(judged.SpecError) as error:
        judged.evaluate(SEED_QRELS, SEED_RUN, **arguments)  # type: ignore[arg-type]
    assert message in str(error.value)


def test_measures_other_than_ndcg() -> None:
    ev = judged.evaluate(SEED_QRELS, SEED_RUN, measures=["nDCG@3", "AP", "RR@10", "P@2", "R@2"], preset="trec_eval")
    values = {(row["measure"], row["cutoff"]): row["value"] for row in ev.summary.iter_rows(named=True)}
    # Relevant (grade >= 1): d1 at rank 1, d3 at rank 3, R = 2. AP = (1/1 + 2/3) / 2; RR = 1/1; P@2 = 1/2; R@2 = 1/2.
    assert values == pytest.approx(
        {("nDCG", 3): 4 / IDCG_2, ("AP", None): 5 / 6, ("RR", 10): 1.0, ("P", 2): 0.5, ("R", 2): 0.5}, abs=1e-15
    )
    assert ev.label == "nDCG@3,AP,RR@10,P@2,R@2[trec_eval:gain=linear]"


def test_a_ready_spec_is_used_as_given() -> None:
    spec = judged.EvaluationSpec(cutoffs=(2,), gain="exponential")
    ev = judged.evaluate(SEED_QRELS, SEED_RUN, spec=spec)
    assert ev.spec == spec
    # exponential gain: DCG@2 = 7, IDCG@2 = 7 + 3/log2(3)
    assert ev.summary["value"][0] == pytest.approx(7 / (7 + 3 / math.log2(3)), abs=1e-15)


@pytest.mark.slow  # three evaluations of a DL 2020 run, one from pandas
def test_api_and_cli_give_identical_numbers_and_ids() -> None:
    """p_bm25 on NIST's 2020 passage judgments, trec_eval preset: NIST published ndcg_cut_10 = 0.4796."""
    qrels, run = SAMPLE / "qrels.dl20-passage.txt", SAMPLE / "runs" / "input.p_bm25.gz"
    cli = CliRunner().invoke(app, ["evaluate", str(qrels), str(run), "--preset", "trec_eval", "--cutoffs",
                                   "10,100,all", "--format", "json"])
    assert cli.exit_code == 0, cli.output
    (printed,) = json.loads(cli.stdout)["evaluations"]
    ev = judged.evaluate(qrels, run, preset="trec_eval", cutoffs=(10, 100, None))
    assert ev.evaluation_id == printed["evaluation_id"]
    assert ev.summary["value"].to_list() == [row["value"] for row in printed["summary"]]
    assert ev.per_query["value"].to_list() == [row["value"] for row in printed["per_query"]]
    assert round(ev.summary["value"][0], 4) == 0.4796

    # The same rows as frames (read here with Polars): the same numbers.
    names = {"separator": "\t", "has_header": False, "schema_overrides": {"column_0": pl.String, "column_2": pl.String}}
    run_frame = pl.read_csv(run, **names).select(query_id="column_0", doc_id="column_2", score="column_4")
    names["separator"] = " "
    qrels_frame = pl.read_csv(qrels, **names).select(query_id="column_0", doc_id="column_2", relevance="column_3")
    from_frames = judged.evaluate(qrels_frame, run_frame.to_pandas(), preset="trec_eval", cutoffs=(10, 100, None))
    assert from_frames.per_query["value"].to_list() == ev.per_query["value"].to_list()
    assert from_frames.summary["value"].to_list() == ev.summary["value"].to_list()


def test_importing_judged_exposes_the_api_lazily() -> None:
    assert {"evaluate", "Warehouse", "Evaluation", "InputError", "SpecError"} <= set(dir(judged))
    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        judged.evaluat  # noqa: B018


def test_an_evaluation_holds_frames_without_breaking_equality() -> None:
    ev = judged.evaluate(SEED_QRELS, SEED_RUN, cutoffs=(1,))
    assert ev == ev and ev != judged.evaluate(SEED_QRELS, SEED_RUN, cutoffs=(1,))  # identity, never frame comparison
    assert isinstance(hash(ev), int)
    assert repr(ev).startswith("Evaluation('run', 'nDCG@1[judged:gain=linear]'")


def test_warehouse_needs_a_catalog(tmp_path: Path) -> None:
    with pytest.raises(judged.InputError, match="not a warehouse"):
        judged.Warehouse(tmp_path)


def test_a_stored_run_folder_gives_the_file_s_values_and_id(tmp_path: Path) -> None:
    from judged.flows.store.readers import load_table
    from judged.flows.store.warehouse import Store

    stored = Store(tmp_path).store_table(load_table(SEED / "run.txt", "run"))
    folder = tmp_path / "run_rows" / stored.id
    from_folder = judged.evaluate(SEED / "qrels.txt", folder, preset="trec_eval", cutoffs=(1, 2, 3))
    from_file = judged.evaluate(SEED / "qrels.txt", SEED / "run.txt", preset="trec_eval", cutoffs=(1, 2, 3))
    assert from_folder.per_query["value"].to_list() == pytest.approx(SEED_NDCG, abs=1e-15)
    assert from_folder.evaluation_id == from_file.evaluation_id
    assert from_folder.provenance.run.id == stored.id


def test_reading_warnings_go_into_the_result_not_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wide = tmp_path / "wide.txt"
    wide.write_text("q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t extra\nq1 Q0 d3 3 1.0 t\n")
    evaluation = judged.evaluate(SEED / "qrels.txt", wide, measures=["nDCG@3"])
    assert capsys.readouterr().err == ""
    assert f"{wide}, line 2: line has more than 6 columns; the columns after the sixth were ignored, as trec_eval " \
           "ignores them (a document id with a space?)" in evaluation.warnings
    assert evaluation.warnings == evaluation.provenance.warnings


def test_allow_empty_evaluates_an_empty_run_as_missing() -> None:
    empty = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64})
    with pytest.raises(judged.InputError, match="unless allow_empty=True is given"):
        judged.evaluate(SEED_QRELS, empty, cutoffs=(1,))
    ev = judged.evaluate(SEED_QRELS, empty, cutoffs=(1,), allow_empty=True)
    assert ev.per_query["status"].to_list() == ["missing_from_run"]


def test_one_method_has_one_evaluation_id_however_it_was_asked_for() -> None:
    by_cutoffs = judged.evaluate(SEED_QRELS, SEED_RUN, cutoffs=(2,))
    by_measures = judged.evaluate(SEED_QRELS, SEED_RUN, measures=["nDCG@2"])
    assert by_cutoffs.label == by_measures.label
    assert by_cutoffs.evaluation_id == by_measures.evaluation_id
    assert by_cutoffs.spec.spec_hash == by_measures.spec.spec_hash
