"""The judging loop end to end on the bundled TREC DL 2020 sample: intervals stored and queryable, the worklist
command, judgment versions that grow (--extends) with their lineage, the nightly job on the newest version, and
the loop experiment's command. Uses the session's temporary Prefect server (`prefect_harness`)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judged.flows.cli.app import app
from judged.flows.pipeline.flows import evaluate_flow, ingest_judgments, ingest_run, nightly
from judged.schemas.spec import PRESETS
from tests.conftest import REPO, SAMPLE
from tests.helpers import tree_listing

QRELS = SAMPLE / "qrels.dl20-passage.txt"
RUNS = {name: SAMPLE / "runs" / f"input.{name}.gz" for name in ("p_bm25", "pash_r3", "DoRA_Large")}
SPEC = PRESETS["trec_eval"].with_options(cutoffs=(10,))
runner = CliRunner()


def sql(warehouse: Path, query: str) -> list[dict]:
    result = runner.invoke(app, ["sql", query, "--warehouse", str(warehouse), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def judged(*arguments: str) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in arguments])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def warehouse(prefect_harness: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample's judgments and its three runs, each evaluated at NDCG@10 under the trec_eval preset."""
    root = tmp_path_factory.mktemp("judging")
    judgments = ingest_judgments(str(QRELS), str(root))
    run_ids = [ingest_run(str(path), str(root)).id for path in RUNS.values()]
    evaluate_flow(judgments.id, run_ids, SPEC.canonical_json(), str(root))
    return root


def test_markdown_artifact_and_show_give_the_interval_and_the_widest_queries(warehouse: Path) -> None:
    from judged.flows.pipeline.artifacts import evaluation_markdown
    from judged.flows.pipeline.evaluation import EvaluationReport
    from judged.flows.store.warehouse import Store

    store = Store(warehouse)
    (dora,) = sql(warehouse, "SELECT evaluation_id, run_id, judgment_set_id FROM evaluations WHERE run_name = 'DoRA_Large'")
    report = EvaluationReport(dora["evaluation_id"], False, dora["run_id"], dora["judgment_set_id"])
    markdown = evaluation_markdown(store, [report])
    # DoRA_Large: NDCG@10 = 0.0414 in [0.0360, 0.4166]; the count is its unjudged documents in the scored top 10s.
    assert "- nDCG@10 = 0.0414, [0.0360, 0.4166] over " in markdown
    assert "unjudged documents (" in markdown and "- widest: " in markdown
    code, stdout, stderr = judged("show", dora["evaluation_id"], "--warehouse", warehouse)
    assert code == 0, stderr
    assert "nDCG@10 = 0.0414, [0.0360, 0.4166] over" in " ".join(stdout.split())


def test_intervals_are_stored_and_queryable(warehouse: Path) -> None:
    rows = sql(warehouse, "SELECT e.run_name, count(*) AS n, count(p.value) AS with_value, count(p.value_min) AS with_min,"
                          " bool_and(p.value_min <= p.value + 1e-12 AND p.value <= p.value_max + 1e-12) AS inside,"
                          " any_value(s.value_min) AS mean_min, any_value(s.value_max) AS mean_max,"
                          " any_value(s.n_wide_intervals) AS wide"
                          " FROM per_query p JOIN evaluations e USING (evaluation_id) JOIN summary s USING (evaluation_id)"
                          " WHERE p.cutoff = 10 GROUP BY e.run_name ORDER BY e.run_name")
    by_run = {row["run_name"]: row for row in rows}
    assert set(by_run) == set(RUNS)
    for row in rows:
        assert row["with_min"] == row["with_value"] == 54 and row["inside"]  # 54 judged queries, all scored
        assert row["mean_min"] <= row["mean_max"]
    # DoRA_Large retrieved mostly unjudged passages: its NDCG@10 of 0.0414 lies in [0.0360, 0.4166]; the two pooled
    # runs have few unjudged passages in their top 10 (mean widths 0.091 for p_bm25, 0.142 for pash_r3).
    width = {name: row["mean_max"] - row["mean_min"] for name, row in by_run.items()}
    assert by_run["DoRA_Large"]["mean_min"] == pytest.approx(0.0360, abs=5e-5)
    assert by_run["DoRA_Large"]["mean_max"] == pytest.approx(0.4166, abs=5e-5)
    assert width["p_bm25"] == pytest.approx(0.0906, abs=5e-5) and width["pash_r3"] == pytest.approx(0.1421, abs=5e-5)


