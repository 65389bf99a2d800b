"""Reading input files: TREC text (plain or gzip, detected from the bytes) and Parquet, into the typed tables.

Belongs here: everything that touches a path on the way in (opening, decompressing, hashing, turning the file's lines
into a LazyFrame), then the parse and conform transforms and the checks that raise `InputError` naming the file;
and choosing how each is read: the fast reader (Polars' CSV reader) or the exact parser for TREC text, in memory or
scanned once by a `ReadingPass` (flows/store/reading_pass.py), whose batches a store may take as they are read
(`open_table`, `TableReading`).
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import ValidationError

import polars as pl

from judged.flows.store.hashing import file_identity, hash_in_background, is_gzipped, known_hashes
from judged.flows.engine.limits import DEFAULT_LIMITS, Limits
from judged.flows.store.kinds import RUN, InputKind, input_kind
from judged.flows.store.reading_pass import (
    DECLINING, ReadingPass, blank_in_slices, query_ids_check, row_checks, tag_of, tag_summary,
)
from judged.schemas.fields import QUERY, TAG
from judged.schemas.provenance import JudgmentSetMetadata, RunMetadata, table_id
from judged.transforms.assessors import names_assessors
from judged.transforms.errors import InputError
from judged.transforms.parse import SWAPPED_HINT, ignored_run_columns, in_contract, raise_first_problem
from judged.transforms.ranking import stretches_of
from judged.transforms.trec_grammar import BLANKS, BYTE_ORDER_MARK, RUN_Q0
from judged.transforms.shards import (
    RunLayout, in_shard, query_buckets, shards_of_buckets, together, with_bucket,
)

TableKind = Literal["judgments", "run"]
_PARQUET_MAGIC = b"PAR1"


SIDECAR_SUFFIX = ".meta.toml"
# A stored run part's own count of duplicate (query, document) pairs, in its Parquet key-value metadata.
DUPLICATE_PAIRS_KEY = "judged.duplicate_pairs"
# A run part stored by position lists its queries (a JSON list) in its key-value metadata: the judgments of the part
# are then found by a semi-join on them, without reading the part's rows.
PART_QUERIES_KEY = "judged.queries"
Metadata = JudgmentSetMetadata | RunMetadata


@dataclass(frozen=True, eq=False)
class LoadedTable:
    """A validated input table, where it came from, and its identity. Compared and hashed as an object (by
    identity): its rows are a lazy query, which has no equality."""

    kind: TableKind
    scan: pl.LazyFrame  # the validated rows in their contract (lazy: a large Parquet run is never held whole)
    source: str  # the path as given, for messages
    # (source sha256, content sha256), often still being computed beside the work (flows.hashing): the properties
    # below wait for them, so only what needs a table's identity waits
    hashes: Future[tuple[str, str]]
    source_format: Literal["trec", "trec.gz", "parquet", "warehouse", "python"]  # python: a frame or dict (flows.api)
    metadata: Metadata
    # proven at ingest, or by the reading pass of a scanned text file: no (query, document) pair occurs twice
    duplicate_free: bool = False
    stored_order: pl.LazyFrame | None = None  # a stored run's rows with `position` and `query_rows` (StoredTable)
    in_memory: bool = False  # rows held in memory (parsed text) or few by construction (a stored run's head)
    # `query_id` -> `n_rows` (with `first_line` and `last_line`) of a run when the reading pass counted them (a
    # scanned text run, or a Parquet run's pass for its store): `counts` and the store take them instead of reading
    # the rows again
    query_rows: pl.DataFrame | None = None
    stored_part: bool = False  # rows of a stored table's part (`StoredTable.load`)
    # a stored run part's duplicate (query, document) pairs as counted at ingest (None: not counted, or not stored)
    counted_duplicate_pairs: int | None = None
    # the queries (`query_id`) of a stored run's part as its files list them (stored by position; None otherwise)
    part_queries: pl.DataFrame | None = None
    # what reading the file found that its reader must not miss (run columns beyond the sixth, ignored): the command
    # line prints them on stderr as they are read, the Python API puts them in its results' warnings
    warnings: tuple[str, ...] = ()
    # `start` and `query_id` of every stretch of one query id of `scan`'s rows (`transforms.ranking.stretches_of`),
    # when the fast reader found them in memory: the plan cuts the rows at them without comparing every id again.
    # Valid for `scan` as read: a table of other rows (`load` of a shard, `load_queries`) has none.
    stretches: pl.DataFrame | None = None

    @property
    def name(self) -> str:
        """A run's display name (see `RunMetadata.display_name`), else the file's name."""
        metadata = self.metadata if isinstance(self.metadata, RunMetadata) else RunMetadata()
        return metadata.display_name(Path(self.source).name)

    @property
    def shards(self) -> int:
        """A loaded table is one shard: `load` cuts it only for the parts of a stored run."""
        return 1

    @property
    def in_shards(self) -> bool:
        return False

    @property
    def layout(self) -> RunLayout | None:
        """A loaded table is not stored in shards."""
        return None

    @property
    def n_rows(self) -> int:
        """Its rows, counted in memory (`frame`)."""
        return self.frame.height

    @property
    def n_queries(self) -> int:
        return self.counts["n_queries"]

    def ranked(self) -> bool:
        """A loaded table is never in the stored ranked layout."""
        return False

    def load(self, shard: int | None = None, of: int = 1) -> LoadedTable:
        """The table itself; with a `shard`, its rows of shard `shard` of `of` (the judgments of a stored run's
        part), held in memory and found by a filter on each row's shard, computed once per `of` (4 bytes a row):
        a part is then a filter, not a hash of every row again."""
        if shard is None:
            return self
        in_this_part = self.frame.filter(self._shard_of_rows(of) == shard)
        return replace(self, scan=in_this_part.lazy(), in_memory=True, stretches=None)

    def load_queries(self, queries: pl.DataFrame, without: bool = False) -> LoadedTable:
        """Its rows of these queries (`query_id`; `without`: of every other query), held in memory: the judgments
        of a part of a run stored by position, found by a semi-join (an anti-join) on the part's queries. The table
        is read once, on first use, as `frame`."""
        how = "anti" if without else "semi"
        in_these = self.frame.join(queries.select(QUERY), on=QUERY, how=how, maintain_order="left")
        return replace(self, scan=in_these.lazy(), in_memory=True, stretches=None)

    def query_blocks(self, batch_rows: int) -> pl.DataFrame | None:
        """Each query's rows as one block, in the order of the file (`query_id`, `n_rows`), when every query's rows
        lie together (nearly every run); None when a query's rows are scattered. From the reading pass's counts
        when it made them (a scanned text file, not parsed again), else from the query ids alone
        (`query_blocks`)."""
        counted = self.query_rows
        if counted is not None and "first_line" in counted.columns:
            ordered = counted.sort("first_line")
            # Sorted by where they begin, each query must end before the next begins.
            apart = (ordered["last_line"].head(-1) < ordered["first_line"].tail(-1)).all()
            return ordered.select(QUERY, pl.col("n_rows").cast(pl.Int64)) if apart else None
        return query_blocks(self.scan, batch_rows)

    def _shard_of_rows(self, of: int) -> pl.Series:
        known: dict[int, pl.Series] = self.__dict__.setdefault("_shards_of_rows", {})
        if of not in known:
            buckets = with_bucket(self.frame.lazy().select("query_id"))
            known[of] = buckets.select(pl.col("bucket") % of).collect().to_series()
        return known[of]

    @cached_property
    def frame(self) -> pl.DataFrame:
        """The rows in memory (read once, on first use)."""
        return self.scan.collect()

    @cached_property
    def counts(self) -> dict[str, int]:
        """Rows, distinct queries and unresolved values (grades), streaming, or from the reading pass's counts."""
        kind = input_kind(self.kind)
        if self.query_rows is not None and not kind.unresolved_values:
            return {"n_rows": int(self.query_rows["n_rows"].sum()), "n_unresolved": 0,
                    "n_queries": self.query_rows.height}
        unresolved = (pl.col(kind.value_column).null_count() if kind.unresolved_values
                      else pl.lit(0, pl.UInt32))
        # Two queries, distinct queries by `unique()`: the streaming engine holds every query id for `n_unique()`,
        # and as much for a scan that `collect_all` shares between queries; `unique()` alone stays small.
        rows = self.scan.select(n_rows=pl.len(), n_unresolved=unresolved).collect(engine="streaming")
        queries = self.scan.select("query_id").unique().select(n_queries=pl.len()).collect(engine="streaming")
        return {name: int(value) for name, value in (rows.row(0, named=True) | queries.row(0, named=True)).items()}

    @property
    def unit(self) -> str:
        """What a `source_line` counts: lines of text or rows of Parquet."""
        return "row" if self.source_format in ("parquet", "python") else "line"

    @property
    def source_sha256(self) -> str:
        """Of the file's bytes as stored."""
        return self.hashes.result()[0]

    @property
    def content_sha256(self) -> str:
        """Of the content once decompressed (a gzipped file and its plain text have the same)."""
        return self.hashes.result()[1]

    @property
    def table_id(self) -> str:
        return self.deferred_id()()

    def deferred_id(self) -> Callable[[], str]:
        """`table_id`, made when called, from the table's hashes and metadata alone: whoever keeps it does not keep
        the rows alive."""
        kind, hashes, metadata = self.kind, self.hashes, self.metadata
        return lambda: table_id(kind, hashes.result()[1], metadata)


