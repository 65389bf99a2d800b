"""Summary tables that fit an 80-column terminal without cutting a header, and a warning every run shares printed
once."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from judged.flows.engine.evaluate import evaluate
from judged.flows.store.readers import load_table
from judged.flows.report.text import print_tables
from judged.schemas.spec import PRESETS
from tests.conftest import SAMPLE

HEADER_WORDS = ["measure", "value", "scored", "missing", "undefined", "no", "judgments", "unjudged", "share"]


def printed(results: list, width: int) -> str:
    out = io.StringIO()
    print_tables(results, Console(file=out, width=width, force_terminal=True, no_color=True, legacy_windows=False))
    return re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())


@pytest.mark.slow  # two DL 2020 runs at every trec_eval cutoff
def test_dl_tables_fit_80_columns_with_whole_headers_and_shared_warnings_once() -> None:
    judgments = load_table(SAMPLE / "qrels.dl20-passage.txt", "judgments")
    runs = [load_table(SAMPLE / "runs" / f"input.{name}.gz", "run") for name in ("p_bm25", "pash_r3")]
    results = [evaluate(run, judgments, PRESETS["trec_eval"]) for run in runs]  # cutoffs 5 .. 1000
    text = printed(results, 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    words = set(re.findall(r"[a-z_]+", " ".join(line for line in text.splitlines() if line.startswith("measure"))))
    assert set(HEADER_WORDS) <= words  # every header word whole (no "unjudge…")
    assert "…" not in text
    assert "ndcg_cut_1000" in text  # measure names whole
    # DL 2020: 146 of the 200 queries in each run have no judgments; said once, for both runs.
    assert text.count("146 queries of the run have no judgments") == 1
    assert "warning (all 2 runs): 146 queries of the run have no judgments (never scored)" in text
