"""How far a judgment set's assessors agree, as `judged agreement` prints it: per set, a table of its assessors, a
table of each pair of them, and Krippendorff's alpha; or the same as JSON.

Belongs here: the text and JSON of `SetAgreement`s (flows/engine/agreement.py). Tables go through
flows/report/terminal.py (fitted to the terminal, plain when piped).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from judged.flows.engine.agreement import SetAgreement

# What the statistics are, said once under each set's table of pairs.
PAIRS_CAPTION = ("kappa: Cohen's kappa on the grades over the pairs both graded; weighted: linearly, by the distance "
                 "between the grades; relevant: on relevant-or-not; '-': undefined (no shared pair, or one grade "
                 "only)")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def print_agreements(agreements: Sequence[SetAgreement], console: Console | None = None) -> None:
    """Each set's assessors and their agreement, one set after the other."""
    from judged.flows.report.terminal import Column, Kind, TextTable, output_console, print_line, print_table

    console = console or output_console()
    for number, agreement in enumerate(agreements):
        if number:
            console.print()
        print_table(TextTable(
            (Column("assessor", Kind.NAME, key=True), Column("kind", Kind.NAME), Column("judgments"),
             Column("unresolved"), Column("queries")),
            [(row["assessor"], row["assessor_kind"] or "-", f"{row['n_judgments']:,}", f"{row['n_unresolved']:,}",
              f"{row['n_queries']:,}") for row in agreement.assessors.iter_rows(named=True)],
            title=f"judgment set {agreement.label}: {len(agreement.assessors)} assessors",
        ), console)
        console.print()
        print_table(TextTable(
            (Column("assessor a", Kind.NAME, key=True), Column("assessor b", Kind.NAME, key=True),
             Column("shared pairs"), Column("agreement"), Column("kappa"), Column("weighted kappa"),
             Column(f"kappa relevant (grade >= {agreement.relevant_from})")),
            [(row["assessor_a"], row["assessor_b"], f"{row['shared_pairs']:,}",
              "-" if row["agreement"] is None else f"{row['agreement']:.1%}", _number(row["kappa"]),
              _number(row["weighted_kappa"]), _number(row["kappa_relevant"]))
             for row in agreement.pairs.iter_rows(named=True)],
            caption=PAIRS_CAPTION,
        ), console)
        alpha = ("undefined (fewer than two assessors, no pair graded twice, or one grade only)"
                 if agreement.alpha is None else f"{agreement.alpha:.4f}")
        print_line(console, f"Krippendorff's alpha (ordinal) over all {len(agreement.assessors)} assessors: {alpha}")


def agreements_json(agreements: Sequence[SetAgreement]) -> str:
    """The sets' agreement as JSON: a list of one object per set, with its assessors and pairs as rows."""
    payload: list[dict[str, Any]] = [
        {
            "judgment_set_id": agreement.judgment_set_id,
            "name": agreement.name,
            "version": agreement.version,
            "relevant_from": agreement.relevant_from,
            "assessors": agreement.assessors.to_dicts(),
            "pairs": agreement.pairs.to_dicts(),
            "alpha": agreement.alpha,
        }
        for agreement in agreements
    ]
    return json.dumps(payload, indent=2, ensure_ascii=False)
