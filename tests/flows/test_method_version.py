"""The method version in every id: a new METHOD_VERSION gives new evaluation and comparison ids, and an evaluation
stored before the method had a version reads, is labelled "older method" (views, `judged show`, the API, a
comparison's notes), is never reused for a new evaluation of the same inputs, and is never compared with one of
another method version."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from judged.flows.api import Warehouse
from judged.flows.cli.app import app
from judged.flows.engine.compare import ComparedEvaluation, IncomparableError, compare_evaluations, from_result
from judged.flows.pipeline.evaluation import evaluate_shard, finish_evaluation, parts_staging, stored_plan
from judged.flows.pipeline.tasks import ingest_file
from judged.flows.store.warehouse import Store, now_utc
from judged.schemas.comparison import ComparisonSettings, comparison_id
from judged.schemas.provenance import (
    METHOD_VERSION, METHOD_VERSION_UNRECORDED, derive_id, evaluation_id, is_older_method,
)
from judged.schemas.spec import PRESETS, EvaluationSpec
from judged.schemas.tables import EVALUATIONS
from tests.flows.test_cli import ENV, SEED_QRELS, SEED_RUN

SPEC = PRESETS["trec_eval"].with_options(cutoffs=(1, 2, 3))
SETTINGS = ComparisonSettings(permutations=100, bootstrap_resamples=100)


def test_the_evaluation_id_changes_with_the_method_version() -> None:
    inputs = ("run", "judgments", "spec", "0.1.0")
    assert evaluation_id(*inputs) == evaluation_id(*inputs, METHOD_VERSION)
    assert evaluation_id(*inputs, "2") != evaluation_id(*inputs, "3")
    # ... and differs from the id of the same evaluation before the method had a version.
    assert evaluation_id(*inputs) != unversioned_id(*inputs)


def test_the_comparison_id_changes_with_the_method_version() -> None:
    arguments = (["e1", "e2"], "e1", ComparisonSettings(), "0.1.0")
    assert comparison_id(*arguments) == comparison_id(*arguments, METHOD_VERSION)
    assert comparison_id(*arguments, "2") != comparison_id(*arguments, "3")


def test_a_new_evaluation_records_the_current_method_in_its_id_and_provenance() -> None:
    from judged.flows.api import evaluate

    result = evaluate(SEED_QRELS, SEED_RUN, spec=SPEC)
    provenance = result.provenance
    assert result.method_version == provenance.method_version == METHOD_VERSION and not result.older_method
    assert result.evaluation_id == evaluation_id(provenance.run.id, provenance.judgments.id, SPEC.spec_hash,
                                                 provenance.implementation_version, METHOD_VERSION)


def test_only_a_lower_version_is_older() -> None:
    assert is_older_method(METHOD_VERSION_UNRECORDED)
    assert not is_older_method(METHOD_VERSION)
    assert not is_older_method(str(int(METHOD_VERSION) + 1))


def unversioned_id(run_id: str, judgment_set_id: str, spec_hash: str, version: str) -> str:
    """The evaluation id as it was derived before the method had a version."""
    return derive_id("evaluation", {"run": run_id, "judgments": judgment_set_id, "spec": spec_hash,
                                    "implementation": version})


def evaluate_stored(warehouse: Store, run_id: str, judgment_set_id: str, spec: EvaluationSpec) -> str:
    """The evaluation flow's steps without orchestration; returns the evaluation id (stored unless it was)."""
    planned = stored_plan(warehouse, run_id, judgment_set_id, spec)
    if warehouse.has_evaluation(planned.evaluation_id):
        return planned.evaluation_id
    with parts_staging(warehouse) as folder:
        staged = [evaluate_shard(planned, part, folder) for part in planned.parts]
        return finish_evaluation(warehouse, planned, staged, now_utc(), None).evaluation_id