def query_blocks(rows: pl.LazyFrame, batch_rows: int) -> pl.DataFrame | None:
    """`LoadedTable.query_blocks` from the query ids alone, read in one streaming pass of about `batch_rows` ids at
    a time (a Parquet file reads that one column): the stretches of one query id, a stretch running on from one
    batch into the next counted once. None as soon as a batch holds a query in two stretches (a shuffled or
    interleaved run says so in its first batch, at the cost of one batch), or at the end when two batches share a
    query."""
    schema = {QUERY: pl.String(), "n_rows": pl.Int64()}
    blocks: list[pl.DataFrame] = []
    held_id, held_rows = None, 0  # the last stretch seen, which the next batch may continue
    for batch in rows.select(QUERY).collect_batches(chunk_size=batch_rows, engine="streaming"):
        if batch.height == 0:
            continue
        stretches = batch[QUERY].rle().struct.unnest().select(pl.col("value").alias(QUERY), n_rows=pl.col("len"))
        if not together(stretches[QUERY]):
            return None
        if stretches[QUERY][0] == held_id:
            stretches = stretches.with_columns(n_rows=pl.col("n_rows") + pl.when(pl.int_range(pl.len()) == 0)
                                               .then(held_rows).otherwise(0))
        elif held_id is not None:
            blocks.append(pl.DataFrame({QUERY: [held_id], "n_rows": [held_rows]}, schema=schema))
        held_id, held_rows = stretches[QUERY][-1], int(stretches["n_rows"][-1])
        blocks.append(stretches.head(-1).cast(schema))  # type: ignore[arg-type]
    if held_id is not None:
        blocks.append(pl.DataFrame({QUERY: [held_id], "n_rows": [held_rows]}, schema=schema))
    found = pl.concat(blocks) if blocks else pl.DataFrame(schema=schema)
    return found if together(found[QUERY]) else None


class Table(Protocol):
    """What the engine asks of an input table, whether loaded (`LoadedTable`) or stored (`StoredTable`): who it
    is, how many shards it is stored in, whether it is in the ranked layout, and the rows of a shard."""

    @property
    def kind(self) -> TableKind: ...

    @property
    def metadata(self) -> Metadata: ...

    @property
    def name(self) -> str: ...

    @property
    def shards(self) -> int: ...

    @property
    def n_rows(self) -> int: ...

    @property
    def n_queries(self) -> int: ...

    @property
    def in_shards(self) -> bool:
        """Whether its rows are stored in shards (a stored table): a plan's parts then read a shard of each input,
        where a loaded run is one part, read as loaded."""
        ...

    @property
    def layout(self) -> RunLayout | None:
        """How its stored shards are cut (None: not stored in shards)."""
        ...

    def ranked(self) -> bool: ...

    def deferred_id(self) -> Callable[[], str]: ...

    def load(self, shard: int | None = None, of: int = 1) -> LoadedTable:
        """The whole table's rows; with a `shard`, those of shard `shard` of `of`."""
        ...

    def load_queries(self, queries: pl.DataFrame, without: bool = False) -> LoadedTable:
        """Its rows of these queries (`query_id`; `without`: of every other query)."""
        ...


def read_sidecar(path: Path, kind: TableKind) -> Metadata:
    """The metadata in `<file>.meta.toml` beside the input, or empty metadata when there is none."""
    model = input_kind(kind).metadata_model
    sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
    if not sidecar.exists() and not sidecar.is_symlink():
        return model()
    # Anything else by that name (a folder, a FIFO, a broken link) is refused by `read_bounded_text`: a sidecar
    # that is not read would silently change the input's identity and meaning.
    import tomllib  # here: it compiles its patterns when imported, a cost an input without a sidecar never needs

    try:
        return model.model_validate(tomllib.loads(read_bounded_text(sidecar, "sidecar", SIDECAR_BYTES)))
    except tomllib.TOMLDecodeError as error:
        raise InputError(str(sidecar), f"not valid TOML: {error}") from None
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise InputError(str(sidecar), problems) from None


def sniff_format(path: Path) -> Literal["trec", "trec.gz", "parquet"]:
    if is_gzipped(path):
        return "trec.gz"
    with path.open("rb") as handle:
        return "parquet" if handle.read(4) == _PARQUET_MAGIC else "trec"


