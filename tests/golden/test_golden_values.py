"""The golden values: every case of tests/golden/values.py recomputed and compared with the values stored for the
current METHOD_VERSION (text and counts exactly, floats to 1e-12). A difference means the method's values changed:
bump METHOD_VERSION and regenerate (see tests/golden/values.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judged.schemas.provenance import METHOD_VERSION
from tests.golden.values import CASES, REGENERATE, compute, differences, dumps, golden_file, read_golden, same


@pytest.fixture(scope="module")
def golden() -> dict:
    return read_golden()


# The comparison and the worklists of the DL 2020 runs (permutations, resamples and what-if intervals over three
# runs) cost as much as the other cases together: CI computes them, the fast loop keeps the other cases.
SLOW_CASES = {"dl2020/comparison", "dl2020/worklists"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_CASES else name
                                  for name in CASES])
def test_the_method_still_computes_its_golden_values(golden: dict, name: str, request: pytest.FixtureRequest) -> None:
    needs_shared, _ = CASES[name]
    shared = request.getfixturevalue("shared") if needs_shared else None
    assert name in golden, f"{golden_file().name} has no case {name!r}: {REGENERATE}"
    changed = differences(golden[name], compute(name, shared))
    assert not changed, (f"{len(changed)} values of {name} differ from {golden_file().name} (first: {changed[0]}): "
                         f"{REGENERATE}")


def test_the_golden_file_belongs_to_the_current_method_version() -> None:
    assert json.loads(golden_file().read_text())["method_version"] == METHOD_VERSION
    assert [path.name for path in golden_file().parent.glob("values-*.json")] == [golden_file().name]


def test_a_changed_value_is_found_and_named() -> None:
    stored = {"summary": {"columns": ["measure", "value", "n_scored"], "rows": [["AP", 0.25, 3]]}}
    assert differences(stored, stored) == []
    nudged = {"summary": {"columns": ["measure", "value", "n_scored"], "rows": [["AP", 0.25 + 1e-11, 3]]}}
    assert differences(stored, nudged) == ["summary row 0 {'measure': 'AP', 'value': 0.25, 'n_scored': 3}: "
                                           "value 0.25 -> 0.25000000001"]
    assert differences(stored, {"summary": {**stored["summary"], "rows": [["AP", 0.25, 4]]}})
    assert same(0.25, 0.25 + 1e-13) and not same(1, 1.0) and not same(None, 0.0)


def test_a_missing_golden_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="bump METHOD_VERSION .* and regenerate"):
        read_golden("999")


def test_the_file_is_one_row_per_line_and_reads_back() -> None:
    cases = {"c": {"t": {"columns": ["a", "b"], "rows": [[1, 0.5], [2, None]]}}}
    text = dumps(cases)
    assert json.loads(text) == {"method_version": METHOD_VERSION, "cases": cases}
    assert '    [1, 0.5],\n    [2, null]\n' in text
