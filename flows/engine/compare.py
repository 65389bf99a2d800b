"""Comparing evaluations of runs on one judgment basis: the orchestration-free sequence and the comparison store.

Belongs here: gathering the evaluations to compare (evaluated directly, or stored), refusing those whose judgment
set or spec differ, the loop over pairs, measures and cutoffs that calls the pure tests of `transforms/compare.py`,
the correction over the whole family, the content-derived comparison id, and writing and reading stored
comparisons. The Prefect flow around it (`compare_flow`) is in `flows/pipeline/flows.py`; printing is in
`flows/report/comparison.py`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from judged.flows.engine.evaluate import (
    EvaluationResult, adjudicators_of, evaluate, grade_scale, run_candidates, whole_judgment_rows,
)
from judged.flows.store.inputs import input_judgments, input_runs
from judged.flows.store.readers import Table, load_table, open_stored
from judged.flows.report.wording import distinct_names
from judged.flows.store.kinds import COMPARISON, COMPARISON_PER_QUERY_FILES, COMPARISONS_FILES, JUDGMENT_SET, RUN
from judged.flows.store.warehouse import SINGLE_PART, Store, now_utc, write_parquet_atomically
from judged.schemas.comparison import ComparisonSettings, comparison_id
from judged.schemas.fields import PAIR_STATISTIC
from judged.flows.engine.versions import implementation_commit, implementation_version, library_versions
from judged.schemas.provenance import METHOD_VERSION, canonical_json, evaluation_id, is_older_method
from judged.schemas.spec import EvaluationSpec, SpecError
from judged.transforms.binary_intervals import binary_difference_intervals, interval_measures
from judged.transforms.judging import ranked_and_judged, valued_queries
from judged.transforms.paired_intervals import (
    decided_direction, difference_intervals, documents_read_by_pair, with_difference_intervals,
)
from judged.transforms.summary import aggregate_interval
from judged.transforms.compare import (
    adjusted_p_values,
    bootstrap_intervals,
    cohens_d_z,
    pair_table,
    paired_per_query,
    paired_t_test,
    randomised_tukey_hsd,
    randomization_tests,
    sample_matrix,
    wins_ties_losses,
    with_measure,
    with_robustness,
)
from judged.transforms.errors import InputError

NO_INTERVALS_NOTE = (
    "robustness and unresolved are null: these evaluations carry no per-query value_min/value_max intervals over "
    "their unjudged documents, so whether a difference's sign survives the missing judgments is not known"
)


class IncomparableError(ValueError):
    """Evaluations that are not on one basis (judgment set, spec), or not enough of them to compare."""


@dataclass(frozen=True)
class ComparedEvaluation:
    """One evaluation taking part in a comparison: its run, identity, basis and result tables."""

    run_name: str
    evaluation_id: str
    spec: EvaluationSpec
    judgment_set_id: str
    judgments_label: str  # `name version` of the judgment set, for messages and the report
    per_query: pl.DataFrame
    summary: pl.DataFrame
    provenance: dict
    method_version: str = METHOD_VERSION  # a stored evaluation's may be older (schemas/provenance.py)
    inputs: tuple[Table, Table] | None = field(default=None, repr=False)
    """The run and the judgment set evaluated, from which the paired difference intervals read the ranked lists."""


@dataclass(frozen=True)
class ComparisonResult:
    comparison_id: str
    baseline: str
    settings: ComparisonSettings
    evaluations: tuple[ComparedEvaluation, ...]
    pairs: pl.DataFrame  # COMPARISONS: one row per pair, measure and cutoff
    per_query: pl.DataFrame  # COMPARISON_PER_QUERY
    notes: tuple[str, ...]

    def family_summary(self) -> list[dict]:
        """Per measure and cutoff: how many pairs the comparison holds (`pairs`) and how many of them are decided
        whatever the unjudged documents are (`pairs_decided`; null without difference intervals)."""
        summary = self.pairs.group_by("measure", "cutoff", maintain_order=True).agg(
            pairs=pl.len().cast(pl.Int64),
            pairs_decided=pl.when(pl.col("decided").is_not_null().any()).then(pl.col("decided").sum().cast(pl.Int64)),
        )
        return summary.to_dicts()

    def pair_table(self) -> pl.DataFrame:
        """Every pair read in its direction, decided pairs first, then significant ones (`transforms.compare.pair_table`)."""
        return pair_table(self.pairs.lazy()).collect()

    def provenance(self, flow_run_id: str | None = None) -> dict:
        """What the comparison was made from and by: each evaluation's identity and inputs, the settings, the
        implementation and its libraries."""
        first = self.evaluations[0]
        return {
            "comparison_id": self.comparison_id,
            "baseline": self.baseline,
            "settings": self.settings.model_dump(mode="json"),
            "judgment_set_id": first.judgment_set_id,
            "judgments": first.judgments_label,
            "spec_hash": first.spec.spec_hash,
            "label": first.spec.full_label(),
            "evaluations": [
                {"evaluation_id": e.evaluation_id, "run_name": e.run_name, "method_version": e.method_version,
                 **e.provenance}
                for e in self.evaluations
            ],
            "implementation_version": implementation_version(),
            "implementation_commit": implementation_commit(),
            "libraries": {**library_versions(), **{name: _version(name) for name in ("numpy", "scipy")}},
            "flow_run_id": flow_run_id,
            "notes": list(self.notes),
        }


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def from_result(
    result: EvaluationResult, judgments_id: str, judgments_label: str, inputs: dict,
    tables: tuple[Table, Table] | None = None,
) -> ComparedEvaluation:
    """An evaluation made directly (not stored) as a comparison takes it; `tables`: its run and judgments."""
    return ComparedEvaluation(
        run_name=result.run_name, evaluation_id=result.evaluation_id, spec=result.spec,
        judgment_set_id=judgments_id, judgments_label=judgments_label, per_query=result.per_query,
        summary=result.summary, provenance=inputs, inputs=tables,
    )


def from_warehouse(warehouse: Store, evaluation_id: str) -> ComparedEvaluation:
    """A stored evaluation as a comparison takes it."""
    record, per_query, summary = warehouse.load_evaluation(evaluation_id)
    judgments = warehouse.record(JUDGMENT_SET, record["judgment_set_id"])
    provenance = json.loads(record["provenance_json"])
    return ComparedEvaluation(
        run_name=record["run_name"], evaluation_id=evaluation_id,
        spec=EvaluationSpec.from_canonical_json(record["spec_json"]), judgment_set_id=record["judgment_set_id"],
        judgments_label=judgments_label(judgments["name"], judgments["version"]),
        per_query=per_query, summary=summary,
        provenance={"run": provenance.get("run"), "judgments": provenance.get("judgments"),
                    "spec_hash": record["spec_hash"], "label": record["label"]},
        method_version=record["method_version"],
        inputs=(warehouse.stored(RUN, record["run_id"]), warehouse.stored(JUDGMENT_SET, record["judgment_set_id"])),
    )


def judgments_label(name: str | None, version: str | None) -> str:
    return f"{name or '(unnamed judgment set)'} version {version or '(none)'}"


def check_basis(evaluations: Sequence[ComparedEvaluation]) -> None:
    """Refuse evaluations that differ in judgment set or spec, naming what differs in each."""
    if len(evaluations) < 2:
        raise IncomparableError(f"a comparison needs at least two evaluations, got {len(evaluations)}")
    judgment_sets = {e.judgment_set_id for e in evaluations}
    if len(judgment_sets) > 1:
        which = "; ".join(f"{e.run_name}: {e.judgments_label} ({e.judgment_set_id})" for e in evaluations)
        raise IncomparableError(
            f"the evaluations use different judgment sets ({which}); compare them on one basis with --rebase "
            "(re-evaluates every run on the newest judgment version under one spec)"
        )
    specs = {e.spec.spec_hash for e in evaluations}
    if len(specs) > 1:
        which = "; ".join(f"{e.run_name}: {e.spec.full_label()} (spec {e.spec.spec_hash[:12]})" for e in evaluations)
        raise IncomparableError(
            f"the evaluations use different specs ({which}); compare them on one basis with --rebase"
        )
    if len({e.method_version for e in evaluations}) > 1:
        which = "; ".join(f"{e.run_name}: method version {e.method_version}" for e in evaluations)
        raise IncomparableError(
            f"the evaluations were computed by different method versions ({which}); compare them on one basis with "
            "--rebase (evaluates every run again under the current method)"
        )
    _refuse_repeated([e.run_name for e in evaluations], [e.evaluation_id for e in evaluations])


def _refuse_repeated(names: Sequence[str], evaluation_ids: Sequence[str]) -> None:
    """Refuse one evaluation given twice, naming its run."""
    repeated = sorted({name for name, e in zip(names, evaluation_ids, strict=True) if evaluation_ids.count(e) > 1})
    if repeated:
        raise IncomparableError(
            f"{', '.join(repeated)}: one evaluation (one run on one judgment set under one spec) is given twice, and "
            "a run is compared with other runs, not with itself (after --rebase, evaluations of one run on two "
            "judgment versions are one evaluation)"
        )


def too_few_draws_notes(rows: Sequence[dict[str, Any]], settings: ComparisonSettings) -> tuple[str, ...]:
    """A note when Holm's correction over the family cannot make any sampled randomization test significant: the
    smallest p-value B draws give is 1 / (B + 1), and Holm multiplies the smallest by the family's size. Without it
    "0 significant" would read as evidence about the runs rather than about the number of draws."""
    tested = [row for row in rows if row["p_randomization"] is not None]
    if settings.correction != "holm" or not any(row["randomization"] == "sampled" for row in tested):
        return ()
    family, alpha = len(tested), 1 - settings.confidence_level
    if family / (settings.permutations + 1) < alpha:
        return ()
    needed = math.ceil(family / alpha)
    return (f"significance: with {settings.permutations:,} permutations no test of this family of "
            f"{family:,} can be significant after Holm's correction (the smallest p-value is 1/"
            f"{settings.permutations + 1:,}, times {family:,}); --permutations {needed:,} or more lets one be",)


def older_method_notes(evaluations: Sequence[ComparedEvaluation]) -> tuple[str, ...]:
    """A note when the evaluations (all of one method version, see `check_basis`) were computed by an older one."""
    version = evaluations[0].method_version
    if not is_older_method(version):
        return ()
    return (f"older method: these evaluations were computed under method version {version}, this judged computes "
            f"version {METHOD_VERSION}; --rebase evaluates them again under the current method",)


def _unique_names(evaluations: Sequence[ComparedEvaluation]) -> list[str]:
    """Run names, with the evaluation id's first digits added where two runs share a name."""
    return distinct_names([e.run_name for e in evaluations], [e.evaluation_id for e in evaluations])


