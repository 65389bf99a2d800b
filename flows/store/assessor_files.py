"""Judgment sets that name their assessors, as files give them: several TREC qrels files read into one set, each
file one assessor's, named as it is read (`--assessor NAME` once per file, in order); or one Parquet table whose
`assessor` column names them. Then each assessor's declared kind (the sidecar's `[assessors] kinds`, or
`--assessor-kind NAME=KIND`), and the checks a set that names its assessors passes before it is stored or its
agreement computed: each assessor grades a (query, document) pair once, and every declared kind is an assessor's.

Belongs here: combining the files' tables (each read and validated by flows/store/readers.py) into one
`LoadedTable` whose content hash covers the files and the names given them, merging the files' sidecars, reading
`NAME=KIND` options, and those checks. The agreement itself is transforms/assessors.py's; storing it with the set
flows/store/warehouse.py's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import polars as pl

from judged.flows.engine.limits import DEFAULT_LIMITS, Limits
from judged.flows.store.hashing import known_hashes
from judged.flows.store.kinds import JUDGMENT_SET
from judged.flows.store.readers import SIDECAR_SUFFIX, LoadedTable, load_table, read_sidecar, sniff_format
from judged.schemas.provenance import (
    JudgmentSetMetadata, assessor_kind_problem, assessor_name_problem, canonical_json,
)
from judged.schemas.spec import SpecError
from judged.transforms.duplicates import duplicate_pairs
from judged.transforms.errors import InputError, UsageError
from judged.transforms.parse import in_contract

ASSESSOR_OPTION = "--assessor"
KIND_OPTION = "--assessor-kind"


def parse_assessor_kinds(items: Sequence[str], option: str = KIND_OPTION) -> dict[str, str]:
    """`NAME=KIND` items (`--assessor-kind`, repeatable) as {name: kind}; a SpecError naming the option and the item
    when one is not NAME=KIND, names no valid assessor or kind, or gives one assessor two kinds."""
    kinds: dict[str, str] = {}
    for item in items:
        name, sep, kind = item.rpartition("=")
        problem = (
            "is not NAME=KIND" if not sep or not name
            else assessor_name_problem(name) or assessor_kind_problem(kind)
        )
        if problem:
            raise SpecError(f"{option} {item!r}: {problem}")
        if kinds.get(name, kind) != kind:
            raise SpecError(f"{option} {item!r}: assessor {name!r} is given the kinds {kinds[name]!r} and {kind!r}")
        kinds[name] = kind
    return kinds


def kinds_of(value: Mapping[str, str] | Sequence[str] | None, option: str) -> dict[str, str]:
    """Assessor kinds given as a mapping {name: kind} or as `NAME=KIND` items, checked as `parse_assessor_kinds`
    checks them."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return parse_assessor_kinds([f"{name}={kind}" for name, kind in value.items()], option)
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise SpecError(f"{option} must be a dict {{name: kind}} or a list of 'NAME=KIND', not {value!r}")
    return parse_assessor_kinds(list(value), option)


# -- the files' metadata ------------------------------------------------------------------------------------------


def merged_sidecars(paths: Sequence[Path]) -> JudgmentSetMetadata:
    """The metadata of a set read from several files: each file's sidecar (`<file>.meta.toml`, when present),
    merged. Each field is taken from the sidecars that declare it (a value other than its default), which must agree;
    the assessors' kinds are merged by name. An InputError names the two sidecars that disagree, and the field."""
    merged: dict[str, Any] = {}
    declared_in: dict[str, Path] = {}
    kinds: dict[str, str] = {}
    kind_declared_in: dict[str, Path] = {}
    defaults = JudgmentSetMetadata().model_dump()
    for path in paths:
        metadata = cast(JudgmentSetMetadata, read_sidecar(path, JUDGMENT_SET.name))
        sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
        for field, value in metadata.model_dump().items():
            if field == "assessors":
                value = metadata.assessors.description
                for name, kind in metadata.assessors.kinds:
                    if kinds.get(name, kind) != kind:
                        raise InputError(str(sidecar), f"assessors.kinds: {name!r} is {kind!r} here and "
                                                       f"{kinds[name]!r} in {kind_declared_in[name]}")
                    kinds[name], kind_declared_in[name] = kind, sidecar
                if not value:
                    continue
            elif value == defaults.get(field):
                continue
            if field in merged and merged[field] != value:
                raise InputError(str(sidecar), f"{field} is {value!r} here and {merged[field]!r} in "
                                               f"{declared_in[field]}: the sidecars of one judgment set must agree")
            merged[field], declared_in[field] = value, sidecar
    merged["assessors"] = {"description": merged.get("assessors", ""), "kinds": kinds}
    return JudgmentSetMetadata.model_validate(merged)


