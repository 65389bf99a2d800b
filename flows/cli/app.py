"""The `judged` commands but `compare` and `report` (flows/cli/compare.py), and `main`, the console script.

Belongs here: each command's arguments, calling the engine or the flows, printing, and turning every expected error
into one line on stderr and a non-zero exit. What the command modules share (the application, exit codes, failures,
the spec options, the guard against bare tracebacks) is flows/cli/common.py.
"""

from __future__ import annotations

import atexit
import gc
import os
import re
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from judged.flows.cli.common import (
    EXIT_INPUT,
    EXIT_NOT_RUNNING,
    EXIT_USAGE,
    AssessorKindOption,
    AssessorOption,
    ForceOption,
    GuardedGroup,
    SpecOptions,
    app,
    fail,
    failure,
    orchestrated,
    require_prefect_api,
    require_readable_warehouse,
    with_spec_options,
)
from judged.flows.report.wording import counted, rows_per_second
from judged.schemas.spec import WORKLIST_BUDGET, SpecError, build_spec, parse_positive_int
from judged.transforms.errors import InputError, UsageError

if TYPE_CHECKING:  # the flows import Prefect: only commands that run a flow load them
    from judged.flows.pipeline.nightly import NightlyReport
    from judged.flows.store.warehouse import StoreReport


# Taken by every command that reads qrels or runs from files (evaluate, ingest-run, ingest-judgments, nightly, serve).
AllowEmptyOption = Annotated[
    bool, typer.Option("--allow-empty", help="Accept an input without rows (an empty file, blank or comment lines "
                                             "only, a 0-row Parquet table) instead of refusing it.")
]


@app.command()
@with_spec_options(preset="judged")
def evaluate(
    context: typer.Context,
    qrels: Annotated[Path, typer.Argument(help="Judgments: TREC qrels `qid iter docid grade` (.gz ok) or Parquet; "
                                               "`-` reads standard input (as may one RUN instead).")],
    runs: Annotated[list[Path], typer.Argument(help="One or more runs: TREC `qid Q0 docid rank score tag`, Parquet, "
                                                     "or a stored run's folder (warehouse/run_rows/<run_id>, "
                                                     "evaluated shard by shard in bounded memory).")],
    output_format: Annotated[str, typer.Option("--format", help="table, json or trec (trec_eval -q lines).")] = "table",
    tie_warning_share: Annotated[
        str, typer.Option(metavar="SHARE", help="Warn when tie groups straddle a cutoff in more than this share of "
                                                "the scored queries, with the mean under every tie rule (1 = never).")
    ] = "0.1",
    warehouse: Annotated[
        Path | None,
        typer.Option(help="Go through the Prefect flow: ingest the inputs into this warehouse, store the results "
                          "with provenance (an evaluation already stored is reused). QRELS and RUN may then also be "
                          "warehouse ids (QRELS: or a judgment set name, meaning its latest version)."),
    ] = None,
    dask: Annotated[
        str | None,
        typer.Option(help="With --warehouse: run the shard tasks on Dask: 'local:N' (an in-process cluster of N "
                          "workers) or a scheduler address such as tcp://scheduler:8786."),
    ] = None,
    allow_empty: AllowEmptyOption = False,
    input_timeout: Annotated[
        str | None, typer.Option(metavar="SECONDS", help="The longest wait for input from a FIFO or pipe input (`-`, "
                                                         "<(zcat run.gz)), then exit 1; by default it waits as long "
                                                         "as the stream stays open. A number above 0 and at most "
                                                         "86,400.")
    ] = None,
    profile: Annotated[
        bool, typer.Option(help="Also print on stderr how each part of each run was read, and why (one `read part` "
                                "line each: the plan's choice, and the read taken when a fallback applied).")
    ] = False,
    *,
    spec_options: SpecOptions,
) -> None:
    """Evaluate RUN(s) against QRELS and print the summary (table), everything (json) or trec_eval-style lines."""
    from judged.flows.store.hashing import hash_ahead, hash_in_background, hashes_on_demand
    from judged.flows.store.streams import INPUT_TIMEOUT, materialized, shown

    try:
        wait = None if input_timeout is None else INPUT_TIMEOUT.parse(input_timeout, "--input-timeout")
    except SpecError as error:
        raise failure(error) from None
    try:  # a stream (`-`, a pipe, `<(zcat run.gz)`) is read once, into a file kept until the command ends
        (qrels, *runs), names = context.with_resource(materialized([qrels, *runs], wait))
    except InputError as error:
        raise fail(str(error), EXIT_INPUT) from None
    # Started before the engine's imports (the console script starts them earlier still, before the command line
    # loads: flows/console.py; those are taken here): hashing a large run then uses the core the imports leave
    # idle. The trec_eval-style lines show no evaluation id, so for them the inputs are hashed only if something
    # asks; a flow's reading passes take the hashes of the inputs they read (the ids of what they store).
    hashing = hashes_on_demand if output_format == "trec" else hash_in_background
    hashes = hashing([qrels, *runs]) if warehouse is None else {}
    if warehouse is not None:
        hash_ahead([qrels, *runs])
    from judged.flows.engine.evaluate import evaluate as evaluate_tables
    from judged.flows.store.readers import load_table, open_stored
    from judged.flows.report.text import as_json, as_trec, print_tables
    from judged.flows.engine.ties import with_tie_warning

    if output_format not in ("table", "json", "trec"):
        raise fail(f"--format must be table, json or trec, not {output_format!r}", EXIT_USAGE)
    if dask is not None and warehouse is None:
        raise fail("--dask runs the flow's shard tasks: give --warehouse too", EXIT_USAGE)
    _require_valid_dask(dask)
    if warehouse is not None:
        _require_writable_warehouse(warehouse)
        require_prefect_api()
    try:
        tie_share = float(tie_warning_share)
        if not 0 <= tie_share <= 1:
            raise ValueError
    except ValueError:
        raise fail(f"--tie-warning-share must be a number from 0 to 1, not {tie_warning_share!r}", EXIT_USAGE) from None
    try:
        spec = spec_options.spec()
    except (SpecError, InputError) as error:
        raise failure(error) from None
    try:
        if warehouse is None:
            judgments = load_table(qrels, "judgments", hashes=hashes.get(qrels), allow_empty=allow_empty)
            results = []
            for run in _tracked(runs, "evaluating"):
                table = (open_stored(run, "run") if run.is_dir()
                         else load_table(run, "run", hashes=hashes.get(run), allow_empty=allow_empty))
                # trec_eval's lines have no place for the intervals, nor does the tie warning's mean under
                # another rule: neither computes them.
                result = evaluate_tables(table, judgments, spec, intervals=output_format != "trec")
                evaluate_under = partial(evaluate_tables, table, judgments, intervals=False)
                results.append(with_tie_warning(result, evaluate_under, tie_share))
                if profile:
                    print("\n".join(f"{result.run_name}: {line}" for line in result.reads), file=sys.stderr)
        else:
            with orchestrated(f"evaluating {counted(len(runs), 'run')} into {warehouse}"):
                from judged.flows.pipeline.evaluation import load_result
                from judged.flows.pipeline.flows import evaluate_flow, task_runner
                from judged.flows.store.warehouse import Store

                flow = evaluate_flow.with_options(task_runner=task_runner(dask))
                reports = flow(str(qrels), [str(run) for run in runs], spec.canonical_json(), str(warehouse),
                               allow_empty=allow_empty)
            results = [load_result(Store(warehouse), report.evaluation_id) for report in reports]
            for report in reports:
                state = "stored" if report.created else "already stored, reused"
                print(f"evaluation {report.evaluation_id} ({state})", file=sys.stderr)
    except InputError as error:
        raise fail(shown(str(error), names), EXIT_INPUT) from None
    if output_format == "json":
        print(as_json(results))
    elif output_format == "trec":
        print(as_trec(results))
    else:
        print_tables(results)


