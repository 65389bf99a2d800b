"""The warehouse: immutable, content-addressed Parquet files under one directory, and their DuckDB catalog.

Belongs here: where each table lives (from its kind's declaration in flows/store/kinds.py), atomic writes (written
in a private staging folder, then renamed into place; never a rewrite in place), storing and reading back judgment
sets, runs and evaluations, and regenerating the views-only catalog. Visibility follows one rule: a table's rows are visible (to the views and to `exists`) only once
its record file is in place, and the record is always written last.

Staging: every file or folder is written under `_staging/<uuid>/` (mirroring its final path), which no view's glob
reaches, and renamed into place whole. The writer holds an exclusive lock (flock) on `_staging/<uuid>.lock` while it
writes; the kernel drops the lock when its process dies, even by kill -9. Every writer, when it starts
(`Store.ensure`), removes the staging folders whose lock nobody holds: a crashed writer's leftovers can neither
show in a view nor break a refresh or a rerun. A flow that checks a large text run (or a Parquet run) before
storing it holds a `staging_area` from the checks to the store: the run's reading pass stages its shards there
(`read_run`), the checks return that folder's path, and the store is handed it (`StagedShards`); the area's removal
drops whatever no store took.

Layout (every table's files are immutable; ids are content-derived; each kind's folders: flows/store/kinds.py):
    judgment_sets/<judgment_set_id>.parquet     record    judgments/<judgment_set_id>/part-SSSS-of-NNNN.parquet  rows
    runs/<run_id>.parquet                       record    run_rows/<run_id>/part-SSSS-of-NNNN.parquet            rows
    evaluations/<evaluation_id>.parquet         record    per_query/<evaluation_id>/part-SSSS-of-NNNN.parquet    rows
    summary/<evaluation_id>/part-0.parquet      rows      nightly/<claim_id>.parquet      one inbox file's record
    judgment_lineage/<judgment_set_id>.parquet  rows, shown with the judgment set's record
    comparison_records/<comparison_id>.parquet  record    comparisons/<comparison_id>/part-0.parquet              rows
                                                          comparison_per_query/<comparison_id>/part-0.parquet     rows
    worklists/<worklist_id>.parquet             a worklist, record and rows in one
    catalog.duckdb                              views only, replaced by rename; catalog.duckdb.built: from what
    _staging/<uuid>/...  and  _staging/<uuid>.lock                 files being written, and their writer's lock
Rows of judgments, runs and per-query results are split into shards by query (transforms/shards.py): a run whose
queries each lie together in its file by position (`sink_position_shards`, one streaming pass, each part listing its
queries), any other table by bucket (`sink_shards`); `position_blocks` chooses, and the run's record says which.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import BinaryIO, Literal, Protocol

import duckdb
import polars as pl
import pyarrow.parquet as pq

from judged.flows.store.assessor_files import assessor_names, check_assessors
from judged.flows.store.hashing import hash_in_background
from judged.flows.store.pending_footer import fill_pending_value, pending_value
from judged.flows.store.readers import (
    DUPLICATE_PAIRS_KEY, PART_QUERIES_KEY, LoadedTable, Metadata, StoredTable, kept_scan, line_count, load_table,
    open_table, parquet_rows, read_sidecar, sniff_format, stored_duplicate_pairs, streamed_text,
)
from judged.flows.store.reading_pass import ReadingPass
from judged.flows.engine.limits import DEFAULT_LIMITS, Limits
from judged.flows.engine.phases import Phases
from judged.flows.engine.versions import implementation_version
from judged.flows.store.kinds import (
    AGREEMENT_FILES,
    ASSESSORS_FILES,
    EVALUATION,
    JUDGMENT_SET,
    NIGHTLY,
    PER_QUERY_FILES,
    RUN,
    STORED_TABLES,
    SUMMARY_FILES,
    InputKind,
    Kind,
    StoredFiles,
    input_kind,
    kind_named,
)
from judged.schemas.provenance import METHOD_VERSION_UNRECORDED, JudgmentSetMetadata, RunMetadata, canonical_json
from judged.schemas.provenance import table_id as derive_table_id
from judged.schemas.spec import EvaluationSpec
from judged.schemas.tables import comment_statements
from judged.transforms.duplicates import duplicate_pairs, may_have_duplicates
from judged.transforms.errors import InputError
from judged.transforms.layout import in_stored_order, in_stored_order_of_ranked, is_ranked
from judged.schemas.fields import QUERY
from judged.transforms.shards import RunLayout, cut_targets, position_shards, query_buckets, shard_count, shards_at

STAGING = "_staging"
CATALOG = "catalog.duckdb"
REPORTS = "reports"  # the nightly job's HTML reports: reports/<flow run id>.html
# The catalog's storage format: the oldest DuckDB can write, so that DuckDB 1.0.0 and every later client (CLIs, BI
# tools, older Python environments) can open it. It holds views only, so the newer formats would add nothing.
CATALOG_STORAGE_VERSION = "v1.0.0"
# Beside the catalog: what it was built from (its definitions' hash, DuckDB's version, its storage format) and the
# file it was written as, so that a refresh with nothing new to write leaves it as it is (`Store.refresh_catalog`).
CATALOG_MARK = "catalog.duckdb.built"

# A file of one row per id holding several rows (the summary, a comparison's statistics) is this part file.
SINGLE_PART = "part-0.parquet"


def shard_file(shard: int, of: int) -> str:
    return f"part-{shard:04d}-of-{of:04d}.parquet"


def hold_lock(lock_path: Path, create: bool = True) -> BinaryIO | None:
    """An exclusive lock (flock) on `lock_path`, held until the returned file is closed or its process ends however
    it ends; None when a live process holds it (or, with `create=False`, when the file is gone)."""
    while True:
        try:
            handle = lock_path.open("ab" if create else "rb")
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        # Whoever held it before may have removed the file between our open and our lock: then the lock we hold is
        # on a file nobody else will look at, and we try again.
        try:
            if os.stat(lock_path).st_ino == os.fstat(handle.fileno()).st_ino:
                return handle
        except FileNotFoundError:
            pass
        handle.close()
        if not create:
            return None


@contextmanager
def staging_area(root: Path) -> Iterator[Path]:
    """A private folder `_staging/<uuid>/` of the warehouse `root` (created), locked for as long as the block runs
    and removed, with whatever is still in it, after it: no view sees what is written there."""
    area = root / STAGING
    area.mkdir(parents=True, exist_ok=True)
    handle = None
    while handle is None:  # a fresh name: nobody else holds it
        name = uuid.uuid4().hex
        lock_path = area / f"{name}.lock"
        handle = hold_lock(lock_path)
    folder = area / name
    try:
        folder.mkdir()
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        lock_path.unlink(missing_ok=True)
        handle.close()


@contextmanager
def staged(root: Path, target: Path) -> Iterator[Path]:
    """Where to write `target` (a path under the warehouse `root`) before renaming it into place: the same relative
    path inside a `staging_area`."""
    with staging_area(root) as folder:
        temporary = folder / target.relative_to(root)
        temporary.parent.mkdir(parents=True, exist_ok=True)
        yield temporary


def remove_dead_staging(root: Path) -> list[str]:
    """Remove the staging folders under `root/_staging` that no live writer holds (their lock is free: its process
    ended, however it ended). Returns the names removed."""
    area = root / STAGING
    if not area.is_dir():
        return []
    removed = []
    for entry in sorted(area.iterdir()):
        name = entry.name.removesuffix(".lock")
        lock_path = area / f"{name}.lock"
        if not lock_path.exists():
            # A writer creates its lock before its folder and removes its folder before its lock: a folder
            # without a lock is a dead writer's.
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(name)
            continue
        handle = hold_lock(lock_path, create=False)
        if handle is None:
            continue  # a live writer holds it
        with handle:
            shutil.rmtree(area / name, ignore_errors=True)
            lock_path.unlink(missing_ok=True)
            removed.append(name)
    return sorted(set(removed))


def sink_shards(
    rows: pl.LazyFrame,
    kind: InputKind,
    table_id: str,
    root: Path,
    shards: int,
    n_rows: int,
    metadata: dict[str, str],
    limits: Limits = DEFAULT_LIMITS,
    queries: pl.DataFrame | None = None,
    phases: Phases | None = None,
) -> Path:
    """Write the rows of `kind`'s table `table_id`, after its id column, as one Parquet file per non-empty shard
    into a staging folder of the warehouse `root` (see `staged`), then rename it into place whole (the kind's rows
    folder for that id, returned); an existing folder is left as it is (same content).

    These are shards by bucket (transforms/shards.py): every judgment set, and a run whose queries are scattered
    over its file (a run whose queries lie together takes `sink_position_shards`). `queries` holds the table's
    query ids when they are already known (a frame with `query_id`), sparing a pass over the rows. Large tables
    stream, in bounded memory. Unranked kinds (judgments): batches of `limits.sink_batch_rows` rows get their
    query's bucket and are appended, as row groups, to the open file of their shard. A ranked kind (a run) is
    spilled by shard in one streaming pass (`spill_by_shard`, in record batches of `limits.spill_batch_rows`), then
    each shard is read back alone and written by `write_ranked`; one of at most `limits.in_memory_sink_rows` rows
    (`n_rows`) is split by shard in memory instead.
    Ranked shards are written `limits.shard_writers` at a time, one thread each. `phases` gets where the time
    went."""
    in_memory = n_rows <= limits.in_memory_sink_rows
    constants = _leading_columns(kind, table_id)
    return _publish_rows(kind.rows_path(root, table_id), root, lambda temporary: _sink_into(
        rows, temporary, shards, metadata, kind.ranked, in_memory, limits, phases or Phases(), queries, constants
    ))


def sink_position_shards(
    rows: pl.LazyFrame,
    kind: InputKind,
    table_id: str,
    root: Path,
    blocks: pl.DataFrame,
    metadata: dict[str, str],
    limits: Limits = DEFAULT_LIMITS,
    phases: Phases | None = None,
    duplicate_free: bool = False,
) -> Path:
    """Write the rows of a run (a ranked kind) whose queries each lie in one stretch of the file in ONE streaming
    pass: the rows are read in batches of `limits.sink_batch_rows`, cut into the shards of `blocks` (each query's
    rows with its `shard`, in the file's order: `transforms.shards.position_shards`), and each shard is written by
    `write_ranked` as soon as its last row has been read, `limits.shard_writers` at a time. Each part lists its
    queries in its metadata (`PART_QUERIES_KEY`). A shard holds no query from elsewhere in the file, so nothing is
    regrouped: no spill, no second read. Published as `sink_shards` publishes (staged, renamed into place whole;
    an existing folder is left as it is). `duplicate_free`: as `write_ranked` takes it."""
    shards = int(blocks["shard"].max()) + 1
    return _publish_rows(kind.rows_path(root, table_id), root, lambda temporary: write_position_parts(
        rows, blocks, shards, temporary, kind, table_id, metadata, limits, phases, duplicate_free=duplicate_free
    ))


def write_position_parts(
    rows: pl.LazyFrame, blocks: pl.DataFrame, of: int, folder: Path, kind: InputKind, table_id: str,
    metadata: dict[str, str], limits: Limits = DEFAULT_LIMITS, phases: Phases | None = None,
    check_queries: bool = False, duplicate_free: bool = False,
) -> None:
    """`sink_position_shards`' writing, into `folder`: `rows` are those of the consecutive shards of `blocks` (each
    query's rows with its `shard` of `of`, in the file's order), read in batches of `limits.sink_batch_rows` and
    cut into those shards; each is written by `write_ranked` as `shard_file(shard, of)` as soon as its last row has
    been read, `limits.shard_writers` at a time, listing its queries (`PART_QUERIES_KEY`). A scaled-out ingest's
    worker writes its stretch of shards with it too, with `check_queries`: each shard's query ids, as read, must be
    those its blocks list (a RuntimeError otherwise: the piece was not cut where the plan said). `duplicate_free`:
    as `write_ranked` takes it."""
    phases = phases or Phases()
    by_shard = blocks.group_by("shard", maintain_order=True).agg(pl.col(QUERY), n_rows=pl.col("n_rows").sum())
    with phases.measure("buckets"):
        buckets = query_buckets(blocks.lazy()).collect()
    pieces = cut_rows(rows, by_shard["n_rows"].to_list(), limits.sink_batch_rows)
    writers = ShardWriters(limits.shard_writers)
    with phases.measure(f"shards ({limits.shard_writers} at a time, as the rows are read)"), writers:
        for shard, piece, queries in zip(by_shard["shard"].to_list(), pieces, by_shard[QUERY].to_list(), strict=True):
            if check_queries and piece[QUERY].rle().struct.field("value").to_list() != queries:
                raise RuntimeError(f"shard {shard} of {of} does not hold the queries planned for it: the file was "
                                   "cut elsewhere than its survey found, or it changed while it was stored")
            writers.submit(write_position_part, piece, queries, buckets, folder / shard_file(shard, of), kind,
                           table_id, metadata, phases, duplicate_free)
        writers.finish()


def write_position_part(
    piece: pl.DataFrame, queries: list[str], buckets: pl.DataFrame, target: Path, kind: InputKind, table_id: str,
    metadata: dict[str, str], phases: Phases, duplicate_free: bool,
) -> None:
    """One shard of a run stored by position, written as its part `target`: its rows (`piece`, in the file's order,
    holding `queries` in that order) after the run's id, with their query's bucket (`buckets`: `query_buckets` of
    these queries, or of more), by `write_ranked`, its metadata listing its queries (`PART_QUERIES_KEY`). The one
    writer of a position shard's part: the store's pass (`write_position_parts`), a scaled-out ingest's workers and
    the reading pass (`OnePassShards`) all write it here."""
    part = piece.select(*_leading_columns(kind, table_id), pl.all(), bucket=_row_buckets(piece, buckets))
    write_ranked(part, target, metadata | {PART_QUERIES_KEY: json.dumps(queries)}, phases, duplicate_free)


class ShardWriters:
    """Shards written `writers` at a time, one thread each, while the next is read: `submit` waits while more than
    `writers` are under way, so memory holds at most writers + 1 shards. Leaving the block waits for every write
    (`finish` first, to raise the first write's error)."""

    def __init__(self, writers: int) -> None:
        self.writers = writers
        self._pool = ThreadPoolExecutor(writers)
        self._pending: list[Future[None]] = []

    def __enter__(self) -> ShardWriters:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def submit(self, write: Callable[..., None], *arguments: object) -> None:
        self._pending.append(self._pool.submit(write, *arguments))
        while len(self._pending) > self.writers:
            self._pending.pop(0).result()

    def finish(self) -> None:
        """Wait for every write submitted; the first that failed raises its error."""
        while self._pending:
            self._pending.pop(0).result()

    def close(self) -> None:
        """Wait for the writes under way (errors aside): before their folder is published or removed."""
        self._pool.shutdown(wait=True)


def cut_rows(rows: pl.LazyFrame, sizes: list[int], batch_rows: int) -> Iterator[pl.DataFrame]:
    """The rows read once, in streamed batches of about `batch_rows`, given back in consecutive pieces of these
    sizes (a piece is held until its last row has been read). A RuntimeError when the rows are not as many as the
    sizes add up to: the file changed after it was counted."""
    sizes_left = iter(sizes)
    wanted = next(sizes_left, 0)
    pieces: list[pl.DataFrame] = []
    held = 0
    for batch in rows.collect_batches(chunk_size=batch_rows, engine="streaming"):
        offset = 0
        while offset < batch.height:
            if wanted == 0:
                raise RuntimeError("the run has more rows than were counted: it changed while it was stored")
            piece = batch.slice(offset, wanted - held)
            pieces.append(piece)
            held += piece.height
            offset += piece.height
            if held == wanted:
                # One chunk a column: the shard's ordering gathers rows, faster from one chunk than from the
                # streamed batches' many (~10% of its CPU at 1M rows, measured at M).
                yield pl.concat(pieces, rechunk=True)
                pieces, held, wanted = [], 0, next(sizes_left, 0)
    if wanted or held:
        raise RuntimeError("the run has fewer rows than were counted: it changed while it was stored")


class OnePassShards:
    """A scanned text run's (or a Parquet run's) shards by position, cut and written from the batches of the pass that
    reads and checks it (`write`, a `ReadingPass`; `read_run`), into a staging folder of parts (`folder`): the same
    shards, rows and files `write_position_parts` writes from a second pass (each part by `write_position_part`), but
    each part's `judged.record` left pending (`flows/store/pending_footer.py`), since the record holds what only the end
    of the file says, and the parts named by shard alone until the shard count is known (`StagedShards.publish`). The
    shards are cut for the run's lines as counted before it is read (`expected_rows`, a line count beside the read, or a
    Parquet file's rows): `Store.store_table` keeps them only when they are the shards `position_blocks` cuts from the
    pass's own counts. The rows' run id waits for the file's hash (`run_id`, from the tag the pass assumes). Shards are
    written `limits.shard_writers` at a time (`ShardWriters`); a failed write stops the taking, and the run is then
    stored as before. Leaving the block waits for the writes under way."""

    def __init__(
        self, folder: Path, kind: InputKind, expected_rows: Future[int], run_id: Callable[[str], str],
        limits: Limits, phases: Phases,
    ) -> None:
        self.folder, self.kind, self.limits, self.phases = folder, kind, limits, phases
        self._expected_rows, self._run_id = expected_rows, run_id
        self.placeholder = pending_value()
        self.run_id: str | None = None  # the rows' run id, once the first part is written
        self.stopped: str | None = None  # why not every batch was taken (the pass's reason, or a failed write)
        self.ended = False
        self._tag = ""
        self._targets: pl.Series | None = None
        self._before = (0, 0)  # `shards_at`'s pair of the last block taken
        self._rows_taken = 0
        self._shard = 0
        self._held: list[pl.DataFrame] = []  # the rows of shard `_shard` read so far
        self._blocks: list[pl.DataFrame] = []
        self._writers = ShardWriters(limits.shard_writers)

    def __enter__(self) -> OnePassShards:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._writers.close()

    @property
    def complete(self) -> bool:
        """Whether every batch of a whole pass was taken and every shard written."""
        return self.ended and self.stopped is None

    @property
    def blocks(self) -> pl.DataFrame:
        """`query_id`, `n_rows`, `shard` of each block written, as `position_blocks` gives them."""
        return pl.concat(self._blocks) if self._blocks else pl.DataFrame(schema=BLOCKS_SCHEMA)

    def write(self, reading: ReadingPass) -> None:
        """Take the pass's batches as it reads them (`ReadingPass.batches`), writing each shard once its rows are in,
        until the pass stops giving them or a write fails; then the last shard, unless either stopped. The pass is
        left for its reader to finish."""
        self._tag = reading.tag or ""
        for batch in reading.batches():
            self._take(batch)
            if self.stopped is not None:
                break
        if reading.stopped is not None:
            self._stop(reading.stopped)
        if self.stopped is None:
            try:
                self._write_held()
                self._writers.finish()
            except Exception as error:  # noqa: BLE001 - the run is then stored as before, which names any real fault
                self._stop(f"a shard could not be written: {error}")
        self.ended = True

    def _take(self, batch: pl.DataFrame) -> None:
        if not batch.height:
            return
        try:
            if self._targets is None:
                self._targets = cut_targets(self._expected_rows.result(), self.limits.rows_per_shard)
            stretches = batch[QUERY].rle().struct.unnest().select(
                pl.col("value").alias(QUERY), n_rows=pl.col("len").cast(pl.Int64))
            starts = stretches["n_rows"].cum_sum() - stretches["n_rows"] + self._rows_taken
            shards, self._before = shards_at(starts, self._targets, self._before)
            blocks = stretches.with_columns(shard=shards)
            self._blocks.append(blocks)
            offset = 0
            for shard, rows in blocks.group_by("shard", maintain_order=True).agg(pl.col("n_rows").sum()).iter_rows():
                if shard != self._shard:
                    self._write_held()
                    self._shard = shard
                self._held.append(batch.slice(offset, rows))
                offset += rows
            self._rows_taken += batch.height
        except Exception as error:  # noqa: BLE001 - as in `write`
            self._stop(f"a shard could not be written: {error}")

    def _stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason
        self._held = []

    def _write_held(self) -> None:
        if not self._held:
            return
        piece = pl.concat(self._held, rechunk=True)  # one chunk a column, as `cut_rows` gives a shard
        self._held = []
        self._writers.submit(self._write_part, piece, self.folder / pending_part(self._shard))

    def _write_part(self, piece: pl.DataFrame, target: Path) -> None:
        self.run_id = self._run_id(self._tag)
        queries = piece[QUERY].rle().struct.field("value")
        buckets = query_buckets(queries.to_frame(QUERY).lazy()).collect()
        write_position_part(piece, queries.to_list(), buckets, target, self.kind, self.run_id,
                            rows_metadata(self.kind, self.placeholder), self.phases, duplicate_free=True)


BLOCKS_SCHEMA = {QUERY: pl.String(), "n_rows": pl.Int64(), "shard": pl.Int32()}
# A `StagedShards` folder: its parts, and its description (written last)
_STAGED_RUN_PARTS, _STAGED_RUN_DESCRIPTION = "parts", "staged.json"


def pending_part(shard: int) -> str:
    """A staged part's name before the shard count is known (`shard_file` once published)."""
    return f"shard-{shard:04d}.parquet"


@dataclass(frozen=True)
class StagedShards:
    """A run's shards by position, written by its reading pass (`OnePassShards`, `read_run`) in a staging `folder`:
    the parts in `parts/`, each with its record pending, and what the store needs to publish them in `staged.json`
    (written last: a folder without it holds nothing to publish). The reading passes the folder to its store
    (`Store.store_table(staged_shards=...)`), which publishes the parts when they are the shards it would cut, and
    removes the folder either way."""

    folder: Path
    run_id: str
    placeholder: str  # the pending `judged.record` of each part
    blocks: pl.DataFrame  # `query_id`, `n_rows`, `shard` of each block written (`BLOCKS_SCHEMA`)

    @property
    def parts(self) -> Path:
        return self.folder / _STAGED_RUN_PARTS

    @property
    def description(self) -> Path:
        return self.folder / _STAGED_RUN_DESCRIPTION

    def write(self) -> None:
        self.description.write_text(json.dumps({
            "run_id": self.run_id, "placeholder": self.placeholder,
            "blocks": self.blocks.select(*BLOCKS_SCHEMA).to_dict(as_series=False),
        }))

    @classmethod
    def read(cls, folder: Path) -> StagedShards | None:
        """What `write` wrote in `folder`, or None when it is not there (nothing was staged to publish)."""
        try:
            found = json.loads((folder / _STAGED_RUN_DESCRIPTION).read_text())
        except FileNotFoundError:
            return None
        blocks = pl.DataFrame(found["blocks"], schema=BLOCKS_SCHEMA)
        return cls(folder, found["run_id"], found["placeholder"], blocks)

    def publish(self, record_json: str, rows_folder: Path) -> None:
        """Each part's record filled in and its name given (`shard_file`), then the parts renamed into place whole
        as `rows_folder`; an existing folder is left as it is (same content)."""
        if rows_folder.exists():
            return
        of = int(self.blocks["shard"].max()) + 1
        for shard in range(of):
            pending = self.parts / pending_part(shard)
            fill_pending_value(pending, self.placeholder, record_json)
            os.replace(pending, self.parts / shard_file(shard, of))
        _rename_into_place(self.parts, rows_folder)


@dataclass(frozen=True)
class ReadRun:
    """A run read and checked (`read_run`), and the staging folder holding its shards when its reading pass wrote
    them (`StagedShards`), for its store to publish."""

    table: LoadedTable
    staged_shards: Path | None = None


def read_run(
    path: str | Path, staging: Path | None, metadata: Metadata | None = None, limits: Limits = DEFAULT_LIMITS,
    allow_empty: bool = False, phases: Phases | None = None,
) -> ReadRun:
    """`load_table(path, "run", look_for_repeats=True)`, and with a `staging` folder (a `staging_area` of the
    warehouse the run is for, held by the caller until the run is stored), a text run large enough to be scanned,
    or a Parquet run, has its shards by position written from the batches its reading pass checks
    (`OnePassShards`), into a new folder there (`StagedShards`), returned for the run's store (`Store.store_table`)
    to publish instead of reading the file a second time (a Parquet run's pass follows the checks of its columns:
    `TableReading.reading_pass`). Nothing is staged when the pass stops short (a line the fast reader leaves to the exact
    parser, a query in two stretches, a document a query may hold twice, several tags in a text run), nor for a
    file this process has read already (its kept scan is returned, and its store reads the file again): then, as on
    any error, what was written is removed, and the table or the error is the one `load_table` gives."""
    path = Path(path)

    def without_staging() -> ReadRun:
        return ReadRun(load_table(path, "run", metadata, limits=limits, allow_empty=allow_empty,
                                  look_for_repeats=True))

    source_format = sniff_format(path) if path.is_file() else None
    if staging is None or not (source_format == "parquet"
                               or (source_format == "trec" and streamed_text(path, "trec", limits))):
        return without_staging()
    try:
        declared = read_sidecar(path, "run") if metadata is None else metadata
    except InputError:  # `load_table` names the sidecar's problem, or the swapped arguments
        return without_staging()
    if not isinstance(declared, RunMetadata) or kept_scan(path, "run", declared, limits) is not None:
        return without_staging()  # metadata of another kind is `load_table`'s to refuse
    folder = staging / uuid.uuid4().hex
    parts = folder / _STAGED_RUN_PARTS
    try:
        parts.mkdir(parents=True)
        hashes = hash_in_background([path])[path]
        counting = ThreadPoolExecutor(1)
        # A Parquet file's footer says its rows; a text file's lines are counted beside the read.
        expected_rows = counting.submit(parquet_rows if source_format == "parquet" else line_count, path)
        counting.shutdown(wait=False)

        def run_id(tag: str) -> str:
            tagged = declared if declared.tag else declared.model_copy(update={"tag": tag})
            return derive_table_id(RUN.name, hashes.result()[1], tagged)

        with OnePassShards(parts, RUN, expected_rows, run_id, limits, phases or Phases()) as shards:
            reading = open_table(path, RUN.name, declared, hashes, limits, look_for_repeats=True)
            if (reading_pass := reading.reading_pass()) is not None:
                shards.write(reading_pass)
            table = reading.table(allow_empty)
        if shards.complete and table.duplicate_free and shards.run_id == table.table_id:
            StagedShards(folder, table.table_id, shards.placeholder, shards.blocks).write()
            return ReadRun(table, folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    return ReadRun(table)


def rows_metadata(kind: InputKind, record_json: str) -> dict[str, str]:
    """The key-value metadata every part file of a stored table carries: its kind and its record."""
    return {"judged.table": kind.name, "judged.record": record_json}


def _leading_columns(kind: InputKind, table_id: str) -> list[pl.Expr]:
    """The columns a stored row has in front of its own: the table's id."""
    return [pl.lit(table_id, pl.String).alias(kind.id_column)] if kind.id_column else []


def _publish_rows(folder: Path, root: Path, write: Callable[[Path], None]) -> Path:
    """A table's rows folder, written by `write` into a staging folder of the warehouse `root` (see `staged`), then
    renamed into place whole (returned); an existing folder is left as it is (same content)."""
    if folder.exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with staged(root, folder) as temporary:
        temporary.mkdir()
        write(temporary)
        _rename_into_place(temporary, folder)
    return folder


def _rename_into_place(temporary: Path, folder: Path) -> None:
    """A staged rows folder renamed to its place whole; when another writer published the same content-addressed
    folder first, ours stays where it was (its staging folder's removal drops it)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(temporary, folder)
    except OSError:
        if not folder.exists():
            raise


def _row_buckets(frame: pl.DataFrame, buckets: pl.DataFrame) -> pl.Series:
    """The bucket of each row's query (`buckets`: `query_buckets`). A query's rows come in stretches of consecutive
    rows: the bucket is looked up once per stretch (a join of the stretches' ids), not once per row."""
    stretches = frame.select(pl.col(QUERY).rle().struct.field("value").alias(QUERY)).join(
        buckets, on=QUERY, how="left", maintain_order="left"
    )
    return stretches["bucket"].gather(frame[QUERY].rle_id())


def _sink_into(
    rows: pl.LazyFrame, temporary: Path, shards: int, metadata: dict[str, str], ranked: bool, in_memory: bool,
    limits: Limits, phases: Phases, queries: pl.DataFrame | None, constants: list[pl.Expr],
) -> None:
    """`sink_shards`' writing, into the staging folder `temporary`, with the `constants` columns first."""
    writers = limits.shard_writers
    with phases.measure("buckets"):
        buckets = query_buckets((rows if queries is None else queries.lazy()).select("query_id")).collect(
            engine="streaming"
        )

    def shard_parts(frame: pl.DataFrame) -> dict[int, pl.DataFrame]:
        keyed = frame.with_columns(bucket=_row_buckets(frame, buckets))
        by_shard = keyed.with_columns(shard=pl.col("bucket") % shards).partition_by(
            "shard", as_dict=True, include_key=False
        )
        return {int(shard): part for (shard,), part in by_shard.items()}

    if ranked and in_memory:
        with phases.measure("split"):
            parts = shard_parts(rows.select(*constants, pl.all()).collect(engine="in-memory"))
        with phases.measure(f"shards ({writers} at a time)"), ThreadPoolExecutor(writers) as pool:
            done = [pool.submit(write_ranked, part, temporary / shard_file(shard, shards), metadata, phases)
                    for shard, part in parts.items()]
            del parts  # each shard's rows are freed once written
            for future in done:
                future.result()
    elif ranked:
        # Every shard's rows are spilled at once by one streaming pass, then each shard is read back alone and
        # written ranked: memory holds a batch while spilling and one shard per writer afterwards. The leading
        # columns are added as each shard is written: the spill need not carry the same value on every row.
        spill = temporary / "_spill"
        with phases.measure("split (read, bucket, spill)"):
            spill_by_shard(rows, buckets, shards, spill, limits)
        with phases.measure(f"shards ({writers} at a time)"), ThreadPoolExecutor(writers) as pool:
            for future in [pool.submit(_rewrite_spilled, spill, shard, temporary / shard_file(shard, shards),
                                       metadata, phases, constants)
                           for shard in spilled_shards(spill)]:
                future.result()
        if spill.exists():
            spill.rmdir()  # emptied shard by shard: anything left would be a bug, not to be hidden
    else:
        open_files: dict[int, pq.ParquetWriter] = {}
        try:
            with phases.measure("split and write"), ThreadPoolExecutor(writers) as pool:
                for batch in rows.select(*constants, pl.all()).collect_batches(chunk_size=limits.sink_batch_rows,
                                                                               engine="streaming"):
                    tables = {shard: part.to_arrow() for shard, part in shard_parts(batch).items()}
                    for shard, table in tables.items():
                        if shard not in open_files:
                            path = temporary / shard_file(shard, shards)
                            open_files[shard] = pq.ParquetWriter(path, table.schema.with_metadata(metadata))
                    # Each file takes its rows of the batch in turn, as one writer would write them; the files are
                    # written `writers` at a time (pyarrow releases the GIL while it encodes).
                    writes = [pool.submit(open_files[shard].write_table, table) for shard, table in tables.items()]
                    for written in writes:
                        written.result()
        finally:
            for writer in open_files.values():
                writer.close()


# The spill's folders are named `<SPILL_KEY>=<shard>` (Polars' partitioned sink names them by key and value).
SPILL_KEY = "shard"


def spill_by_shard(
    rows: pl.LazyFrame, buckets: pl.DataFrame, shards: int, spill: Path, limits: Limits = DEFAULT_LIMITS
) -> None:
    """Rows with their query's `bucket`, in one streaming pass, into one lz4 Arrow IPC file per non-empty shard
    under `spill` (a file that is read back once and deleted is written cheaply), each shard's rows in the order
    they came, in record batches of `limits.spill_batch_rows` (each open file buffers one)."""
    keyed = rows.join(buckets.lazy(), on="query_id", how="left", maintain_order="left")
    keyed.with_columns((pl.col("bucket") % shards).alias(SPILL_KEY)).sink_ipc(
        pl.PartitionBy(spill, key=SPILL_KEY, include_key=False, approximate_bytes_per_file=None),
        compression="lz4", mkdir=True, maintain_order=True, record_batch_size=limits.spill_batch_rows,
    )


def spilled_shards(spill: Path) -> list[int]:
    """The shards `spill_by_shard` wrote, in order."""
    if not spill.is_dir():
        return []
    return sorted(int(folder.name.removeprefix(f"{SPILL_KEY}=")) for folder in spill.iterdir())


def read_spilled(spill: Path, shard: int) -> pl.DataFrame:
    """One shard's rows as `spill_by_shard` spilled them, in their order."""
    return pl.concat([pl.read_ipc(path) for path in sorted((spill / f"{SPILL_KEY}={shard}").glob("*.ipc"))])


def _rewrite_spilled(
    spill: Path, shard: int, target: Path, metadata: dict[str, str], phases: Phases, constants: list[pl.Expr]
) -> None:
    """One shard's spilled rows read back (`read_spilled`), after the `constants` columns, written ranked at
    `target`, and removed."""
    with phases.measure("read back the spill"):
        part = read_spilled(spill, shard).select(*constants, pl.all())
    write_ranked(part, target, metadata, phases)
    shutil.rmtree(spill / f"{SPILL_KEY}={shard}")


def write_ranked(
    rows: pl.DataFrame, target: Path, metadata: dict[str, str], phases: Phases | None = None,
    duplicate_free: bool = False,
) -> None:
    """One shard of a run in stored order, with its own count of duplicate (query, document) pairs
    (`stored_order_counted`), written by `write_stored_part`."""
    phases = phases or Phases()
    stored, duplicates = stored_order_counted(rows, phases, duplicate_free)
    with phases.measure("write"):
        write_stored_part(stored, target, metadata | {DUPLICATE_PAIRS_KEY: str(duplicates)})


def stored_order_counted(
    rows: pl.DataFrame, phases: Phases | None = None, duplicate_free: bool = False
) -> tuple[pl.DataFrame, int]:
    """One shard of a run in stored order (`transforms.layout.in_stored_order`) and its count of duplicate
    (query, document) pairs (a query lies in one shard, so the count is exact): what the store does to a shard
    before writing it. `duplicate_free`: the run is proven to hold no pair twice (`LoadedTable.duplicate_free`),
    so the count is 0 without looking."""
    phases = phases or Phases()
    # The rows are in memory: Polars' in-memory engine sorts them faster than its default streaming one.
    with phases.measure("duplicates"):
        suspected = not duplicate_free and may_have_duplicates(rows.lazy()).collect(engine="in-memory").item()
        duplicates = duplicate_pairs(rows.lazy()).collect(engine="in-memory").height if suspected else 0
    # A run written in rank order (nearly every run) is put in stored order without sorting it; any other run,
    # or one that may hold a pair twice, is sorted. Both give the same rows in the same order.
    with phases.measure("order"):
        already_ranked = not suspected and is_ranked(rows.lazy()).collect(engine="in-memory").item()
        ordering = in_stored_order_of_ranked if already_ranked else in_stored_order
        return ordering(rows.lazy()).collect(engine="in-memory"), duplicates


def write_stored_part(stored: pl.DataFrame, target: Path, metadata: dict[str, str]) -> None:
    """A shard's rows, already in stored order with their `band`, written as its Parquet file: row groups as long
    as the first band, so that band is exactly the first row group and a head read skips every other by its
    `position` statistics; zstd level 1, a faster store for files slightly larger than at Polars' default level
    (benchmarks/README.md)."""
    first_band = int((stored["band"] == 0).sum())
    stored.drop("band").write_parquet(
        target, compression_level=1, row_group_size=max(first_band, 1), metadata=metadata
    )


def now_utc() -> datetime:
    return datetime.now(UTC)


def write_parquet_atomically(frame: pl.DataFrame, path: Path, metadata: dict[str, str], root: Path) -> bool:
    """Write in a staging folder of the warehouse `root` (see `staged`), then rename into place. An existing file
    is never touched (ids are content-derived, so it holds the same rows). Returns whether a file was written."""
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    with staged(root, path) as temporary:
        frame.write_parquet(temporary, metadata=metadata, statistics=True)
        with temporary.open("rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    return True


@dataclass(frozen=True)
class StoreReport:
    """What a store operation did: the identifier, and whether anything new was written."""

    kind: str
    id: str
    created: bool
    n_rows: int
    seconds: float | None = None  # how long reading and storing took, when measured (flows.pipeline.ingest_file)
    phases: tuple[tuple[str, float, float], ...] = ()  # where that time went (flows.phases), when measured


def position_blocks(table: LoadedTable, kind: InputKind, limits: Limits) -> pl.DataFrame | None:
    """The one place a stored table's layout is chosen: a run (a ranked kind) whose queries each lie in one stretch
    of the file is stored by position, its shards cut from these blocks (`query_id`, `n_rows`, `shard`:
    `position_plan` of `LoadedTable.query_blocks`); None stores it by bucket, as every judgment set, a run whose
    queries are scattered (where a shard needs rows from the whole file) and an empty run are."""
    if not kind.ranked or not table.counts["n_rows"]:
        return None
    return position_plan(table.query_blocks(limits.sink_batch_rows), limits)


def position_plan(blocks: pl.DataFrame | None, limits: Limits) -> pl.DataFrame | None:
    """A run's blocks (each query's rows, in the file's order; None: its queries are scattered) with the `shard`
    of each (`transforms.shards.position_shards`), or None when the run is not stored by position (scattered, or
    no rows). `position_blocks` takes it for a loaded run; a scaled-out ingest (flows/store/scaled.py) for the
    blocks its workers found: both cut the same shards."""
    if blocks is None or not blocks.height:
        return None
    return position_shards(blocks, limits.rows_per_shard)


class Described(Protocol):
    """What a stored table's record says about it (`Store._table_record`): a `LoadedTable`, or the plan of a run
    read in pieces by a cluster (flows/store/scaled.py), whose rows no single process holds."""

    @property
    def kind(self) -> Literal["judgments", "run"]: ...

    @property
    def table_id(self) -> str: ...

    @property
    def metadata(self) -> Metadata: ...

    @property
    def content_sha256(self) -> str: ...

    @property
    def source_sha256(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def source_format(self) -> str: ...

    @property
    def counts(self) -> dict[str, int]: ...


class Store:
    """One warehouse directory, as the writers and readers of flows/ see it (the public `judged.Warehouse` of
    flows/api.py reads through it)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()

    # -- paths ----------------------------------------------------------------------------------------------------

    def record_path(self, kind: Kind | str, table_id: str) -> Path:
        """The record file of `kind`'s table `table_id` (it exists once the table is stored whole)."""
        return kind_named(kind).record_path(self.root, table_id)

    def record_files(self, kind: Kind | str) -> list[Path]:
        """Every stored record file of `kind`, by name (not the empty file that lets its view resolve)."""
        folder = self.root / kind_named(kind).record_folder
        return sorted(path for path in folder.glob("*.parquet") if not path.name.startswith("_"))

    def judgment_set_record(self, judgment_set_id: str) -> Path:
        return self.record_path(JUDGMENT_SET, judgment_set_id)

    def run_record(self, run_id: str) -> Path:
        return self.record_path(RUN, run_id)

    def evaluation_record(self, evaluation_id: str) -> Path:
        return self.record_path(EVALUATION, evaluation_id)

    def per_query_part(self, evaluation_id: str, shard: int = 0, of: int = 1) -> Path:
        return PER_QUERY_FILES.path(self.root, evaluation_id) / shard_file(shard, of)

    def summary_part(self, evaluation_id: str) -> Path:
        return SUMMARY_FILES.path(self.root, evaluation_id) / SINGLE_PART

    def nightly_record(self, claim_id: str) -> Path:
        """The `nightly` row of one inbox file, keyed by the claim that handled it (see
        pipeline.nightly.claimed_files)."""
        return self.record_path(NIGHTLY, claim_id)

    @property
    def catalog(self) -> Path:
        return self.root / CATALOG

    # -- setup ----------------------------------------------------------------------------------------------------

    def ensure(self) -> Store:
        """Create the directory and each table's empty file, so the catalog's views always resolve; remove what
        dead writers left in staging."""
        self.root.mkdir(parents=True, exist_ok=True)
        remove_dead_staging(self.root)
        for table in STORED_TABLES.values():
            write_parquet_atomically(
                pl.DataFrame(schema=table.schema), self.root / table.empty_file, {"judged.table": table.name}, self.root
            )
        return self

    # -- judgment sets and runs -----------------------------------------------------------------------------------

    def store_table(
        self, table: LoadedTable, limits: Limits = DEFAULT_LIMITS, phases: Phases | None = None,
        staged_shards: Path | None = None,
    ) -> StoreReport:
        """Store a loaded judgment set or run, split into shards of about `limits.rows_per_shard` rows; nothing
        is written when its id is already there. `phases` gets where the time went. `staged_shards`: the folder
        where the run's reading pass wrote its shards (`read_run`, in a staging area of this warehouse), published
        when they are the run's and the shards its layout cuts (else the run is stored from its file, as without);
        the folder is removed either way."""
        if staged_shards is not None and not staged_shards.resolve().is_relative_to((self.root / STAGING).resolve()):
            raise ValueError(f"{staged_shards}: staged shards lie in the staging area of the warehouse they are "
                             f"stored into ({self.root / STAGING})")
        try:
            staged_run = StagedShards.read(staged_shards) if staged_shards is not None else None
            return self._store_table(table, limits, phases or Phases(), staged_run)
        finally:
            if staged_shards is not None:
                shutil.rmtree(staged_shards, ignore_errors=True)

    def _store_table(
        self, table: LoadedTable, limits: Limits, phases: Phases, staged_run: StagedShards | None
    ) -> StoreReport:
        self.ensure()
        kind = input_kind(table.kind)
        with phases.measure("hash (waiting for it)"):
            table_id = table.table_id
        record_path = kind.record_path(self.root, table_id)
        with phases.measure("count"):
            n_rows = table.counts["n_rows"]
        if record_path.exists():
            return StoreReport(kind.name, table_id, False, n_rows)
        self.require_free_version(table.metadata, table_id)
        with phases.measure("assessors"):
            beside = self._beside_the_rows(table, kind, table_id)
        with phases.measure("layout"):
            blocks = position_blocks(table, kind, limits)
        if staged_run is not None and (
            staged_run.run_id != table_id or blocks is None or not staged_run.blocks.equals(blocks)
        ):
            staged_run = None  # cut for another count of rows (blank lines), or scattered: stored as before
        layout = RunLayout.BUCKET if blocks is None else RunLayout.POSITION
        shards = shard_count(n_rows, limits.rows_per_shard) if blocks is None else int(blocks["shard"].max()) + 1
        record = self._table_record(table, kind, shards, layout)
        metadata = rows_metadata(kind, record.write_json())
        if staged_run is not None:
            with phases.measure("parts' record filled in, published"):
                stored = kind.rows_path(self.root, table_id)
                staged_run.publish(metadata["judged.record"], stored)
        elif blocks is None:
            stored = sink_shards(table.scan, kind, table_id, self.root, shards, n_rows, metadata, limits,
                                 queries=table.query_rows, phases=phases)
        else:
            stored = sink_position_shards(table.scan, kind, table_id, self.root, blocks, metadata, limits, phases,
                                          table.duplicate_free)
        for files, rows in beside:
            write_parquet_atomically(rows, files.path(self.root, table_id), {"judged.table": files.name}, self.root)
        self._write_record(kind, record, record_path, metadata, stored, phases)
        return StoreReport(kind.name, table_id, True, n_rows)

    def _beside_the_rows(
        self, table: LoadedTable, kind: InputKind, table_id: str
    ) -> list[tuple[StoredFiles, pl.DataFrame]]:
        """What is stored beside a judgment set that names its assessors, before its record: who they are and how
        far they agree (flows/engine/agreement.py), once the set passed the checks of such a set (each assessor
        grades a pair once, every declared kind is an assessor's: an InputError before anything is written)."""
        if kind is not JUDGMENT_SET:
            return []
        check_assessors(table)
        if not assessor_names(table.scan):
            return []
        from judged.flows.engine.agreement import agreement_of  # loads the agreement's libraries only here

        assessors, pairs = agreement_of(table).stored()
        ASSESSORS_FILES.contract.validate(assessors)
        AGREEMENT_FILES.contract.validate(pairs)
        return [(ASSESSORS_FILES, assessors), (AGREEMENT_FILES, pairs)]

    def store_by_position(
        self, table: Described, blocks: pl.DataFrame, write: Callable[[Path, dict[str, str]], None],
        phases: Phases | None = None,
    ) -> StoreReport:
        """Store a run whose shards others write (a scaled-out ingest's workers: flows/store/scaled.py): cut by
        position from `blocks` (`position_plan`), its record made here from `table`, its rows written by
        `write(folder, metadata)` into a staging folder of this warehouse, that every writer sees at the same
        path; the folder is renamed into place whole once `write` returns, and the record written last. Nothing is
        written when the run is stored already; a `write` that raises leaves nothing behind."""
        phases = phases or Phases()
        self.ensure()
        kind = input_kind(table.kind)
        record_path = kind.record_path(self.root, table.table_id)
        if record_path.exists():
            return StoreReport(kind.name, table.table_id, False, table.counts["n_rows"])
        record = self._table_record(table, kind, int(blocks["shard"].max()) + 1, RunLayout.POSITION)
        metadata = rows_metadata(kind, record.write_json())
        stored = _publish_rows(kind.rows_path(self.root, table.table_id), self.root,
                               lambda temporary: write(temporary, metadata))
        self._write_record(kind, record, record_path, metadata, stored, phases)
        return StoreReport(kind.name, table.table_id, True, table.counts["n_rows"])

    def _write_record(
        self, kind: InputKind, record: pl.DataFrame, record_path: Path, metadata: dict[str, str], stored: Path,
        phases: Phases,
    ) -> None:
        """A stored table's record, once its rows are in place (`stored`): written last, it makes them visible."""
        with phases.measure("record"):
            if kind.ranked:  # write_ranked counted each shard's duplicate pairs
                record = record.with_columns(
                    n_duplicate_pairs=pl.lit(stored_duplicate_pairs(sorted(stored.glob("part-*.parquet"))), pl.Int64)
                )
            write_parquet_atomically(record, record_path, metadata, self.root)

    def _table_record(self, table: Described, kind: InputKind, shards: int, layout: RunLayout) -> pl.DataFrame:
        common = {
            "n_shards": shards,
            "metadata_json": canonical_json(table.metadata.model_dump(mode="json")),
            "content_sha256": table.content_sha256,
            "source_sha256": table.source_sha256,
            "source": table.source,
            "source_format": table.source_format,
            "n_rows": table.counts["n_rows"],
            "n_queries": table.counts["n_queries"],
            "ingested_at": now_utc(),
            "implementation_version": implementation_version(),
        }
        meta = table.metadata
        if isinstance(meta, JudgmentSetMetadata):
            row = {
                kind.id_column: table.table_id,
                "name": meta.name,
                "version": meta.version,
                "task": meta.task,
                "assessors": meta.assessors.description,
                "pooling": meta.pooling,
                "grade_scale": [{"grade": g, "meaning": m} for g, m in meta.grade_scale],
                "unresolved_token": meta.unresolved_token,
                "n_unresolved": table.counts["n_unresolved"],
                **common,
            }
            return pl.DataFrame([row], schema=kind.record.schema)
        row = {kind.id_column: table.table_id, **meta.model_dump(exclude={"source"}), **common,
               "layout": layout.value}
        return pl.DataFrame([row], schema=kind.record.schema)

    def record(self, kind: Kind | str, table_id: str) -> dict:
        """The record of `kind`'s table `table_id` as a dict; an InputError when it is not stored."""
        kind = kind_named(kind)
        record_path = kind.record_path(self.root, table_id)
        if not record_path.exists():
            raise InputError(str(self.root), f"no {kind.noun} with id {table_id} in the warehouse")
        return pl.read_parquet(record_path).row(0, named=True)

    def stored(self, kind: InputKind | str, table_id: str) -> StoredTable:
        """A stored judgment set or run: its record and its part files."""
        kind = input_kind(kind)
        return StoredTable(kind=kind.name, folder=kind.rows_path(self.root, table_id),  # type: ignore[arg-type]
                           record=self.record(kind, table_id))

    def load_stored(self, kind: InputKind | str, table_id: str, shard: int = 0, of: int = 1) -> LoadedTable:
        """A stored judgment set or run, or only its rows in shard `shard` of `of`, as the engine takes it."""
        return self.stored(kind, table_id).load(shard, of)

    def require_run(self, run_id: str) -> str:
        if not self.run_record(run_id).exists():
            raise InputError(str(self.root), f"{run_id!r} is neither a file nor a run id in the warehouse")
        return run_id

    def judgment_sets(self) -> pl.DataFrame:
        """Every stored judgment set record, oldest first."""
        files = self.record_files(JUDGMENT_SET)
        if not files:
            return pl.DataFrame(schema=JUDGMENT_SET.record.schema)
        return pl.concat([pl.read_parquet(f) for f in files]).sort("ingested_at")

    def require_free_version(self, metadata: object, judgment_set_id: str) -> None:
        """An InputError naming --version unless the judgment set's name and version label are free in this
        warehouse (or already mean `judgment_set_id` itself): `name@version` always means one set."""
        if not isinstance(metadata, JudgmentSetMetadata) or not metadata.version:
            return
        taken = self.judgment_sets().filter(
            (pl.col("name") == metadata.name) & (pl.col("version") == metadata.version)
            & (pl.col(JUDGMENT_SET.id_column) != judgment_set_id)
        )
        if taken.height:
            known = self.judgment_sets().filter(pl.col("name") == metadata.name)["version"].unique(maintain_order=True)
            raise InputError(
                f"--version {metadata.version}",
                f"judgment set {metadata.name!r} has a version {metadata.version!r} already "
                f"({taken[JUDGMENT_SET.id_column][0]}, other judgments or metadata): give this one a label of its "
                f"own (taken: {', '.join(known)})",
            )

    def resolve_judgment_set(self, reference: str) -> str:
        """An id, or a name: the name's current version is the judgment set of that name ingested last."""
        if self.judgment_set_record(reference).exists():
            return reference
        named = self.judgment_sets().filter(pl.col("name") == reference)
        if named.height == 0:
            raise InputError(str(self.root), f"no judgment set with id or name {reference!r} in the warehouse")
        return str(named[JUDGMENT_SET.id_column][-1])

    # -- evaluations ----------------------------------------------------------------------------------------------

    def has_evaluation(self, evaluation_id: str) -> bool:
        return self.evaluation_record(evaluation_id).exists()

    def resolve_evaluation(self, prefix: str) -> str:
        """The stored evaluation whose id is `prefix` or starts with it; an unknown or ambiguous prefix is an
        InputError (the ambiguous one lists the candidates)."""
        if prefix and self.has_evaluation(prefix):
            return prefix
        found = [path.stem for path in self.record_files(EVALUATION) if path.stem.startswith(prefix)]
        if not prefix or not found:
            raise InputError(str(self.root), f"no evaluation with id or id prefix {prefix!r} in the warehouse")
        if len(found) > 1:
            raise InputError(str(self.root), f"the prefix {prefix!r} matches {len(found)} evaluations: "
                                             f"{', '.join(found)}; give more of the id")
        return found[0]

    def store_evaluation(
        self,
        record: pl.DataFrame,
        per_query: list[pl.DataFrame],
        summary: pl.DataFrame,
        provenance_json: str,
        spec: EvaluationSpec,
    ) -> bool:
        """Write the per-query shards, the summary, then the record that makes them visible. False if already stored."""
        evaluation_id = str(record[EVALUATION.id_column][0])
        if self.has_evaluation(evaluation_id):
            return False
        # Checked against their declarations before anything is written: a stored row never breaks its contract.
        # (A per-query part's key is checked by the tests: on millions of rows the check is not free.)
        EVALUATION.record.contract.validate(record)
        SUMMARY_FILES.contract.validate(summary)
        for part in per_query:
            PER_QUERY_FILES.contract.validate(part, check_key=False)
        self.ensure()
        metadata = {"judged.provenance": provenance_json, "judged.spec": spec.canonical_json()}
        for shard, part in enumerate(per_query):
            write_parquet_atomically(
                part, self.per_query_part(evaluation_id, shard, len(per_query)),
                metadata | {"judged.table": PER_QUERY_FILES.name}, self.root,
            )
        write_parquet_atomically(
            summary, self.summary_part(evaluation_id), metadata | {"judged.table": SUMMARY_FILES.name}, self.root
        )
        write_parquet_atomically(
            record, self.evaluation_record(evaluation_id), metadata | {"judged.table": EVALUATION.record.name},
            self.root,
        )
        return True

    def load_evaluation(self, evaluation_id: str) -> tuple[dict, pl.DataFrame, pl.DataFrame]:
        """(record, per-query rows, summary) of a stored evaluation."""
        if not self.has_evaluation(evaluation_id):
            raise InputError(str(self.root), f"no evaluation with id {evaluation_id} in the warehouse")
        record = pl.read_parquet(self.evaluation_record(evaluation_id)).row(0, named=True)
        record.setdefault("method_version", METHOD_VERSION_UNRECORDED)  # a record from before method versions
        # Each part holds its queries by measure, then cutoff: a stable sort by query keeps that order.
        per_query = pl.read_parquet(PER_QUERY_FILES.path(self.root, evaluation_id) / "*.parquet").sort(
            "query_id", maintain_order=True
        )
        return record, per_query, pl.read_parquet(self.summary_part(evaluation_id))

    def store_nightly(self, claim_id: str, rows: pl.DataFrame) -> None:
        write_parquet_atomically(
            rows.cast(NIGHTLY.record.schema), self.nightly_record(claim_id), {"judged.table": NIGHTLY.record.name},
            self.root,
        )

    # -- catalog --------------------------------------------------------------------------------------------------

    def refresh_catalog(self) -> Path:
        """Regenerate the views-only DuckDB catalog under a temporary name and rename it over the old one: readers
        holding the old file keep reading it, and the writer never needs its lock. The views find their files when
        they are queried, so a new table needs no new catalog: one built from the same definitions by the same
        DuckDB, and unchanged since (its `CATALOG_MARK` says both), is left as it is."""
        self.ensure()
        definitions = views_sql()
        built = hashlib.sha256(f"{CATALOG_STORAGE_VERSION}\n{duckdb.__version__}\n{definitions}".encode()).hexdigest()
        mark = self.root / CATALOG_MARK
        current = _catalog_mark(built, self.catalog)
        if current is not None and current == _read_text(mark):
            return self.catalog
        with staged(self.root, self.catalog) as temporary:
            config = {"storage_compatibility_version": CATALOG_STORAGE_VERSION}
            with duckdb.connect(str(temporary), config=config) as connection:
                # The stored views name files relative to the warehouse, so a copied or moved warehouse reads its
                # own files (a client resolves them from the warehouse directory: see views_sql).
                connection.execute(f"SET file_search_path = {_sql_string(str(self.root))}")
                connection.execute(definitions)
            written = _catalog_mark(built, temporary)  # a rename keeps the file's identity
            os.replace(temporary, self.catalog)
        with staged(self.root, mark) as temporary:  # after the catalog: the mark names the file this writer wrote
            temporary.write_text(written or "")
            os.replace(temporary, mark)
        return self.catalog


def _catalog_mark(built: str, catalog: Path) -> str | None:
    """What `CATALOG_MARK` holds for a catalog built as `built` (the hash of what it was built from) and written as
    the file `catalog` is now (device, inode, size, modification time); None when there is no such file."""
    try:
        status = catalog.stat()
    except FileNotFoundError:
        return None
    return json.dumps({"built": built, "file": [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns]})


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def views_sql(root: Path | None = None) -> str:
    """The catalog's view definitions (transforms/views.sql) with every table's file glob filled in: under `root`,
    or without one relative to the warehouse directory, as the stored catalog has them (a plain DuckDB client then
    runs in the warehouse directory or sets `file_search_path` to it; `judged sql` builds the views for the
    warehouse's own path each time). Then the comments on each view and column, from their declarations
    (schemas/tables.py)."""
    template = resources.files("judged.transforms").joinpath("views.sql").read_text()
    if root is not None:
        # A warehouse written before a table existed has no file of it until its next writer (`Store.ensure`):
        # read-only, its view reads an empty typed relation instead.
        absent = [name for name, table in STORED_TABLES.items() if next(root.glob(table.glob), None) is None]
        template = _READ_PARQUET.sub(
            lambda found: _empty_relation(STORED_TABLES[found[1]]) if found[1] in absent else found[0], template)
    globs = {name: _sql_string(str(root / table.glob) if root else table.glob) for name, table in STORED_TABLES.items()}
    return (template.format(**globs, method_version_unrecorded=_sql_string(METHOD_VERSION_UNRECORDED)) + "\n"
            + comment_statements())


# How views.sql reads a stored table's files: `read_parquet({name}, union_by_name = true)`.
_READ_PARQUET = re.compile(r"read_parquet\(\{(\w+)\}, union_by_name = true\)")


def _empty_relation(table: StoredFiles) -> str:
    """A relation of no rows with the table's columns, each of the type DuckDB reads its Parquet files as."""
    with duckdb.connect() as connection:
        described = connection.from_arrow(pl.DataFrame(schema=table.schema).to_arrow())
        columns = ", ".join(f'CAST(NULL AS {kind}) AS "{name}"'
                            for name, kind in zip(described.columns, described.types, strict=True))
    # Braces doubled: the template is formatted after this.
    return f"(SELECT {columns} WHERE false)".replace("{", "{{").replace("}", "}}")


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