# The types the fast reader reads each column of TREC text as. q0 as an Enum of its two allowed values: any other
# value fails the read (then the exact parser names the line), and each row holds one byte instead of a string. The
# rank as Int32, half the memory (the contract's Int64 is a lazy cast): a rank beyond it fails the read, and the
# exact parser takes the file.
_FAST_TYPES: dict[str, pl.DataType] = {
    "query_id": pl.String(), "iteration": pl.String(), "q0": pl.Enum(list(RUN_Q0)), "doc_id": pl.String(),
    "source_rank": pl.Int32(), "score": pl.Float64(), "run_tag": pl.String(), "relevance": pl.Int32(),
}


@dataclass(frozen=True)
class Window:
    """A stretch of a run file read on its own (a piece of a scaled-out ingest: flows/store/scaled.py): of a text
    file, the bytes [start, end), whole lines, the first of which is line `first`; of a Parquet file, the rows
    [start, end), the first of which is row `first`. Its rows carry the whole file's line (row) numbers."""

    start: int
    end: int
    first: int


@dataclass(frozen=True)
class ParsedTable:
    """A validated table in its contract (lazy), and, when the parse found it on the way, the tag every row of a
    run carries ("" when they differ; None: not computed)."""

    rows: pl.LazyFrame
    common_tag: str | None = None
    query_rows: pl.DataFrame | None = None  # `query_id` -> `n_rows`, when the reading pass counted them
    warnings: tuple[str, ...] = ()  # what the reader must not miss about the file (`ignored_columns_warning`)
    duplicate_free: bool = False  # proven by the reading pass (`ReadingPass`): no (query, document) pair twice
    stretches: pl.DataFrame | None = None  # of the rows read in memory by the fast reader (`LoadedTable.stretches`)


_NEWLINE = ord("\n")
_BYTE_ORDER_MARK_BYTES = BYTE_ORDER_MARK.encode()


def line_count(path: Path, chunk_bytes: int = 16 << 20) -> int:
    """The lines of a plain text file (a last line without its newline counted too), from its bytes alone: what a
    run stored in its reading pass cuts its shards for before the pass has counted its rows (blank lines make it
    more than the rows, and the shards are then cut again: `OnePassShards`)."""
    # Counted by numpy in one reused buffer: a vectorised count that, unlike bytes.count, does not hold the GIL
    # while the reading pass's own Python waits for it.
    import numpy as np  # only here: a direct command printing trec_eval's lines loads no numpy

    buffer = bytearray(chunk_bytes)
    as_bytes = np.frombuffer(buffer, dtype=np.uint8)
    lines, last = 0, _NEWLINE
    with path.open("rb", buffering=0) as handle:
        while size := handle.readinto(buffer):
            lines += int(np.count_nonzero(as_bytes[:size] == _NEWLINE))
            last = buffer[size - 1]
    return lines + (last != _NEWLINE)


def parquet_rows(path: Path) -> int:
    """The rows of a Parquet file, as its footer says (what a Parquet run stored in its reading pass cuts its shards
    for: `OnePassShards`)."""
    return int(pl.scan_parquet(path).select(pl.len()).collect().item())


def _first_line(path: Path, gzipped: bool, window: Window | None = None) -> str:
    opener = gzip.open if gzipped else open
    with opener(path, "rt", errors="replace") as handle:  # type: ignore[operator]
        if window is not None:
            handle.seek(window.start)
        return handle.readline()


def streamed_text(path: Path, source_format: str, limits: Limits, window: Window | None = None) -> bool:
    """Whether a text input is too large to parse in memory (then it is scanned). A window is always parsed in
    memory: its size is chosen for that."""
    if window is not None:
        return False
    return path.stat().st_size * (4 if source_format == "trec.gz" else 1) > limits.in_memory_text_bytes


def _read_csv_in_pieces(
    path: Path, gzipped: bool, options: dict[str, Any], piece_bytes: int, window: Window | None = None
) -> pl.DataFrame:
    """Polars' CSV reader over the file (or its `window`), a piece of whole lines (about `piece_bytes`) at a time
    (a gzipped file at once): only one piece of the file's bytes is held beside the rows parsed so far."""
    if gzipped:
        return pl.read_csv(path, **options)
    with path.open("rb", buffering=0) as handle:
        fd = handle.fileno()
        start, end = (0, path.stat().st_size) if window is None else (window.start, window.end)
        pieces = [_read_csv_piece(fd, start, end, options)
                  for start, end in itertools.pairwise([start, *_piece_ends(fd, end, piece_bytes, start)])]
    return pl.concat(pieces, rechunk=False)


def _read_csv_piece(fd: int, start: int, end: int, options: dict[str, Any]) -> pl.DataFrame:
    """Polars' CSV reader over the bytes [start, end) of an open file. The bytes are let go when it returns, before
    the next piece is read, so the next piece reuses their memory: with two pieces held at once the block freed is
    too small for the next one, and most pieces' pages are faulted in anew (benchmarks/README, the direct path at M)."""
    data = os.pread(fd, end - start, start)
    # Polars drops a byte order mark that begins what it reads; the grammar, only the file's first.
    if start > 0 and data.startswith(_BYTE_ORDER_MARK_BYTES):
        raise _NotPlain("a line after the first begins with a byte order mark")
    return pl.read_csv(data, **options)


def _piece_ends(fd: int, size: int, piece_bytes: int, start: int = 0) -> list[int]:
    """Offsets just past a newline, about `piece_bytes` apart from `start` on, the last one `size` (the file's
    size, or where a window ends; at least one piece, so an empty file reads as an empty table)."""
    ends: list[int] = []
    while start + piece_bytes < size:
        probe = start + piece_bytes
        while probe < size and (newline := os.pread(fd, 1 << 16, probe).find(b"\n")) < 0:
            probe += 1 << 16
        start = min(size, probe + newline + 1) if probe < size else size
        ends.append(start)
    if not ends or ends[-1] < size:
        ends.append(size)
    return ends


def _csv_options(separator: str, columns: dict[str, pl.DataType]) -> dict[str, Any]:
    """Polars' CSV reader as the fast reader runs it: no header, no quoting, no comments, the columns' types; a line
    of fewer fields reads as nulls (`missing`), even the first of a piece (a piece of blank lines)."""
    return dict(
        separator=separator, has_header=False, new_columns=list(columns), schema_overrides=columns,
        quote_char=None, comment_prefix=None, raise_if_empty=False, missing_columns="insert",
    )


def _without_blank_lines(rows: pl.LazyFrame) -> pl.LazyFrame:
    """A blank line reads as a row of nulls: rows are numbered (`source_line`) before these are dropped, so that
    line numbers are an editor's."""
    return rows.filter(~pl.all_horizontal(pl.exclude("source_line").is_null()))