def previous_baseline(warehouse: Store, run_names: Sequence[str]) -> tuple[str, dict] | None:
    """The baseline of the newest stored comparison whose baseline is one of `run_names`, with that comparison's
    record; None when there is none."""
    files = warehouse.record_files(COMPARISON)
    if not files:
        return None
    records = pl.concat([pl.read_parquet(path) for path in files], how="diagonal_relaxed")
    earlier = records.filter(pl.col("baseline").is_in(list(run_names))).sort("created_at", "comparison_id")
    if earlier.height == 0:
        return None
    record = earlier.row(-1, named=True)
    return record["baseline"], record


def choose_baseline(
    warehouse: Store | None, run_names: Sequence[str], given: str | None, listed: bool = True
) -> tuple[str, str]:
    """The baseline among `run_names` and why it was chosen. The rule: the run named (`given`, --baseline or the
    nightly's configuration); else, when the runs were listed by the user (`listed`: `judged compare`, `report`,
    the API), the first listed; else (the nightly's runs, in the inbox's order, which means nothing) the baseline
    of the newest comparison stored in `warehouse` that is among the runs (so that night after night runs are
    compared with the same one); else the first run in name order (byte order)."""
    if given is not None:
        if given in run_names:
            return given, "named as the baseline"
        if listed:
            raise IncomparableError(f"--baseline {given!r} is none of the runs compared: {', '.join(run_names)}")
    missing = f"the baseline named, {given!r}, is none of these runs; " if given is not None else ""
    if listed:
        return run_names[0], "the first run given (name another with --baseline)"
    earlier = previous_baseline(warehouse, run_names) if warehouse is not None else None
    if earlier is not None:
        name, record = earlier
        return name, (f"{missing}the baseline of the previous stored comparison {record['comparison_id'][:12]} "
                      f"({record['created_at']:%Y-%m-%d %H:%M} UTC; name another with --baseline)")
    return min(run_names), (f"{missing}no baseline named and no stored comparison has one of these runs as its "
                            "baseline: the first run in name order (name another with --baseline)")