def test_worklist_command_stores_the_list_and_writes_the_assessor_file(warehouse: Path, tmp_path: Path) -> None:
    out = tmp_path / "to-judge.txt"
    arguments = ["worklist", "--judgments", "trec-dl-2020-passage", "--warehouse", warehouse, "--budget", 20,
                 "--cutoff", 10, "--preset", "trec_eval", "--out", out]
    code, _, stderr = judged(*arguments)
    assert code == 0, stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 20 and all(len(line.split()) == 3 and line.split()[1] == "0" for line in lines)
    stored = sql(warehouse, "SELECT worklist_id, position, query_id, doc_id, priority, best_rank, evaluations, budget "
                            "FROM worklists ORDER BY position")
    assert [f"{r['query_id']} 0 {r['doc_id']} " for r in stored] == lines  # the grade column left empty
    priorities = [r["priority"] for r in stored]
    assert priorities == sorted(priorities, reverse=True) and priorities[-1] > 0
    assert {r["budget"] for r in stored} == {20} and all(1 <= r["best_rank"] <= 10 for r in stored)
    # The same inputs give the same list (same id, nothing new written).
    before = tree_listing(warehouse / "worklists")
    code, _, stderr = judged(*arguments[:-2], "--out", tmp_path / "again.txt")
    assert code == 0 and "already stored" in stderr
    assert (tmp_path / "again.txt").read_text() == out.read_text() and tree_listing(warehouse / "worklists") == before


@pytest.mark.parametrize(
    ("arguments", "code", "message"),
    [
        (["--judgments", "trec-dl-2020-passage", "--budget", "0"], 2, "--budget must be a positive number"),
        (["--judgments", "no-such-set", "--budget", "5"], 1, "no judgment set with id or name 'no-such-set'"),
        (["--judgments", "trec-dl-2020-passage@v9", "--budget", "5"], 1, "with version 'v9'"),
        (["--judgments", "trec-dl-2020-passage", "--evaluations", "e", "--runs", "r"], 2,
         "give --evaluations or --runs, not both"),
    ],
)
def test_worklist_errors(warehouse: Path, arguments: list[str], code: int, message: str) -> None:
    before = tree_listing(warehouse)
    exit_code, _, stderr = judged("worklist", "--warehouse", warehouse, *arguments)
    assert exit_code == code and message in stderr and stderr.startswith("judged: error: ")
    assert tree_listing(warehouse) == before


THREE_RUNS = [option for name in RUNS for option in ("--runs", name)]  # later tests store others
NIST = "trec-dl-2020-passage@nist-final"  # the sample's own version: later tests add others


def test_worklist_targets_undecided_pairs_by_default(warehouse: Path, tmp_path: Path) -> None:
    code, stdout, stderr = judged("worklist", "--judgments", NIST, "--warehouse", warehouse, *THREE_RUNS,
                                  "--budget", 15, "--cutoff", 10, "--preset", "trec_eval", "--format", "json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["objective"] == "pairs" and "objective pairs" in stderr
    # Three runs, three pairs; DoRA_Large against p_bm25 is the one the unjudged documents leave open.
    assert report["pairs"] == 3 and report["pairs_decided"] == 2 and report["pairs_could_decide"] >= 2
    open_pairs = [s for s in report["pair_states"] if not s["decided"]]
    assert [(s["baseline"], s["run"]) for s in open_pairs] == [("DoRA_Large", "p_bm25")]
    assert open_pairs[0]["mean_difference_min"] < 0 < open_pairs[0]["mean_difference_max"]
    rows = report["rows"]
    assert len(rows) == 15 and [r["position"] for r in rows] == list(range(1, 16))
    assert all(set(r["evaluations"]) == {"DoRA_Large", "p_bm25"} for r in rows)  # only the open pair's documents
    assert [r["priority"] for r in rows] == sorted((r["priority"] for r in rows), reverse=True)
    assert "2 of 3 pairs of runs decided now (" in stderr  # and which
    assert sorted(report["decided_pairs"]) == sorted(f"{s['baseline']}:{s['run']}" for s in report["pair_states"]
                                                     if s["decided"])
    assert all(pair in stderr for pair in report["decided_pairs"])
    # --pairs restricts the objective; a decided pair alone makes it fall back to the width objective.
    code, stdout, stderr = judged("worklist", "--judgments", NIST, "--warehouse", warehouse, *THREE_RUNS,
                                  "--budget", 5, "--preset", "trec_eval", "--pairs", "p_bm25:pash_r3",
                                  "--format", "json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["pairs"] == 1 and report["pairs_decided"] == 1
    assert "falls back to the width objective" in report["notes"][0] and len(report["rows"]) == 5


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--pairs", "p_bm25"], "expected BASELINE:RUN"),
        (["--pairs", "p_bm25:nobody"], "'nobody' is none of the runs ranked"),
        (["--objective", "depth"], "expected adjudicate, pairs or width"),
        (["--objective", "width", "--pairs", "p_bm25:pash_r3"], "leave out --objective width"),
        (["--objective", "width", "--relative"], "leave out --objective width"),
    ],
)
def test_worklist_pairs_options_are_checked(warehouse: Path, arguments: list[str], message: str) -> None:
    before = tree_listing(warehouse)
    code, _, stderr = judged("worklist", "--judgments", NIST, "--warehouse", warehouse, *THREE_RUNS,
                             "--budget", 5, *arguments)
    assert code == 2 and message in stderr, stderr
    assert tree_listing(warehouse) == before


