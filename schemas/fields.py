"""The field registry: every column name judged reads, passes between layers or stores, each with its one dtype and
one meaning (PUDL's field metadata).

Belongs here: one `Field` per column name, the values of its enum columns, and the names code refers to rather than
spelling them (`QUERY`, `DOC`, `TAG`, `PAIR`). A table (schemas/tables.py) lists field names, its key and which of them may
be null; where one name means something else in one table, that table overrides the description (rarely the dtype,
where stored files already differ). No table declarations, no computation, no I/O.

Adding a column: register its field here (a name already registered means the same column: reuse it), then list it
in its table. Stored column names never change: the warehouse's files and the SQL views are keyed by them.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

QUERY = "query_id"
DOC = "doc_id"
TAG = "run_tag"
PAIR = [QUERY, DOC]  # a judgment's key, and a run's when documents do not repeat
PAIRED_QUERY = ["baseline", "run", QUERY, "cutoff"]  # a paired difference's key: two runs, a query and a cutoff
PAIR_STATISTIC = ["baseline", "run", "measure", "cutoff"]  # a comparison's statistics: two runs, a measure, a cutoff

STATUSES: tuple[str, ...] = ("scored", "missing_from_run", "no_relevant_judgments", "no_judgments")
"""Per-query status. `scored`: judged and retrieved with IDCG > 0. `missing_from_run`: judged, absent from the run.
`no_relevant_judgments`: judged, but nothing to find (nDCG: IDCG = 0; the binary measures: no grade >= rel).
`no_judgments`: in the run only."""
INTERVAL_KINDS: tuple[str, ...] = ("exact", "bound")
"""How a per-query interval was found: `exact` (the extremes over every assignment), `bound` (an interval that
provably contains them: a very long list, or a top-k read whose unread rows may hold unjudged documents)."""
ROBUSTNESS: tuple[str, ...] = ("robust_win", "robust_loss", "robust_tie", "unresolved")
DECIDED_DIRECTIONS: tuple[str, ...] = ("run", "baseline")
"""Whether the sign of a per-query difference survives the missing judgments: the run's lowest possible value above
the baseline's highest (`robust_win`), its highest below the baseline's lowest (`robust_loss`), both values fixed
and equal whatever the missing judgments are (`robust_tie`, every bound within the tie tolerance), or overlapping
intervals (`unresolved`). Null when the evaluations carry no intervals."""


@dataclass(frozen=True)
class Field:
    name: str
    dtype: pl.DataType
    description: str  # one line, true in every table that holds the column


def _registry(*fields: Field) -> dict[str, Field]:
    """The fields by name; a name registered twice is an error (one name, one meaning)."""
    registry: dict[str, Field] = {}
    for field in fields:
        if field.name in registry:
            raise ValueError(f"field {field.name!r} is registered twice")
        registry[field.name] = field
    return registry


_TIMESTAMP = pl.Datetime("us", "UTC")

FIELDS: dict[str, Field] = _registry(
    # -- ids: content-derived, so the same content always gets the same id
    Field("judgment_set_id", pl.String(), "id of the judgment set (content-derived): the set the row describes, or "
                                          "the one evaluated against"),
    Field("run_id", pl.String(), "id of the run (content-derived)"),
    Field("evaluation_id", pl.String(), "id of the evaluation (content-derived)"),
    Field("comparison_id", pl.String(), "id of the comparison (content-derived)"),
    Field("worklist_id", pl.String(), "id of the worklist (content-derived)"),
    Field("parent_id", pl.String(), "id of the judgment set the new version extends"),
    Field("evaluation_ids", pl.List(pl.String()), "ids of the evaluations the row made, found or compared"),
    Field("baseline_evaluation_id", pl.String(), "the baseline's evaluation"),
    Field("run_evaluation_id", pl.String(), "the compared run's evaluation"),
    # -- judgments and runs as read
    Field(QUERY, pl.String(), "the query's id, as written (a string: '007' is not '7')"),
    Field(DOC, pl.String(), "the document's id, as written"),
    Field("iteration", pl.String(), "the qrels' second column, kept for audit, never used"),
    Field("relevance", pl.Int32(), "the judged grade; null = unresolved (treated as unjudged), or, on a run's row, "
                                   "unjudged"),
    Field("source_rank", pl.Int64(), "the rank as written in the file: audit only unless ranking='rank'"),
    Field("score", pl.Float64(), "the system's score"),
    Field("run_tag", pl.String(), "the run tag column as written"),
    Field("source_line", pl.Int64(), "line in the text file, or row in the Parquet file (1-based)"),
    Field("assessor", pl.String(), "who gave the grade, as the judgments name them; null in a set that names no "
                                   "assessor (one assessor, unnamed)"),
    # -- how stored rows are laid out
    Field("bucket", pl.Int32(), "the query's bucket, crc32 of its id mod 1024 (tables stored by bucket split by it)"),
    Field("position", pl.Int32(), "1-based position in trec_eval's order (score desc, then doc_id desc)"),
    Field("query_rows", pl.Int32(), "the query's rows in the whole run"),
    Field("rank", pl.Int32(), "trec_eval's rank (score desc, then doc_id desc by byte order): the stored position"),
    Field("judged", pl.Boolean(), "whether the row has a resolved judgment"),
    # -- what a stored judgment set or run records about itself and its input
    Field("name", pl.String(), "the judgment set's name, shared by its versions"),
    Field("version", pl.String(), "the judgment set's version label"),
    Field("parent_version", pl.String(), "the parent's version label"),
    Field("judgment_version", pl.String(), "the version label of the judgment set the row is on "
                                           "(judgment_sets.version)"),
    Field("task", pl.String(), "the task the assessors were given"),
    Field("assessors", pl.String(), "who judged, and the adjudication procedure (empty when not stated)"),
    Field("pooling", pl.String(), "how candidates were chosen"),
    Field("grade_scale", pl.List(pl.Struct({"grade": pl.Int32(), "meaning": pl.String()})),
          "each grade and its meaning"),
    Field("unresolved_token", pl.String(), "grade text marking an unresolved judgment"),
    Field("n_unresolved", pl.Int64(), "judgments stored with a null grade"),
    Field("system", pl.String(), "the system that produced the run"),
    Field("configuration", pl.String(), "its configuration"),
    Field("tag", pl.String(), "the run tag"),
    Field("metadata_json", pl.String(), "the declared metadata, canonical JSON"),
    Field("content_sha256", pl.String(), "sha256 of the decompressed content"),
    Field("source_sha256", pl.String(), "sha256 of the file as it was read"),
    Field("source", pl.String(), "the path as given at ingest"),
    Field("source_format", pl.String(), "trec, trec.gz, parquet or python"),
    Field("n_rows", pl.Int64(), "rows stored"),
    Field("n_queries", pl.Int64(), "distinct queries"),
    Field("n_shards", pl.Int32(), "part files, each holding whole queries (a run's are cut as its layout says)"),
    Field("layout", pl.String(), "how a run's shards are cut: position (stretches of consecutive whole queries of "
                                 "the file) or bucket (by the queries' buckets; every run stored before layouts)"),
    Field("ingested_at", _TIMESTAMP, "when it was stored"),
    Field("n_duplicate_pairs", pl.Int64(), "(query, document) pairs present more than once, counted at ingest"),
    # -- who made a stored row, when, and from what
    Field("implementation_version", pl.String(), "judged's version that made it"),
    Field("implementation_commit", pl.String(), "judged's git commit, or unknown"),
    Field("flow_run_id", pl.String(), "the Prefect flow run"),
    Field("started_at", _TIMESTAMP, "when the evaluation, or the nightly run, started"),
    Field("finished_at", _TIMESTAMP, "when it finished"),
    Field("created_at", _TIMESTAMP, "when it was made"),
    Field("provenance_json", pl.String(), "the provenance record, JSON"),
    Field("method_version", pl.String(), "the method version its values were computed under (0: stored before the "
                                         "method had one)"),
    Field("warnings", pl.List(pl.String()), "every warning raised"),
    # -- the spec and the measure
    Field("run_name", pl.String(), "the run's display name (tag, else system, else file name)"),
    Field("spec_hash", pl.String(), "sha256 of the spec's canonical JSON"),
    Field("spec_json", pl.String(), "the spec, canonical JSON"),
    Field("label", pl.String(), "the method's label, e.g. nDCG@10[trec_eval:gain=linear]"),
    Field("trec_eval_measure", pl.String(), "trec_eval's name (ndcg_cut_10), only when it prints exactly this "
                                            "number"),
    Field("measure", pl.String(), "the measure and its non-default parameters, without the cutoff: nDCG, "
                                  "AP(rel=2), RBP(p=0.8)"),
    Field("cutoff", pl.Int32(), "k: the first k of each ranking; null = the whole returned list"),
    # -- per-query values and their evidence
    Field("status", pl.Enum(list(STATUSES)), "scored, missing_from_run, no_relevant_judgments or no_judgments"),
    Field("value", pl.Float64(), "the measure's value; null where undefined"),
    Field("value_min", pl.Float64(), "the smallest value over every grade of the scale given to the unjudged "
                                     "documents the run retrieved (closed world; RBP: the value), never above value; "
                                     "null where value is null and for Judged"),
    Field("value_max", pl.Float64(), "the largest such value (RBP: value + residual), never below value"),
    Field("interval_kind", pl.Enum(list(INTERVAL_KINDS)), "exact, or bound: an interval that provably contains the "
                                                          "exact one"),
    Field("dcg", pl.Float64(), "nDCG only: DCG@k of the ranking (null for other measures)"),
    Field("idcg", pl.Float64(), "nDCG only: DCG@k of the ideal ranking of the ideal universe"),
    Field("residual", pl.Float64(), "RBP only: the weight of unjudged positions and the tail; the measure lies in "
                                    "[value, value + residual]"),
    Field("n_retrieved", pl.Int64(), "rows of the run for the query, after the depth cut"),
    Field("n_relevant_at_k", pl.Int64(), "within the first k of the submitted ranking: judged relevant (nDCG: gain > "
                                         "0; the binary measures: grade >= rel)"),
    Field("n_nonrelevant_at_k", pl.Int64(), "within the first k: judged, not relevant"),
    Field("n_unjudged_at_k", pl.Int64(), "within the first k: no judgment or an unresolved one"),
    Field("unjudged_fraction_at_k", pl.Float64(), "n_unjudged_at_k / min(k, n_retrieved); null when nothing was "
                                                  "retrieved"),
    Field("ties_straddling_k", pl.Int64(), "tie groups (equal score) with members on both sides of k"),
    # -- aggregates
    Field("interval_width", pl.Float64(), "the declared width (spec interval_width)"),
    Field("n_wide_intervals", pl.Int64(), "scored queries whose value_max - value_min exceeds it"),
    Field("n_bound_intervals", pl.Int64(), "scored queries whose interval is a bound, not exact"),
    Field("aggregation", pl.String(), "mean or weighted_mean"),
    Field("n_scored", pl.Int64(), "queries in the aggregate"),
    Field("n_missing", pl.Int64(), "judged queries missing from the run"),
    Field("n_undefined", pl.Int64(), "judged queries whose value is null (IDCG = 0 under no_relevant='null')"),
    Field("n_no_judgments", pl.Int64(), "run queries without judgments: never scored, counted here"),
    Field("n_unjudged_only", pl.Int64(), "scored queries whose first k documents are all unjudged"),
    Field("mean_unjudged_fraction", pl.Float64(), "mean unjudged fraction at k over the scored queries"),
    # -- the nightly job
    Field("file", pl.String(), "the run file's name in the inbox"),
    Field("outcome", pl.String(), "evaluated, duplicate or rejected"),
    Field("error", pl.String(), "why the file was rejected"),
    Field("moved_to", pl.String(), "where the file lies now: inbox/processed/... or inbox/rejected/..."),
    # -- comparisons
    Field("run_names", pl.List(pl.String()), "their runs' names"),
    Field("baseline", pl.String(), "the baseline run's name; of a pair, its reference run (differences are run - "
                                   "baseline): the comparison's baseline, or another run under --pairs all or A:B"),
    Field("run", pl.String(), "the compared run's name"),
    Field("settings_json", pl.String(), "the test settings (seed, permutations, correction...)"),
    Field("notes", pl.List(pl.String()), "what a reader must know (e.g. missing intervals)"),
    Field("query_set", pl.String(), "common (scored in every run) or judged (missing queries score 0)"),
    Field("baseline_mean", pl.Float64(), "the baseline's mean"),
    Field("run_mean", pl.Float64(), "the run's mean"),
    Field("mean_difference", pl.Float64(), "the mean of run - baseline"),
    Field("ci_low", pl.Float64(), "paired percentile bootstrap of the mean difference: lower end"),
    Field("ci_high", pl.Float64(), "paired percentile bootstrap of the mean difference: upper end"),
    Field("t_statistic", pl.Float64(), "paired Student t statistic"),
    Field("p_t", pl.Float64(), "paired Student t, two-sided"),
    Field("p_randomization", pl.Float64(), "paired sign-flip randomization test, two-sided"),
    Field("randomization", pl.String(), "exact (all 2^n sign vectors) or sampled ((b+1)/(B+1))"),
    Field("p_adjusted", pl.Float64(), "p_randomization corrected over the whole family"),
    Field("correction", pl.String(), "holm or bh"),
    Field("significant", pl.Boolean(), "p_adjusted below 1 - confidence_level: query sampling alone would rarely "
                                       "give such a difference between equal runs; says nothing of the unjudged "
                                       "documents (decided) or the assessors"),
    Field("p_tukey_hsd", pl.Float64(), "randomised Tukey HSD blocked by query (more than two runs)"),
    Field("effect_size", pl.Float64(), "paired Cohen's d_z: mean difference / sd of the differences"),
    Field("effect_size_kind", pl.String(), "which effect size"),
    Field("wins", pl.Int64(), "queries where the run is better"),
    Field("ties", pl.Int64(), "queries within the tie tolerance"),
    Field("losses", pl.Int64(), "queries where the run is worse"),
    Field("unresolved", pl.Int64(), "queries whose sign missing judgments could flip"),
    Field("seed", pl.Int64(), "the random seed"),
    Field("permutations", pl.Int64(), "randomization test permutations"),
    Field("bootstrap_resamples", pl.Int64(), "bootstrap resamples"),
    Field("confidence_level", pl.Float64(), "of the bootstrap interval"),
    Field("tie_tolerance", pl.Float64(), "differences this small are ties"),
    Field("baseline_value", pl.Float64(), "the baseline's value"),
    Field("run_value", pl.Float64(), "the run's value"),
    Field("difference", pl.Float64(), "run - baseline"),
    Field("baseline_value_min", pl.Float64(), "the baseline's interval over unjudged documents: lower end"),
    Field("baseline_value_max", pl.Float64(), "the baseline's interval over unjudged documents: upper end"),
    Field("run_value_min", pl.Float64(), "the run's interval over unjudged documents: lower end"),
    Field("run_value_max", pl.Float64(), "the run's interval over unjudged documents: upper end"),
    Field("robustness", pl.Enum(list(ROBUSTNESS)), "robust win, loss or tie whatever the missing judgments, or "
                                                   "unresolved"),
    Field("difference_min", pl.Float64(), "the smallest run - baseline over every grading of the unjudged documents "
                                          "either run retrieved, one grading for both runs"),
    Field("difference_max", pl.Float64(), "the largest run - baseline over those gradings"),
    Field("difference_kind", pl.Enum(list(INTERVAL_KINDS)), "exact (nDCG's paired interval), or bound: contains "
                                                            "the exact difference interval"),
    Field("mean_difference_min", pl.Float64(), "the smallest aggregate difference over one grading of every "
                                               "query's unjudged documents"),
    Field("mean_difference_max", pl.Float64(), "the largest aggregate difference over one such grading"),
    Field("decided", pl.Boolean(), "the aggregate difference interval excludes 0: no grading of the unjudged "
                                   "documents reverses the order"),
    Field("unjudged_documents", pl.Int64(), "unjudged documents the measure at this cutoff reads in either run "
                                            "(each run's first k), summed over the paired sample's queries; null "
                                            "where no grading is shared"),
    Field("open_queries", pl.Int64(), "queries whose difference the unjudged documents (or disputed grades) can "
                                      "still move"),
    Field("n_unjudged", pl.Int64(), "unjudged documents the measure at this cutoff reads in either run, counted "
                                    "once; null where no grading is shared"),
    Field("n_disputed", pl.Int64(), "judged documents the measure at this cutoff reads in either run whose grade is "
                                    "a set (assessors disagree, under the assessor model set or range)"),
    Field("disputed_documents", pl.Int64(), "disputed judgments read in the queries whose difference is still "
                                            "open; null without disputes"),
    Field("disputed_queries", pl.Int64(), "queries whose difference is still open and read a disputed judgment; "
                                          "null without disputes"),
    Field("assessor_worlds", pl.Int64(), "single-assessor worlds: one per assessor of the judgment set (that "
                                         "assessor's grades where they graded, the others' median elsewhere); "
                                         "null with one assessor"),
    Field("assessor_worlds_agree", pl.Int64(), "of those worlds, how many keep the pair's direction whatever the "
                                               "unjudged documents are"),
    Field("decided_direction", pl.Enum(list(DECIDED_DIRECTIONS)), "which is better whatever the unjudged documents "
                                                                  "are: run or baseline; null when undecided"),
    # -- judging: versions that grow and worklists
    Field("n_added", pl.Int64(), "pairs the parent had no (resolved) grade for"),
    Field("n_revised", pl.Int64(), "pairs whose grade changed (--revise)"),
    Field("n_confirmed", pl.Int64(), "pairs answered again with the parent's grade"),
    Field("judged_at", _TIMESTAMP, "when the answers were ingested"),
    Field("priority", pl.Float64(), "the query-weighted expected interval width removed, summed over the "
                                    "evaluations"),
    Field("width_removed", pl.Float64(), "the same, unweighted"),
    Field("best_rank", pl.Int64(), "the best rank any evaluated run gave the document"),
    Field("evaluations", pl.List(pl.String()), "the evaluated runs (by name) that retrieved it in their top k"),
    Field("n_evaluations", pl.Int64(), "how many evaluated runs retrieved it in their top k"),
    Field("query_text", pl.String(), "the query's text, from --topics"),
    Field("budget", pl.Int64(), "pairs asked for"),
    # -- several assessors: who they are and how far they agree (transforms/assessors.py)
    Field("assessor_kind", pl.String(), "the assessor's declared kind: human, model:<name> or adjudicator; null "
                                        "when the set does not declare it"),
    Field("n_judgments", pl.Int64(), "the assessor's judgments with a grade (unresolved ones not counted)"),
    Field("assessor_a", pl.String(), "the first assessor of the pair (names in byte order: a < b)"),
    Field("assessor_b", pl.String(), "the second assessor of the pair"),
    Field("shared_pairs", pl.Int64(), "(query, document) pairs both assessors graded"),
    Field("agreement", pl.Float64(), "share of the shared pairs given the same grade; null without shared pairs"),
    Field("kappa", pl.Float64(), "Cohen's kappa on the grades over the shared pairs; null where undefined (no "
                                 "shared pair, or one grade only on both sides)"),
    Field("weighted_kappa", pl.Float64(), "Cohen's kappa, linearly weighted by the distance between the grades"),
    Field("kappa_relevant", pl.Float64(), "Cohen's kappa on relevant or not (grade >= relevant_from)"),
    Field("relevant_from", pl.Int32(), "the lowest grade counted relevant: the set's declared threshold, else "
                                       "trec_eval's -l default 1"),
    Field("alpha", pl.Float64(), "Krippendorff's alpha (ordinal) over every assessor of the set and every pair two "
                                 "of them graded; the same on each row of a set; null where undefined"),
)
