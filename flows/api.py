"""The Python API: `judged.evaluate` for notebooks and scripts, `judged.agreement` for how far a judgment set's
assessors agree, `judged.ingest_judgments` to store a judgment set, and `judged.Warehouse` to read stored results.

Belongs here: turning what a Python user holds (paths, Polars or pandas DataFrames, pyarrow Tables, pytrec_eval-style
nested dicts) into the engine's validated tables, calling the engine (the direct path: no Prefect), and handing back
each result as Polars frames with its spec, label, evaluation id and provenance record; reading a warehouse's views
as Polars frames. The computation is the engine's and the transforms'; the same inputs give the CLI's numbers.
Inputs are never modified: frames are read through Arrow, nested dicts are only read.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from judged.flows.engine.agreement import SetAgreement
from judged.flows.engine.evaluate import EvaluationResult
from judged.flows.engine.evaluate import evaluate as evaluate_tables
from judged.flows.store.hashing import known_hashes
from judged.flows.store.assessor_files import (
    assessor_names, check_assessors, kinds_of, load_judgments, merged_sidecars, with_kinds,
)
from judged.flows.store.kinds import JUDGMENT_SET, RUN, InputKind
from judged.flows.store.readers import LoadedTable, StoredTable, load_table, open_stored, require_rows
from judged.flows.engine.versions import implementation_commit, implementation_version, library_versions
from judged.flows.store.warehouse import Store
from judged.schemas.provenance import (
    METHOD_VERSION, InputRecord, JudgmentSetMetadata, ProvenanceRecord, RunMetadata, is_older_method,
)
from judged.schemas.spec import WORKLIST_BUDGET, EvaluationSpec, SpecError, build_spec
from judged.schemas.tables import PER_QUERY, STORED_PER_QUERY
from judged.transforms.errors import InputError, UsageError
from judged.transforms.parse import in_contract, raise_first_problem

# The form of an evaluation id (schemas/provenance.py `derive_id`: hexadecimal digits).
EVALUATION_ID = re.compile(r"[0-9a-f]{1,64}")
# What a run name stands for when the run comes as a frame or dict without a `run_tag`.
UNNAMED_RUN = "run"
# The columns a stored result carries beside the engine's: its keys and each row's labels.
STORED_KEYS = tuple(name for name in STORED_PER_QUERY if name not in PER_QUERY)


@dataclass(frozen=True, eq=False)  # holds frames, which have no equality or hash of their own
class Evaluation:
    """One run evaluated against one judgment set under one spec."""

    run_name: str
    evaluation_id: str
    spec: EvaluationSpec
    per_query: pl.DataFrame
    """One row per query, measure and cutoff: status, value (null where undefined) and the evidence counts."""
    summary: pl.DataFrame
    """One row per measure and cutoff: the aggregate and how many queries were scored, missing, undefined,
    unjudged-only."""
    warnings: tuple[str, ...]
    provenance: ProvenanceRecord

    @property
    def label(self) -> str:
        """The method's label, e.g. `nDCG@10[trec_eval:gain=linear]`: different methods never share one."""
        return self.spec.full_label()

    @property
    def method_version(self) -> str:
        """The method version its values were computed under (schemas/provenance.py METHOD_VERSION)."""
        return self.provenance.method_version

    @property
    def older_method(self) -> bool:
        """Stored by an older method: evaluating the same inputs again may give other values (and a new id)."""
        return is_older_method(self.method_version)

    def __repr__(self) -> str:
        older = f", older method {self.method_version}" if self.older_method else ""
        return f"Evaluation({self.run_name!r}, {self.label!r}, id={self.evaluation_id!r}{older})"


