"""Table contracts, declared once: every table judged reads or writes, as a list of registered fields
(schemas/fields.py: each name's dtype and meaning), its primary key and the columns that may be null.

Belongs here: one `Table` declaration per table (inputs, per-query results, summaries, the worklist, every stored
table and every catalog view). From it come the Polars schema (`.schema`, and the dict constants below that the code
uses), the Arrow schema (`.arrow_schema()`), the validation of a frame against it (`.problems()`, `.validate()`), the
catalog's `COMMENT ON VIEW/COLUMN` statements (`comment_statements`) and the documentation of the views
(`views_markdown`, the table of docs/warehouse.md). No computation and no I/O.

Extending a contract: register the field (schemas/fields.py) and list its name in the table's declaration, and in
its `nullable` when it may be null (or declare a new `Table`, and add it to `VIEWS` when the catalog shows it); the
schemas, validation, view comments and documentation follow.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import pyarrow as pa

from judged.schemas.fields import DOC, FIELDS, QUERY


class ContractError(ValueError):
    """A frame that does not match its table's declaration; the message lists every mismatch."""


# The nullable columns a primary key may hold, and what their null means there.
NULLABLE_KEY_COLUMNS = {
    "cutoff": "the whole returned list",
    "assessor": "the one unnamed assessor of a set that names none",
}


@dataclass(frozen=True)
class Column:
    """A column as one table holds it: its field's dtype and description (or the table's override), and whether
    it may be null there."""

    dtype: pl.DataType
    description: str  # one line
    nullable: bool = False


@dataclass(frozen=True)
class Override:
    """What a registered name means in one table when the registry's description is not true there; `dtype` only
    where that table's stored files already hold another type."""

    description: str
    dtype: pl.DataType | None = None


def columns_of(
    names: Sequence[str], nullable: Sequence[str] = (), overrides: Mapping[str, Override] | None = None
) -> dict[str, Column]:
    """The columns of registered fields, in the order given: `nullable` may be null, `overrides` mean otherwise."""
    overrides = overrides or {}
    unknown = [name for name in (*names, *nullable, *overrides) if name not in FIELDS]
    if unknown:
        raise ValueError(f"field(s) {unknown} are not registered in schemas/fields.py")
    strays = [name for name in (*nullable, *overrides) if name not in names]
    if strays:
        raise ValueError(f"nullable or overridden field(s) {strays} are not among the columns listed")
    if len(set(names)) != len(names):
        raise ValueError(f"a field is listed twice: {list(names)}")
    columns = {}
    for name in names:
        registered, override = FIELDS[name], overrides.get(name)
        if override is None:
            columns[name] = Column(registered.dtype, registered.description, name in nullable)
        else:
            columns[name] = Column(override.dtype or registered.dtype, override.description, name in nullable)
    return columns


