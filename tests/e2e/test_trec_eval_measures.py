"""Parity of the measures beyond nDCG with trec_eval's own regression fixtures (../shared/conformance/trec_eval):
`map`, `map_cut_k`, `recip_rank`, `P_k`, `recall_k`, `Rprec`, `rbp`, `rbp_resid` and `unj_k`, per query and
`all`, under the `trec_eval` preset with the fixtures' flags (-c, -M 100, -l 2). trec_eval prints 4 decimals, so
agreement is checked to 5e-5.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from judged.flows.engine.evaluate import evaluate
from judged.flows.report.text import result_trec_eval_names
from judged.flows.store.readers import load_table
from judged.schemas.spec import PRESETS, TREC_EVAL_CUTOFFS, build_spec

TOLERANCE = 5e-5
UNJ_CUTOFFS = (5, 10, 20)


def measure_names(rel: int, with_rbp: bool) -> list[str]:
    at = "" if rel == 1 else f"(rel={rel})"
    names = [f"AP{at}", f"RR{at}", f"R-Prec{at}"]
    names += [f"AP{at}@{k}" for k in TREC_EVAL_CUTOFFS]
    names += [f"P{at}@{k}" for k in TREC_EVAL_CUTOFFS] + [f"R{at}@{k}" for k in TREC_EVAL_CUTOFFS]
    names += [f"Judged(convention=trec_eval)@{k}" for k in UNJ_CUTOFFS]
    return names + ([f"RBP(p=0.9{'' if rel == 1 else f',rel={rel}'})"] if with_rbp else [])


def expected_values(path: Path, names: set[str]) -> dict[tuple[str, str], float]:
    expected = {}
    for line in path.read_text().splitlines():
        measure, query, value = line.split()
        if measure in names:
            expected[(measure, query)] = float(value)
    return expected


def computed_values(qrels: Path, run: Path, rel: int, with_rbp: bool, **options: object) -> dict[tuple[str, str], float]:
    spec = build_spec("trec_eval", measures=measure_names(rel, with_rbp)).with_options(**options)
    result = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), spec)
    trec_names = result_trec_eval_names(result)  # RBP's depends on the judgments' grades

    def name_of(family: str, cutoff: int | None) -> str:
        name = trec_names[family, cutoff]
        return name if name is not None else f"unj_{cutoff}"  # Judged(convention=trec_eval) = 1 - unj_k

    def shown(family: str, value: float) -> float:
        return 1.0 - value if family.startswith("Judged") else value

    values = {}
    for row in result.per_query.iter_rows(named=True):
        values[(name_of(row["measure"], row["cutoff"]), row["query_id"])] = shown(row["measure"], row["value"])
        if row["residual"] is not None:
            values[("rbp_resid", row["query_id"])] = row["residual"]
    for row in result.summary.iter_rows(named=True):
        values[(name_of(row["measure"], row["cutoff"]), "all")] = shown(row["measure"], row["value"])
    if with_rbp:  # trec_eval's `all` line of rbp_resid is the mean of the per-query residuals
        residuals = [v for (name, query), v in values.items() if name == "rbp_resid" and query != "all"]
        values[("rbp_resid", "all")] = sum(residuals) / len(residuals)
    return values


CASES = {
    # expected output, qrels, run, relevance threshold (-l), rbp comparable, extra options (trec_eval flags)
    "aq": ("out.test.aq", "qrels.test", "results.test", 1, True, {}),
    "aqc": ("out.test.aqc", "qrels.test", "results.trunc", 1, True, {}),
    "aqcM": ("out.test.aqcM", "qrels.test", "results.trunc", 1, True, {"depth": 100}),
    # qrels.rel_level has grades 0-4 (trec_eval's rbp scales graded gains, ours is binary) and -1 (an unjudged
    # document for trec_eval's residual, a judged non-relevant one here): rbp is compared on binary judgments only.
    "aql": ("out.test.aql", "qrels.rel_level", "results.test", 2, False, {}),
}
TREC_NAMES = (
    {"map", "recip_rank", "Rprec", "rbp", "rbp_resid"}
    | {f"{base}_{k}" for base in ("map_cut", "P", "recall") for k in TREC_EVAL_CUTOFFS}
    | {f"unj_{k}" for k in UNJ_CUTOFFS}
)


@pytest.mark.parametrize("case", list(CASES))
def test_measures_match_trec_eval_fixture(shared: Path, case: str) -> None:
    output, qrels, run, rel, with_rbp, options = CASES[case]
    fixtures = shared / "conformance" / "trec_eval"
    names = TREC_NAMES if with_rbp else TREC_NAMES - {"rbp", "rbp_resid"}
    expected = expected_values(fixtures / output, names)
    computed = computed_values(fixtures / qrels, fixtures / run, rel, with_rbp, **options)
    # 3 + 3 * 9 + 3 names (+ rbp, rbp_resid), for 3 queries and `all`
    assert len(expected) == (len(names)) * 4
    mismatches = {key: (value, computed.get(key)) for key, value in expected.items()
                  if computed.get(key) is None or abs(computed[key] - value) > TOLERANCE}
    assert not mismatches


def test_default_preset_is_unchanged_by_measures_listing_ndcg(shared: Path) -> None:
    """nDCG listed as a measure gives the bits of nDCG at the same cutoffs given as cutoffs."""
    fixtures = shared / "conformance" / "trec_eval"
    run, qrels = load_table(fixtures / "results.test", "run"), load_table(fixtures / "qrels.test", "judgments")
    by_cutoffs = evaluate(run, qrels, PRESETS["trec_eval"].with_options(cutoffs=(5, 10, None)))
    by_measures = evaluate(run, qrels, build_spec("trec_eval", measures="nDCG@5,nDCG@10,nDCG"))
    assert by_measures.per_query.equals(by_cutoffs.per_query)
    assert by_measures.summary.equals(by_cutoffs.summary)