def evaluate(
    qrels: Any,
    run: Any,
    measures: str | list[str] | tuple[str, ...] | None = None,
    preset: str = "judged",
    spec: EvaluationSpec | None = None,
    allow_empty: bool = False,
    **options: Any,
) -> Evaluation | dict[str, Evaluation]:
    """Evaluate a run (or several) against judgments, in this process.

    `qrels` and `run` may each be a path (TREC text, gzip or Parquet, as for the CLI; a run may also be a stored
    run's folder), a Polars DataFrame or LazyFrame, a pandas DataFrame or a pyarrow Table (columns `query_id`,
    `doc_id`, and `relevance` or `score`, as in the Parquet inputs), or a pytrec_eval-style dict
    ({query_id: {doc_id: grade}}, {query_id: {doc_id: score}}). Several runs at once: a dict {name: run}; the
    result is then a dict {name: Evaluation} in the same order, otherwise one Evaluation.

    The spec is `preset` ("judged", "trec_eval", "trec_eval9", "sklearn") with `measures` (e.g. ["nDCG@10", "AP",
    "RR@10", "P@5", "RBP(p=0.8)"]; by default nDCG at the preset's cutoffs) and any other option of `EvaluationSpec` as a keyword (`gain_map=((0, 0), (1, 0), (2, 2), (3, 3))`,
    `ties="average"`, ...), or a ready `spec`.

    The API refuses what the command line refuses, with the same messages: judgments or a run without rows are
    refused unless `allow_empty=True` (the CLI's `--allow-empty`), a null grade is refused (an unresolved judgment
    needs a judgment set that declares one: a file with its sidecar), and bad input raises `InputError`, a bad
    option or argument `SpecError` (both ValueErrors with a one-line message), never another exception."""
    if not isinstance(allow_empty, bool):
        raise SpecError(f"allow_empty must be True or False, not {allow_empty!r}")
    spec = _spec_of(measures, preset, spec, options)
    judgments = load_input(qrels, JUDGMENT_SET, "qrels", allow_empty=allow_empty)
    runs = named_runs(run)
    evaluations = {name: _evaluate_one(judgments, value, name, spec, allow_empty) for name, value in runs.items()}
    return evaluations if runs_by_name(run) else evaluations[next(iter(evaluations))]


# How the API names the switch that accepts an empty input (the CLI's `--allow-empty`).
ALLOW_EMPTY_ARGUMENT = "allow_empty=True"


def _check_spec_arguments(measures: Any, preset: Any) -> None:
    """SpecError unless `measures` is None, a name (`"nDCG@10,AP"`) or a list or tuple of names (or measures), and
    `preset` a name: other values would fail deep in the spec's construction with a TypeError."""
    if not isinstance(preset, str):
        raise SpecError(f"preset must be a preset's name (judged, trec_eval, trec_eval9, sklearn), not {preset!r}")
    if measures is None or isinstance(measures, str):
        return
    from judged.schemas.measures import MeasureBase

    if not isinstance(measures, list | tuple) or not all(isinstance(m, str | MeasureBase) for m in measures):
        raise SpecError(f"measures must be a measure's name or a list of names, e.g. ['nDCG@10', 'AP'], not "
                        f"{measures!r}")


def runs_by_name(run: Any) -> bool:
    """Whether `run` is a dict of several runs by name rather than one pytrec_eval-style run: one run maps each
    query to a dict of numbers."""
    if not isinstance(run, Mapping):
        return False
    if not run:
        raise InputError("run", "an empty dict: neither a run ({query_id: {doc_id: score}}) nor runs by name")
    return not all(isinstance(docs, Mapping) and not _holds_mappings(docs) for docs in run.values())


def _holds_mappings(docs: Mapping[Any, Any]) -> bool:
    return any(isinstance(value, Mapping) for value in docs.values())


def named_runs(run: Any) -> dict[str, Any]:
    if runs_by_name(run):
        names = [name for name in run if not isinstance(name, str)]
        if names:
            raise InputError("run", f"runs by name need string names, not {names[0]!r}")
        return dict(run)
    return {"": run}


def _evaluate_one(
    judgments: LoadedTable, value: Any, name: str, spec: EvaluationSpec, allow_empty: bool = False
) -> Evaluation:
    started = datetime.now(UTC)
    if isinstance(value, str | os.PathLike) and Path(value).is_dir():
        stored = open_stored(Path(value), RUN.name)
        result = evaluate_tables(stored, judgments, spec)
        run_record = InputRecord.from_stored(stored.table_id, stored.record)
    else:
        run = load_input(value, RUN, f"run {name!r}" if name else "run", name, allow_empty)
        result = evaluate_tables(run, judgments, spec)
        run_record = input_record(run)
        # What reading the inputs found (extra run columns, ignored) goes with the result, not to stderr.
        result = replace(result, warnings=(*judgments.warnings, *run.warnings, *result.warnings))
    return _evaluation(result, spec, run_record, input_record(judgments), started)


def _evaluation(
    result: EvaluationResult, spec: EvaluationSpec, run: InputRecord, judgments: InputRecord, started: datetime
) -> Evaluation:
    provenance = ProvenanceRecord(
        evaluation_id=result.evaluation_id,
        label=spec.full_label(),
        spec=json.loads(spec.canonical_json()),
        spec_hash=spec.spec_hash,
        run=run,
        judgments=judgments,
        implementation_version=implementation_version(),
        implementation_commit=implementation_commit(),
        libraries=library_versions(),
        flow_run_id=None,
        started_at=started.isoformat(),
        finished_at=datetime.now(UTC).isoformat(),
        warnings=result.warnings,
        method_version=METHOD_VERSION,
    )
    return Evaluation(
        run_name=result.run_name,
        evaluation_id=result.evaluation_id,
        spec=spec,
        per_query=result.per_query,
        summary=result.summary,
        warnings=result.warnings,
        provenance=provenance,
    )


