"""The evaluation engine: one plan for every way of running an evaluation, the work of one part, and the result.

Belongs here: `plan` (the evaluation id, the parts of an evaluation under its `Limits`, and how each part's run is
read: `Read`, `PartRead`, `choose_read`), `evaluate_part` (the orchestration-free sequence for one part: read as
planned, resolve duplicates, check the inputs against the spec, compute, collect),
`assemble` (one result from every part) and `evaluate`, which runs a plan in this process. The CLI and the Prefect
tasks (and Dask through them) only iterate a plan. The computation itself lives in `transforms/`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property
from typing import Literal

import polars as pl

from judged.flows.store.kinds import input_kind
from judged.flows.store.readers import LoadedTable, Table
from judged.flows.store.reading_pass import whole_stretch_batches
from judged.flows.engine.limits import DEFAULT_LIMITS, Limits
from judged.flows.engine.versions import implementation_version
from judged.flows.report.wording import counted
from judged.schemas.provenance import JudgmentSetMetadata, evaluation_id
from judged.schemas.spec import EvaluationSpec
from judged.transforms.assessors import pairs_graded_twice, resolve_assessors
from judged.transforms.duplicates import (
    duplicate_pairs,
    keep_one_per_pair,
    may_have_duplicates,
    raise_on_duplicates,
    stretches_may_have_duplicates,
)
from judged.transforms.errors import InputError
from judged.transforms.layout import head_positions, head_rows
from judged.transforms.judging import ranked_and_judged
from judged.transforms.measures import per_query_measures
from judged.transforms.measures.ndcg import gains_beyond_float64, grades_outside_gain_map
from judged.transforms.ranking import QUERY, candidate_rows, first_rows_needed, stretches_of
from judged.transforms.shards import RunLayout, shard_count
from judged.transforms.summary import summarize


EngineType = Literal["auto", "in-memory", "streaming"]


class Read(Enum):
    """How a part's run rows are read, chosen by `plan`; every read gives the same per-query rows."""

    STORED_HEAD = "stored head"  # each query's first rows of a stored run in its ranked layout, held in memory
    IN_MEMORY = "in memory"  # rows held in memory (parsed text, a frame), the candidates found at once
    IN_PARTS = "text in parts"  # rows held in memory, the candidates found a part of whole queries at a time
    SCANNED_BATCHES = "scanned in batches"  # a scan read once in batches of whole queries (`scanned_per_query`)
    SCANNED_WHOLE = "scanned whole"  # a scan read whole, in one streaming pass


class JudgmentsRead(Enum):
    """How a part's judgments are found, chosen by `plan` from how the run is stored."""

    WHOLE = "whole"  # a loaded run is one part: every judgment
    SAME_BUCKETS = "same buckets"  # a run stored by bucket: the judgments of the part's buckets (transforms/shards.py)
    PART_QUERIES = "part queries"  # a run stored by position: a semi-join on the queries its part files list


@dataclass(frozen=True)
class PartRead:
    """How `plan` has one part's run read, and why. `bounds` (IN_PARTS): the row slices, each of whole queries,
    whose candidates are found one at a time. `whole_if` (SCANNED_BATCHES): what the batches' one pass may find
    that `plan` cannot know without a pass of its own (a repeated document, a query in two batches), for which
    the part is then read SCANNED_WHOLE."""

    read: Read
    why: str
    bounds: tuple[tuple[int, int], ...] = ()
    whole_if: str = ""

    def describe(self) -> str:
        return f"{self.read.value} ({self.why}{'; read whole if ' + self.whole_if if self.whole_if else ''})"


@dataclass(frozen=True, eq=False)
class EvaluationResult:
    """One evaluation's per-query rows, summary and warnings. Compared and hashed by identity (its frames have no
    equality); two results hold the same evaluation when their `evaluation_id`s are equal. `reads` says how each
    part's run was read (`Plan.describe`), for `--profile`."""

    run_name: str
    identify: Callable[[], str] = field(repr=False)  # gives `evaluation_id`
    spec: EvaluationSpec
    per_query: pl.DataFrame
    summary: pl.DataFrame
    warnings: tuple[str, ...]
    reads: tuple[str, ...] = ()
    grades: tuple[int, ...] | None = None
    """The judgment set's grade scale where known: whether it is binary decides RBP's trec_eval name."""

    @cached_property
    def evaluation_id(self) -> str:
        """The content-derived id, made on first use: it waits for the inputs' hashes, which a result printed
        without its identity (trec_eval-style lines) never needs."""
        return self.identify()


@dataclass(frozen=True)
class Part:
    """Shard `shard` of `of` of a run stored in shards (the stored shards p with p mod `of` = `shard`), and the
    judgments of its queries; a loaded run is one part, Part(0, 1)."""

    shard: int
    of: int


