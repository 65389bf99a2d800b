"""Tests of schemas/comparison.py's pair selection: `--pairs all|baseline|A:B,...`, the default by the number of runs,
and the refusals, each a one-line SpecError naming the problem."""

from __future__ import annotations

import pytest

from judged.schemas.comparison import ALL_PAIRS_UP_TO, ComparisonSettings, parse_pairs
from judged.schemas.spec import SpecError

RUNS = ["a", "b", "c", "d"]


def test_default_is_every_pair_up_to_the_limit_then_the_baseline_pairs() -> None:
    settings, pairs, note = ComparisonSettings().with_pairs(RUNS, "c")
    assert settings.pairs == "all"
    assert pairs == [("c", "a"), ("c", "b"), ("c", "d"), ("a", "b"), ("a", "d"), ("b", "d")]
    assert note == f"pairs: all 6 pairs of the 4 runs (the default up to {ALL_PAIRS_UP_TO} runs; --pairs baseline " \
                   "compares the baseline with each other run only)"
    many = [f"r{i}" for i in range(ALL_PAIRS_UP_TO + 1)]
    settings, pairs, note = ComparisonSettings().with_pairs(many, "r3")
    assert settings.pairs == "baseline" and len(pairs) == ALL_PAIRS_UP_TO
    assert all(reference == "r3" for reference, _ in pairs)
    assert note.startswith("pairs: the baseline against each other run, 12 of the 78 pairs (the default beyond 12")


def test_declared_selections_and_the_id_follow_them() -> None:
    settings, pairs, note = ComparisonSettings(pairs="baseline").with_pairs(RUNS, "a")
    assert pairs == [("a", "b"), ("a", "c"), ("a", "d")] and note.endswith("3 of the 6 pairs")
    listed = ComparisonSettings(pairs=" b:a, c:d")
    assert listed.pairs == (("b", "a"), ("c", "d"))
    assert listed.with_pairs(RUNS, "a")[1:] == ([("b", "a"), ("c", "d")], "pairs: the 2 pairs listed")
    assert parse_pairs("x:y:z") == (("x:y", "z"),)  # a name with a colon: split at the last one
    assert ComparisonSettings().with_pairs(["a", "b"], "a")[1:] == ([("a", "b")], "")  # one pair: no note
    assert ComparisonSettings(pairs="all").with_pairs(["a", "b"], "a")[2] == "pairs: the one pair of the 2 runs"
    assert ComparisonSettings(pairs="all").canonical_json() != ComparisonSettings(pairs="baseline").canonical_json()


@pytest.mark.parametrize(("text", "message"), [
    ("a", r"--pairs: 'a': expected all, baseline or REFERENCE:RUN"),
    ("a:b,:c", r"--pairs: ':c': expected"),
    ("a:a", "--pairs: a:a: a run is compared with other runs, not with itself"),
    ("a:b,b:a", "--pairs: a:b and b:a are one pair, given twice"),
])
def test_a_selection_that_is_no_pair_is_refused(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=f"^{message}"):
        ComparisonSettings(pairs=text)


def test_a_pair_naming_no_run_is_refused() -> None:
    with pytest.raises(SpecError, match="--pairs: e is none of the runs compared: a, b, c, d"):
        ComparisonSettings(pairs="a:e").with_pairs(RUNS, "a")
