"""The warehouse's table kinds, declared once: what each kind of stored thing is called, where its files lie, which
column holds its id, and the contract of each of its tables.

Belongs here: `StoredFiles` (one catalog view's files: its folder, contract and glob), `Kind` (a record that makes
its tables' files visible, with the id column they share), and the registry `KINDS`. The store (paths, writes,
`ensure`) and the catalog (each view's glob) read them; nothing here touches a file. A new stored table is a new
`StoredFiles` in a kind, and a view in transforms/views.sql.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import polars as pl

from judged.schemas.provenance import JudgmentSetMetadata, RunMetadata
from judged.schemas.tables import (
    COMPARISON_PER_QUERY_TABLE,
    COMPARISON_RECORDS_TABLE,
    COMPARISONS_TABLE,
    EVALUATIONS_TABLE,
    JUDGMENT_LINEAGE_TABLE,
    JUDGMENT_SETS_TABLE,
    JUDGMENTS_TABLE,
    NIGHTLY_TABLE,
    RUN_ROWS_TABLE,
    RUN_TABLE,
    RUNS_TABLE,
    STORED_AGREEMENT_TABLE,
    STORED_ASSESSORS_TABLE,
    STORED_JUDGMENTS_TABLE,
    STORED_PER_QUERY_TABLE,
    STORED_SUMMARY_TABLE,
    WORKLISTS_TABLE,
    Table,
)
from judged.transforms.parse import (
    conform_judgments, conform_run, parse_trec_qrels, parse_trec_run, run_problem_probe,
)
from judged.transforms.trec_grammar import QRELS_COLUMNS, RUN_COLUMNS, Columns


class Layout(Enum):
    """How a view's files are named under its folder: one file per id, or a folder of part files per id."""

    FILE = "file"  # <folder>/<id>.parquet
    PARTS = "parts"  # <folder>/<id>/part-*.parquet

    @property
    def glob(self) -> str:
        return "*.parquet" if self is Layout.FILE else "*/*.parquet"

    @property
    def empty(self) -> str:
        """The empty file (under the folder) that lets the view resolve before anything is stored."""
        return "_empty.parquet" if self is Layout.FILE else "_empty/part-0.parquet"


@dataclass(frozen=True, repr=False)
class StoredFiles:
    """One catalog view's files: a folder of the warehouse named as the view, holding one table's rows."""

    contract: Table  # its name is the view's and the folder's
    layout: Layout

    @property
    def name(self) -> str:
        return self.contract.name

    @property
    def schema(self) -> dict[str, pl.DataType]:
        return self.contract.schema

    @property
    def glob(self) -> str:
        """The view's files, relative to the warehouse; an empty table's file matches too (it has no rows)."""
        return f"{self.name}/{self.layout.glob}"

    @property
    def empty_file(self) -> str:
        """The empty file relative to the warehouse (see `Layout.empty`)."""
        return f"{self.name}/{self.layout.empty}"

    def __repr__(self) -> str:
        return f"StoredFiles({self.glob!r})"

    def path(self, root: Path, table_id: str) -> Path:
        """The file (FILE) or the folder of part files (PARTS) of id `table_id` under the warehouse `root`."""
        return root / self.name / (f"{table_id}.parquet" if self.layout is Layout.FILE else table_id)


