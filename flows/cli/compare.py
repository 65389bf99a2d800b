"""The `judged compare` and `judged report` commands (registered on the `judged` application, flows/cli/common.py).

Belongs here: their arguments and options, turning them into a spec and comparison settings, choosing the direct
path (files, no warehouse) or the Prefect flow (a warehouse), printing, and one-line errors. No statistics.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from judged.flows.cli.common import (
    EXIT_INPUT, EXIT_USAGE, ForceOption, SpecOptions, app, fail, failure, given_on_command_line, orchestrated,
    require_prefect_api, with_spec_options,
)
from judged.flows.report.wording import counted
from judged.schemas.comparison import ALL_PAIRS_UP_TO, RANGED_SETTINGS, ComparisonSettings
from judged.schemas.spec import EvaluationSpec, NumericRange, SpecError
from judged.transforms.errors import InputError

if TYPE_CHECKING:  # the statistics load scipy: only the commands that compare import them
    from judged.flows.engine.compare import ComparedEvaluation, ComparisonResult

_COMPARE_PANEL = "Comparison options"

Inputs = Annotated[list[str], typer.Argument(
    help="QRELS RUN_A RUN_B [RUN ...] (files, evaluated under the spec options), or with --warehouse stored "
         "evaluation ids (or files, evaluated and stored first).")]
Baseline = Annotated[str | None, typer.Option(help="The baseline run: its pairs come first (default: the first run).",
                                              rich_help_panel=_COMPARE_PANEL)]
Pairs = Annotated[str | None, typer.Option(
    help="Which pairs of runs to compare: all (every two runs), baseline (the baseline against each other run), or "
         "REFERENCE:RUN,... (each difference is RUN - REFERENCE). Default: all up to "
         f"{ALL_PAIRS_UP_TO} runs, baseline beyond; the notes say which.", metavar="PAIRS",
    rich_help_panel=_COMPARE_PANEL)]
Queries = Annotated[str, typer.Option(
    help="common: the queries with a value in every run; judged: every judged query, a query missing from a run "
         "scoring 0 (trec_eval -c).", rich_help_panel=_COMPARE_PANEL)]


def _ranged(field: str, text: str) -> str:
    """An option's help: `text`, the range its setting declares, and its default."""
    return f"{text} {NumericRange.of(ComparisonSettings, field).describe().capitalize()}."


def _default(field: str) -> str:
    return str(ComparisonSettings.model_fields[field].default)


# The numeric options are read as text: a value out of range, or not a number, is one line naming the range.
Permutations = Annotated[str, typer.Option(
    help=_ranged("permutations", "Sign flips of the randomization test and draws of the Tukey HSD (exact enumeration "
                                 "when 2^n is fewer)."), metavar="INTEGER", rich_help_panel=_COMPARE_PANEL)]
Resamples = Annotated[str, typer.Option(help=_ranged("bootstrap_resamples", "Bootstrap resamples of the confidence "
                                                                            "interval."),
                                        metavar="INTEGER", rich_help_panel=_COMPARE_PANEL)]
Seed = Annotated[str, typer.Option(help=_ranged("seed", "Seed of every random draw (same seed, same numbers)."),
                                   metavar="INTEGER", rich_help_panel=_COMPARE_PANEL)]
Correction = Annotated[str, typer.Option(help="Over every pair x measure x cutoff: holm or bh (Benjamini-Hochberg).",
                                         rich_help_panel=_COMPARE_PANEL)]
TieTolerance = Annotated[str, typer.Option(help=_ranged("tie_tolerance", "|difference| up to this is a tie."),
                                           metavar="NUMBER", rich_help_panel=_COMPARE_PANEL)]
Warehouse_ = Annotated[Path | None, typer.Option(
    "--warehouse", help="Compare stored evaluations (files are ingested and evaluated first) and store the comparison.")]
Rebase = Annotated[bool, typer.Option(
    help="With --warehouse: re-evaluate every run on one basis (the newest judgment version; the spec options, or "
         "the first evaluation's spec) instead of refusing evaluations whose judgments or spec differ.")]


# The comparison options, by parameter name: a stored comparison has its own.
COMPARISON_OPTIONS = ("baseline", "pairs", "queries", "permutations", "resamples", "seed", "correction",
                      "tie_tolerance")
# Each comparison option's setting, where the names differ.
_SETTING_OF_OPTION = {"queries": "query_set", "resamples": "bootstrap_resamples"}


