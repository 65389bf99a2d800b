"""A run ingested in pieces by the workers of a cluster (`judged ingest-run --dask`), stored byte for byte as a local
ingest stores it (same run id, same part files, same record).

Belongs here: the file and byte handling of that route. Cutting a run file into pieces at query boundaries
(`cut_pieces`: text by byte ranges whose starts are moved forward to the next line that begins a new query;
Parquet by row groups, a boundary moved forward to the next row that begins a query); what a worker finds
in its piece (`survey_piece`: its query stretches, where each begins, its lines and tags, or its first problem);
the driver's plan from those surveys (`plan_pieces`: the whole file's first problem, or the same shards
`position_plan` cuts for a local ingest, regrouped into windows of whole shards); and a worker writing its
window's shards (`write_shard_group`, through `write_position_parts`, as the local route writes them). The tasks
and the flow that run these on the cluster are flows/pipeline's; publishing (staging, rename, record last) is
`Store.store_by_position`'s.

Every piece is parsed by `load_table`'s parser and checks (`parse_window`), so a problem is named as a local
ingest names it, with the whole file's line number. A run this route cannot cut or store by position (gzip, which
cannot be read from the middle; a file of one piece; scattered queries; no rows) is said so (a `Local` reason) and
ingested locally instead.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from judged.flows.engine.limits import Limits
from judged.flows.store.kinds import RUN
from judged.flows.store.readers import Window, parse_window, sniff_format
from judged.flows.store.reading_pass import tag_of_extremes
from judged.flows.store.warehouse import position_plan, write_position_parts
from judged.schemas.fields import QUERY
from judged.schemas.provenance import RunMetadata, table_id
from judged.transforms.errors import InputError
from judged.transforms.shards import together
from judged.transforms.trec_grammar import first_field

_SCAN_BYTES = 1 << 16


@dataclass(frozen=True)
class Local:
    """Why a run is ingested locally, not in pieces: said in the flow's log."""

    reason: str


@dataclass(frozen=True)
class Pieces:
    """A run file cut at query boundaries: its format and its pieces, in the file's order. A text piece's lines are
    numbered from 1 (where it begins in the file's lines is known once the pieces before it are read)."""

    source_format: Literal["trec", "parquet"]
    windows: list[Window]


def cut_pieces(path: Path, limits: Limits) -> Pieces | Local:
    """The run file cut into pieces of about `limits.piece_bytes` (text) or `limits.piece_rows` (Parquet) at query
    boundaries, or why it is not."""
    source_format = sniff_format(path)
    if source_format == "trec.gz":
        return Local("a gzip stream cannot be read from the middle")
    if source_format == "parquet":
        try:
            windows = _cut_parquet(path, limits.piece_rows)
        except (pa.ArrowException, KeyError, ValueError, OSError):
            return Local("its Parquet row groups cannot be cut by query (the local ingest says why)")
    else:
        windows = _cut_text(path, limits.piece_bytes)
    if len(windows) < 2:
        return Local("it is one piece (below --dask's piece size, or one query or row group)")
    return Pieces(source_format, windows)


def _line_start(handle: BinaryIO, offset: int) -> int:
    """Where the line holding the byte at `offset` begins."""
    end = offset
    while end > 0:
        begin = max(0, end - _SCAN_BYTES)
        handle.seek(begin)
        found = handle.read(end - begin).rfind(b"\n")
        if found >= 0:
            return begin + found + 1
        end = begin
    return 0


def _next_query_start(handle: BinaryIO, target: int) -> int:
    """The first line beginning at or after byte `target` (> 0) whose query id differs from that of the line before
    it that the grammar reads (transforms/trec_grammar.py); the file's size when there is none. A blank or comment
    line never begins a piece."""
    position = _line_start(handle, target - 1)
    handle.seek(position)
    previous = None
    while line := handle.readline():
        query = first_field(line)
        if query is not None:
            if previous is not None and query != previous and position >= target:
                return position
            previous = query
        position += len(line)
    return position


def _cut_text(path: Path, piece_bytes: int) -> list[Window]:
    """Byte ranges of about `piece_bytes`, each beginning where a query begins: the k-th starts at the first query
    start at or after piece_bytes past the start of the one before it (deterministic: from the bytes alone)."""
    size = path.stat().st_size
    starts = [0]
    with path.open("rb") as handle:
        while starts[-1] + piece_bytes < size:
            start = _next_query_start(handle, starts[-1] + piece_bytes)
            if start >= size:
                break
            starts.append(start)
    return [Window(start, end, 1) for start, end in zip(starts, [*starts[1:], size], strict=True)]