@dataclass(frozen=True, repr=False)
class Kind:
    """A kind of stored thing: its record (one file per id, written last) and the tables whose files that record
    makes visible (`parts`: each view joins them to the record on `id_column`)."""

    name: str  # a judgment set's or run's is also `judged.table` in its files' metadata and the readers' kind
    noun: str  # in messages: "no judgment set with id ..."
    id_column: str | None  # None: the files are named by something no column holds (the nightly claim)
    record: StoredFiles
    parts: tuple[StoredFiles, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def tables(self) -> tuple[StoredFiles, ...]:
        return (self.record, *self.parts)

    @property
    def record_folder(self) -> str:
        return self.record.name

    @property
    def rows(self) -> StoredFiles:
        """The table holding the kind's rows (the first part)."""
        if not self.parts:
            raise ValueError(f"a {self.noun} keeps its rows in its record: it has no rows folder")
        return self.parts[0]

    @property
    def rows_folder(self) -> str:
        return self.rows.name

    def record_path(self, root: Path, table_id: str) -> Path:
        return self.record.path(root, table_id)

    def rows_path(self, root: Path, table_id: str) -> Path:
        return self.rows.path(root, table_id)


@dataclass(frozen=True, kw_only=True, repr=False)
class InputKind(Kind):
    """A kind read from an input file or frame (a judgment set, a run): also its contract as the engine takes it,
    its columns in TREC text (transforms/trec_grammar.py) and how its lines are parsed, how a frame or a Parquet
    table is conformed to it (and looked at for problems first, where that can skip the rows), the metadata model of
    its record, and the column holding each row's value (with the dtype a nested dict's numbers are read as)."""

    input_contract: Table
    trec_columns: Columns
    # (lines, unresolved token) -> the contract plus `problem` (transforms/parse.py)
    parse_text: Callable[[pl.LazyFrame, str | None], pl.LazyFrame]
    # (table, source, first_row=, unresolved_declared=) -> the contract plus `problem`
    conform: Callable[..., pl.LazyFrame]
    # a Parquet table's rows with a problem, looked for on its own columns (None: only `conform`'s pass can tell)
    problem_probe: Callable[[pl.LazyFrame], pl.LazyFrame | None] | None
    metadata_model: type[JudgmentSetMetadata] | type[RunMetadata]
    value_column: str
    value_dtype: pl.DataType
    ranked: bool  # stored in trec_eval's order (transforms/layout.py), with a duplicate-pair count

    @property
    def unresolved_values(self) -> bool:
        """Whether a row's value may be unresolved (null: a judgment nobody settled), and is counted."""
        return self.value_column in self.input_contract.nullable


# The tables the code names on their own (the others it reaches through their kind's record and rows).
LINEAGE_FILES = StoredFiles(JUDGMENT_LINEAGE_TABLE, Layout.FILE)
# A set that names its assessors: who they are, and how far they agree (flows/store/warehouse.py writes them).
ASSESSORS_FILES = StoredFiles(STORED_ASSESSORS_TABLE, Layout.FILE)
AGREEMENT_FILES = StoredFiles(STORED_AGREEMENT_TABLE, Layout.FILE)
PER_QUERY_FILES = StoredFiles(STORED_PER_QUERY_TABLE, Layout.PARTS)
SUMMARY_FILES = StoredFiles(STORED_SUMMARY_TABLE, Layout.PARTS)
COMPARISONS_FILES = StoredFiles(COMPARISONS_TABLE, Layout.PARTS)
COMPARISON_PER_QUERY_FILES = StoredFiles(COMPARISON_PER_QUERY_TABLE, Layout.PARTS)

JUDGMENT_SET = InputKind(
    "judgments", "judgment set", "judgment_set_id",
    record=StoredFiles(JUDGMENT_SETS_TABLE, Layout.FILE),
    # The lineage of a version made by extending another, and the assessors of a set that names them with their
    # agreement, are written before its record, and show with it.
    parts=(StoredFiles(STORED_JUDGMENTS_TABLE, Layout.PARTS), LINEAGE_FILES, ASSESSORS_FILES, AGREEMENT_FILES),
    input_contract=JUDGMENTS_TABLE, trec_columns=QRELS_COLUMNS, parse_text=parse_trec_qrels, conform=conform_judgments,
    problem_probe=None, metadata_model=JudgmentSetMetadata, value_column="relevance", value_dtype=pl.Int64(),
    ranked=False,
)
RUN = InputKind(
    "run", "run", "run_id",
    record=StoredFiles(RUNS_TABLE, Layout.FILE),
    parts=(StoredFiles(RUN_ROWS_TABLE, Layout.PARTS),),
    input_contract=RUN_TABLE, trec_columns=RUN_COLUMNS, parse_text=parse_trec_run, conform=conform_run,
    problem_probe=run_problem_probe, metadata_model=RunMetadata, value_column="score", value_dtype=pl.Float64(),
    ranked=True,
)
EVALUATION = Kind(
    "evaluation", "evaluation", "evaluation_id",
    record=StoredFiles(EVALUATIONS_TABLE, Layout.FILE),
    parts=(PER_QUERY_FILES, SUMMARY_FILES),
)
NIGHTLY = Kind("nightly", "nightly record", None, record=StoredFiles(NIGHTLY_TABLE, Layout.FILE))
# Comparisons of evaluations (flows/engine/compare.py): the record makes its statistics and per-query rows visible.
COMPARISON = Kind(
    "comparison", "comparison", "comparison_id",
    record=StoredFiles(COMPARISON_RECORDS_TABLE, Layout.FILE),
    parts=(COMPARISONS_FILES, COMPARISON_PER_QUERY_FILES),
)
WORKLIST = Kind("worklist", "worklist", "worklist_id", record=StoredFiles(WORKLISTS_TABLE, Layout.FILE))

# Every kind, by name.
KINDS: Mapping[str, Kind] = {
    kind.name: kind for kind in (JUDGMENT_SET, RUN, EVALUATION, NIGHTLY, COMPARISON, WORKLIST)
}
INPUT_KINDS: Mapping[str, InputKind] = {kind.name: kind for kind in KINDS.values() if isinstance(kind, InputKind)}
# Every stored table (catalog view over files), by name.
STORED_TABLES: Mapping[str, StoredFiles] = {table.name: table for kind in KINDS.values() for table in kind.tables}


def kind_named(kind: str | Kind) -> Kind:
    """The kind named `kind` (a kind is returned as it is)."""
    if isinstance(kind, Kind):
        return kind
    if kind not in KINDS:
        raise ValueError(f"{kind!r} is not a kind of stored table: {', '.join(KINDS)}")
    return KINDS[kind]


def input_kind(kind: str | Kind) -> InputKind:
    """The input kind named `kind` ("judgments" or "run"; a kind is returned as it is)."""
    found = kind_named(kind)
    if not isinstance(found, InputKind):
        raise ValueError(f"{found.name!r} is not a kind of input: {', '.join(INPUT_KINDS)}")
    return found
