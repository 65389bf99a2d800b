"""Reading input files: TREC text (plain or gzip, detected from the bytes) and Parquet, into the typed tables.

Belongs here: everything that touches a path on the way in (opening, decompressing, hashing, turning the file's lines
into a LazyFrame), then the parse and conform transforms and the checks that raise `InputError` naming the file;
and reading a large scan once in batches of whole queries (`whole_stretch_batches`), which the reading pass's
checks and the engine's scanned parts share.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
import sys
import threading
import tomllib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import ValidationError

import polars as pl

from judged.flows.store.hashing import file_identity, hash_in_background, is_gzipped, known_hashes
from judged.flows.engine.limits import DEFAULT_LIMITS, Limits
from judged.flows.store.kinds import input_kind
from judged.schemas.fields import QUERY
from judged.schemas.provenance import JudgmentSetMetadata, RunMetadata, table_id
from judged.transforms.errors import InputError
from judged.transforms.parse import (
    SWAPPED_HINT,
    conform_judgments, conform_run, ignored_run_columns, in_contract, parse_trec_qrels, parse_trec_run,
    raise_first_problem, run_problem_probe,
)
from judged.transforms.duplicates import stretches_may_have_duplicates
from judged.transforms.trec_grammar import BLANKS, BYTE_ORDER_MARK, holds_blank, is_not_a_first_field
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
        return replace(self, scan=in_this_part.lazy(), in_memory=True)

    def load_queries(self, queries: pl.DataFrame, without: bool = False) -> LoadedTable:
        """Its rows of these queries (`query_id`; `without`: of every other query), held in memory: the judgments
        of a part of a run stored by position, found by a semi-join (an anti-join) on the part's queries. The table
        is read once, on first use, as `frame`."""
        how = "anti" if without else "semi"
        in_these = self.frame.join(queries.select(QUERY), on=QUERY, how=how, maintain_order="left")
        return replace(self, scan=in_these.lazy(), in_memory=True)

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
        """Rows, distinct queries and unresolved grades, streaming."""
        if self.kind == "run" and self.query_rows is not None:
            return {"n_rows": int(self.query_rows["n_rows"].sum()), "n_unresolved": 0,
                    "n_queries": self.query_rows.height}
        unresolved = pl.col("relevance").null_count() if self.kind == "judgments" else pl.lit(0, pl.UInt32)
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


_FAST_COLUMNS: dict[TableKind, dict[str, pl.DataType]] = {
    "run": {
        # q0 as an Enum of its two allowed values: any other value fails the read (then the exact parser names the
        # line), and each row holds one byte instead of a string. The rank as Int32, half the memory (the
        # contract's Int64 is a lazy cast): a rank beyond it fails the read, and the exact parser takes the file.
        "query_id": pl.String(), "q0": pl.Enum(["Q0", "0"]), "doc_id": pl.String(), "source_rank": pl.Int32(),
        "score": pl.Float64(), "run_tag": pl.String(),
    },
    "judgments": {"query_id": pl.String(), "iteration": pl.String(), "doc_id": pl.String(), "relevance": pl.Int32()},
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
    duplicate_free: bool = False  # proven by the reading pass (`_checked_by_query`): no (query, document) pair twice


class BatchTaker(Protocol):
    """Who takes a scanned text run's (or a Parquet run's) batches from its reading pass, as they are checked: the store
    writing the run's shards in the same pass (flows/store/warehouse.py, `OnePassShards`). `begin` names the tag every
    row carries (the reader's attempt that assumes one; a Parquet run's common tag, "" when they differ); `take` gets
    each batch of whole stretches in the contract, once it passed the checks and the look for repeats; `stop` says why
    no more will come (a batch failed them: the reader then names the problem, or reads the file another way); `end`
    follows the last batch of a pass that stopped nowhere."""

    def begin(self, tag: str) -> None: ...

    def take(self, batch: pl.DataFrame) -> None: ...

    def stop(self, reason: str) -> None: ...

    def end(self) -> None: ...


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


def _tag_summary() -> list[pl.Expr]:
    """A run tag (null when there is none) and whether the non-null tags differ (see `_common_tag`): the smallest
    and the largest, as two aggregates that Polars' streaming engine keeps in constant memory. (Comparing every tag
    with the first one makes it hold the columns of every check beside it.)"""
    tag = pl.col("run_tag")
    return [tag.min().alias("some_tag"), (tag.min() != tag.max()).alias("tags_differ")]


def _tag_of(tag: object, differ: object) -> str:
    return "" if tag is None or differ else str(tag)


def read_trec_fast(
    path: Path, gzipped: bool, kind: TableKind, limits: Limits = DEFAULT_LIMITS, window: Window | None = None,
    look_for_repeats: bool = False, taker: BatchTaker | None = None,
) -> ParsedTable | None:
    """The common case at full speed: a run's six (qrels' four) columns split by one tab or one space throughout,
    Polars' multithreaded CSV reader (in memory, or streaming for large files). Returns None whenever the file is
    not plainly that (extra columns, runs of blanks, comments, a bad value): the exact line parser then decides,
    and names the line of any problem.

    A run's rows nearly always carry one tag, so the tag column is first read as an Enum of the first line's tag
    (one byte a row instead of a string); a run with another tag anywhere (or that this
    first read turns down for any reason) is read again with plain strings. With a `window`, only its lines.
    `look_for_repeats` and `taker`: see `load_table` (the taker takes the batches of the read that assumes one tag
    only)."""
    columns = _FAST_COLUMNS[kind]
    try:
        first_line = _first_line(path, gzipped, window)
    except (OSError, EOFError):  # a damaged gzip stream: the exact parser names the problem
        return None
    separator = "\t" if "\t" in first_line else " "
    fields = first_line.rstrip("\r\n").split(separator)
    attempts = [columns]
    if kind == "run" and len(fields) == len(columns) and fields[-1] and not any(b in fields[-1] for b in BLANKS):
        attempts.insert(0, columns | {"run_tag": pl.Enum([fields[-1]])})
    for attempt in attempts:
        one_tag = attempt is not columns
        if one_tag and taker is not None:
            taker.begin(fields[-1])
        read = _read_fast(path, gzipped, kind, separator, attempt, limits, window, look_for_repeats,
                          taker if one_tag else None)
        if one_tag and taker is not None and read is None:
            taker.stop("the run is not plainly six columns with one tag")
        if read is not None:
            return read
    return None


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
        pieces = []
        for start, end in itertools.pairwise([start, *_piece_ends(fd, end, piece_bytes, start)]):
            data = os.pread(fd, end - start, start)
            # Polars drops a byte order mark that begins what it reads; the grammar, only the file's first.
            if start > 0 and data.startswith(_BYTE_ORDER_MARK_BYTES):
                raise _NotPlain("a line after the first begins with a byte order mark")
            pieces.append(pl.read_csv(data, **options))
    return pl.concat(pieces, rechunk=False)


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


def _read_fast(
    path: Path, gzipped: bool, kind: TableKind, separator: str, columns: dict[str, pl.DataType], limits: Limits,
    window: Window | None = None, look_for_repeats: bool = False, taker: BatchTaker | None = None,
) -> ParsedTable | None:
    """One attempt of `read_trec_fast`, with these column types (`taker`: of a scanned file's batches)."""
    # A line of fewer fields reads as nulls (`missing`), even the first of a piece (a piece of blank lines).
    options = dict(
        separator=separator, has_header=False, new_columns=list(columns), schema_overrides=columns,
        quote_char=None, comment_prefix=None, raise_if_empty=False, missing_columns="insert",
    )
    streamed = streamed_text(path, "trec.gz" if gzipped else "trec", limits, window)
    engine = "streaming" if streamed else "in-memory"
    first = 1 if window is None else window.first
    try:
        if not streamed:
            read = _read_csv_in_pieces(path, gzipped, options, limits.text_piece_bytes, window)
            # A blank line reads as a row of nulls: numbering rows before dropping them keeps editors' line numbers.
            blank = pl.all_horizontal(pl.all().is_null())
            has_blank = read.height > 0 and read.select(blank.any()).item()
            # Line numbers made as Int64, the contract's type: a cast of a row index would be a pass over every row.
            rows = read.lazy().with_columns(source_line=pl.int_range(first, pl.len() + first, dtype=pl.Int64))
            if has_blank:
                rows = rows.filter(~pl.all_horizontal(pl.exclude("source_line").is_null())).collect().lazy()
        else:
            rows = pl.scan_csv(path, **options).with_row_index("source_line", offset=1)  # type: ignore[arg-type]
            rows = rows.filter(~pl.all_horizontal(pl.exclude("source_line").is_null()))
        if len(rows.collect_schema()) != len(columns) + 1:
            return None
        query_rows, duplicate_free = None, False
        if streamed:
            found, query_rows, duplicate_free = _checked_by_query(rows, kind, limits.streamed_candidate_part_rows,
                                                                  look_for_repeats, taker)
        else:
            checks = _row_checks(rows)
            found = rows.select(
                *(check for check in checks if check.meta.output_name() != "blank"),
                _query_ids_checked(pl.col(QUERY).rle().struct.field("value")), *(_tag_summary() if kind == "run" else []),
            ).collect(engine=engine).row(0, named=True) | {"blank": _blank_in_slices(read, checks)}
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError, _NotPlain):
        return None
    if any(found[check] for check in _DECLINING):
        return None
    # Left lazy over the rows read (or the file, when streamed): line numbers are only made when a query uses them.
    common_tag = _tag_of(found["some_tag"], found["tags_differ"]) if kind == "run" else None
    return ParsedTable(in_contract(rows, input_kind(kind).input_contract.schema), common_tag, query_rows,
                       duplicate_free=duplicate_free)


