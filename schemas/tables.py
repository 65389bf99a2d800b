"""Table contracts, declared once: every table judged reads or writes, each column's dtype, nullability and meaning,
and each table's primary key.

Belongs here: one `Table` declaration per table (inputs, per-query results, summaries, every stored table and every
catalog view). From it come the Polars schema (`.schema`, and the dict constants below that the code uses), the Arrow
schema (`.arrow_schema()`), the validation of a frame against it (`.problems()`, `.validate()`), the catalog's
`COMMENT ON VIEW/COLUMN` statements (`comment_statements`) and the documentation of the views (`views_markdown`,
the README's table). No computation and no I/O.

Extending a contract: add a `Column` to its declaration (or a new `Table`, and to `VIEWS` when the catalog shows it);
the schemas, validation, view comments and documentation follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import pyarrow as pa

from judged.schemas.comparison import COMPARISON_PER_QUERY, COMPARISON_RECORDS, COMPARISONS

STATUSES: tuple[str, ...] = ("scored", "missing_from_run", "no_relevant_judgments", "no_judgments")
"""Per-query status. `scored`: judged and retrieved with IDCG > 0. `missing_from_run`: judged, absent from the run.
`no_relevant_judgments`: judged, but nothing to find (nDCG: IDCG = 0; the binary measures: no grade >= rel).
`no_judgments`: in the run only."""
INTERVAL_KINDS: tuple[str, ...] = ("exact", "bound")
"""How a per-query interval was found: `exact` (the extremes over every assignment), `bound` (an interval that
provably contains them: a very long list, or a top-k read whose unread rows may hold unjudged documents)."""


class ContractError(ValueError):
    """A frame that does not match its table's declaration; the message lists every mismatch."""


@dataclass(frozen=True)
class Column:
    dtype: pl.DataType
    description: str  # one line
    nullable: bool = False


@dataclass(frozen=True, eq=False)
class Table:
    """A table's declaration: what one row is, its columns in order, and the columns that identify a row."""

    name: str
    row: str  # what one row is, e.g. "evaluation x query x cutoff"
    columns: dict[str, Column]
    primary_key: tuple[str, ...]
    description: str = ""  # one line: what the table is for
    _checked: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        unknown = [name for name in self.primary_key if name not in self.columns]
        if unknown:
            raise ValueError(f"table {self.name}: primary key column(s) {unknown} are not declared")
        nullable_key = [name for name in self.primary_key if self.columns[name].nullable and name != "cutoff"]
        if nullable_key:
            raise ValueError(f"table {self.name}: primary key column(s) {nullable_key} are nullable")

    @property
    def schema(self) -> dict[str, pl.DataType]:
        """The Polars schema, in column order."""
        return {name: column.dtype for name, column in self.columns.items()}

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
        before: dict[str, Column] | None = None, after: dict[str, Column] | None = None,
    ) -> Table:
        """Another table holding this one's columns, with `before` in front and `after` behind them."""
        return Table(name, row, {**(before or {}), **self.columns, **(after or {})}, primary_key, description)

    def problems(self, frame: pl.DataFrame, check_key: bool = True) -> list[str]:
        """Every way `frame` differs from the declaration (none: an empty list): missing, unexpected or misplaced
        columns, other dtypes, nulls where none are allowed, and (`check_key`) repeated primary keys."""
        found = []
        missing = [name for name in self.columns if name not in frame.columns]
        extra = [name for name in frame.columns if name not in self.columns]
        if missing:
            found.append(f"missing column(s) {missing}")
        if extra:
            found.append(f"undeclared column(s) {extra}")
        if not missing and not extra and frame.columns != list(self.columns):
            found.append(f"columns in the order {frame.columns}, declared {list(self.columns)}")
        for name, column in self.columns.items():
            if name not in frame.columns:
                continue
            if frame.schema[name] != column.dtype:
                found.append(f"column {name!r} is {frame.schema[name]}, declared {column.dtype}")
            if not column.nullable and frame[name].null_count():
                found.append(f"column {name!r} has {frame[name].null_count()} null(s), declared not nullable")
        if check_key and all(name in frame.columns for name in self.primary_key):
            repeated = frame.select(self.primary_key).is_duplicated().sum()
            if repeated:
                found.append(f"{repeated} rows repeat a primary key {list(self.primary_key)}")
        return found

    def validate(self, frame: pl.DataFrame, check_key: bool = True) -> pl.DataFrame:
        """The frame, if it matches the declaration; otherwise ContractError listing every mismatch."""
        found = self.problems(frame, check_key)
        if found:
            raise ContractError(f"{self.name}: " + "; ".join(found))
        return frame