def _read_fast_in_memory(
    path: Path, gzipped: bool, kind: InputKind, separator: str, columns: dict[str, pl.DataType], limits: Limits,
    window: Window | None = None,
) -> ParsedTable | None:
    """The fast reader on a file (or a window) parsed in memory, with these column types: its rows, checked by the
    reading pass's checks (flows/store/reading_pass.py), or None when it leaves the file to the exact parser."""
    first = 1 if window is None else window.first
    try:
        read = _read_csv_in_pieces(path, gzipped, _csv_options(separator, columns), limits.text_piece_bytes, window)
        # Line numbers made as Int64, the contract's type: a cast of a row index would be a pass over every row.
        rows = read.lazy().with_columns(source_line=pl.int_range(first, pl.len() + first, dtype=pl.Int64))
        if read.height > 0 and read.select(pl.all_horizontal(pl.all().is_null()).any()).item():
            rows = _without_blank_lines(rows).collect().lazy()
        schema = rows.collect_schema()
        if len(schema) != len(columns) + 1:
            return None
        # The blanks are looked for a slice at a time (`blank_in_slices`: one column joined whole could be large), in
        # a thread beside the other checks: Polars runs each of these checks on one core, and the other core is idle.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="judged-blanks") as beside:
            blank = beside.submit(blank_in_slices, read)
            # The query ids are looked at once a stretch of one id; the stretches are kept for the plan
            # (`LoadedTable.stretches`).
            stretches = stretches_of(rows.select(QUERY).collect(engine="in-memory").to_series())
            checks = [check for check in row_checks(schema) if check.meta.output_name() != "blank"]
            found = rows.select(*checks, *(tag_summary() if TAG in columns else [])).collect(engine="in-memory").row(
                0, named=True) | stretches.select(query_ids_check(pl.col(QUERY))).row(0, named=True) | {
                "blank": blank.result()}
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError, _NotPlain):
        return None
    if any(found[check] for check in DECLINING):
        return None
    common_tag = tag_of(found["some_tag"], found["tags_differ"]) if TAG in columns else None
    return ParsedTable(in_contract(rows, kind.input_contract), common_tag, stretches=stretches)


def _fast_scan(path: Path, separator: str, columns: dict[str, pl.DataType]) -> pl.LazyFrame | None:
    """The fast reader's scan of a file too large to parse in memory, with these column types (None: Polars cannot
    scan it so), for a `ReadingPass` to read once."""
    try:
        rows = _without_blank_lines(
            pl.scan_csv(path, **_csv_options(separator, columns)).with_row_index("source_line", offset=1))
        return rows if len(rows.collect_schema()) == len(columns) + 1 else None
    except (pl.exceptions.PolarsError, OSError):
        return None


def _parsed_by_pass(reading: ReadingPass) -> ParsedTable | None:
    """The table a scanned file's pass read (once the pass is finished), or None when the fast reader leaves the file
    to the exact parser: its checks failed, or a value could not be read as its column types."""
    reading.finish()
    if not reading.plain:
        return None
    return ParsedTable(in_contract(reading.rows, reading.kind.input_contract), reading.common_tag,
                       reading.counts, duplicate_free=reading.duplicate_free)


class _NotPlain(Exception):
    """A piece of a file the fast reader leaves to the exact parser, found before it is parsed."""


