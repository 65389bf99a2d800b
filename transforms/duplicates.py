"""Duplicate (query, document) pairs in runs and judgments: finding them, and resolving them under a declared policy.

trec_eval aborts on duplicates, ranx and ir_measures silently keep the last, trectools double-counts them. Here the
policy is part of the spec (`error`, `first`, `last`) and whatever is resolved is reported.
"""

from __future__ import annotations

import polars as pl
from polars.lazyframe.group_by import LazyGroupBy

from judged.schemas.fields import PAIR
from judged.transforms.errors import InputError


def docs_may_repeat() -> pl.Expr:
    """In a group-by: could the group's rows hold a doc_id twice? Compares the number of distinct 64-bit doc_id
    hashes with the number of rows: much cheaper than grouping by the pairs of strings (and than one set of all
    pair hashes), and never misses a repeat (a hash collision only sends the caller to the exact
    `duplicate_pairs`)."""
    return pl.col("doc_id").hash(29).n_unique() < pl.len()


def may_have_duplicates(table: pl.LazyFrame) -> pl.LazyFrame:
    """One boolean: could a (query_id, doc_id) pair occur twice? (`docs_may_repeat` per query.)"""
    return _any_group_may_repeat(table.group_by("query_id"))


def stretches_may_have_duplicates(table: pl.LazyFrame) -> pl.LazyFrame:
    """`may_have_duplicates` per stretch of consecutive rows of one query id: the same answer for rows in which no
    query id comes back after another (the caller knows it, or looks at the stretches' ids itself), found by
    grouping a number per row instead of hashing every row's query id."""
    return _any_group_may_repeat(table.group_by(pl.col("query_id").rle_id()))


def _any_group_may_repeat(groups: LazyGroupBy) -> pl.LazyFrame:
    return groups.agg(repeats=docs_may_repeat()).select(pl.col("repeats").any().alias("may_have_duplicates"))


def row_key(table: pl.LazyFrame) -> list[str]:
    """What one row stands for: a (query, document) pair, or of judgments that record their assessor, one
    assessor's grade of it (several assessors' grades of one pair are several opinions, never duplicates)."""
    return [*PAIR, "assessor"] if "assessor" in table.collect_schema().names() else list(PAIR)


def duplicate_pairs(table: pl.LazyFrame) -> pl.LazyFrame:
    """One row per (query_id, doc_id) (and assessor, when recorded: `row_key`) present more than once: how often,
    its source lines, and (for judgments) whether the duplicates disagree on the grade."""
    has_grades = "relevance" in table.collect_schema()
    conflicting = pl.col("relevance").n_unique() > 1 if has_grades else pl.lit(False)
    key = row_key(table)
    return (
        table.filter(pl.len().over(key) > 1)
        .group_by(key)
        .agg(
            count=pl.len(),
            source_lines=pl.col("source_line").sort(),
            conflicting=conflicting,
        )
        .sort(pl.col("source_lines").list.first())
    )


def raise_on_duplicates(duplicates: pl.DataFrame, source: str, what: str, unit: str = "line") -> None:
    """Under policy `error`: an InputError naming the first duplicate's query, document and both line numbers."""
    if duplicates.height == 0:
        return
    first = duplicates.row(0, named=True)
    lines = first["source_lines"]
    conflict = " with different grades" if first["conflicting"] else ""
    if first.get("assessor") is not None:
        conflict = f" by assessor '{first['assessor']}'{conflict}"
    more = f" ({duplicates.height - 1} more duplicate pairs)" if duplicates.height > 1 else ""
    raise InputError(
        source,
        f"duplicate {what} for query '{first['query_id']}', document '{first['doc_id']}'{conflict} at {unit}s "
        f"{lines[0]} and {lines[1]}{more}; declare a duplicates policy (first, last) to resolve",
        line=lines[1],
        unit=unit,
    )


def keep_one_per_pair(table: pl.LazyFrame, policy: str) -> pl.LazyFrame:
    """Under policy `first` or `last`: keep the earliest or latest source line of each (query, document)."""
    if policy not in ("first", "last"):
        raise ValueError(f"keep_one_per_pair needs policy 'first' or 'last', not {policy!r}")
    chosen = pl.col("source_line").min() if policy == "first" else pl.col("source_line").max()
    return table.filter(pl.col("source_line") == chosen.over(row_key(table)))