@dataclass(frozen=True, eq=False)
class Plan:
    """One evaluation cut into parts, made by `plan`: its inputs, spec and limits, the parts and how each part's
    run is read (`reads`, one per part), the run's name and the evaluation id (made on first use, once). Every
    driver (the direct command, the Prefect tasks, Dask) evaluates each part with `evaluate_part` and gives the
    per-query rows of all of them to `assemble`. `intervals` false leaves the nDCG intervals out (null), for an
    output that cannot show them; a stored evaluation always has them."""

    run: Table
    judgments: Table
    spec: EvaluationSpec
    limits: Limits
    parts: tuple[Part, ...]
    run_name: str
    identify: Callable[[], str] = field(repr=False)
    intervals: bool = True
    reads: tuple[PartRead, ...] = ()
    judgments_read: JudgmentsRead = JudgmentsRead.WHOLE

    @property
    def evaluation_id(self) -> str:
        return self.identify()

    def inputs(self, part: Part) -> tuple[LoadedTable, LoadedTable]:
        """The run's and the judgments' rows of one part, as `evaluate_part` takes them (the judgments as
        `judgments_read` says)."""
        run = run_rows(self.run, part)
        if self.judgments_read is JudgmentsRead.PART_QUERIES:
            return run, self._judgments_of_queries(part, run)
        if self.judgments_read is JudgmentsRead.SAME_BUCKETS:
            return run, self.judgments.load(part.shard, part.of)
        return run, self.judgments.load()

    def _judgments_of_queries(self, part: Part, run: LoadedTable) -> LoadedTable:
        """The judgments of the queries a part of a run stored by position lists. The judged queries the run lacks
        are in no part's list: the first part takes them, as every judgment but those of the other parts'
        queries, so each is evaluated (as missing from the run) exactly once, as by bucket."""
        if run.part_queries is None:
            raise ValueError(f"part {part.shard + 1}/{part.of} of a run stored by position lists no queries")
        if part.shard > 0:
            return self.judgments.load_queries(run.part_queries)
        others = [run_rows(self.run, Part(shard, part.of)).part_queries for shard in range(1, part.of)]
        listed = pl.concat([pl.DataFrame(schema={QUERY: pl.String}), *(q for q in others if q is not None)])
        return self.judgments.load_queries(listed, without=True)

    def read(self, part: Part) -> PartRead:
        return self.reads[self.parts.index(part)]

    def describe(self) -> list[str]:
        """One line per part: how its run is read and why (`--profile` prints them)."""
        return [part_read_line(part, read) for part, read in zip(self.parts, self.reads, strict=True)]

    @property
    def names_depend_on_grades(self) -> bool:
        return names_depend_on_grades(self.spec)

    @cached_property
    def interval_grades(self) -> tuple[int, ...] | None:
        """The grade scale of the intervals, of the whole judgment set (a part's judgments may lack some grades);
        None without intervals."""
        return grade_scale(self.judgments) if self.intervals else None


def part_read_line(part: Part, read: PartRead, planned: PartRead | None = None) -> str:
    """`read part S/N: READ (why)`; with the `planned` read when the part was read otherwise (`PartRead.whole_if`)."""
    line = f"read part {part.shard + 1}/{part.of}: {read.describe()}"
    return line if planned is None or planned == read else f"{line}, planned {planned.describe()}"


def run_rows(run: Table, part: Part) -> LoadedTable:
    """The run's rows of one part: a shard of a stored run; a loaded run, which is one part, as loaded."""
    return run.load(part.shard, part.of) if run.in_shards else run.load()


def plan(
    run: Table,
    judgments: Table,
    spec: EvaluationSpec,
    limits: Limits = DEFAULT_LIMITS,
    intervals: bool = True,
) -> Plan:
    """How to evaluate a run against judgments under the spec. A loaded run is one part. A stored run is
    evaluated part by part, each with the judgments of its queries, so memory holds one part at a time and the
    result equals the evaluation of the whole run: a part is one stored shard, or, when the spec reads only each
    query's head of a run in stored order, as many shards as keep a part's head rows under
    `limits.head_rows_per_part` and its judgments under `limits.judgment_rows_per_part`. Each part's read
    (`choose_read`) is chosen here, once, and how its judgments are found: by bucket for a run stored by bucket,
    by the part's queries for one stored by position (transforms/shards.py), all of them for a loaded run."""
    of = run.shards
    positions = head_positions(spec)
    if positions is not None and run.ranked():
        head_rows_read = run.n_queries * positions
        parts_needed = max(
            shard_count(head_rows_read, limits.head_rows_per_part),
            shard_count(judgments.n_rows, limits.judgment_rows_per_part),
        )
        of = min(of, parts_needed)
    parts = tuple(Part(shard, of) for shard in range(of))
    return Plan(
        run=run,
        judgments=judgments,
        spec=spec,
        limits=limits,
        parts=parts,
        run_name=run.name,
        identify=result_identity(run, judgments, spec),
        intervals=intervals,
        reads=tuple(choose_read(run_rows(run, part), spec, limits) for part in parts),
        judgments_read=(JudgmentsRead.WHOLE if not run.in_shards
                        else JudgmentsRead.PART_QUERIES if run.layout is RunLayout.POSITION
                        else JudgmentsRead.SAME_BUCKETS),
    )


