"""Several assessors' grades for one (query, document): how a declared assessor model turns them into the grades a
measure sees, and how far the assessors agree.

Belongs here: resolving the judgment rows of several assessors (one row per assessor and pair, never merged at
ingest) under an assessor model into one point grade per pair and, for the set models, the set of grades the pair
may have; who the assessors are (`assessor_counts`); the agreement between assessors (Cohen's kappa on grades,
linearly weighted, and on relevant-or-not, per pair of assessors; Krippendorff's alpha over all of them). Pure
functions of frames; no I/O.

Rows name their assessor in an `assessor` column; a set that names none has no such column (or, read from a table
that has one, nulls only: `names_assessors`), and is one unnamed assessor.

The models (`schemas.spec.AssessorModel`):
- `single:NAME`: NAME's grade where NAME judged the pair, else the consensus of the others;
- `median`, `min`, `max`: the consensus, the lowest or the highest grade given;
- `set`: any grade one of the assessors gave; `range`: any grade of the scale from the lowest to the highest given.
The consensus is the median of the grades given, the lower middle one of an even number (a grade of the scale, never
a value between two: with two assessors it is the lower grade, a cautious choice that is stated wherever it is
used). Under `set` and `range` the value a measure reports is the consensus's; the intervals range over the sets. An
unresolved row (a null grade) is no grade: the pair is unjudged only when every row of it is unresolved.

Adjudication. An assessor of kind `adjudicator` settles the others' disputes: where an adjudicator graded a pair, that
grade is the pair's grade under every model (`single:NAME` included, a point under `set` and `range`); elsewhere the
model reads the other assessors' rows as above. With several adjudicators on one pair, their consensus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

from judged.schemas.fields import PAIR, QUERY
from judged.schemas.tables import AGREEMENT, ASSESSOR_COUNTS

if TYPE_CHECKING:
    import numpy as np

SET_MODELS = ("set", "range")
POINT_MODELS = ("median", "min", "max")


def consensus(grades: pl.Expr) -> pl.Expr:
    """The median grade of a pair's grades (`grades`, in an aggregation), the lower middle one of an even number."""
    ordered = grades.drop_nulls().sort()
    return ordered.get((ordered.len() - 1) // 2, null_on_oob=True)


def resolve_assessors(
    judgments: pl.LazyFrame, model: str | None, scale: Sequence[int] | None = None,
    adjudicators: Sequence[str] = (),
) -> pl.LazyFrame:
    """One row per (query, document): `relevance`, the grade a measure sees under the assessor `model`, and
    `grade_set`, the grades the pair may have (sorted; null when it has one grade or none), with the pair's first
    `source_line` (for messages). `judgments` has one row per assessor and pair (`assessor`; a set without it has
    one assessor). `scale`: the grades `range` fills in (the judgment set's declared scale, else the grades
    present). `adjudicators`: the assessors whose grade, where they gave one, is the pair's under every model.
    Without a model, the rows are taken as they are (one per pair)."""
    if model is None or "assessor" not in judgments.collect_schema().names():
        kept = [c for c in judgments.collect_schema().names() if c != "assessor"]
        return judgments.select(kept).with_columns(grade_set=pl.lit(None, pl.List(pl.Int32)))
    by_adjudicator = pl.col("assessor").is_in(list(adjudicators))
    # The disputants' grades: an adjudicator's grade is no voice among them, it settles them (`settled`).
    grades = pl.when(~by_adjudicator).then(pl.col("relevance"))
    settled = consensus(pl.col("relevance").filter(by_adjudicator))
    given = grades.drop_nulls().unique().sort()
    if model.startswith("single:"):
        name = model.removeprefix("single:")
        own = grades.filter(pl.col("assessor") == name).drop_nulls().first()
        others = consensus(grades.filter(pl.col("assessor") != name))
        point, grade_set = pl.coalesce(own, others), pl.lit(None, pl.List(pl.Int32))
    elif model in POINT_MODELS:
        point = {"median": consensus(grades), "min": grades.min(), "max": grades.max()}[model]
        grade_set = pl.lit(None, pl.List(pl.Int32))
    elif model in SET_MODELS:
        point, grade_set = consensus(grades), given.implode()
    else:
        raise ValueError(f"unknown assessor model {model!r}")
    resolved = judgments.group_by(PAIR, maintain_order=True).agg(
        relevance=point.cast(pl.Int32), grade_set=grade_set.cast(pl.List(pl.Int32)),
        source_line=pl.col("source_line").min(), settled=settled.cast(pl.Int32),
    )
    if model == "range":
        low, high = pl.col("grade_set").list.min(), pl.col("grade_set").list.max()
        filled = pl.int_ranges(low, high + 1, dtype=pl.Int32)
        if scale:  # the declared scale's grades between the lowest and the highest given
            filled = filled.list.set_intersection(pl.lit(sorted(set(scale)), pl.List(pl.Int32))).list.sort()
        resolved = resolved.with_columns(grade_set=pl.when(pl.col("grade_set").list.len() > 0).then(filled))
    # One grade (or none): a point, as with one assessor; an adjudicated pair: the adjudicator's grade.
    return resolved.with_columns(
        relevance=pl.coalesce("settled", "relevance"),
        grade_set=pl.when((pl.col("grade_set").list.len() > 1) & pl.col("settled").is_null()).then(pl.col("grade_set")),
    ).drop("settled")


# -- who the assessors are ------------------------------------------------------------------------------------------


def names_assessors(judgments: pl.LazyFrame) -> pl.LazyFrame:
    """One boolean (`names_assessors`): whether any row names its assessor (an `assessor` column that is not null
    throughout)."""
    if "assessor" not in judgments.collect_schema().names():
        return pl.LazyFrame({"names_assessors": [False]})
    return judgments.select(pl.col("assessor").is_not_null().any().alias("names_assessors"))


def assessor_counts(judgments: pl.LazyFrame, kinds: Mapping[str, str] | None = None) -> pl.LazyFrame:
    """One row per assessor the rows name, in name order (byte order): their declared kind (`kinds`, null for a
    name it lacks), their judgments with a grade, their unresolved ones and the queries they judged
    (schemas.tables.ASSESSOR_COUNTS_TABLE)."""
    declared = pl.LazyFrame(list((kinds or {}).items()), schema={"assessor": pl.String, "assessor_kind": pl.String},
                            orient="row")
    return (
        judgments.filter(pl.col("assessor").is_not_null())
        .group_by("assessor")
        .agg(n_judgments=pl.col("relevance").count(), n_unresolved=pl.col("relevance").null_count(),
             n_queries=pl.col(QUERY).n_unique())
        .join(declared, on="assessor", how="left")
        .sort("assessor")
        .select(*ASSESSOR_COUNTS)
        .cast(ASSESSOR_COUNTS)  # type: ignore[arg-type]
    )


# -- agreement ------------------------------------------------------------------------------------------------------


def pairs_graded_twice(judgments: pl.LazyFrame) -> pl.LazyFrame:
    """The (query, document) pairs that more than one assessor graded, with how many and the pair's first
    `source_line`, in line order."""
    graded = judgments.filter(pl.col("relevance").is_not_null())
    return (
        graded.group_by(PAIR).agg(assessors=pl.col("assessor").n_unique(), source_line=pl.col("source_line").min())
        .filter(pl.col("assessors") > 1)
        .sort("source_line")
    )


def agreement_by_pair(judgments: pl.DataFrame, threshold: int) -> pl.DataFrame:
    """Per pair of assessors (`assessor_a` < `assessor_b`, every pair of the names the rows hold, in byte order):
    the (query, document) pairs both graded (`shared_pairs`), and over them Cohen's kappa on grades (`kappa`),
    linearly weighted (`weighted_kappa`: a disagreement counts the distance between the two grades, so 1 against 3
    counts twice 1 against 2, whichever grades anybody gave) and on relevant-or-not, relevant being a grade of at
    least `threshold` (`kappa_relevant`), with the share of exact agreement (`agreement`)
    (schemas.tables.AGREEMENT_TABLE). Kappa is null where it is undefined (no shared pair, or one grade only on both
    sides: no chance agreement to correct). Unresolved rows (a null grade) are no grade. Each assessor grades a pair
    once: the flows refuse a set where one grades it twice before asking."""
    from sklearn.metrics import cohen_kappa_score  # the agreement's libraries load where agreement is asked for

    graded = judgments.filter(pl.col("relevance").is_not_null()).select(*PAIR, "assessor", "relevance")
    names = sorted(judgments["assessor"].drop_nulls().unique().to_list())
    rows = []
    for index, first in enumerate(names):
        for second in names[index + 1:]:
            both = graded.filter(pl.col("assessor") == first).join(
                graded.filter(pl.col("assessor") == second), on=PAIR, suffix="_b"
            )
            a, b = both["relevance"].to_numpy(), both["relevance_b"].to_numpy()
            row: dict[str, object] = {"assessor_a": first, "assessor_b": second, "shared_pairs": both.height,
                                      "agreement": float((a == b).mean()) if both.height else None}
            for name, left, right, weights in (
                ("kappa", a, b, None), ("weighted_kappa", a, b, "linear"),
                ("kappa_relevant", a >= threshold, b >= threshold, None),
            ):
                row[name] = _kappa(cohen_kappa_score, left, right, weights)
            rows.append(row)
    return pl.DataFrame(rows, schema=AGREEMENT)


def _kappa(score: object, left: np.ndarray, right: np.ndarray, weights: str | None) -> float | None:
    import numpy as np

    if left.size == 0 or np.unique(np.concatenate([left, right])).size < 2:
        return None
    # Weighted, every grade from the lowest to the highest given is a label: scikit-learn weighs a disagreement by
    # the distance between the labels' indexes, which is then the distance between the grades (with only the grades
    # given as labels, 1 against 3 would count as 1 against 2 where nobody gave a 2).
    labels = None if weights is None else list(range(int(min(left.min(), right.min())),
                                                     int(max(left.max(), right.max())) + 1))
    value = float(score(left, right, labels=labels, weights=weights))  # type: ignore[operator]
    return None if np.isnan(value) else value


def krippendorff_alpha(judgments: pl.DataFrame, level: str = "ordinal") -> float | None:
    """Krippendorff's alpha over every assessor and (query, document) pair graded by at least two of them, at the
    `level` of measurement (ordinal: grades are ordered, their distances not assumed equal). Null with fewer than
    two assessors or nothing graded twice."""
    import krippendorff
    import numpy as np

    graded = judgments.filter(pl.col("relevance").is_not_null())
    twice = graded.group_by(PAIR).agg(pl.col("assessor").n_unique().alias("n")).filter(pl.col("n") >= 2)
    if twice.is_empty():
        return None
    # Pivoted on each assessor's number, not name: a name may be anything, `doc_id` included.
    matrix = (
        graded.join(twice.select(PAIR), on=PAIR)
        .group_by([*PAIR, "assessor"]).agg(pl.col("relevance").first())
        .with_columns(pl.format("a{}", pl.col("assessor").rank("dense")).alias("assessor"))
        .pivot(on="assessor", index=PAIR, values="relevance")
    )
    data = matrix.drop(PAIR).to_numpy().astype(np.float64).T  # assessors x pairs, nan where one did not grade
    if data.shape[0] < 2 or np.unique(data[~np.isnan(data)]).size < 2:
        return None
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