class _Parsing:
    """The parse of one input file (or of a `window` of a run file) as `load_table` parses it, in two steps: first
    the reading pass whose batches a store may take as they are read (`reading_pass`), then the validated table in
    its contract (`parsed`; InputError on the first problem).

    Text goes to the fast reader first (`fast`: Polars' CSV reader, in memory, or, for a file too large, scanned once
    by a `ReadingPass`), which returns exactly the exact parser's rows or leaves the file to it; the exact parser
    (transforms/parse.py) names the first bad line. Both follow one grammar (transforms/trec_grammar.py,
    docs/trec-format.md). A judgment set that declares an unresolved token goes to the exact parser at once. A
    Parquet table stays a lazy scan, validated on its own columns (`InputKind.problem_probe`) or in one streaming
    pass that numbers the rows, which names the first problem. `look_for_repeats` (the checks before storing): a
    scanned file's pass also looks for repeated (query, document) pairs, and proves the table free of them when it
    holds none (`ParsedTable.duplicate_free`), so neither the checks nor the store look again."""

    def __init__(
        self, path: Path, kind: InputKind, source_format: str, metadata: Metadata, limits: Limits,
        window: Window | None = None, look_for_repeats: bool = False,
    ) -> None:
        self.path, self.kind, self.source_format, self.metadata = path, kind, source_format, metadata
        self.limits, self.window, self.look_for_repeats = limits, window, look_for_repeats
        self.unresolved_token: str | None = getattr(metadata, "unresolved_token", None)
        self.gzipped = source_format == "trec.gz"
        self._store_pass: ReadingPass | None = None
        self._parquet: tuple[pl.LazyFrame, str | None] | None = None  # validated rows, and their tag when wanted

    @property
    def _tag_wanted(self) -> bool:
        """Whether the table's common tag is looked for: a run whose metadata declares none."""
        return isinstance(self.metadata, RunMetadata) and not self.metadata.tag

    @cached_property
    def _attempts(self) -> tuple[str, list[tuple[dict[str, pl.DataType], str | None]]] | None:
        """The separator the fast reader splits on (the first line's: a tab if it has one, else a space) and its
        attempts, each the column types and the tag they take as a run's only one (None: any tags). A run's rows
        nearly always carry one tag, so its tag column is first read as an Enum of the first line's tag (one byte a
        row instead of a string); a run with another tag anywhere, or that this first read turns down for any
        reason, is read again with plain strings. None when the fast reader does not take the input: Parquet, an
        unresolved token declared, or a first line that cannot be read (a damaged gzip stream: the exact parser
        names the problem)."""
        if self.source_format == "parquet" or self.unresolved_token is not None:
            return None
        try:
            first_line = _first_line(self.path, self.gzipped, self.window)
        except (OSError, EOFError):
            return None
        separator = "\t" if "\t" in first_line else " "
        fields = first_line.rstrip("\r\n").split(separator)
        columns = {name: _FAST_TYPES[name] for name in self.kind.trec_columns.names}
        attempts: list[tuple[dict[str, pl.DataType], str | None]] = [(columns, None)]
        tag = fields[-1]
        if TAG in columns and len(fields) == len(columns) and tag and not any(blank in tag for blank in BLANKS):
            attempts.insert(0, (columns | {TAG: pl.Enum([tag])}, tag))
        return separator, attempts

    @property
    def _scanned(self) -> bool:
        return self.source_format != "parquet" and streamed_text(self.path, self.source_format, self.limits,
                                                                  self.window)

    def _pass(self, rows: pl.LazyFrame, tag: str | None, validated: bool = False) -> ReadingPass:
        return ReadingPass(rows, self.kind, self.limits.streamed_candidate_part_rows,
                           self.look_for_repeats or validated, tag, validated)

    def reading_pass(self) -> ReadingPass | None:
        """The pass whose batches a store may take as they are read, before `parsed` finishes it: a scanned text
        run's first read (which takes its first line's tag as the only one, from which the rows' run id is made), or
        a Parquet run's, after the checks of its columns (InputError when they fail). None for any other input: text
        held in memory or left to the exact parser, a window, a kind not stored by position (judgments), or a
        parse that does not look for repeats."""
        if self._store_pass is not None or not (self.kind.ranked and self.window is None and self.look_for_repeats):
            return self._store_pass
        if self.source_format == "parquet":
            rows, tag = self._validated_parquet()
            if self._tag_wanted and tag is None:
                tag = _common_tag(rows)
                self._parquet = (rows, tag)
            self._store_pass = self._pass(rows, tag or "", validated=True)
        elif self._attempts is not None and self._scanned:
            separator, [(columns, tag), *_] = self._attempts
            if tag is not None and (rows := _fast_scan(self.path, separator, columns)) is not None:
                self._store_pass = self._pass(rows, tag)
        return self._store_pass

    def fast(self) -> ParsedTable | None:
        """The fast reader's table, or None when it leaves the input to the exact parser."""
        if self._attempts is None:
            return None
        separator, attempts = self._attempts
        for number, (columns, tag) in enumerate(attempts):
            if not self._scanned:
                read = _read_fast_in_memory(self.path, self.gzipped, self.kind, separator, columns, self.limits,
                                            self.window)
            elif number == 0 and self._store_pass is not None:
                read = _parsed_by_pass(self._store_pass)
            else:
                rows = _fast_scan(self.path, separator, columns)
                read = None if rows is None else _parsed_by_pass(self._pass(rows, tag))
            if read is not None:
                return read
        return None

    def parsed(self) -> ParsedTable:
        """The validated table in its contract; InputError on the first problem."""
        if self.source_format == "parquet":
            rows, common_tag = self._validated_parquet()
            if self._store_pass is None:
                return ParsedTable(rows, common_tag)
            reading = self._store_pass.finish()
            return ParsedTable(rows, common_tag, reading.counts, duplicate_free=reading.duplicate_free)
        fast = self.fast()
        if fast is not None:
            return fast
        lines = read_lines(self.path, self.gzipped, self.window)
        parsed = self.kind.parse_text(lines, self.unresolved_token).collect()
        raise_first_problem(parsed.select("source_line", "problem"), str(self.path), "line")
        warning = ignored_columns_warning(self.path, lines) if self.kind.trec_columns.extra_ignored else None
        return ParsedTable(in_contract(parsed.lazy(), self.kind.input_contract),
                           warnings=() if warning is None else (warning,))

    def _validated_parquet(self) -> tuple[pl.LazyFrame, str | None]:
        """A Parquet table's rows in the contract, validated (InputError on the first problem), and, for a run
        whose metadata wants one, the tag every row carries when its own column tells it (`_parquet_common_tag`)."""
        if self._parquet is not None:
            return self._parquet
        path = str(self.path)
        try:
            scanned = pl.scan_parquet(self.path)
            if self.window is not None:
                scanned = scanned.slice(self.window.start, self.window.end - self.window.start)
            conformed = self.kind.conform(scanned, path, first_row=1 if self.window is None else self.window.first,
                                          unresolved_declared=self.unresolved_token is not None)
            probe = self.kind.problem_probe(scanned) if self.kind.problem_probe is not None else None
            if probe is None or probe.collect(engine="streaming").height:  # numbered, to name the first problem
                problems = (
                    conformed.filter(pl.col("problem").is_not_null()).select("source_line", "problem")
                    .collect(engine="streaming")
                )
                raise_first_problem(problems, path, "row")
            common_tag = _parquet_common_tag(scanned) if self._tag_wanted else None
            # A judgments table whose `assessor` column holds nulls only names no assessor: read as without one.
            if "assessor" in conformed.collect_schema().names() and not names_assessors(conformed).collect().item():
                conformed = conformed.drop("assessor")
        except pl.exceptions.PolarsError as error:
            raise InputError(path, f"cannot be read as Parquet: {str(error).splitlines()[0]}") from None
        self._parquet = (in_contract(conformed, self.kind.input_contract), common_tag)
        return self._parquet


def read_trec_fast(
    path: Path, gzipped: bool, kind: TableKind, limits: Limits = DEFAULT_LIMITS, window: Window | None = None,
) -> ParsedTable | None:
    """The fast reader alone on a TREC text file (or a window of it): exactly the rows the exact parser gives it, or
    None when it leaves the file to that parser (`_Parsing.fast`)."""
    kind_of = input_kind(kind)
    return _Parsing(path, kind_of, "trec.gz" if gzipped else "trec", kind_of.metadata_model(), limits, window).fast()


def read_lines(path: Path, gzipped: bool, window: Window | None = None) -> pl.LazyFrame:
    """The file's lines (or its `window`'s) as (`line_number`, `line`), blank lines included so numbers match an
    editor's. A line ends at a line feed alone (transforms/trec_grammar.py: a carriage return is a blank, which a
    CRLF line ends with), and a byte order mark at the start of the file is dropped."""
    first = 1 if window is None else window.first
    try:
        if window is None:
            source: Path | bytes = path  # Polars decompresses a gzip stream, which it knows by its first bytes
        else:
            with path.open("rb", buffering=0) as handle:
                source = os.pread(handle.fileno(), window.end - window.start, window.start)
        lines = pl.read_lines(source, name="line", row_index_name="line_number", row_index_offset=first)
    except pl.exceptions.ComputeError as error:
        if "utf8" in str(error).lower():
            raise InputError(str(path), "is not UTF-8 text (a byte sequence that is not UTF-8)",
                             first_invalid_utf8_line(path, gzipped, window)) from None
        raise InputError(str(path), f"cannot be read as text: {str(error).splitlines()[0]}") from None
    except (OSError, EOFError) as error:
        raise InputError(str(path), f"cannot be read as text: {str(error).splitlines()[0]}") from None
    if (window is None or window.start == 0) and lines.height and lines.item(0, "line").startswith(BYTE_ORDER_MARK):
        lines = lines.with_columns(pl.col("line").str.strip_prefix(BYTE_ORDER_MARK))
    return lines.lazy()


def first_invalid_utf8_line(path: Path, gzipped: bool, window: Window | None = None) -> int | None:
    """The number of the first line of the file (or its `window`) that is not valid UTF-8 (None if every line
    is, or if a damaged gzip stream ends the search)."""
    opener = gzip.open if gzipped else open
    try:
        with opener(path, "rb") as handle:  # type: ignore[operator]
            lines: Iterable[bytes] = handle
            if window is not None:
                handle.seek(window.start)
                lines = io.BytesIO(handle.read(window.end - window.start))
            for number, line in enumerate(lines, start=1 if window is None else window.first):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError:
                    return number
    except (OSError, EOFError):
        return None
    return None