def choose_read(run: LoadedTable, spec: EvaluationSpec, limits: Limits) -> PartRead:
    """How one part's run rows (`Plan.inputs`) are read, from what is known without a pass over them: where they
    are, their format, Parquet's row count (its metadata), the stored layout and the duplicate pairs counted at
    ingest. Held rows are cut into parts of whole queries here (`candidate_bounds`)."""
    positions = head_positions(spec)
    if run.stored_order is not None and positions is not None:  # held once read, but cut into no parts: a head is
        # a scan of the stored files, which each slice would read again
        return PartRead(Read.STORED_HEAD, f"each query's first {positions} rows, in stored order")
    if run.in_memory:  # held rows, where a slice costs nothing
        n_rows = run.scan.select(pl.len()).collect().item()
        bounds = candidate_bounds(run.scan, n_rows, limits.candidate_part_rows, run.stretches)
        if bounds is not None:
            return PartRead(Read.IN_PARTS, f"{n_rows:,} rows held, in {len(bounds)} parts of whole queries", bounds)
        if n_rows <= limits.candidate_part_rows:
            return PartRead(Read.IN_MEMORY, f"{n_rows:,} rows held, at most Limits.candidate_part_rows")
        return PartRead(Read.IN_MEMORY, f"{n_rows:,} rows held; a query listed in several stretches takes them all")
    if run.stored_order is not None:
        return PartRead(Read.SCANNED_WHOLE, "a stored run in ranked layout, and the spec reads whole lists")
    if run.counted_duplicate_pairs:  # the duplicates policy is applied to the whole part
        pairs = counted(run.counted_duplicate_pairs, "duplicate pair")
        return PartRead(Read.SCANNED_WHOLE, f"{pairs} counted at ingest: the duplicates policy takes the whole part")
    # A Parquet file's row count is in its metadata; scanned text is not counted before it is read.
    if run.source_format == "parquet":
        n_rows = run.scan.select(pl.len()).collect().item()
        if n_rows <= limits.whole_scan_rows:  # one streaming pass is faster, in memory that stays bounded
            return PartRead(Read.SCANNED_WHOLE, f"Parquet of {n_rows:,} rows, at most Limits.whole_scan_rows")
        why = f"Parquet of {n_rows:,} rows, above Limits.whole_scan_rows"
    else:
        why = "a stored part of text outside the ranked layout" if run.stored_part else "text too large to hold"
    # Whether the rows repeat a document or list a query in two batches would take a pass of its own to know
    # (`may_repeat_documents`); the batches' one pass finds it, and then the part is read whole.
    whole_if = "its rows fail a check, may repeat a document or list a query in two batches"
    return PartRead(Read.SCANNED_BATCHES, why, whole_if=whole_if)


def without_duplicates(table: LoadedTable, policy: str, suspected: bool) -> tuple[pl.LazyFrame, list[str]]:
    """The table with one row per (query, document) under the declared policy, and what was resolved.
    `suspected` is `may_have_duplicates` of the table: when false, nothing needs looking at."""
    if not suspected:
        return table.scan, []
    duplicates = duplicate_pairs(table.scan).collect()
    what = input_kind(table.kind).input_contract.row
    if policy == "error":
        raise_on_duplicates(duplicates, table.source, what, table.unit)
        return table.scan, []
    if duplicates.height == 0:
        return table.scan, []
    conflicting = int(duplicates["conflicting"].sum())
    detail = f", {conflicting} with conflicting grades" if conflicting else ""
    warning = (
        f"{table.source}: {duplicates.height} duplicate (query, document) pairs{detail}, "
        f"resolved by keeping the {policy} {table.unit}"
    )
    return keep_one_per_pair(table.scan, policy), [warning]


