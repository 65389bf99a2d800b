"""The judging loop's I/O: judgment versions that grow (`ingest-judgments --extends`) and judging worklists.

Belongs here: reading the parent judgment set, the answers, the stored runs; checking answers against the parent;
storing the new version with its lineage and the worklist with its provenance; writing the assessor file. The
ranking itself is transforms/worklist.py; these are plain functions (the flows in flows/pipeline/flows.py wrap them).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from judged.flows.engine.evaluate import grade_scale, ranked_rows, whole_judgment_rows
from judged.flows.store.hashing import known_hashes
from judged.flows.store.readers import LoadedTable, Table, load_table
from judged.flows.engine.versions import implementation_version
from judged.flows.report.wording import counted, distinct_names
from judged.flows.store.kinds import JUDGMENT_SET, LINEAGE_FILES, RUN, WORKLIST
from judged.flows.store.warehouse import StoreReport, Store, now_utc, write_parquet_atomically
from judged.schemas.fields import PAIR
from judged.schemas.measures import NDCG
from judged.schemas.provenance import METHOD_VERSION, JudgmentSetMetadata
from judged.schemas.spec import EvaluationSpec, SpecError
from judged.transforms.errors import InputError, UsageError
from judged.transforms.ranking import candidate_rows
from judged.transforms.worklist import (
    adjudication_worklist, grade_counts, judging_worklist, pairs_worklist, smoothed_prior, weights_of_scored,
)


# -- judgment versions that grow ----------------------------------------------------------------------------------


def resolve_parent(warehouse: Store, reference: str) -> str:
    """`NAME` (its newest version), `NAME@VERSION`, or a judgment set id; an unknown one is an InputError."""
    name, at, version = reference.partition("@")
    if not at:
        return warehouse.resolve_judgment_set(reference)
    sets = warehouse.judgment_sets().filter((pl.col("name") == name) & (pl.col("version") == version))
    if sets.height == 0:
        known = warehouse.judgment_sets().filter(pl.col("name") == name)["version"].to_list()
        detail = f" (known versions: {', '.join(known)})" if known else ""
        raise InputError(str(warehouse.root), f"no judgment set {name!r} with version {version!r}{detail}")
    if sets.height > 1:  # stored before labels were unique: which one is meant is for the user to say
        raise InputError(reference, f"{sets.height} judgment sets carry this label "
                                    f"({', '.join(sets['judgment_set_id'])}): give the id of the one meant")
    return str(sets["judgment_set_id"][0])


@dataclass(frozen=True)
class ExtensionReport:
    store: StoreReport
    parent_id: str
    n_added: int
    n_revised: int
    n_confirmed: int


def extend_judgments(
    warehouse: Store,
    answers_path: str,
    parent_reference: str,
    version: str,
    revise: bool = False,
    assessors: str | None = None,
    worklist_id: str | None = None,
    adjudicator: str | None = None,
) -> ExtensionReport:
    """A new version of a stored judgment set: the parent's judgments plus the answers (TREC qrels, .gz or
    Parquet), stored content-addressed with its lineage. A new grade for a pair the parent judged is an error
    unless `revise` (then the answer replaces it and counts as a revision); nothing is written on any error.

    `adjudicator`: the answers are that adjudicator's grades of a set that names its assessors (kind `adjudicator`
    in the new version's metadata): kept as rows of their own beside the assessors' rows, which stay as they are;
    added, revised and confirmed then count against the adjudicator's own earlier grades. Under every assessor
    model an adjudicator's grade is the pair's (transforms/assessors.py)."""
    parent_id = resolve_parent(warehouse, parent_reference)
    parent_record = warehouse.record(JUDGMENT_SET, parent_id)
    parent = warehouse.load_stored(JUDGMENT_SET, parent_id)
    parent_meta = parent.metadata
    if not isinstance(parent_meta, JudgmentSetMetadata):
        raise InputError(str(warehouse.root), f"{parent_id} is not a judgment set")
    if not version:
        raise InputError("--version", "a new version needs a version label")
    if version == parent_meta.version:
        raise InputError("--version", f"{version!r} is the parent's own version label; give the new version its own")
    if worklist_id is not None and not warehouse.record_path(WORKLIST, worklist_id).exists():
        raise InputError("--worklist", f"no worklist with id {worklist_id!r} in {warehouse.root} (see the view "
                                       "`worklists`)")
    answers = load_table(answers_path, JUDGMENT_SET.name, JudgmentSetMetadata(unresolved_token=parent_meta.unresolved_token))
    answer_rows = answers.frame
    parent_rows = parent.frame
    if "assessor" in answer_rows.columns:
        raise UsageError("--extends", f"{answers_path} names its assessors: answers are one assessor's (an "
                                      "adjudicator's: --adjudicator NAME); ingest a set of several whole")
    if adjudicator is not None:
        parent_rows = _adjudicated_parent(parent_rows, parent_meta, parent_id, adjudicator)
        answer_rows = answer_rows.with_columns(assessor=pl.lit(adjudicator, pl.String))
    elif "assessor" in parent_rows.columns:
        # Which of several assessors a new grade belongs to, and how it weighs against the others', only an
        # adjudicator says.
        raise UsageError("--extends", f"{parent_id} names its assessors: its answers are an adjudicator's; give "
                                      "--adjudicator NAME (or ingest the new set whole, one file per assessor)")
    _require_declared_grades(answer_rows, parent_meta, answers_path)
    repeated = answer_rows.filter(pl.struct(PAIR).is_duplicated()).sort("source_line")
    if repeated.height:
        row = repeated.row(0, named=True)
        raise InputError(answers_path, f"(query {row['query_id']!r}, document {row['doc_id']!r}) is answered twice",
                         row["source_line"])
    # Under adjudication the answers replace, confirm or add to the adjudicator's own rows only.
    own = parent_rows.filter(pl.col("assessor") == adjudicator) if adjudicator is not None else parent_rows
    compared = answer_rows.join(
        own.select(*PAIR, parent_relevance="relevance"), on=PAIR, how="left", maintain_order="left"
    )
    was_graded = pl.col("parent_relevance").is_not_null()
    changed = compared.filter(was_graded & (pl.col("relevance").ne_missing(pl.col("parent_relevance"))))
    if changed.height and not revise:
        row = changed.sort("source_line").row(0, named=True)
        raise InputError(
            answers_path,
            f"(query {row['query_id']!r}, document {row['doc_id']!r}) is graded {row['parent_relevance']} in "
            f"{parent_record['name']}@{parent_record['version']} and {row['relevance']} here "
            f"({counted(changed.height, 'such pair')}); give --revise to record them as revisions",
            row["source_line"],
        )
    n_confirmed = compared.filter(was_graded & (pl.col("relevance") == pl.col("parent_relevance"))).height
    n_added = compared.height - n_confirmed - changed.height
    kept = parent_rows.join(answer_rows.select(PAIR), on=PAIR, how="anti")
    if adjudicator is not None:  # the other assessors' rows of the answered pairs stay
        kept = pl.concat([parent_rows.filter(pl.col("assessor").ne_missing(adjudicator)),
                          kept.filter(pl.col("assessor") == adjudicator)])
    combined = pl.concat(
        [kept, answer_rows.with_columns(source_line=pl.col("source_line") + parent_rows.height)],
        how="diagonal_relaxed",
    ).sort([*PAIR, "assessor"] if adjudicator is not None else PAIR)
    described = parent_meta.with_assessors(description=assessors) if assessors else parent_meta
    if adjudicator is not None:
        described = described.with_assessors(kinds={**described.assessor_kinds, adjudicator: "adjudicator"})
    metadata = described.model_copy(update={"version": version, "source": answers_path})
    hashed = [*PAIR, "assessor", "relevance"] if adjudicator is not None else [*PAIR, "relevance"]
    content = hashlib.sha256(combined.select(hashed).write_csv().encode()).hexdigest()
    source_sha = answers.source_sha256
    table = LoadedTable(
        kind=JUDGMENT_SET.name,
        scan=combined.lazy(),
        source=answers_path,
        hashes=known_hashes(source_sha, content),
        source_format=answers.source_format,
        metadata=metadata,
        in_memory=True,
    )
    lineage = pl.DataFrame(
        [{
            "judgment_set_id": table.table_id,
            "parent_id": parent_id,
            "name": metadata.name,
            "version": version,
            "parent_version": parent_meta.version,
            "n_added": n_added,
            "n_revised": changed.height,
            "n_confirmed": n_confirmed,
            "assessors": assessors or "",  # not stated when --assessors is not given
            "judged_at": now_utc(),
            "worklist_id": worklist_id,
            "source": answers_path,
            "source_sha256": source_sha,
        }],
        schema=LINEAGE_FILES.schema,
    )
    LINEAGE_FILES.contract.validate(lineage)
    if table.table_id == parent_id or table.table_id in ancestors(warehouse, parent_id):
        raise InputError("--extends", f"{metadata.name}@{version} would be the child of its own descendant "
                                      f"{parent_record['name']}@{parent_record['version']}: a version cannot extend "
                                      "itself")
    if warehouse.record_path(JUDGMENT_SET, table.table_id).exists():  # a rerun: the same version, already stored
        report = StoreReport(JUDGMENT_SET.name, table.table_id, False, int(table.counts["n_rows"]))
        return ExtensionReport(report, parent_id, n_added, changed.height, n_confirmed)
    warehouse.require_free_version(metadata, table.table_id)
    # The lineage first: the view shows it only once the new version's record (written last) exists.
    write_parquet_atomically(
        lineage,
        LINEAGE_FILES.path(warehouse.root, table.table_id),
        {"judged.table": LINEAGE_FILES.name},
        warehouse.root,
    )
    report = warehouse.store_table(table)
    return ExtensionReport(report, parent_id, n_added, changed.height, n_confirmed)


def _adjudicated_parent(
    rows: pl.DataFrame, metadata: JudgmentSetMetadata, parent_id: str, adjudicator: str
) -> pl.DataFrame:
    """The parent's rows, checked to take an adjudicator's answers: the parent names its assessors, and
    `adjudicator` is a valid name that is none of its other assessors (an adjudicator settles their disputes; it
    does not join them)."""
    from judged.schemas.provenance import assessor_name_problem

    if problem := assessor_name_problem(adjudicator):
        raise UsageError("--adjudicator", problem)
    if "assessor" not in rows.columns or rows["assessor"].is_null().all():
        raise UsageError("--adjudicator", f"{parent_id} names no assessors: there is no dispute to adjudicate; "
                                          "extend it without --adjudicator")
    kind = metadata.assessor_kinds.get(adjudicator)
    if kind not in (None, "adjudicator") or (kind is None and adjudicator in rows["assessor"].to_list()):
        raise UsageError("--adjudicator", f"{adjudicator!r} is one of the assessors of {parent_id} "
                                          f"(kind {kind or 'not declared'}): an adjudicator settles their disputes, "
                                          "give another name")
    return rows


def _require_declared_grades(answers: pl.DataFrame, parent: JudgmentSetMetadata, answers_path: str) -> None:
    """An InputError naming the first answer whose grade is off the parent's declared scale (when it declares one)."""
    if not parent.grade_scale:
        return
    grades = [grade for grade, _ in parent.grade_scale]
    off_scale = answers.filter(pl.col("relevance").is_not_null() & ~pl.col("relevance").is_in(grades))
    if off_scale.height:
        row = off_scale.sort("source_line").row(0, named=True)
        raise InputError(answers_path, f"grade {row['relevance']} is not on the declared scale of "
                                       f"{parent.name}@{parent.version} ({', '.join(map(str, grades))})",
                         row["source_line"])