def test_versions_grow_with_lineage_and_the_nightly_uses_the_newest(warehouse: Path, tmp_path: Path) -> None:
    # Answer a worklist of 5 pairs (all grade 1), as assessors would.
    listed = tmp_path / "list.txt"
    code, _, stderr = judged("worklist", "--judgments", "trec-dl-2020-passage", "--warehouse", warehouse,
                             "--budget", 5, "--out", listed)
    assert code == 0, stderr
    worklist_id = stderr.split()[1]
    answers = tmp_path / "answers.txt"
    answers.write_text("".join(f"{line.strip()} 1\n" for line in listed.read_text().splitlines()))
    code, stdout, stderr = judged("ingest-judgments", answers, "--extends", "trec-dl-2020-passage", "--version", "v2",
                                  "--assessors", "team A", "--worklist", worklist_id, "--warehouse", warehouse)
    assert code == 0, stderr
    assert "5 pairs added, 0 revised" in stdout

    # A conflicting grade without --revise, and an unknown parent version: errors, nothing written.
    first = QRELS.read_text().splitlines()[0].split()
    conflict = tmp_path / "conflict.txt"
    conflict.write_text(f"{first[0]} 0 {first[2]} {(int(first[3]) + 1) % 4}\n")
    before = tree_listing(warehouse)
    code, _, stderr = judged("ingest-judgments", conflict, "--extends", "trec-dl-2020-passage", "--version", "v3",
                             "--warehouse", warehouse)
    assert code == 1 and "give --revise" in stderr and f"conflict.txt, line 1: (query '{first[0]}'" in stderr
    code, _, stderr = judged("ingest-judgments", conflict, "--extends", "trec-dl-2020-passage@v7", "--version", "v3",
                             "--warehouse", warehouse)
    assert code == 1 and "no judgment set 'trec-dl-2020-passage' with version 'v7'" in stderr
    assert tree_listing(warehouse) == before

    lineage = sql(warehouse, "SELECT l.version, l.parent_version, l.n_added, l.n_revised, l.assessors, l.worklist_id, "
                             "js.n_rows FROM judgment_lineage l JOIN judgment_sets js USING (judgment_set_id)")
    assert lineage == [{"version": "v2", "parent_version": "nist-final", "n_added": 5, "n_revised": 0,
                        "assessors": "team A", "worklist_id": worklist_id, "n_rows": 11386 + 5}]

    # With --revise the new grade replaces the parent's and counts as a revision.
    code, stdout, stderr = judged("ingest-judgments", conflict, "--extends", "trec-dl-2020-passage", "--version", "v3",
                                  "--revise", "--warehouse", warehouse)
    assert code == 0 and "0 pairs added, 1 revised" in stdout, stderr
    graded = sql(warehouse, "SELECT js.version, j.relevance FROM judgments j JOIN judgment_sets js USING "
                            f"(judgment_set_id) WHERE j.query_id = '{first[0]}' AND j.doc_id = '{first[2]}' ORDER BY 1")
    assert graded == [{"version": "nist-final", "relevance": int(first[3])},
                      {"version": "v2", "relevance": int(first[3])},
                      {"version": "v3", "relevance": (int(first[3]) + 1) % 4}]

    # The nightly job evaluates against the newest version (v3); the older results stay queryable by version.
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(RUNS["p_bm25"], inbox / "again.p_bm25.gz")
    report = nightly(str(inbox), "trec-dl-2020-passage", [SPEC.canonical_json()], str(warehouse))
    (evaluation,) = report.evaluated
    by_version = sql(warehouse, "SELECT js.version, count(*) AS n FROM evaluations e JOIN judgment_sets js "
                                "USING (judgment_set_id) WHERE e.run_name = 'p_bm25' GROUP BY 1 ORDER BY 1")
    assert by_version == [{"version": "nist-final", "n": 1}, {"version": "v3", "n": 1}]
    assert evaluation.judgment_set_id == sql(
        warehouse, "SELECT judgment_set_id FROM judgment_sets WHERE version = 'v3'")[0]["judgment_set_id"]


