"""The pipeline end to end on the bundled TREC DL 2020 sample: Prefect flows into a warehouse, SQL out of it.

Uses the session's temporary Prefect server (`prefect_harness`); the sample data ships in data/, so nothing here
needs ../shared.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.pipeline.flows import evaluate_flow, ingest_judgments, ingest_run, nightly
from judged.flows.store.sql import open_readonly
from judged.flows.store.warehouse import Store
from judged.flows.engine.versions import implementation_commit, implementation_version
from judged.schemas.spec import PRESETS, EvaluationSpec, build_spec
from tests.conftest import SAMPLE
from tests.helpers import tree_listing

QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUNS = {name: SAMPLE / "runs" / f"input.{name}.gz" for name in ("p_bm25", "pash_r3", "DoRA_Large")}
SPEC = PRESETS["trec_eval"].with_options(cutoffs=(10, 100, 1000))
runner = CliRunner()


def sql(warehouse: Path, query: str) -> list[dict]:
    result = runner.invoke(app, ["sql", query, "--warehouse", str(warehouse), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def evaluated(prefect_harness: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """DL 2020 judgments and p_bm25 ingested and evaluated under the trec_eval preset."""
    warehouse = tmp_path_factory.mktemp("warehouse")
    judgments = ingest_judgments(str(QRELS), str(warehouse))
    run = ingest_run(str(RUNS["p_bm25"]), str(warehouse))
    (report,) = evaluate_flow(judgments.id, [run.id], SPEC.canonical_json(), str(warehouse))
    return {"warehouse": warehouse, "judgments": judgments, "run": run, "report": report}


def test_mean_ndcg_at_10_through_judged_sql(evaluated: dict) -> None:
    rows = sql(
        evaluated["warehouse"],
        "SELECT e.run_name, avg(p.value) AS mean_ndcg_10, count(*) AS n FROM per_query p "
        "JOIN evaluations e USING (evaluation_id) WHERE p.cutoff = 10 AND p.status = 'scored' GROUP BY 1",
    )
    assert rows == [{"run_name": "p_bm25", "mean_ndcg_10": pytest.approx(0.4796, abs=5e-5), "n": 54}]
    summary = sql(evaluated["warehouse"], "SELECT value, trec_eval_measure FROM summary WHERE cutoff = 10")
    assert summary == [{"value": pytest.approx(0.4796, abs=5e-5), "trec_eval_measure": "ndcg_cut_10"}]


def test_provenance_record_and_parquet_metadata(evaluated: dict) -> None:
    warehouse: Path = evaluated["warehouse"]
    evaluation_id = evaluated["report"].evaluation_id
    (row,) = sql(warehouse, f"SELECT provenance_json, flow_run_id FROM evaluations WHERE evaluation_id = '{evaluation_id}'")
    record = json.loads(row["provenance_json"])
    assert record["run"]["source_sha256"] == hashlib.sha256(RUNS["p_bm25"].read_bytes()).hexdigest()
    assert record["judgments"]["source_sha256"] == hashlib.sha256(QRELS.read_bytes()).hexdigest()
    assert record["spec_hash"] == SPEC.spec_hash and record["spec"]["no_relevant"] == "zero"
    assert record["judgments"]["metadata"]["name"] == "trec-dl-2020-passage"
    assert record["judgments"]["metadata"]["grade_scale"][3][0] == 3
    assert record["run"]["metadata"]["system"] == "p_bm25"
    assert record["implementation_version"] == implementation_version()
    assert record["implementation_commit"] == implementation_commit()
    assert set(record["libraries"]) == {"python", "polars", "pyarrow", "duckdb", "prefect"}
    assert record["flow_run_id"] and record["flow_run_id"] == row["flow_run_id"]
    for table in ("per_query", "summary"):
        part = next((warehouse / table / evaluation_id).glob("*.parquet"))
        kv = pq.read_metadata(part).metadata
        assert json.loads(kv[b"judged.provenance"]) == record
        assert kv[b"judged.spec"].decode() == SPEC.canonical_json()
    kv = pq.read_metadata(warehouse / "evaluations" / f"{evaluation_id}.parquet").metadata
    assert json.loads(kv[b"judged.provenance"])["flow_run_id"] == record["flow_run_id"]


def test_every_stored_copy_of_the_spec_reads_back(evaluated: dict) -> None:
    """Regression: the provenance record held `model_dump()` (no spec_version), which `from_canonical_json`
    refused; the record's `spec_json`, the Parquet metadata and the provenance now hold one form."""
    warehouse: Path = evaluated["warehouse"]
    evaluation_id = evaluated["report"].evaluation_id
    record, _, _ = Store(warehouse).load_evaluation(evaluation_id)
    provenance_spec = json.loads(record["provenance_json"])["spec"]
    metadata_spec = pq.read_metadata(warehouse / "summary" / evaluation_id / "part-0.parquet").metadata[b"judged.spec"]
    assert provenance_spec == json.loads(record["spec_json"]) == json.loads(metadata_spec)
    assert EvaluationSpec.from_canonical_json(json.dumps(provenance_spec)) == SPEC
    assert EvaluationSpec.from_canonical_json(record["spec_json"]) == SPEC