def refuse_before_evaluating(
    names: Sequence[str], run_ids: Sequence[str], judgment_set_id: str, spec: EvaluationSpec, baseline: str | None
) -> None:
    """What `compare_evaluations` would refuse of the evaluations of these runs (named `names`) against the judgment
    set under the spec, known before they are made: one evaluation given twice, a `baseline` that is none of the
    runs. Runs evaluated into a warehouse to be compared (files with --warehouse, --rebase) are checked with it
    first, so that such a refusal stores nothing."""
    identifiers = [evaluation_id(run_id, judgment_set_id, spec.spec_hash, implementation_version())
                   for run_id in run_ids]
    _refuse_repeated(names, identifiers)
    choose_baseline(None, distinct_names(list(names), identifiers), baseline)


def inputs_to_evaluate(warehouse: Store, judgments: str, runs: Sequence[str]) -> tuple[list[str], list[str], str]:
    """The names and ids of the runs `evaluate_flow` would evaluate into `warehouse` from these inputs (files, stored
    runs' folders, ids), and the judgment set's id, as `refuse_before_evaluating` takes them; nothing is stored. A
    run stored already keeps its stored name."""
    judgment_set_id = input_judgments(warehouse, judgments).table_id
    names, run_ids = [], []
    for run in input_runs(warehouse, list(runs)):
        stored = warehouse.run_record(run.table_id).exists()
        names.append(warehouse.load_stored(RUN, run.table_id).name if stored else run.name)
        run_ids.append(run.table_id)
    return names, run_ids, judgment_set_id


