"""The order in which a stored run keeps its rows, and reading back only the part of it a spec needs.

Belongs here: the stored order (trec_eval's ranking of each query: score descending, then doc_id descending by byte
order), the position bands that make a top-k read touch only the first row groups of each file, and which specs
may read only that head. A stored run's rows carry `position` (1-based, in that order) and `query_rows` (the rows
of their query in the whole run), so the first k positions of every query are a filter, not a sort of the run.
"""

from __future__ import annotations

import functools

import polars as pl

from judged.schemas.fields import QUERY
from judged.schemas.spec import EvaluationSpec
from judged.transforms.ranking import (
    STORED_ORDER, first_rows_needed, follows_stored_order, rank_run, sort_key,
)

# Rows are written band by band (positions 1-11, 12-101, 102-1001, then the rest), so a read of the first k+1
# positions skips the row groups of the later bands by their statistics.
BAND_ENDS = (11, 101, 1001)
# Slots are numbered in Polars' own index type: a gather by them takes the numbers as they are, where Int64 ones
# are converted and bounds-checked at every gather (one per column).
_INDEX = pl.get_index_type()


def _band(position: pl.Expr) -> pl.Expr:
    """The band of a position (0 for positions 1-11, ...; see BAND_ENDS)."""
    band = pl.lit(len(BAND_ENDS), pl.Int32)
    for number, end in reversed(list(enumerate(BAND_ENDS))):
        band = pl.when(position <= end).then(pl.lit(number, pl.Int32)).otherwise(band)
    return band


def in_stored_order(rows: pl.LazyFrame) -> pl.LazyFrame:
    """A run's rows (RUN contract, duplicates included) with `position`, `query_rows` and `band`, sorted by band,
    then query, then position. This is the definition of the stored order; `in_stored_order_of_ranked` gives the
    same rows in the same order when the rows are already ranked."""
    return (
        rank_run(rows, STORED_ORDER)
        .drop("sort_key")
        .rename({"rank": "position"})
        .with_columns(pl.col("position").cast(pl.Int32), query_rows=pl.len().over(QUERY).cast(pl.Int32))
        .with_columns(band=_band(pl.col("position")))
        .sort("band", maintain_order=True)  # stable: each band stays in (query, position) order
    )


def _new_stretch() -> pl.Expr:
    """True on the first row of each stretch of one query id."""
    return (pl.col(QUERY) != pl.col(QUERY).shift()).fill_null(True)


def is_ranked(rows: pl.LazyFrame) -> pl.LazyFrame:
    """One boolean, `ranked`: are the rows already as `rank_run` orders them under STORED_ORDER except, at most,
    within tie groups? That is: each query's rows form one stretch, and the sort key never grows along it. (A
    TREC run is written in rank order, so nearly every run is.)"""
    key = sort_key(STORED_ORDER)
    new_stretch = _new_stretch()
    key_grows = (~new_stretch & (key > key.shift())).any()
    stretch_queries = pl.col(QUERY).filter(new_stretch)
    return rows.select(ranked=~key_grows & (stretch_queries.n_unique() == stretch_queries.len()))


def in_stored_order_of_ranked(rows: pl.LazyFrame) -> pl.LazyFrame:
    """`in_stored_order` for rows that `is_ranked` accepts and that hold no (query_id, doc_id) pair twice
    (`transforms.duplicates.may_have_duplicates` false), without sorting the rows: the same rows in the same order.

    Why it is the same order: `rank_run` sorts each query by (sort key descending, doc_id descending). When a
    query's rows are one stretch whose key never grows, that sort only reorders each tie group (a stretch's rows of
    one key) by doc_id descending and leaves the groups where they are; with no pair twice, the doc_ids of a tie
    group differ, so that order is unique. So only the rows of tie groups are sorted (~2% of a TREC run), each put
    in the slots its group already occupies; a row's position is then its slot's offset in the stretch. Nor is the
    band-major layout (band, query, position) sorted for: within a stretch each band is one run of consecutive
    slots, so the slots in stored order are the stretches taken in query order, band by band, each run written out
    (`int_ranges`); the rows themselves are gathered once, in their final order."""
    key = sort_key(STORED_ORDER)
    tied_before = ((pl.col(QUERY) == pl.col(QUERY).shift()) & (key == key.shift())).fill_null(False)
    stretch_starts = pl.col("_slot").filter("_new")
    # Sources of the tie rows, in the order their slots take them (a group's rows are contiguous and groups follow
    # one another, so the n-th tie row of the sorted list goes to the n-th tie slot).
    tie_sources = pl.col("_slot").filter("_tied").sort_by(
        [pl.col("_tie_group").filter("_tied"), pl.col("doc_id").filter("_tied")], descending=[False, True]
    )
    tie_index = pl.when("_tied").then(pl.col("_tied").cum_sum().cast(_INDEX) - 1)  # null: not a tie row
    # The stretches in query order: where each begins and ends, and so where each of its bands does.
    by_query = pl.col(QUERY).filter("_new").arg_sort()
    starts = stretch_starts.gather(by_query)
    ends = starts + pl.col("_stretch").rle().struct.field("len").gather(by_query).cast(_INDEX)
    bands: list[pl.Expr] = []
    first = 1
    for last in (*BAND_ENDS, None):
        begin = starts + (first - 1)
        end = ends if last is None else pl.min_horizontal(ends, starts + last)
        bands.append(pl.int_ranges(begin, pl.max_horizontal(begin, end), dtype=_INDEX).explode())
        first = (last or 0) + 1
    slots_in_order = functools.reduce(pl.Expr.append, bands)
    columns = rows.collect_schema().names()
    return (
        rows.with_columns(_slot=pl.int_range(pl.len(), dtype=_INDEX), _new=_new_stretch(), _tied_before=tied_before)
        .with_columns(
            _tied=pl.col("_tied_before") | pl.col("_tied_before").shift(-1).fill_null(False),
            _stretch=pl.col("_new").cum_sum() - 1,
            _tie_group=(~pl.col("_tied_before")).cum_sum(),
        )
        .with_columns(
            _source=pl.coalesce(tie_sources.gather(tie_index), "_slot"),
            position=(pl.col("_slot") - stretch_starts.gather("_stretch") + 1).cast(pl.Int32),
            query_rows=pl.col("_stretch").rle().struct.field("len").gather("_stretch").cast(pl.Int32),
        )
        .with_columns(band=_band(pl.col("position")), _slot_in_order=slots_in_order)
        .with_columns(_order=pl.col("_source").gather("_slot_in_order"))
        .select(
            *(pl.col(name).gather("_order") for name in columns),
            *(pl.col(name).gather("_slot_in_order") for name in ("position", "query_rows", "band")),
        )
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