def judgment_rows(
    judgments: LoadedTable, spec: EvaluationSpec, suspected: bool, scale: Sequence[int] | None = None
) -> tuple[pl.LazyFrame, list[str]]:
    """The rows a measure reads of a judgment set: its duplicates policy applied (`without_duplicates`), then one
    row per (query, document) with the grade the spec's assessor model gives it (`grade_set` too under `set` and
    `range`: transforms.assessors). Judgments that record several assessors' grades of one pair need a declared
    model: refused otherwise, naming the first such pair. `scale`: the grades `range` may fill in (the declared
    scale; else the grades present)."""
    rows, warnings = without_duplicates(judgments, spec.judgment_duplicates, suspected)
    model = spec.assessor_model or ""
    if model.startswith("single:"):
        # One assessor's grades where they judged: an assessor the judgments do not name would silently make the
        # others' consensus every grade.
        named = (rows.select(pl.col("assessor").drop_nulls().unique().sort()).collect()["assessor"].to_list()
                 if "assessor" in rows.collect_schema().names() else [])
        if model.removeprefix("single:") not in named:
            known = f"they name {', '.join(named)}" if named else "they name no assessor"
            raise InputError(judgments.source, f"assessor model {model} takes the grades of an assessor the "
                                               f"judgments do not name: {known}")
    if "assessor" not in rows.collect_schema().names():
        return rows, warnings
    if spec.assessor_model is None:
        several = pairs_graded_twice(rows).head(1).collect()
        if several.height:
            first = several.row(0, named=True)
            raise InputError(
                judgments.source,
                f"query '{first['query_id']}', document '{first['doc_id']}' has grades of {first['assessors']} "
                "assessors: declare how they become one grade with --assessor-model (single:NAME, median, min, max, "
                "set or range)",
                first["source_line"], judgments.unit,
            )
    if scale is None and spec.assessor_model == "range":
        scale = rows.select(pl.col("relevance").drop_nulls().unique().sort()).collect()["relevance"].to_list()
    return resolve_assessors(rows, spec.assessor_model, scale, adjudicators_of(judgments.metadata)), warnings


def adjudicators_of(metadata: object) -> tuple[str, ...]:
    """The assessors a judgment set's metadata declares of kind `adjudicator` (their grade settles a pair under
    every assessor model: transforms/assessors.py)."""
    kinds = metadata.assessor_kinds if isinstance(metadata, JudgmentSetMetadata) else {}
    return tuple(sorted(name for name, kind in kinds.items() if kind == "adjudicator"))


def check_inputs(
    run: LoadedTable, run_rows: pl.LazyFrame, judgments: LoadedTable, judgment_rows: pl.LazyFrame, spec: EvaluationSpec
) -> None:
    """What the spec needs of the inputs (rows after the duplicates policy): the rank column, grades the gain
    covers, the queries it requires."""
    if spec.ranking == "rank":
        unranked = run_rows.filter(pl.col("source_rank").is_null()).select(pl.col("source_line").min()).collect()
        if unranked.item() is not None:
            raise InputError(run.source, "ranking 'rank' needs a rank on every row", unranked.item(), run.unit)
    check_judgments(judgments, judgment_rows, spec)
    if spec.query_set == "judged_strict":
        judged = judgment_rows.filter(pl.col("relevance").is_not_null()).select("query_id").unique()
        missing = judged.join(run_rows.select("query_id").unique(), on="query_id", how="anti").sort("query_id").collect()
        if missing.height:
            shown = ", ".join(missing["query_id"].head(5).to_list())
            raise InputError(
                run.source, f"{missing.height} judged queries are missing from the run ({shown}); query set is strict"
            )


def check_judgments(judgments: LoadedTable, judgment_rows: pl.LazyFrame, spec: EvaluationSpec) -> None:
    """What the spec needs of the judgments alone (rows after the duplicates policy): grades the gain covers, gains
    within float64, no negative grade where the spec refuses them."""
    uncovered = grades_outside_gain_map(judgment_rows, spec).collect()
    if uncovered.height:
        grades = uncovered["relevance"].to_list()
        raise InputError(judgments.source, f"grade(s) {grades} occur but the gain map {spec.gain_label} omits them")
    _refuse_gains_beyond_float64(judgments, judgment_rows, spec)
    if spec.negative_grades == "error":
        negative = judgment_rows.filter(pl.col("relevance") < 0).sort("source_line").head(1).collect()
        if negative.height:
            row = negative.row(0, named=True)
            raise InputError(
                judgments.source,
                f"negative grade {row['relevance']} (query '{row['query_id']}'), not allowed under this spec",
                row["source_line"],
                judgments.unit,
            )


def _refuse_gains_beyond_float64(judgments: LoadedTable, judgment_rows: pl.LazyFrame, spec: EvaluationSpec) -> None:
    """InputError naming the first line whose grade's gain overflows float64 (else the highest grade of the first
    query whose gains add up beyond it): nDCG would be NaN or infinite."""
    found = gains_beyond_float64(judgment_rows, spec).sort(
        "gain_overflows", "source_line", descending=[True, False]).collect()
    if not found.height:
        return
    row = found.row(0, named=True)
    if not row["gain_overflows"]:
        query = found.filter(pl.col(QUERY) == row[QUERY])
        row = query.sort("relevance", "source_line", descending=[True, False]).row(0, named=True)
    why = ("its gain is beyond float64" if row["gain_overflows"]
           else f"the gains of query '{row[QUERY]}' add up beyond float64")
    hint = (" (exponential gain takes grades up to 1023; use --gain linear or a --gain-map)"
            if spec.gain == "exponential" else "")
    raise InputError(
        judgments.source,
        f"grade {row['relevance']}: under gain {spec.gain_label}, {why}, so nDCG would not be finite{hint}",
        row["source_line"],
        judgments.unit,
    )


