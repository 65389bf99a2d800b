"""The direct evaluation path: loaded tables in, per-query table and summary out, with every check the spec asks for.

Belongs here: the orchestration-free sequence (resolve duplicates, check the inputs against the spec, compute,
collect) that both the CLI and the Prefect tasks call. The computation itself lives in `transforms/`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Literal

import polars as pl

from judged.flows.io import LoadedTable, StoredTable
from judged.flows.versions import implementation_version
from judged.schemas.provenance import RunMetadata, evaluation_id
from judged.schemas.spec import EvaluationSpec
from judged.transforms.duplicates import duplicate_pairs, keep_one_per_pair, may_have_duplicates, raise_on_duplicates
from judged.transforms.errors import InputError
from judged.transforms.ndcg import (
    candidate_rows, first_rows_needed, grades_outside_gain_map, ndcg_of_candidates, stretch_starts, summarize,
)
from judged.transforms.layout import head_positions, head_rows
from judged.transforms.shards import shard_count, with_bucket


EngineType = Literal["auto", "in-memory", "streaming"]
# Rows of stored-run heads evaluated together (a few hundred MiB): the heads of a top-10 read of 500k queries
# alone would take two parts (its 24M judgments take 16, below).
HEAD_ROWS_PER_PART = 4_000_000
# Judgments evaluated with one part: joined and ranked for the ideal, a part's judgments take several times their
# size, so 24M judgments (a 500k-query set) are split into 16 parts.
JUDGMENT_ROWS_PER_PART = 2_000_000
# Up to this many first rows per query, Polars' streaming engine finds the candidates of a run held in memory faster
# than its in-memory engine (M, top 10: 0.17 s vs 0.22 s), and computes the per-query rows from them as fast in
# less memory (M, top 10: peak 541 -> 509 MiB); for deeper heads or whole lists it is slower (top 1000: 3.69 s vs
# 3.50 s for the whole command, and 3.94-4.04 s vs 3.77-3.79 s for the per-query step).
STREAMED_CANDIDATES_MAX_K = 100
# The candidates of a run held in memory are found a part of about this many rows at a time, each part whole
# stretches of one query id: beside the rows, only one part's working state is held (M, top 10: 629 -> 502 MiB
# peak for this step, as fast).
CANDIDATE_PART_ROWS = 1_000_000


@dataclass(frozen=True)
class EvaluationResult:
    run_name: str
    identify: Callable[[], str] = field(compare=False, repr=False)  # gives `evaluation_id`
    spec: EvaluationSpec
    per_query: pl.DataFrame
    summary: pl.DataFrame
    warnings: tuple[str, ...]

    @cached_property
    def evaluation_id(self) -> str:
        """The content-derived id, made on first use: it waits for the inputs' hashes, which a result printed
        without its identity (trec_eval-style lines) never needs."""
        return self.identify()


def without_duplicates(table: LoadedTable, policy: str, suspected: bool) -> tuple[pl.LazyFrame, list[str]]:
    """The table with one row per (query, document) under the declared policy, and what was resolved.
    `suspected` is `may_have_duplicates` of the table: when false, nothing needs looking at."""
    if not suspected:
        return table.scan, []
    duplicates = duplicate_pairs(table.scan).collect()
    what = "judgment" if table.kind == "judgments" else "run row"
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


def check_inputs(
    run: LoadedTable, run_rows: pl.LazyFrame, judgments: LoadedTable, judgment_rows: pl.LazyFrame, spec: EvaluationSpec
) -> None:
    """What the spec needs of the inputs (rows after the duplicates policy): the rank column, grades the gain
    covers, the queries it requires."""
    if spec.ranking == "rank":
        unranked = run_rows.filter(pl.col("source_rank").is_null()).select(pl.col("source_line").min()).collect()
        if unranked.item() is not None:
            raise InputError(run.source, "ranking 'rank' needs a rank on every row", unranked.item(), run.unit)
    uncovered = grades_outside_gain_map(judgment_rows, spec).collect()
    if uncovered.height:
        grades = uncovered["relevance"].to_list()
        raise InputError(judgments.source, f"grade(s) {grades} occur but the gain map {spec.gain_label} omits them")
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
    if spec.query_set == "judged_strict":
        judged = judgment_rows.filter(pl.col("relevance").is_not_null()).select("query_id").unique()
        missing = judged.join(run_rows.select("query_id").unique(), on="query_id", how="anti").sort("query_id").collect()
        if missing.height:
            shown = ", ".join(missing["query_id"].head(5).to_list())
            raise InputError(
                run.source, f"{missing.height} judged queries are missing from the run ({shown}); query set is strict"
            )


def run_name(run: LoadedTable) -> str:
    """The run's declared tag (by default the tag every row carries), else its system, else the file's name."""
    metadata = run.metadata if isinstance(run.metadata, RunMetadata) else RunMetadata()
    return metadata.display_name(Path(run.source).name)


def evaluate_part(
    run: LoadedTable, judgments: LoadedTable, spec: EvaluationSpec, engine: EngineType = "auto"
) -> tuple[pl.DataFrame, list[str]]:
    """Per-query rows for a run and its judgments, whole or one shard of each (the same queries), with the
    warnings of the duplicate policies. `engine` is Polars' (in-memory or streaming): the values are the same."""
    positions = head_positions(spec)
    if run.stored_order is not None and positions is not None:
        run = replace(run, scan=head_rows(run.stored_order, positions), in_memory=True)
    candidates_engine = engine  # for the candidates and the per-query rows computed from them
    if engine == "auto":  # the in-memory engine is faster on rows that are (or fit) in memory
        engine = "in-memory" if run.in_memory and judgments.in_memory else "streaming"
        k = first_rows_needed(spec)
        candidates_engine = "streaming" if k is not None and k <= STREAMED_CANDIDATES_MAX_K else engine
    judgments_suspected = may_have_duplicates(judgments.scan).collect(engine=engine).item()
    judgment_rows, warnings = without_duplicates(judgments, spec.judgment_duplicates, judgments_suspected)
    # The candidates' group-by also tells whether the run may repeat a document: no separate pass over the run.
    # In parts for parsed text, whose rows are held (a stored head is a scan, which each slice would read again).
    in_parts = run.in_memory and run.stored_order is None
    candidates = collect_candidates(run.scan, spec, candidates_engine, in_parts=in_parts)
    run_suspected = not run.duplicate_free and bool(candidates["docs_may_repeat"].any())
    run_rows, run_warnings = without_duplicates(run, spec.run_duplicates, run_suspected)
    if run_warnings:  # rows were dropped: the candidates come from what is left
        candidates = collect_candidates(run_rows, spec, candidates_engine, in_parts=False)
    check_inputs(run, run_rows, judgments, judgment_rows, spec)
    per_query = ndcg_of_candidates(candidates.lazy(), judgment_rows, spec).collect(engine=candidates_engine)
    return per_query, warnings + run_warnings