def input_record(table: LoadedTable) -> InputRecord:
    """How the provenance record names an input that was read here."""
    return InputRecord(
        id=table.table_id,
        content_sha256=table.content_sha256,
        source_sha256=table.source_sha256,
        source=table.source,
        original_name=None if table.source_format == "python" else Path(table.source).name,
        n_rows=table.counts["n_rows"],
        metadata=table.metadata.model_dump(mode="json"),
    )


# -- inputs -------------------------------------------------------------------------------------------------------


def load_input(
    value: Any, kind: InputKind, source: str, name: str = "", allow_empty: bool = False
) -> LoadedTable:
    """A path, frame, Arrow table or nested dict as the engine's validated table of `kind`. `source` names it in
    errors; `name` is a run's name (its tag when the rows carry none). Checked as the CLI checks a file: a table
    without rows is refused unless `allow_empty`, a null grade always (rows have no sidecar to declare
    unresolved judgments)."""
    if isinstance(value, str | os.PathLike):
        return load_table(Path(value), kind.name, print_warnings=False,  # type: ignore[arg-type]
                          allow_empty=allow_empty, allow_empty_option=ALLOW_EMPTY_ARGUMENT)
    rows = _as_polars(value, kind, source)
    try:
        checked = kind.conform(rows.lazy(), source).collect()
    except pl.exceptions.PolarsError as error:  # a column whose values cannot take the contract's type
        raise InputError(source, f"cannot be read as a {kind.noun}: {_first_line(error)}") from None
    raise_first_problem(checked.select("source_line", "problem"), source, "row")
    table = in_contract(checked.lazy(), kind.input_contract).collect()
    if "assessor" in table.columns and table["assessor"].null_count() == table.height:
        table = table.drop("assessor")  # a column of nulls names no assessor: the rows read as without it
    if not allow_empty:
        require_rows(table.lazy(), source, kind.name, "python", ALLOW_EMPTY_ARGUMENT)  # type: ignore[arg-type]
    # The content's identity: its rows in the contract, as CSV (the same rows give the same id).
    digest = hashlib.sha256(table.write_csv().encode()).hexdigest()
    metadata: JudgmentSetMetadata | RunMetadata = kind.metadata_model()
    if isinstance(metadata, RunMetadata):
        tags = table["run_tag"].drop_nulls().unique()
        metadata = RunMetadata(tag=tags[0] if tags.len() == 1 else (name or UNNAMED_RUN))
    return LoadedTable(
        kind=kind.name,  # type: ignore[arg-type]
        scan=table.lazy(),
        source=source,
        hashes=known_hashes(digest, digest),
        source_format="python",
        metadata=metadata,
        in_memory=True,
    )


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _as_polars(value: Any, kind: InputKind, source: str) -> pl.DataFrame:
    try:
        if isinstance(value, pl.DataFrame):
            return value
        if isinstance(value, pl.LazyFrame):
            return value.collect()
        if isinstance(value, pa.Table | pa.RecordBatch):
            return pl.from_arrow(value)  # type: ignore[return-value]
        if type(value).__module__.split(".")[0] == "pandas" and type(value).__name__ == "DataFrame":
            return pl.from_arrow(pa.Table.from_pandas(value, preserve_index=False))  # type: ignore[return-value]
    except (pl.exceptions.PolarsError, pa.ArrowException, ValueError, TypeError) as error:
        # a LazyFrame whose query fails, a pandas column Arrow cannot type, duplicate column names
        raise InputError(source, f"cannot be read as a table: {_first_line(error)}") from None
    if isinstance(value, Mapping):
        return _from_nested(value, kind, source)
    raise InputError(source, f"cannot read a {type(value).__name__}: give a path, a Polars or pandas DataFrame, a "
                             "pyarrow Table or a dict {query_id: {doc_id: value}}")


