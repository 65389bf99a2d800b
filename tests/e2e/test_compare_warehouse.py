"""`judged compare --warehouse` end to end on the bundled TREC DL 2020 sample: the comparison stored with its
provenance and queryable (the `comparisons` and `comparison_per_query` views, the comparison queries of
docs/warehouse.md), the refusal of evaluations on different judgment versions naming both, and `--rebase`.

Uses the session's temporary Prefect server (`prefect_harness`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from judged.flows.cli.app import app
from tests.conftest import REPO, SAMPLE

QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUNS = [SAMPLE / "runs" / f"input.{name}.gz" for name in ("p_bm25", "pash_r3", "DoRA_Large")]
FAST = ["--permutations", "1000", "--resamples", "1000"]
ANALYST_QUERIES = re.findall(r"```sql comparison\n(.*?)```", (REPO / "docs" / "warehouse.md").read_text(),
                             flags=re.S)


def judged(*args: object) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args], env={"COLUMNS": "200", "NO_COLOR": "1"})


def sql(warehouse: Path, query: str) -> list[dict]:
    result = judged("sql", query, "--warehouse", warehouse, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def stored(prefect_harness: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    warehouse = tmp_path_factory.mktemp("warehouse")
    result = judged("compare", QRELS, *RUNS, "--warehouse", warehouse, "--preset", "trec_eval", "--cutoffs", "10",
                    *FAST, "--format", "json")
    assert result.exit_code == 0, result.output
    return {"warehouse": warehouse, "output": json.loads(result.stdout)}


def test_the_stored_numbers_are_the_printed_ones(stored: dict) -> None:
    output, warehouse = stored["output"], stored["warehouse"]
    rows = sql(warehouse, "SELECT * FROM comparisons ORDER BY run DESC")
    # Every pair of the three runs (the default up to 12 runs), each as computed.
    assert len(rows) == 3 and {r["comparison_id"] for r in rows} == {output["comparison_id"]}
    printed = {(row["baseline"], row["run"]): row for row in output["comparisons"]}
    assert set(printed) == {(r["baseline"], r["run"]) for r in rows}
    for row in rows:
        for key in ("n_queries", "mean_difference", "ci_low", "ci_high", "p_t", "p_randomization", "p_adjusted",
                    "correction", "significant", "effect_size", "wins", "ties", "losses", "p_tukey_hsd", "decided"):
            assert row[key] == printed[(row["baseline"], row["run"])][key], key
    per_query = sql(warehouse, "SELECT count(*) AS n, count(robustness) AS known FROM comparison_per_query")
    assert per_query == [{"n": 3 * 54, "known": 3 * 54}]  # every query has its nDCG interval
    (record,) = sql(warehouse, "SELECT * FROM comparison_records")
    provenance = json.loads(record["provenance_json"])
    assert provenance["settings"]["permutations"] == 1000 and "scipy" in provenance["libraries"]
    assert [e["run_name"] for e in provenance["evaluations"]] == ["p_bm25", "pash_r3", "DoRA_Large"]
    assert provenance["evaluations"][0]["run"]["source_sha256"]


def test_comparing_again_reuses_the_stored_comparison(stored: dict) -> None:
    warehouse = stored["warehouse"]
    ids = [run["evaluation_id"] for run in stored["output"]["runs"]]
    again = judged("compare", *ids, "--warehouse", warehouse, *FAST, "--format", "json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["comparisons"] == stored["output"]["comparisons"]
    assert len(list((warehouse / "comparison_records").glob("[!_]*.parquet"))) == 1
    by_id = judged("compare", stored["output"]["comparison_id"], "--warehouse", warehouse, "--format", "json")
    assert json.loads(by_id.stdout)["comparisons"] == stored["output"]["comparisons"]


@pytest.mark.parametrize("command", ["compare", "report"])
def test_spec_options_with_stored_evaluations_and_no_rebase_are_refused(stored: dict, command: str,
                                                                        tmp_path: Path) -> None:
    """The stored evaluations keep their spec: options that would change it are refused, not silently ignored."""
    warehouse = stored["warehouse"]
    ids = [run["evaluation_id"] for run in stored["output"]["runs"]]
    out = ["--out", tmp_path / "report.html"] if command == "report" else []
    before = sorted(path.name for path in (warehouse / "comparison_records").iterdir())
    result = judged(command, *ids[:2], "--warehouse", warehouse, "--cutoffs", "5", "--preset", "judged", *FAST, *out)
    assert result.exit_code == 2 and not result.stdout, result.output
    assert result.stderr == ("judged: error: --preset, --cutoffs: stored evaluations keep the spec they were evaluated "
                             "under; give --rebase to evaluate their runs again under these options, or leave the "
                             "options out\n")
    assert sorted(path.name for path in (warehouse / "comparison_records").iterdir()) == before
    assert not (tmp_path / "report.html").exists()


def test_options_with_a_stored_comparison_are_refused(stored: dict) -> None:
    comparison_id = stored["output"]["comparison_id"]
    result = judged("compare", comparison_id, "--warehouse", stored["warehouse"], "--seed", "3", "--measures", "AP")
    assert result.exit_code == 2 and not result.stdout, result.output
    assert result.stderr == (f"judged: error: {comparison_id} is a stored comparison, made with its own evaluations "
                             "and settings: --measures, --seed cannot change it (compare its evaluation ids "
                             "instead)\n")


def test_the_docs_comparison_queries(stored: dict) -> None:
    assert len(ANALYST_QUERIES) == 2
    better = sql(stored["warehouse"], ANALYST_QUERIES[0])
    # pash_r3 beats p_bm25 at NDCG@10 by about 0.32 (DL 2020, trec_eval -c): far below 0.05 after Holm, and decided;
    # p_bm25 > DoRA_Large is significant too, but the unjudged documents could reverse it.
    pairs = [(row["better"], row["worse"], row["decided"]) for row in better]
    assert ("pash_r3", "p_bm25", True) in pairs and ("p_bm25", "DoRA_Large", False) in pairs
    assert all(row["difference"] > 0 and row["effect_size"] > 0.8 and row["p_adjusted"] < 0.05 for row in better)
    assert [decided for _, _, decided in pairs] == sorted((decided for _, _, decided in pairs), reverse=True)
    lost = sql(stored["warehouse"], ANALYST_QUERIES[1])
    assert lost and all(row["difference"] < -0.2 for row in lost)
    assert {row["run"] for row in lost} <= {"pash_r3", "DoRA_Large"}


def test_different_judgment_versions_are_refused_naming_both_then_rebased(stored: dict, tmp_path: Path) -> None:
    warehouse = stored["warehouse"]
    lines = QRELS.read_text().splitlines()
    revised = tmp_path / "qrels.revised.txt"
    revised.write_text("\n".join(lines[: len(lines) - 500]) + "\n")
    ingested = judged("ingest-judgments", revised, "--warehouse", warehouse, "--name", "trec-dl-2020-passage",
                      "--version", "revised-2026")
    assert ingested.exit_code == 0, ingested.output
    evaluated = judged("evaluate", "trec-dl-2020-passage", RUNS[1], "--warehouse", warehouse, "--preset",
                       "trec_eval", "--cutoffs", "10", "--format", "json")
    assert evaluated.exit_code == 0, evaluated.output
    revised_id = json.loads(evaluated.stdout)["evaluations"][0]["evaluation_id"]
    original_id = stored["output"]["runs"][0]["evaluation_id"]
    refused = judged("compare", original_id, revised_id, "--warehouse", warehouse, *FAST)
    assert refused.exit_code == 1 and not refused.stdout
    message = refused.stderr.strip()
    assert message.startswith("judged: error: ") and len(message.splitlines()) == 1
    assert "version nist-final" in message and "version revised-2026" in message and "--rebase" in message
    rebased = judged("compare", original_id, revised_id, "--warehouse", warehouse, "--rebase", *FAST,
                     "--format", "json")
    assert rebased.exit_code == 0, rebased.output
    output = json.loads(rebased.stdout)
    assert output["judgments"] == "trec-dl-2020-passage version revised-2026"
    assert output["runs"][1]["evaluation_id"] == revised_id  # reused; p_bm25 evaluated on the newest version


def test_nightly_writes_a_report_and_stores_the_comparison(stored: dict, tmp_path: Path) -> None:
    warehouse = stored["warehouse"]
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for run in RUNS[:2]:
        (inbox / run.name).write_bytes(run.read_bytes())
    result = judged("nightly", "--inbox", inbox, "--judgments", QRELS, "--preset", "trec_eval", "--cutoffs", "10",
                    "--warehouse", warehouse)
    assert result.exit_code == 0, result.output
    (night,) = sql(warehouse, "SELECT DISTINCT flow_run_id FROM nightly WHERE file = 'input.pash_r3.gz' "
                              "AND started_at = (SELECT max(started_at) FROM nightly)")
    report = warehouse / "reports" / f"{night['flow_run_id']}.html"
    text = report.read_text()
    # the per-query differences are drawn in the measure's plot, under the report's opening conclusions
    assert "id='measure-plot-nDCG-10' data-measure='nDCG@10'><svg" in text and "p_bm25" in text and "pash_r3" in text
    assert "<ul id='conclusions'" in text and "Highest scoring run: pash_r3 on nDCG@10" in text
    compared = sql(warehouse, "SELECT r.run_names FROM comparison_records r "
                              "WHERE json_extract_string(r.provenance_json, '$.flow_run_id') = "
                              f"'{night['flow_run_id']}'")
    assert compared == [{"run_names": ["p_bm25", "pash_r3"]}]