def test_a_stored_run_folder_with_warehouse(evaluated: dict, tmp_path: Path) -> None:
    """Regression: `judged evaluate QRELS W/run_rows/<id> --warehouse W` said the folder was "neither a file nor a
    run id". Its run is the one stored there (nothing new written); a folder of another warehouse is stored."""
    warehouse: Path = evaluated["warehouse"]
    folder = warehouse / "run_rows" / evaluated["run"].id
    command = ["evaluate", str(QRELS), str(folder), "--preset", "trec_eval", "--cutoffs", "10,100,1000"]
    direct = runner.invoke(app, [*command, "--format", "trec"])
    assert direct.exit_code == 0, direct.output
    same = runner.invoke(app, [*command, "--format", "trec", "--warehouse", str(warehouse)])
    assert same.exit_code == 0, same.output
    assert same.stdout == direct.stdout
    assert f"evaluation {evaluated['report'].evaluation_id} (already stored, reused)" in same.stderr
    elsewhere = tmp_path / "elsewhere"
    other = runner.invoke(app, [*command, "--format", "trec", "--warehouse", str(elsewhere)])
    assert other.exit_code == 0, other.output
    assert other.stdout == direct.stdout
    assert f"evaluation {evaluated['report'].evaluation_id} (stored)" in other.stderr
    assert Store(elsewhere).run_record(evaluated["run"].id).exists()


def test_same_inputs_twice_add_nothing(evaluated: dict) -> None:
    warehouse: Path = evaluated["warehouse"]
    before = tree_listing(warehouse)
    counts = sql(warehouse, "SELECT (SELECT count(*) FROM per_query) AS p, (SELECT count(*) FROM judgments) AS j, "
                            "(SELECT count(*) FROM run_rows) AS r, (SELECT count(*) FROM evaluations) AS e")
    again = runner.invoke(app, ["ingest-run", str(RUNS["p_bm25"]), "--warehouse", str(warehouse)])
    assert again.exit_code == 0
    assert f"run {evaluated['run'].id} already in the warehouse" in again.stdout
    reports = evaluate_flow(str(QRELS), [str(RUNS["p_bm25"])], SPEC.canonical_json(), str(warehouse))
    assert [(r.evaluation_id, r.created) for r in reports] == [(evaluated["report"].evaluation_id, False)]
    after = tree_listing(warehouse)
    after.pop("catalog.duckdb"), before.pop("catalog.duckdb")  # regenerated, same views
    assert after == before
    assert sql(warehouse, "SELECT (SELECT count(*) FROM per_query) AS p, (SELECT count(*) FROM judgments) AS j, "
                          "(SELECT count(*) FROM run_rows) AS r, (SELECT count(*) FROM evaluations) AS e") == counts


def test_malformed_run_leaves_the_warehouse_unchanged(evaluated: dict, tmp_path: Path) -> None:
    warehouse: Path = evaluated["warehouse"]
    bad = tmp_path / "bad.run"
    bad.write_text("1030303\tQ0\t8726436\t1\t12.5\ttag\n1030303\tQ0\t8726437\t2\tNaN\ttag\n")
    before = tree_listing(warehouse)
    result = runner.invoke(app, ["ingest-run", str(bad), "--warehouse", str(warehouse)])
    assert result.exit_code == 1
    assert result.stderr.strip() == f"judged: error: {bad}, line 2: score 'NaN' is NaN"
    assert tree_listing(warehouse) == before


