"""The `judged agreement` command (registered on the `judged` application, flows/cli/common.py): how far the
assessors of a judgment set agree.

Belongs here: its arguments (judgment files named per assessor, or stored judgment sets), reading them, printing
and one-line errors. The agreement is flows/engine/agreement.py's; reading files with their assessors
flows/store/assessor_files.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from judged.flows.cli.common import (
    EXIT_INPUT, EXIT_USAGE, AssessorKindOption, AssessorOption, app, fail, failure, require_readable_warehouse,
)
from judged.schemas.spec import SpecError, parse_positive_int
from judged.transforms.errors import InputError

if TYPE_CHECKING:
    from judged.flows.engine.agreement import SetAgreement

@app.command()
def agreement(
    judgments: Annotated[list[str], typer.Argument(
        help="TREC qrels files, one per assessor (name each with --assessor), or a Parquet table with an `assessor` "
             "column; or, with --warehouse, stored judgment sets (NAME for its newest version, NAME@VERSION, or an "
             "id), each reported on its own.", metavar="SET_OR_FILES...")],
    warehouse: Annotated[Path | None, typer.Option(
        help="Read the judgment sets stored in this warehouse (the command writes nothing).")] = None,
    assessor: AssessorOption = None,
    assessor_kind: AssessorKindOption = None,
    rel: Annotated[str | None, typer.Option(
        metavar="GRADE", help="The lowest grade counted relevant in the kappa on relevant-or-not, for a set whose "
                              "metadata declares no relevant_from (trec_eval's -l).", show_default="1")] = None,
    output_format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Print how far a judgment set's assessors agree: per pair of assessors, the (query, document) pairs both
    graded, the share given the same grade, Cohen's kappa on the grades (plain and linearly weighted) and on
    relevant-or-not; and Krippendorff's alpha (ordinal) over all of them."""
    if output_format not in ("table", "json"):
        raise fail(f"--format must be table or json, not {output_format!r}", EXIT_USAGE)
    try:
        threshold = None if rel is None else parse_positive_int(rel, "--rel")
    except SpecError as error:
        raise failure(error) from None
    files = [Path(reference) for reference in judgments if Path(reference).is_file()]
    if files and len(files) < len(judgments):
        raise fail("give judgment files (one set) or stored judgment sets (with --warehouse), not both", EXIT_USAGE)
    if not files and warehouse is None:
        raise fail(f"{judgments[0]}: no such file (a stored judgment set's name or id needs --warehouse)", EXIT_INPUT)
    if not files and (assessor or assessor_kind):
        raise fail("--assessor and --assessor-kind name the assessors of files; a stored set keeps its own",
                   EXIT_USAGE)
    if warehouse is not None and not files:
        require_readable_warehouse(warehouse)
    try:
        agreements = (_of_files(files, assessor or [], assessor_kind or [], threshold) if files
                      else _of_stored(warehouse, judgments, threshold))  # type: ignore[arg-type]
    except (InputError, SpecError) as error:
        raise failure(error, order_hint=False) from None
    if output_format == "json":
        from judged.flows.report.agreement import agreements_json

        print(agreements_json(agreements))
    else:
        from judged.flows.report.agreement import print_agreements

        print_agreements(agreements)


def _of_files(files: list[Path], names: list[str], kinds: list[str], rel: int | None) -> list[SetAgreement]:
    from judged.flows.engine.agreement import agreement_of
    from judged.flows.store.assessor_files import load_judgments, parse_assessor_kinds

    table = load_judgments(files, names, kinds=parse_assessor_kinds(kinds))
    _require_assessors(table.source, table.scan)
    return [agreement_of(table, rel)]


def _of_stored(warehouse: Path, references: list[str], rel: int | None) -> list[SetAgreement]:
    from judged.flows.engine.agreement import agreement_of
    from judged.flows.pipeline.judging import resolve_parent
    from judged.flows.store.warehouse import Store

    store = Store(warehouse)
    found = []
    for reference in references:
        table = store.stored("judgments", resolve_parent(store, reference))
        _require_assessors(f"judgment set {reference}", table.load().scan)
        found.append(agreement_of(table, rel))
    return found


def _require_assessors(source: str, rows: object) -> None:
    from judged.flows.store.assessor_files import assessor_names

    if not assessor_names(rows):  # type: ignore[arg-type]
        raise InputError(source, "names no assessor (its grades are one unnamed assessor's): nothing to compare; "
                                 "give one TREC file per assessor with --assessor NAME each, or a Parquet table "
                                 "with an `assessor` column")