# The checks after which the fast reader leaves a file to the exact parser (`_row_checks`, `_query_ids_checked`).
_DECLINING = ("missing", "blank", "nan", "comment")


def _row_checks(rows: pl.LazyFrame | pl.DataFrame) -> list[pl.Expr]:
    """The fast reader's checks of its rows (`_DECLINING`), each an aggregate that is true when the file must be left
    to the exact parser: `missing`, an empty field (the CSV reader, without quoting, reads one as a null: a doubled
    separator, or a short line); `blank`, a field other than the query id holding a blank, which a split on one
    separator byte kept whole where the grammar splits it or drops it (transforms/trec_grammar.py); and a run's
    `nan`, a score that is not finite (NaN, inf, -inf, 1e999), whose line the exact parser names. The query ids are
    looked at once a stretch of one id (`_query_ids_checked`).

    `blank` looks at each column's text joined (per batch, per query, or per `_SLICE_ROWS` rows of a table in
    memory: `_blank_in_slices`), one search over its bytes, which costs half as much as one search a field."""
    schema = rows.collect_schema()
    texts = [name for name, dtype in schema.items() if dtype == pl.String and name != QUERY]
    return [
        pl.any_horizontal(pl.exclude("source_line").is_null().any()).alias("missing"),
        pl.any_horizontal([holds_blank(pl.col(name).str.join()) for name in texts] or [False]).alias("blank"),
        ((~pl.col("score").is_finite()).any() if "score" in schema else pl.lit(False)).alias("nan"),
    ]