def _tracked(items: list[Path], description: str) -> Iterator[Path]:
    """The items, with a transient progress bar on stderr when it is a terminal (rich is only loaded then)."""
    if not sys.stderr.isatty():
        yield from items
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        yield from progress.track(items, description=description)


_WAREHOUSE_HELP = "Warehouse directory (Parquet files and catalog.duckdb)."
_DASK_SCHEMES = ("tcp://", "tls://", "ucx://", "inproc://", "ws://", "wss://")


def _valid_dask(dask: str) -> bool:
    if dask.startswith("local:"):
        workers = dask.removeprefix("local:")
        return workers.isdigit() and 1 <= int(workers) <= 1024
    return dask.startswith(_DASK_SCHEMES) and len(dask) > dask.index("//") + 2


def _require_valid_dask(dask: str | None) -> None:
    """Exit 2 with one line unless `--dask` is absent, `local:N`, or the address of a Dask scheduler that answers
    (flows/pipeline/scheduler.py: within 5 s), before anything is stored or taken from an inbox."""
    if dask is not None and not _valid_dask(dask):
        raise fail(f"--dask must be local:N (N workers, N >= 1) or a scheduler address such as tcp://host:8786, "
                   f"not {dask!r}", EXIT_USAGE)
    if dask is not None and not dask.startswith("local:"):
        from judged.flows.pipeline.scheduler import require_scheduler

        try:
            require_scheduler(dask)
        except UsageError as error:
            raise failure(error) from None


# `ingest-run` and `nightly`: where a run is read, checked and written in pieces.
DaskIngestOption = Annotated[
    str | None,
    typer.Option("--dask", help="Read, check and write each run in pieces on Dask: 'local:N' (an in-process cluster "
                                "of N workers) or a scheduler address such as tcp://scheduler:8786, whose workers "
                                "run the same judged version, see the warehouse at the same path and reach the "
                                "Prefect API (PREFECT_API_URL). Stored byte for byte as without it."),
]


def _require_writable_warehouse(warehouse: Path) -> None:
    """Exit 2 with one line unless `warehouse` is a folder (or can become one) that this user can write."""
    if warehouse.exists() and not warehouse.is_dir():
        raise fail(f"{warehouse}: --warehouse must be a folder, and this is a file", EXIT_USAGE)
    existing = warehouse
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise fail(f"{warehouse}: --warehouse cannot be written here ({existing} is not writable)", EXIT_USAGE)
    from judged.flows.store.outputs import creation_refused

    refused = creation_refused(existing)
    if refused:
        raise fail(f"{warehouse}: --warehouse cannot be written here (no folder can be made in {existing}: "
                   f"{refused})", EXIT_USAGE)


def _metadata_overrides(**fields: str | None) -> dict[str, str]:
    return {name: value for name, value in fields.items() if value is not None}


def _parse_grades(grades: list[str]) -> dict[int, str]:
    scale: dict[int, str] = {}
    for item in grades:
        grade, sep, meaning = item.partition("=")
        try:
            if not sep:
                raise ValueError
            scale[int(grade)] = meaning
        except ValueError:
            raise SpecError(f"--grade {item!r} is not GRADE=MEANING") from None
    return scale