@dataclass(frozen=True, eq=False)
class Table:
    """A table's declaration: what one row is, its columns in order, and the columns that identify a row."""

    name: str
    row: str  # what one row is, e.g. "evaluation x query x cutoff"
    columns: dict[str, Column]
    primary_key: tuple[str, ...]
    description: str = ""  # one line: what the table is for
    overrides: Mapping[str, Override] = field(default_factory=dict)  # the columns not described by the registry
    # Nullable columns a frame or a stored file may lack, which then stands for a column of nulls (the judgments'
    # `assessor`: a set that names no assessor is held and stored as before assessors were recorded). A catalog
    # view always shows them.
    optional: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for what, names in (("primary key", self.primary_key), ("optional", self.optional)):
            unknown = [name for name in names if name not in self.columns]
            if unknown:
                raise ValueError(f"table {self.name}: {what} column(s) {unknown} are not declared")
        nullable_key = [name for name in self.primary_key
                        if self.columns[name].nullable and name not in NULLABLE_KEY_COLUMNS]
        if nullable_key:
            raise ValueError(f"table {self.name}: primary key column(s) {nullable_key} are nullable")
        required = [name for name in self.optional if not self.columns[name].nullable]
        if required:
            raise ValueError(f"table {self.name}: optional column(s) {required} are not nullable")

    @classmethod
    def of_fields(
        cls, name: str, row: str, fields: Sequence[str], primary_key: tuple[str, ...], description: str,
        nullable: Sequence[str] = (), overrides: Mapping[str, Override] | None = None, optional: Sequence[str] = (),
    ) -> Table:
        """A table of registered fields (see `columns_of`); `optional` ones may be absent (see `Table.optional`)."""
        return cls(name, row, columns_of(fields, nullable, overrides), primary_key, description, dict(overrides or {}),
                   tuple(optional))

    @property
    def schema(self) -> dict[str, pl.DataType]:
        """The Polars schema, in column order."""
        return {name: column.dtype for name, column in self.columns.items()}

    def schema_for(self, present: Collection[str]) -> dict[str, pl.DataType]:
        """The schema of a frame holding the columns `present`: the declared columns, in order, without the
        optional ones it lacks."""
        return {name: dtype for name, dtype in self.schema.items() if name in present or name not in self.optional}

    @property
    def nullable(self) -> tuple[str, ...]:
        """The columns that may be null, in column order."""
        return tuple(name for name, column in self.columns.items() if column.nullable)

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema, with each column's nullability and description (field metadata)."""
        import pyarrow as pa  # here, not at the top: a command that only reads and prints never loads pyarrow

        converted = pl.DataFrame(schema=self.schema).to_arrow().schema
        return pa.schema(
            [
                pa.field(name, converted.field(name).type, nullable=column.nullable,
                         metadata={"description": column.description})
                for name, column in self.columns.items()
            ]
        )

    def extended(
        self, name: str, row: str, primary_key: tuple[str, ...], description: str = "",
        before: Sequence[str] = (), after: Sequence[str] = (), nullable: Sequence[str] = (),
        overrides: Mapping[str, Override] | None = None,
    ) -> Table:
        """Another table holding this one's columns (nullability and overrides kept), with the registered fields
        `before` in front and `after` behind them; `nullable` and `overrides` apply to those."""
        added = columns_of([*before, *after], nullable, overrides)
        columns = {**{c: added[c] for c in before}, **self.columns, **{c: added[c] for c in after}}
        if len(columns) != len(added) + len(self.columns):
            raise ValueError(f"table {name}: a field of {self.name} is listed again")
        return Table(name, row, columns, primary_key, description, {**self.overrides, **(overrides or {})},
                     self.optional)

    def problems(self, frame: pl.DataFrame, check_key: bool = True) -> list[str]:
        """Every way `frame` differs from the declaration (none: an empty list): missing, unexpected or misplaced
        columns, other dtypes, nulls where none are allowed, and (`check_key`) repeated primary keys."""
        found = []
        declared = list(self.schema_for(frame.columns))
        missing = [name for name in declared if name not in frame.columns]
        extra = [name for name in frame.columns if name not in self.columns]
        if missing:
            found.append(f"missing column(s) {missing}")
        if extra:
            found.append(f"undeclared column(s) {extra}")
        if not missing and not extra and frame.columns != declared:
            found.append(f"columns in the order {frame.columns}, declared {declared}")
        for name, column in self.columns.items():
            if name not in frame.columns:
                continue
            if frame.schema[name] != column.dtype:
                found.append(f"column {name!r} is {frame.schema[name]}, declared {column.dtype}")
            if not column.nullable and frame[name].null_count():
                found.append(f"column {name!r} has {frame[name].null_count()} null(s), declared not nullable")
        key = [name for name in self.primary_key if name in declared]  # an absent optional column: all null
        if check_key and all(name in frame.columns for name in key):
            repeated = frame.select(key).is_duplicated().sum()
            if repeated:
                found.append(f"{repeated} rows repeat a primary key {key}")
        return found

    def validate(self, frame: pl.DataFrame, check_key: bool = True) -> pl.DataFrame:
        """The frame, if it matches the declaration; otherwise ContractError listing every mismatch."""
        found = self.problems(frame, check_key)
        if found:
            raise ContractError(f"{self.name}: " + "; ".join(found))
        return frame




# -- inputs -------------------------------------------------------------------------------------------------------