# Rows of a table in memory whose text columns are joined at once to look for blanks: a few MB of text.
_SLICE_ROWS = 1 << 20


def _blank_in_slices(table: pl.DataFrame, checks: list[pl.Expr]) -> bool:
    """`_row_checks`' `blank` of a table in memory, looked for a slice of rows at a time."""
    (blank,) = [check for check in checks if check.meta.output_name() == "blank"]
    return any(part.select(blank).item() for part in table.iter_slices(_SLICE_ROWS))


def _query_ids_checked(query_ids: pl.Expr) -> pl.Expr:
    """`comment`: whether one of these query ids (one a stretch) is not a line's first field as the grammar reads it:
    a comment line's, or one holding a blank."""
    return is_not_a_first_field(query_ids).any().alias("comment")


class _NotPlain(Exception):
    """A piece of a file the fast reader leaves to the exact parser, found before it is parsed."""


def whole_stretch_batches(rows: pl.LazyFrame, part_rows: int) -> Iterator[pl.DataFrame]:
    """A scan's rows read once in batches of about `part_rows` rows, each cut after its last whole stretch of one
    query id (the rest waits for the next batch)."""
    held: pl.DataFrame | None = None
    for batch in rows.collect_batches(chunk_size=part_rows, engine="streaming"):
        if batch.height == 0:
            continue
        if held is not None:
            batch = pl.concat([held, batch], rechunk=False)
        last_start = last_stretch_start(batch[QUERY])
        if last_start:
            yield batch.slice(0, last_start)
        held = batch.slice(last_start)
    if held is not None and held.height:
        yield held