@app.command("ingest-judgments")
def ingest_judgments_command(
    qrels: Annotated[list[Path], typer.Argument(
        help="TREC qrels (plain or .gz) or Parquet (query_id, doc_id, relevance[, assessor]). Several TREC files are "
             "one judgment set of several assessors, each file one assessor's (name each with --assessor).",
        metavar="QRELS...")],
    warehouse: Annotated[Path, typer.Option(help=_WAREHOUSE_HELP)] = Path("warehouse"),
    name: Annotated[str | None, typer.Option(help="Name of the judgment set (its versions share it).")] = None,
    version: Annotated[str | None, typer.Option(help="Version label of this judgment set.")] = None,
    task: Annotated[str | None, typer.Option(help="The task the assessors were given.")] = None,
    assessors: Annotated[str | None, typer.Option(help="Who judged; the adjudication procedure.")] = None,
    assessor: AssessorOption = None,
    assessor_kind: AssessorKindOption = None,
    pooling: Annotated[str | None, typer.Option(help="How candidates were chosen (pool depth, runs, sampling).")] = None,
    grade: Annotated[list[str] | None, typer.Option(help="GRADE=MEANING, repeatable: the grade scale.")] = None,
    relevant_from: Annotated[str | None, typer.Option(
        metavar="GRADE", help="The lowest grade the assessors meant as relevant (the agreement on relevant-or-not "
                              "takes it).")] = None,
    unresolved_token: Annotated[
        str | None, typer.Option(help="Grade text marking an unresolved judgment (kept as a null grade).")
    ] = None,
    extends: Annotated[
        str | None,
        typer.Option(help="Make a new version of this stored judgment set (NAME = its newest version, NAME@VERSION, "
                          "or an id): its judgments plus these answers, with lineage. Needs --version."),
    ] = None,
    revise: Annotated[
        bool, typer.Option("--revise", help="With --extends: a new grade for a judged pair replaces it (a revision).")
    ] = False,
    worklist: Annotated[str | None, typer.Option(help="With --extends: the worklist id the answers reply to.")] = None,
    adjudicator: Annotated[str | None, typer.Option(
        metavar="NAME", help="With --extends of a set that names its assessors: the answers are this adjudicator's "
                             "(kind adjudicator); their grade settles the pair under every --assessor-model.")] = None,
    allow_empty: AllowEmptyOption = False,
) -> None:
    """Validate a judgment set and store it, content-addressed, with its metadata. Metadata comes from the sidecar
    `<qrels>.meta.toml` when present (of several files, their sidecars merged); options given here override it.
    A set whose rows name their assessors is stored with who they are and how far they agree (`judged agreement`;
    the views `assessors` and `assessor_agreement`). With --extends, the file holds new answers for a stored
    judgment set, and a new version is stored (see `judgment_lineage` in `judged sql`)."""
    _require_writable_warehouse(warehouse)
    if extends is not None:
        if len(qrels) != 1 or assessor or assessor_kind:
            raise fail("--extends takes one answers file, without --assessor or --assessor-kind", EXIT_USAGE)
        _extend_judgments(qrels[0], warehouse, extends, version, revise, assessors, worklist, adjudicator)
        return
    if revise or worklist is not None or adjudicator is not None:
        raise fail("--revise, --worklist and --adjudicator go with --extends", EXIT_USAGE)
    require_prefect_api()
    from judged.flows.pipeline.flows import ingest_judgments
    from judged.flows.store.assessor_files import merged_sidecars, parse_assessor_kinds
    from judged.flows.store.readers import read_sidecar
    from judged.schemas.provenance import JudgmentSetMetadata

    try:
        kinds = parse_assessor_kinds(assessor_kind or [])
        if len(qrels) == 1:
            base = read_sidecar(qrels[0], "judgments") if qrels[0].is_file() else JudgmentSetMetadata()
        else:
            base = merged_sidecars(qrels)
        overrides: dict[str, object] = _metadata_overrides(
            name=name, version=version, task=task, pooling=pooling, unresolved_token=unresolved_token,
        )
        if grade:
            overrides["grade_scale"] = _parse_grades(grade)
        if relevant_from is not None:
            overrides["relevant_from"] = parse_positive_int(relevant_from, "--relevant-from")
        metadata = JudgmentSetMetadata.model_validate({**base.model_dump(), **overrides})
        if assessors is not None:
            metadata = metadata.with_assessors(description=assessors)
        shown = qrels[0] if len(qrels) == 1 else f"{len(qrels)} judgment files"
        with orchestrated(f"ingesting {shown}"):
            report = ingest_judgments([str(path) for path in qrels], str(warehouse), metadata,
                                      allow_empty=allow_empty, assessors=assessor or [], assessor_kinds=kinds)
    except (SpecError, InputError) as error:
        raise failure(error, order_hint=False) from None
    _print_store_report(report, "judgment set")


def _extend_judgments(
    answers: Path, warehouse: Path, parent: str, version: str | None, revise: bool, assessors: str | None,
    worklist: str | None, adjudicator: str | None = None,
) -> None:
    from judged.flows.pipeline.judging import extend_judgments
    from judged.flows.store.warehouse import Store

    if not version:
        raise fail("--extends needs --version (the new version's label)", EXIT_USAGE)
    try:
        store = Store(warehouse)
        report = extend_judgments(store, str(answers), parent, version, revise, assessors, worklist, adjudicator)
        if report.store.created:
            store.refresh_catalog()
    except InputError as error:
        raise failure(error, order_hint=False) from None
    if not report.store.created:
        print(f"judgment set {report.store.id} ({version}, extending {report.parent_id}) is already stored with "
              "these answers: nothing added")
        return
    _print_store_report(report.store, "judgment set")
    print(f"extends {report.parent_id}: {counted(report.n_added, 'pair')} added, {report.n_revised} revised, "
          f"{report.n_confirmed} confirmed")


