"""The `judged` command line.

Belongs here: argument parsing, turning options into an `EvaluationSpec`, calling the engine or the flows, printing,
and turning every expected error into one line on stderr and a non-zero exit (never a traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from schemas.spec import PRESETS, EvaluationSpec, SpecError, build_spec, parse_cutoffs, parse_gain_map
from transforms.errors import InputError

app = typer.Typer(
    name="judged",
    help="Evaluate search runs with NDCG against relevance judgments, every choice declared.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)



@app.callback()
def _root() -> None:
    """Evaluate search runs with NDCG against relevance judgments, every choice declared."""


EXIT_INPUT = 1
EXIT_USAGE = 2

_SPEC_PANEL = "Spec options (override the preset)"


def _fail(message: str, code: int) -> typer.Exit:
    print(f"judged: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def _read_weights(path: Path) -> tuple[tuple[str, float], ...]:
    pairs = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            pairs.append((parts[0], float(parts[1])))
        except ValueError:
            raise InputError(str(path), "expected `query_id weight`", number) from None
    return tuple(pairs)


def spec_from_options(
    preset_name: str,
    cutoffs: str | None = None,
    gain: str | None = None,
    gain_map: str | None = None,
    negative_grades: str | None = None,
    ranking: str | None = None,
    precision: str | None = None,
    ties: str | None = None,
    unjudged: str | None = None,
    ideal: str | None = None,
    no_relevant: str | None = None,
    query_set: str | None = None,
    run_duplicates: str | None = None,
    judgment_duplicates: str | None = None,
    depth: int | None = None,
    query_weights: Path | None = None,
) -> EvaluationSpec:
    """The spec the options describe: a preset, then each given override. Raises SpecError or InputError."""
    weights = _read_weights(query_weights) if query_weights else None
    return build_spec(
        preset_name,
        cutoffs=parse_cutoffs(cutoffs) if cutoffs else None,
        gain=gain,
        gain_map=parse_gain_map(gain_map) if gain_map else None,
        negative_grades=negative_grades,
        ranking=ranking,
        score_precision=precision,
        ties=ties,
        unjudged=unjudged,
        ideal=ideal,
        no_relevant=no_relevant,
        query_set=query_set,
        run_duplicates=run_duplicates,
        judgment_duplicates=judgment_duplicates,
        depth=depth,
        query_weights=weights,
        aggregation="weighted_mean" if weights else None,
    )


@app.command()
def evaluate(
    qrels: Annotated[Path, typer.Argument(help="Judgments: TREC qrels `qid iter docid grade` (.gz ok) or Parquet.")],
    runs: Annotated[list[Path], typer.Argument(help="One or more runs: TREC `qid Q0 docid rank score tag` or Parquet.")],
    preset: Annotated[
        str, typer.Option(help=f"Starting point for the spec: {', '.join(PRESETS)}. 'trec_eval' = trec_eval 10 -c.")
    ] = "judged",
    cutoffs: Annotated[
        str | None, typer.Option(help="Comma-separated k values; 'all' = whole list. Default: 5,10,15,20,30,100,200,500,1000.", rich_help_panel=_SPEC_PANEL)
    ] = None,
    gain: Annotated[str | None, typer.Option(help="linear (grade) or exponential (2^grade-1).", rich_help_panel=_SPEC_PANEL)] = None,
    gain_map: Annotated[
        str | None, typer.Option(help="Explicit gains, e.g. 0=0,1=0,2=2,3=3; every grade present must be mapped.", rich_help_panel=_SPEC_PANEL)
    ] = None,
    negative_grades: Annotated[str | None, typer.Option(help="zero (gain 0) or error.", rich_help_panel=_SPEC_PANEL)] = None,
    ranking: Annotated[str | None, typer.Option(help="score (rank column kept for audit) or rank (trust the file's ranks).", rich_help_panel=_SPEC_PANEL)] = None,
    precision: Annotated[str | None, typer.Option(help="Score precision: float64 or float32 (trec_eval 9, pytrec_eval).", rich_help_panel=_SPEC_PANEL)] = None,
    ties: Annotated[str | None, typer.Option(help="docid_desc (trec_eval), docid_asc, or average (scikit-learn).", rich_help_panel=_SPEC_PANEL)] = None,
    unjudged: Annotated[str | None, typer.Option(help="zero (gain 0, counted) or condensed (removed before ranking, trec_eval -J).", rich_help_panel=_SPEC_PANEL)] = None,
    ideal: Annotated[str | None, typer.Option(help="Ideal universe: judged (all judged documents) or retrieved (scikit-learn).", rich_help_panel=_SPEC_PANEL)] = None,
    no_relevant: Annotated[str | None, typer.Option(help="IDCG = 0: null (undefined, left out of the mean) or zero.", rich_help_panel=_SPEC_PANEL)] = None,
    query_set: Annotated[str | None, typer.Option(help="judged (missing queries score 0, trec_eval -c), both, or judged_strict.", rich_help_panel=_SPEC_PANEL)] = None,
    run_duplicates: Annotated[str | None, typer.Option(help="Duplicate run rows: error, first or last.", rich_help_panel=_SPEC_PANEL)] = None,
    judgment_duplicates: Annotated[str | None, typer.Option(help="Duplicate judgments: error, first or last.", rich_help_panel=_SPEC_PANEL)] = None,
    depth: Annotated[int | None, typer.Option(min=1, help="Cut each ranking to its first M documents first (trec_eval -M).", rich_help_panel=_SPEC_PANEL)] = None,
    query_weights: Annotated[
        Path | None, typer.Option(help="File of `query_id weight` lines: weighted mean (unlisted queries weigh 1).", rich_help_panel=_SPEC_PANEL)
    ] = None,
    output_format: Annotated[str, typer.Option("--format", help="table, json or trec (trec_eval -q lines).")] = "table",
) -> None:
    """Evaluate RUN(s) against QRELS and print the summary (table), everything (json) or trec_eval-style lines."""
    from flows.engine import evaluate as evaluate_loaded
    from flows.io import load_table
    from flows.report import as_json, as_trec, print_tables

    if output_format not in ("table", "json", "trec"):
        raise _fail(f"--format must be table, json or trec, not {output_format!r}", EXIT_USAGE)
    try:
        spec = spec_from_options(
            preset, cutoffs, gain, gain_map, negative_grades, ranking, precision, ties, unjudged, ideal,
            no_relevant, query_set, run_duplicates, judgment_duplicates, depth, query_weights,
        )
    except SpecError as error:
        raise _fail(str(error), EXIT_USAGE) from None
    except InputError as error:
        raise _fail(str(error), EXIT_INPUT) from None
    try:
        judgments = load_table(qrels, "judgments")
        results = [evaluate_loaded(load_table(run, "run"), judgments, spec) for run in runs]
    except InputError as error:
        raise _fail(str(error), EXIT_INPUT) from None
    if output_format == "json":
        print(as_json(results))
    elif output_format == "trec":
        print(as_trec(results))
    else:
        print_tables(results, Console())


def main() -> None:
    app()


if __name__ == "__main__":
    main()