def last_stretch_start(query_ids: pl.Series) -> int:
    """The offset of the last stretch of one query id in `query_ids` (0: one stretch throughout). It is looked for
    from the end, in windows that double: a stretch is one query's rows, short beside a batch, so this compares a
    few thousand ids where `transforms.ranking.stretch_starts` compares every one (most of a batch's cost beside its
    candidates)."""
    last, window = query_ids[-1], 1 << 12
    while True:
        start = max(query_ids.len() - window, 0)
        others = (query_ids.slice(start) != last).arg_true()
        if others.len():
            return start + int(others[-1]) + 1
        if start == 0:
            return 0
        window *= 2


# The rows a scanned run's reading pass looks at first, to see whether its queries are scattered (`_checked_by_query`).
_PEEK_ROWS = 10_000


def _checked_by_query(
    rows: pl.LazyFrame, kind: TableKind, batch_rows: int, look_for_repeats: bool = False,
    taker: BatchTaker | None = None, validated: bool = False,
) -> tuple[dict[str, Any], pl.DataFrame | None, bool]:
    """`_read_fast`'s checks of a scanned file, made in the same pass that counts each query's rows, read a batch of
    about `batch_rows` rows of whole stretches of one query id at a time (`whole_stretch_batches`): (the checks,
    `query_id` -> `n_rows`, `first_line`, `last_line`, and whether no (query, document) pair occurs twice, proven
    with `look_for_repeats` when each query's rows lie in one stretch and no batch may repeat a document within a
    query; without it, False). The store takes its counts, the query ids and whether each query's lines lie together
    from these, and the checks before storing and the store's duplicate count take the proof, instead of parsing a
    large file again to find them. Beside a batch, this holds one row per query and batch (a query in several
    stretches of a batch counted once). A file whose first `_PEEK_ROWS` rows already hold a query in two stretches (a
    shuffled run) is checked and counted by one streaming group-by by query instead, no batch made. A `taker` (with
    `look_for_repeats`) gets each batch that passed the checks and the look, in the contract, until one fails them.
    `validated`: the rows were checked before, by their own parser (a Parquet run: `conform_run`), so none of the fast
    reader's checks is made (the first value is empty), and the pass ends at its first rows or at the first batch the
    look for repeats turns down, without counts (None): the run is then read another way, and a shuffled run is not
    read whole to find it out."""
    tag = pl.col("run_tag")
    checks = [*_row_checks(rows), *([tag.min().alias("tag_min"), tag.max().alias("tag_max")] if kind == "run" else [])]
    per_query = [
        pl.col("len").sum().alias("n_rows"), pl.col("first_line").min(), pl.col("last_line").max(),
        pl.len().alias("stretches"),
    ]
    empty = rows.clear().collect()
    found = [empty.select(checks)]
    counted = [empty.select(QUERY, len=pl.lit(0, pl.UInt32), first_line="source_line", last_line="source_line")
               .group_by(QUERY).agg(per_query)]
    duplicate_free = look_for_repeats
    # A run whose first rows hold a query in two stretches (a shuffled run) can be neither proven free of repeats
    # nor cut by position: its checks and counts are then one streaming group-by by query, with no batch made.
    first_stretches = rows.head(_PEEK_ROWS).collect(engine="streaming")[QUERY].rle().struct.field("value")
    scattered = first_stretches.n_unique() < first_stretches.len()
    if scattered:
        duplicate_free = False
        if taker is not None:
            taker.stop("a query's rows in two stretches")
        if validated:
            return {}, None, False
        by_query = rows.group_by(QUERY).agg(
            n_rows=pl.len(), first_line=pl.col("source_line").min(), last_line=pl.col("source_line").max(), *checks,
        ).collect(engine="streaming")
        # A row of checks per query, reduced with the others at the end.
        found.append(by_query.select(
            (pl.col("missing") | pl.col(QUERY).is_null()).alias("missing"), "blank", "nan",
            _query_ids_checked(pl.col(QUERY)), *(["tag_min", "tag_max"] if kind == "run" else []),
        ))
        counted.append(by_query.select(QUERY, "n_rows", "first_line", "last_line"))
    for batch in () if scattered else whole_stretch_batches(rows, batch_rows):
        stretches = batch[QUERY].rle().struct.unnest().rename({"value": QUERY})
        if not validated:
            found.append(batch.select(*checks, _query_ids_checked(pl.lit(stretches[QUERY]))))
        ends = stretches["len"].cum_sum()
        stretches = stretches.with_columns(first_line=batch["source_line"].gather(ends - stretches["len"]),
                                           last_line=batch["source_line"].gather(ends - 1))
        counted.append(stretches.group_by(QUERY).agg(per_query))
        if duplicate_free:  # the batch is in memory: the in-memory engine groups it faster than the streaming one
            duplicate_free = (counted[-1].height == stretches.height  # each query one stretch
                              and not stretches_may_have_duplicates(batch.lazy()).collect(engine="in-memory").item())
        if validated and not duplicate_free:
            if taker is not None:
                taker.stop("a query's rows in two stretches, or a document it may hold twice")
            return {}, None, False
        if taker is not None:
            if not duplicate_free:
                taker.stop("a query's rows in two stretches, or a document it may hold twice")
            elif not validated and found[-1].select(pl.any_horizontal(_DECLINING)).item():
                taker.stop("a line the fast reader leaves to the exact parser")
            else:
                taker.take(_taken(batch, kind))
    if taker is not None:
        taker.end()
    queries = pl.concat(counted, how="diagonal").group_by(QUERY).agg(
        pl.col("n_rows").sum(), pl.col("first_line").min(), pl.col("last_line").max(), pl.col("stretches").sum())
    checked = {} if validated else pl.concat(found, how="diagonal").select(
        pl.col(_DECLINING).any(),
        *([pl.col("tag_min").min().alias("some_tag"),
           (pl.col("tag_min").min() != pl.col("tag_max").max()).alias("tags_differ")] if kind == "run" else []),
    ).row(0, named=True)
    duplicate_free = duplicate_free and bool((queries["stretches"] == 1).all())
    return checked, queries.select(QUERY, "n_rows", "first_line", "last_line"), duplicate_free


