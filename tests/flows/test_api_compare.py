"""`judged.compare` and `judged.worklist`: the Python API of comparisons and worklists, with the JSON field names."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import judged

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "trec-dl-2020-sample"
QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUNS = {name: SAMPLE / "runs" / f"input.{name}.gz" for name in ("DoRA_Large", "p_bm25", "pash_r3")}


def test_compare_says_which_pairs_are_decided() -> None:
    comparison = judged.compare(QRELS, RUNS, measures=["nDCG@10"], preset="trec_eval")
    assert comparison.baseline == "DoRA_Large"
    pairs = {row["run"]: row for row in comparison.pairs.filter(pl.col("baseline") == "DoRA_Large").iter_rows(named=True)}
    # pash_r3 beats DoRA_Large whatever its unjudged documents are; p_bm25 against DoRA_Large stays open.
    assert pairs["pash_r3"]["decided"] and pairs["pash_r3"]["decided_direction"] == "run"
    assert pairs["pash_r3"]["mean_difference_min"] > 0
    assert not pairs["p_bm25"]["decided"] and pairs["p_bm25"]["decided_direction"] is None
    assert pairs["p_bm25"]["mean_difference_min"] < 0 < pairs["p_bm25"]["mean_difference_max"]
    assert comparison.summary.row(0, named=True) | {} == {"measure": "nDCG", "cutoff": 10, "pairs": 3,
                                                         "pairs_decided": 2}
    per_query = comparison.per_query
    assert {"difference_min", "difference_max", "difference_kind", "robustness"} <= set(per_query.columns)
    inside = per_query.select(
        ((pl.col("difference_min") <= pl.col("difference")) & (pl.col("difference") <= pl.col("difference_max"))).all()
    ).item()
    assert inside and set(per_query["difference_kind"].cast(pl.String).unique()) <= {"exact", "bound"}
    # The paired interval is never wider than what the two per-run intervals allow.
    assert per_query.select(
        (pl.col("difference_min") >= pl.col("run_value_min") - pl.col("baseline_value_max") - 1e-12).all()
        & (pl.col("difference_max") <= pl.col("run_value_max") - pl.col("baseline_value_min") + 1e-12).all()
    ).item()


def test_compare_takes_what_evaluate_takes_and_refuses_with_its_errors() -> None:
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}
    runs = {"x": {"q1": {"a": 2.0, "u": 1.0}, "q2": {"c": 1.0}}, "y": {"q1": {"u": 2.0, "a": 1.0}, "q2": {"v": 1.0}}}
    comparison = judged.compare(qrels, runs, measures="nDCG@10", baseline="y")
    assert comparison.baseline == "y" and comparison.pairs.height == 1
    runs3 = {**runs, "z": {"q1": {"b": 1.0}, "q2": {"c": 1.0}}}
    listed = judged.compare(qrels, runs3, measures="nDCG@10", pairs=[("z", "x")])
    assert listed.pairs.select("baseline", "run").rows() == [("z", "x")]
    assert listed.pair_table.select("better", "direction", "worse").rows() == [("x", ">", "z")]
    assert judged.compare(qrels, runs3, measures="nDCG@10", pairs="baseline").pairs.height == 2
    assert judged.compare(qrels, runs3, measures="nDCG@10").pairs.height == 3
    with pytest.raises(judged.SpecError, match="--pairs: x:x: a run is compared with other runs, not with itself"):
        judged.compare(qrels, runs3, pairs="x:x")
    with pytest.raises(judged.InputError, match="at least two runs"):
        judged.compare(qrels, {"x": runs["x"]})
    with pytest.raises(judged.SpecError, match="runs must be a dict"):
        judged.compare(qrels, 5)
    with pytest.raises(judged.InputError, match="--baseline 'z' is none of the runs"):
        judged.compare(qrels, runs, baseline="z")


@pytest.mark.slow  # two worklists of three DL runs; the fast loop has the worklists of tests/transforms
def test_worklist_returns_the_documents_to_judge_first() -> None:
    listed = judged.worklist(QRELS, RUNS, budget=7, cutoff=10, preset="trec_eval")
    assert listed.columns == ["query_id", "doc_id", "priority", "rank"] and listed.height == 7
    assert listed["rank"].to_list() == list(range(1, 8))
    assert listed["priority"].to_list() == sorted(listed["priority"].to_list(), reverse=True)
    width = judged.worklist(QRELS, RUNS, budget=7, objective="width", preset="trec_eval")
    assert width.height == 7 and width.columns == listed.columns
    with pytest.raises(judged.SpecError, match="budget must be a positive"):
        judged.worklist(QRELS, RUNS, budget=0)
    with pytest.raises(judged.SpecError, match="expected adjudicate, pairs or width"):
        judged.worklist(QRELS, RUNS, objective="depth")


# Two runs over two judged queries: q1's documents u, v and q2's w unjudged in the top 10.
TOY_QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2, "d": 0}}
TOY_RUNS = {"x": {"q1": {"a": 3.0, "u": 2.0, "b": 1.0}, "q2": {"c": 2.0, "w": 1.0}},
            "y": {"q1": {"v": 3.0, "a": 2.0}, "q2": {"w": 2.0, "c": 1.0}}}


def test_worklist_weighs_queries_as_the_command_line_does(tmp_path: Path) -> None:
    """`query_weights` weighs each query's share of the priority, as `judged worklist --query-weights` (before,
    the API refused them: the spec's aggregation was a plain mean)."""
    from judged.flows.pipeline.judging import make_worklist
    from judged.flows.store.readers import load_table
    from judged.flows.store.warehouse import Store
    from judged.schemas.provenance import JudgmentSetMetadata, RunMetadata
    from judged.schemas.spec import build_spec

    plain = judged.worklist(TOY_QRELS, TOY_RUNS, budget=10, objective="width")
    weighted = judged.worklist(TOY_QRELS, TOY_RUNS, budget=10, objective="width", query_weights=(("q2", 5.0),))
    priorities = {(q, d): p for q, d, p, _ in plain.iter_rows()}
    assert {(q, d): p for q, d, p, _ in weighted.iter_rows()} == pytest.approx(
        {(q, d): p * (5.0 if q == "q2" else 1.0) for (q, d), p in priorities.items()})
    # The command line's worklist of the same stored runs and weights lists the same pairs with the same priorities.
    store = Store(tmp_path / "warehouse")
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in TOY_QRELS.items()
                                                for d, g in docs.items()))
    store.store_table(load_table(tmp_path / "qrels.txt", "judgments", JudgmentSetMetadata(name="toy")))
    for name, run in TOY_RUNS.items():
        (tmp_path / f"{name}.txt").write_text("".join(f"{q} Q0 {d} 1 {s} {name}\n" for q, docs in run.items()
                                                      for d, s in docs.items()))
        store.store_table(load_table(tmp_path / f"{name}.txt", "run", RunMetadata(tag=name)))
    report = make_worklist(store, "toy", build_spec("judged", cutoffs=(10,)), 10, [], [], (("q2", 5.0),),
                           objective="width")
    assert {(q, d): p for q, d, p in report.rows.select("query_id", "doc_id", "priority").iter_rows()} == \
        pytest.approx({(q, d): p for q, d, p, _ in weighted.iter_rows()})


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"query_weights": (("q1", 0.0), ("q2", 0.0))}, judged.InputError,
         "query weights: the weights of the 2 scored queries sum to 0"),
        ({"pairs": 123}, judged.SpecError, "pairs must be text, not 123"),
        ({"objective": ["width"]}, judged.SpecError, "objective must be text"),
        ({"budget": 1_000_001}, judged.SpecError, "budget must be an integer from 1 to 1,000,000, not 1000001"),
    ],
    ids=["zero-total-weight", "pairs-a-number", "objective-a-list", "budget-beyond-the-cli's"],
)
def test_worklist_refuses_what_the_command_line_refuses(arguments: dict, error: type, message: str) -> None:
    with pytest.raises(error) as raised:
        judged.worklist(TOY_QRELS, TOY_RUNS, budget=arguments.pop("budget", 10), **arguments)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_one_run_twice_under_two_names_is_refused() -> None:
    """As `judged compare QRELS a.txt b.txt` refuses one run given twice (before, the API compared it with itself,
    and ranked its documents for a pair that can never be decided)."""
    twice = {"x": TOY_RUNS["x"], "again": TOY_RUNS["x"]}
    for call in (lambda: judged.compare(TOY_QRELS, twice), lambda: judged.worklist(TOY_QRELS, twice, budget=5)):
        with pytest.raises(judged.InputError, match="'x' and 'again' are one run \\(the same rows\\) given twice"):
            call()