def declared_scale(metadata: object) -> tuple[int, ...] | None:
    """A judgment set's declared grade scale, None where it declares none."""
    if isinstance(metadata, JudgmentSetMetadata) and metadata.grade_scale:
        return tuple(grade for grade, _ in metadata.grade_scale)
    return None


def grade_scale(judgments: Table) -> tuple[int, ...]:
    """The grades an unjudged document may take in the intervals: the judgment set's declared scale, else the
    grades present in its judgments."""
    declared = declared_scale(judgments.metadata)
    if declared is not None:
        return declared
    present = judgments.load().scan.select(pl.col("relevance").drop_nulls().unique().sort()).collect()
    return tuple(present["relevance"].to_list())


def evaluate_part(plan: Plan, part: Part, engine: EngineType = "auto") -> tuple[pl.DataFrame, list[str]]:
    """Per-query rows of one part of a plan, with the warnings of the duplicate policies. `engine` is Polars'
    (in-memory or streaming): the values are the same."""
    per_query, warnings, _ = evaluate_read(plan, part, engine)
    return per_query, warnings


def evaluate_read(plan: Plan, part: Part, engine: EngineType = "auto") -> tuple[pl.DataFrame, list[str], PartRead]:
    """`evaluate_part`, and the read it took: the plan's, or SCANNED_WHOLE when the batches' pass found what its
    `PartRead.whole_if` names."""
    read = plan.read(part)
    run, judgments = plan.inputs(part)
    spec, limits = plan.spec, plan.limits
    positions = head_positions(spec)
    if read.read is Read.STORED_HEAD and run.stored_order is not None and positions is not None:
        run = replace(run, scan=head_rows(run.stored_order, positions), in_memory=True)
    candidates_engine = engine  # for the candidates and the per-query rows computed from them
    if engine == "auto":  # the in-memory engine is faster on rows that are (or fit) in memory
        engine = "in-memory" if run.in_memory and judgments.in_memory else "streaming"
        k = first_rows_needed(spec)
        candidates_engine = "streaming" if k is not None and k <= limits.streamed_candidates_max_k else engine
    judgments_suspected = may_repeat_documents(judgments, limits.streamed_candidate_part_rows)
    judged_rows, warnings = judgment_rows(judgments, spec, judgments_suspected, plan.interval_grades)
    if read.read is Read.SCANNED_BATCHES:
        batched = scanned_per_query(plan, run, judgments, judged_rows, candidates_engine)
        if isinstance(batched, pl.DataFrame):
            return batched, warnings, read
        read = PartRead(Read.SCANNED_WHOLE, batched.why)
    candidates, run_warnings = checked_candidates(run, judgments, judged_rows, spec, candidates_engine, read.bounds)
    per_query = per_query_measures(candidates.lazy(), judged_rows, spec, plan.interval_grades, plan.intervals)
    per_query = per_query.collect(engine=candidates_engine)
    return per_query, warnings + run_warnings, read


def checked_candidates(
    run: LoadedTable,
    judgments: LoadedTable,
    judgment_rows: pl.LazyFrame,
    spec: EvaluationSpec,
    engine: EngineType,
    bounds: tuple[tuple[int, int], ...] = (),
) -> tuple[pl.DataFrame, list[str]]:
    """The run's candidate rows (`transforms.ranking.candidate_rows`) after its duplicates policy, with the inputs
    checked against the spec, and the policy's warnings."""
    # The candidates' group-by also tells whether the run may repeat a document: no separate pass over the run.
    candidates = collect_candidates(run.scan, spec, engine, bounds)
    run_suspected = not run.duplicate_free and bool(candidates["docs_may_repeat"].any())
    run_rows, run_warnings = without_duplicates(run, spec.run_duplicates, run_suspected)
    if run_warnings:  # rows were dropped: the candidates come from what is left
        candidates = collect_candidates(run_rows, spec, engine)
    check_inputs(run, run_rows, judgments, judgment_rows, spec)
    return candidates, run_warnings


def whole_judgment_rows(judgments: Table, spec: EvaluationSpec) -> pl.LazyFrame:
    """The whole judgment set's rows after its duplicates policy."""
    return judgment_rows_of_part(judgments.load(), spec)


def ranked_rows(run: Table, judgments: Table, spec: EvaluationSpec) -> pl.LazyFrame:
    """The run's ranked-and-judged candidate rows (`transforms.judging.ranked_and_judged`: each query's first rows
    the spec reads, with `n_retrieved`), every part of its plan read whole, held in memory: what the paired
    difference intervals of a comparison read (transforms/paired_intervals.py)."""
    return ranked_and_judged(run_candidates(run, judgments, spec).lazy(), whole_judgment_rows(judgments, spec), spec)