# A judgment row may name its assessor: several assessors' grades of one (query, document) are several rows (SPEC
# section 8), so a line number identifies a row within its assessor's file. A set that names no assessor has no
# `assessor` column in memory or in its stored files (`optional`); the catalog's view shows it null.
JUDGMENTS_TABLE = Table.of_fields(
    "judgments", "judgment", (QUERY, "iteration", DOC, "relevance", "assessor", "source_line"),
    ("assessor", "source_line"),
    "relevance judgments (qrels) as read",
    nullable=("iteration", "relevance", "assessor"), optional=("assessor",),
)

RUN_TABLE = Table.of_fields(
    "run", "run row", (QUERY, DOC, "source_rank", "score", "run_tag", "source_line"), ("source_line",),
    "a ranking as read",
    nullable=("source_rank", "run_tag"),
)

PARQUET_JUDGMENTS_REQUIRED = (QUERY, DOC, "relevance")
PARQUET_RUN_REQUIRED = (QUERY, DOC, "score")

# -- results ------------------------------------------------------------------------------------------------------

PER_QUERY_TABLE = Table.of_fields(
    "per_query", "query x measure x cutoff",
    (
        QUERY, "measure", "cutoff", "status", "value", "value_min", "value_max", "interval_kind", "dcg", "idcg",
        "residual", "n_retrieved", "n_relevant_at_k", "n_nonrelevant_at_k", "n_unjudged_at_k",
        "unjudged_fraction_at_k", "ties_straddling_k",
    ),
    (QUERY, "measure", "cutoff"),
    "one run's value per query and measure, with its evidence and status",
    nullable=("cutoff", "value", "value_min", "value_max", "interval_kind", "dcg", "idcg", "residual",
              "unjudged_fraction_at_k"),
)

SUMMARY_TABLE = Table.of_fields(
    "summary", "measure x cutoff",
    (
        "measure", "cutoff", "value", "value_min", "value_max", "interval_width", "n_wide_intervals",
        "n_bound_intervals", "aggregation", "n_queries", "n_scored", "n_missing", "n_undefined", "n_no_judgments",
        "n_unjudged_only", "mean_unjudged_fraction",
    ),
    ("measure", "cutoff"),
    "one run's aggregate per measure and cutoff",
    nullable=("cutoff", "value", "value_min", "value_max", "mean_unjudged_fraction"),
    # A summary's values are aggregates of the per-query ones, over the queries it counts.
    overrides={
        "value": Override("the aggregate over the scored queries; null when none was scored"),
        "value_min": Override("the same aggregate of the per-query minima (null for Judged)"),
        "value_max": Override("the same aggregate of the per-query maxima (null for Judged)"),
        "n_queries": Override("queries of the union of run and judgments"),
    },
)

# A judging worklist (`judged worklist`, transforms/worklist.py): the pairs to judge next, best first.
WORKLIST_TABLE = Table.of_fields(
    "worklist", "unjudged pair to judge",
    ("position", QUERY, DOC, "priority", "width_removed", "best_rank", "evaluations", "n_evaluations"),
    ("position",),
    "the pairs to judge next as ranked, before they are stored with the worklist's id and settings",
    overrides={"position": Override("the pair's place in the list: 1 = judge first", pl.Int64())},
)

# -- the warehouse: what is stored, one contract per table ----------------------------------------------------------

# What every stored judgment set or run records about its input, after its own descriptive columns.
_STORED_INPUT = (
    "metadata_json", "content_sha256", "source_sha256", "source", "source_format", "n_rows", "n_queries", "n_shards",
    "ingested_at", "implementation_version",
)

JUDGMENT_SETS_TABLE = Table.of_fields(
    "judgment_sets", "judgment set",
    ("judgment_set_id", "name", "version", "task", "assessors", "pooling", "grade_scale", "unresolved_token",
     "n_unresolved", *_STORED_INPUT),
    ("judgment_set_id",),
    "stored judgment sets with their metadata",
    nullable=("unresolved_token",),
)

RUNS_TABLE = Table.of_fields(
    "runs", "run",
    # `layout` last, so that a view over records with and without it keeps the declared order.
    ("run_id", "system", "configuration", "tag", *_STORED_INPUT, "n_duplicate_pairs", "layout"),
    ("run_id",),
    "stored runs with their metadata",
    # Null in the copy of the record that the parts' metadata carries, written before the count (each part has its
    # own in `judged.duplicate_pairs`).
    nullable=("n_duplicate_pairs",),
)