def _taken(batch: pl.DataFrame, kind: TableKind) -> pl.DataFrame:
    """A batch that passed the checks, in the contract, as a `BatchTaker` takes it. A run's tag that is one value
    throughout the batch (nearly always) becomes a constant column: Polars then neither converts it row by row nor
    gathers it when a shard is put in stored order, and writes the same file."""
    rows = batch.lazy()
    if kind == "run":
        tag = batch["run_tag"]
        if tag.null_count() == 0 and (value := tag.min()) == tag.max():
            rows = rows.with_columns(run_tag=pl.lit(value, pl.String))
    return in_contract(rows, input_kind(kind).input_contract.schema).collect(engine="in-memory")


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
    taker: BatchTaker | None = None,
) -> LoadedTable:
    """Read, parse and validate judgments or a run; any problem raises InputError naming the file and line.
    Without `metadata`, the sidecar `<file>.meta.toml` is read when present. `hashes` is the file's
    `content_hashes` already under way (flows.hashing); otherwise they are computed beside the parsing. `limits`
    says which text is parsed in memory, and in what pieces. A table without rows is refused unless `allow_empty`
    (see `require_rows`; `allow_empty_option` is how the refusal names the switch, `--allow-empty` by default).
    The table's `warnings` are printed on stderr as well (once per file and process) unless `print_warnings` is
    false (the Python API, whose results carry them). `look_for_repeats` (the checks before storing): a text file
    large enough to be scanned is also looked at for repeated (query, document) pairs in its reading pass, and
    proven free of them when it holds none (`duplicate_free`), so neither the checks nor the store look again. A
    `taker` (with `look_for_repeats`, a scanned text run or a Parquet run) gets the reading pass's batches as they
    pass the checks (`BatchTaker`); the file is then read even when this process read it before."""
    path = Path(path)
    require_regular_file(path, "judgments file" if kind == "judgments" else "run file")
    if metadata is None:
        try:
            metadata = read_sidecar(path, kind)
        except InputError as sidecar_error:
            # The other kind's sidecar beside the other kind's file: the arguments were swapped, and that is what
            # to say, not how the sidecar differs from this kind's.
            raise (_swapped_arguments(path, kind, limits) or sidecar_error) from None
    source_format = sniff_format(path)
    key = _scan_key(path, kind, metadata, limits, allow_empty)
    scanned = _kept(key) if hashes is None and taker is None else None
    if scanned is not None:
        return scanned
    if hashes is None:
        hashes = hash_in_background([path])[path]
    parsed = _parse(path, kind, source_format, metadata, limits, look_for_repeats=look_for_repeats, taker=taker)
    if print_warnings:
        print_once(path, parsed.warnings)
    if not allow_empty:  # a Parquet file's own rows (its footer says), not the checked scan over them
        require_rows(pl.scan_parquet(path) if source_format == "parquet" else parsed.rows, path, kind, source_format,
                     allow_empty_option or ALLOW_EMPTY_OPTION)
    if isinstance(metadata, RunMetadata) and not metadata.tag:
        tag = parsed.common_tag if parsed.common_tag is not None else _common_tag(parsed.rows)
        metadata = metadata.model_copy(update={"tag": tag})
    table = LoadedTable(
        kind=kind,
        scan=parsed.rows,
        source=str(path),
        hashes=hashes,
        source_format=source_format,
        metadata=metadata,
        in_memory=source_format != "parquet" and not streamed_text(path, source_format, limits),
        query_rows=parsed.query_rows if kind == "run" else None,
        warnings=parsed.warnings,
        duplicate_free=parsed.duplicate_free,
    )
    if kind == "run" and not table.in_memory:
        with _SCANNED_TABLES_LOCK:  # a flow's tasks run in threads
            _SCANNED_TABLES[key] = table
            while len(_SCANNED_TABLES) > _SCANNED_TABLES_KEPT:
                del _SCANNED_TABLES[next(iter(_SCANNED_TABLES))]
    return table