def _id(what: str) -> Column:
    return Column(pl.String(), f"id of the {what} (content-derived)")


# -- inputs -------------------------------------------------------------------------------------------------------

_QUERY = Column(pl.String(), "the query's id, as written (a string: '007' is not '7')")
_DOC = Column(pl.String(), "the document's id, as written")
_SOURCE_LINE = Column(pl.Int64(), "line in the text file, or row in the Parquet file (1-based)")

JUDGMENTS_TABLE = Table(
    "judgments", "judgment",
    {
        "query_id": _QUERY,
        "iteration": Column(pl.String(), "the qrels' second column, kept for audit, never used", nullable=True),
        "doc_id": _DOC,
        "relevance": Column(pl.Int32(), "the judged grade; null = unresolved (treated as unjudged)", nullable=True),
        "source_line": _SOURCE_LINE,
    },
    ("source_line",),
    "relevance judgments (qrels) as read",
)

RUN_TABLE = Table(
    "run", "run row",
    {
        "query_id": _QUERY,
        "doc_id": _DOC,
        "source_rank": Column(pl.Int64(), "the rank as written in the file: audit only unless ranking='rank'",
                              nullable=True),
        "score": Column(pl.Float64(), "the system's score"),
        "run_tag": Column(pl.String(), "the run tag column as written", nullable=True),
        "source_line": _SOURCE_LINE,
    },
    ("source_line",),
    "a ranking as read",
)

PARQUET_JUDGMENTS_REQUIRED = ("query_id", "doc_id", "relevance")
PARQUET_RUN_REQUIRED = ("query_id", "doc_id", "score")

# -- results ------------------------------------------------------------------------------------------------------

_CUTOFF = Column(pl.Int32(), "k; null = the whole returned list", nullable=True)
_MEASURE = Column(pl.String(), "the measure and its non-default parameters, without the cutoff: nDCG, AP(rel=2), "
                               "RBP(p=0.8)")

PER_QUERY_TABLE = Table(
    "per_query", "query x measure x cutoff",
    {
        "query_id": _QUERY,
        "measure": _MEASURE,
        "cutoff": _CUTOFF,
        "status": Column(pl.Enum(list(STATUSES)), "scored, missing_from_run, no_relevant_judgments or no_judgments"),
        "value": Column(pl.Float64(), "the measure's value; null where undefined", nullable=True),
        "value_min": Column(pl.Float64(), "nDCG: the smallest value over every grade of the scale given to the "
                                          "unjudged documents the run retrieved (closed world); null where value is "
                                          "null and for other measures", nullable=True),
        "value_max": Column(pl.Float64(), "nDCG: the largest such value", nullable=True),
        "interval_kind": Column(pl.Enum(list(INTERVAL_KINDS)), "exact, or bound: an interval that provably "
                                                               "contains the exact one", nullable=True),
        "dcg": Column(pl.Float64(), "nDCG only: DCG@k of the ranking (null for other measures)", nullable=True),
        "idcg": Column(pl.Float64(), "nDCG only: DCG@k of the ideal ranking of the ideal universe", nullable=True),
        "residual": Column(pl.Float64(), "RBP only: the weight of unjudged positions and the tail; the measure lies "
                                         "in [value, value + residual]", nullable=True),
        "n_retrieved": Column(pl.Int64(), "rows of the run for the query, after the depth cut"),
        "n_relevant_at_k": Column(pl.Int64(), "within the first k of the submitted ranking: judged relevant (nDCG: "
                                              "gain > 0; the binary measures: grade >= rel)"),
        "n_nonrelevant_at_k": Column(pl.Int64(), "within the first k: judged, not relevant"),
        "n_unjudged_at_k": Column(pl.Int64(), "within the first k: no judgment or an unresolved one"),
        "unjudged_fraction_at_k": Column(pl.Float64(), "n_unjudged_at_k / min(k, n_retrieved); null when nothing "
                                                       "was retrieved", nullable=True),
        "ties_straddling_k": Column(pl.Int64(), "tie groups (equal score) with members on both sides of k"),
    },
    ("query_id", "measure", "cutoff"),
    "one run's value per query and measure, with its evidence and status",
)

