"""The `judged compare` and `judged report` commands (registered on the `judged` application of flows/cli/app.py).

Belongs here: their arguments and options, turning them into a spec and comparison settings, choosing the direct
path (files, no warehouse) or the Prefect flow (a warehouse), printing, and one-line errors. No statistics.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from judged.flows.cli.app import (
    EXIT_INPUT, EXIT_USAGE, _SPEC_PANEL, _fail, _require_prefect_api, app, orchestrated, spec_from_options,
)
from judged.flows.report.wording import counted
from judged.schemas.spec import PRESETS, EvaluationSpec, SpecError
from judged.transforms.errors import InputError

if TYPE_CHECKING:  # the statistics load scipy: only the commands that compare import them
    from judged.flows.pipeline.compare import ComparedEvaluation, ComparisonResult

_COMPARE_PANEL = "Comparison options"

Inputs = Annotated[list[str], typer.Argument(
    help="QRELS RUN_A RUN_B [RUN ...] (files, evaluated under the spec options), or with --warehouse stored "
         "evaluation ids (or files, evaluated and stored first).")]
Preset = Annotated[str | None, typer.Option(help=f"Starting point for the spec: {', '.join(PRESETS)}.",
                                            rich_help_panel=_SPEC_PANEL)]
SpecText = Annotated[str | None, typer.Option(help="As for `judged evaluate`.", rich_help_panel=_SPEC_PANEL)]
Weights = Annotated[Path | None, typer.Option(help="As for `judged evaluate`.", rich_help_panel=_SPEC_PANEL)]
Baseline = Annotated[str | None, typer.Option(help="The run every other run is compared with (default: the first).",
                                              rich_help_panel=_COMPARE_PANEL)]
Queries = Annotated[str, typer.Option(
    help="common: the queries with a value in every run; judged: every judged query, a query missing from a run "
         "scoring 0 (trec_eval -c).", rich_help_panel=_COMPARE_PANEL)]
Permutations = Annotated[int, typer.Option(
    help="Sign flips of the randomization test and draws of the Tukey HSD (exact enumeration when 2^n is fewer).",
    rich_help_panel=_COMPARE_PANEL)]
Resamples = Annotated[int, typer.Option(help="Bootstrap resamples of the confidence interval.",
                                        rich_help_panel=_COMPARE_PANEL)]
Seed = Annotated[int, typer.Option(help="Seed of every random draw (same seed, same numbers).",
                                   rich_help_panel=_COMPARE_PANEL)]
Correction = Annotated[str, typer.Option(help="Over every pair x measure x cutoff: holm or bh (Benjamini-Hochberg).",
                                         rich_help_panel=_COMPARE_PANEL)]
TieTolerance = Annotated[float, typer.Option(help="|difference| up to this is a tie.", rich_help_panel=_COMPARE_PANEL)]
Warehouse_ = Annotated[Path | None, typer.Option(
    "--warehouse", help="Compare stored evaluations (files are ingested and evaluated first) and store the comparison.")]
Rebase = Annotated[bool, typer.Option(
    help="With --warehouse: re-evaluate every run on one basis (the newest judgment version; the spec options, or "
         "the first evaluation's spec) instead of refusing evaluations whose judgments or spec differ.")]


# The spec options both commands take, as `judged evaluate` names them (spec_from_options' parameters).
SPEC_OPTIONS = ("preset", "cutoffs", "gain", "gain_map", "negative_grades", "ranking", "precision", "ties", "unjudged",
                "ideal", "no_relevant", "query_set", "run_duplicates", "judgment_duplicates", "depth", "query_weights")


def _spec(options: dict[str, object]) -> EvaluationSpec | None:
    """The spec the options give, or None when none was given (stored evaluations keep theirs)."""
    if all(value is None for value in options.values()):
        return None
    preset = options.pop("preset") or "judged"
    return spec_from_options(str(preset), **options)  # type: ignore[arg-type]


def gathered(
    inputs: list[str], spec_options: dict[str, object], baseline: str | None, queries: str, permutations: int,
    resamples: int, seed: int, correction: str, tie_tolerance: float, warehouse: Path | None, rebase: bool,
    minimum_runs: int = 2,
) -> tuple[list[ComparedEvaluation], ComparisonResult | None]:
    """The evaluations the command line names and their comparison (None for a single evaluation); raises
    typer.Exit with a one-line error."""
    from pydantic import ValidationError

    from judged.flows.pipeline.compare import (
        IncomparableError, compare_evaluations, evaluate_files, is_comparison, load_comparison,
    )
    from judged.schemas.comparison import ComparisonSettings

    try:
        settings = ComparisonSettings(
            query_set=queries, permutations=permutations, bootstrap_resamples=resamples, seed=seed,  # type: ignore[arg-type]
            correction=correction, tie_tolerance=tie_tolerance,  # type: ignore[arg-type]
        )
        spec = _spec(dict(spec_options))
    except ValidationError as error:
        problem = error.errors()[0]
        option = {"query_set": "--queries", "bootstrap_resamples": "--resamples"}.get(
            str(problem["loc"][0]), "--" + str(problem["loc"][0]).replace("_", "-"))
        raise _fail(f"{option}: {problem['msg']}", EXIT_USAGE) from None
    except SpecError as error:
        raise _fail(str(error), EXIT_USAGE) from None
    except InputError as error:
        raise _fail(str(error), EXIT_INPUT) from None
    if rebase and warehouse is None:
        raise _fail("--rebase re-evaluates stored evaluations: give --warehouse too", EXIT_USAGE)
    runs_wanted = "a run" if minimum_runs == 1 else "at least two runs"
    try:
        if warehouse is None:
            if len(inputs) < 1 + minimum_runs:
                raise _fail(f"give QRELS and {runs_wanted} (or evaluation ids with --warehouse)", EXIT_USAGE)
            from judged.flows.store.hashing import hash_in_background

            paths = [Path(item) for item in inputs]
            evaluations = evaluate_files(paths[0], paths[1:], spec or EvaluationSpec(), hash_in_background(paths))
            if len(evaluations) < 2:
                return evaluations, None
            return evaluations, compare_evaluations(evaluations, settings, baseline)
        from judged.flows.pipeline.compare import from_warehouse
        from judged.flows.pipeline.flows import compare_flow
        from judged.flows.store.warehouse import Store

        _require_prefect_api()

        store = Store(warehouse)
        if len(inputs) == 1 and is_comparison(store, inputs[0]):
            comparison = load_comparison(store, inputs[0])
            return list(comparison.evaluations), comparison
        if all(store.has_evaluation(item) for item in inputs):
            evaluation_ids = inputs
        else:
            from judged.flows.pipeline.flows import evaluate_flow

            if len(inputs) < 1 + minimum_runs:
                raise _fail(f"{inputs[-1]!r} is no evaluation or comparison id in {warehouse}; to evaluate files "
                            f"give QRELS and {runs_wanted}", EXIT_INPUT)
            with orchestrated(f"evaluating {counted(len(inputs) - 1, 'run')} into {warehouse}"):
                reports = evaluate_flow(inputs[0], inputs[1:], (spec or EvaluationSpec()).canonical_json(),
                                        str(warehouse))
            evaluation_ids = [report.evaluation_id for report in reports]
        if len(evaluation_ids) < 2:
            if len(evaluation_ids) < minimum_runs:
                raise _fail("a comparison needs at least two evaluations", EXIT_USAGE)
            return [from_warehouse(store, evaluation_ids[0])], None
        with orchestrated(f"comparing {len(evaluation_ids)} evaluations in {warehouse}"):
            identifier = compare_flow(evaluation_ids, settings.canonical_json(), str(warehouse), baseline, rebase,
                                      spec.canonical_json() if spec else None)
        print(f"comparison {identifier} (stored in {warehouse})", file=sys.stderr)
        comparison = load_comparison(store, identifier)
        return list(comparison.evaluations), comparison
    except (IncomparableError, InputError) as error:
        raise _fail(str(error), EXIT_INPUT) from None


@app.command()
def compare(
    inputs: Inputs,
    baseline: Baseline = None,
    queries: Queries = "common",
    permutations: Permutations = 10_000,
    resamples: Resamples = 10_000,
    seed: Seed = 0,
    correction: Correction = "holm",
    tie_tolerance: TieTolerance = 1e-9,
    output_format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    warehouse: Warehouse_ = None,
    rebase: Rebase = False,
    preset: Preset = None, cutoffs: SpecText = None, gain: SpecText = None, gain_map: SpecText = None,
    negative_grades: SpecText = None, ranking: SpecText = None, precision: SpecText = None, ties: SpecText = None,
    unjudged: SpecText = None, ideal: SpecText = None, no_relevant: SpecText = None, query_set: SpecText = None,
    run_duplicates: SpecText = None, judgment_duplicates: SpecText = None, depth: SpecText = None,
    query_weights: Weights = None,
) -> None:
    """Compare runs on one judgment basis, against a baseline: per query, and per pair, measure and cutoff the mean
    difference with its bootstrap interval, paired t and randomization tests (corrected over the family), Cohen's
    d_z, wins / ties / losses, and for more than two runs a randomised Tukey HSD."""
    from judged.flows.report.comparison import as_json, print_table

    if output_format not in ("table", "json"):
        raise _fail(f"--format must be table or json, not {output_format!r}", EXIT_USAGE)
    spec_options = {name: value for name, value in locals().items() if name in SPEC_OPTIONS}
    _, result = gathered(inputs, spec_options, baseline, queries, permutations, resamples, seed, correction,
                         tie_tolerance, warehouse, rebase)
    if result is None:
        raise _fail("a comparison needs at least two evaluations", EXIT_USAGE)
    if output_format == "json":
        print(as_json(result))
    else:
        print_table(result)


@app.command()
def report(
    inputs: Annotated[list[str], typer.Argument(
        help="QRELS RUN [RUN ...] (files), or with --warehouse one comparison id or evaluation ids (or files).")],
    out: Annotated[Path, typer.Option(help="The HTML file to write (self-contained: plots inlined as SVG).")],
    baseline: Baseline = None,
    queries: Queries = "common",
    permutations: Permutations = 10_000,
    resamples: Resamples = 10_000,
    seed: Seed = 0,
    correction: Correction = "holm",
    tie_tolerance: TieTolerance = 1e-9,
    warehouse: Warehouse_ = None,
    rebase: Rebase = False,
    preset: Preset = None, cutoffs: SpecText = None, gain: SpecText = None, gain_map: SpecText = None,
    negative_grades: SpecText = None, ranking: SpecText = None, precision: SpecText = None, ties: SpecText = None,
    unjudged: SpecText = None, ideal: SpecText = None, no_relevant: SpecText = None, query_set: SpecText = None,
    run_duplicates: SpecText = None, judgment_duplicates: SpecText = None, depth: SpecText = None,
    query_weights: Weights = None,
) -> None:
    """Write one self-contained HTML report: summary with intervals, per-query differences coloured by robustness,
    unjudged coverage by cutoff, per-query value distributions, the significance table and the provenance. With
    two or more runs they are compared as `judged compare` does."""
    from judged.flows.report.html import write_report

    spec_options = {name: value for name, value in locals().items() if name in SPEC_OPTIONS}
    evaluations, comparison = gathered(inputs, spec_options, baseline, queries, permutations, resamples, seed,
                                       correction, tie_tolerance, warehouse, rebase, minimum_runs=1)
    try:
        written = write_report(out, evaluations, comparison)
    except OSError as error:
        raise _fail(f"{out}: cannot write the report: {error.strerror or error}", EXIT_INPUT) from None
    print(f"wrote {written}")