# -- reading ------------------------------------------------------------------------------------------------------


def load_judgments(
    paths: Sequence[str | Path],
    assessors: Sequence[str] = (),
    metadata: JudgmentSetMetadata | None = None,
    kinds: Mapping[str, str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    allow_empty: bool = False,
    print_warnings: bool = True,
    allow_empty_option: str | None = None,
    assessor_option: str = ASSESSOR_OPTION,
) -> LoadedTable:
    """A judgment set read from `paths`, validated, and checked as a set that names its assessors is
    (`check_assessors`). One file and no `assessors`: the file as `load_table` reads it (a Parquet table may name
    its assessors in its `assessor` column). Otherwise one name in `assessors` per file, in order: each file (TREC
    text) is that assessor's judgments, and the set holds them all, each row with its assessor, each file's rows
    keeping their own line numbers. Its content hash covers each file's content and the name it was given (the
    order of the files aside).

    Without `metadata`, the files' sidecars are read (merged: `merged_sidecars`). `kinds` ({name: kind}, the
    command line's `--assessor-kind`) are added to the kinds the metadata declares, and replace them where both
    name one assessor. Errors name the names' option as `assessor_option` (the Python API's `assessors`)."""
    option = assessor_option
    files = [Path(path) for path in paths]
    if not files:
        raise UsageError("judgments", "no judgments file given")
    if len(files) > 1 and not assessors:
        raise UsageError(option, f"{len(files)} judgments files are one set only when each names its assessor: "
                                 f"give {option} one name per file, in their order")
    if assessors and len(assessors) != len(files):
        raise UsageError(option, f"{len(files)} judgments file(s) and {len(assessors)} {option} name(s): give one "
                                 "per file, in the order of the files")
    for name in assessors:
        if problem := assessor_name_problem(name):
            raise UsageError(f"{option} {name!r}", problem)
    repeated = sorted({name for name in assessors if list(assessors).count(name) > 1})
    if repeated:
        raise UsageError(f"{option} {repeated[0]}", "is given for two files: one file per assessor (put one "
                                                    "assessor's judgments in one file)")
    if metadata is None:
        metadata = cast(JudgmentSetMetadata, read_sidecar(files[0], JUDGMENT_SET.name)) if len(files) == 1 \
            else merged_sidecars(files)
    read = dict(limits=limits, allow_empty=allow_empty, print_warnings=print_warnings,
                allow_empty_option=allow_empty_option)
    if not assessors:
        table = load_table(files[0], JUDGMENT_SET.name, metadata, **read)  # type: ignore[arg-type]
    else:
        table = _named_files(files, list(assessors), metadata, read, option)
    table = with_kinds(table, kinds or {})
    check_assessors(table)
    return table


def _named_files(
    files: list[Path], names: list[str], metadata: JudgmentSetMetadata, read: dict[str, Any], option: str
) -> LoadedTable:
    tables = []
    for path, name in zip(files, names, strict=True):
        if path.is_file() and sniff_format(path) == "parquet":
            raise UsageError(f"{option} {name}", f"{path} is a Parquet table, which names its assessors in an "
                                                 f"`assessor` column: {option} names the assessor of a TREC qrels "
                                                 "file")
        table = load_table(path, JUDGMENT_SET.name, metadata, **read)
        # One file is one assessor's: a pair it grades twice is refused here, naming the file and its lines.
        _refuse_repeats(table.scan.with_columns(assessor=pl.lit(name, pl.String)), str(path), table.unit)
        tables.append((name, table))
    rows = pl.concat([
        in_contract(table.scan.with_columns(assessor=pl.lit(name, pl.String)), JUDGMENT_SET.input_contract)
        for name, table in tables
    ]).collect()
    named = sorted((name, *table.hashes.result()) for name, table in tables)
    source_sha256 = _digest([[name, source] for name, source, _ in named])
    content_sha256 = _digest([[name, content] for name, _, content in named])
    formats = {table.source_format for _, table in tables}
    return LoadedTable(
        kind=JUDGMENT_SET.name,  # type: ignore[arg-type]
        scan=rows.lazy(),
        source=", ".join(str(path) for path in files),
        hashes=known_hashes(source_sha256, content_sha256),
        source_format=formats.pop() if len(formats) == 1 else "trec",
        metadata=metadata,
        in_memory=True,
        warnings=tuple(warning for _, table in tables for warning in table.warnings),
    )


def _digest(named: list[list[str]]) -> str:
    """The hash of a set read from several files: of each assessor's name and file hash, in name order."""
    return hashlib.sha256(canonical_json({"assessor_files": named}).encode()).hexdigest()


def with_kinds(table: LoadedTable, kinds: Mapping[str, str]) -> LoadedTable:
    """The table with these assessors' kinds added to (or replacing) those its metadata declares."""
    if not kinds:
        return table
    metadata = cast(JudgmentSetMetadata, table.metadata)
    declared = {**metadata.assessor_kinds, **kinds}
    return replace(table, metadata=metadata.with_assessors(kinds=declared))


# -- checks -------------------------------------------------------------------------------------------------------


def assessor_names(rows: pl.LazyFrame) -> list[str]:
    """The assessors the rows name, in name order (none: the set names none)."""
    if "assessor" not in rows.collect_schema().names():
        return []
    return sorted(rows.select(pl.col("assessor").drop_nulls().unique()).collect()["assessor"].to_list())


def check_assessors(table: LoadedTable) -> None:
    """InputError unless the judgment set is one that can be stored and compared as several assessors' opinions:
    each assessor grades a (query, document) pair once (the first repeat is named, with its lines), and every
    assessor with a declared kind is one its rows name (kinds declared for a set that names none are refused)."""
    metadata = cast(JudgmentSetMetadata, table.metadata)
    names = assessor_names(table.scan)
    strangers = [name for name in metadata.assessor_kinds if name not in names]
    if strangers:
        known = f"the judgments name {', '.join(names)}" if names else "the judgments name no assessor"
        raise InputError(table.source, f"a kind is declared for assessor(s) {', '.join(map(repr, strangers))} "
                                       f"({KIND_OPTION} or the sidecar's assessors.kinds), but {known}")
    if names:
        _refuse_repeats(table.scan, table.source, table.unit)


def _refuse_repeats(rows: pl.LazyFrame, source: str, unit: str) -> None:
    """InputError naming the first (query, document) an assessor grades twice, its lines, and how many more."""
    repeated = duplicate_pairs(rows).collect()
    if not repeated.height:
        return
    first = repeated.row(0, named=True)
    lines = first["source_lines"]
    more = f" ({repeated.height - 1} more such pairs)" if repeated.height > 1 else ""
    grades = " with different grades" if first["conflicting"] else ""
    raise InputError(
        source,
        f"assessor '{first['assessor']}' grades query '{first['query_id']}', document '{first['doc_id']}' twice"
        f"{grades}, at {unit}s {lines[0]} and {lines[1]}{more}: a set that names its assessors holds one grade per "
        "assessor and pair",
        lines[1], unit,
    )