def run_candidates(run: Table, judgments: Table, spec: EvaluationSpec) -> pl.DataFrame:
    """The run's candidate rows (`transforms.ranking.candidate_rows`) of every part of its plan, checked against the
    spec as an evaluation checks them, held in memory: one ranking, to which each world of grades attaches its own
    judgments (`ranked_and_judged`)."""
    planned = plan(run, judgments, spec)
    frames = []
    for part in planned.parts:
        part_run, part_judgments = planned.inputs(part)
        rows = judgment_rows_of_part(part_judgments, spec)
        candidates, _ = checked_candidates(part_run, part_judgments, rows, spec, "streaming")
        frames.append(candidates)
    return pl.concat(frames)


def judgment_rows_of_part(judgments: LoadedTable, spec: EvaluationSpec) -> pl.LazyFrame:
    suspected = may_repeat_documents(judgments, DEFAULT_LIMITS.streamed_candidate_part_rows)
    rows, _ = judgment_rows(judgments, spec, suspected, declared_scale(judgments.metadata))
    return rows


def candidate_bounds(
    rows: pl.LazyFrame, n_rows: int, part_rows: int, stretches: pl.DataFrame | None = None
) -> tuple[tuple[int, int], ...] | None:
    """For rows held in memory (where a slice costs nothing): slices of about `part_rows` rows, whole stretches
    each, whose candidates are found one at a time, when there are more rows than that and the rows list each
    query in one stretch; otherwise None, and the candidates of all of them are found at once (which puts a
    query's stretches together). `stretches`: the rows' `stretches_of` when the reader found them already."""
    if n_rows <= part_rows:
        return None
    if stretches is None:
        stretches = stretches_of(rows.select(QUERY).collect().to_series())
    if stretches["query_id"].n_unique() < stretches.height:
        return None  # a query in several stretches
    starts = stretches["start"]
    wanted = pl.Series(range(part_rows, n_rows, part_rows), dtype=starts.dtype)
    found = starts.search_sorted(wanted)  # the first stretch starting at or after each wanted offset
    cuts = starts.gather(found.filter(found < starts.len())).unique(maintain_order=True).to_list()
    return tuple(itertools.pairwise([0, *cuts, n_rows]))


def collect_candidates(
    rows: pl.LazyFrame,
    spec: EvaluationSpec,
    engine: Literal["in-memory", "streaming"],
    bounds: tuple[tuple[int, int], ...] = (),
) -> pl.DataFrame:
    """The run's `candidate_rows`, collected: all at once, or a slice of `bounds` (`candidate_bounds`) at a
    time."""
    if not bounds:
        return candidate_rows(rows, spec).collect(engine=engine)
    return pl.concat(
        [candidate_rows(rows.slice(start, end - start), spec).collect(engine=engine) for start, end in bounds]
    )


@dataclass(frozen=True)
class ReadWhole:
    """What the batches' pass found that makes the part read whole (`PartRead.whole_if`)."""

    why: str


def scanned_per_query(
    plan: Plan,
    run: LoadedTable,
    judgments: LoadedTable,
    judgment_rows: pl.LazyFrame,
    engine: Literal["in-memory", "streaming"],
) -> pl.DataFrame | ReadWhole:
    """The per-query rows of a scanned run (`evaluate_part`'s), read once in batches (`scanned_candidate_parts`):
    the candidates of whole queries are put together until about `limits.scanned_candidate_rows` of them are
    held, then turned into their queries' rows with those queries' judgments (queries are independent, as in a
    plan's parts); the judged queries the run lacks come last. Memory holds a batch, two groups' candidates and
    the per-query rows. `ReadWhole` (the plan's `whole_if`: then the part is read whole) when the inputs fail a
    check of `check_inputs` (the whole run's order of errors then decides which is named), when the run may
    repeat a document (the duplicates policy is applied to the whole run), or when a query id occurs in more than
    one batch: what this one pass finds, which `plan` could only know from a pass of its own."""
    spec, limits = plan.spec, plan.limits
    try:
        check_inputs(run, run.scan, judgments, judgment_rows, spec)
    except InputError:
        return ReadWhole("its rows fail a check: the whole run's order of checks names the problem")
    per_query: list[pl.DataFrame] = []
    seen: list[pl.Series] = []

    def evaluate_group(group: list[pl.DataFrame]) -> None:
        candidates = pl.concat(group)
        queries = candidates.select(pl.col("query_id").unique())
        group_judgments = judgment_rows.join(queries.lazy(), on="query_id", how="semi")
        rows = per_query_measures(candidates.lazy(), group_judgments, spec, plan.interval_grades, plan.intervals)
        per_query.append(rows.collect(engine=engine))

    # A group is evaluated once the next one is full, and the last (partial) one joins the group before it: every
    # group holds at least `scanned_candidate_rows` candidates (or is the whole run). Polars computes a per-query
    # aggregate divided by a constant (P@k, Judged@k) an ulp apart in a frame of a few queries and in a large one
    # (seen on polars 2.1): large groups give the whole run's values.
    ready: list[pl.DataFrame] = []
    group: list[pl.DataFrame] = []
    for part in scanned_candidate_parts(run.scan, spec, limits.streamed_candidate_part_rows):
        if part["docs_may_repeat"].any():
            return ReadWhole("a batch may repeat a document: the duplicates policy takes the whole run")
        seen.append(part["query_id"].unique())
        group.append(part)
        if sum(frame.height for frame in group) >= limits.scanned_candidate_rows:
            if ready:
                evaluate_group(ready)
            ready, group = group, []
    if ready or group:
        evaluate_group(ready + group)
    run_queries = pl.concat(seen) if seen else pl.Series("query_id", [], pl.String)
    if run_queries.n_unique() < run_queries.len():
        return ReadWhole("a query is listed in two batches: its candidates need the whole run")
    missing = judgment_rows.join(run_queries.to_frame().lazy(), on="query_id", how="anti")
    no_candidates = candidate_rows(run.scan.clear(), spec)
    absent = per_query_measures(no_candidates, missing, spec, plan.interval_grades, plan.intervals)
    per_query.append(absent.collect(engine=engine))
    return pl.concat(per_query).sort("query_id", maintain_order=True)


