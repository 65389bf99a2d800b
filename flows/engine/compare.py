"""Comparing evaluations of runs on one judgment basis: the orchestration-free sequence and the comparison store.

Belongs here: gathering the evaluations to compare (evaluated directly, or stored), refusing those whose judgment
set or spec differ, the loop over pairs, measures and cutoffs that calls the pure tests of `transforms/compare.py`,
the correction over the whole family, the content-derived comparison id, and writing and reading stored
comparisons. The Prefect flow around it (`compare_flow`) is in `flows/pipeline/flows.py`; printing is in
`flows/report/comparison.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

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
from judged.flows.engine.versions import implementation_commit, implementation_version, library_versions
from judged.schemas.provenance import METHOD_VERSION, canonical_json, evaluation_id, is_older_method
from judged.schemas.spec import EvaluationSpec
from judged.transforms.binary_intervals import binary_difference_intervals, interval_measures
from judged.transforms.judging import ranked_and_judged, valued_queries
from judged.transforms.paired_intervals import (
    decided_direction, difference_intervals, documents_read_by_pair, with_difference_intervals,
)
from judged.transforms.summary import aggregate_interval
from judged.transforms.compare import (
    adjusted_p_values,
    bootstrap_interval,
    cohens_d_z,
    paired_per_query,
    paired_t_test,
    randomised_tukey_hsd,
    randomization_test,
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
    """The baseline (chosen by `choose_baseline`: the run named `baseline`, else by the rule there) against each
    other run, per measure and cutoff: the paired per-query table and the statistics, corrected over the whole
    family. The notes say which baseline was chosen and why."""
    check_basis(evaluations)
    names = _unique_names(evaluations)
    base_name, reason = choose_baseline(warehouse, names, baseline, listed)
    base_index = names.index(base_name)
    frames = [(name, with_measure(e.per_query.lazy(), e.spec)) for name, e in zip(names, evaluations, strict=True)]
    paired = paired_per_query(frames, base_name, settings.query_set)
    worlds = PairedWorlds.of(evaluations, names, base_name)
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
    tukey = _tukey_p_values(frames, base_name, settings) if len(frames) > 2 else {}
    keys = frames[base_index][1].select("measure", "cutoff").unique().sort("cutoff", "measure", nulls_last=True)
    measures = keys.collect().rows()
    ids = {name: e.evaluation_id for name, e in zip(names, evaluations, strict=True)}
    first_spec = evaluations[0].spec
    groups = {key: frame for key, frame in paired.group_by(["run", "measure", "cutoff"])}
    rows = []
    for name in names:
        if name == base_name:
            continue
        for measure, cutoff in measures:
            group = groups.get((name, measure, cutoff), paired.clear())
            rows.append({
                "baseline": base_name, "run": name, "baseline_evaluation_id": ids[base_name],
                "run_evaluation_id": ids[name], "measure": measure, "cutoff": cutoff,
                **_pair_statistics(group, settings, has_intervals, first_spec),
                "p_tukey_hsd": tukey.get((name, measure, cutoff)),
            })
    if worlds is not None and worlds.assessors:
        rows = worlds.with_assessor_worlds(rows, paired, first_spec)
    adjusted = adjusted_p_values([row["p_randomization"] for row in rows], settings.correction)
    identifier = comparison_id(
        [e.evaluation_id for e in evaluations], ids[base_name], settings, implementation_version()
    )
    first = evaluations[0]
    pairs = pl.DataFrame(
        [
            {**row, "comparison_id": identifier, "p_adjusted": p, "correction": settings.correction,
             "judgment_set_id": first.judgment_set_id, "spec_hash": first.spec.spec_hash,
             "query_set": settings.query_set, "effect_size_kind": "d_z", "seed": settings.seed,
             "permutations": settings.permutations, "bootstrap_resamples": settings.bootstrap_resamples,
             "confidence_level": settings.confidence_level, "tie_tolerance": settings.tie_tolerance}
            for row, p in zip(rows, adjusted, strict=True)
        ],
        schema=COMPARISONS_FILES.schema,
    )
    per_query = (
        paired.join(pl.DataFrame({"run": list(ids), "run_evaluation_id": list(ids.values())}), on="run", how="left")
        .with_columns(comparison_id=pl.lit(identifier), baseline_evaluation_id=pl.lit(ids[base_name]))
        .select(list(COMPARISON_PER_QUERY_FILES.schema))
        .cast(COMPARISON_PER_QUERY_FILES.schema)
    )
    notes = ((f"baseline: {base_name}, {reason}",) + (() if has_intervals else (NO_INTERVALS_NOTE,))
             + older_method_notes(evaluations))
    return ComparisonResult(identifier, base_name, settings, tuple(evaluations), pairs, per_query, notes)


@dataclass(frozen=True)
class PairedWorlds:
    """What a comparison's paired intervals read: every run's candidate rows, ranked once, to which each world of
    grades attaches its own judgments (the spec's assessor model's, and each single assessor's), the judgment set
    and the pairs (the baseline against each other run)."""

    spec: EvaluationSpec
    judgments: Table
    candidates: dict[str, pl.DataFrame]
    pairs: pl.LazyFrame
    scale: tuple[int, ...]
    assessors: tuple[str, ...]  # the set's assessors, when it records several

    @classmethod
    def of(cls, evaluations: Sequence[ComparedEvaluation], names: Sequence[str], base_name: str) -> PairedWorlds | None:
        """None where an evaluation's inputs are not at hand: the per-run intervals then bound the differences."""
        if any(e.inputs is None for e in evaluations):
            return None
        spec, judgments = evaluations[0].spec, evaluations[0].inputs[1]
        candidates = {name: run_candidates(e.inputs[0], judgments, spec)
                      for name, e in zip(names, evaluations, strict=True)}
        pairs = pl.LazyFrame({"baseline": base_name, "run": [name for name in names if name != base_name]})
        rows = judgments.load().scan
        assessors: tuple[str, ...] = ()
        if "assessor" in rows.collect_schema().names():
            found = rows.select(pl.col("assessor").drop_nulls().unique().sort()).collect()["assessor"].to_list()
            # An adjudicator is no world of its own: its grades settle the pairs it graded in every world.
            settling = adjudicators_of(judgments.metadata)
            found = [name for name in found if name not in settling]
            assessors = tuple(found) if len(found) > 1 else ()
        return cls(spec, judgments, candidates, pairs, grade_scale(judgments), assessors)

    def ranked(self, spec: EvaluationSpec) -> tuple[pl.LazyFrame, pl.LazyFrame]:
        """Every run's ranked-and-judged rows (with a `run` column) and the judgment rows, under `spec`'s grades."""
        judgment_rows = whole_judgment_rows(self.judgments, spec)
        ranked = pl.concat([
            ranked_and_judged(candidates.lazy(), judgment_rows, spec).with_columns(run=pl.lit(name))
            for name, candidates in self.candidates.items()
        ], how="diagonal_relaxed")
        return ranked, judgment_rows

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
        sample = paired.select("run", "measure", "cutoff", "query_id")
        agree: dict[tuple[object, ...], int] = {}
        for name in self.assessors:
            world = self.spec.with_options(assessor_model=f"single:{name}")
            ranked, judgment_rows = self.ranked(world)
            intervals, _ = self.intervals(ranked, judgment_rows, world, every_query=True)
            if intervals is None:
                continue
            valued = valued_queries(judgment_rows, world).collect()
            in_world = (
                sample.join(intervals.collect().select("run", "measure", "cutoff", "query_id", "difference_min",
                                                        "difference_max"),
                            on=["run", "measure", "cutoff", "query_id"], how="left", nulls_equal=True)
                .join(valued, on=["query_id", "measure"], how="left")
                .with_columns(_counted=pl.when(pl.col("valued").fill_null(False)).then(0.0),
                              weight=_query_weights(sample, spec))
            )
            may_join = pl.col("_counted").is_null() & pl.col("difference_min").is_not_null()
            low, high = aggregate_interval("difference_min", "difference_max", "_counted", pl.col("weight"), may_join)
            for run, measure, cutoff, lowest, highest in in_world.group_by("run", "measure", "cutoff").agg(
                low=low, high=high
            ).iter_rows():
                direction = decided_direction(lowest, highest)
                agree[(name, run, measure, cutoff)] = direction
        for row in rows:
            direction = row["decided_direction"] or (
                None if row["mean_difference"] is None or row["mean_difference"] == 0
                else "run" if row["mean_difference"] > 0 else "baseline")
            found = [agree.get((name, row["run"], row["measure"], row["cutoff"])) for name in self.assessors]
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


def _query_weights(group: pl.DataFrame, spec: EvaluationSpec) -> pl.Series:
    """Each query's weight under the spec's aggregation (1 under a plain mean, or where none is declared)."""
    if spec.aggregation != "weighted_mean":
        return pl.Series("weight", [1.0] * group.height, dtype=pl.Float64)
    declared = dict(spec.query_weights)
    return pl.Series("weight", [declared.get(q, 1.0) for q in group["query_id"].to_list()], dtype=pl.Float64)


def mean_difference_interval(group: pl.DataFrame, spec: EvaluationSpec) -> tuple[float | None, float | None]:
    """The interval of a pair's aggregate difference over every world (`transforms.summary.aggregate_interval`):
    the queries with a difference always count, with their ends; a query without one now (no relevant judgment)
    joins in the worlds that give it one. None when a query has no interval or no world has a positive weight."""
    if group.is_empty():
        return None, None
    may_join = pl.col("difference").is_null() & pl.col("difference_min").is_not_null()
    low, high = aggregate_interval("difference_min", "difference_max", "difference", pl.col("weight"), may_join)
    ends = group.with_columns(_query_weights(group, spec)).select(low=low, high=high).row(0)
    return ends[0], ends[1]


def _pair_statistics(
    group: pl.DataFrame, settings: ComparisonSettings, has_intervals: bool, spec: EvaluationSpec
) -> dict[str, object]:
    low, high = mean_difference_interval(group, spec)
    direction = decided_direction(low, high)
    everywhere = group  # the queries of every world: for the counts of what the intervals rest on
    group = group.filter(pl.col("difference").is_not_null())
    differences = group["difference"].to_numpy().astype(np.float64)
    t_test = paired_t_test(differences)
    randomization = randomization_test(differences, settings.permutations, settings.seed)
    ci_low, ci_high = bootstrap_interval(
        differences, settings.bootstrap_resamples, settings.confidence_level, settings.seed
    )
    wins, ties, losses = wins_ties_losses(differences, settings.tie_tolerance)
    n = group.height
    return {
        "n_queries": n,
        "baseline_mean": float(group["baseline_value"].mean()) if n else None,
        "run_mean": float(group["run_value"].mean()) if n else None,
        "mean_difference": float(differences.mean()) if n else None,
        "ci_low": ci_low, "ci_high": ci_high,
        "t_statistic": t_test.statistic, "p_t": t_test.p_value,
        "p_randomization": randomization.p_value, "randomization": randomization.method,
        "effect_size": cohens_d_z(differences),
        "wins": wins, "ties": ties, "losses": losses,
        "unresolved": int((group["robustness"] == "unresolved").sum()) if has_intervals else None,
        "mean_difference_min": low, "mean_difference_max": high,
        "decided": None if low is None else direction is not None, "decided_direction": direction,
        "unjudged_documents": None if everywhere["n_unjudged"].null_count() else int(everywhere["n_unjudged"].sum()),
        "open_queries": None if low is None else int(
            (everywhere["difference_max"] > everywhere["difference_min"]).sum()),
        **_disputed_counts(everywhere),
    }


def _disputed_counts(sample: pl.DataFrame) -> dict[str, int | None]:
    """Of a pair's queries whose difference is still open (its interval not one point): the disputed judgments
    (judged documents whose grade is a set) the measure reads there, and the queries holding one; null without
    them."""
    if "disputed_docs" not in sample.columns or not sample["disputed_docs"].list.len().sum():
        return {"disputed_documents": None, "disputed_queries": None}
    opened = sample.filter(pl.col("difference_max") > pl.col("difference_min"))
    counts = opened.select(pl.col("disputed_docs").list.len())
    return {"disputed_documents": int(counts.sum().item() or 0),
            "disputed_queries": int((counts.to_series() > 0).sum())}


def _tukey_p_values(
    frames: list[tuple[str, pl.LazyFrame]], base_name: str, settings: ComparisonSettings
) -> dict[tuple[str, str, int | None], float]:
    """The randomised Tukey HSD p-value of the baseline against each run, per measure and cutoff."""
    names = [name for name, _ in frames]
    matrix = sample_matrix(frames, settings.query_set).collect()
    p_values: dict[tuple[str, str, int | None], float] = {}
    for (measure, cutoff), block in matrix.group_by(["measure", "cutoff"]):
        if block.height == 0:
            continue
        p = randomised_tukey_hsd(block.select(names).to_numpy(), settings.permutations, settings.seed)
        base = names.index(base_name)
        for index, name in enumerate(names):
            if name != base_name:
                p_values[(name, measure, cutoff)] = float(p[base, index])
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