def ancestors(warehouse: Store, judgment_set_id: str) -> list[str]:
    """The parent, grandparent, ... of a judgment set, from the lineage (stops at a repeat, so a cycle ends)."""
    found: list[str] = []
    current = judgment_set_id
    while (path := LINEAGE_FILES.path(warehouse.root, current)).exists():
        parent = pl.read_parquet(path)["parent_id"][0]
        if parent is None or parent in found or parent == judgment_set_id:
            break
        found.append(parent)
        current = parent
    return found


# -- worklists ----------------------------------------------------------------------------------------------------


def read_topics(path: Path) -> pl.DataFrame:
    """TREC topics as `query_id <tab> text` lines (the DL tracks' format)."""
    if not path.is_file():
        raise InputError(str(path), "no such file")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        query_id, tab, text = line.partition("\t")
        if not tab:
            raise InputError(str(path), "expected 'query_id<TAB>text'", number)
        rows.append((query_id.strip(), text.strip()))
    return pl.DataFrame(rows, schema={"query_id": pl.String, "query_text": pl.String}, orient="row")


def chosen_runs(warehouse: Store, evaluations: list[str], runs: list[str]) -> dict[str, str]:
    """Run name -> run id: those of the given evaluations, every run named (tag, system or id), or every stored run;
    runs that share a name are each kept, told apart by their id's first characters as `compare` tells them."""
    if evaluations and runs:
        raise UsageError("--evaluations", "give --evaluations or --runs, not both")
    records = {}
    for path in warehouse.record_files(RUN):
        record = pl.read_parquet(path).row(0, named=True)
        records[record[RUN.id_column]] = record
    named: dict[str, str] = {}  # run id -> its name
    for evaluation_id in evaluations:
        record, _, _ = warehouse.load_evaluation(evaluation_id)
        named[record["run_id"]] = record["run_name"]
    for name in runs:
        matches = [r for r in records.values() if name in (r["run_id"], r["tag"], r["system"])]
        if not matches:
            raise InputError(str(warehouse.root), f"no stored run with id, tag or system {name!r}")
        named |= {r["run_id"]: r["tag"] or r["system"] or name for r in matches}
    if not evaluations and not runs:
        named = {run_id: (r["tag"] or r["system"] or run_id) for run_id, r in records.items()}
    if not named:
        raise InputError(str(warehouse.root), "no stored runs to rank documents from")
    return dict(zip(distinct_names(list(named.values()), list(named)), named, strict=True))