SUMMARY_TABLE = Table(
    "summary", "measure x cutoff",
    {
        "measure": _MEASURE,
        "cutoff": _CUTOFF,
        "value": Column(pl.Float64(), "the aggregate over the scored queries; null when none was scored",
                        nullable=True),
        "value_min": Column(pl.Float64(), "nDCG: the same aggregate of the per-query minima", nullable=True),
        "value_max": Column(pl.Float64(), "nDCG: the same aggregate of the per-query maxima", nullable=True),
        "interval_width": Column(pl.Float64(), "the declared width (spec interval_width)"),
        "n_wide_intervals": Column(pl.Int64(), "scored queries whose value_max - value_min exceeds it"),
        "n_bound_intervals": Column(pl.Int64(), "scored queries whose interval is a bound, not exact"),
        "aggregation": Column(pl.String(), "mean or weighted_mean"),
        "n_queries": Column(pl.Int64(), "queries of the union of run and judgments"),
        "n_scored": Column(pl.Int64(), "queries in the aggregate"),
        "n_missing": Column(pl.Int64(), "judged queries missing from the run"),
        "n_undefined": Column(pl.Int64(), "judged queries whose value is null (IDCG = 0 under no_relevant='null')"),
        "n_no_judgments": Column(pl.Int64(), "run queries without judgments: never scored, counted here"),
        "n_unjudged_only": Column(pl.Int64(), "scored queries whose first k documents are all unjudged"),
        "mean_unjudged_fraction": Column(pl.Float64(), "mean unjudged fraction at k over the scored queries",
                                         nullable=True),
    },
    ("measure", "cutoff"),
    "one run's aggregate per measure and cutoff",
)

# -- the warehouse: what is stored, one contract per table ----------------------------------------------------------

# What every stored judgment set or run records about its input, after its own descriptive columns.
_STORED_INPUT: dict[str, Column] = {
    "metadata_json": Column(pl.String(), "the declared metadata, canonical JSON"),
    "content_sha256": Column(pl.String(), "sha256 of the decompressed content"),
    "source_sha256": Column(pl.String(), "sha256 of the file as it was read"),
    "source": Column(pl.String(), "the path as given at ingest"),
    "source_format": Column(pl.String(), "trec, trec.gz, parquet or python"),
    "n_rows": Column(pl.Int64(), "rows stored"),
    "n_queries": Column(pl.Int64(), "distinct queries"),
    "n_shards": Column(pl.Int32(), "part files, split by query bucket"),
    "ingested_at": Column(pl.Datetime("us", "UTC"), "when it was stored"),
    "implementation_version": Column(pl.String(), "judged's version that stored it"),
}

JUDGMENT_SETS_TABLE = Table(
    "judgment_sets", "judgment set",
    {
        "judgment_set_id": _id("judgment set"),
        "name": Column(pl.String(), "name shared by the set's versions"),
        "version": Column(pl.String(), "version label"),
        "task": Column(pl.String(), "the task the assessors were given"),
        "assessors": Column(pl.String(), "who judged, and the adjudication procedure"),
        "pooling": Column(pl.String(), "how candidates were chosen"),
        "grade_scale": Column(pl.List(pl.Struct({"grade": pl.Int32(), "meaning": pl.String()})),
                              "each grade and its meaning"),
        "unresolved_token": Column(pl.String(), "grade text marking an unresolved judgment", nullable=True),
        "n_unresolved": Column(pl.Int64(), "judgments stored with a null grade"),
        **_STORED_INPUT,
    },
    ("judgment_set_id",),
    "stored judgment sets with their metadata",
)

