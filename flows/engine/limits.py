"""The sizes that choose how an evaluation or an ingest runs, never what it computes.

Belongs here: `Limits`, one frozen object holding every threshold that picks a path (in memory or streamed, whole or
in parts, how many parts), passed in by whoever runs the work. Every path gives the same rows and values; the limits
only bound memory and choose the faster engine. Tests pass their own, smaller limits to take the paths that large
inputs take. Nothing heavy is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Thresholds and part sizes, each with why it has its default (measured figures: benchmarks/README.md)."""

    # Stored-run heads evaluated together: a part's heads and their working state stay within a few hundred MiB.
    head_rows_per_part: int = 4_000_000
    # Judgments evaluated with one part: joined and ranked for the ideal, a part's judgments take several times
    # their size, so a large judgment set is split (24M judgments take 16 parts).
    judgment_rows_per_part: int = 2_000_000
    # Up to this many first rows per query, Polars' streaming engine finds the candidates of a run held in memory
    # faster than the in-memory engine, and computes the per-query rows from them in less memory; for deeper heads
    # or whole lists it is slower.
    streamed_candidates_max_k: int = 100
    # The candidates of a run held in memory are found a part of about this many rows at a time (whole stretches
    # of one query id each): beside the rows, only one part's working state is held.
    candidate_part_rows: int = 1_000_000
    # The candidates of a scanned run (text too large to parse in memory, Parquet) are found a batch of about this
    # many rows at a time, read in one streaming pass: beside the candidates, only a batch or two are held.
    streamed_candidate_part_rows: int = 1_000_000
    # A Parquet run of up to this many rows (counted from the file's metadata) is read whole in one streaming
    # pass, which is faster than batches but holds memory in proportion to the rows: up to this count it stays
    # well under the direct paths' 2 GiB bound (benchmarks/README.md, M's Parquet file). A larger one, and text
    # too large to parse in memory, are read in batches as above.
    whole_scan_rows: int = 10_000_000
    # A scanned run's candidates are turned into per-query rows a group of about this many at a time: a top-10
    # spec at 49M rows keeps about 0.5M candidates (one group, as if held whole); a spec that reads whole lists
    # keeps every row, and then two groups' candidates and one group's working state are held. Groups of a few
    # queries would not do: Polars computes some per-query quotients an ulp apart in small frames.
    scanned_candidate_rows: int = 1_000_000
    # Rows per stored shard at ingest: by bucket, the shard count is the power of two that keeps shards about this
    # size; by position, each shard is cut at the first query boundary past its share (transforms/shards.py).
    rows_per_shard: int = 1_000_000
    # Text inputs up to this size are parsed in memory (fastest); larger ones are scanned in a streaming pass
    # (a gzipped file counts four times its size).
    in_memory_text_bytes: int = 1 << 30
    # Plain text is parsed in pieces of about this size, so the file's bytes are never held whole beside the rows.
    # It stays below glibc's largest mmap threshold (32 MB), so each piece reuses the memory of the one before.
    text_piece_bytes: int = 16 << 20
    # A run stored by bucket of up to this many rows is split into shards in memory at ingest (about 1 GiB at 10M
    # rows); a larger one is spilled by shard in one streaming pass. A run stored by position, and large judgment
    # sets, stream in batches of `sink_batch_rows` (a run's query ids too, to see whether its queries lie together).
    in_memory_sink_rows: int = 10_000_000
    sink_batch_rows: int = 2_000_000
    # Rows per record batch of that spill: each shard's open file buffers up to a batch, so the spill holds about
    # shards x this many rows beside the stream, whatever the shard count (Polars' default batches grow with the
    # rows and, at hundreds of shards, past the ingest's memory bound: benchmarks/README.md, XL).
    spill_batch_rows: int = 16_384
    # Shards of a run put in stored order and written at once, each in its own thread: Polars' Parquet writer and
    # most of the ordering run on one core, so two keep both cores busy (and hold two shards in memory).
    shard_writers: int = 2
    # A run ingested on a Dask cluster (`ingest-run --dask`) is read in pieces of about this many bytes (text) or
    # rows (Parquet, whole row groups), cut at query boundaries, one piece per task: each worker parses its piece in
    # memory (a few times its size), and its shards are written by groups of about the same size.
    piece_bytes: int = 256 << 20
    piece_rows: int = 4_000_000

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive integer, not {value!r}")


DEFAULT_LIMITS = Limits()