@dataclass(frozen=True)
class WorklistReport:
    worklist_id: str
    judgment_set_id: str
    rows: pl.DataFrame
    created: bool
    objective: str = "width"
    pairs: pl.DataFrame | None = None
    """Under the pairs and adjudicate objectives: each pair's state (`transforms.worklist.pair_states`, with
    `could_decide`)."""
    notes: tuple[str, ...] = ()

    def named_pairs(self) -> dict[str, list[str]]:
        """The pairs (`BASELINE:RUN`) decided now (`decided`) and those the listed judgments could decide at best
        (`could_decide`), in the pairs' order; empty without a paired objective (pairs, adjudicate)."""
        if self.pairs is None:
            return {"decided": [], "could_decide": []}
        named = self.pairs.select(pl.concat_str("baseline", pl.lit(":"), "run").alias("pair"), "decided",
                                  "could_decide")
        return {"decided": named.filter("decided")["pair"].to_list(),
                "could_decide": named.filter(pl.col("could_decide") & ~pl.col("decided"))["pair"].to_list()}

    def pairs_line(self, most_named: int = 6) -> str | None:
        """How many pairs are decided now, and how many the listed judgments could decide at best, each naming its
        pairs (the first `most_named`; --format json lists them all)."""
        if self.pairs is None:
            return None
        named = self.named_pairs()
        verb = "adjudicating" if self.objective == "adjudicate" else "judging"

        def listed(pairs: list[str]) -> str:
            if not pairs:
                return ""
            more = len(pairs) - most_named
            return f" ({', '.join(pairs[:most_named])}{f' and {more} more' if more > 0 else ''})"

        return (f"{len(named['decided'])} of {counted(self.pairs.height, 'pair')} of runs decided now"
                f"{listed(named['decided'])}; {verb} the listed documents could decide "
                f"{len(named['could_decide'])} more at best{listed(named['could_decide'])} (an estimate: "
                "docs/method.md, \"Worklist objectives\")")