STORED_JUDGMENTS_TABLE = JUDGMENTS_TABLE.extended(
    "judgments", "judgment", ("judgment_set_id", "assessor", "source_line"),
    "the stored judgments of every judgment set",
    before=("judgment_set_id",), after=("bucket",),
)

# Several assessors (transforms/assessors.py): who they are, and how far each pair agrees. Computed from a set's rows
# as they pass between the layers, stored beside the set when it is stored.
ASSESSOR_COUNTS_TABLE = Table.of_fields(
    "assessor_counts", "named assessor", ("assessor", "assessor_kind", "n_judgments", "n_unresolved", "n_queries"),
    ("assessor",), "each assessor a judgment set's rows name, with their declared kind and what they judged",
    nullable=("assessor_kind",),
    overrides={"n_unresolved": Override("the assessor's judgments stored with a null grade"),
               "n_queries": Override("distinct queries the assessor judged")},
)
AGREEMENT_TABLE = Table.of_fields(
    "agreement", "pair of assessors",
    ("assessor_a", "assessor_b", "shared_pairs", "agreement", "kappa", "weighted_kappa", "kappa_relevant"),
    ("assessor_a", "assessor_b"), "how far two assessors agree on the (query, document) pairs both graded",
    nullable=("agreement", "kappa", "weighted_kappa", "kappa_relevant"),
)
STORED_ASSESSORS_TABLE = ASSESSOR_COUNTS_TABLE.extended(
    "assessors", "assessor of a judgment set", ("judgment_set_id", "assessor"),
    "each named assessor of each judgment set: kind and judgments (sets that name no assessor have no row)",
    before=("judgment_set_id",),
)
STORED_AGREEMENT_TABLE = AGREEMENT_TABLE.extended(
    "assessor_agreement", "pair of assessors of a judgment set", ("judgment_set_id", "assessor_a", "assessor_b"),
    "how far each pair of a judgment set's assessors agree, and Krippendorff's alpha over all of them",
    before=("judgment_set_id",), after=("relevant_from", "alpha"), nullable=("alpha",),
)
# A stored run keeps each query's rows in trec_eval's order (transforms/layout.py): `position` in that order and
# `query_rows`, the query's rows in the whole run, let a top-k read stop at the first row groups.
RUN_ROWS_TABLE = RUN_TABLE.extended(
    "run_rows", "run row", ("run_id", "source_line"), "the stored rows of every run",
    before=("run_id",), after=("bucket", "position", "query_rows"),
)

EVALUATIONS_TABLE = Table.of_fields(
    "evaluations", "evaluation",
    ("evaluation_id", "run_id", "judgment_set_id", "run_name", "spec_hash", "spec_json", "label",
     "implementation_version", "implementation_commit", "flow_run_id", "started_at", "finished_at", "warnings",
     "provenance_json",
     # Last, so that a view over records with and without it keeps the declared order.
     "method_version"),
    ("evaluation_id",),
    "stored evaluations with their provenance",
    nullable=("flow_run_id",),
)

# The columns a stored result row has in front of its per-query or summary columns.
RESULT_KEYS = ("evaluation_id", "run_id", "judgment_set_id", "spec_hash", "label", "trec_eval_measure")
# A result row's label names its own measure and cutoff, not the whole spec's.
_RESULT_OVERRIDES = {"label": Override("our label of this measure and cutoff, e.g. nDCG@10[trec_eval:gain=linear]")}
STORED_PER_QUERY_TABLE = PER_QUERY_TABLE.extended(
    "per_query", "evaluation x query x measure x cutoff", ("evaluation_id", QUERY, "measure", "cutoff"),
    "every stored evaluation's per-query values",
    before=RESULT_KEYS, nullable=("trec_eval_measure",), overrides=_RESULT_OVERRIDES,
)
STORED_SUMMARY_TABLE = SUMMARY_TABLE.extended(
    "summary", "evaluation x measure x cutoff", ("evaluation_id", "measure", "cutoff"),
    "every stored evaluation's aggregates",
    before=RESULT_KEYS, nullable=("trec_eval_measure",), overrides=_RESULT_OVERRIDES,
)