def compare_evaluations(
    evaluations: Sequence[ComparedEvaluation], settings: ComparisonSettings, baseline: str | None = None,
    warehouse: Store | None = None, listed: bool = True,
) -> ComparisonResult:
    """The pairs of runs the settings select (`ComparisonSettings.with_pairs`: every pair up to ALL_PAIRS_UP_TO
    runs unless declared, else the baseline against each other run; the baseline chosen by `choose_baseline`: the
    run named `baseline`, else by the rule there), per measure and cutoff: the paired per-query table and the
    statistics, corrected over the whole family of pairs x measures x cutoffs. The notes say which baseline and
    which pairs were taken, and why."""
    check_basis(evaluations)
    names = _unique_names(evaluations)
    base_name, reason = choose_baseline(warehouse, names, baseline, listed)
    try:
        settings, pairs, pairs_note = settings.with_pairs(names, base_name)
    except SpecError as error:
        raise IncomparableError(str(error)) from None
    base_index = names.index(base_name)
    frames = [(name, with_measure(e.per_query.lazy(), e.spec)) for name, e in zip(names, evaluations, strict=True)]
    paired = paired_per_query(frames, pairs, settings.query_set)
    worlds = PairedWorlds.of(evaluations, names, pairs)
    intervals, families, ranked = None, [], None
    if worlds is not None:
        ranked, judgment_rows = worlds.ranked(worlds.spec)
        intervals, families = worlds.intervals(ranked, judgment_rows, worlds.spec)
    paired = with_robustness(with_difference_intervals(paired, intervals, families), settings.tie_tolerance)
    if worlds is not None and ranked is not None:
        paired = worlds.with_documents_read(paired, ranked)
    else:
        paired = paired.with_columns(n_disputed=pl.lit(None, pl.Int64))
    paired = paired.collect()
    has_intervals = paired["robustness"].null_count() < paired.height
    keys = frames[base_index][1].select("measure", "cutoff").unique().sort("cutoff", "measure", nulls_last=True)
    measures = keys.collect().rows()
    ids = {name: e.evaluation_id for name, e in zip(names, evaluations, strict=True)}
    first_spec = evaluations[0].spec
    rows = pair_statistics(paired, pairs, measures, settings, has_intervals, first_spec)
    tukey = _tukey_p_values(frames, settings) if len(frames) > 2 else {}
    for row in rows:
        row |= {"baseline_evaluation_id": ids[row["baseline"]], "run_evaluation_id": ids[row["run"]],
                "p_tukey_hsd": tukey.get((row["baseline"], row["run"], row["measure"], row["cutoff"]))}
    if worlds is not None and worlds.assessors:
        rows = worlds.with_assessor_worlds(rows, paired, first_spec)
    adjusted = adjusted_p_values([row["p_randomization"] for row in rows], settings.correction)
    identifier = comparison_id(
        [e.evaluation_id for e in evaluations], ids[base_name], settings, implementation_version()
    )
    first = evaluations[0]
    alpha = 1 - settings.confidence_level
    pairs_table = pl.DataFrame(
        [
            {**row, "comparison_id": identifier, "p_adjusted": p, "correction": settings.correction,
             "significant": None if p is None else p < alpha,
             "judgment_set_id": first.judgment_set_id, "spec_hash": first.spec.spec_hash,
             "query_set": settings.query_set, "effect_size_kind": "d_z", "seed": settings.seed,
             "permutations": settings.permutations, "bootstrap_resamples": settings.bootstrap_resamples,
             "confidence_level": settings.confidence_level, "tie_tolerance": settings.tie_tolerance}
            for row, p in zip(rows, adjusted, strict=True)
        ],
        schema=COMPARISONS_FILES.schema,
    )
    evaluation_ids = pl.DataFrame({"name": list(ids), "evaluation_id": list(ids.values())})
    per_query = (
        paired.join(evaluation_ids.rename({"name": "run", "evaluation_id": "run_evaluation_id"}), on="run",
                    how="left", maintain_order="left")
        .join(evaluation_ids.rename({"name": "baseline", "evaluation_id": "baseline_evaluation_id"}), on="baseline",
              how="left", maintain_order="left")
        .with_columns(comparison_id=pl.lit(identifier))
        .select(list(COMPARISON_PER_QUERY_FILES.schema))
        .cast(COMPARISON_PER_QUERY_FILES.schema)
    )
    notes = ((f"baseline: {base_name}, {reason}",) + ((pairs_note,) if pairs_note else ())
             + too_few_draws_notes(rows, settings)
             + (() if has_intervals else (NO_INTERVALS_NOTE,)) + older_method_notes(evaluations))
    return ComparisonResult(identifier, base_name, settings, tuple(evaluations), pairs_table, per_query, notes)