OBJECTIVES = ("adjudicate", "pairs", "width")
PAIRED_OBJECTIVES = ("adjudicate", "pairs")


def worklist_spec(spec: EvaluationSpec) -> tuple[EvaluationSpec, tuple[tuple[str, float], ...]]:
    """The worklist's spec (one measure with an interval at its one cutoff k: nDCG@k as a cutoff gives it, or one
    measure M@k) and the query weights apart: they weigh the priorities, not a mean. A SpecError when the spec names
    anything else."""
    measures = spec.measure_list()
    k = measures[0].cutoff if len(measures) == 1 else None
    if k is None or measures[0].name == "Judged":
        named = ", ".join(measure.canonical for measure in measures)
        raise SpecError(f"a worklist narrows the interval of one measure at one cutoff k (nDCG@10, P@10, AP@10, ...), "
                        f"not of {named}: give one cutoff (--cutoff 10) or one measure (--measures P@10)")
    options = {"measures": (), "cutoffs": (k,)} if measures[0] == NDCG(cutoff=k) else {}
    return spec.with_options(**options, query_weights=(), aggregation="mean"), spec.query_weights


def parse_pairs(text: str, names: list[str]) -> list[tuple[str, str]]:
    """`A:B,C:D` -> [(A, B), (C, D)]: the baseline, then the run, each one of `names`."""
    pairs = []
    for item in text.split(","):
        baseline, colon, run = item.strip().partition(":")
        if not colon or not baseline or not run or baseline == run:
            raise UsageError("--pairs", f"{item.strip()!r}: expected BASELINE:RUN, two different runs")
        for name in (baseline, run):
            if name not in names:
                raise UsageError("--pairs", f"{name!r} is none of the runs ranked: {', '.join(names)}")
        pairs.append((baseline, run))
    return list(dict.fromkeys(pairs))


