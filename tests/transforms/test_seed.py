"""The seed fixture of SPEC section 2, by hand: one query, candidates graded 3, 0, 2 in returned order."""

from __future__ import annotations

import math

import polars as pl
import pytest

from judged.schemas.spec import PRESETS
from judged.transforms.measures import per_query_values as per_query_ndcg
from judged.transforms.summary import summarize

RUN = pl.LazyFrame(
    {
        "query_id": ["q1"] * 3,
        "doc_id": ["d1", "d2", "d3"],
        "source_rank": [1, 2, 3],
        "score": [3.0, 2.0, 1.0],
        "run_tag": ["seed"] * 3,
        "source_line": [1, 2, 3],
    }
)
JUDGMENTS = pl.LazyFrame(
    {"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "relevance": [3, 0, 2], "source_line": [1, 2, 3]},
    schema_overrides={"relevance": pl.Int32},
)


@pytest.mark.parametrize("preset_name", list(PRESETS))
def test_seed_values_under_every_preset(preset_name: str) -> None:
    spec = PRESETS[preset_name].with_options(cutoffs=(1, 2, 3))
    rows = per_query_ndcg(RUN, JUDGMENTS, spec).collect()
    values = dict(zip(rows["cutoff"], rows["value"]))
    idcg3 = 3 + 2 / math.log2(3)  # ideal order 3, 2, 0: 4.261860
    assert values[1] == pytest.approx(1.0, abs=1e-6)  # 3 / 3
    assert values[2] == pytest.approx(3 / (3 + 2 / math.log2(3)), abs=1e-6)  # 0.703918
    assert values[2] == pytest.approx(0.703918, abs=1e-6)
    assert values[3] == pytest.approx(4 / idcg3, abs=1e-6)  # DCG 3 + 0 + 2/log2(4) = 4
    assert values[3] == pytest.approx(0.938557, abs=1e-6)
    assert rows["dcg"].to_list() == pytest.approx([3.0, 3.0, 4.0])
    assert rows["status"].to_list() == ["scored"] * 3


def test_seed_evidence_columns() -> None:
    spec = PRESETS["judged"].with_options(cutoffs=(1, 2, 3, None))
    rows = per_query_ndcg(RUN, JUDGMENTS, spec).collect()
    assert rows["cutoff"].to_list() == [1, 2, 3, None]
    assert rows["n_relevant_at_k"].to_list() == [1, 1, 2, 2]
    assert rows["n_nonrelevant_at_k"].to_list() == [0, 1, 1, 1]
    assert rows["n_unjudged_at_k"].to_list() == [0, 0, 0, 0]
    assert rows["n_retrieved"].to_list() == [3, 3, 3, 3]
    summary = summarize(rows.lazy(), spec).collect()
    assert summary["value"].to_list() == pytest.approx([1.0, 0.703918, 0.938557, 0.938557], abs=1e-6)
    assert summary["n_scored"].to_list() == [1, 1, 1, 1]