RUNS_TABLE = Table(
    "runs", "run",
    {
        "run_id": _id("run"),
        "system": Column(pl.String(), "the system that produced the run"),
        "configuration": Column(pl.String(), "its configuration"),
        "tag": Column(pl.String(), "the run tag"),
        **_STORED_INPUT,
        # Null in the copy of the record that the parts' metadata carries, written before the count (each part has
        # its own in `judged.duplicate_pairs`).
        "n_duplicate_pairs": Column(pl.Int64(), "(query, document) pairs present more than once, counted at ingest",
                                    nullable=True),
    },
    ("run_id",),
    "stored runs with their metadata",
)

STORED_JUDGMENTS_TABLE = JUDGMENTS_TABLE.extended(
    "judgments", "judgment", ("judgment_set_id", "source_line"), "the stored judgments of every judgment set",
    before={"judgment_set_id": _id("judgment set")},
    after={"bucket": Column(pl.Int32(), "the query's bucket (shards split by it)")},
)
# A stored run keeps each query's rows in trec_eval's order (transforms/layout.py): `position` in that order and
# `query_rows`, the query's rows in the whole run, let a top-k read stop at the first row groups.
RUN_ROWS_TABLE = RUN_TABLE.extended(
    "run_rows", "run row", ("run_id", "source_line"), "the stored rows of every run",
    before={"run_id": _id("run")},
    after={
        "bucket": Column(pl.Int32(), "the query's bucket (shards split by it)"),
        "position": Column(pl.Int32(), "1-based position in trec_eval's order (score desc, then doc_id desc)"),
        "query_rows": Column(pl.Int32(), "the query's rows in the whole run"),
    },
)

EVALUATIONS_TABLE = Table(
    "evaluations", "evaluation",
    {
        "evaluation_id": _id("evaluation"),
        "run_id": _id("run"),
        "judgment_set_id": _id("judgment set"),
        "run_name": Column(pl.String(), "the run's display name (tag, else system, else file name)"),
        "spec_hash": Column(pl.String(), "sha256 of the spec's canonical JSON"),
        "spec_json": Column(pl.String(), "the spec, canonical JSON"),
        "label": Column(pl.String(), "the method's label, e.g. nDCG@10[trec_eval:gain=linear]"),
        "implementation_version": Column(pl.String(), "judged's version"),
        "implementation_commit": Column(pl.String(), "judged's git commit, or unknown"),
        "flow_run_id": Column(pl.String(), "the Prefect flow run", nullable=True),
        "started_at": Column(pl.Datetime("us", "UTC"), "when the evaluation started"),
        "finished_at": Column(pl.Datetime("us", "UTC"), "when it finished"),
        "warnings": Column(pl.List(pl.String()), "every warning raised"),
        "provenance_json": Column(pl.String(), "the provenance record, JSON"),
        # Last, so that a view over records with and without it keeps the declared order.
        "method_version": Column(pl.String(), "the method version its values were computed under (0: stored before "
                                              "the method had one)"),
    },
    ("evaluation_id",),
    "stored evaluations with their provenance",
)

_RESULT_KEYS: dict[str, Column] = {
    "evaluation_id": _id("evaluation"),
    "run_id": _id("run"),
    "judgment_set_id": _id("judgment set"),
    "spec_hash": Column(pl.String(), "sha256 of the spec's canonical JSON"),
    "label": Column(pl.String(), "our label of this measure and cutoff, e.g. nDCG@10[trec_eval:gain=linear]"),
    "trec_eval_measure": Column(pl.String(), "trec_eval's name (ndcg_cut_10), only when it prints exactly this "
                                             "number", nullable=True),
}
STORED_PER_QUERY_TABLE = PER_QUERY_TABLE.extended(
    "per_query", "evaluation x query x measure x cutoff", ("evaluation_id", "query_id", "measure", "cutoff"),
    "every stored evaluation's per-query values", before=_RESULT_KEYS,
)
STORED_SUMMARY_TABLE = SUMMARY_TABLE.extended(
    "summary", "evaluation x measure x cutoff", ("evaluation_id", "measure", "cutoff"),
    "every stored evaluation's aggregates",
    before=_RESULT_KEYS,
)

