"""Cutting a run's shards (transforms.shards): by position, consecutive whole queries of about a shard's size."""

from __future__ import annotations

import polars as pl

from judged.transforms.shards import position_shards, shards_of_buckets, together


def blocks(*sizes: int) -> pl.DataFrame:
    return pl.DataFrame({"query_id": [f"q{i}" for i in range(len(sizes))], "n_rows": list(sizes)})


def test_shards_are_consecutive_whole_queries_of_about_the_size() -> None:
    # 10 queries of 30 rows, 100 a shard: 300 rows make 3 shards; the cuts are the first query boundaries at or
    # after rows 100 and 200 (120 and 210).
    assert position_shards(blocks(*[30] * 10), 100)["shard"].to_list() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_a_query_larger_than_a_shard_takes_the_cuts_it_spans() -> None:
    # 540 rows make 6 shards of 90 wanted; every cut from 90 to 450 falls on the boundary after the 500-row query
    # (at row 510): one cut, two shards, none empty.
    assert position_shards(blocks(10, 500, 10, 10, 10), 100)["shard"].to_list() == [0, 0, 1, 1, 1]
    assert position_shards(blocks(5), 100)["shard"].to_list() == [0]
    assert position_shards(blocks(100, 100, 100), 100)["shard"].to_list() == [0, 1, 2]


def test_every_shard_number_is_used_in_order() -> None:
    sizes = [(i * 37) % 101 + 1 for i in range(500)]
    shard = position_shards(blocks(*sizes), 1_000)["shard"]
    assert shard.to_list() == sorted(shard.to_list())
    assert shard.unique().sort().to_list() == list(range(shard.max() + 1))
    per_shard = pl.DataFrame({"shard": shard, "n": sizes}).group_by("shard").agg(pl.col("n").sum())["n"]
    assert per_shard.max() < 1_000 + 101 and shard.max() + 1 == -(-sum(sizes) // 1_000)


def test_stretches_and_bucket_shards() -> None:
    assert together(pl.Series(["a", "b", "c"])) and not together(pl.Series(["a", "b", "a"]))
    # Buckets 1, 5 and 6 lie in shards 1, 1 and 2 of 4.
    assert shards_of_buckets(pl.Series([1, 5, 6]), 4) == {1, 2}