@app.command()
@with_spec_options(preset="judged")
def worklist(
    judgments: Annotated[str, typer.Option(help="Judgment set: NAME (newest version), NAME@VERSION or an id.")],
    warehouse: Annotated[Path, typer.Option(help=_WAREHOUSE_HELP)] = Path("warehouse"),
    evaluations: Annotated[
        list[str] | None, typer.Option(help="Rank the documents these stored evaluations' runs retrieved (repeatable).")
    ] = None,
    runs: Annotated[list[str] | None, typer.Option(help="Or these stored runs (tag, system or id; repeatable).")] = None,
    cutoff: Annotated[str | None, typer.Option(help="k: documents in the runs' top k, intervals of nDCG@k (or give "
                                                    "--cutoffs k, or --measures nDCG@k).", show_default="10",
                                               metavar="K")] = None,
    budget: Annotated[str, typer.Option(help=f"How many pairs to list: {WORKLIST_BUDGET.describe()}.",
                                        metavar="INTEGER")] = "500",
    topics: Annotated[Path | None, typer.Option(help="query_id<TAB>text lines: the query text goes in each row.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the assessor file here (default: print it).")] = None,
    output_format: Annotated[str, typer.Option("--format", help="qrels (grade column empty), csv, or json (the "
                                                                "rows and the pairs' state).")] = "qrels",
    objective: Annotated[str | None, typer.Option(
        help="pairs: narrow the paired difference intervals of the pairs of runs still undecided (default with two "
             "or more runs); width: narrow each run's own nDCG@k interval; adjudicate: the disputed judgments "
             "(assessors gave different grades; needs --assessor-model set or range) whose adjudication would "
             "decide the most pairs.", show_default="pairs")] = None,
    pairs: Annotated[str | None, typer.Option(
        help="Under --objective pairs or adjudicate, only these pairs: BASELINE:RUN,... (run names as listed).")] = None,
    relative: Annotated[bool, typer.Option(
        help="Under --objective pairs, divide each pair's share by its current width (small gaps first).")] = False,
    force: ForceOption = False,
    *,
    spec_options: SpecOptions,
) -> None:
    """Rank unjudged (query, document) pairs by how much judging each is expected to settle: by default the width it
    removes from the paired nDCG@k difference intervals of the pairs of runs not yet decided (whatever the unjudged
    documents are), else (--objective width) from the runs' own intervals; store the worklist (view `worklists`)
    and write the assessor file. The query weights (e.g. log frequency) weigh each query's share of the priority."""
    from judged.flows.pipeline.judging import assessor_file, make_worklist, worklist_spec
    from judged.flows.store.outputs import check_output_target, write_output_file
    from judged.flows.store.warehouse import Store

    if output_format not in ("qrels", "csv", "json"):
        raise fail(f"--format must be qrels, csv or json, not {output_format!r}", EXIT_USAGE)
    if relative and objective == "width":
        raise fail("--relative weighs the pairs of the pairs objective: leave out --objective width", EXIT_USAGE)
    if budget.strip().lstrip("-").isdigit() and int(budget) <= 0:
        raise fail(f"--budget must be a positive number of judgments, not {budget}", EXIT_USAGE)
    try:
        budget_pairs = WORKLIST_BUDGET.parse(budget, "--budget")
    except SpecError as error:
        raise failure(error) from None
    given = spec_options.given()
    if "--interval-width" in given:
        raise fail("--interval-width sets which intervals an evaluation's summary counts as wide; a worklist has no "
                   "summary: leave it out", EXIT_USAGE)
    cutoffs_given = [flag for flag in given if flag in ("--cutoffs", "--measures")]
    if cutoff is not None and cutoffs_given:
        raise fail(f"--cutoff and {cutoffs_given[0]} both give k: give one of them", EXIT_USAGE)
    try:
        k = () if cutoffs_given else (parse_positive_int(str(10 if cutoff is None else cutoff), "--cutoff"),)
        spec = spec_options.spec(**({"cutoffs": k} if k else {}))
        spec, weights = worklist_spec(spec)
    except (SpecError, InputError) as error:
        raise failure(error) from None
    try:
        if out is not None:  # before the worklist is stored
            check_output_target(out, force, warehouse=warehouse)
        elif force:
            raise UsageError("--force", "--force replaces the --out file: give --out too")
        store = Store(warehouse)
        report = make_worklist(store, judgments, spec, budget_pairs, evaluations or [], runs or [], weights, topics,
                               objective, pairs, relative)
        store.refresh_catalog()
    except InputError as error:
        raise failure(error) from None
    text = assessor_file(report, output_format)
    if out is None:
        sys.stdout.write(text)
    else:
        try:
            write_output_file(out, text, force, warehouse=warehouse)
        except InputError as error:
            raise failure(error) from None
    state = "stored" if report.created else "already stored"
    print(f"worklist {report.worklist_id} ({state}, objective {report.objective}): "
          f"{counted(report.rows.height, 'pair')} for judgment set {report.judgment_set_id}", file=sys.stderr)
    for line in (report.pairs_line(), *report.notes):
        if line:
            print(line, file=sys.stderr)


