"""One streaming pass over a scanned table: its rows read once, in batches of whole stretches of one query id, each
checked, counted and looked at for repeated (query, document) pairs as it is read, and handed to whoever stores
the rows as they come.

Belongs here: `ReadingPass` (the pass: `batches()` for a store, then `finish()` for its `checks`, `counts` and
`duplicate_free`), the fast reader's checks that a pass and a table read in memory share (`row_checks`,
`query_ids_check`, `blank_in_slices`: whether the rows a one-separator split made are the grammar's, else the file
goes to the exact parser), a run's common tag from the smallest and largest tag, and `whole_stretch_batches`, which
the engine's scanned parts read by too. Opening files and choosing how to read them is flows/store/readers.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl

from judged.flows.store.kinds import InputKind
from judged.schemas.fields import QUERY, TAG
from judged.transforms.duplicates import stretches_may_have_duplicates
from judged.transforms.parse import in_contract
from judged.transforms.trec_grammar import holds_blank, is_not_a_first_field

# The checks after which the fast reader leaves a file to the exact parser (`row_checks`, `query_ids_check`).
DECLINING = ("missing", "blank", "nan", "comment")
# Rows of a table in memory whose text columns are joined at once to look for blanks: a few MB of text, small enough
# that the next slice reuses its memory instead of faulting in fresh pages (benchmarks/README, the direct path at M).
SLICE_ROWS = 1 << 18
# The rows a pass looks at first, to see whether its queries are scattered.
PEEK_ROWS = 10_000


def row_checks(schema: pl.Schema) -> list[pl.Expr]:
    """The fast reader's checks of rows of this schema (`DECLINING`), each an aggregate that is true when the file
    must be left to the exact parser: `missing`, an empty field (the CSV reader, without quoting, reads one as a
    null: a doubled separator, or a short line); `blank`, a field other than the query id holding a blank, which a
    split on one separator byte kept whole where the grammar splits it or drops it (transforms/trec_grammar.py);
    and `nan`, a score that is not finite (NaN, inf, -inf, 1e999), whose line the exact parser names. The query ids
    are looked at once a stretch of one id (`query_ids_check`).

    `blank` looks at each text column joined (per batch, per query, or per `SLICE_ROWS` rows of a table in memory:
    `blank_in_slices`), one search over its bytes, which costs half as much as one search a field."""
    texts = [name for name, dtype in schema.items() if dtype == pl.String and name != QUERY]
    return [
        pl.any_horizontal(pl.exclude("source_line").is_null().any()).alias("missing"),
        pl.any_horizontal([holds_blank(pl.col(name).str.join()) for name in texts] or [False]).alias("blank"),
        ((~pl.col("score").is_finite()).any() if "score" in schema else pl.lit(False)).alias("nan"),
    ]


def query_ids_check(query_ids: pl.Expr) -> pl.Expr:
    """`comment`: whether one of these query ids (one a stretch) is not a line's first field as the grammar reads it:
    a comment line's, or one holding a blank."""
    return is_not_a_first_field(query_ids).any().alias("comment")


def blank_in_slices(table: pl.DataFrame) -> bool:
    """`row_checks`' `blank` of a table in memory, looked for a slice of rows at a time."""
    (blank,) = [check for check in row_checks(table.schema) if check.meta.output_name() == "blank"]
    return any(part.select(blank).item() for part in table.iter_slices(SLICE_ROWS))


def tag_summary() -> list[pl.Expr]:
    """A run tag (null when there is none) and whether the non-null tags differ (see `tag_of`): the smallest and the
    largest, as two aggregates that Polars' streaming engine keeps in constant memory. (Comparing every tag with the
    first one makes it hold the columns of every check beside it.)"""
    tag = pl.col(TAG)
    return [tag.min().alias("some_tag"), (tag.min() != tag.max()).alias("tags_differ")]


def tag_of(tag: object, differ: object) -> str:
    """The tag every row of a run carries, "" when they differ or have none."""
    return "" if tag is None or differ else str(tag)


