"""Table contracts: the column names and Polars/Arrow schemas of every table judged reads or writes.

Belongs here: one declaration per table (judgments, run rows, per-query results, summaries) from which both the
storage schema and the validation of incoming frames are derived. No computation, no I/O.
"""

from __future__ import annotations

import polars as pl

STATUSES: tuple[str, ...] = ("scored", "missing_from_run", "no_relevant_judgments", "no_judgments")
"""Per-query status. `scored`: judged and retrieved with IDCG > 0. `missing_from_run`: judged, absent from the run.
`no_relevant_judgments`: judged, but nothing to find (nDCG: IDCG = 0; the binary measures: no grade >= rel). `no_judgments`: in the run only."""

JUDGMENTS: dict[str, pl.DataType] = {
    "query_id": pl.String(),
    "iteration": pl.String(),  # the qrels' second column, kept for audit, never used
    "doc_id": pl.String(),
    "relevance": pl.Int32(),  # the judged grade; null = unresolved (kept, treated as unjudged)
    "source_line": pl.Int64(),  # line in the text file, or row in the Parquet file (1-based)
}

RUN: dict[str, pl.DataType] = {
    "query_id": pl.String(),
    "doc_id": pl.String(),
    "source_rank": pl.Int64(),  # the rank column as written in the file: audit only unless ranking='rank'
    "score": pl.Float64(),
    "run_tag": pl.String(),
    "source_line": pl.Int64(),
}

PARQUET_JUDGMENTS_REQUIRED = ("query_id", "doc_id", "relevance")
PARQUET_RUN_REQUIRED = ("query_id", "doc_id", "score")

PER_QUERY: dict[str, pl.DataType] = {
    "query_id": pl.String(),
    "measure": pl.String(),  # the measure and its non-default parameters, without the cutoff: nDCG, AP(rel=2), RBP(p=0.8)
    "cutoff": pl.Int32(),  # null = the whole returned list
    "status": pl.Enum(list(STATUSES)),
    "value": pl.Float64(),  # null where undefined
    "dcg": pl.Float64(),  # nDCG only (null for other measures)
    "idcg": pl.Float64(),  # nDCG only
    "residual": pl.Float64(),  # RBP only: the weight of unjudged positions and the tail; [value, value + residual]
    "n_retrieved": pl.Int64(),  # rows of the run for the query, after the depth cut
    "n_relevant_at_k": pl.Int64(),  # within the first k of the submitted ranking: judged relevant (nDCG: gain > 0;
    # the binary measures: grade >= rel)
    "n_nonrelevant_at_k": pl.Int64(),  # judged, not relevant
    "n_unjudged_at_k": pl.Int64(),  # no judgment or an unresolved one
    "unjudged_fraction_at_k": pl.Float64(),  # n_unjudged_at_k / min(k, n_retrieved); null when nothing retrieved
    "ties_straddling_k": pl.Int64(),  # tie groups (equal score) with members on both sides of k
}

SUMMARY: dict[str, pl.DataType] = {
    "measure": pl.String(),
    "cutoff": pl.Int32(),
    "value": pl.Float64(),  # the aggregate over scored queries; null when none was scored
    "aggregation": pl.String(),
    "n_queries": pl.Int64(),  # every query of the union of run and judgments
    "n_scored": pl.Int64(),  # queries in the aggregate
    "n_missing": pl.Int64(),  # judged queries missing from the run
    "n_undefined": pl.Int64(),  # judged queries whose value is null (IDCG = 0 under no_relevant='null')
    "n_no_judgments": pl.Int64(),  # run queries without judgments: never scored, counted here
    "n_unjudged_only": pl.Int64(),  # scored queries whose first k documents are all unjudged
    "mean_unjudged_fraction": pl.Float64(),  # over the scored queries
}


# -- the warehouse: what is stored, one contract per table --------------------------------------------------------

