"""Several assessors' grades (transforms.assessors): each assessor model's grades on a hand-worked set, and the
agreement statistics against their hand-computed values."""

from __future__ import annotations

import polars as pl
import pytest

from judged.transforms.assessors import agreement_by_pair, krippendorff_alpha, resolve_assessors

# Pair a: x says 1, y says 3. b: x 2, y unresolved, z 0. c: x alone, 2. d: x unresolved only.
ROWS = pl.LazyFrame(
    {
        "query_id": ["q"] * 7,
        "doc_id": ["a", "a", "b", "b", "b", "c", "d"],
        "relevance": [1, 3, 2, None, 0, 2, None],
        "assessor": ["x", "y", "x", "y", "z", "x", "x"],
        "source_line": [1, 2, 3, 4, 5, 6, 7],
    },
    schema_overrides={"relevance": pl.Int32},
)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # The consensus of two grades is the lower one; an unresolved row is no grade.
        ("median", {"a": (1, None), "b": (0, None), "c": (2, None), "d": (None, None)}),
        ("min", {"a": (1, None), "b": (0, None), "c": (2, None), "d": (None, None)}),
        ("max", {"a": (3, None), "b": (2, None), "c": (2, None), "d": (None, None)}),
        # y's grade where y judged; b: y's row is unresolved, so the others' consensus (0 and 2: 0).
        ("single:y", {"a": (3, None), "b": (0, None), "c": (2, None), "d": (None, None)}),
        ("set", {"a": (1, [1, 3]), "b": (0, [0, 2]), "c": (2, None), "d": (None, None)}),
        ("range", {"a": (1, [1, 2, 3]), "b": (0, [0, 1, 2]), "c": (2, None), "d": (None, None)}),
    ],
)
def test_each_model_gives_its_grades(model: str, expected: dict) -> None:
    resolved = resolve_assessors(ROWS, model, [0, 1, 2, 3]).collect()
    assert {r["doc_id"]: (r["relevance"], r["grade_set"]) for r in resolved.iter_rows(named=True)} == expected
    assert resolved["source_line"].to_list() == [1, 3, 6, 7]  # each pair's first line, for messages


def test_range_keeps_to_the_declared_scale() -> None:
    # A scale without grade 2: x's 1 and y's 3 span {1, 3} only.
    resolved = resolve_assessors(ROWS, "range", [0, 1, 3]).collect()
    assert resolved.filter(pl.col("doc_id") == "a")["grade_set"].to_list() == [[1, 3]]


def test_without_a_model_the_rows_are_taken_as_they_are() -> None:
    single = ROWS.filter(pl.col("assessor") == "x").drop("assessor")
    assert resolve_assessors(single, None).collect()["relevance"].to_list() == [1, 2, 2, None]


def test_cohens_kappa_by_hand() -> None:
    # Four pairs: a = 0, 1, 2, 2 and b = 0, 1, 1, 2. Observed agreement 3/4; by chance
    # 1/4 * 1/4 + 1/4 * 1/2 + 1/2 * 1/4 = 0.3125; kappa = (0.75 - 0.3125) / (1 - 0.3125) = 0.63636.
    # Relevant at grade 2: a = 0, 0, 1, 1 and b = 0, 0, 0, 1: observed 3/4, by chance 1/2 * 3/4 + 1/2 * 1/4 = 1/2,
    # kappa 0.5. Linearly weighted (a disagreement counts |i - j|): observed mean 1/4; by chance
    # sum of p_a(i) p_b(j) |i - j| = 1/4 * 1 + 1/4 * 1/2 + 1/2 * 1 = 0.875; 1 - 0.25 / 0.875 = 0.71429.
    rows = pl.DataFrame({
        "query_id": ["q"] * 8,
        "doc_id": ["1", "2", "3", "4"] * 2,
        "relevance": [0, 1, 2, 2, 0, 1, 1, 2],
        "assessor": ["a"] * 4 + ["b"] * 4,
    })
    found = agreement_by_pair(rows, threshold=2).row(0, named=True)
    assert found["shared_pairs"] == 4 and found["agreement"] == 0.75
    assert found["kappa"] == pytest.approx(0.4375 / 0.6875)
    assert found["kappa_relevant"] == pytest.approx(0.5)
    assert found["weighted_kappa"] == pytest.approx(1 - 0.25 / 0.875)


def test_krippendorff_alpha_is_one_on_full_agreement_and_null_without_overlap() -> None:
    same = pl.DataFrame({"query_id": ["q"] * 6, "doc_id": ["1", "2", "3"] * 2, "relevance": [0, 1, 2] * 2,
                         "assessor": ["a"] * 3 + ["b"] * 3})
    assert krippendorff_alpha(same) == pytest.approx(1.0)
    apart = same.with_columns(doc_id=pl.Series(["1", "2", "3", "4", "5", "6"]))
    assert krippendorff_alpha(apart) is None