def tag_of_extremes(smallest: str | None, largest: str | None) -> str:
    """The tag every row of a run carries, from the smallest and the largest of its tags (null: none), "" when they
    differ: as `load_table` finds a run's common tag, for a run whose pieces were read apart."""
    return tag_of(smallest, smallest != largest)


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
    few thousand ids where finding every stretch (`transforms.ranking.stretches_of`) looks at every one (most of a
    batch's cost beside its candidates)."""
    last, window = query_ids[-1], 1 << 12
    while True:
        start = max(query_ids.len() - window, 0)
        others = (query_ids.slice(start) != last).arg_true()
        if others.len():
            return start + int(others[-1]) + 1
        if start == 0:
            return 0
        window *= 2


class ReadingPass:
    """One streaming pass over a scanned table's rows (`rows`, with `source_line`: a text file too large to parse in
    memory, as the fast reader's CSV scan gives it, or a Parquet run already validated by `conform_run`), read once
    in batches of about `batch_rows` rows of whole stretches of one query id (`whole_stretch_batches`). Each batch is
    checked by the fast reader's checks (`row_checks`, `query_ids_check`; a `validated` table's are not), counted by
    query, and, with `look_for_repeats`, looked at for repeated (query, document) pairs: a pass proves that none
    occurs when each query's rows lie in one stretch and no batch may repeat a document within a query.

    Whoever stores the rows as they are read (`OnePassShards`) iterates `batches()`: each batch in the kind's
    contract, for as long as every batch so far passed the checks and the look for repeats; the iteration ends at
    the first that does not, `stopped` saying why. `finish()` then reads what the iteration left (the whole pass,
    when nobody iterated) and gives `checks` (empty for a validated table), `counts` (`query_id` -> `n_rows`,
    `first_line`, `last_line`) and `duplicate_free`; `plain` says whether the rows stand for the file. `tag` is the
    tag every row carries as the reader assumes it (the read of a text run that takes its first line's tag as the
    only one, or a validated run's common tag, "" when they differ; None: not assumed), from which the rows' run id
    is made.

    Beside a batch, a pass holds one row per query and batch. A table whose first `PEEK_ROWS` rows already hold a
    query in two stretches (a shuffled run) is neither proven free of repeats nor given in batches: its checks and
    counts are one streaming group-by by query instead (a validated table's pass ends there, without counts, as it
    ends at the first batch the look for repeats turns down: the table is then read another way, and a shuffled run
    is not read whole to find it out)."""

    def __init__(
        self, rows: pl.LazyFrame, kind: InputKind, batch_rows: int, look_for_repeats: bool, tag: str | None = None,
        validated: bool = False,
    ) -> None:
        self.rows, self.kind, self.tag = rows, kind, tag
        self.stopped: str | None = None
        self.readable = True  # False: a value the scan could not read as its column types (then not `plain`)
        self.checks: dict[str, Any] = {}
        self.counts: pl.DataFrame | None = None
        self.duplicate_free = look_for_repeats
        self._batch_rows, self._validated, self._looks_for_repeats = batch_rows, validated, look_for_repeats
        self._steps = self._read()

    def batches(self) -> Iterator[pl.DataFrame]:
        """Each batch in the kind's contract as it is read, while every batch passed the checks and the look for
        repeats."""
        for batch in self._steps:
            if batch is None:
                return
            yield _in_contract(batch, self.kind)

    def finish(self) -> ReadingPass:
        """Read whatever `batches()` left; `checks`, `counts` and `duplicate_free` are then the whole pass's."""
        for _ in self._steps:
            pass
        return self

    @property
    def plain(self) -> bool:
        """After `finish`: whether the rows read stand for the file (it was read whole, and no check failed)."""
        return self.readable and not any(self.checks.get(name) for name in DECLINING)

    @property
    def common_tag(self) -> str | None:
        """After `finish`: the tag every row carries, "" when they differ (None: a validated table's, not looked
        at here)."""
        return tag_of(self.checks["some_tag"], self.checks["tags_differ"]) if "some_tag" in self.checks else None

    def _stop(self, reason: str) -> Iterator[None]:
        """The pass gives no more batches: `batches()` ends (once)."""
        if self.stopped is None:
            self.stopped = reason
            yield None

    def _read(self) -> Iterator[pl.DataFrame | None]:
        """The pass: each batch (as read) while the pass gives batches, None once when it stops giving them; its
        checks, counts and proof when it ends."""
        rows, validated = self.rows, self._validated
        schema = rows.collect_schema()
        tagged = TAG in schema
        checks = [] if validated else [
            *row_checks(schema), *([pl.col(TAG).min().alias("tag_min"), pl.col(TAG).max().alias("tag_max")]
                                   if tagged else []),
        ]
        per_query = [
            pl.col("len").sum().alias("n_rows"), pl.col("first_line").min(), pl.col("last_line").max(),
            pl.len().alias("stretches"),
        ]
        try:
            empty = rows.clear().collect()
            found = [empty.select(checks)]
            counted = [empty.select(QUERY, len=pl.lit(0, pl.UInt32), first_line="source_line",
                                    last_line="source_line").group_by(QUERY).agg(per_query)]
            first_stretches = rows.head(PEEK_ROWS).collect(engine="streaming")[QUERY].rle().struct.field("value")
            scattered = first_stretches.n_unique() < first_stretches.len()
            if scattered:
                self.duplicate_free = False
                yield from self._stop("a query's rows in two stretches")
                if validated:
                    return
                by_query = rows.group_by(QUERY).agg(
                    n_rows=pl.len(), first_line=pl.col("source_line").min(), last_line=pl.col("source_line").max(),
                    *checks,
                ).collect(engine="streaming")
                # A row of checks per query, reduced with the others at the end.
                found.append(by_query.select(
                    (pl.col("missing") | pl.col(QUERY).is_null()).alias("missing"), "blank", "nan",
                    query_ids_check(pl.col(QUERY)), *(["tag_min", "tag_max"] if tagged else []),
                ))
                counted.append(by_query.select(QUERY, "n_rows", "first_line", "last_line"))
            for batch in () if scattered else whole_stretch_batches(rows, self._batch_rows):
                stretches = batch[QUERY].rle().struct.unnest().rename({"value": QUERY})
                if not validated:
                    found.append(batch.select(*checks, query_ids_check(pl.lit(stretches[QUERY]))))
                ends = stretches["len"].cum_sum()
                stretches = stretches.with_columns(first_line=batch["source_line"].gather(ends - stretches["len"]),
                                                   last_line=batch["source_line"].gather(ends - 1))
                counted.append(stretches.group_by(QUERY).agg(per_query))
                if self.duplicate_free:  # the batch is in memory: the in-memory engine groups it faster
                    self.duplicate_free = (
                        counted[-1].height == stretches.height  # each query one stretch
                        and not stretches_may_have_duplicates(batch.lazy()).collect(engine="in-memory").item())
                if not self.duplicate_free:
                    yield from self._stop("a query's rows in two stretches, or a document it may hold twice"
                                          if self._looks_for_repeats else "its rows are not looked at for repeats")
                    if validated:
                        return
                elif not validated and found[-1].select(pl.any_horizontal(DECLINING)).item():
                    yield from self._stop("a line the fast reader leaves to the exact parser")
                elif self.stopped is None:
                    yield batch
        except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError):
            # A value the scan cannot read as its column types (a tag other than the one it assumed, a rank beyond
            # 32 bits, a byte that is not UTF-8): the file is read another way.
            self.readable, self.duplicate_free = False, False
            self.stopped = self.stopped or "a value the read could not take as its column types"
            return
        queries = pl.concat(counted, how="diagonal").group_by(QUERY).agg(
            pl.col("n_rows").sum(), pl.col("first_line").min(), pl.col("last_line").max(), pl.col("stretches").sum())
        self.counts = queries.select(QUERY, "n_rows", "first_line", "last_line")
        self.duplicate_free = self.duplicate_free and bool((queries["stretches"] == 1).all())
        if not validated:
            self.checks = pl.concat(found, how="diagonal").select(
                pl.col(DECLINING).any(),
                *([pl.col("tag_min").min().alias("some_tag"),
                   (pl.col("tag_min").min() != pl.col("tag_max").max()).alias("tags_differ")] if tagged else []),
            ).row(0, named=True)


def _in_contract(batch: pl.DataFrame, kind: InputKind) -> pl.DataFrame:
    """A batch that passed the checks, in the kind's contract, as `ReadingPass.batches` gives it. A run's tag that
    is one value throughout the batch (nearly always) becomes a constant column: Polars then neither converts it row
    by row nor gathers it when a shard is put in stored order, and writes the same file."""
    rows = batch.lazy()
    if TAG in batch.columns:
        tag = batch[TAG]
        if tag.null_count() == 0 and (value := tag.min()) == tag.max():
            rows = rows.with_columns(pl.lit(value, pl.String).alias(TAG))
    return in_contract(rows, kind.input_contract).collect(engine="in-memory")
