"""The `judged compare` and `judged report` commands (registered on the `judged` application of flows/cli.py).

Belongs here: their arguments and options, turning them into a spec and comparison settings, choosing the direct
path (files, no warehouse) or the Prefect flow (a warehouse), printing, and one-line errors. No statistics.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from judged.flows.cli import EXIT_INPUT, EXIT_USAGE, _SPEC_PANEL, _fail, app, spec_from_options
from judged.schemas.spec import PRESETS, EvaluationSpec, SpecError
from judged.transforms.errors import InputError

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


def _spec(options: dict[str, object]) -> EvaluationSpec | None:
    """The spec the options give, or None when none was given (stored evaluations keep theirs)."""
    if all(value is None for value in options.values()):
        return None
    preset = options.pop("preset") or "judged"
    return spec_from_options(str(preset), **options)  # type: ignore[arg-type]


def compared(
    inputs: list[str], spec_options: dict[str, object], baseline: str | None, queries: str, permutations: int,
    resamples: int, seed: int, correction: str, tie_tolerance: float, warehouse: Path | None, rebase: bool,
):
    """The comparison the command line asks for (a ComparisonResult); raises typer.Exit with a one-line error."""
    from pydantic import ValidationError

    from judged.flows.compare import IncomparableError, compare_files, is_comparison, load_comparison
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
    try:
        if warehouse is None:
            if len(inputs) < 3:
                raise _fail("compare needs QRELS and at least two runs (or evaluation ids with --warehouse)",
                            EXIT_USAGE)
            from judged.flows.hashing import hash_in_background

            paths = [Path(item) for item in inputs]
            return compare_files(paths[0], paths[1:], spec or EvaluationSpec(), settings, baseline,
                                 hash_in_background(paths))
        from judged.flows.pipeline import compare_flow
        from judged.flows.warehouse import Warehouse

        store = Warehouse(warehouse)
        if len(inputs) == 1 and is_comparison(store, inputs[0]):
            return load_comparison(store, inputs[0])
        if all(store.has_evaluation(item) for item in inputs):
            evaluation_ids = inputs
        else:
            from judged.flows.pipeline import evaluate_flow

            if len(inputs) < 3:
                raise _fail(f"{inputs[-1]!r} is no evaluation id in {warehouse}; to evaluate files give QRELS and "
                            "at least two runs", EXIT_INPUT)
            reports = evaluate_flow(inputs[0], inputs[1:], (spec or EvaluationSpec()).canonical_json(),
                                    str(warehouse))
            evaluation_ids = [report.evaluation_id for report in reports]
        identifier = compare_flow(evaluation_ids, settings.canonical_json(), str(warehouse), baseline, rebase,
                                  spec.canonical_json() if spec else None)
        print(f"comparison {identifier} (stored in {warehouse})", file=sys.stderr)
        return load_comparison(store, identifier)
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
    from judged.flows.compare_output import as_json, print_table

    if output_format not in ("table", "json"):
        raise _fail(f"--format must be table or json, not {output_format!r}", EXIT_USAGE)
    spec_options = dict(
        preset=preset, cutoffs=cutoffs, gain=gain, gain_map=gain_map, negative_grades=negative_grades,
        ranking=ranking, precision=precision, ties=ties, unjudged=unjudged, ideal=ideal, no_relevant=no_relevant,
        query_set=query_set, run_duplicates=run_duplicates, judgment_duplicates=judgment_duplicates, depth=depth,
        query_weights=query_weights,
    )
    result = compared(inputs, spec_options, baseline, queries, permutations, resamples, seed, correction,
                      tie_tolerance, warehouse, rebase)
    if output_format == "json":
        print(as_json(result))
    else:
        print_table(result)
