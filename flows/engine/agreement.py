"""How far a judgment set's assessors agree: the set's rows (read from files, or stored) in, its assessors, the
agreement of each pair of them and Krippendorff's alpha out, at the set's threshold of relevance.

Belongs here: choosing the threshold (`relevance_threshold`), computing a set's agreement from its table
(`agreement_of`: transforms/assessors.py computes), and the rows the warehouse stores beside the set
(`SetAgreement.stored`). `judged agreement`, `judged.agreement` and the store (flows/store/warehouse.py) all take it
from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import polars as pl

from judged.flows.store.readers import Table
from judged.schemas.provenance import JudgmentSetMetadata
from judged.schemas.tables import STORED_AGREEMENT, STORED_ASSESSORS
from judged.transforms.assessors import agreement_by_pair, assessor_counts, krippendorff_alpha
from judged.transforms.errors import UsageError

# trec_eval's -l default: a grade of 1 or more is relevant.
DEFAULT_RELEVANT_FROM = 1


def relevance_threshold(metadata: JudgmentSetMetadata, rel: int | None, option: str = "--rel") -> int:
    """The lowest grade counted relevant: the set's declared `relevant_from`, else `rel` (the command line's
    `--rel`), else trec_eval's default 1. A `rel` that contradicts the set's declaration is a UsageError naming
    `option`: the set says what its assessors meant by relevant."""
    declared = metadata.relevant_from
    if declared is not None and rel is not None and rel != declared:
        name = f" {metadata.name!r}" if metadata.name else ""
        raise UsageError(f"{option} {rel}", f"the judgment set{name} declares relevant_from = {declared}: the "
                                            "agreement on relevant-or-not takes the set's own threshold")
    if rel is not None and rel < 1:
        raise UsageError(f"{option} {rel}", "the lowest relevant grade is at least 1 (trec_eval's -l)")
    return declared if declared is not None else (DEFAULT_RELEVANT_FROM if rel is None else rel)


@dataclass(frozen=True, eq=False)  # holds frames
class SetAgreement:
    """A judgment set's assessors and how far they agree."""

    judgment_set_id: str
    name: str  # the set's name and version label, as its metadata declares them ("" when it does not)
    version: str
    relevant_from: int  # the lowest grade counted relevant in `kappa_relevant`
    assessors: pl.DataFrame
    """One row per assessor the set names (schemas.tables.ASSESSOR_COUNTS_TABLE): kind, judgments, unresolved,
    queries."""
    pairs: pl.DataFrame
    """One row per pair of assessors (schemas.tables.AGREEMENT_TABLE): shared pairs, exact agreement, Cohen's kappa
    plain, linearly weighted and on relevant-or-not."""
    alpha: float | None
    """Krippendorff's alpha (ordinal) over every assessor; None where undefined (fewer than two assessors, no pair
    graded twice, or one grade only)."""

    @property
    def label(self) -> str:
        """How reports name the set: `name@version` (or what of it is declared) and its id."""
        named = "@".join(part for part in (self.name, self.version) if part)
        return f"{named} ({self.judgment_set_id})" if named else self.judgment_set_id

    def stored(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The rows the warehouse stores beside the set: its assessors and its agreement (`STORED_ASSESSORS`,
        `STORED_AGREEMENT`)."""
        keyed = pl.lit(self.judgment_set_id, pl.String).alias("judgment_set_id")
        assessors = self.assessors.select(keyed, pl.all()).cast(STORED_ASSESSORS)  # type: ignore[arg-type]
        pairs = self.pairs.select(
            keyed, pl.all(), relevant_from=pl.lit(self.relevant_from, pl.Int32), alpha=pl.lit(self.alpha, pl.Float64)
        ).cast(STORED_AGREEMENT)  # type: ignore[arg-type]
        return assessors, pairs


def agreement_of(table: Table, rel: int | None = None, rel_option: str = "--rel") -> SetAgreement:
    """The agreement of the set's assessors at its threshold (`relevance_threshold`; `rel_option` names `rel` in
    its errors), from its rows: each assessor grades a pair once (refused otherwise before here:
    flows/store/assessor_files.py `check_assessors`)."""
    metadata = cast(JudgmentSetMetadata, table.metadata)
    threshold = relevance_threshold(metadata, rel, rel_option)
    rows = table.load().frame
    if "assessor" not in rows.columns:  # a set that names no assessor: one, unnamed
        rows = rows.with_columns(assessor=pl.lit(None, pl.String))
    return SetAgreement(
        judgment_set_id=table.deferred_id()(),
        name=metadata.name,
        version=metadata.version,
        relevant_from=threshold,
        assessors=assessor_counts(rows.lazy(), metadata.assessor_kinds).collect(),
        pairs=agreement_by_pair(rows, threshold),
        alpha=krippendorff_alpha(rows.filter(pl.col("assessor").is_not_null())),
    )