def collect_candidates(
    rows: pl.LazyFrame, spec: EvaluationSpec, engine: Literal["in-memory", "streaming"], in_parts: bool
) -> pl.DataFrame:
    """The run's `candidate_rows`, collected; `in_parts` (for rows held in memory, where a slice costs nothing):
    a part of about `CANDIDATE_PART_ROWS` whole stretches at a time, when the run lists each query in one stretch
    (otherwise the whole run at once, which puts a query's stretches together)."""
    if not in_parts or (n_rows := rows.select(pl.len()).collect().item()) <= CANDIDATE_PART_ROWS:
        return candidate_rows(rows, spec).collect(engine=engine)
    stretches = stretch_starts(rows).collect()
    if stretches["query_id"].n_unique() < stretches.height:
        return candidate_rows(rows, spec).collect(engine=engine)  # a query in several stretches
    starts = stretches["start"]
    wanted = pl.Series(range(CANDIDATE_PART_ROWS, n_rows, CANDIDATE_PART_ROWS), dtype=starts.dtype)
    found = starts.search_sorted(wanted)  # the first stretch starting at or after each wanted offset
    cuts = starts.gather(found.filter(found < starts.len())).unique(maintain_order=True).to_list()
    bounds = itertools.pairwise([0, *cuts, n_rows])
    return pl.concat(
        [candidate_rows(rows.slice(start, end - start), spec).collect(engine=engine) for start, end in bounds]
    )