def scanned_candidate_parts(rows: pl.LazyFrame, spec: EvaluationSpec, part_rows: int) -> Iterator[pl.DataFrame]:
    """The `candidate_rows` of a scan read once in batches of whole stretches (`whole_stretch_batches`), a part
    at a time: a query listed in one stretch has all its rows in one part. A batch is held in memory, where Polars'
    in-memory engine finds its candidates faster than the streaming one."""
    for batch in whole_stretch_batches(rows, part_rows):
        yield candidate_rows(batch.lazy(), spec).collect(engine="in-memory")


def may_repeat_documents(table: LoadedTable, part_rows: int) -> bool:
    """`may_have_duplicates` of a table. A scanned table is looked at a batch of whole stretches at a time, so
    memory holds one batch, not a distinct count over every row; a query listed in several stretches was never
    seen whole, and then the table is looked at whole. Rows in memory are grouped by Polars' in-memory engine,
    faster on them than the streaming one."""
    if table.in_memory:
        return bool(may_have_duplicates(table.scan).collect(engine="in-memory").item())
    stretch_queries: list[pl.Series] = []
    for batch in whole_stretch_batches(table.scan, part_rows):
        if stretches_may_have_duplicates(batch.lazy()).collect(engine="in-memory").item():
            return True
        stretch_queries.append(batch[QUERY].rle().struct.field("value"))
    queries = pl.concat(stretch_queries) if stretch_queries else pl.Series(QUERY, [], pl.String)
    if queries.n_unique() < queries.len():
        return bool(may_have_duplicates(table.scan).collect(engine="streaming").item())
    return False


def assemble(
    plan: Plan, parts: list[pl.DataFrame], warnings: list[str], reads: list[str] | None = None
) -> EvaluationResult:
    """One result from the per-query rows of every part of the plan (and their warnings): the summary is computed
    over all of them. `reads`: how the parts were read, when known (`evaluate`), else as the plan has them."""
    spec = plan.spec
    # Each part is sorted by query, then measure, then cutoff (transforms.measures.per_query_measures).
    per_query = pl.concat(parts).sort("query_id", maintain_order=True)
    summary = summarize(per_query.lazy(), spec).collect()
    return EvaluationResult(
        run_name=plan.run_name,
        identify=plan.identify,
        spec=spec,
        per_query=per_query,
        summary=summary,
        warnings=tuple(warnings + coverage_warnings(summary, spec)),
        reads=tuple(plan.describe() if reads is None else reads),
        grades=(grade_scale(plan.judgments) if not plan.intervals and plan.names_depend_on_grades
                else plan.interval_grades),
    )


def names_depend_on_grades(spec: EvaluationSpec) -> bool:
    """Whether a measure's trec_eval name depends on the judgments' grades (RBP's: `MeasureBase.trec_eval_name`)."""
    return any(m.trec_eval_name(True) != m.trec_eval_name(False) for m in spec.measure_list())


def result_identity(run: Table, judgments: Table, spec: EvaluationSpec) -> Callable[[], str]:
    """The evaluation id, made on the first call and kept. It holds what identifies the inputs (their hashes and
    metadata), never their rows: a result kept after its evaluation does not keep its run in memory."""
    run_id, judgments_id, spec_hash = run.deferred_id(), judgments.deferred_id(), spec.spec_hash
    made: list[str] = []

    def identify() -> str:
        if not made:
            made.append(evaluation_id(run_id(), judgments_id(), spec_hash, implementation_version()))
        return made[0]

    return identify