def test_the_loop_experiment_runs_on_the_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib comes with the bench extra: pip install -e '.[bench]'")
    import importlib.util

    spec = importlib.util.spec_from_file_location("judging_loop", REPO / "benchmarks" / "judging_loop.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "judging_loop", module)  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    code = module.main(["--data", str(SAMPLE), "--runs", "runs", "--seed-runs", "p_bm25", "--cutoff", "5",
                        "--budget", "400", "--orders", "pairs,pairs-relative,width,depth,random,maxmean",
                        "--out", str(tmp_path)])
    assert code == 0  # 1 when a decided pair was reversed or undone, or disagreed with the full judgments
    payload = json.loads((tmp_path / "judging_loop.json").read_text())
    assert payload["violations"] == []
    results = payload["results"]
    assert {r["order"] for r in results} == {"pairs", "pairs-relative", "width", "depth", "random", "maxmean"}
    assert {r["seed"] for r in results if r["order"] in ("random", "maxmean")} == {13, 14, 15}
    for order, seed in {(r["order"], r["seed"]) for r in results}:
        series = [r for r in results if r["order"] == order and r["seed"] == seed]
        widths = [r["mean_pair_width"] for r in series]
        assert widths == sorted(widths, reverse=True) and widths[-1] < widths[0]  # judging never widens them
        decided = [r["decided"] for r in series]
        assert decided == sorted(decided) and series[-1]["decided"] == series[-1]["pairs"] == 3
        assert all(-1.0 <= r["tau"] <= 1.0 for r in series) and series[0]["judged"] == 0
    assert (tmp_path / "judging_loop.png").stat().st_size > 0


@pytest.mark.parametrize("measure", ["P@10", "AP@10"])  # one engine path serves every measure
def test_width_worklist_narrows_any_measure_with_an_interval(warehouse: Path, measure: str) -> None:
    code, stdout, stderr = judged("worklist", "--judgments", NIST, "--warehouse", warehouse, *THREE_RUNS,
                                  "--budget", 6, "--preset", "trec_eval", "--measures", measure, "--format", "json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["objective"] == "width" and len(report["rows"]) == 6
    priorities = [r["priority"] for r in report["rows"]]
    assert priorities == sorted(priorities, reverse=True) and priorities[0] > 0
    if measure == "P@10":  # judging any unjudged document of a top 10 removes exactly 1/10 of P@10's width
        assert all(r["width_removed"] == pytest.approx(0.1 * r["n_evaluations"]) for r in report["rows"])


def test_worklist_refuses_a_measure_without_interval_or_pairs_on_another_measure(warehouse: Path) -> None:
    code, _, stderr = judged("worklist", "--judgments", NIST, "--warehouse", warehouse, *THREE_RUNS,
                             "--measures", "Judged@10")
    assert code == 2 and "a worklist narrows the interval of one measure" in stderr
    code, _, stderr = judged("worklist", "--judgments", NIST, "--warehouse", warehouse, *THREE_RUNS,
                             "--measures", "P@10", "--objective", "pairs")
    assert code == 2 and "the pairs objective reads nDCG@k's paired difference intervals" in stderr