def make_worklist(
    warehouse: Store,
    judgments_reference: str,
    spec: EvaluationSpec,
    budget: int,
    evaluations: list[str],
    runs: list[str],
    query_weights: tuple[tuple[str, float], ...] = (),
    topics: Path | None = None,
    objective: str | None = None,
    pairs: str | None = None,
    relative: bool = False,
) -> WorklistReport:
    """Rank the unjudged pairs of the chosen runs' top k (the spec's one cutoff) and store the worklist.
    `objective`: `pairs` (the default with two or more runs: the undecided pairs of runs, all of them or those
    `pairs` lists as `A:B,...`) or `width` (the per-run intervals); under `pairs`, when every pair is decided the
    worklist falls back to `width` and says so."""
    if budget <= 0:
        raise InputError("--budget", f"the budget must be a positive number of judgments, not {budget}")
    judgment_set_id = resolve_parent(warehouse, judgments_reference)
    run_ids = chosen_runs(warehouse, evaluations, runs)
    names = sorted(run_ids)
    tables = {name: warehouse.stored(RUN, run_ids[name]) for name in names}
    judgments_table = warehouse.stored(JUDGMENT_SET, judgment_set_id)
    weights = pl.LazyFrame(list(query_weights), schema={"query_id": pl.String, "weight": pl.Float64}, orient="row")
    rows, states, notes, objective, chosen_pairs = rank_for_judging(
        tables, judgments_table, spec, budget, objective, pairs, relative, weights if query_weights else None
    )
    provenance = {
        "objective": objective,
        **({"pairs": [list(pair) for pair in chosen_pairs], "relative": relative} if objective == "pairs" else {}),
        **({"pairs": [list(pair) for pair in chosen_pairs]} if objective == "adjudicate" else {}),
        "judgment_set_id": judgment_set_id,
        "runs": dict(sorted(run_ids.items())),
        "evaluations": sorted(evaluations),
        "spec": json.loads(spec.canonical_json()),
        "budget": budget,
        "query_weights": [list(pair) for pair in query_weights],
        "implementation_version": implementation_version(),
        "method_version": METHOD_VERSION,
    }
    worklist_id = hashlib.sha256(json.dumps(provenance, sort_keys=True).encode()).hexdigest()[:32]
    texts = read_topics(topics) if topics is not None else pl.DataFrame(schema={"query_id": pl.String, "query_text": pl.String})
    stored = (
        rows.join(texts, on="query_id", how="left", maintain_order="left")
        .with_columns(
            worklist_id=pl.lit(worklist_id),
            judgment_set_id=pl.lit(judgment_set_id),
            cutoff=pl.lit(spec.cutoffs[0], pl.Int32),
            budget=pl.lit(budget, pl.Int64),
            spec_hash=pl.lit(spec.spec_hash),
            created_at=pl.lit(now_utc()),
        )
        .select(list(WORKLIST.record.schema))
        .cast(WORKLIST.record.schema)
    )
    WORKLIST.record.contract.validate(stored)
    warehouse.ensure()
    path = warehouse.record_path(WORKLIST, worklist_id)
    created = write_parquet_atomically(
        stored, path,
        {"judged.table": WORKLIST.record.name, "judged.provenance": json.dumps(provenance, sort_keys=True)},
        warehouse.root,
    )
    if not created:  # the same worklist, stored before: its rows, with the query text of the topics given now
        stored = pl.read_parquet(path)
        if topics is not None:
            stored = stored.join(texts.rename({"query_text": "given"}), on="query_id", how="left",
                                 maintain_order="left").with_columns(
                query_text=pl.coalesce("given", "query_text")).drop("given")
    return WorklistReport(worklist_id, judgment_set_id, stored, created, objective, states, notes)