def evaluate(
    run: Table,
    judgments: Table,
    spec: EvaluationSpec,
    engine: EngineType = "auto",
    limits: Limits = DEFAULT_LIMITS,
    intervals: bool = True,
) -> EvaluationResult:
    """Evaluate a run against judgments under the spec, in this process, part after part of its plan (a stored
    run in bounded memory); `intervals` as for `Plan`."""
    planned = plan(run, judgments, spec, limits, intervals)
    parts, warnings, reads = [], [], []
    for part in planned.parts:
        per_query, part_warnings, read = evaluate_read(planned, part, engine)
        parts.append(per_query)
        warnings += part_warnings
        reads.append(part_read_line(part, read, planned.read(part)))
    return assemble(planned, parts, warnings, reads)


def coverage_warnings(summary: pl.DataFrame, spec: EvaluationSpec) -> list[str]:
    """What a reader of the summary must not miss: left-out queries and unjudged documents in the scored lists."""
    if summary.height == 0:
        return ["no query in the run or the judgments"]
    first = summary.row(0, named=True)
    warnings = []
    if first["n_missing"]:
        fate = "scored 0" if spec.query_set == "judged" else "left out"
        warnings.append(f"{first['n_missing']} judged queries are missing from the run ({fate})")
    if first["n_no_judgments"]:
        warnings.append(f"{first['n_no_judgments']} queries of the run have no judgments (never scored)")
    undefined = summary.filter(pl.col("n_undefined") > 0)
    if undefined.height:
        # The measures that divide by the relevant documents share their undefined queries.
        names = ", ".join(dict.fromkeys("NDCG" if m == "nDCG" else m for m in undefined["measure"]))
        count = undefined["n_undefined"].max()
        warnings.append(f"{count} judged queries have no relevant judgment: {names} undefined, left out")
    weightless = summary.filter(pl.col("n_scored") > 0, pl.col("value").is_null())
    if weightless.height:
        names = ", ".join(m + ("" if k is None else f"@{k}")
                          for m, k in weightless.select("measure", "cutoff").iter_rows())
        warnings.append(f"the declared query weights of the scored queries sum to 0, so the weighted mean is "
                        f"undefined (null): {names}")
    # The unjudged share of the first k is the same for every measure cut at k.
    by_cutoff = {row["cutoff"]: row["mean_unjudged_fraction"] for row in summary.iter_rows(named=True)}
    shares = [
        f"{'all' if cutoff is None else '@' + str(cutoff)} {fraction:.1%}"
        for cutoff, fraction in by_cutoff.items()
        if fraction
    ]
    if shares:
        mapped = "counted as gain 0" if spec.unjudged == "zero" else "removed (condensed lists)"
        warnings.append(f"unjudged share of the scored queries' retrieved documents, {mapped}: {', '.join(shares)}")
    return warnings


def check_before_storing(
    run: LoadedTable, judgments: LoadedTable, spec: EvaluationSpec, limits: Limits = DEFAULT_LIMITS
) -> bool:
    """Every check of `evaluate_part` that can refuse these inputs under the spec (duplicates under an `error`
    policy, then `check_inputs`), without evaluating: a flow runs it before it stores anything of them. Returns
    whether the run is known to hold no (query, document) pair twice (proven before, or by this check's look), which
    the store then need not count again (`readers.proven_duplicate_free`)."""
    # The pairs are looked at only where a query may repeat a document: a run of tens of millions of rows is
    # never grouped by pair in memory to find none.
    def suspected(table: LoadedTable) -> bool:
        return may_repeat_documents(table, limits.streamed_candidate_part_rows)

    judged_rows, _ = judgment_rows(judgments, spec, suspected(judgments), declared_scale(judgments.metadata))
    run_suspected = not run.duplicate_free and suspected(run)
    run_rows, _ = without_duplicates(run, spec.run_duplicates, run_suspected)
    check_inputs(run, run_rows, judgments, judged_rows, spec)
    return not run_suspected


def check_judgments_before_storing(
    judgments: LoadedTable, spec: EvaluationSpec, limits: Limits = DEFAULT_LIMITS
) -> None:
    """The checks of `check_before_storing` that concern the judgments alone (duplicates under an `error` policy,
    `check_judgments`): the nightly job runs them once, before it takes any run from its inbox, so that judgments
    the spec cannot use fail the night instead of each run."""
    suspected = may_repeat_documents(judgments, limits.streamed_candidate_part_rows)
    judged_rows, _ = judgment_rows(judgments, spec, suspected, declared_scale(judgments.metadata))
    check_judgments(judgments, judged_rows, spec)