def _from_nested(value: Mapping[Any, Any], kind: InputKind, source: str) -> pl.DataFrame:
    """{query_id: {doc_id: grade or score}} as rows, in the dicts' order."""
    column, dtype = kind.value_column, kind.value_dtype
    for query_id, docs in value.items():
        if not isinstance(docs, Mapping):
            raise InputError(source, f"query {query_id!r} maps to a {type(docs).__name__}, not a dict {{doc_id: {column}}}")
    query_ids = [query_id for query_id, docs in value.items() for _ in docs]
    doc_ids = [doc_id for docs in value.values() for doc_id in docs]
    values = [number for docs in value.values() for number in docs.values()]
    for what, ids in (("query", query_ids), ("document", doc_ids)):
        wrong = next((i for i in ids if not isinstance(i, str)), None)
        if wrong is not None:
            raise InputError(source, f"{what} id {wrong!r} is a {type(wrong).__name__}: ids are strings ('007' is not '7')")
    # None is no number either: a null grade would be stored as an unresolved judgment, which rows cannot declare.
    wrong = [v for v in values if isinstance(v, bool) or not isinstance(v, numbers.Real)][:1]
    if wrong:
        raise InputError(source, f"{column} {wrong[0]!r} is not a number")
    if dtype.is_integer():
        not_integer = [v for v in values if not isinstance(v, numbers.Integral)][:1]
        if not_integer:
            raise InputError(source, f"grade {not_integer[0]!r} is not an integer")
        values = [int(v) for v in values]
        # Beyond the column's integers no frame can hold it; within them, the contract's check names a grade out of
        # its range, as for any other table.
        beyond = next((row for row, v in enumerate(values, start=1) if not -(2**63) <= v < 2**63), None)
        if beyond is not None:
            raise InputError(source, f"grade {values[beyond - 1]} is out of range", beyond, "row")
    else:
        floats = []
        for row, v in enumerate(values, start=1):
            try:
                floats.append(float(v))
            except OverflowError:  # an integer no float64 holds
                raise InputError(source, "score is not finite (beyond float64)", row, "row") from None
        values = floats
    return pl.DataFrame(
        {"query_id": query_ids, "doc_id": doc_ids, column: values},
        schema={"query_id": pl.String, "doc_id": pl.String, column: dtype},
    )


# -- several assessors --------------------------------------------------------------------------------------------

Agreement = SetAgreement


def _judgment_table(
    judgments: Any, assessors: Any, assessor_kinds: Any, metadata: Any, allow_empty: bool
) -> LoadedTable:
    """Judgments that may name their assessors, as the engine's table: a path or a list of paths (TREC files, each
    one assessor's when `assessors` names them in order; a Parquet table with an `assessor` column), or a frame
    (its `assessor` column names them); `assessor_kinds` ({name: kind}) declares their kinds, `metadata` (a dict
    of JudgmentSetMetadata's fields, or one) the set's metadata over its files' sidecars. A bad option or argument
    is a SpecError, bad input an InputError."""
    if not isinstance(allow_empty, bool):
        raise SpecError(f"allow_empty must be True or False, not {allow_empty!r}")
    if assessors is not None and (isinstance(assessors, str) or not isinstance(assessors, list | tuple)
                                  or not all(isinstance(name, str) for name in assessors)):
        raise SpecError(f"assessors must be a list of names, one per file, not {assessors!r}")
    kinds = kinds_of(assessor_kinds, "assessor_kinds")
    try:
        if isinstance(judgments, str | os.PathLike) or (
            isinstance(judgments, list | tuple) and all(isinstance(path, str | os.PathLike) for path in judgments)
        ):
            paths = [Path(judgments)] if isinstance(judgments, str | os.PathLike) else [Path(p) for p in judgments]
            declared = _declared_metadata(metadata, paths)
            return load_judgments(paths, list(assessors or ()), declared, kinds, print_warnings=False,
                                  allow_empty=allow_empty, allow_empty_option=ALLOW_EMPTY_ARGUMENT,
                                  assessor_option="assessors")
        if assessors:
            raise SpecError("assessors names the assessor of each file; the rows of a frame name theirs in an "
                            "`assessor` column")
        table = load_input(judgments, JUDGMENT_SET, "qrels", allow_empty=allow_empty)
        table = replace(table, metadata=_declared_metadata(metadata, []))
        table = with_kinds(table, kinds)
        check_assessors(table)
        return table
    except UsageError as error:
        raise SpecError(str(error)) from None


def _declared_metadata(metadata: Any, paths: list[Path]) -> JudgmentSetMetadata:
    """The set's metadata: its files' sidecars (merged), with the fields `metadata` gives over them."""
    from pydantic import ValidationError

    base = merged_sidecars(paths) if paths else JudgmentSetMetadata()
    if metadata is None:
        return base
    if isinstance(metadata, JudgmentSetMetadata):
        given = metadata.model_dump(exclude_defaults=True)
    elif isinstance(metadata, Mapping):
        given = dict(metadata)
    else:
        raise SpecError(f"metadata must be a dict of the judgment set's fields or a JudgmentSetMetadata, not "
                        f"{type(metadata).__name__}")
    merged = base.model_dump()
    if "assessors" in given:  # a description (text) or {description, kinds}: kinds add to the sidecars'
        described = JudgmentSetMetadata.model_validate({"assessors": given.pop("assessors")}).assessors
        merged["assessors"] = {"description": described.description or base.assessors.description,
                               "kinds": {**base.assessor_kinds, **dict(described.kinds)}}
    try:
        return JudgmentSetMetadata.model_validate({**merged, **given})
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise SpecError(f"metadata: {problems}") from None