def pair_statistics(
    paired: pl.DataFrame, pairs: Sequence[tuple[str, str]], measures: Sequence[tuple[str, int | None]],
    settings: ComparisonSettings, has_intervals: bool, spec: EvaluationSpec,
) -> list[dict[str, object]]:
    """One row per pair (in the order of `pairs`), measure and cutoff (in the order of `measures`) of the paired
    per-query table: the sample's statistics (on the queries with a difference now) and what the pair's intervals
    say (over every world). The tests that draw share their draws across pairs (`randomization_tests`,
    `bootstrap_intervals`): each pair's numbers are those it has alone."""
    aggregates = {tuple(row[k] for k in PAIR_STATISTIC): row
                  for row in _pair_aggregates(paired, spec).iter_rows(named=True)}
    # The sample of each pair, measure and cutoff: its rows in query order, one slice of the columns below.
    sample = paired.filter(pl.col("difference").is_not_null())
    slices = sample.with_row_index("_row").group_by(PAIR_STATISTIC, maintain_order=True).agg(
        start=pl.col("_row").first(), length=pl.len())
    where = {tuple(row[:4]): (row[4], row[5]) for row in slices.iter_rows()}
    columns = {name: sample[name].to_numpy().astype(np.float64)
               for name in ("difference", "baseline_value", "run_value")}
    keys = [(a, b, measure, cutoff) for a, b in pairs for measure, cutoff in measures]

    def part(name: str, key: tuple) -> np.ndarray:
        start, length = where.get(key, (0, 0))
        return columns[name][start:start + length]

    differences = [part("difference", key) for key in keys]
    randomization = randomization_tests(differences, settings.permutations, settings.seed)
    intervals = bootstrap_intervals(differences, settings.bootstrap_resamples, settings.confidence_level,
                                    settings.seed)
    rows = []
    for key, values, test, (ci_low, ci_high) in zip(keys, differences, randomization, intervals, strict=True):
        t_test = paired_t_test(values)
        wins, ties, losses = wins_ties_losses(values, settings.tie_tolerance)
        n = values.size
        found = aggregates.get(key, {})
        low, high = found.get("mean_difference_min"), found.get("mean_difference_max")
        direction = decided_direction(low, high)
        rows.append({
            **dict(zip(PAIR_STATISTIC, key, strict=True)),
            "n_queries": n,
            "baseline_mean": float(part("baseline_value", key).mean()) if n else None,
            "run_mean": float(part("run_value", key).mean()) if n else None,
            "mean_difference": float(values.mean()) if n else None,
            "ci_low": ci_low, "ci_high": ci_high,
            "t_statistic": t_test.statistic, "p_t": t_test.p_value,
            "p_randomization": test.p_value, "randomization": test.method,
            "effect_size": cohens_d_z(values),
            "wins": wins, "ties": ties, "losses": losses,
            "unresolved": found.get("unresolved", 0) if has_intervals else None,
            "mean_difference_min": low, "mean_difference_max": high,
            "decided": None if low is None else direction is not None, "decided_direction": direction,
            "unjudged_documents": found.get("unjudged_documents"),
            "open_queries": None if low is None else found.get("open_queries"),
            "disputed_documents": found.get("disputed_documents"),
            "disputed_queries": found.get("disputed_queries"),
        })
    return rows


def _query_weight(spec: EvaluationSpec) -> pl.Expr:
    """Each query's weight under the spec's aggregation (1 under a plain mean, or where none is declared)."""
    weights = dict(spec.query_weights) if spec.aggregation == "weighted_mean" else {}
    if not weights:
        return pl.lit(1.0, pl.Float64)
    return pl.col("query_id").replace_strict(list(weights), list(weights.values()), default=1.0,
                                             return_dtype=pl.Float64)


def _pair_aggregates(paired: pl.DataFrame, spec: EvaluationSpec) -> pl.DataFrame:
    """Per pair, measure and cutoff, over every query of every world: the interval of the aggregate difference
    (`transforms.summary.aggregate_interval`: the queries with a difference now always count, with their ends; a
    query without one (no relevant judgment) joins in the worlds that give it one; null when a query has no
    interval or no world has a positive weight), the queries whose sign is unresolved, and what the intervals rest
    on: the open documents a measure at that cutoff reads (`unjudged_documents`), the queries whose difference they
    can still move (`open_queries`), and of those, the disputed judgments read (`disputed_documents`, and the
    queries holding one, `disputed_queries`; null without any)."""
    may_join = pl.col("difference").is_null() & pl.col("difference_min").is_not_null()
    low, high = aggregate_interval("difference_min", "difference_max", "difference", pl.col("weight"), may_join)
    opened = pl.col("difference_max") > pl.col("difference_min")
    disputed = (pl.col("disputed_docs").list.len() if "disputed_docs" in paired.columns
                else pl.lit(0, pl.UInt32)).alias("_disputed")
    return (
        paired.with_columns(weight=_query_weight(spec), _disputed=disputed)
        .group_by(PAIR_STATISTIC, maintain_order=True)
        .agg(
            mean_difference_min=low, mean_difference_max=high,
            unresolved=(pl.col("robustness") == "unresolved").filter(pl.col("difference").is_not_null()).sum(),
            unjudged_documents=pl.when(pl.col("n_unjudged").null_count() == 0).then(pl.col("n_unjudged").sum()),
            open_queries=opened.sum(),
            _disputed_all=pl.col("_disputed").sum(),
            disputed_documents=pl.col("_disputed").filter(opened).sum(),
            disputed_queries=(pl.col("_disputed") > 0).filter(opened).sum(),
        )
        .with_columns(
            # Without disputed judgments in any of the pair's queries the counts are null, not 0.
            pl.when(pl.col("_disputed_all") > 0).then(pl.col(c)).alias(c)
            for c in ("disputed_documents", "disputed_queries")
        )
        .drop("_disputed_all")
        .with_columns(pl.col(c).cast(pl.Int64) for c in ("unresolved", "unjudged_documents", "open_queries",
                                                        "disputed_documents", "disputed_queries"))
    )