@app.command("ingest-run")
def ingest_run_command(
    run: Annotated[Path, typer.Argument(help="TREC run (plain or .gz) or Parquet (query_id, doc_id, score[, rank]).")],
    warehouse: Annotated[Path, typer.Option(help=_WAREHOUSE_HELP)] = Path("warehouse"),
    system: Annotated[str | None, typer.Option(help="The system that produced the run.")] = None,
    configuration: Annotated[str | None, typer.Option(help="Its configuration.")] = None,
    tag: Annotated[str | None, typer.Option(help="The run tag.")] = None,
    profile: Annotated[bool, typer.Option(help="Also print where the time went (read, checks, order, write, hash, "
                                               "record): one `phase` line each.")] = False,
    allow_empty: AllowEmptyOption = False,
    dask: DaskIngestOption = None,
) -> None:
    """Validate a run and store it, content-addressed, with its metadata (sidecar `<run>.meta.toml` or options)."""
    _require_valid_dask(dask)
    _require_writable_warehouse(warehouse)
    require_prefect_api()
    from judged.flows.store.readers import read_sidecar
    from judged.flows.pipeline.flows import ingest_run, task_runner
    from judged.schemas.provenance import RunMetadata

    try:
        base = read_sidecar(run, "run") if run.is_file() else RunMetadata()
        overrides = _metadata_overrides(system=system, configuration=configuration, tag=tag)
        metadata = RunMetadata.model_validate({**base.model_dump(), **overrides})
        with orchestrated(f"ingesting {run}"):
            flow = ingest_run if dask is None else ingest_run.with_options(task_runner=task_runner(dask))
            report = flow(str(run), str(warehouse), metadata, allow_empty=allow_empty, scale_out=dask is not None)
    except InputError as error:
        raise failure(error, order_hint=False) from None
    _print_store_report(report, "run")
    if profile:
        from judged.flows.engine.phases import profile_lines

        print("\n".join(profile_lines(report.phases)))


def _print_store_report(report: StoreReport, what: str) -> None:
    if report.created:
        rate = f" in {report.seconds:.2f} s ({rows_per_second(report.n_rows, report.seconds)})" if report.seconds else ""
        print(f"stored {what} {report.id} ({counted(report.n_rows, 'row')}){rate}")
    else:
        print(f"{what} {report.id} already in the warehouse: nothing new written")


NightlyPairs = Annotated[str | None, typer.Option(
    help="Which pairs the night's comparison computes: all or baseline (default: all up to 12 runs, the baseline "
         "against each other run beyond; the report says which).", metavar="PAIRS")]
NightlyBaseline = Annotated[str | None, typer.Option(
    help="The run the night's comparison takes as baseline; without it, the previous night's baseline when it is "
         "among the runs, else the first run in name order (the comparison's notes say which and why).")]


@app.command()
@with_spec_options(preset="trec_eval", repeatable=True)
def nightly(
    inbox: Annotated[Path, typer.Option(help="Folder where run files are dropped; done files move to processed/ "
                                             "or rejected/ (with an .error.txt).")] = Path("inbox"),
    judgments: Annotated[str, typer.Option(help="Judgment set: a qrels file, an id, or a name (its latest version).")]
    = "trec-dl-2020-passage",
    allow_empty: AllowEmptyOption = False,
    warehouse: Annotated[Path, typer.Option(help=_WAREHOUSE_HELP)] = Path("warehouse"),
    baseline: NightlyBaseline = None,
    pairs: NightlyPairs = None,
    dask: DaskIngestOption = None,
    *,
    spec_options: SpecOptions,
) -> None:
    """Run the nightly job once: ingest and evaluate every run waiting in the inbox."""
    try:
        _require_nightly_pairs(pairs)
    except SpecError as error:
        raise failure(error) from None
    _require_valid_dask(dask)
    _require_writable_warehouse(warehouse)
    _require_readable_judgments_file(judgments)
    require_prefect_api()
    from judged.flows.pipeline.flows import nightly as nightly_flow, task_runner

    try:
        specs = spec_options.specs()
        _announce_inbox(inbox)
        with orchestrated(f"nightly job over {inbox}"):
            flow = nightly_flow if dask is None else nightly_flow.with_options(task_runner=task_runner(dask))
            report = flow(str(inbox), judgments, [s.canonical_json() for s in specs], str(warehouse), allow_empty,
                          baseline, scale_out=dask is not None, pairs=pairs)
    except (SpecError, InputError) as error:
        raise failure(error, order_hint=False) from None
    _print_nightly(report, warehouse)


def _require_nightly_pairs(pairs: str | None) -> None:
    """A SpecError unless `pairs` is None, `all` or `baseline`: the night's runs are not known in advance, so pairs
    are not listed by name."""
    if pairs is not None and pairs not in ("all", "baseline"):
        raise SpecError(f"--pairs: {pairs!r}: the nightly job takes all or baseline (its runs change night by night; "
                        "compare listed pairs with judged compare --pairs A:B)")


def _require_readable_judgments_file(judgments: str) -> None:
    """Exit 1 with one line when `--judgments` names a file that cannot be read (a FIFO, a device, a file without
    read permission); a folder or a path that does not exist is left to the flow, which takes it as a judgment
    set's id or name."""
    from judged.flows.store.readers import require_regular_file

    path = Path(judgments)
    if not os.path.lexists(path) or path.is_dir():
        return
    try:
        require_regular_file(path, "judgments file")
    except InputError as error:
        raise fail(f"{error} (--judgments)", EXIT_INPUT) from None


def _announce_inbox(inbox: Path) -> None:
    """Create the inbox and its folders if missing, and say so on stderr."""
    from judged.flows.pipeline.nightly import PROCESSED, REJECTED, prepare_inbox

    for folder in prepare_inbox(inbox):
        print(f"created {folder}", file=sys.stderr)
    print(f"inbox: {inbox} (drop run files here, with an optional <file>.meta.toml; done files move to "
          f"{inbox / PROCESSED}, rejected ones to {inbox / REJECTED})", file=sys.stderr)