def agreement(
    judgments: Any,
    assessors: list[str] | tuple[str, ...] | None = None,
    assessor_kinds: Mapping[str, str] | None = None,
    rel: int | None = None,
    warehouse: str | os.PathLike[str] | None = None,
) -> Agreement:
    """How far a judgment set's assessors agree: `judged agreement` in this process.

    `judgments` is TREC qrels files (a list of paths, each one assessor's, named in order by `assessors`), a
    Parquet table or a frame with an `assessor` column (Polars, pandas, pyarrow); or, with `warehouse`, a stored
    judgment set's NAME (its newest version), NAME@VERSION or id. `assessor_kinds` ({name: kind}: human,
    model:<name>, adjudicator) declares the assessors' kinds. `rel` is the lowest grade counted relevant where the
    set declares no `relevant_from` (default 1).

    Returns an `Agreement`: `assessors` (one row per assessor: kind, judgments, unresolved, queries), `pairs` (one
    row per pair of assessors: shared pairs, exact agreement, Cohen's kappa, linearly weighted kappa, kappa on
    relevant-or-not), `alpha` (Krippendorff's, ordinal, over all of them), `relevant_from` and the set's id."""
    from judged.flows.engine.agreement import agreement_of

    if rel is not None and (isinstance(rel, bool) or not isinstance(rel, int)):
        raise SpecError(f"rel must be a grade (an integer of at least 1), not {rel!r}")
    try:
        if warehouse is not None:
            if not isinstance(judgments, str) or assessors or assessor_kinds:
                raise SpecError("with warehouse=, judgments is a stored set's NAME, NAME@VERSION or id (its "
                                "assessors are stored with it)")
            from judged.flows.pipeline.judging import resolve_parent

            store = Warehouse(warehouse)._store
            table: LoadedTable | StoredTable = store.stored(JUDGMENT_SET, resolve_parent(store, judgments))
            rows, source = table.load().scan, f"judgment set {judgments}"
        else:
            table = _judgment_table(judgments, assessors, assessor_kinds, None, False)
            rows, source = table.scan, table.source
        if not assessor_names(rows):
            raise InputError(source, "names no assessor (its grades are one unnamed assessor's): nothing to compare")
        return agreement_of(table, rel, "rel")
    except UsageError as error:
        raise SpecError(str(error)) from None


def ingest_judgments(
    judgments: Any,
    warehouse: str | os.PathLike[str],
    assessors: list[str] | tuple[str, ...] | None = None,
    assessor_kinds: Mapping[str, str] | None = None,
    metadata: Mapping[str, Any] | JudgmentSetMetadata | None = None,
    allow_empty: bool = False,
) -> str:
    """Store a judgment set in a warehouse, content-addressed, and return its id: `judged ingest-judgments` in
    this process (no Prefect flow; the same files, rows and id).

    `judgments` is a path (TREC qrels, .gz or Parquet), a list of TREC files each one assessor's (named in order by
    `assessors`), or a frame (Polars, pandas, pyarrow: `query_id`, `doc_id`, `relevance`, optionally `iteration` and
    `assessor`). `assessor_kinds` ({name: kind}) declares the assessors' kinds; `metadata` (a dict of
    JudgmentSetMetadata's fields: name, version, task, assessors, pooling, grade_scale, unresolved_token,
    relevant_from, source) is the set's metadata, over what the files' sidecars declare. A set whose rows name
    their assessors is stored with who they are and how far they agree (the views `assessors` and
    `assessor_agreement`). Storing the same set again writes nothing and returns the same id."""
    if not isinstance(warehouse, str | os.PathLike):
        raise SpecError(f"warehouse must be a folder's path, not a {type(warehouse).__name__}")
    table = _judgment_table(judgments, assessors, assessor_kinds, metadata, allow_empty)
    store = Store(warehouse)
    report = store.store_table(table)
    store.refresh_catalog()
    return report.id


# -- stored results -----------------------------------------------------------------------------------------------