def _cut_parquet(path: Path, piece_rows: int) -> list[Window]:
    """Row ranges of about `piece_rows`, each beginning where a query begins: a piece ends at the first row group
    boundary past its size, moved forward to the first row there whose query id differs from the row before (a
    query spanning row groups stays in one piece; only the query id column of the row groups looked at is read).
    Rows are numbered from 1 in the file, as a local ingest numbers them."""
    file = pq.ParquetFile(path)
    sizes = [file.metadata.row_group(group).num_rows for group in range(file.num_row_groups)]
    group_starts = [sum(sizes[:group]) for group in range(len(sizes))]
    starts = [0]
    for group in range(1, len(sizes)):
        if group_starts[group] >= starts[-1] + piece_rows and (begins := _query_start_in(file, group)) is not None:
            starts.append(group_starts[group] + begins)
    total = sum(sizes)
    return [Window(start, end, start + 1) for start, end in zip(starts, [*starts[1:], total], strict=True)
            if end > start]


def _query_start_in(file: pq.ParquetFile, group: int) -> int | None:
    """The first row of row group `group` whose query id differs from the row before it (the last row of the group
    before, for its first row); None when the whole group continues one query."""
    previous = file.read_row_group(group - 1, columns=[QUERY]).column(0).to_pylist()[-1:]
    queries = file.read_row_group(group, columns=[QUERY]).column(0).to_pylist()
    return next((row for row, (before, query) in enumerate(zip(previous + queries, queries)) if query != before),
                None)


@dataclass(frozen=True)
class Survey:
    """What a worker found in one piece: each stretch of one query id, in order (`blocks`: query id, rows, the
    number of its first line or row as the piece numbers them, and the byte (text) or row (Parquet) where it
    begins in the file); the lines (text: newlines) or rows it spans, from which the next piece's numbering starts;
    its smallest and largest run tag; or its first problem (`error`, numbered as the piece numbers its lines)."""

    blocks: list[tuple[str, int, int, int]]
    lines: int
    tag_min: str | None = None
    tag_max: str | None = None
    error: InputError | None = None


def survey_piece(path: str, source_format: str, metadata: RunMetadata, limits: Limits, window: Window) -> Survey:
    """A worker's first look at its piece: parsed and checked whole (`parse_window`), then summed up (`Survey`).
    A problem is returned, not raised: the driver names the whole file's first one."""
    file = Path(path)
    if source_format == "parquet":
        lines, line_starts = window.end - window.start, None
    else:
        with file.open("rb", buffering=0) as handle:
            data = os.pread(handle.fileno(), window.end - window.start, window.start)
        newlines = np.flatnonzero(np.frombuffer(data, np.uint8) == ord("\n"))
        del data
        lines, line_starts = len(newlines), np.concatenate([[0], newlines + 1])
    try:
        rows = parse_window(file, source_format, metadata, limits, window).rows
        frame = rows.select(QUERY, "source_line", "run_tag").collect()
    except InputError as error:
        return Survey([], lines, error=error)
    stretches = frame[QUERY].rle().struct.unnest()
    first_rows = stretches["len"].cum_sum() - stretches["len"]
    first_lines = frame["source_line"].gather(first_rows).to_numpy()
    if line_starts is None:
        begins = window.start + (first_lines - window.first)
    else:
        begins = window.start + line_starts[first_lines - window.first]
    blocks = list(zip(stretches["value"].to_list(), stretches["len"].to_list(), first_lines.tolist(),
                      begins.tolist(), strict=True))
    return Survey(blocks, lines, frame["run_tag"].min(), frame["run_tag"].max())  # type: ignore[arg-type]


@dataclass(frozen=True)
class ShardGroup:
    """Consecutive whole shards that one worker writes: the window that holds their rows (its first line numbered
    as in the file), and their blocks (query id, rows, shard), in the file's order."""

    window: Window
    blocks: list[tuple[str, int, int]]


@dataclass(frozen=True, eq=False)
class PiecesPlan:
    """A run read in pieces, as its record describes it (`warehouse.Described`), with the shards a local ingest
    would cut (`blocks`: query id, rows, shard) and the groups of them the workers write."""

    source: str
    source_format: str
    metadata: RunMetadata
    source_sha256: str
    content_sha256: str
    blocks: pl.DataFrame
    groups: list[ShardGroup]
    kind: Literal["run"] = field(default="run", init=False)

    @property
    def shards(self) -> int:
        return int(self.blocks["shard"].max()) + 1

    @property
    def table_id(self) -> str:
        return table_id(self.kind, self.content_sha256, self.metadata)

    @cached_property
    def counts(self) -> dict[str, int]:
        return {"n_rows": int(self.blocks["n_rows"].sum()), "n_queries": self.blocks.height, "n_unresolved": 0}


