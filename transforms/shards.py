"""Sharding by query: a stored table is split into shards of whole queries, so a shard of a run and the judgments of
its queries can be evaluated alone (and on different machines), and the results concatenate to the whole.

Belongs here: the two ways a run's shards are cut (`RunLayout`) and the pure functions that cut them. Where the rows
come from and how the files are written is the store's (flows/store/warehouse.py).

By bucket (every judgment set; a run whose queries are scattered over its file; every run stored before layouts):
the bucket of a query is crc32(query_id) mod 1024, stable across versions of every library; a table with S shards
(S a power of two, at most 1024) puts bucket b in shard b mod S. Two tables with different shard counts still match:
shard s of S holds exactly the buckets b with b mod S = s. A shard holds queries from the whole file, so none can be
written before the last row is read.

By position (a run whose queries each lie in one stretch of the file: nearly every TREC run): shard s is a stretch of
consecutive whole queries of about `rows_per_shard` rows, cut at query boundaries (`position_shards`), so each can
be written as the file streams past. Its queries are listed with it, and the judgments of a shard are found by a
semi-join on that list, not by a shared bucket function.
"""

from __future__ import annotations

import zlib
from enum import Enum

import polars as pl

BUCKETS = 1024


class RunLayout(Enum):
    """How a stored run's shards are cut (its record's `layout`)."""

    BUCKET = "bucket"  # by crc32 bucket of the query id: shard s of S holds the buckets b with b mod S = s
    POSITION = "position"  # by position in the file: shard s is the s-th stretch of consecutive whole queries


def _crc32_bucket(query_id: str) -> int:
    return zlib.crc32(query_id.encode()) % BUCKETS


def query_buckets(queries: pl.LazyFrame) -> pl.LazyFrame:
    """(query_id, bucket) for each distinct query id. The hash runs once per distinct query (thousands), not per
    row (millions)."""
    return (
        queries.select("query_id")
        .unique()
        .with_columns(bucket=pl.col("query_id").map_elements(_crc32_bucket, return_dtype=pl.Int32))
    )


def with_bucket(table: pl.LazyFrame) -> pl.LazyFrame:
    """Add `bucket` to every row."""
    return table.join(query_buckets(table), on="query_id", how="left", maintain_order="left")


def shard_count(n_rows: int, rows_per_shard: int) -> int:
    """Shards for a table of n_rows: a power of two giving at most about rows_per_shard rows each (up to BUCKETS)."""
    shards = 1
    while shards < BUCKETS and n_rows > shards * rows_per_shard:
        shards *= 2
    return shards


def in_shard(shard: int, of: int) -> pl.Expr:
    """Rows (with `bucket`) that belong to shard `shard` of `of`."""
    return (pl.col("bucket") % of) == shard


def shards_of_buckets(buckets: pl.Series, shards: int) -> set[int]:
    """The shards of a table stored by bucket in `shards` shards that hold these buckets."""
    return set((buckets % shards).unique().to_list())


def position_shards(blocks: pl.DataFrame, rows_per_shard: int) -> pl.DataFrame:
    """`blocks` (`query_id`, `n_rows`: each query's rows, one block per query, in the order of the file) with the
    `shard` each block goes to: consecutive blocks, cut at a block boundary, into as many shards as give about
    `rows_per_shard` rows each. The k-th cut is the first block boundary at or after k/n of the rows, so the shards
    are even when the queries are small beside them; a query larger than that takes a shard of its own (and the
    cuts it spans collapse into one, so no shard is empty)."""
    sizes = blocks["n_rows"].cast(pl.Int64)
    starts = sizes.cum_sum() - sizes  # each block's first row
    shards, _ = shards_at(starts, cut_targets(int(sizes.sum()), rows_per_shard))
    return blocks.with_columns(shard=shards)


def cut_targets(total_rows: int, rows_per_shard: int) -> pl.Series:
    """The rows `position_shards` cuts a run of `total_rows` rows at (each cut at the first block boundary at or
    after its target)."""
    wanted = max(1, -(-total_rows // rows_per_shard))
    return pl.Series([total_rows * k // wanted for k in range(1, wanted)], dtype=pl.Int64)


def shards_at(
    starts: pl.Series, targets: pl.Series, before: tuple[int, int] = (0, 0)
) -> tuple[pl.Series, tuple[int, int]]:
    """The shard of each block, from its first row (`starts`, ascending; the file's first block starts at 0) and the
    `cut_targets`: a block starts a new shard when a target lies after the previous block's start and at or before
    its own (targets past the last block's start cut nothing). The blocks may come a stretch at a time: `before`
    is (targets at or before the start, shard) of the block before the first of `starts`, and the same pair of the
    last block is returned with the shards, to be passed with the next stretch."""
    passed = targets.search_sorted(starts, side="right").cast(pl.Int64)
    opens = pl.concat([pl.Series([before[0]], dtype=pl.Int64), passed]).diff().drop_nulls() > 0
    shards = (opens.cast(pl.Int32).cum_sum() + before[1]).cast(pl.Int32)
    return shards, ((int(passed[-1]), int(shards[-1])) if starts.len() else before)


def together(stretch_queries: pl.Series) -> bool:
    """Whether each query's rows form one stretch, given the query id of every stretch (of consecutive rows of one
    query id) in order: no id occurs in two stretches."""
    return stretch_queries.n_unique() == stretch_queries.len()