def rank_for_judging(
    runs: dict[str, Table],
    judgments: Table,
    spec: EvaluationSpec,
    budget: int,
    objective: str | None = None,
    pairs: str | None = None,
    relative: bool = False,
    query_weights: pl.LazyFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame | None, tuple[str, ...], str, list[tuple[str, str]]]:
    """The worklist's rows (contract `WORKLIST`) for `runs` by name, under `objective` (None: `pairs` with two or
    more runs and nDCG, else `width`), and under the pairs objective the pairs' state, the notes (a fall back to `width`
    when every pair is decided), the objective taken and the pairs chosen (`pairs`: `A:B,...`, default all)."""
    if objective is not None and objective not in OBJECTIVES:
        raise UsageError("--objective", f"{objective!r}: expected adjudicate, pairs or width")
    names = sorted(runs)
    ndcg = all(m.name == "nDCG" for m in spec.measure_list())
    if objective is None:
        objective = "pairs" if len(names) >= 2 and ndcg else "width"
    if objective in PAIRED_OBJECTIVES and len(names) < 2:
        raise UsageError("--objective", f"the {objective} objective needs two or more runs")
    if objective in PAIRED_OBJECTIVES and not ndcg:
        raise UsageError("--objective", f"the {objective} objective reads nDCG@k's paired difference intervals: "
                                        "give nDCG@k, or --objective width for another measure")
    if objective == "adjudicate" and spec.assessor_model not in ("set", "range"):
        raise UsageError("--objective", "the adjudicate objective settles the disputes an assessor model of set or "
                                        "range leaves open: give --assessor-model set (or range)")
    if pairs is not None and objective not in PAIRED_OBJECTIVES:
        raise UsageError("--pairs", "--pairs chooses the pairs of the pairs and adjudicate objectives: leave out "
                                    "--objective width")
    if relative and objective == "adjudicate":
        raise UsageError("--relative", "--relative weighs the pairs objective's pairs; the adjudicate objective "
                                       "weighs each pair by what it needs to be decided: leave it out")
    chosen_pairs = parse_pairs(pairs, names) if pairs is not None else list(itertools.combinations(names, 2))
    judgment_rows = whole_judgment_rows(judgments, spec)
    if query_weights is not None:
        _require_weight(weights_of_scored(judgment_rows, spec, query_weights).collect())
    grades = grade_scale(judgments)
    states, notes = None, ()
    if objective == "adjudicate":
        ranked = pl.concat([
            ranked_rows(runs[name], judgments, spec).with_columns(run=pl.lit(name)) for name in names
        ], how="diagonal_relaxed")
        pair_frame = pl.LazyFrame(chosen_pairs, schema=["baseline", "run"], orient="row")
        rows, states = adjudication_worklist(ranked, judgment_rows, spec, grades, pair_frame, budget, query_weights)
        if bool(states["decided"].all()):
            notes = (f"every one of the {counted(states.height, 'pair')} of runs is decided: no dispute needs "
                     "adjudicating",)
        elif rows.height == 0:
            notes = ("no disputed judgment moves an undecided pair: adjudication cannot decide them (the unjudged "
                     "documents keep them open)",)
        return rows, states, notes, objective, chosen_pairs
    if objective == "pairs":
        ranked = pl.concat([
            ranked_rows(runs[name], judgments, spec).with_columns(run=pl.lit(name)) for name in names
        ], how="diagonal_relaxed")
        pair_frame = pl.LazyFrame(chosen_pairs, schema=["baseline", "run"], orient="row")
        rows, states = pairs_worklist(ranked, judgment_rows, spec, grades, pair_frame, budget, query_weights, relative)
        if bool(states["decided"].all()):
            notes = (f"every one of the {counted(states.height, 'pair')} of runs is decided: the worklist falls "
                     "back to the width objective (per-run intervals)",)
    if objective == "width" or notes:
        # Collected once: the worklist's plan reads the candidates in several branches, each of which would
        # otherwise scan the stored runs and pick their candidates again.
        candidates = pl.concat([candidate_rows(runs[name].load().scan, spec).with_columns(evaluation=pl.lit(name))
                                for name in names]).collect().lazy()
        prior = smoothed_prior(grade_counts(judgment_rows).collect(), grades)
        rows = judging_worklist(candidates, judgment_rows, spec, grades, prior, budget, query_weights).collect()
    return rows, states, notes, objective, chosen_pairs