NIGHTLY_TABLE = Table(
    "nightly", "file handled by a nightly run",
    {
        "flow_run_id": Column(pl.String(), "the nightly flow run"),
        "started_at": Column(pl.Datetime("us", "UTC"), "when the night's run started"),
        "file": Column(pl.String(), "the run file's name in the inbox"),
        "outcome": Column(pl.String(), "evaluated, duplicate or rejected"),
        "run_id": Column(pl.String(), "the stored run (null when rejected)", nullable=True),
        "judgment_set_id": Column(pl.String(), "the judgment set evaluated against", nullable=True),
        "evaluation_ids": Column(pl.List(pl.String()), "the evaluations made or found", nullable=True),
        "error": Column(pl.String(), "why the file was rejected", nullable=True),
        "source_sha256": Column(pl.String(), "sha256 of the file as it was read", nullable=True),
        "moved_to": Column(pl.String(), "where the file lies now: inbox/processed/... or inbox/rejected/...",
                           nullable=True),
    },
    ("flow_run_id", "file"),
    "what each nightly run did with each file",
)

JUDGED_RUN_ROWS_TABLE = Table(
    "judged_run_rows", "evaluated run row",
    {
        "judgment_set_id": _id("judgment set"),
        "run_id": _id("run"),
        "query_id": _QUERY,
        "doc_id": _DOC,
        "score": Column(pl.Float64(), "the system's score"),
        "source_rank": Column(pl.Int64(), "the rank as written in the file", nullable=True),
        "rank": Column(pl.Int32(), "trec_eval's rank (score desc, then doc_id desc by byte order): the stored "
                                   "position"),
        "relevance": Column(pl.Int32(), "the grade; null when unjudged or unresolved", nullable=True),
        "judged": Column(pl.Boolean(), "whether the row has a resolved judgment"),
    },
    ("judgment_set_id", "run_id", "query_id", "rank"),
    "each row of each evaluated run with its grade under each judgment set it was evaluated against",
)

# The catalog's views, in the order the README lists them.
VIEWS: dict[str, Table] = {
    table.name: table
    for table in (
        JUDGMENT_SETS_TABLE, STORED_JUDGMENTS_TABLE, RUNS_TABLE, RUN_ROWS_TABLE, EVALUATIONS_TABLE,
        STORED_PER_QUERY_TABLE, STORED_SUMMARY_TABLE, JUDGED_RUN_ROWS_TABLE, NIGHTLY_TABLE,
    )
}

# The Polars schemas the code uses, from the declarations.
JUDGMENTS = JUDGMENTS_TABLE.schema
RUN = RUN_TABLE.schema
PER_QUERY = PER_QUERY_TABLE.schema
SUMMARY = SUMMARY_TABLE.schema
JUDGMENT_SETS = JUDGMENT_SETS_TABLE.schema
RUNS = RUNS_TABLE.schema
STORED_JUDGMENTS = STORED_JUDGMENTS_TABLE.schema
RUN_ROWS = RUN_ROWS_TABLE.schema
EVALUATIONS = EVALUATIONS_TABLE.schema
STORED_PER_QUERY = STORED_PER_QUERY_TABLE.schema
STORED_SUMMARY = STORED_SUMMARY_TABLE.schema
NIGHTLY = NIGHTLY_TABLE.schema

# One row per judgment set made by extending another (`judged ingest-judgments --extends`).
JUDGMENT_LINEAGE: dict[str, pl.DataType] = {
    "judgment_set_id": pl.String(),  # the new version
    "parent_id": pl.String(),  # the version it extends
    "name": pl.String(),
    "version": pl.String(),
    "parent_version": pl.String(),
    "n_added": pl.Int64(),  # pairs the parent had no (resolved) grade for
    "n_revised": pl.Int64(),  # pairs whose grade changed (only with --revise)
    "n_confirmed": pl.Int64(),  # pairs answered again with the parent's grade
    "assessors": pl.String(),  # who judged the new answers
    "judged_at": pl.Datetime("us", "UTC"),
    "worklist_id": pl.String(),  # the worklist the assessors answered, when given
    "source": pl.String(),  # the answers file
    "source_sha256": pl.String(),
}