@dataclass(frozen=True)
class PairedWorlds:
    """What a comparison's paired intervals read: the candidate rows of every run of a pair, to which each world of
    grades attaches its own judgments (the spec's assessor model's, and each single assessor's), the judgment set
    and the pairs (`baseline`: each pair's reference, `run`)."""

    spec: EvaluationSpec
    judgments: Table
    candidates: dict[str, pl.DataFrame]
    pairs: pl.LazyFrame
    scale: tuple[int, ...]
    assessors: tuple[str, ...]  # the set's assessors, when it records several

    @classmethod
    def of(
        cls, evaluations: Sequence[ComparedEvaluation], names: Sequence[str], pairs: Sequence[tuple[str, str]]
    ) -> PairedWorlds | None:
        """None where an evaluation's inputs are not at hand: the per-run intervals then bound the differences."""
        if any(e.inputs is None for e in evaluations):
            return None
        spec, judgments = evaluations[0].spec, evaluations[0].inputs[1]
        in_pairs = {name for pair in pairs for name in pair}
        candidates = {name: run_candidates(e.inputs[0], judgments, spec)
                      for name, e in zip(names, evaluations, strict=True) if name in in_pairs}
        pair_frame = pl.LazyFrame({"baseline": [a for a, _ in pairs], "run": [b for _, b in pairs]},
                                  schema={"baseline": pl.String, "run": pl.String})
        rows = judgments.load().scan
        assessors: tuple[str, ...] = ()
        if "assessor" in rows.collect_schema().names():
            found = rows.select(pl.col("assessor").drop_nulls().unique().sort()).collect()["assessor"].to_list()
            # An adjudicator is no world of its own: its grades settle the pairs it graded in every world.
            settling = adjudicators_of(judgments.metadata)
            found = [name for name in found if name not in settling]
            assessors = tuple(found) if len(found) > 1 else ()
        return cls(spec, judgments, candidates, pair_frame, grade_scale(judgments), assessors)

    def ranked(self, spec: EvaluationSpec) -> tuple[pl.LazyFrame, pl.LazyFrame]:
        """Every run's ranked-and-judged rows (with a `run` column) and the judgment rows, under `spec`'s grades:
        computed once here, since every cutoff and pair reads them."""
        judgment_rows = whole_judgment_rows(self.judgments, spec).collect().lazy()
        ranked = pl.concat([
            ranked_and_judged(candidates.lazy(), judgment_rows, spec).with_columns(run=pl.lit(name))
            for name, candidates in self.candidates.items()
        ], how="diagonal_relaxed")
        return ranked.collect().lazy(), judgment_rows

    def intervals(
        self, ranked: pl.LazyFrame, judgment_rows: pl.LazyFrame, spec: EvaluationSpec, every_query: bool = False
    ) -> tuple[pl.LazyFrame | None, list[str]]:
        """The paired difference intervals of the rows `ranked` under `spec` (one world of grades for both runs)
        and the measure families they cover: nDCG's (`difference_intervals`, under `ideal='judged'`, where both runs
        share one ideal) and every other measure's with an interval (`binary_difference_intervals`).
        `every_query`: also the queries where nothing is open. Under `ideal='retrieved'` the per-run intervals
        bound nDCG's difference (`with_difference_intervals`)."""
        frames, families = [], []
        ndcg_cutoffs = tuple(m.cutoff for m in spec.measure_list() if m.name == "nDCG")
        if spec.ideal == "judged" and ndcg_cutoffs:
            ndcg_spec = spec.model_copy(update={"cutoffs": ndcg_cutoffs})
            if every_query:
                frames.append(_every_query_ndcg(ranked, judgment_rows, ndcg_spec, self.pairs, self.scale))
            else:
                frames.append(difference_intervals(ranked, judgment_rows, ndcg_spec, self.pairs, self.scale))
            families.append("nDCG")
        others = interval_measures(spec)
        if others:
            frames.append(binary_difference_intervals(ranked, judgment_rows, spec, others, self.pairs, self.scale,
                                                      every_query=every_query))
            families += [m.family for m in others]
        if not frames:
            return None, []
        return pl.concat(frames, how="vertical_relaxed"), families

    def with_documents_read(self, paired: pl.LazyFrame, ranked: pl.LazyFrame) -> pl.LazyFrame:
        """The paired per-query rows with what the measure at each row's cutoff reads of the two lists `ranked`
        (each list's first k; `transforms.paired_intervals.documents_read_by_pair`): `n_unjudged` where a world is
        shared, and the disputed judgments it may depend on (`disputed_docs`, and their count `n_disputed`)."""
        cutoffs = sorted({m.cutoff for m in self.spec.measure_list()}, key=lambda k: (k is None, k or 0))
        read = documents_read_by_pair(ranked, self.pairs, cutoffs).rename({"n_unjudged": "_read_unjudged"})
        return paired.join(read, on=["baseline", "run", "query_id", "cutoff"], how="left", nulls_equal=True,
                           maintain_order="left").with_columns(
            n_unjudged=pl.when(pl.col("n_unjudged").is_not_null()).then(pl.col("_read_unjudged").fill_null(0)),
            disputed_docs=pl.col("disputed_docs").fill_null(pl.lit([], pl.List(pl.String))),
        ).with_columns(n_disputed=pl.col("disputed_docs").list.len().cast(pl.Int64)).drop("_read_unjudged")

    def with_assessor_worlds(
        self, rows: list[dict[str, object]], paired: pl.DataFrame, spec: EvaluationSpec
    ) -> list[dict[str, object]]:
        """Each pair row with `assessor_worlds` (one world per assessor: that assessor's grades wherever they
        graded, the others' median elsewhere, the unjudged documents free) and `assessor_worlds_agree`: in how
        many of them the pair's aggregate difference interval lies on the side of its direction (the decided one,
        else the sign of the mean difference). A pair decided under `set` or `range` agrees in every world."""
        keys = PAIR_STATISTIC
        sample = paired.select(*keys, "query_id")
        agree: dict[tuple[object, ...], int] = {}
        for name in self.assessors:
            world = self.spec.with_options(assessor_model=f"single:{name}")
            ranked, judgment_rows = self.ranked(world)
            intervals, _ = self.intervals(ranked, judgment_rows, world, every_query=True)
            if intervals is None:
                continue
            valued = valued_queries(judgment_rows, world).collect()
            in_world = (
                sample.join(intervals.collect().select(*keys, "query_id", "difference_min", "difference_max"),
                            on=[*keys, "query_id"], how="left", nulls_equal=True)
                .join(valued, on=["query_id", "measure"], how="left")
                .with_columns(_counted=pl.when(pl.col("valued").fill_null(False)).then(0.0),
                              weight=_query_weight(spec))
            )
            may_join = pl.col("_counted").is_null() & pl.col("difference_min").is_not_null()
            low, high = aggregate_interval("difference_min", "difference_max", "_counted", pl.col("weight"), may_join)
            for reference, run, measure, cutoff, lowest, highest in in_world.group_by(keys).agg(
                low=low, high=high
            ).iter_rows():
                agree[(name, reference, run, measure, cutoff)] = decided_direction(lowest, highest)
        for row in rows:
            direction = row["decided_direction"] or (
                None if row["mean_difference"] is None or row["mean_difference"] == 0
                else "run" if row["mean_difference"] > 0 else "baseline")
            found = [agree.get((name, row["baseline"], row["run"], row["measure"], row["cutoff"]))
                     for name in self.assessors]
            row["assessor_worlds"] = len(self.assessors)
            row["assessor_worlds_agree"] = sum(1 for d in found if d is not None and d == direction)
        return rows