def _swapped_arguments(path: Path, kind: TableKind, limits: Limits) -> InputError | None:
    """The error of parsing the file as `kind` without its sidecar, when it says the file looks like the other kind
    (SWAPPED_HINT); otherwise None."""
    model = input_kind(kind).metadata_model
    try:
        parsed = _parse(path, kind, sniff_format(path), model(), limits)
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


def _scan_key(
    path: Path, kind: TableKind, metadata: Metadata, limits: Limits, allow_empty: bool
) -> tuple[object, ...]:
    return (file_identity(path), kind, metadata.model_dump_json(), limits, allow_empty)


def kept_scan(
    path: Path, kind: TableKind, metadata: Metadata, limits: Limits = DEFAULT_LIMITS, allow_empty: bool = False
) -> LoadedTable | None:
    """The table `load_table` read from this file (unchanged since) with these arguments, when this process keeps
    it (a scanned run), else None."""
    return _kept(_scan_key(path, kind, metadata, limits, allow_empty))


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
    return _tag_of(*run.select(_tag_summary()).collect(engine="streaming").row(0))


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
    return _tag_of(first, differ)


def _parse(
    path: Path, kind: TableKind, source_format: str, metadata: Metadata, limits: Limits, window: Window | None = None,
    look_for_repeats: bool = False, taker: BatchTaker | None = None,
) -> ParsedTable:
    """The validated table in its contract; InputError on the first problem. A Parquet input stays a lazy scan,
    validated on its own columns (a run: `run_problem_probe`) or in one streaming pass that numbers the rows, which
    names the first problem; text is parsed in memory. With a `window` (a run's), only its lines or rows, numbered
    as in the whole file. A Parquet run with `look_for_repeats` and a `taker` is then read once more, in batches
    of whole queries that are looked at for repeats, counted and given to the taker (`_checked_by_query`), as the
    reading pass of a scanned text run gives them."""
    unresolved_token = getattr(metadata, "unresolved_token", None)
    if source_format != "parquet" and unresolved_token is None:
        fast = read_trec_fast(path, source_format == "trec.gz", kind, limits, window, look_for_repeats, taker)
        if fast is not None:
            return fast
    if source_format == "parquet":
        contract = input_kind(kind).input_contract.schema
        try:
            scanned = pl.scan_parquet(path)
            if window is not None:
                scanned = scanned.slice(window.start, window.end - window.start)
            first_row = 1 if window is None else window.first
            conformed = (
                conform_judgments(scanned, str(path), unresolved_declared=unresolved_token is not None)
                if kind == "judgments" else conform_run(scanned, str(path), first_row)
            )
            probe = run_problem_probe(scanned) if kind == "run" else None
            if probe is None or probe.collect(engine="streaming").height:  # numbered, to name the first problem
                problems = (
                    conformed.filter(pl.col("problem").is_not_null()).select("source_line", "problem")
                    .collect(engine="streaming")
                )
                raise_first_problem(problems, str(path), "row")
            tag_wanted = isinstance(metadata, RunMetadata) and not metadata.tag
            common_tag = _parquet_common_tag(scanned) if tag_wanted else None
            rows = in_contract(conformed, contract)
            query_rows, duplicate_free = None, False
            if taker is not None and look_for_repeats and kind == "run" and window is None:
                if tag_wanted and common_tag is None:
                    common_tag = _common_tag(rows)
                taker.begin(common_tag or "")
                _, query_rows, duplicate_free = _checked_by_query(
                    rows, kind, limits.streamed_candidate_part_rows, True, taker, validated=True)
        except pl.exceptions.PolarsError as error:
            raise InputError(str(path), f"cannot be read as Parquet: {str(error).splitlines()[0]}") from None
        return ParsedTable(rows, common_tag, query_rows, duplicate_free=duplicate_free)
    lines = read_lines(path, gzipped=source_format == "trec.gz", window=window)
    unresolved = metadata.unresolved_token if isinstance(metadata, JudgmentSetMetadata) else None
    parsed = (parse_trec_qrels(lines, unresolved) if kind == "judgments" else parse_trec_run(lines)).collect()
    raise_first_problem(parsed.select("source_line", "problem"), str(path), "line")
    warning = ignored_columns_warning(path, lines) if kind == "run" else None
    return ParsedTable(in_contract(parsed.lazy(), input_kind(kind).input_contract.schema),
                       warnings=() if warning is None else (warning,))


def parse_window(path: Path, source_format: str, metadata: RunMetadata, limits: Limits, window: Window) -> ParsedTable:
    """The rows of one window of a run file (a piece of a scaled-out ingest: flows/store/scaled.py), parsed and
    checked by the parser and the checks of `load_table`, numbered as in the whole file; an InputError names the
    first problem in the window (and counts the window's others: `InputError.more`)."""
    return _parse(path, "run", source_format, metadata, limits, window)


def tag_of_extremes(smallest: str | None, largest: str | None) -> str:
    """The tag every row of a run carries, from the smallest and the largest of its tags (null: none), "" when they
    differ: as `load_table` finds a run's common tag, for a run whose pieces were read apart."""
    return _tag_of(smallest, smallest != largest)


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
            self.kind == "run" and bool(parts) and stored_duplicate_pairs(parts, self._counted_pairs) == 0
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
        stored_contract = input_kind(self.kind).rows.schema
        contract = input_kind(self.kind).input_contract.schema
        rows = pl.scan_parquet(wanted) if wanted else pl.LazyFrame(schema=stored_contract)
        if keep is not None:
            rows = rows.filter(keep)
        counted = stored_duplicate_pairs(wanted, self._counted_pairs) if self.kind == "run" else None
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