def make_unversioned(warehouse: Store, identifier: str) -> str:
    """Turn a stored evaluation into one as a warehouse from before method versions holds it: its id derived without
    the method, no `method_version` in its record or provenance, and an empty evaluations file without the column.
    Returns the old id."""
    record, _, _ = warehouse.load_evaluation(identifier)
    old = unversioned_id(record["run_id"], record["judgment_set_id"], record["spec_hash"],
                         record["implementation_version"])
    provenance = json.loads(record["provenance_json"])
    del provenance["method_version"]
    provenance["evaluation_id"] = old
    for table in ("per_query", "summary"):
        for path in (warehouse.root / table / identifier).glob("*.parquet"):
            target = warehouse.root / table / old / path.name
            target.parent.mkdir(parents=True)
            pl.read_parquet(path).with_columns(evaluation_id=pl.lit(old)).write_parquet(target)
        shutil.rmtree(warehouse.root / table / identifier)
    stored = pl.read_parquet(warehouse.evaluation_record(identifier))
    stored.drop("method_version").with_columns(
        evaluation_id=pl.lit(old), provenance_json=pl.lit(json.dumps(provenance))
    ).write_parquet(warehouse.evaluation_record(old))
    warehouse.evaluation_record(identifier).unlink()
    pl.DataFrame(schema={k: v for k, v in EVALUATIONS.items() if k != "method_version"}).write_parquet(
        warehouse.root / "evaluations" / "_empty.parquet"
    )
    return old


def show(warehouse: Store, identifier: str) -> str:
    result = CliRunner().invoke(app, ["show", identifier, "--warehouse", str(warehouse.root)], env=ENV)
    assert result.exit_code == 0, result.output
    return result.output


def test_an_older_method_evaluation_reads_is_labelled_and_not_reused(tmp_path: Path) -> None:
    warehouse = Store(tmp_path / "warehouse")
    judgments = ingest_file(warehouse, SEED_QRELS, "judgments").id
    run = ingest_file(warehouse, SEED_RUN, "run").id
    old = make_unversioned(warehouse, evaluate_stored(warehouse, run, judgments, SPEC))
    warehouse.refresh_catalog()
    api = Warehouse(warehouse.root)
    # No file of the warehouse has the column: the view gives it all the same.
    assert api.evaluations().select("evaluation_id", "method_version").rows() == [(old, METHOD_VERSION_UNRECORDED)]
    assert api.summary(old).height == 3

    current = evaluate_stored(warehouse, run, judgments, SPEC)
    assert current != old, "an evaluation by an older method was reused"
    warehouse.refresh_catalog()
    versions = dict(api.evaluations().select("evaluation_id", "method_version").rows())
    assert versions == {old: METHOD_VERSION_UNRECORDED, current: METHOD_VERSION}

    older, new = api.evaluation(old), api.evaluation(current)
    assert older.method_version == METHOD_VERSION_UNRECORDED and older.older_method
    assert "older method 0" in repr(older)
    assert new.method_version == METHOD_VERSION and not new.older_method
    assert "older method" not in repr(new)
    assert older.summary["value"].to_list() == new.summary["value"].to_list()
    assert warehouse.load_evaluation(old)[0]["method_version"] == METHOD_VERSION_UNRECORDED

    assert "older method: computed under method version 0" in show(warehouse, old)
    assert "older method" not in show(warehouse, current)


def seed_compared(method_version: str, name: str) -> ComparedEvaluation:
    from judged.flows.engine.evaluate import evaluate
    from judged.flows.store.readers import load_table

    result = evaluate(load_table(SEED_RUN, "run"), load_table(SEED_QRELS, "judgments"), SPEC)
    # two runs named apart: one evaluation id each (a comparison refuses one evaluation given twice)
    compared = from_result(result, "j", "seed", {})
    return replace(compared, method_version=method_version, run_name=name,
                   evaluation_id=f"{compared.evaluation_id[:-len(name)]}{name}")


def test_a_comparison_refuses_evaluations_of_different_method_versions() -> None:
    with pytest.raises(IncomparableError, match=r"different method versions \(a: method version 0; b: method "
                                                rf"version {METHOD_VERSION}\).*--rebase"):
        compare_evaluations([seed_compared("0", "a"), seed_compared(METHOD_VERSION, "b")], SETTINGS)


def test_a_comparison_of_older_method_evaluations_says_so() -> None:
    older = compare_evaluations([seed_compared("0", "a"), seed_compared("0", "b")], SETTINGS)
    assert [note for note in older.notes if note.startswith("older method: ")] == [
        f"older method: these evaluations were computed under method version 0, this judged computes version "
        f"{METHOD_VERSION}; --rebase evaluates them again under the current method"
    ]
    assert [e["method_version"] for e in older.provenance()["evaluations"]] == ["0", "0"]
    current = compare_evaluations([seed_compared(METHOD_VERSION, "a"), seed_compared(METHOD_VERSION, "b")], SETTINGS)
    assert not [note for note in current.notes if note.startswith("older method")]
