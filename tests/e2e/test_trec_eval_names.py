"""Every trec_eval name judged prints is one trec_eval prints for the same number: `judged evaluate --format trec`
lines checked against trec_eval's own regression fixtures (../shared/conformance/trec_eval), with the fixtures'
flags (-c, -M 100, -l 2). A measure whose number trec_eval prints under no name (RBP on graded judgments, a second
measure under a name already printed) prints under our label instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from judged.flows.engine.evaluate import evaluate
from judged.flows.report.text import as_trec
from judged.flows.store.readers import load_table
from judged.schemas.spec import TREC_EVAL_CUTOFFS, build_spec

TOLERANCE = 5e-5  # trec_eval prints 4 decimals


def measures_at(rel: int) -> list[str]:
    at = "" if rel == 1 else f"(rel={rel})"
    names = [f"AP{at}", f"RR{at}", f"R-Prec{at}"]
    return names + [f"{m}{at}@{k}" for m in ("AP", "P", "R") for k in TREC_EVAL_CUTOFFS]


def measure_list(rel: int) -> list[str]:
    """The fixture's threshold first, then the other one (trec_eval's names taken: our labels), nDCG, and RBP at
    trec_eval's p and at ir_measures'."""
    other = 2 if rel == 1 else 1
    ndcg = ["nDCG"] + [f"nDCG@{k}" for k in TREC_EVAL_CUTOFFS]
    return measures_at(rel) + measures_at(other) + ndcg + ["RBP(p=0.9)", "RBP(p=0.8)"]


CASES = {
    # trec_eval's output, qrels, run, relevance threshold (-l), binary judgments, options (trec_eval's flags)
    "aq": ("out.test.aq", "qrels.test", "results.test", 1, True, {}),
    "aqc": ("out.test.aqc", "qrels.test", "results.trunc", 1, True, {}),
    "aqcM": ("out.test.aqcM", "qrels.test", "results.trunc", 1, True, {"depth": 100}),
    "aql": ("out.test.aql", "qrels.rel_level", "results.test", 2, False, {}),
}


def lines_of(text: str) -> dict[tuple[str, str], str]:
    lines = {}
    for line in text.splitlines():
        name, query, value = line.split()
        assert (name, query) not in lines, f"{name} {query} printed twice"
        lines[(name, query)] = value
    return lines


@pytest.mark.parametrize("case", list(CASES))
def test_every_trec_eval_name_printed_is_trec_eval_s_number(shared: Path, case: str) -> None:
    output, qrels, run, rel, binary, options = CASES[case]
    fixtures = shared / "conformance" / "trec_eval"
    expected = lines_of((fixtures / output).read_text())
    spec = build_spec("trec_eval", measures=measure_list(rel)).with_options(**options)
    result = evaluate(load_table(fixtures / run, "run"), load_table(fixtures / qrels, "judgments"), spec,
                      intervals=False)
    printed = lines_of(as_trec([result]))
    trec_names = {name for name, _ in printed if "[" not in name and name not in ("runid", "num_q")}
    # rbp_p=0.8 is trec_eval's `-m rbp.p=0.8`, which its fixtures do not run.
    checked = trec_names - {"rbp_p=0.8"}
    assert checked <= {name for name, _ in expected}, checked - {name for name, _ in expected}
    mismatches = {
        (name, query): (value, expected.get((name, query)))
        for (name, query), value in printed.items()
        if name in checked and (
            (name, query) not in expected or abs(float(value) - float(expected[name, query])) > TOLERANCE)
    }
    assert not mismatches
    # Each of these trec_eval names is printed, once, for the fixture's threshold: the other threshold's labels.
    wanted = {"map", "recip_rank", "Rprec", "ndcg"} | {
        f"{base}_{k}" for base in ("map_cut", "P", "recall", "ndcg_cut") for k in TREC_EVAL_CUTOFFS
    }
    assert wanted <= trec_names
    other = 2 if rel == 1 else 1
    assert any(n.startswith(("AP[" if other == 1 else f"AP(rel={other})[")) for n, _ in printed)
    if binary:
        assert {"rbp", "rbp_resid", "rbp_p=0.8"} <= trec_names
    else:
        # trec_eval's rbp takes graded gains here; judged's binary RBP is another number, under our label.
        assert not {"rbp", "rbp_resid", "rbp_p=0.8"} & trec_names
        (ours,) = [value for (n, query), value in printed.items()
                   if n.startswith("RBP(p=0.9)[") and not n.endswith(":residual") and query == "all"]
        assert abs(float(ours) - float(expected["rbp", "all"])) > TOLERANCE