def test_judged_run_rows_lists_unjudged_documents(evaluated: dict) -> None:
    rows = sql(
        evaluated["warehouse"],
        "SELECT count(*) AS unjudged FROM judged_run_rows WHERE rank <= 10 AND relevance IS NULL "
        "AND query_id IN (SELECT DISTINCT query_id FROM judgments)",
    )
    at10 = sql(evaluated["warehouse"], "SELECT sum(n_unjudged_at_k) AS n FROM per_query WHERE cutoff = 10 AND status <> 'no_judgments'")
    assert rows[0]["unjudged"] == at10[0]["n"] > 0


@pytest.mark.parametrize(
    "statement, message",
    [
        ("CREATE TABLE x AS SELECT 1", "refused a CREATE statement"),
        ("DELETE FROM evaluations", "refused a DELETE statement"),
        ("COPY (SELECT 1) TO 'out.csv'", "refused a COPY statement"),
        ("SELECT 1; COPY per_query TO 'x.parquet'", "refused a COPY statement"),
        ("ATTACH 'other.duckdb'", "refused an ATTACH statement"),
        ("INSTALL httpfs", "refused an INSTALL statement"),
        ("LOAD httpfs", "refused a LOAD statement"),
        ("SET enable_external_access = true", "refused a SET statement"),
        ("SELECT * FROM read_csv('/etc/passwd')", "Permission Error"),
        ("SELECT * FROM read_text('/etc/hostname')", "Permission Error"),
    ],
)
def test_judged_sql_refuses(evaluated: dict, statement: str, message: str) -> None:
    result = runner.invoke(app, ["sql", statement, "--warehouse", str(evaluated["warehouse"])])
    assert result.exit_code == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_lockdown_holds_on_an_analyst_connection(evaluated: dict) -> None:
    connection = open_readonly(Store(evaluated["warehouse"]))
    for statement in ("COPY (SELECT 1) TO '/tmp/judged-lockdown.csv'", "SELECT * FROM read_csv('/etc/passwd')",
                      "SET enable_external_access = true", "SET memory_limit = '100GB'",
                      "ATTACH '/tmp/judged-lockdown.duckdb'"):
        with pytest.raises(duckdb.Error):
            connection.execute(statement)
    connection.close()


def test_show_prints_summary_and_provenance(evaluated: dict) -> None:
    result = runner.invoke(app, ["show", evaluated["report"].evaluation_id, "--warehouse", str(evaluated["warehouse"])])
    assert result.exit_code == 0
    assert "0.4796" in result.stdout and '"flow_run_id"' in result.stdout


def test_show_accepts_a_unique_id_prefix(evaluated: dict) -> None:
    identifier = evaluated["report"].evaluation_id
    result = runner.invoke(app, ["show", identifier[:8], "--warehouse", str(evaluated["warehouse"])])
    assert result.exit_code == 0, result.output
    assert identifier in result.stdout and "0.4796" in result.stdout


def test_nightly_sets_bad_files_aside_and_analysts_see_new_results(evaluated: dict, tmp_path: Path) -> None:
    warehouse: Path = evaluated["warehouse"]
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for name in ("pash_r3", "DoRA_Large"):
        shutil.copy(RUNS[name], inbox / RUNS[name].name)
        shutil.copy(RUNS[name].with_name(RUNS[name].name + ".meta.toml"), inbox)
    (inbox / "broken.run").write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 two 0.5 t\n")

    analyst = open_readonly(Store(warehouse))  # held open through the nightly run
    assert analyst.execute("SELECT count(*) FROM evaluations").fetchall() == [(1,)]
    report = nightly(str(inbox), "trec-dl-2020-passage", [SPEC.canonical_json()], str(warehouse))
    assert analyst.execute("SELECT count(*) FROM evaluations").fetchall() == [(3,)]
    means = dict(analyst.execute("SELECT e.run_name, s.value FROM summary s JOIN evaluations e "
                                 "USING (evaluation_id) WHERE s.cutoff = 10").fetchall())
    analyst.close()

    assert means["pash_r3"] == pytest.approx(0.8031, abs=5e-5)  # NIST: passages-eval ndcg_cut_10
    assert means["DoRA_Large"] == pytest.approx(0.0414, abs=5e-5)
    assert len(report.evaluated) == 2 and set(report.rejected) == {"broken.run"}
    assert "line 2: rank 'two' is not an integer" in report.rejected["broken.run"]
    assert sorted(p.name for p in inbox.iterdir() if p.is_file()) == []
    assert (inbox / "rejected" / "broken.run").exists()
    assert "line 2" in (inbox / "rejected" / "broken.run.error.txt").read_text()
    assert sorted(p.name for p in (inbox / "processed").iterdir()) == sorted(
        [RUNS["pash_r3"].name, RUNS["pash_r3"].name + ".meta.toml", RUNS["DoRA_Large"].name,
         RUNS["DoRA_Large"].name + ".meta.toml"])
    recorded = sql(warehouse, f"SELECT file, outcome FROM nightly WHERE flow_run_id = '{report.flow_run_id}' ORDER BY file")
    assert recorded == [
        {"file": "broken.run", "outcome": "rejected"},
        {"file": RUNS["DoRA_Large"].name, "outcome": "evaluated"},
        {"file": RUNS["pash_r3"].name, "outcome": "evaluated"},
    ]


