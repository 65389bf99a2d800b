"""The order in which a stored run keeps its rows, and reading back only the part of it a spec needs.

Belongs here: the stored order (trec_eval's ranking of each query: score descending, then doc_id descending by byte
order), the position bands that make a top-k read touch only the first row groups of each file, and which specs
may read only that head. A stored run's rows carry `position` (1-based, in that order) and `query_rows` (the rows
of their query in the whole run), so the first k positions of every query are a filter, not a sort of the run.
"""

from __future__ import annotations

import polars as pl

from judged.schemas.spec import EvaluationSpec
from judged.transforms.ranking import QUERY, STORED_ORDER, first_rows_needed, follows_stored_order, rank_run

# Rows are written band by band (positions 1-11, 12-101, 102-1001, then the rest), so a read of the first k+1
# positions skips the row groups of the later bands by their statistics.
BAND_ENDS = (11, 101, 1001)


def in_stored_order(rows: pl.LazyFrame) -> pl.LazyFrame:
    """A run's rows (RUN contract, duplicates included) with `position`, `query_rows` and `band`, sorted by band,
    then query, then position."""
    band = pl.lit(len(BAND_ENDS), pl.Int32)
    for number, end in reversed(list(enumerate(BAND_ENDS))):
        band = pl.when(pl.col("position") <= end).then(pl.lit(number, pl.Int32)).otherwise(band)
    return (
        rank_run(rows, STORED_ORDER)
        .drop("sort_key")
        .rename({"rank": "position"})
        .with_columns(pl.col("position").cast(pl.Int32), query_rows=pl.len().over(QUERY).cast(pl.Int32))
        .with_columns(band=band)
        .sort("band", maintain_order=True)  # stable: each band stays in (query, position) order
    )


def head_positions(spec: EvaluationSpec) -> int | None:
    """How many first positions of each query in the stored order decide every value and count of the spec, or
    None when the stored order does not apply (another ranking or tie rule, or all rows matter). One position
    past the deepest cutoff shows whether a tie group straddles it; under ties='docid_desc' the members beyond it
    never count."""
    needed = first_rows_needed(spec)
    return needed + 1 if follows_stored_order(spec) and needed is not None else None


def head_rows(stored: pl.LazyFrame, positions: int) -> pl.LazyFrame:
    """The first `positions` rows of each query of a stored run, with `query_rows`."""
    return stored.filter(pl.col("position") <= positions)