def _print_nightly(report: NightlyReport, warehouse: Path) -> None:
    from judged.flows.pipeline.evaluation import load_result
    from judged.flows.report.text import print_tables
    from judged.flows.store.warehouse import Store

    store = Store(warehouse)
    print_tables([load_result(store, r.evaluation_id) for r in report.evaluated])
    for name, error in report.rejected.items():
        print(f"rejected {name}: {error}", file=sys.stderr)
    for name, why in report.ignored.items():
        print(f"ignored {name} (left in the inbox): {why}", file=sys.stderr)
    print(f"nightly run {report.flow_run_id}: {counted(len(report.evaluated), 'evaluation')}, "
          f"{counted(len(report.rejected), 'file')} rejected")
    print(f"report: {report.report}" if report.report else "report: none written (nothing was evaluated)")


@app.command()
@with_spec_options(preset="trec_eval", repeatable=True)
def serve(
    cron: Annotated[str, typer.Option(help="Cron schedule (UTC) of the nightly job.")] = "0 2 * * *",
    inbox: Annotated[Path, typer.Option(help="Inbox folder of the nightly job.")] = Path("inbox"),
    judgments: Annotated[str, typer.Option(help="Judgment set: a qrels file, an id, or a name.")]
    = "trec-dl-2020-passage",
    allow_empty: AllowEmptyOption = False,
    warehouse: Annotated[Path, typer.Option(help=_WAREHOUSE_HELP)] = Path("warehouse"),
    name: Annotated[str, typer.Option(help="Deployment name.")] = "judged-nightly",
    baseline: NightlyBaseline = None,
    pairs: NightlyPairs = None,
    *,
    spec_options: SpecOptions,
) -> None:
    """Register the nightly deployment with its cron schedule and serve it: each scheduled or triggered run is
    started and logged here, until SIGTERM or Ctrl+C (which stop it within 5 s, whatever its server's state). The
    server: PREFECT_API_URL when set, else judged's local server (started, or reused when one runs on its Prefect
    database; never a second one beside it)."""
    _require_writable_warehouse(warehouse)
    try:
        specs = spec_options.specs()
        _require_nightly_pairs(pairs)
    except (SpecError, InputError) as error:
        raise failure(error) from None
    require_prefect_api()
    try:
        _announce_inbox(inbox)
    except InputError as error:
        raise fail(str(error), EXIT_INPUT) from None
    from judged.flows.pipeline.progress import Feedback
    from judged.flows.pipeline.server import ServerError, serving_api
    from judged.flows.pipeline.serving import serve_nightly
    from judged.flows.store.warehouse import REPORTS

    judgments_ref = str(Path(judgments).resolve()) if Path(judgments).is_file() else judgments
    parameters = {
        "inbox": str(inbox.resolve()),
        "judgments": judgments_ref,
        "spec_jsons": [s.canonical_json() for s in specs],
        "warehouse": str(warehouse.resolve()),
        "allow_empty": allow_empty,
        "baseline": baseline,
        "pairs": pairs,
    }
    try:
        with serving_api(Feedback()) as (api, local):
            print(f"serving the nightly job {name} ({cron}, UTC) on {api} (UI: {api.removesuffix('/api')}): each "
                  f"run and its outcome is logged here, and its report written to "
                  f"{warehouse.resolve() / REPORTS}/<flow run id>.html; run one now with `prefect deployment run "
                  f"nightly/{name}` (PREFECT_API_URL={api}); stop with Ctrl+C", file=sys.stderr)
            keep = () if local is None else tuple(p for p in (local.pid, local.watchdog_pid) if p is not None)
            stopped_by = serve_nightly(name, cron, parameters, api, keep)
    except ServerError as error:
        raise fail(str(error), EXIT_INPUT) from None
    print(f"judged: serve stopped on {stopped_by}", file=sys.stderr)


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL (SELECT only) over the views: judgment_sets, judgments, runs, "
                                              "run_rows, evaluations, per_query, summary, judged_run_rows, nightly.")],
    warehouse: Annotated[Path, typer.Option(help=_WAREHOUSE_HELP)] = Path("warehouse"),
    output_format: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    timeout: Annotated[float, typer.Option(help="Stop the query after this many seconds.")] = 60.0,
    limit: Annotated[int, typer.Option(help="Print at most this many rows (a note on stderr says when cut).")]
    = 10_000,
    memory_limit: Annotated[str, typer.Option(help="DuckDB's memory limit for the query, e.g. 2GB.")] = "2GB",
) -> None:
    """Query the warehouse's views read-only: queries only (SELECT; EXPLAIN of a SELECT), external access off
    outside the warehouse, configuration locked, within a time, memory and row limit."""
    from judged.flows.store.sql import QueryLimits, QueryRefused, run_query
    from judged.flows.store.warehouse import Store

    if output_format not in ("table", "csv", "json"):
        raise fail(f"--format must be table, csv or json, not {output_format!r}", EXIT_USAGE)
    require_readable_warehouse(warehouse)
    try:
        limits = QueryLimits(timeout_seconds=timeout, row_limit=limit, memory_limit=memory_limit)
    except ValueError as error:
        raise fail(str(error), EXIT_USAGE) from None
    try:
        result = run_query(Store(warehouse), query, limits)
    except QueryRefused as error:
        raise fail(str(error), EXIT_INPUT) from None
    _print_rows(result.columns, result.rows, output_format)
    if result.truncated:
        print(f"judged: note: only the first {limit:,} rows are shown (--limit); aggregate, or raise the limit",
              file=sys.stderr)


def _print_rows(columns: list[str], rows: list[tuple], output_format: str) -> None:
    import csv
    import json
    from numbers import Number

    if output_format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif output_format == "json":
        print(json.dumps([dict(zip(columns, row)) for row in rows], default=str, indent=1))
    else:
        from judged.flows.report.terminal import Column, Kind, TextTable, output_console, print_table

        # Numbers are never broken; text (hashes, paths, JSON) folds when the terminal needs the room. The first
        # column names the rows of a table split into parts.
        numeric = [all(isinstance(row[i], Number) and not isinstance(row[i], bool) for row in rows
                       if row[i] is not None) for i in range(len(columns))]
        table = TextTable(
            [Column(name, Kind.NUMBER if numeric[i] else Kind.TEXT, key=i == 0) for i, name in enumerate(columns)],
            [tuple("NULL" if value is None else str(value) for value in row) for row in rows],
        )
        print_table(table, output_console())


