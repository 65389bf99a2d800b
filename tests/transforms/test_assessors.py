"""Several assessors' grades (transforms.assessors): each assessor model's grades on a hand-worked set, and the
agreement statistics against their hand-computed values."""

from __future__ import annotations

import polars as pl
import pytest

from judged.transforms.assessors import (
    agreement_by_pair, assessor_counts, krippendorff_alpha, names_assessors, resolve_assessors,
)

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


# ROWS and an adjudicator's grades: a (x 1, y 3) settled at 2; d (x unresolved only) settled at 0; b and c not.
ADJUDICATED = pl.concat([ROWS, pl.LazyFrame(
    {"query_id": ["q", "q"], "doc_id": ["a", "d"], "relevance": [2, 0], "assessor": ["adj", "adj"],
     "source_line": [8, 9]},
    schema_overrides={"relevance": pl.Int32},
)])


@pytest.mark.parametrize(
    ("model", "b_and_c"),
    [
        ("median", {"b": (0, None), "c": (2, None)}),
        ("max", {"b": (2, None), "c": (2, None)}),
        ("single:y", {"b": (0, None), "c": (2, None)}),
        ("set", {"b": (0, [0, 2]), "c": (2, None)}),
        ("range", {"b": (0, [0, 1, 2]), "c": (2, None)}),
    ],
)
def test_an_adjudicator_s_grade_settles_the_pair_under_every_model(model: str, b_and_c: dict) -> None:
    resolved = resolve_assessors(ADJUDICATED, model, [0, 1, 2, 3], adjudicators=["adj"]).collect()
    found = {r["doc_id"]: (r["relevance"], r["grade_set"]) for r in resolved.iter_rows(named=True)}
    # a: 2 whatever x and y said (no set left); d: judged 0 now; b and c: the model reads x, y and z as before.
    assert found == {"a": (2, None), "d": (0, None), **b_and_c}
    # Not declared an adjudicator, adj is one more voice: under max, a is 3 (y's), not 2.
    assert resolve_assessors(ADJUDICATED, "max").collect().filter(pl.col("doc_id") == "a")["relevance"].item() == 3


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


def test_weighted_kappa_counts_the_distance_between_grades_not_between_the_grades_given() -> None:
    # a = 0, 1, 3, 3 and b = 0, 3, 1, 3: nobody gave a 2, yet 1 against 3 is two grades apart. Observed mean
    # distance (0 + 2 + 2 + 0) / 4 = 1; by chance, with p(0) = 1/4, p(1) = 1/4, p(3) = 1/2 on both sides,
    # sum p(i) p(j) |i - j| = 2 * (1/16 * 1 + 1/8 * 3 + 1/8 * 2) = 1.375: kappa_w = 1 - 1 / 1.375 = 0.272727.
    # (With the grades given as labels, 1 against 3 would count 1: 1 - 0.5 / 0.875 = 0.428571.)
    rows = pl.DataFrame({"query_id": ["q"] * 8, "doc_id": ["1", "2", "3", "4"] * 2,
                         "relevance": [0, 1, 3, 3, 0, 3, 1, 3], "assessor": ["a"] * 4 + ["b"] * 4})
    found = agreement_by_pair(rows, threshold=1).row(0, named=True)
    assert found["weighted_kappa"] == pytest.approx(1 - 1 / 1.375)
    # Unweighted, by chance 1/16 + 1/16 + 1/4 = 0.375, observed 1/2: (0.5 - 0.375) / 0.625 = 0.2.
    assert found["kappa"] == pytest.approx(0.2)
    # Relevant at 1: a = 0, 1, 1, 1 and b = 0, 1, 1, 1: full agreement.
    assert found["kappa_relevant"] == pytest.approx(1.0) and found["agreement"] == 0.5


def test_every_pair_of_assessors_is_listed_even_without_shared_pairs() -> None:
    rows = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["1", "1", "2"], "relevance": [1, 2, 0],
                         "assessor": ["b", "a", "c"]})
    pairs = agreement_by_pair(rows, threshold=1)
    assert pairs.select("assessor_a", "assessor_b", "shared_pairs").rows() == [("a", "b", 1), ("a", "c", 0),
                                                                               ("b", "c", 0)]
    assert pairs.filter(pl.col("shared_pairs") == 0)["kappa"].to_list() == [None, None]
    assert pairs.filter(pl.col("shared_pairs") == 0)["agreement"].to_list() == [None, None]


def test_alpha_by_hand_and_with_any_assessor_name() -> None:
    # Two coders, four units: (0, 0), (1, 1), (2, 1), (2, 2). Ordinal alpha by hand: value counts n_0 = 2,
    # n_1 = 3, n_2 = 3 (n = 8); ordinal distance d(1, 2) = (n_1 / 2 + n_2 / 2)^2 = 9, d(0, 1) = (2/2 + 3/2)^2 = 6.25,
    # d(0, 2) = (2/2 + 3 + 3/2)^2 = 30.25. Observed: the one disagreeing unit pairs (1, 2) twice over m - 1 = 1:
    # D_o = 2 * 9 / 8. Expected: sum over value pairs n_c n_k d(c, k) / (n (n - 1)), both orders:
    # 2 * (2 * 3 * 6.25 + 2 * 3 * 30.25 + 3 * 3 * 9) / 56 = 2 * 300 / 56. alpha = 1 - D_o / D_e = 1 - 2.25 / 10.714.
    rows = pl.DataFrame({"query_id": ["q"] * 8, "doc_id": ["1", "2", "3", "4"] * 2,
                         "relevance": [0, 1, 2, 2, 0, 1, 1, 2], "assessor": ["doc_id"] * 4 + ["query_id"] * 4})
    assert krippendorff_alpha(rows) == pytest.approx(1 - (2 * 9 / 8) / (2 * 300 / 56))


def test_assessor_counts_name_each_assessor_with_their_kind() -> None:
    counts = assessor_counts(ROWS, {"y": "model:gpt-4o", "x": "human"}).collect()
    assert counts.rows() == [("x", "human", 3, 1, 1), ("y", "model:gpt-4o", 1, 1, 1), ("z", None, 1, 0, 1)]
    assert names_assessors(ROWS).collect().item()
    assert not names_assessors(ROWS.with_columns(assessor=pl.lit(None, pl.String))).collect().item()
    assert not names_assessors(ROWS.drop("assessor")).collect().item()