def test_pairs_name_both_kinds_of_doubt_with_several_assessors() -> None:
    """data/assessors-example (two synthetic assessors): under `set` a pair is decided only if it holds whatever the
    unjudged documents are and whichever grade each disputed judgment takes; the sentence and the report say so."""
    from judged.flows.report.html import pair_table_html
    from judged.flows.report.wording import pair_sentence

    example = SAMPLE.parent / "assessors-example"
    qrels = pl.concat([
        pl.read_csv(example / f"{name}.txt", separator=" ", has_header=False,
                    new_columns=["query_id", "iteration", "doc_id", "relevance"],
                    schema_overrides={"query_id": pl.String, "doc_id": pl.String}).drop("iteration")
        .with_columns(assessor=pl.lit(name))
        for name in ("synthetic_a", "synthetic_b")
    ])
    runs = {name: RUNS[name] for name in ("p_bm25", "pash_r3")}
    comparison = judged.compare(qrels, runs, measures="nDCG@10", assessor_model="set")
    (row,) = comparison.pair_table.to_dicts()
    assert (row["better"], row["worse"], row["decided"]) == ("pash_r3", "p_bm25", True)
    assert (row["assessor_worlds"], row["assessor_worlds_agree"]) == (2, 2)
    assert (row["unjudged_documents"], row["disputed_documents"], row["disputed_queries"]) == (0, 12, 6)
    assert pair_sentence(row, "nDCG@10", "holm").startswith(
        "pash_r3 > p_bm25 on nDCG@10 whatever the 12 disputed judgments it reads are and whichever assessor is right;")
    from judged.flows.engine.compare import ComparisonResult
    from judged.schemas.comparison import ComparisonSettings

    result = ComparisonResult(comparison.comparison_id, comparison.baseline, ComparisonSettings(), (),
                              comparison.pairs, comparison.per_query, comparison.notes)
    table = pair_table_html(result)
    assert ">assessors agree</th>" in table and "2 of 2" in table and "Assessors: in how many" in table