def _every_query_ndcg(
    ranked: pl.LazyFrame, judgment_rows: pl.LazyFrame, spec: EvaluationSpec, pairs: pl.LazyFrame,
    scale: Sequence[int],
) -> pl.LazyFrame:
    """nDCG's paired intervals of every query of the pairs, those where nothing is open included."""
    from judged.transforms.paired_intervals import (
        DIFFERENCE_INPUTS, DIFFERENCE_STRUCT, PAIR_KEYS, differences_of_worlds, pair_worlds,
    )

    zero = spec.no_relevant == "zero"
    return (
        pair_worlds(ranked, judgment_rows, spec, pairs, scale, every_query=True)
        .with_columns(difference=pl.struct(DIFFERENCE_INPUTS).map_batches(
            lambda batch: differences_of_worlds(batch, zero), return_dtype=DIFFERENCE_STRUCT))
        .unnest("difference")
        .select(*PAIR_KEYS, pl.lit("nDCG").alias("measure"), "difference_min", "difference_max",
                "difference_kind", n_unjudged=pl.lit(None, pl.Int64))
    )


def _tukey_p_values(
    frames: list[tuple[str, pl.LazyFrame]], settings: ComparisonSettings
) -> dict[tuple[str, str, str, int | None], float]:
    """The randomised Tukey HSD p-value of every two runs (both orders), per measure and cutoff: the test is
    family-wise over all pairs of the runs, whichever pairs the comparison shows."""
    names = [name for name, _ in frames]
    matrix = sample_matrix(frames, settings.query_set).collect()
    p_values: dict[tuple[str, str, str, int | None], float] = {}
    for (measure, cutoff), block in matrix.group_by(["measure", "cutoff"]):
        if block.height == 0:
            continue
        p = randomised_tukey_hsd(block.select(names).to_numpy(), settings.permutations, settings.seed)
        for i, first in enumerate(names):
            for j, second in enumerate(names):
                if i != j:
                    p_values[(first, second, measure, cutoff)] = float(p[i, j])
    return p_values


# -- direct comparison (no warehouse) -----------------------------------------------------------------------------


def compare(
    qrels: str | Path,
    runs: Sequence[str | Path],
    spec: EvaluationSpec | None = None,
    settings: ComparisonSettings | None = None,
    baseline: str | None = None,
) -> ComparisonResult:
    """Evaluate each run against the judgments under one spec (default: the `judged` preset) and compare them:
    the Python API of `judged compare QRELS RUN_A RUN_B ...` (no warehouse, no Prefect)."""
    return compare_files(qrels, runs, spec or EvaluationSpec(), settings or ComparisonSettings(), baseline)


def compare_files(
    qrels: str | Path, runs: Sequence[str | Path], spec: EvaluationSpec, settings: ComparisonSettings,
    baseline: str | None, hashes: dict | None = None,
) -> ComparisonResult:
    return compare_evaluations(evaluate_files(qrels, runs, spec, hashes), settings, baseline)


