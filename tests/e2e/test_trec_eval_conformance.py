"""Parity with trec_eval's own regression fixtures (../shared/conformance/trec_eval) under the `trec_eval` preset.

Expected values are trec_eval's printed output (4 decimals), so agreement is checked to 5e-5.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from judged.flows.engine.evaluate import evaluate
from judged.flows.store.readers import load_table
from judged.schemas.spec import PRESETS, TREC_EVAL_CUTOFFS

SPEC = PRESETS["trec_eval"].with_options(cutoffs=(*TREC_EVAL_CUTOFFS, None))


def expected_ndcg(path: Path) -> dict[tuple[str, str], float]:
    """(measure, query or 'all') -> value, for `ndcg` and `ndcg_cut_*` lines of a trec_eval -q output."""
    expected = {}
    for line in path.read_text().splitlines():
        measure, query, value = line.split()
        if measure == "ndcg" or measure.startswith("ndcg_cut_"):
            expected[(measure, query)] = float(value)
    return expected


def computed_ndcg(qrels: Path, run: Path, **options: object) -> dict[tuple[str, str], float]:
    spec = SPEC.with_options(**options)
    result = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), spec)
    values = {
        (spec.trec_eval_name(row["cutoff"]), row["query_id"]): row["value"]
        for row in result.per_query.iter_rows(named=True)
    }
    values |= {(spec.trec_eval_name(row["cutoff"]), "all"): row["value"] for row in result.summary.iter_rows(named=True)}
    return values


CASES = {
    # expected output, qrels, run, extra options (trec_eval flags)
    "aq": ("out.test.aq", "qrels.test", "results.test", {}),
    "aq-with-comments": ("out.test.aq", "qrels.test.with-comments", "results.test", {}),
    "aqc": ("out.test.aqc", "qrels.test", "results.trunc", {}),
    "aqcM": ("out.test.aqcM", "qrels.test", "results.trunc", {"depth": 100}),
    "aql": ("out.test.aql", "qrels.rel_level", "results.test", {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_trec_eval_fixture(shared: Path, case: str) -> None:
    output, qrels, run, options = CASES[case]
    fixtures = shared / "conformance" / "trec_eval"
    expected = expected_ndcg(fixtures / output)
    computed = computed_ndcg(fixtures / qrels, fixtures / run, **options)
    assert len(expected) == 40  # ndcg + 9 cutoffs, for 3 queries and `all`
    mismatches = {key: (value, computed.get(key)) for key, value in expected.items()
                  if computed.get(key) is None or abs(computed[key] - value) > 5e-5}
    assert not mismatches


def test_comments_in_qrels_change_nothing(shared: Path) -> None:
    fixtures = shared / "conformance" / "trec_eval"
    plain = computed_ndcg(fixtures / "qrels.test", fixtures / "results.test")
    commented = computed_ndcg(fixtures / "qrels.test.with-comments", fixtures / "results.test")
    assert plain == commented