# An evaluation id or a start of one (schemas/provenance.py `derive_id`: hexadecimal digits).
_EVALUATION_ID = re.compile(r"[0-9a-f]{1,64}")


@app.command()
def show(
    evaluation_id: Annotated[str, typer.Argument(help="An evaluation id, or a unique start of one (see `judged sql "
                                                      "\"SELECT * FROM evaluations\"`).")],
    warehouse: Annotated[Path, typer.Option(help=_WAREHOUSE_HELP)] = Path("warehouse"),
) -> None:
    """Print one stored evaluation's summary and its provenance record."""
    import json

    from judged.flows.pipeline.evaluation import load_result
    from judged.flows.report.text import print_tables
    from judged.flows.store.warehouse import Store

    require_readable_warehouse(warehouse)
    if not _EVALUATION_ID.fullmatch(evaluation_id):  # `../runs/<id>` would name another table's file
        raise fail(f"{warehouse}: no evaluation with id or id prefix {evaluation_id!r} in the warehouse: an "
                   "evaluation id is hexadecimal digits (0-9, a-f)", EXIT_INPUT)
    try:
        store = Store(warehouse)
        evaluation_id = store.resolve_evaluation(evaluation_id)
        result = load_result(store, evaluation_id)
        record, _, _ = store.load_evaluation(evaluation_id)
    except InputError as error:
        raise fail(str(error), EXIT_INPUT) from None
    from judged.flows.report.terminal import output_console, print_line
    from judged.schemas.provenance import METHOD_VERSION, is_older_method

    console = output_console()
    if is_older_method(record["method_version"]):
        print_line(console, f"computed under method version {record['method_version']}; this judged computes version "
                            f"{METHOD_VERSION}, so evaluating the same inputs again may give other values (under a "
                            "new id)", "older method:", "yellow")
    print_tables([result], console)
    console.print_json(json.dumps(json.loads(record["provenance_json"])))


@app.command()
def demo(
    warehouse: Annotated[Path, typer.Option(help=_WAREHOUSE_HELP)] = Path("warehouse"),
    inbox: Annotated[Path, typer.Option(help="Inbox folder the sample runs are dropped into.")] = Path("demo/inbox"),
) -> None:
    """The main job on bundled sample data: NIST's TREC DL 2020 passage judgments and three official runs are put
    into an inbox, and the nightly flow ingests and evaluates them (preset trec_eval) into the warehouse."""
    _require_writable_warehouse(warehouse)
    require_prefect_api()
    import shutil

    from judged.flows.pipeline.flows import nightly as nightly_flow

    sample = sample_data("trec-dl-2020-sample")
    inbox.mkdir(parents=True, exist_ok=True)
    for path in sorted((sample / "runs").iterdir()):
        shutil.copy(path, inbox / path.name)
    spec = build_spec("trec_eval", cutoffs=(10, 100, 1000))
    try:
        with orchestrated(f"nightly job over {inbox}"):
            report = nightly_flow(str(inbox), str(sample / "qrels.dl20-passage.txt"), [spec.canonical_json()],
                                  str(warehouse))
    except InputError as error:
        raise fail(str(error), EXIT_INPUT) from None
    _print_nightly(report, warehouse)
    print("\nNext, open the report in a browser (the runs compared, per-query plots, provenance), or ask the "
          "warehouse with SQL, e.g. mean NDCG@10 per run:")
    print(f"  .venv/bin/judged sql --warehouse {warehouse} \"SELECT e.run_name, s.value FROM summary s "
          "JOIN evaluations e USING (evaluation_id) WHERE s.cutoff = 10 ORDER BY s.value DESC\"")


server_app = typer.Typer(
    help="The local Prefect server that warehouse commands share (started by the first one that needs it).",
    no_args_is_help=True,
    cls=GuardedGroup,
)
app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start(
    idle_minutes: Annotated[float | None, typer.Option(
        "--idle-minutes", help="Stop the server after this many minutes without a judged command using it (0: never; "
        "default: JUDGED_SERVER_IDLE_MINUTES, else 30). Applies when this starts the server.")] = None,
) -> None:
    """Start the local Prefect server now (warehouse commands start it when they first need it)."""
    from judged.flows.pipeline.progress import Feedback
    from judged.flows.pipeline.server import (
        ServerError, chosen_idle_minutes, ensure_server, idle_text, running_server, touch_last_used,
    )

    try:
        wanted = chosen_idle_minutes(idle_minutes)
    except ServerError as error:
        raise fail(str(error), EXIT_USAGE) from None
    try:
        state = running_server()
        if state is None:
            state = ensure_server(Feedback(), idle_minutes=wanted)
        else:
            touch_last_used()
    except ServerError as error:
        raise fail(str(error), EXIT_INPUT) from None
    if state.external:
        print(f"running: {state.url} (pid {state.pid}, started outside judged: {state.log}); judged uses it and "
              "does not stop it")
        return
    print(f"running: {state.url} (pid {state.pid}, since {state.started_at}); {idle_text(state.idle_minutes)}; "
          f"log: {state.log}")
    if idle_minutes is not None and state.idle_minutes != wanted:
        print(f"judged: the server already runs with its own idle limit ({state.idle_minutes:g} min); "
              "`judged server stop` first to start it with another", file=sys.stderr)