def _require_weight(weights: pl.DataFrame) -> None:
    """An InputError when the query weights of the scored queries (`query_id`, `weight`) sum to 0: every priority
    would be 0, and the list no more than the runs' order."""
    if weights.height and not weights["weight"].sum() > 0:
        raise InputError("query weights", f"the weights of the {counted(weights.height, 'scored query')} sum to 0: "
                                          "no judgment can move their weighted mean, so nothing can be ranked; give "
                                          "some query a weight above 0")


def assessor_file(report: WorklistReport, output_format: str) -> str:
    """The worklist for assessors: TREC qrels lines with the grade left empty (`query_id 0 doc_id `), or CSV with
    an empty `grade` column, in worklist order; or one JSON object with the rows and, under the pairs objective,
    how many pairs are decided now and could be decided by the listed judgments at best, and each pair's state."""
    rows = report.rows
    if output_format == "json":
        states = report.pairs
        return json.dumps({
            "worklist_id": report.worklist_id,
            "judgment_set_id": report.judgment_set_id,
            "objective": report.objective,
            "notes": list(report.notes),
            **({} if states is None else {
                "pairs": states.height,
                "pairs_decided": int(states["decided"].sum()),
                "pairs_could_decide": int(states["could_decide"].sum()),
                "decided_pairs": report.named_pairs()["decided"],
                "could_decide_pairs": report.named_pairs()["could_decide"],
                "pair_states": states.to_dicts(),
            }),
            "rows": rows.select(
                "position", "query_id", "doc_id", "priority", "width_removed", "best_rank", "evaluations",
                "n_evaluations",
            ).to_dicts(),
        }, indent=1, default=str) + "\n"
    if output_format == "qrels":
        return "".join(f"{q} 0 {d} \n" for q, d in zip(rows["query_id"], rows["doc_id"], strict=True))
    table = rows.select(
        "position", "query_id", "doc_id", "query_text", "priority", "best_rank",
        pl.col("evaluations").list.join(" "), grade=pl.lit(""),
    )
    return table.write_csv()