def assemble(
    parts: list[pl.DataFrame], warnings: list[str], spec: EvaluationSpec, name: str, identify: Callable[[], str]
) -> EvaluationResult:
    """One result from the per-query rows of every shard: the summary is computed over all of them. `identify`
    gives its evaluation id when first asked for."""
    per_query = pl.concat(parts).sort("query_id", "cutoff", nulls_last=True, maintain_order=True)
    summary = summarize(per_query.lazy(), spec).collect()
    return EvaluationResult(
        run_name=name,
        identify=identify,
        spec=spec,
        per_query=per_query,
        summary=summary,
        warnings=tuple(warnings + coverage_warnings(summary, spec)),
    )


def result_identity(
    run: LoadedTable | StoredTable, judgments: LoadedTable, spec: EvaluationSpec
) -> Callable[[], str]:
    """The evaluation id, made when called. It holds what identifies the inputs (their hashes and metadata), never
    their rows: a result kept after its evaluation does not keep its run in memory."""
    run_id, judgments_id, spec_hash = run.deferred_id(), judgments.deferred_id(), spec.spec_hash
    return lambda: evaluation_id(run_id(), judgments_id(), spec_hash, implementation_version())


def evaluate_sharded(
    run: StoredTable, judgments: LoadedTable, spec: EvaluationSpec, engine: EngineType = "auto"
) -> EvaluationResult:
    """Evaluate a stored (sharded) run part by part, each with the judgments of its queries: memory holds one part
    at a time, and the result equals the in-memory evaluation of the whole run. A part is one stored shard, or,
    when the spec reads only each query's head of a run in stored order, as many shards as keep a part's head
    rows under `HEAD_ROWS_PER_PART` and its judgments under `JUDGMENT_ROWS_PER_PART`."""
    all_judgments = judgments.frame
    positions = head_positions(spec)
    of = run.shards
    if positions is not None and run.ranked():
        head_rows_read = int(run.record["n_queries"]) * positions
        parts_needed = max(
            shard_count(head_rows_read, HEAD_ROWS_PER_PART), shard_count(all_judgments.height, JUDGMENT_ROWS_PER_PART)
        )
        of = min(of, parts_needed)
    # Each row's part, computed once (4 bytes a row); a part's judgments are then a filter, not a join of all.
    part_of_row = (
        with_bucket(all_judgments.lazy().select("query_id")).select(pl.col("bucket") % of).collect().to_series()
    )
    parts, warnings = [], []
    for shard in range(of):
        in_this_part = all_judgments.filter(part_of_row == shard)
        part_judgments = replace(judgments, scan=in_this_part.lazy(), in_memory=True)
        per_query, part_warnings = evaluate_part(run.load(shard, of), part_judgments, spec, engine)
        parts.append(per_query)
        warnings += part_warnings
    return assemble(parts, warnings, spec, run.name, result_identity(run, judgments, spec))


def evaluate(
    run: LoadedTable, judgments: LoadedTable, spec: EvaluationSpec, engine: EngineType = "auto"
) -> EvaluationResult:
    """Evaluate one loaded run against loaded judgments under the spec, in one process."""
    per_query, warnings = evaluate_part(run, judgments, spec, engine)
    return assemble([per_query], warnings, spec, run_name(run), result_identity(run, judgments, spec))


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
    if first["n_undefined"]:
        warnings.append(f"{first['n_undefined']} judged queries have no relevant judgment: NDCG undefined, left out")
    shares = [
        f"{'all' if row['cutoff'] is None else '@' + str(row['cutoff'])} {row['mean_unjudged_fraction']:.1%}"
        for row in summary.iter_rows(named=True)
        if row["mean_unjudged_fraction"]
    ]
    if shares:
        mapped = "counted as gain 0" if spec.unjudged == "zero" else "removed (condensed lists)"
        warnings.append(f"unjudged share of the scored queries' retrieved documents, {mapped}: {', '.join(shares)}")
    return warnings