class Warehouse:
    """A warehouse's stored results, read-only, as Polars frames from the catalog's views (the same rows
    `judged sql` sees: a table's rows show once its record is in place)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, str | os.PathLike):
            raise InputError("warehouse", f"give the warehouse's folder as a path, not a {type(path).__name__}")
        self._store = Store(path)
        if not self._store.catalog.is_file():
            raise InputError(str(path), "not a warehouse: no catalog.duckdb (ingest or evaluate something first)")

    @property
    def root(self) -> Path:
        return self._store.root

    def __repr__(self) -> str:
        return f"Warehouse({str(self.root)!r})"

    def _query(self, sql: str, parameters: list[Any] | None = None) -> pl.DataFrame:
        from judged.flows.store.sql import open_readonly

        connection = open_readonly(self._store)
        try:
            return connection.sql(sql, params=parameters or None).pl()
        finally:
            connection.close()

    def judgment_sets(self) -> pl.DataFrame:
        """One row per stored judgment set: name, version, task, assessors, pooling, grade scale, hashes, counts."""
        return self._query("SELECT * FROM judgment_sets ORDER BY ingested_at, judgment_set_id")

    def runs(self) -> pl.DataFrame:
        """One row per stored run: system, configuration, tag, hashes, counts."""
        return self._query("SELECT * FROM runs ORDER BY ingested_at, run_id")

    def assessors(self, judgment_set: str | None = None) -> pl.DataFrame:
        """One row per named assessor of every stored judgment set (or of one: its id or name, any version): kind,
        judgments, unresolved, queries. A set that names no assessor has no row."""
        where, parameters = self._set(judgment_set)
        return self._query(f"SELECT * FROM assessors {where} ORDER BY judgment_set_id, assessor", parameters)

    def assessor_agreement(self, judgment_set: str | None = None) -> pl.DataFrame:
        """One row per pair of assessors of every stored judgment set (or of one): shared pairs, agreement,
        Cohen's kappa plain, weighted and on relevant-or-not at `relevant_from`, and the set's Krippendorff's
        alpha."""
        where, parameters = self._set(judgment_set)
        return self._query(
            f"SELECT * FROM assessor_agreement {where} ORDER BY judgment_set_id, assessor_a, assessor_b", parameters)

    def _set(self, judgment_set: str | None) -> tuple[str, list[Any]]:
        if judgment_set is None:
            return "", []
        if not isinstance(judgment_set, str):
            raise InputError(str(self.root), f"a judgment set is named by its id or name, not {judgment_set!r}")
        return ("WHERE judgment_set_id IN (SELECT judgment_set_id FROM judgment_sets WHERE judgment_set_id = ? "
                "OR name = ?)", [judgment_set, judgment_set])

    def evaluations(self) -> pl.DataFrame:
        """One row per stored evaluation: ids, run name, spec and label, versions, times, warnings, provenance."""
        return self._query("SELECT * FROM evaluations ORDER BY started_at, evaluation_id")

    def summary(self, evaluation_id: str | None = None) -> pl.DataFrame:
        """The summary rows of every stored evaluation, or of one (its id, or a unique start of it)."""
        where, parameters = self._one(evaluation_id)
        return self._query(f"SELECT * FROM summary {where} ORDER BY evaluation_id, cutoff NULLS LAST", parameters)

    def per_query(self, evaluation_id: str | None = None) -> pl.DataFrame:
        """The per-query rows of every stored evaluation, or of one (its id, or a unique start of it)."""
        where, parameters = self._one(evaluation_id)
        return self._query(
            f"SELECT * FROM per_query {where} ORDER BY evaluation_id, query_id, cutoff NULLS LAST", parameters
        )

    def evaluation(self, evaluation_id: str) -> Evaluation:
        """One stored evaluation in the shape `judged.evaluate` returns (its frames without the stored keys). A unique
        start of its id will do, as for `judged show`."""
        evaluation_id = self._resolve(evaluation_id)
        record, per_query, summary = self._store.load_evaluation(evaluation_id)
        return Evaluation(
            run_name=record["run_name"],
            evaluation_id=evaluation_id,
            spec=EvaluationSpec.from_canonical_json(record["spec_json"]),
            per_query=per_query.drop(STORED_KEYS),
            summary=summary.drop(STORED_KEYS),
            warnings=tuple(record["warnings"]),
            provenance=ProvenanceRecord.model_validate_json(record["provenance_json"]),
        )

    def _resolve(self, evaluation_id: object) -> str:
        """The stored evaluation's id that `evaluation_id` is or starts with (`Store.resolve_evaluation`, as `judged
        show` finds it); an InputError unless it has an id's form (hexadecimal digits: `../runs/<id>` would name
        another table's files), or for an unknown or ambiguous one."""
        if not isinstance(evaluation_id, str) or not EVALUATION_ID.fullmatch(evaluation_id):
            raise InputError(str(self.root), f"no evaluation with id or id prefix {evaluation_id!r} in the "
                                             "warehouse: an evaluation id is hexadecimal digits (0-9, a-f)")
        return self._store.resolve_evaluation(evaluation_id)

    def _one(self, evaluation_id: str | None) -> tuple[str, list[Any]]:
        if evaluation_id is None:
            return "", []
        return "WHERE evaluation_id = ?", [self._resolve(evaluation_id)]


# -- comparisons and worklists ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # holds frames
class Comparison:
    """Runs compared on one judgment set under one spec, pair by pair (every pair, the baseline's, or those listed)."""

    comparison_id: str
    baseline: str
    pairs: pl.DataFrame
    """One row per pair, measure and cutoff (the view `comparisons`' fields): the statistics, and whether the pair
    is `decided` whatever the unjudged documents are (`mean_difference_min`, `mean_difference_max`,
    `decided_direction`)."""
    per_query: pl.DataFrame
    """One row per pair, measure, cutoff and query: both values, the difference and its interval over the unjudged
    documents (`difference_min`, `difference_max`, `difference_kind`, `robustness`)."""
    summary: pl.DataFrame
    """Per measure and cutoff: `pairs` and `pairs_decided`."""
    notes: tuple[str, ...]
    pair_table: pl.DataFrame
    """`pairs` read in each pair's direction (`better`, `direction`, `worse`; the mean difference, its interval over
    the unjudged documents and its CI turned to read better - worse), decided pairs first, then significant ones."""


def _spec_of(measures: Any, preset: Any, spec: EvaluationSpec | None, options: dict[str, Any]) -> EvaluationSpec:
    """The spec of an API call: a ready `spec`, or `preset` with `measures` and options (not both)."""
    if spec is None:
        _check_spec_arguments(measures, preset)
        return build_spec(preset, measures=measures, **options)
    if not isinstance(spec, EvaluationSpec):
        raise SpecError(f"spec must be an EvaluationSpec (judged.EvaluationSpec(...)), not a {type(spec).__name__}")
    if measures is not None or options or preset != "judged":
        raise SpecError("give either spec= or a preset with measures and options, not both")
    return spec


def _run_tables(runs: Any, allow_empty: bool) -> dict[str, LoadedTable | StoredTable]:
    """Runs given as a dict {name: run} or a list of runs (named by their tag), each as the engine's table."""
    if isinstance(runs, Mapping):
        given = named_runs(runs)
    elif isinstance(runs, list | tuple):
        given = {"": run for run in runs} if len(runs) == 1 else {str(i): run for i, run in enumerate(runs)}
    else:
        raise SpecError(f"runs must be a dict {{name: run}} or a list of runs, not a {type(runs).__name__}")
    named = isinstance(runs, Mapping)
    tables: dict[str, Any] = {}
    for key, value in given.items():
        if isinstance(value, str | os.PathLike) and Path(value).is_dir():
            table: Any = open_stored(Path(value), RUN.name)
        else:
            table = load_input(value, RUN, f"run {key!r}" if named else "run", key if named else "", allow_empty)
        name = key if named else table.name
        if name in tables:
            raise InputError("runs", f"two runs are named {name!r}: give them as a dict {{name: run}}")
        tables[name] = table
    _refuse_one_run_twice(tables)
    return tables


def _refuse_one_run_twice(tables: dict[str, LoadedTable | StoredTable]) -> None:
    """InputError when two runs hold the same rows under two names, as the command line refuses one evaluation
    given twice: a run is compared with other runs, not with itself."""
    names_by_content: dict[str, str] = {}
    for name, table in tables.items():
        content = str(table.record["content_sha256"]) if isinstance(table, StoredTable) else table.content_sha256
        if content in names_by_content:
            raise InputError("runs", f"{names_by_content[content]!r} and {name!r} are one run (the same rows) given "
                                     "twice: a run is compared with other runs, not with itself")
        names_by_content[content] = name


def compare(
    judgments: Any,
    runs: Any,
    measures: str | list[str] | tuple[str, ...] | None = None,
    preset: str = "judged",
    baseline: str | None = None,
    spec: EvaluationSpec | None = None,
    allow_empty: bool = False,
    pairs: str | list[tuple[str, str]] | None = None,
    **options: Any,
) -> Comparison:
    """Compare runs on one judgment set under one spec, in this process: `judged compare` without a warehouse.

    `judgments` and each run take what `judged.evaluate` takes; `runs` is a dict {name: run} or a list of runs
    (named by their run tag). The baseline is `baseline`, else the first run. `pairs` selects the pairs compared:
    "all", "baseline", "A:B,C:D" or [("A", "B"), ...] (each difference is B - A); by default every pair up to 12
    runs, the baseline against each other run beyond (the notes say which). The spec comes from `preset`,
    `measures` and options as for `judged.evaluate`, or a ready `spec`."""
    from judged.flows.engine.compare import compare_evaluations, from_result, judgments_label
    from judged.schemas.comparison import ComparisonSettings

    if not isinstance(allow_empty, bool):
        raise SpecError(f"allow_empty must be True or False, not {allow_empty!r}")
    if baseline is not None and not isinstance(baseline, str):
        raise SpecError(f"baseline must be a run's name, not {baseline!r}")
    if pairs is not None and not isinstance(pairs, str | list | tuple):
        raise SpecError(f"pairs must be 'all', 'baseline', 'A:B,...' or a list of (A, B), not {pairs!r}")
    settings = ComparisonSettings(pairs=tuple(tuple(pair) for pair in pairs) if isinstance(pairs, list | tuple)
                                  else pairs)
    chosen = _spec_of(measures, preset, spec, options)
    judgment_table = load_input(judgments, JUDGMENT_SET, "qrels", allow_empty=allow_empty)
    tables = _run_tables(runs, allow_empty)
    if len(tables) < 2:
        raise InputError("runs", f"a comparison needs at least two runs, got {len(tables)}")
    label = judgments_label(getattr(judgment_table.metadata, "name", ""),
                            getattr(judgment_table.metadata, "version", ""))
    evaluations = []
    for name, table in tables.items():
        result = replace(evaluate_tables(table, judgment_table, chosen), run_name=name)
        inputs = {"run": {"id": table.table_id}, "judgments": {"id": judgment_table.table_id},
                  "spec_hash": chosen.spec_hash, "label": chosen.full_label()}
        evaluations.append(from_result(result, judgment_table.table_id, label, inputs, (table, judgment_table)))
    from judged.flows.engine.compare import IncomparableError

    try:
        result = compare_evaluations(evaluations, settings, baseline)
    except IncomparableError as error:
        raise InputError("runs", str(error)) from None
    return Comparison(
        comparison_id=result.comparison_id, baseline=result.baseline, pairs=result.pairs,
        per_query=result.per_query, summary=pl.DataFrame(result.family_summary()), notes=result.notes,
        pair_table=result.pair_table(),
    )


def worklist(
    judgments: Any,
    runs: Any,
    budget: int = 500,
    cutoff: int = 10,
    objective: str | None = "pairs",
    preset: str = "judged",
    measure: str | None = None,
    pairs: str | None = None,
    relative: bool = False,
    **options: Any,
) -> pl.DataFrame:
    """Which unjudged (query, document) pairs to judge first: `judged worklist` without a warehouse. Returns one
    row per pair to judge, `query_id`, `doc_id`, `priority` and `rank` (1 = judge first), in that order.

    `objective` "pairs" narrows the paired difference intervals of the pairs of runs not yet decided (all pairs,
    or `pairs` as "A:B,C:D"; falls back to "width" when every pair is decided), "width" each run's own nDCG@k
    interval, "adjudicate" lists the disputed judgments (assessors gave different grades; needs
    `assessor_model="set"` or `"range"`) whose adjudication would decide the most pairs. `query_weights=(("q1", 3.0), ...)` weighs each query's share of the priority, as the CLI's
    `--query-weights` does (queries not listed weigh 1). Inputs as for `judged.compare`; it refuses what
    `judged worklist` refuses (a budget out of range, weights that sum to 0)."""
    from judged.flows.pipeline.judging import rank_for_judging, worklist_spec

    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise SpecError(f"budget must be a positive number of judgments, not {budget!r}")
    WORKLIST_BUDGET.check(budget, "budget")  # the command line's range
    if isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff <= 0:
        raise SpecError(f"cutoff must be a positive rank, not {cutoff!r}")
    if not isinstance(relative, bool):
        raise SpecError(f"relative must be True or False, not {relative!r}")
    for name, value in (("objective", objective), ("pairs", pairs), ("measure", measure)):
        if value is not None and not isinstance(value, str):
            raise SpecError(f"{name} must be text, not {value!r}")
    if options.get("query_weights") and "aggregation" not in options:  # as --query-weights sets it
        options = {**options, "aggregation": "weighted_mean"}
    spec = _spec_of([measure] if measure is not None else None, preset, None,
                    options if measure is not None else {**options, "cutoffs": (cutoff,)})
    if measure is not None and [m.cutoff for m in spec.measure_list()] != [cutoff]:
        raise SpecError(f"measure {measure!r}: a worklist narrows one measure at its cutoff k = {cutoff}, e.g. "
                        f"'P@{cutoff}'")
    spec, weights = worklist_spec(spec)
    judgment_table = load_input(judgments, JUDGMENT_SET, "qrels")
    tables = _run_tables(runs, False)
    weight_rows = pl.LazyFrame(list(weights), schema={"query_id": pl.String, "weight": pl.Float64}, orient="row")
    try:
        rows, _, _, _, _ = rank_for_judging(tables, judgment_table, spec, budget, objective, pairs, relative,
                                            weight_rows if weights else None)
    except UsageError as error:
        raise SpecError(str(error)) from None
    return rows.select("query_id", "doc_id", "priority", pl.col("position").alias("rank"))