NIGHTLY_TABLE = Table.of_fields(
    "nightly", "file handled by a nightly run",
    ("flow_run_id", "started_at", "file", "outcome", "run_id", "judgment_set_id", "evaluation_ids", "error",
     "source_sha256", "moved_to"),
    ("flow_run_id", "file"),
    "what each nightly run did with each file",
    nullable=("run_id", "judgment_set_id", "evaluation_ids", "error", "source_sha256", "moved_to"),
)

JUDGED_RUN_ROWS_TABLE = Table.of_fields(
    "judged_run_rows", "evaluated run row",
    ("judgment_set_id", "judgment_version", "run_id", QUERY, DOC, "score", "source_rank", "rank", "relevance",
     "judged"),
    ("judgment_set_id", "run_id", QUERY, "rank"),
    "each row of each evaluated run with its grade under each judgment set it was evaluated against",
    nullable=("source_rank", "relevance"),
    overrides={"relevance": Override("the judged grade (of several assessors, their consensus: the lower median "
                                     "of the grades given); null = unjudged or unresolved")},
)

# One row per judgment set made by extending another (`judged ingest-judgments --extends`, flows/pipeline/judging.py).
JUDGMENT_LINEAGE_TABLE = Table.of_fields(
    "judgment_lineage", "judgment set made by extending another",
    ("judgment_set_id", "parent_id", "name", "version", "parent_version", "n_added", "n_revised", "n_confirmed",
     "assessors", "judged_at", "worklist_id", "source", "source_sha256"),
    ("judgment_set_id",),
    "each version's parent, the pairs added and revised, who judged, when, and the worklist answered",
    nullable=("worklist_id",),  # given only when the answers are a worklist's
)

WORKLISTS_TABLE = WORKLIST_TABLE.extended(
    "worklists", "unjudged pair of a judging worklist", ("worklist_id", "position"),
    "the pairs to judge next, best first, with why",
    before=("worklist_id", "judgment_set_id"), after=("query_text", "cutoff", "budget", "spec_hash", "created_at"),
    nullable=("query_text",),  # only with --topics, and only for the queries it lists
)

# Comparisons of evaluations (flows/engine/compare.py). A statistic is null where it is undefined: no query in the
# paired sample (the means, the interval, the tests), fewer than two queries or no spread (the interval, t, d_z),
# two runs only (Tukey HSD), evaluations without intervals (unresolved, robustness and the interval bounds).
COMPARISON_RECORDS_TABLE = Table.of_fields(
    "comparison_records", "comparison",
    ("comparison_id", "evaluation_ids", "run_names", "baseline", "judgment_set_id", "spec_hash", "label",
     "settings_json", "implementation_version", "implementation_commit", "created_at", "notes", "provenance_json"),
    ("comparison_id",),
    "the evaluations compared, the settings and the provenance",
)

_PAIR_KEYS = ("comparison_id", "baseline", "run", "baseline_evaluation_id", "run_evaluation_id", "measure", "cutoff")

COMPARISONS_TABLE = Table.of_fields(
    "comparisons", "pair of runs, measure and cutoff of a comparison",
    (*_PAIR_KEYS, "judgment_set_id", "spec_hash", "query_set", "n_queries", "baseline_mean", "run_mean",
     "mean_difference", "ci_low", "ci_high", "t_statistic", "p_t", "p_randomization", "randomization", "p_adjusted",
     "correction", "significant", "p_tukey_hsd", "effect_size", "effect_size_kind", "wins", "ties", "losses",
     "unresolved", "seed", "permutations", "bootstrap_resamples", "confidence_level", "tie_tolerance",
     "mean_difference_min", "mean_difference_max", "decided", "decided_direction", "unjudged_documents", "open_queries",
     "disputed_documents", "disputed_queries", "assessor_worlds", "assessor_worlds_agree"),
    ("comparison_id", "baseline", "run", "measure", "cutoff"),
    "paired statistics of each pair of runs compared (the baseline against each other run, or every pair)",
    nullable=("cutoff", "baseline_mean", "run_mean", "mean_difference", "ci_low", "ci_high", "t_statistic", "p_t",
              "p_randomization", "randomization", "p_adjusted", "significant", "p_tukey_hsd", "effect_size",
              "unresolved", "mean_difference_min", "mean_difference_max", "decided", "decided_direction",
              "unjudged_documents", "open_queries", "disputed_documents", "disputed_queries", "assessor_worlds",
              "assessor_worlds_agree"),
    overrides={"n_queries": Override("queries in the paired sample")},
)