def require_regular_file(path: Path, what: str = "file") -> None:
    """InputError unless `path` is a regular file this process can open: a directory, a FIFO, a device or a socket
    is named as such, and so is a file it may not read."""
    if path.is_file():
        try:
            with path.open("rb"):
                return
        except OSError as error:
            raise InputError(str(path), f"cannot be read: {error.strerror or error} (a {what})") from None
    if path.is_dir():
        raise InputError(str(path), f"is a directory, not a {what}")
    if path.exists():
        raise InputError(str(path), f"is not a regular file (a FIFO, device or socket), not a {what}")
    raise InputError(str(path), "no such file")


def read_bounded_text(path: Path, what: str, limit: int) -> str:
    """A small user file read whole as UTF-8 text, refused (InputError) when it is not a regular file, larger than
    `limit` bytes for its role (`what`), or not UTF-8."""
    require_regular_file(path, what)
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(str(path), f"is larger than {limit:,} bytes, the limit for a {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputError(str(path), f"is not UTF-8 text (a {what})", line) from None


# Sidecars and query weight files are small by nature; reading them is bounded by these limits.
SIDECAR_BYTES = 1 << 20
QUERY_WEIGHTS_BYTES = 64 << 20


def load_table(
    path: str | Path,
    kind: TableKind,
    metadata: Metadata | None = None,
    hashes: Future[tuple[str, str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    allow_empty: bool = False,
    print_warnings: bool = True,
    allow_empty_option: str | None = None,
    look_for_repeats: bool = False,
) -> LoadedTable:
    """Read, parse and validate judgments or a run; any problem raises InputError naming the file and line: the
    table `open_table` opens, read whole (`TableReading.table`)."""
    return open_table(path, kind, metadata, hashes, limits, look_for_repeats).table(
        allow_empty, print_warnings, allow_empty_option)


def open_table(
    path: str | Path, kind: TableKind, metadata: Metadata | None = None, hashes: Future[tuple[str, str]] | None = None,
    limits: Limits = DEFAULT_LIMITS, look_for_repeats: bool = False,
) -> TableReading:
    """Judgments or a run about to be read (`TableReading`): the file checked, its metadata read, nothing parsed
    yet. Without `metadata`, the sidecar `<file>.meta.toml` is read when present. `hashes` is the file's
    `content_hashes` already under way (flows.hashing); otherwise they are computed beside the parsing, and a
    scanned run this process read already, unchanged since, is taken as it was read (`kept_scan`). `limits` says
    which text is parsed in memory, and in what pieces. `look_for_repeats` (the checks before storing): a file large
    enough to be scanned is also looked at for repeated (query, document) pairs in its reading pass, and proven free
    of them when it holds none (`duplicate_free`), so neither the checks nor the store look again."""
    path = Path(path)
    table_kind = input_kind(kind)
    require_regular_file(path, f"{table_kind.name} file")
    if metadata is None:
        try:
            metadata = read_sidecar(path, kind)
        except InputError as sidecar_error:
            # The other kind's sidecar beside the other kind's file: the arguments were swapped, and that is what
            # to say, not how the sidecar differs from this kind's.
            raise (_swapped_arguments(path, kind, limits) or sidecar_error) from None
    source_format = sniff_format(path)
    key = _scan_key(path, kind, metadata, limits)
    kept = _kept(key) if hashes is None else None
    if hashes is None:
        hashes = kept.hashes if kept is not None else hash_in_background([path])[path]
    parsing = _Parsing(path, table_kind, source_format, metadata, limits, look_for_repeats=look_for_repeats)
    return TableReading(path, table_kind, metadata, hashes, limits, source_format, key, parsing, kept)


@dataclass(frozen=True, eq=False)
class TableReading:
    """A file being read as judgments or a run (`open_table`): the reading pass whose batches a store may take as
    they are read (`reading_pass`: a scanned text run or a Parquet run; the store of flows/store/warehouse.py,
    `OnePassShards`), then the table itself (`table`), as `load_table` returns it, which finishes that pass."""

    path: Path
    kind: InputKind
    metadata: Metadata
    hashes: Future[tuple[str, str]]
    limits: Limits
    source_format: Literal["trec", "trec.gz", "parquet"]
    key: tuple[object, ...]
    parsing: _Parsing
    kept: LoadedTable | None = None  # a scanned run this process read already, unchanged since: not read again

    def reading_pass(self) -> ReadingPass | None:
        """See `_Parsing.reading_pass` (None for a kept table). InputError when a Parquet run's columns fail their
        checks."""
        return None if self.kept is not None else self.parsing.reading_pass()

    def table(
        self, allow_empty: bool = False, print_warnings: bool = True, allow_empty_option: str | None = None
    ) -> LoadedTable:
        """The validated table; InputError naming the file and line of the first problem. A table without rows is
        refused unless `allow_empty` (see `require_rows`; `allow_empty_option` is how the refusal names the switch,
        `--allow-empty` by default). The table's `warnings` are printed on stderr as well (once per file and
        process) unless `print_warnings` is false (the Python API, whose results carry them)."""
        path, kind, metadata, source_format = self.path, self.kind, self.metadata, self.source_format
        option = allow_empty_option or ALLOW_EMPTY_OPTION
        if self.kept is not None:
            if not allow_empty:
                require_rows(self.kept.scan, path, kind.name, source_format, option)
            return self.kept
        parsed = self.parsing.parsed()
        if print_warnings:
            print_once(path, parsed.warnings)
        if not allow_empty:  # a Parquet file's own rows (its footer says), not the checked scan over them
            require_rows(pl.scan_parquet(path) if source_format == "parquet" else parsed.rows, path, kind.name,
                         source_format, option)
        if isinstance(metadata, RunMetadata) and not metadata.tag:
            tag = parsed.common_tag if parsed.common_tag is not None else _common_tag(parsed.rows)
            metadata = metadata.model_copy(update={"tag": tag})
        table = LoadedTable(
            kind=kind.name,  # type: ignore[arg-type]
            scan=parsed.rows,
            source=str(path),
            hashes=self.hashes,
            source_format=source_format,
            metadata=metadata,
            in_memory=source_format != "parquet" and not streamed_text(path, source_format, self.limits),
            # what the position layout of a ranked kind (a run) takes instead of reading the rows again
            query_rows=parsed.query_rows if kind.ranked else None,
            warnings=parsed.warnings,
            duplicate_free=parsed.duplicate_free,
            stretches=parsed.stretches,
        )
        if kind.ranked and not table.in_memory:  # a judgment set's rows are taken into memory whole
            with _SCANNED_TABLES_LOCK:  # a flow's tasks run in threads
                _SCANNED_TABLES[self.key] = table
                while len(_SCANNED_TABLES) > _SCANNED_TABLES_KEPT:
                    del _SCANNED_TABLES[next(iter(_SCANNED_TABLES))]
        return table


def _swapped_arguments(path: Path, kind: TableKind, limits: Limits) -> InputError | None:
    """The error of parsing the file as `kind` without its sidecar, when it says the file looks like the other kind
    (SWAPPED_HINT); otherwise None."""
    table_kind = input_kind(kind)
    try:
        parsed = _Parsing(path, table_kind, sniff_format(path), table_kind.metadata_model(), limits).parsed()
        require_rows(parsed.rows, path, kind, sniff_format(path))
    except InputError as error:
        return error if SWAPPED_HINT in str(error) else None
    return None


# The last runs this process read by scanning their file (large text, Parquet), by the file's identity
# (`hashing.file_identity`) and how they were read: a flow that checks a run before storing it reads and
# checks it once. Their rows stay on disk, so keeping them costs a few small frames; a run parsed in memory is
# never kept (nor judgments, whose rows are taken into memory whole).
_SCANNED_TABLES: dict[tuple[object, ...], LoadedTable] = {}
_SCANNED_TABLES_KEPT = 2
_SCANNED_TABLES_LOCK = threading.Lock()


def _scan_key(path: Path, kind: TableKind, metadata: Metadata, limits: Limits) -> tuple[object, ...]:
    return (file_identity(path), kind, metadata.model_dump_json(), limits)


def kept_scan(
    path: Path, kind: TableKind, metadata: Metadata, limits: Limits = DEFAULT_LIMITS
) -> LoadedTable | None:
    """The table `load_table` read from this file (unchanged since) with this metadata and these limits, when this
    process keeps it (a scanned run), else None."""
    return _kept(_scan_key(path, kind, metadata, limits))


def _kept(key: tuple[object, ...]) -> LoadedTable | None:
    with _SCANNED_TABLES_LOCK:
        return _SCANNED_TABLES.get(key)


def proven_duplicate_free(table: LoadedTable) -> LoadedTable:
    """The table, found by the checks before storing to hold no (query, document) pair twice (see
    `check_before_storing`), saying so (`duplicate_free`). A scanned table this process keeps is replaced by it,
    so the store that reads the same file next takes the proof instead of counting each shard's pairs again."""
    if table.duplicate_free:
        return table
    proven = replace(table, duplicate_free=True)
    with _SCANNED_TABLES_LOCK:
        for key, kept in _SCANNED_TABLES.items():
            if kept is table:
                _SCANNED_TABLES[key] = proven
    return proven


# Files already warned of in this process (path, size, mtime): a file read twice (checked, then stored) is named
# once.
_WARNED_FILES: set[tuple[str, int, int]] = set()


def print_once(path: Path, warnings: tuple[str, ...]) -> None:
    """Print a file's warnings on stderr (`judged: warning: ...`), unless this process printed them already."""
    if not warnings:
        return
    status = path.stat()
    key = (str(path.resolve()), status.st_size, status.st_mtime_ns)
    if key in _WARNED_FILES:
        return
    _WARNED_FILES.add(key)
    for warning in warnings:
        print(f"judged: warning: {warning}", file=sys.stderr)


def ignored_columns_warning(path: Path, lines: pl.LazyFrame) -> str | None:
    """That run lines had more than six columns and that the extra ones were ignored (as trec_eval does), with
    their count and the first such line; None when every line has six."""
    ignored = ignored_run_columns(lines).collect().row(0, named=True)
    if not ignored["n_lines"]:
        return None
    lines_text = "line has" if ignored["n_lines"] == 1 else f"{ignored['n_lines']:,} lines have"
    return (f"{path}, line {ignored['first_line']}: {lines_text} more than 6 columns; the columns after the sixth "
            "were ignored, as trec_eval ignores them (a document id with a space?)")


# How the command line accepts an empty input; named in the refusal.
ALLOW_EMPTY_OPTION = "--allow-empty"


def require_rows(
    rows: pl.LazyFrame, path: Path | str, kind: TableKind, source_format: str, option: str = ALLOW_EMPTY_OPTION
) -> None:
    """InputError unless the table has a row: an empty file, one of blank lines only, a qrels file of
    comments only or a Parquet table of 0 rows is most often a failed export, and would evaluate to every judged
    query missing (an empty run) or to nothing scored (empty judgments). Reads at most one row. `option` names
    the switch that accepts it (the API's is `allow_empty=True`)."""
    if rows.head(1).select(pl.len()).collect().item():
        return
    what = input_kind(kind).noun
    found = {"parquet": "is a Parquet table of 0 rows", "python": "has no rows"}.get(
        source_format, "has no rows (no lines, or only blank or comment lines)")
    raise InputError(str(path), f"{found}: an empty {what} is refused unless {option} is given")


def _common_tag(run: pl.LazyFrame) -> str:
    """The run tag every row carries, or "" when they differ."""
    return tag_of(*run.select(tag_summary()).collect(engine="streaming").row(0))


def _parquet_common_tag(run: pl.LazyFrame) -> str | None:
    """`_common_tag` of a Parquet run whose `run_tag` is a string column (None otherwise, or without one: then
    `_common_tag` decides), found on the file's own column: its first tag, then whether another occurs, which
    Polars answers from the statistics of every row group that holds one tag only."""
    if run.collect_schema().get("run_tag") != pl.String:
        return None
    tags = pl.col("run_tag")
    first = run.select(tags.drop_nulls().first()).collect().item()
    if first is None:
        return ""
    differ = run.filter(tags != first).head(1).collect().height > 0  # nulls are no tag: `!=` leaves them out
    return tag_of(first, differ)


def parse_window(path: Path, source_format: str, metadata: RunMetadata, limits: Limits, window: Window) -> ParsedTable:
    """The rows of one window of a run file (a piece of a scaled-out ingest: flows/store/scaled.py), parsed and
    checked by the parser and the checks of `load_table`, numbered as in the whole file; an InputError names the
    first problem in the window (and counts the window's others: `InputError.more`)."""
    return _Parsing(path, RUN, source_format, metadata, limits, window).parsed()


@dataclass(frozen=True, eq=False)
class StoredTable:
    """A judgment set or run as the warehouse stores it: `<folder>/part-SSSS-of-NNNN.parquet`, split by query
    bucket or, a run whose record says so, by position (transforms/shards.py: `layout`), and its record (a
    JUDGMENT_SETS or RUNS row, also in every part's metadata).
    Compared and hashed by identity, like `LoadedTable`."""

    kind: TableKind
    folder: Path
    record: dict[str, Any]

    @property
    def table_id(self) -> str:
        return str(self.record[input_kind(self.kind).id_column])

    def deferred_id(self) -> Callable[[], str]:
        """`table_id` in the form `LoadedTable.deferred_id` gives (known already)."""
        known = self.table_id
        return lambda: known

    @property
    def shards(self) -> int:
        return int(self.record["n_shards"])

    @property
    def in_shards(self) -> bool:
        return True

    @property
    def layout(self) -> RunLayout:
        """How its shards are cut: a run's record says (a run stored before layouts, and a judgment set, by
        bucket)."""
        return RunLayout(self.record.get("layout") or RunLayout.BUCKET.value)

    @property
    def n_rows(self) -> int:
        return int(self.record["n_rows"])

    @cached_property
    def _counted_pairs(self) -> dict[Path, int | None]:
        """Each part's duplicate pairs counted at ingest, as `stored_duplicate_pairs` reads them (once a part)."""
        return {}

    @property
    def n_queries(self) -> int:
        return int(self.record["n_queries"])

    @property
    def metadata(self) -> Metadata:
        model = input_kind(self.kind).metadata_model
        return model.model_validate_json(self.record["metadata_json"])

    @property
    def name(self) -> str:
        """A run's display name (see `RunMetadata.display_name`), the source file's name as the last resort."""
        metadata = self.metadata
        fallback = Path(self.record["source"]).name
        return metadata.display_name(fallback) if isinstance(metadata, RunMetadata) else fallback

    def parts(self, shard: int = 0, of: int = 1) -> list[Path]:
        """The part files holding shard `shard` of `of`: the stored parts p with p mod `of` = s. By bucket, shard s
        of `of` holds the buckets b with b mod `of` = s; with power-of-two counts these lie in those parts (more
        stored shards) or in p = s mod stored (fewer). By position, a part of `of` (at most the stored shards) is
        those stored shards, whole."""
        stored = self.shards
        return [
            path for path in sorted(self.folder.glob("part-*-of-*.parquet"))
            if (number := int(path.name.split("-")[1])) % of == shard or (stored < of and number == shard % stored)
        ]

    def part_queries(self, parts: list[Path]) -> pl.DataFrame:
        """The queries (`query_id`) of these parts of a run stored by position, as each part's metadata lists them
        (its footer, not its rows)."""
        listed = [json.loads(pl.read_parquet_metadata(path)[PART_QUERIES_KEY]) for path in parts]
        return pl.DataFrame({QUERY: [query for queries in listed for query in queries]}, schema={QUERY: pl.String})

    def ranked(self, parts: list[Path] | None = None) -> bool:
        """Whether these parts (all by default) hold a run in the ranked layout (transforms/layout.py), proven
        free of duplicate pairs at ingest: then a top-k spec reads only each query's head (see `load`)."""
        parts = self.parts() if parts is None else parts
        return (
            input_kind(self.kind).ranked and bool(parts) and stored_duplicate_pairs(parts, self._counted_pairs) == 0
            and {"position", "query_rows"} <= set(pl.read_parquet_schema(parts[0]))
        )

    def load(self, shard: int | None = None, of: int = 1) -> LoadedTable:
        """The rows of shard `shard` of `of` (all by default) as the engine takes them. A run stored in its
        ranked layout (transforms/layout.py) and proven free of duplicate pairs at ingest also offers those rows
        in stored order, so a top-k spec reads only each query's head. A run stored by position also gives the
        part's queries as its files list them (`part_queries`), by which its judgments are found."""
        shard = 0 if shard is None else shard
        wanted = self.parts(shard, of)
        by_position = self.layout is RunLayout.POSITION
        # By bucket, a stored part may hold other buckets than the shard's (fewer stored shards than `of`).
        return self._loaded(wanted, None if by_position else in_shard(shard, of),
                            self.part_queries(wanted) if by_position else None)

    def load_queries(self, queries: pl.DataFrame, without: bool = False) -> LoadedTable:
        """Its rows of these queries (`query_id`; `without`: of every other query), found by a semi-join (an
        anti-join). Stored by bucket, only the parts holding the queries' buckets are read: a judgment set's
        layout is the index from which a list of queries reads fast."""
        queries = queries.select(QUERY).lazy()
        wanted = self.parts()
        if self.layout is RunLayout.BUCKET and not without:
            holding = shards_of_buckets(query_buckets(queries).collect()["bucket"], self.shards)
            wanted = [path for path in wanted if int(path.name.split("-")[1]) in holding]
        table = self._loaded(wanted, None, None)
        how = "anti" if without else "semi"

        def kept(rows: pl.LazyFrame) -> pl.LazyFrame:
            return rows.join(queries, on=QUERY, how=how, maintain_order="left")

        return replace(table, scan=kept(table.scan),
                       stored_order=None if table.stored_order is None else kept(table.stored_order))

    def _loaded(self, wanted: list[Path], keep: pl.Expr | None, queries: pl.DataFrame | None) -> LoadedTable:
        """These part files' rows (those `keep` keeps) as the engine takes them; `queries`: the parts' queries as
        their metadata lists them."""
        # Its optional columns (a judgment's `assessor`) are in its files or not, as in the table read at ingest.
        stored_contract = input_kind(self.kind).rows.contract.schema_for(())
        contract = input_kind(self.kind).input_contract
        rows = pl.scan_parquet(wanted) if wanted else pl.LazyFrame(schema=stored_contract)
        if keep is not None:
            rows = rows.filter(keep)
        counted = stored_duplicate_pairs(wanted, self._counted_pairs) if input_kind(self.kind).ranked else None
        duplicate_free = counted == 0
        ranked = in_contract(rows, contract, "position", "query_rows") if self.ranked(wanted) else None
        return LoadedTable(
            kind=self.kind,
            scan=in_contract(rows, contract),
            source=str(self.record["source"]),
            hashes=known_hashes(str(self.record["source_sha256"]), str(self.record["content_sha256"])),
            source_format=self.record["source_format"],
            metadata=self.metadata,
            duplicate_free=duplicate_free,
            stored_order=ranked,
            stored_part=True,
            counted_duplicate_pairs=counted,
            part_queries=queries,
        )


def stored_duplicate_pairs(parts: list[Path], known: dict[Path, int | None] | None = None) -> int | None:
    """Duplicate (query, document) pairs in these parts of a stored run, as counted at ingest (each part's
    `judged.duplicate_pairs`); None when a part was written without the count. `known`: each part's count once
    read, kept there (a part's metadata is then read once)."""
    known = {} if known is None else known
    total = 0
    for path in parts:
        if path not in known:
            counted = pl.read_parquet_metadata(path).get(DUPLICATE_PAIRS_KEY)
            known[path] = None if counted is None else int(counted)
        if (count := known[path]) is None:
            return None
        total += count
    return total


def open_stored(folder: Path, kind: TableKind) -> StoredTable:
    """A stored table's folder on its own (`W/run_rows/<run_id>`): its record comes from the parts' metadata."""
    parts = sorted(folder.glob("part-*-of-*.parquet"))
    if not parts:
        raise InputError(str(folder), "not a stored table: no part-SSSS-of-NNNN.parquet files")
    try:
        metadata = pl.read_parquet_metadata(parts[0])
        (record,) = json.loads(metadata["judged.record"])
        stored_kind = metadata["judged.table"]
    except (KeyError, ValueError, pl.exceptions.PolarsError):
        raise InputError(str(parts[0]), "has no judged.record metadata: not written by judged") from None
    if stored_kind != kind:
        wanted = input_kind(kind).noun
        raise InputError(str(folder), f"holds a stored {stored_kind!r} table, not a {wanted}")
    return StoredTable(kind=kind, folder=folder, record=record)