@server_app.command("status")
def server_status() -> None:
    """Whether the local Prefect server runs, where, and which API warehouse commands use (exit 3: not running)."""
    from judged.flows.pipeline.server import (
        MODE_VARIABLE, LOG_FILE, ServerError, chosen_mode, idle_text, other_server, prefect_home, running_server,
        server_folder,
    )

    try:
        mode = chosen_mode()
    except ServerError as error:
        raise fail(str(error), EXIT_INPUT) from None
    configured = os.environ.get("PREFECT_API_URL")
    if configured:
        print(f"PREFECT_API_URL is set: warehouse commands report to {configured}, not to judged's local server")
    elif mode == "temporary":
        print(f"{MODE_VARIABLE}=temporary: warehouse commands use Prefect's temporary server, one per process")
    state = running_server()
    other = other_server() if state is None else None
    if other is not None:
        print(f"local Prefect server: a server judged did not start runs on this Prefect database ({other.url}, pid "
              f"{other.pid}: {other.command}); warehouse commands use it, and judged does not stop it")
        return
    if state is None:
        print(f"local Prefect server: not running (PREFECT_HOME {prefect_home()}; log "
              f"{server_folder() / LOG_FILE})")
        raise typer.Exit(EXIT_NOT_RUNNING)
    print(f"local Prefect server: running on {state.url} (pid {state.pid}, since {state.started_at}); "
          f"log {state.log}; database under {state.prefect_home}")
    print(f"idle stop: {idle_text(state.idle_minutes)}" + (
        f" (watchdog pid {state.watchdog_pid})" if state.watchdog_pid is not None else ""))


@server_app.command("stop")
def server_stop() -> None:
    """Stop the local Prefect server (the next warehouse command starts a new one)."""
    from judged.flows.pipeline.progress import Feedback
    from judged.flows.pipeline.server import other_server, stop_server

    state = stop_server(Feedback())
    other = other_server() if state is None else None
    if other is not None:
        print(f"local Prefect server: the server on this Prefect database was not started by judged (pid {other.pid}: "
              f"{other.command}); judged leaves it running: stop it where it was started")
        return
    print("local Prefect server: not running, nothing to stop" if state is None
          else f"stopped the local Prefect server (pid {state.pid}, {state.url})")


@server_app.command("url")
def server_url() -> None:
    """Print the Prefect API URL warehouse commands and `serve` report to: PREFECT_API_URL when set, else the
    running local server's (for `export PREFECT_API_URL=$(judged server url)`; exit 3: none runs)."""
    from judged.flows.pipeline.server import other_server, running_server

    configured = os.environ.get("PREFECT_API_URL")
    state = None if configured else running_server() or other_server()
    if not configured and state is None:
        print("judged: no local Prefect server runs (`judged server start` starts it)", file=sys.stderr)
        raise typer.Exit(EXIT_NOT_RUNNING)
    print(configured or state.url)


def sample_data(name: str) -> Path:
    """A folder of the sample data installed with judged (package `judged.data`, the repository's data/)."""
    from importlib import resources

    return Path(str(resources.files("judged.data").joinpath(name)))


# What Polars puts in front of `_RJEM_MALLOC_CONF` when it loads (polars/__init__.py): in a parent process that
# imported Polars, and so in what it passes down, these are Polars' settings, not the user's.
POLARS_ALLOCATOR_DEFAULTS = "dirty_decay_ms:500,muzzy_decay_ms:1000"


def allocator_options(current: str, cores: int, leave_out: tuple[str, ...] = ()) -> str:
    """Polars' jemalloc options (`_RJEM_MALLOC_CONF`) with the command line's own, each unless the user set it (or a
    parent process that ran judged passes it down; Polars puts its own options in front of these, and the last of
    an option wins):
    - `narenas`, one arena per core. jemalloc's default, 4 arenas per core, each keeps the memory its threads
      freed; one per core reuses more of it, for a lower peak at the same speed.
    - `dirty_decay_ms`, freed pages kept 5 s before they go back to the system, instead of Polars' 0.5 s. A reading
      pass frees and takes a batch's columns several times a second; pages given back are faulted in again and
      zeroed by the kernel.
    `leave_out`: options not added (benchmarks/tools/cli_tuning_off.py)."""
    set_already = current.removeprefix(POLARS_ALLOCATOR_DEFAULTS)
    ours = {"narenas": str(cores), "dirty_decay_ms": "5000"}
    added = [f"{key}:{value}" for key, value in ours.items() if key not in set_already and key not in leave_out]
    return ",".join(filter(None, [current, *added]))


def tune_process() -> None:
    """The command line's process-wide tunings, each kept because it measurably pays at M (the figures and the
    commands that measure them: benchmarks/README.md, "The command line's tunings"):
    - jemalloc's options (`allocator_options`): one arena per core, for a lower peak memory, and freed pages kept
      longer, for fewer page faults. Set before Polars loads, which reads its allocator's options once.
    - numpy's OpenBLAS with one thread (`OPENBLAS_NUM_THREADS`, unless the user set it). judged does no linear
      algebra large enough to share; the pool OpenBLAS starts when numpy loads (for the intervals) spins on the core
      Polars is using, for nothing.
    - at exit, whatever is still alive is frozen (`gc.freeze`), so the interpreter's last cyclic collection does
      not walk the many long-lived objects of the imports and the results, which it could not free anyway.
    The inputs' hashes, started before the command line loads (flows/console.py) or before the engine's imports,
    are the evaluate command's own (see `evaluate`)."""
    os.environ["_RJEM_MALLOC_CONF"] = allocator_options(os.environ.get("_RJEM_MALLOC_CONF", ""), os.cpu_count() or 1)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    atexit.register(gc.freeze)


def main() -> None:
    tune_process()
    app()