COMPARISON_PER_QUERY_TABLE = Table.of_fields(
    "comparison_per_query", "query of a pair of runs, measure and cutoff of a comparison",
    (*_PAIR_KEYS, QUERY, "baseline_value", "run_value", "difference", "baseline_value_min", "baseline_value_max",
     "run_value_min", "run_value_max", "difference_min", "difference_max", "difference_kind", "robustness",
     "n_unjudged", "n_disputed"),
    ("comparison_id", "baseline", "run", "measure", "cutoff", QUERY),
    "each query's values, difference and whether missing judgments could flip its sign; a query without a "
    "relevant judgment has null values and the interval over the worlds that give it one",
    nullable=("cutoff", "baseline_value", "run_value", "difference", "baseline_value_min", "baseline_value_max",
              "run_value_min", "run_value_max", "difference_min", "difference_max", "difference_kind", "robustness",
              "n_unjudged", "n_disputed"),
)

PAIRED_DIFFERENCE_TABLE = Table.of_fields(
    "paired_difference", "pair of runs, query, measure and cutoff",
    ("baseline", "run", QUERY, "cutoff", "measure", "difference_min", "difference_max", "difference_kind",
     "n_unjudged"),
    ("baseline", "run", QUERY, "measure", "cutoff"),
    "a pair's difference interval over one grading of the open documents for both runs (transforms/"
    "paired_intervals.py, binary_intervals.py), before the comparison joins it to its paired rows",
    nullable=("cutoff", "difference_min", "difference_max", "difference_kind", "n_unjudged"),
)

# -- the catalog's views ------------------------------------------------------------------------------------------

# A result an analyst joins names its judgment set's version, so that results on two versions of one judgment set
# (the judging loop makes a new one) are told apart in a query's output: the catalog adds `judgment_version`
# (judgment_sets.version) behind the stored columns. The stored files do not hold it.
VIEW_ONLY_COLUMNS = ("judgment_version",)
PER_QUERY_VIEW = STORED_PER_QUERY_TABLE.extended(
    "per_query", STORED_PER_QUERY_TABLE.row, STORED_PER_QUERY_TABLE.primary_key, STORED_PER_QUERY_TABLE.description,
    after=VIEW_ONLY_COLUMNS,
)
SUMMARY_VIEW = STORED_SUMMARY_TABLE.extended(
    "summary", STORED_SUMMARY_TABLE.row, STORED_SUMMARY_TABLE.primary_key, STORED_SUMMARY_TABLE.description,
    after=VIEW_ONLY_COLUMNS,
)
COMPARISONS_VIEW = COMPARISONS_TABLE.extended(
    "comparisons", COMPARISONS_TABLE.row, COMPARISONS_TABLE.primary_key, COMPARISONS_TABLE.description,
    after=VIEW_ONLY_COLUMNS,
)


def _latest(table: Table, what: str) -> Table:
    """The view `latest_<table>`: the same columns, for the newest version of each judgment set name only."""
    return Table(f"latest_{table.name}", table.row, table.columns, table.primary_key,
                 f"{what}, on the newest version of each judgment set name only (the version ingested last)",
                 table.overrides)


LATEST_JUDGMENT_SETS_VIEW = _latest(JUDGMENT_SETS_TABLE, "the judgment sets")
LATEST_PER_QUERY_VIEW = _latest(PER_QUERY_VIEW, "every stored evaluation's per-query values")
LATEST_SUMMARY_VIEW = _latest(SUMMARY_VIEW, "every stored evaluation's aggregates")