# A judging worklist (`judged worklist`): the pairs to judge next, best first (transforms/worklist.py).
WORKLISTS: dict[str, pl.DataType] = {
    "worklist_id": pl.String(),
    "judgment_set_id": pl.String(),
    "position": pl.Int64(),  # 1 = judge first
    "query_id": pl.String(),
    "doc_id": pl.String(),
    "priority": pl.Float64(),  # the query-weighted expected interval width removed, summed over the evaluations
    "width_removed": pl.Float64(),  # the same, unweighted
    "best_rank": pl.Int64(),
    "evaluations": pl.List(pl.String()),  # the runs (by name) that retrieved it in their top k
    "n_evaluations": pl.Int64(),
    "query_text": pl.String(),  # from --topics, when given
    "cutoff": pl.Int32(),
    "budget": pl.Int64(),
    "spec_hash": pl.String(),
    "created_at": pl.Datetime("us", "UTC"),
}



def _declared(
    name: str, row: str, schema: dict[str, pl.DataType], primary_key: tuple[str, ...], description: str,
    descriptions: dict[str, str],
) -> Table:
    """A view's declaration from a table's schema and a description per column; columns outside the key may be
    null (these tables are written by their own modules, which fill what applies)."""
    missing = [column for column in schema if column not in descriptions]
    if missing:
        raise ValueError(f"{name}: no description for column(s) {missing}")
    return Table(
        name, row,
        {c: Column(dtype, descriptions[c], nullable=c not in primary_key) for c, dtype in schema.items()},
        primary_key, description,
    )


JUDGMENT_LINEAGE_TABLE = _declared(
    "judgment_lineage", "judgment set made by extending another", JUDGMENT_LINEAGE, ("judgment_set_id",),
    "each version's parent, the pairs added and revised, who judged, when, and the worklist answered",
    {
        "judgment_set_id": "the new version", "parent_id": "the version it extends", "name": "the judgment set's name",
        "version": "the new version's label", "parent_version": "the parent's version label",
        "n_added": "pairs the parent had no (resolved) grade for", "n_revised": "pairs whose grade changed (--revise)",
        "n_confirmed": "pairs answered again with the parent's grade", "assessors": "who judged the new answers",
        "judged_at": "when the answers were ingested", "worklist_id": "the worklist the assessors answered",
        "source": "the answers file", "source_sha256": "sha256 of the answers file as it was read",
    },
)

WORKLISTS_TABLE = _declared(
    "worklists", "unjudged pair of a judging worklist", WORKLISTS, ("worklist_id", "position"),
    "the pairs to judge next, best first, with why",
    {
        "worklist_id": "id of the worklist (content-derived)", "judgment_set_id": "the judgment set it extends",
        "position": "1 = judge first", "query_id": "the query's id", "doc_id": "the document's id",
        "priority": "the query-weighted expected interval width removed, summed over the evaluations",
        "width_removed": "the same, unweighted", "best_rank": "the best rank any evaluated run gave the document",
        "evaluations": "the runs (by name) that retrieved it in their top k",
        "n_evaluations": "how many evaluated runs retrieved it in their top k",
        "query_text": "the query's text, from --topics", "cutoff": "k: the top k considered",
        "budget": "pairs asked for", "spec_hash": "the spec of the evaluations", "created_at": "when it was made",
    },
)

_PAIR_DESCRIPTIONS = {
    "comparison_id": "id of the comparison (content-derived)", "baseline": "the baseline run's name",
    "run": "the compared run's name", "baseline_evaluation_id": "the baseline's evaluation",
    "run_evaluation_id": "the compared run's evaluation", "measure": "the measure", "cutoff": "k; null = the whole list",
}