def evaluate_files(
    qrels: str | Path, runs: Sequence[str | Path], spec: EvaluationSpec, hashes: dict | None = None
) -> list[ComparedEvaluation]:
    """Each run (a file, or a stored run's folder) evaluated directly against the judgments under the spec."""
    hashes = hashes or {}
    judgments = load_table(Path(qrels), JUDGMENT_SET.name, hashes=hashes.get(Path(qrels)))
    label = judgments_label(getattr(judgments.metadata, "name", ""), getattr(judgments.metadata, "version", ""))
    evaluations = []
    for run in map(Path, runs):
        if run.is_dir():
            stored = open_stored(run, RUN.name)
            result = evaluate(stored, judgments, spec)
            run_identity = {"id": stored.table_id, "source": str(run),
                            "source_sha256": stored.record["source_sha256"]}
        else:
            table = load_table(run, RUN.name, hashes=hashes.get(run))
            result = evaluate(table, judgments, spec)
            run_identity = {"id": table.table_id, "source": str(run), "source_sha256": table.source_sha256}
        inputs = {
            "run": run_identity,
            "judgments": {"id": judgments.table_id, "source": str(qrels), "source_sha256": judgments.source_sha256,
                          "metadata": judgments.metadata.model_dump(mode="json")},
            "spec_hash": spec.spec_hash, "label": spec.full_label(),
        }
        evaluations.append(from_result(result, judgments.table_id, label, inputs,
                                       (stored if run.is_dir() else table, judgments)))
    return evaluations


# -- stored comparisons -------------------------------------------------------------------------------------------


def comparison_record(warehouse: Store, identifier: str) -> Path:
    return warehouse.record_path(COMPARISON, identifier)


def store_comparison(warehouse: Store, result: ComparisonResult, flow_run_id: str | None = None) -> bool:
    """Write the per-query differences, the statistics, then the record that makes both visible. False when the
    comparison is already stored (same id: same evaluations, baseline, settings and implementation)."""
    record_path = comparison_record(warehouse, result.comparison_id)
    if record_path.exists():
        return False
    provenance = canonical_json(result.provenance(flow_run_id))
    first = result.evaluations[0]
    record = pl.DataFrame(
        [{
            "comparison_id": result.comparison_id,
            "evaluation_ids": [e.evaluation_id for e in result.evaluations],
            "run_names": [e.run_name for e in result.evaluations],
            "baseline": result.baseline,
            "judgment_set_id": first.judgment_set_id,
            "spec_hash": first.spec.spec_hash,
            "label": first.spec.full_label(),
            "settings_json": result.settings.canonical_json(),
            "implementation_version": implementation_version(),
            "implementation_commit": implementation_commit(),
            "created_at": now_utc(),
            "notes": list(result.notes),
            "provenance_json": provenance,
        }],
        schema=COMPARISON.record.schema,
    )
    # Checked whole before anything is written, as an evaluation is.
    parts = ((result.per_query, COMPARISON_PER_QUERY_FILES), (result.pairs, COMPARISONS_FILES))
    for rows, table in parts:
        table.contract.validate(rows)
    COMPARISON.record.contract.validate(record)
    warehouse.ensure()
    metadata = {"judged.provenance": provenance}
    folder = result.comparison_id
    for rows, table in parts:
        write_parquet_atomically(rows, table.path(warehouse.root, folder) / SINGLE_PART,
                                 metadata | {"judged.table": table.name}, warehouse.root)
    write_parquet_atomically(record, record_path, metadata | {"judged.table": COMPARISON.record.name}, warehouse.root)
    return True


def load_comparison(warehouse: Store, identifier: str) -> ComparisonResult:
    """A stored comparison, with its evaluations read back from the warehouse."""
    record_path = comparison_record(warehouse, identifier)
    if not record_path.exists():
        raise InputError(str(warehouse.root), f"no comparison with id {identifier} in the warehouse")
    record = pl.read_parquet(record_path).row(0, named=True)
    pairs = pl.read_parquet(COMPARISONS_FILES.path(warehouse.root, identifier) / SINGLE_PART)
    per_query = pl.read_parquet(COMPARISON_PER_QUERY_FILES.path(warehouse.root, identifier) / SINGLE_PART)
    return ComparisonResult(
        comparison_id=identifier,
        baseline=record["baseline"],
        settings=ComparisonSettings.model_validate_json(record["settings_json"]),
        evaluations=tuple(from_warehouse(warehouse, e) for e in record["evaluation_ids"]),
        pairs=pairs,
        per_query=per_query,
        notes=tuple(record["notes"]),
    )


def is_comparison(warehouse: Store, identifier: str) -> bool:
    return comparison_record(warehouse, identifier).exists()


def rebase_basis(warehouse: Store, evaluation_ids: Sequence[str], spec: EvaluationSpec | None
                 ) -> tuple[str, list[str], EvaluationSpec]:
    """The one basis `--rebase` re-evaluates on: the newest judgment version (the latest ingested set with the name
    of the evaluations' most recently ingested judgment set), the given spec or else the first evaluation's, and
    the run of each evaluation."""
    records = [warehouse.load_evaluation(e)[0] for e in evaluation_ids]
    sets = [warehouse.record(JUDGMENT_SET, r["judgment_set_id"]) for r in records]
    newest = max(sets, key=lambda s: s["ingested_at"])
    judgment_set_id = warehouse.resolve_judgment_set(newest["name"]) if newest["name"] else newest["judgment_set_id"]
    chosen = spec or EvaluationSpec.from_canonical_json(records[0]["spec_json"])
    return judgment_set_id, [r["run_id"] for r in records], chosen