# What every stored judgment set or run records about its input, after its own descriptive columns.
_STORED_INPUT: dict[str, pl.DataType] = {
    "metadata_json": pl.String(),
    "content_sha256": pl.String(),  # of the decompressed content
    "source_sha256": pl.String(),  # of the file as it was read
    "source": pl.String(),
    "source_format": pl.String(),
    "n_rows": pl.Int64(),
    "n_queries": pl.Int64(),
    "n_shards": pl.Int32(),  # part files, split by query bucket (see transforms/shards.py)
    "ingested_at": pl.Datetime("us", "UTC"),
    "implementation_version": pl.String(),
}

JUDGMENT_SETS: dict[str, pl.DataType] = {
    "judgment_set_id": pl.String(),
    "name": pl.String(),
    "version": pl.String(),
    "task": pl.String(),
    "assessors": pl.String(),
    "pooling": pl.String(),
    "grade_scale": pl.List(pl.Struct({"grade": pl.Int32(), "meaning": pl.String()})),
    "unresolved_token": pl.String(),
    "n_unresolved": pl.Int64(),
    **_STORED_INPUT,
}

RUNS: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "system": pl.String(),
    "configuration": pl.String(),
    "tag": pl.String(),
    **_STORED_INPUT,
    # (query, document) pairs present more than once, counted at ingest (null in the copy of the record that the
    # parts' metadata carries, written before the count; each part has its own in `judged.duplicate_pairs`)
    "n_duplicate_pairs": pl.Int64(),
}

STORED_JUDGMENTS: dict[str, pl.DataType] = {"judgment_set_id": pl.String(), **JUDGMENTS, "bucket": pl.Int32()}
# A stored run keeps each query's rows in trec_eval's order (transforms/layout.py): `position` in that order and
# `query_rows`, the query's rows in the whole run, let a top-k read stop at the first row groups.
RUN_ROWS: dict[str, pl.DataType] = {
    "run_id": pl.String(), **RUN, "bucket": pl.Int32(), "position": pl.Int32(), "query_rows": pl.Int32()
}

EVALUATIONS: dict[str, pl.DataType] = {
    "evaluation_id": pl.String(),
    "run_id": pl.String(),
    "judgment_set_id": pl.String(),
    "run_name": pl.String(),
    "spec_hash": pl.String(),
    "spec_json": pl.String(),
    "label": pl.String(),
    "implementation_version": pl.String(),
    "implementation_commit": pl.String(),
    "flow_run_id": pl.String(),
    "started_at": pl.Datetime("us", "UTC"),
    "finished_at": pl.Datetime("us", "UTC"),
    "warnings": pl.List(pl.String()),
    "provenance_json": pl.String(),
}

_RESULT_KEYS: dict[str, pl.DataType] = {
    "evaluation_id": pl.String(),
    "run_id": pl.String(),
    "judgment_set_id": pl.String(),
    "spec_hash": pl.String(),
    "label": pl.String(),  # our label of this measure and cutoff, e.g. nDCG@10[trec_eval:gain=linear]
    "trec_eval_measure": pl.String(),  # ndcg_cut_10, only when trec_eval prints exactly this number
}
STORED_PER_QUERY: dict[str, pl.DataType] = {**_RESULT_KEYS, **PER_QUERY}
STORED_SUMMARY: dict[str, pl.DataType] = {**_RESULT_KEYS, **SUMMARY}

NIGHTLY: dict[str, pl.DataType] = {
    "flow_run_id": pl.String(),
    "started_at": pl.Datetime("us", "UTC"),
    "file": pl.String(),
    "outcome": pl.String(),  # evaluated, duplicate, rejected
    "run_id": pl.String(),
    "judgment_set_id": pl.String(),
    "evaluation_ids": pl.List(pl.String()),
    "error": pl.String(),
    "source_sha256": pl.String(),  # of the file as it was read
    "moved_to": pl.String(),  # where the file lies now: inbox/processed/... or inbox/rejected/...
}
