"""Duplicate (query, document) pairs in runs and judgments: found, refused under `error`, resolved and reported under
`first` / `last` (transforms.duplicates, and through flows.engine.evaluate as the CLI uses it)."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from judged.flows.engine.evaluate import EvaluationResult, evaluate
from judged.flows.store.readers import load_table
from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.transforms.duplicates import (
    duplicate_pairs,
    keep_one_per_pair,
    may_have_duplicates,
    raise_on_duplicates,
    stretches_may_have_duplicates,
)
from judged.transforms.errors import InputError

INV_LOG2_3 = 1 / math.log2(3)  # discount of rank 2: 1/log2(3) = 0.6309297535714575


def spec(**options: object) -> EvaluationSpec:
    return PRESETS["judged"].with_options(cutoffs=(1, 2), **options)


def run_evaluation(tmp_path: Path, run_text: str, qrels_text: str, the_spec: EvaluationSpec) -> EvaluationResult:
    run_path = tmp_path / "run.txt"
    qrels_path = tmp_path / "qrels.txt"
    run_path.write_text(run_text)
    qrels_path.write_text(qrels_text)
    return evaluate(load_table(run_path, "run"), load_table(qrels_path, "judgments"), the_spec)


def values(result: EvaluationResult) -> dict[int | None, float | None]:
    return dict(result.per_query.filter(pl.col("query_id") == "q1").select("cutoff", "value").iter_rows())


# -- the transforms on their own -------------------------------------------------------------------------------------


def judgments_frame(rows: list[tuple[str, str, int | None, int]]) -> pl.LazyFrame:
    return pl.LazyFrame(
        rows,
        schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int32, "source_line": pl.Int64},
        orient="row",
    )


def test_duplicate_pairs_lists_each_pair_once_with_lines_and_conflict() -> None:
    frame = judgments_frame(
        [
            ("q1", "d1", 1, 1),
            ("q1", "d2", 0, 2),
            ("q2", "d1", 2, 3),  # another query: not a duplicate of line 1
            ("q1", "d2", 0, 4),  # same grade as line 2
            ("q1", "d1", 2, 5),  # different grade from line 1
            ("q1", "d1", 1, 6),
            ("q1", "D1", 1, 7),  # case matters: another document
            ("q1", "007", 1, 8),
            ("q1", "7", 1, 9),  # "7" is not "007"
        ]
    )
    found = duplicate_pairs(frame).collect()
    # Sorted by first line: (q1, d1) first seen on line 1, (q1, d2) on line 2.
    assert found.rows() == [("q1", "d1", 3, [1, 5, 6], True), ("q1", "d2", 2, [2, 4], False)]


def test_duplicate_pairs_of_a_run_are_never_conflicting() -> None:
    run = pl.LazyFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d1"], "score": [1.0, 2.0], "source_line": [1, 2]})
    assert duplicate_pairs(run).collect().select("count", "source_lines", "conflicting").rows() == [(2, [1, 2], False)]


def test_null_and_real_grade_conflict() -> None:
    # An unresolved judgment (null) and a grade are not the same judgment.
    found = duplicate_pairs(judgments_frame([("q1", "d1", None, 1), ("q1", "d1", 2, 2)])).collect()
    assert found["conflicting"].to_list() == [True]


@pytest.mark.parametrize(
    ("queries", "docs", "by_query", "by_stretch"),
    [
        (["q1", "q1", "q2", "q2"], ["d1", "d2", "d1", "d2"], False, False),  # a document in two queries
        (["q1", "q1", "q2", "q2"], ["d1", "d1", "d1", "d2"], True, True),  # twice in one stretch
        # q1 comes back after q2: the pair repeats across two stretches, which only grouping by query sees
        (["q1", "q2", "q1"], ["d1", "d2", "d1"], True, False),
        ([], [], False, False),
    ],
)
def test_stretches_may_have_duplicates_looks_within_each_stretch(
    queries: list[str], docs: list[str], by_query: bool, by_stretch: bool
) -> None:
    rows = pl.LazyFrame({"query_id": queries, "doc_id": docs}, schema={"query_id": pl.String, "doc_id": pl.String})
    assert may_have_duplicates(rows).collect().item() is by_query
    assert stretches_may_have_duplicates(rows).collect().item() is by_stretch


def test_raise_on_duplicates_message() -> None:
    found = duplicate_pairs(
        judgments_frame([("q1", "d1", 1, 1), ("q1", "d2", 0, 2), ("q1", "d1", 1, 3), ("q1", "d2", 0, 4)])
    ).collect()
    with pytest.raises(InputError) as caught:
        raise_on_duplicates(found, "qrels.txt", "judgment")
    assert str(caught.value) == (
        "qrels.txt, line 3: duplicate judgment for query 'q1', document 'd1' at lines 1 and 3 "
        "(1 more duplicate pairs); declare a duplicates policy (first, last) to resolve"
    )
    assert caught.value.line == 3


def test_raise_on_duplicates_is_silent_without_duplicates() -> None:
    raise_on_duplicates(duplicate_pairs(judgments_frame([("q1", "d1", 1, 1)])).collect(), "qrels.txt", "judgment")


@pytest.mark.parametrize(("policy", "kept_lines"), [("first", [1, 2, 4]), ("last", [2, 4, 5])])
def test_keep_one_per_pair(policy: str, kept_lines: list[int]) -> None:
    frame = judgments_frame([("q1", "d1", 1, 1), ("q1", "d2", 0, 2), ("q1", "d1", 2, 3), ("q2", "d1", 0, 4), ("q1", "d1", 3, 5)])
    # (q1, d1) is on lines 1, 3, 5: `first` keeps 1, `last` keeps 5; lines 2 and 4 are unique.
    kept = keep_one_per_pair(frame, policy).collect()
    assert sorted(kept["source_line"].to_list()) == kept_lines


def test_keep_one_per_pair_refuses_error_policy() -> None:
    with pytest.raises(ValueError, match="'error'"):
        keep_one_per_pair(judgments_frame([]), "error")


# -- through the engine ----------------------------------------------------------------------------------------------

RUN_WITH_DUPLICATE = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d1 3 1.0 t\n"
QRELS_D1_RELEVANT = "q1 0 d1 1\nq1 0 d2 0\n"


def test_run_duplicate_under_error_names_query_document_and_both_lines(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        run_evaluation(tmp_path, RUN_WITH_DUPLICATE, QRELS_D1_RELEVANT, spec(run_duplicates="error"))
    assert str(caught.value) == (
        f"{tmp_path / 'run.txt'}, line 3: duplicate run row for query 'q1', document 'd1' at lines 1 and 3; "
        "declare a duplicates policy (first, last) to resolve"
    )


def test_default_presets_refuse_duplicates() -> None:
    for name, preset in PRESETS.items():
        assert (preset.run_duplicates, preset.judgment_duplicates) == ("error", "error"), name


def test_run_duplicate_first_keeps_the_first_row(tmp_path: Path) -> None:
    result = run_evaluation(tmp_path, RUN_WITH_DUPLICATE, QRELS_D1_RELEVANT, spec(run_duplicates="first"))
    # Kept: d1 with score 3.0 (line 1), d2 with 2.0. Order d1, d2; gains 1, 0. IDCG@1 = IDCG@2 = 1 (one relevant).
    # NDCG@1 = 1/1 = 1; NDCG@2 = 1/1 = 1.
    assert values(result) == {1: 1.0, 2: 1.0}
    assert result.per_query["n_retrieved"].to_list() == [2, 2]
    assert result.warnings == (
        f"{tmp_path / 'run.txt'}: 1 duplicate (query, document) pairs, resolved by keeping the first line",
    )


def test_run_duplicate_last_keeps_the_last_row(tmp_path: Path) -> None:
    result = run_evaluation(tmp_path, RUN_WITH_DUPLICATE, QRELS_D1_RELEVANT, spec(run_duplicates="last"))
    # Kept: d2 with 2.0, d1 with 1.0 (line 3). Order d2, d1; gains 0, 1.
    # NDCG@1 = 0/1 = 0; NDCG@2 = (0 + 1/log2(3)) / 1 = 0.6309297535714575.
    got = values(result)
    assert got[1] == 0.0
    assert got[2] == pytest.approx(INV_LOG2_3, abs=1e-12)
    assert result.warnings == (
        f"{tmp_path / 'run.txt'}: 1 duplicate (query, document) pairs, resolved by keeping the last line",
    )


QRELS_CONFLICT = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d1 1\n"
RUN_D2_FIRST = "q1 Q0 d2 1 3.0 t\nq1 Q0 d1 2 2.0 t\n"


def test_conflicting_judgments_under_error_mention_different_grades(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        run_evaluation(tmp_path, RUN_D2_FIRST, QRELS_CONFLICT, spec(judgment_duplicates="error"))
    assert str(caught.value) == (
        f"{tmp_path / 'qrels.txt'}, line 3: duplicate judgment for query 'q1', document 'd1' with different grades "
        "at lines 1 and 3; declare a duplicates policy (first, last) to resolve"
    )


def test_identical_judgment_duplicates_under_error_still_fail(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"line 3: duplicate judgment for query 'q1', document 'd1' at lines 1 and 3;"):
        run_evaluation(tmp_path, RUN_D2_FIRST, "q1 0 d1 2\nq1 0 d2 1\nq1 0 d1 2\n", spec())


def test_conflicting_judgments_first(tmp_path: Path) -> None:
    result = run_evaluation(tmp_path, RUN_D2_FIRST, QRELS_CONFLICT, spec(judgment_duplicates="first"))
    # Kept grades d1 = 2 (line 1), d2 = 1. Run order d2, d1: DCG@1 = 1; IDCG@1 = 2 -> NDCG@1 = 0.5.
    # DCG@2 = 1 + 2/log2(3) = 2.2618595; IDCG@2 = 2 + 1/log2(3) = 2.6309298 -> NDCG@2 = 0.8597186.
    got = values(result)
    assert got[1] == pytest.approx(0.5, abs=1e-12)
    assert got[2] == pytest.approx((1 + 2 * INV_LOG2_3) / (2 + INV_LOG2_3), abs=1e-12)
    assert result.warnings == (
        f"{tmp_path / 'qrels.txt'}: 1 duplicate (query, document) pairs, 1 with conflicting grades, "
        "resolved by keeping the first line",
    )


def test_conflicting_judgments_last(tmp_path: Path) -> None:
    result = run_evaluation(tmp_path, RUN_D2_FIRST, QRELS_CONFLICT, spec(judgment_duplicates="last"))
    # Kept grades d1 = 1 (line 3), d2 = 1: both gain 1, so the run is ideal: NDCG@1 = NDCG@2 = 1.
    # (DCG@1 = 1 = IDCG@1 confirms grade 1, not 2, was kept for d1.)
    assert values(result) == {1: 1.0, 2: 1.0}
    assert result.per_query.filter(pl.col("cutoff") == 1)["dcg"].to_list() == [1.0]
    assert result.warnings == (
        f"{tmp_path / 'qrels.txt'}: 1 duplicate (query, document) pairs, 1 with conflicting grades, "
        "resolved by keeping the last line",
    )


def test_warning_counts_pairs_and_conflicts(tmp_path: Path) -> None:
    qrels_text = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d1 1\nq1 0 d2 1\nq1 0 d2 1\nq2 0 d9 1\n"
    # Two duplicate pairs: (q1, d1) with grades 2 and 1 (conflicting), (q1, d2) three times with grade 1.
    result = run_evaluation(tmp_path, RUN_D2_FIRST, qrels_text, spec(judgment_duplicates="last"))
    assert result.warnings[0] == (
        f"{tmp_path / 'qrels.txt'}: 2 duplicate (query, document) pairs, 1 with conflicting grades, "
        "resolved by keeping the last line"
    )


def test_both_policies_warn_separately(tmp_path: Path) -> None:
    result = run_evaluation(
        tmp_path,
        RUN_WITH_DUPLICATE,
        "q1 0 d1 1\nq1 0 d2 0\nq1 0 d2 0\n",
        spec(run_duplicates="first", judgment_duplicates="first"),
    )
    assert result.warnings == (
        f"{tmp_path / 'qrels.txt'}: 1 duplicate (query, document) pairs, resolved by keeping the first line",
        f"{tmp_path / 'run.txt'}: 1 duplicate (query, document) pairs, resolved by keeping the first line",
    )


def test_parquet_duplicates_name_rows(tmp_path: Path) -> None:
    run_path = tmp_path / "run.parquet"
    pl.DataFrame({"query_id": ["q1", "q1", "q1"], "doc_id": ["d1", "d2", "d1"], "score": [3.0, 2.0, 1.0]}).write_parquet(
        run_path
    )
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text(QRELS_D1_RELEVANT)
    run_table = load_table(run_path, "run")
    judgments = load_table(qrels_path, "judgments")
    with pytest.raises(InputError) as caught:
        evaluate(run_table, judgments, spec())
    assert str(caught.value) == (
        f"{run_path}, row 3: duplicate run row for query 'q1', document 'd1' at rows 1 and 3; "
        "declare a duplicates policy (first, last) to resolve"
    )
    result = evaluate(run_table, judgments, spec(run_duplicates="last"))
    assert result.warnings == (f"{run_path}: 1 duplicate (query, document) pairs, resolved by keeping the last row",)


def test_leading_zero_ids_are_not_duplicates(tmp_path: Path) -> None:
    result = run_evaluation(
        tmp_path, "q1 Q0 007 1 2.0 t\nq1 Q0 7 2 1.0 t\n", "q1 0 007 1\nq1 0 7 0\n", spec()
    )
    # "007" (gain 1) at rank 1, "7" (gain 0) at rank 2: NDCG@1 = NDCG@2 = 1, and no duplicate warning.
    assert values(result) == {1: 1.0, 2: 1.0}
    assert result.warnings == ()