def comparison_settings(**options: str | None) -> ComparisonSettings:
    """The settings the comparison options give (parameter name -> text as given, None: not given); a bad value is
    a SpecError naming the option (and a number's range)."""
    values: dict[str, object] = {}
    for option, text in options.items():
        if text is None:
            continue
        setting = _SETTING_OF_OPTION.get(option, option)
        flag = "--" + option.replace("_", "-")
        ranged = setting in RANGED_SETTINGS  # otherwise a choice, which the model checks
        values[setting] = NumericRange.of(ComparisonSettings, setting).parse(text, flag) if ranged else text
    try:
        return ComparisonSettings(**values)  # type: ignore[arg-type]
    except SpecError as error:
        if str(error).startswith("--"):  # names its option already
            raise
        for option, setting in _SETTING_OF_OPTION.items():
            if str(error).startswith(f"{setting}:"):
                raise SpecError(f"--{option}" + str(error).removeprefix(setting)) from None
        raise SpecError(f"--{error}") from None


def gathered(
    inputs: list[str], spec_options: SpecOptions, baseline: str | None, pairs: str | None, queries: str,
    permutations: str,
    resamples: str, seed: str, correction: str, tie_tolerance: str, warehouse: Path | None, rebase: bool,
    minimum_runs: int = 2, comparison_options: tuple[str, ...] = (),
) -> tuple[list[ComparedEvaluation], ComparisonResult | None]:
    """The evaluations the command line names and their comparison (None for a single evaluation); raises
    typer.Exit with a one-line error. `comparison_options`: the comparison options the command line gave."""
    from judged.flows.engine.compare import (
        IncomparableError, compare_evaluations, evaluate_files, is_comparison, load_comparison,
    )

    try:
        settings = comparison_settings(pairs=pairs, queries=queries, permutations=permutations, resamples=resamples,
                                       seed=seed, correction=correction, tie_tolerance=tie_tolerance)
        spec = spec_options.spec() if spec_options.given() else None  # stored evaluations keep theirs
    except (SpecError, InputError) as error:
        raise failure(error) from None
    if rebase and warehouse is None:
        raise fail("--rebase re-evaluates stored evaluations: give --warehouse too", EXIT_USAGE)
    runs_wanted = "a run" if minimum_runs == 1 else "at least two runs"
    repeated = sorted({item for item in inputs if inputs.count(item) > 1})
    if repeated:
        raise fail(f"{', '.join(repeated)} is given twice: a run is compared with other runs, not with itself",
                   EXIT_USAGE)
    try:
        if warehouse is None:
            if len(inputs) < 1 + minimum_runs:
                raise fail(f"give QRELS and {runs_wanted} (or evaluation ids with --warehouse)", EXIT_USAGE)
            from judged.flows.store.hashing import hash_in_background

            paths = [Path(item) for item in inputs]
            evaluations = evaluate_files(paths[0], paths[1:], spec or EvaluationSpec(), hash_in_background(paths))
            if len(evaluations) < 2:
                return evaluations, None
            return evaluations, compare_evaluations(evaluations, settings, baseline)
        from judged.flows.engine.compare import from_warehouse
        from judged.flows.pipeline.flows import compare_flow
        from judged.flows.store.warehouse import Store

        require_prefect_api()

        store = Store(warehouse)
        if len(inputs) == 1 and is_comparison(store, inputs[0]):
            ignored = [*spec_options.given(), *comparison_options, *(["--rebase"] if rebase else [])]
            if ignored:
                raise fail(f"{inputs[0]} is a stored comparison, made with its own evaluations and settings: "
                           f"{', '.join(ignored)} cannot change it (compare its evaluation ids instead)", EXIT_USAGE)
            comparison = load_comparison(store, inputs[0])
            return list(comparison.evaluations), comparison
        if all(store.has_evaluation(item) for item in inputs):
            if spec_options.given() and not rebase:
                raise fail(f"{', '.join(spec_options.given())}: stored evaluations keep the spec they were evaluated "
                           "under; give --rebase to evaluate their runs again under these options, or leave the "
                           "options out", EXIT_USAGE)
            evaluation_ids = inputs
        else:
            from judged.flows.engine.compare import inputs_to_evaluate, refuse_before_evaluating
            from judged.flows.pipeline.flows import evaluate_flow

            if len(inputs) < 1 + minimum_runs:
                raise fail(f"{inputs[-1]!r} is no evaluation or comparison id in {warehouse}; to evaluate files "
                           f"give QRELS and {runs_wanted}", EXIT_INPUT)
            if len(inputs) > 2:  # to be compared: what the comparison would refuse is refused before storing
                refuse_before_evaluating(*inputs_to_evaluate(store, inputs[0], inputs[1:]), spec or EvaluationSpec(),
                                         baseline)
            with orchestrated(f"evaluating {counted(len(inputs) - 1, 'run')} into {warehouse}"):
                reports = evaluate_flow(inputs[0], inputs[1:], (spec or EvaluationSpec()).canonical_json(),
                                        str(warehouse))
            evaluation_ids = [report.evaluation_id for report in reports]
        if len(evaluation_ids) < 2:
            if len(evaluation_ids) < minimum_runs:
                raise fail("a comparison needs at least two evaluations", EXIT_USAGE)
            return [from_warehouse(store, evaluation_ids[0])], None
        with orchestrated(f"comparing {len(evaluation_ids)} evaluations in {warehouse}"):
            identifier = compare_flow(evaluation_ids, settings.canonical_json(), str(warehouse), baseline, rebase,
                                      spec.canonical_json() if spec else None)
        print(f"comparison {identifier} (stored in {warehouse})", file=sys.stderr)
        comparison = load_comparison(store, identifier)
        return list(comparison.evaluations), comparison
    except IncomparableError as error:
        raise fail(str(error), EXIT_INPUT) from None
    except InputError as error:
        raise failure(error) from None


