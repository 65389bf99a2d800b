"""The tie warning: tie groups straddling a cutoff in more than a declared share of the scored queries, named with
the share and the mean under every tie rule. DoRA_Large of the bundled TREC DL 2020 sample is the real case."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.engine.ties import straddled_cutoffs
from tests.conftest import SAMPLE

QRELS = SAMPLE / "qrels.dl20-passage.txt"
DORA = SAMPLE / "runs" / "input.DoRA_Large.gz"


def warnings_of(*args: str) -> list[str]:
    result = CliRunner().invoke(app, ["evaluate", str(QRELS), str(DORA), "--preset", "trec_eval", "--cutoffs", "10",
                                      "--format", "json", *args])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["evaluations"][0]["warnings"]


def test_dora_large_ties_decide_ndcg_at_10() -> None:
    # 34 of DoRA_Large's 54 judged queries have a tie group across position 10. NDCG@10 under each tie rule, with
    # every other option of the trec_eval preset: docid_desc 0.0414 (trec_eval's, NIST's published ndcg_cut_10),
    # docid_asc 0.0365, average 0.0376 (`judged evaluate ... --ties RULE`).
    (tie,) = [w for w in warnings_of() if w.startswith("ties straddle")]
    assert tie == ("ties straddle the cutoff in more than 10% of the scored queries, so the tie rule moves the "
                   "result: nDCG@10 in 34 of 54 scored queries (63%), mean 0.0365 to 0.0414 "
                   "(docid_desc 0.0414, docid_asc 0.0365, average 0.0376)")


def test_the_share_is_declared() -> None:
    assert not [w for w in warnings_of("--tie-warning-share", "0.7") if w.startswith("ties straddle")]  # 63% < 70%
    result = CliRunner().invoke(app, ["evaluate", str(QRELS), str(DORA), "--tie-warning-share", "2"])
    assert result.exit_code == 2
    assert result.stderr == "judged: error: --tie-warning-share must be a number from 0 to 1, not '2'\n"


def test_straddled_cutoffs_count_scored_queries_only() -> None:
    per_query = pl.DataFrame({
        "query_id": ["a", "b", "c", "d", "a", "b", "c", "d"],
        "measure": ["nDCG"] * 8,
        "cutoff": [1, 1, 1, 1, 5, 5, 5, 5],
        "status": ["scored", "scored", "scored", "no_judgments"] * 2,
        "ties_straddling_k": [1, 0, 0, 3, 0, 0, 0, 2],
    })
    # @1: 1 of the 3 scored queries (33%) > 10%; @5: none of the scored ones (d has no judgments).
    assert straddled_cutoffs(per_query, 0.10).rows() == [("nDCG", 1, 3, 1)]
    assert straddled_cutoffs(per_query, 0.40).height == 0


@pytest.mark.slow
def test_every_measure_the_tie_rule_moves_is_named_under_measures() -> None:
    # A list with a measure other than nDCG still shows nDCG's mean under `average` (defined for nDCG only), and a
    # measure of the whole list (AP: no k to straddle) is named where another rule moves its value.
    result = CliRunner().invoke(app, ["evaluate", str(QRELS), str(DORA), "--preset", "trec_eval", "--measures",
                                      "nDCG@10,Judged@10,AP", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    warnings = json.loads(result.stdout)["evaluations"][0]["warnings"]
    (tie,) = [w for w in warnings if w.startswith("ties ")]
    assert tie.startswith("ties straddle the cutoff or reorder the list in more than 10% of the scored queries, so "
                          "the tie rule moves the result: ")
    parts = tie.split(": ", 1)[1].split("; ")
    assert parts[0] == ("nDCG@10 in 34 of 54 scored queries (63%), mean 0.0365 to 0.0414 "
                        "(docid_desc 0.0414, docid_asc 0.0365, average 0.0376)")
    assert parts[1] == ("Judged@10 in 34 of 54 scored queries (63%), mean 0.6333 to 0.9815 "
                        "(docid_desc 0.6333, docid_asc 0.9815)")
    assert parts[2].startswith("AP (whole list, no k to straddle) moves in ")
    assert len(parts) == 3