COMPARISON_RECORDS_TABLE = _declared(
    "comparison_records", "comparison", COMPARISON_RECORDS, ("comparison_id",),
    "the evaluations compared, the settings and the provenance",
    {
        "comparison_id": "id of the comparison (content-derived)", "evaluation_ids": "the evaluations compared",
        "run_names": "their runs' names", "baseline": "the baseline run's name",
        "judgment_set_id": "the common judgment set", "spec_hash": "the common spec",
        "label": "the spec's label", "settings_json": "the test settings (seed, permutations, correction...)",
        "implementation_version": "judged's version", "implementation_commit": "judged's git commit",
        "created_at": "when it was made", "notes": "what a reader must know (e.g. missing intervals)",
        "provenance_json": "the provenance record",
    },
)

COMPARISONS_TABLE = _declared(
    "comparisons", "pair of runs, measure and cutoff of a comparison", COMPARISONS,
    ("comparison_id", "run", "measure", "cutoff"), "paired statistics against the baseline",
    {
        **_PAIR_DESCRIPTIONS, "judgment_set_id": "the common judgment set", "spec_hash": "the common spec",
        "query_set": "common (scored in every run) or judged (missing queries score 0)",
        "n_queries": "queries in the paired sample", "baseline_mean": "the baseline's mean",
        "run_mean": "the run's mean", "mean_difference": "run - baseline",
        "ci_low": "paired percentile bootstrap of the mean difference: lower end",
        "ci_high": "paired percentile bootstrap of the mean difference: upper end",
        "t_statistic": "paired Student t statistic", "p_t": "paired Student t, two-sided",
        "p_randomization": "paired sign-flip randomization test, two-sided",
        "randomization": "exact (all 2^n sign vectors) or sampled ((b+1)/(B+1))",
        "p_adjusted": "p_randomization corrected over the whole family", "correction": "holm or bh",
        "p_tukey_hsd": "randomised Tukey HSD blocked by query (more than two runs)",
        "effect_size": "paired Cohen's d_z: mean difference / sd of the differences",
        "effect_size_kind": "which effect size", "wins": "queries where the run is better",
        "ties": "queries within the tie tolerance", "losses": "queries where the run is worse",
        "unresolved": "queries whose sign missing judgments could flip", "seed": "the random seed",
        "permutations": "randomization test permutations", "bootstrap_resamples": "bootstrap resamples",
        "confidence_level": "of the bootstrap interval", "tie_tolerance": "differences this small are ties",
    },
)

COMPARISON_PER_QUERY_TABLE = _declared(
    "comparison_per_query", "query of a pair of runs, measure and cutoff of a comparison", COMPARISON_PER_QUERY,
    ("comparison_id", "run", "measure", "cutoff", "query_id"),
    "each query's values, difference and whether missing judgments could flip its sign",
    {
        **_PAIR_DESCRIPTIONS, "query_id": "the query's id", "baseline_value": "the baseline's value",
        "run_value": "the run's value", "difference": "run - baseline",
        "baseline_value_min": "the baseline's interval over unjudged documents: lower end",
        "baseline_value_max": "the baseline's interval over unjudged documents: upper end",
        "run_value_min": "the run's interval over unjudged documents: lower end",
        "run_value_max": "the run's interval over unjudged documents: upper end",
        "robustness": "robust win, loss or tie whatever the missing judgments, or unresolved",
    },
)

VIEWS.update(
    (table.name, table)
    for table in (
        COMPARISON_RECORDS_TABLE, COMPARISONS_TABLE, COMPARISON_PER_QUERY_TABLE, JUDGMENT_LINEAGE_TABLE,
        WORKLISTS_TABLE,
    )
)

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
    """The README's table of views: each view, what one row is, its key and its columns."""
    lines = ["| view | one row per | key | columns |", "|---|---|---|---|"]
    for name, table in views.items():
        columns = ", ".join(f"`{c}`" for c in table.columns)
        lines.append(f"| `{name}` | {table.row} | {', '.join(table.primary_key)} | {columns} |")
    return "\n".join(lines)
