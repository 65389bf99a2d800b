"""Intervals on every official TREC DL 2019 and 2020 passage run in ../shared/data: each scored query's value lies
in its interval (grade 0 is in the scale, so "unjudged = 0" is one of the assignments), most rows are exact, and the summary's interval is the mean of the per-query ends."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from judged.flows.engine.evaluate import evaluate
from judged.flows.store.readers import load_table
from judged.schemas.spec import PRESETS

SPEC = PRESETS["trec_eval"].with_options(cutoffs=(10, 100))
YEARS = {2019: "qrels.dl19-passage.txt", 2020: "qrels.dl20-passage.txt"}


@pytest.mark.parametrize("year", sorted(YEARS))
def test_official_runs_get_intervals(shared: Path, year: int) -> None:
    folder = shared / "data" / f"trec-dl-{year}-passage"
    judgments = load_table(folder / YEARS[year], "judgments")
    runs = sorted((folder / "runs").glob("input.*.gz"))
    assert runs
    for path in runs:
        result = evaluate(load_table(path, "run"), judgments, SPEC)
        scored = result.per_query.filter(pl.col("value").is_not_null())
        assert scored.height > 0 and scored["value_min"].null_count() == 0, path.name
        assert (scored["value_min"] <= scored["value"] + 1e-12).all(), path.name
        assert (scored["value"] <= scored["value_max"] + 1e-12).all(), path.name
        # Only each query's first 100 rows are read (a top-k read): a row is a bound where the unread rows could
        # hold a number of unjudged documents that matters (deeply judged queries); most rows are exact.
        exact = (scored["interval_kind"] == "exact").mean()
        assert exact >= 0.75, (path.name, exact)
        unscored = result.per_query.filter(pl.col("value").is_null())
        assert unscored["value_min"].null_count() == unscored.height, path.name
        for row in result.summary.iter_rows(named=True):
            at = scored.filter(pl.col("cutoff") == row["cutoff"])
            assert row["value_min"] == pytest.approx(at["value_min"].mean(), abs=1e-12)
            assert row["value_max"] == pytest.approx(at["value_max"].mean(), abs=1e-12)