# The catalog's views, in the order the README lists them.
VIEWS: dict[str, Table] = {
    table.name: table
    for table in (
        JUDGMENT_SETS_TABLE, STORED_JUDGMENTS_TABLE, STORED_ASSESSORS_TABLE, STORED_AGREEMENT_TABLE, RUNS_TABLE,
        RUN_ROWS_TABLE, EVALUATIONS_TABLE,
        PER_QUERY_VIEW, SUMMARY_VIEW, JUDGED_RUN_ROWS_TABLE, NIGHTLY_TABLE, COMPARISON_RECORDS_TABLE,
        COMPARISONS_VIEW, COMPARISON_PER_QUERY_TABLE, JUDGMENT_LINEAGE_TABLE, WORKLISTS_TABLE,
        LATEST_JUDGMENT_SETS_VIEW, LATEST_SUMMARY_VIEW, LATEST_PER_QUERY_VIEW,
    )
}
# Every declared table: the views, and the tables that pass between the layers before anything is stored.
DECLARED: tuple[Table, ...] = (JUDGMENTS_TABLE, RUN_TABLE, PER_QUERY_TABLE, SUMMARY_TABLE, WORKLIST_TABLE,
                               STORED_PER_QUERY_TABLE, STORED_SUMMARY_TABLE, COMPARISONS_TABLE, ASSESSOR_COUNTS_TABLE,
                               AGREEMENT_TABLE, *VIEWS.values())

# The Polars schemas the code uses, from the declarations.
JUDGMENTS = JUDGMENTS_TABLE.schema
RUN = RUN_TABLE.schema
PER_QUERY = PER_QUERY_TABLE.schema
SUMMARY = SUMMARY_TABLE.schema
WORKLIST = WORKLIST_TABLE.schema
JUDGMENT_SETS = JUDGMENT_SETS_TABLE.schema
RUNS = RUNS_TABLE.schema
STORED_JUDGMENTS = STORED_JUDGMENTS_TABLE.schema
ASSESSOR_COUNTS = ASSESSOR_COUNTS_TABLE.schema
AGREEMENT = AGREEMENT_TABLE.schema
STORED_ASSESSORS = STORED_ASSESSORS_TABLE.schema
STORED_AGREEMENT = STORED_AGREEMENT_TABLE.schema
RUN_ROWS = RUN_ROWS_TABLE.schema
EVALUATIONS = EVALUATIONS_TABLE.schema
STORED_PER_QUERY = STORED_PER_QUERY_TABLE.schema
STORED_SUMMARY = STORED_SUMMARY_TABLE.schema
NIGHTLY = NIGHTLY_TABLE.schema
JUDGMENT_LINEAGE = JUDGMENT_LINEAGE_TABLE.schema
WORKLISTS = WORKLISTS_TABLE.schema
COMPARISON_RECORDS = COMPARISON_RECORDS_TABLE.schema
PAIRED_DIFFERENCE = PAIRED_DIFFERENCE_TABLE.schema
COMPARISONS = COMPARISONS_TABLE.schema
COMPARISON_PER_QUERY = COMPARISON_PER_QUERY_TABLE.schema

# -- what the declarations say, for the catalog and the documentation -------------------------------------------------


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def comment_statements(views: dict[str, Table] = VIEWS) -> str:
    """`COMMENT ON VIEW` and `COMMENT ON COLUMN` for each view: its row and key, and each column's description."""
    statements = []
    for name, table in views.items():
        key = ", ".join(table.primary_key)
        statements.append(f"COMMENT ON VIEW {name} IS {_sql_string(f'One row per {table.row} (key: {key}): {table.description}.')};")
        for column_name, column in table.columns.items():
            nullable = " (nullable)" if column.nullable else ""
            statements.append(f"COMMENT ON COLUMN {name}.{column_name} IS {_sql_string(column.description + nullable)};")
    return "\n".join(statements)


def views_markdown(views: dict[str, Table] = VIEWS) -> str:
    """docs/warehouse.md's table of views: each view, what one row is, its key and its columns."""
    lines = ["| view | one row per | key | columns |", "|---|---|---|---|"]
    for name, table in views.items():
        columns = ", ".join(f"`{c}`" for c in table.columns)
        lines.append(f"| `{name}` | {table.row} | {', '.join(table.primary_key)} | {columns} |")
    return "\n".join(lines)
