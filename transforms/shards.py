"""Sharding by query: every table is split by a stable hash of the query id, so a shard of a run and the matching
judgments can be evaluated alone (and on different machines), and the results concatenate to the whole.

The bucket of a query is crc32(query_id) mod 1024, stable across versions of every library; a table with S shards
(S a power of two, at most 1024) puts bucket b in shard b mod S. Two tables with different shard counts still
match: shard s of S holds exactly the buckets b with b mod S = s.
"""

from __future__ import annotations

import zlib

import polars as pl

BUCKETS = 1024


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