def plan_pieces(
    path: Path, pieces: Pieces, surveys: list[Survey], metadata: RunMetadata, hashes: Future[tuple[str, str]],
    limits: Limits,
) -> PiecesPlan | Local:
    """The driver's plan from its workers' surveys, in the pieces' order. An InputError naming the file's first
    problem (its line numbered in the whole file; the bad lines of every piece counted) when a piece has one; a
    `Local` reason when the run is not stored by position (scattered queries, no rows); else the run's tag (found as
    `load_table` finds it, when `metadata` has none), its shards (`position_plan`, as for a local ingest) and the
    windows of whole shards, of about a piece each, that the workers write."""
    text = pieces.source_format != "parquet"
    # Where each piece's numbering begins in the file's: a text piece was numbered from 1.
    firsts = [1 + sum(survey.lines for survey in surveys[:k]) if text else window.first
              for k, window in enumerate(pieces.windows)]
    shifts = [first - window.first for first, window in zip(firsts, pieces.windows, strict=True)]
    failed = [(k, survey.error) for k, survey in enumerate(surveys) if survey.error is not None]
    if failed:
        k, first = failed[0]
        line = None if first.line is None else first.line + shifts[k]
        raise InputError(first.source, first.first_problem, line, first.unit,
                         sum(error.more + 1 for _, error in failed) - 1)
    schema = {QUERY: pl.String(), "n_rows": pl.Int64(), "first_line": pl.Int64(), "begins": pl.Int64()}
    found = pl.DataFrame([(query, rows, line + shifts[k], begins) for k, survey in enumerate(surveys)
                          for query, rows, line, begins in survey.blocks], schema=schema, orient="row")
    # A query running on from one piece into the next (a boundary the cut could not see) is one block still.
    blocks = found.group_by(pl.col(QUERY).rle_id().alias("stretch"), maintain_order=True).agg(
        pl.col(QUERY).first(), pl.col("n_rows").sum(), pl.col("first_line").first(), pl.col("begins").first()
    ).drop("stretch")
    if not together(blocks[QUERY]):
        return Local("its queries are scattered over the file: it is stored by bucket, which needs every row")
    planned = position_plan(blocks.select(QUERY, "n_rows"), limits)
    if planned is None:
        return Local("it has no rows")
    if not metadata.tag:
        tags = [(survey.tag_min, survey.tag_max) for survey in surveys if survey.tag_min is not None]
        tag = tag_of_extremes(min(t for t, _ in tags), max(t for _, t in tags)) if tags else ""
        metadata = metadata.model_copy(update={"tag": tag})
    end = pieces.windows[-1].end
    shards = blocks.with_columns(planned["shard"]).group_by("shard", maintain_order=True).agg(
        pl.col("begins").first(), pl.col("first_line").first(), pl.struct(QUERY, "n_rows", "shard").alias("blocks")
    ).with_columns(ends=pl.col("begins").shift(-1, fill_value=end))
    size = limits.piece_bytes if text else limits.piece_rows
    groups: list[ShardGroup] = []
    for shard in shards.iter_rows(named=True):
        listed = [(block[QUERY], block["n_rows"], block["shard"]) for block in shard["blocks"]]
        if groups and shard["ends"] - groups[-1].window.start <= size:
            last = groups[-1]
            groups[-1] = ShardGroup(Window(last.window.start, shard["ends"], last.window.first), last.blocks + listed)
        else:
            groups.append(ShardGroup(Window(shard["begins"], shard["ends"], shard["first_line"]), listed))
    return PiecesPlan(str(path), pieces.source_format, metadata, *hashes.result(), planned, groups)


def write_shard_group(
    path: str, source_format: str, metadata: RunMetadata, limits: Limits, group: ShardGroup, of: int, run_id: str,
    folder: str, part_metadata: dict[str, str],
) -> tuple[str, ...]:
    """A worker's second task: the window of its shards parsed again (numbered as in the file) and each shard
    written into the staging `folder` by `write_position_parts`, as a local ingest writes it, checking that each
    holds the queries planned for it. Returns what the parse warns of (run lines with more than six columns)."""
    parsed = parse_window(Path(path), source_format, metadata, limits, group.window)
    blocks = pl.DataFrame(group.blocks, schema={QUERY: pl.String(), "n_rows": pl.Int64(), "shard": pl.Int32()},
                          orient="row")
    write_position_parts(parsed.rows, blocks, of, Path(folder), RUN, run_id, part_metadata, limits,
                         check_queries=True)
    return parsed.warnings