@app.command()
@with_spec_options(preset=None)
def compare(
    context: typer.Context,
    inputs: Inputs,
    baseline: Baseline = None,
    pairs: Pairs = None,
    queries: Queries = "common",
    permutations: Permutations = _default("permutations"),
    resamples: Resamples = _default("bootstrap_resamples"),
    seed: Seed = _default("seed"),
    correction: Correction = "holm",
    tie_tolerance: TieTolerance = _default("tie_tolerance"),
    output_format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    warehouse: Warehouse_ = None,
    rebase: Rebase = False,
    *,
    spec_options: SpecOptions,
) -> None:
    """Compare runs on one judgment basis, pair by pair (--pairs): per query, and per pair, measure and cutoff the mean
    difference with its bootstrap interval, paired t and randomization tests (corrected over the family), Cohen's
    d_z, wins / ties / losses, and for more than two runs a randomised Tukey HSD."""
    from judged.flows.report.comparison import as_json, print_table

    if output_format not in ("table", "json"):
        raise fail(f"--format must be table or json, not {output_format!r}", EXIT_USAGE)
    _, result = gathered(inputs, spec_options, baseline, pairs, queries, permutations, resamples, seed, correction,
                         tie_tolerance, warehouse, rebase,
                         comparison_options=tuple(given_on_command_line(context, *COMPARISON_OPTIONS)))
    if result is None:
        raise fail("a comparison needs at least two evaluations", EXIT_USAGE)
    if output_format == "json":
        print(as_json(result))
    else:
        print_table(result)


@app.command()
@with_spec_options(preset=None)
def report(
    context: typer.Context,
    inputs: Annotated[list[str], typer.Argument(
        help="QRELS RUN [RUN ...] (files), or with --warehouse one comparison id or evaluation ids (or files).")],
    out: Annotated[Path, typer.Option(help="The HTML file to write (self-contained: plots inlined as SVG).")],
    baseline: Baseline = None,
    pairs: Pairs = None,
    queries: Queries = "common",
    permutations: Permutations = _default("permutations"),
    resamples: Resamples = _default("bootstrap_resamples"),
    seed: Seed = _default("seed"),
    correction: Correction = "holm",
    tie_tolerance: TieTolerance = _default("tie_tolerance"),
    warehouse: Warehouse_ = None,
    rebase: Rebase = False,
    force: ForceOption = False,
    *,
    spec_options: SpecOptions,
) -> None:
    """Write one self-contained HTML report: summary with intervals, per-query differences coloured by robustness,
    unjudged coverage by cutoff, per-query value distributions, the significance table and the provenance. With
    two or more runs they are compared as `judged compare` does."""
    from judged.flows.report.html import render_report
    from judged.flows.store.outputs import check_output_target, write_output_file

    try:  # before anything is evaluated or stored
        check_output_target(out, force, warehouse=warehouse)
    except InputError as error:
        raise failure(error) from None
    evaluations, comparison = gathered(inputs, spec_options, baseline, pairs, queries, permutations, resamples, seed,
                                       correction, tie_tolerance, warehouse, rebase, minimum_runs=1,
                                       comparison_options=tuple(given_on_command_line(context, *COMPARISON_OPTIONS)))
    try:
        written = write_output_file(out, render_report(evaluations, comparison), force, warehouse=warehouse)
    except InputError as error:
        raise failure(error) from None
    print(f"wrote {written}")