def test_stored_per_query_equals_the_direct_path(evaluated: dict) -> None:
    from judged.flows.engine.evaluate import evaluate
    from judged.flows.store.readers import load_table

    direct = evaluate(load_table(RUNS["p_bm25"], "run"), load_table(QRELS, "judgments"), SPEC)
    stored = pl.read_parquet(Store(evaluated["warehouse"]).per_query_part(evaluated["report"].evaluation_id))
    assert direct.evaluation_id == evaluated["report"].evaluation_id
    assert stored.select(direct.per_query.columns).equals(direct.per_query)


def test_nightly_command_creates_a_missing_inbox_and_says_so(evaluated: dict, tmp_path: Path) -> None:
    inbox = tmp_path / "new" / "inbox"
    args = ["nightly", "--inbox", str(inbox), "--judgments", "trec-dl-2020-passage", "--warehouse",
            str(evaluated["warehouse"])]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    for folder in (inbox, inbox / "processed", inbox / "rejected"):
        assert folder.is_dir() and f"created {folder}\n" in result.stderr
    assert "0 evaluations, 0 files rejected" in result.stdout

    (inbox / "broken.run").write_text("q1 Q0 d1 one 1.0 t\n")
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "created" not in again.stderr  # nothing was missing this time
    assert "0 evaluations, 1 file rejected" in again.stdout
    moved = sql(evaluated["warehouse"], "SELECT moved_to FROM nightly WHERE file = 'broken.run'")
    assert {"moved_to": str(inbox / "rejected" / "broken.run")} in moved


def test_nightly_command_refuses_an_inbox_that_is_a_file(evaluated: dict, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.write_text("not a folder\n")
    result = runner.invoke(app, ["nightly", "--inbox", str(inbox), "--warehouse", str(evaluated["warehouse"])])
    assert result.exit_code == 1
    assert result.stderr == (f"judged: error: {inbox}: is a file, not a folder: the inbox and its processed/ and "
                             "rejected/ must be folders\n")


def test_stored_trec_eval_names_are_the_printed_ones(evaluated: dict) -> None:
    """The stored `trec_eval_measure` names a measure only where trec_eval prints its number, as the outputs do: of
    `AP` and `AP(rel=2)` only the first is `map`; RBP on DL's graded judgments is not trec_eval's `rbp`."""
    spec = build_spec("trec_eval", measures="AP,AP(rel=2),RBP(p=0.9)")
    warehouse = evaluated["warehouse"]
    (report,) = evaluate_flow(evaluated["judgments"].id, [evaluated["run"].id], spec.canonical_json(), str(warehouse))
    names = {row["label"].split("[")[0]: row["trec_eval_measure"] for row in sql(
        warehouse, f"SELECT label, trec_eval_measure FROM summary WHERE evaluation_id = '{report.evaluation_id}'")}
    assert names == {"AP": "map", "AP(rel=2)": None, "RBP(p=0.9)": None}


def test_the_nightly_takes_its_configured_baseline(prefect_harness: str, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for name in ("p_bm25", "DoRA_Large"):
        shutil.copy(RUNS[name], inbox / RUNS[name].name)
    warehouse = tmp_path / "warehouse"
    nightly(str(inbox), str(QRELS), [SPEC.canonical_json()], str(warehouse), baseline="p_bm25")
    assert sql(warehouse, "SELECT DISTINCT baseline FROM comparison_records") == [{"baseline": "p_bm25"}]
