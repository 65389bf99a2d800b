"""Smoke test of the benchmarks (benchmarks/): the generator at size `tiny` and the harness run programmatically,
one repetition, on the tools installed here. Checks agreement and the printed table; never timings."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from benchmarks import run as harness, store_floor
from benchmarks.generate import generate
from benchmarks.run import HEADER, format_report, memory_shortfall, run_benchmark

REQUIRED_TOOLS = ["judged-text", "judged-text-json", "judged-parquet", "judged-stored", "pytrec_eval"]


def _run_rows(directory: Path) -> pl.DataFrame:
    return pl.read_parquet(directory / "run.parquet")


def _qrels(directory: Path) -> pl.DataFrame:
    return pl.read_csv(
        directory / "qrels.txt", separator=" ", has_header=False,
        new_columns=["query_id", "iteration", "doc_id", "relevance"],
        schema_overrides={"query_id": pl.String, "iteration": pl.String, "doc_id": pl.String},
    )


def test_generator_is_deterministic_and_has_the_promised_shape(tmp_path: Path) -> None:
    first = generate("tiny", tmp_path / "a", quiet=True)
    again = generate("tiny", tmp_path / "b", quiet=True)
    for name in ("qrels.txt", "run.txt", "run.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    stamp = (tmp_path / "a" / "run.txt").stat().st_mtime_ns
    assert generate("tiny", tmp_path / "a", quiet=True) == first  # manifest matches: nothing regenerated
    assert (tmp_path / "a" / "run.txt").stat().st_mtime_ns == stamp
    assert first["run_rows"] == again["run_rows"] > 0

    run, qrels = _run_rows(tmp_path / "a"), _qrels(tmp_path / "a")
    text = pl.read_csv(tmp_path / "a" / "run.txt", separator=" ", has_header=False,
                       new_columns=["query_id", "q0", "doc_id", "rank", "score", "tag"],
                       schema_overrides={"query_id": pl.String, "doc_id": pl.String})
    assert text["score"].to_list() == run["score"].to_list()  # %.6f round-trips: text and Parquet are the same run
    assert run.select(pl.struct("query_id", "doc_id").is_unique().all()).item()
    assert qrels.select(pl.struct("query_id", "doc_id").is_unique().all()).item()
    assert run.select((pl.col("score").diff().over("query_id").fill_null(-1) <= 0).all()).item()
    assert first["ties"] > 0 and set(qrels["relevance"].unique()) == {0, 1, 2, 3}
    judged_only = set(qrels["query_id"]) - set(run["query_id"])
    run_only = set(run["query_id"]) - set(qrels["query_id"])
    assert len(judged_only) == first["judged_queries_missing_from_run"] >= 1
    assert len(run_only) == first["run_queries_without_judgments"] >= 1
    no_relevant = qrels.group_by("query_id").agg(pl.col("relevance").max()).filter(pl.col("relevance") == 0)
    assert no_relevant.height >= 1
    top10 = run.filter(pl.col("rank") <= 10).join(qrels, on=["query_id", "doc_id"], how="left")
    unjudged = top10.group_by("query_id").agg(pl.col("relevance").null_count())
    assert unjudged["relevance"].min() >= 1  # every top 10 keeps an unjudged document
    not_retrieved = qrels.join(run, on=["query_id", "doc_id"], how="anti").filter(
        pl.col("query_id").is_in(list(set(run["query_id"]))))
    assert not_retrieved.height > 0


def test_shuffled_variant_holds_the_same_rows_in_another_order(tmp_path: Path) -> None:
    ordered = generate("tiny", tmp_path / "a", quiet=True)
    shuffled = generate("tiny", tmp_path / "b", quiet=True, shuffled=True)
    assert shuffled["shuffled"] and "shuffled" not in ordered
    assert (tmp_path / "a" / "qrels.txt").read_bytes() == (tmp_path / "b" / "qrels.txt").read_bytes()
    rows, mixed = _run_rows(tmp_path / "a"), _run_rows(tmp_path / "b")
    assert not rows.equals(mixed) and rows.equals(mixed.sort(pl.col("query_id").cast(pl.Int64), "rank"))
    # An ordered folder never matches the shuffled variant's manifest (and the reverse): it would be regenerated.
    stamp = (tmp_path / "a" / "run.txt").stat().st_mtime_ns
    generate("tiny", tmp_path / "a", quiet=True)
    assert (tmp_path / "a" / "run.txt").stat().st_mtime_ns == stamp


def test_harness_runs_and_agrees(tmp_path: Path) -> None:
    report = run_benchmark("tiny", tmp_path, reps=1, tools=REQUIRED_TOOLS, log=lambda message: None)
    for result in report.results:
        assert result.skipped is None, (result.tool, result.skipped)
        assert result.ok_runs, (result.tool, result.failed)
        assert result.agreement is not None and result.agreement.ok, (result.tool, result.agreement)
    pytrec = report.result("pytrec_eval").agreement
    # pytrec_eval leaves out the judged query missing from the run; judged scores it 0 (trec_eval -c).
    assert pytrec.only_reference and not pytrec.only_reference_nonzero
    text = format_report(report)
    assert HEADER[0] in text and all(tool in text for tool in REQUIRED_TOOLS)
    markdown = format_report(report, markdown=True)
    assert "| " + " | ".join(HEADER) + " |" in markdown
    assert markdown.count("| reference |") == 1  # judged-text: the others are compared with it
    assert markdown.count("| ok |") == len(REQUIRED_TOOLS) - 1
    assert "| speed-up (tool wall / judged wall) | pytrec_eval |" in markdown
    assert report.inputs.stored_run is not None and report.inputs.stored_run.parent.name == "run_rows"


def test_ingest_is_timed_without_comparing_values(tmp_path: Path) -> None:
    tools = ["judged-text", "judged-ingest", "judged-ingest-parquet", "judged-flow-text"]
    report = run_benchmark("tiny", tmp_path, reps=1, tools=tools, log=lambda message: None)
    for tool in tools:
        assert report.result(tool).ok_runs, (tool, report.result(tool).failed)
    for tool in ("judged-ingest", "judged-ingest-parquet"):
        assert report.result(tool).agreement is None  # it prints no NDCG values
    flow_text = report.result("judged-flow-text").agreement  # the flow from the text run, against judged-text
    assert flow_text is not None and flow_text.ok
    text = format_report(report)
    for name in ("judged-ingest (run.txt)", "judged-ingest-parquet (run.parquet)"):
        assert f"{name}, the reading and storing itself" in text
        assert f"{name}, where the store's time went" in text
    assert "M rows/s" in text and "order " in text and "write " in text


def test_memory_shortfall_says_why_a_tool_does_not_fit() -> None:
    assert memory_shortfall(8_400, 22_000, None) is None
    assert memory_shortfall(8_400, 22_000, 18_000) is None
    too_little = memory_shortfall(8_400, 9_000, None)
    assert too_little and "8.2 GiB" in too_little and "8.8 GiB available (MemAvailable)" in too_little
    bounded = memory_shortfall(8_400, 22_000, 4_000)
    assert bounded and "above --max-rss-mib 4000" in bounded
    assert memory_shortfall(8_400, None, None) is None  # nothing known of the memory: it runs


def test_pytrec_eval_is_skipped_with_its_reason_where_memory_is_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "available_memory_mib", lambda: 1.0)
    report = run_benchmark("tiny", tmp_path, reps=1, tools=["judged-text", "pytrec_eval"], log=lambda message: None)
    skipped = report.result("pytrec_eval").skipped
    assert skipped and "available (MemAvailable)" in skipped
    assert report.result("judged-text").ok_runs  # a tool without a foreseen peak runs
    assert f"skipped: {skipped}" in format_report(report)


def test_the_table_shows_each_tools_spread_and_the_repetition_that_started_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in a harness run on judged's local server: the first flow command finds none and starts it.
    found = iter([True, False])
    monkeypatch.setattr(harness, "server_to_start", lambda inputs: next(found))
    tools = ["judged-text", "judged-flow-text"]
    report = run_benchmark("tiny", tmp_path, reps=2, tools=tools, log=lambda message: None)
    rows = {row[0]: row for row in harness.table_rows(report)}
    spread = rows["judged-text"][HEADER.index("spread: min-max (s, % of median)")]
    assert spread.count("-") == 1 and spread.endswith("%)")
    assert [m.started_server for m in report.result("judged-flow-text").measurements] == [True, False]
    assert rows["judged-flow-text"][HEADER.index("reps (s)")].split(" / ")[0].endswith("^")
    text = format_report(report)
    assert "^: the repetition started a Prefect server" in text
    # The speed-ups take the flow's repetitions after the server's start; there is no reference tool here.
    flow = report.result("judged-flow-text")
    assert harness.warm_wall(flow) == flow.measurements[1].wall


@pytest.mark.parametrize("source", ["text", "parquet"])
def test_the_store_floor_measures_every_step_and_prints_its_bounds(
    tmp_path: Path, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert store_floor.main(["--size", "tiny", "--input", source, "--data-dir", str(tmp_path), "--cores", "2"]) == 0
    printed = capsys.readouterr().out
    for step in ("parse", "spill, with its parse", "spill read back", "order and duplicates", "write"):
        assert f"\n{step}: " in printed
    for floor in ("read-and-write floor (parse + write)", "order floor (parse + order and duplicates + write)",
                  "bounded-memory floor"):
        assert floor in printed
    assert printed.count(" rows/s at most (") == 3


@pytest.mark.parametrize("tool, module", [("ir_measures", "ir_measures"), ("ranx-text", "ranx")])
def test_optional_reference_tools(tool: str, module: str, tmp_path: Path) -> None:
    """The bench extra's tools when installed. ranx may order exactly tied documents differently from trec_eval
    (its sort is not stable): such a query may differ, but only where the harness explains it by tie order."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (it comes with the bench extra: pip install -e '.[bench]')")
    report = run_benchmark("tiny", tmp_path, reps=1, tools=[tool], log=lambda message: None)
    result = report.result(tool)
    assert result.ok_runs, result.failed
    agreement = result.agreement
    assert not agreement.unexplained and not agreement.only_tool and not agreement.only_reference_nonzero
    assert set(agreement.causes.values()) <= {"tie order"}


TOOLS = Path(__file__).resolve().parents[2] / "benchmarks" / "tools"


def _parts_off(off: str, qrels: Path, run: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOLS / "json_parts_off.py"), "evaluate", str(qrels), str(run), "--preset", "trec_eval",
         "--cutoffs", "10", "--format", "json"],
        capture_output=True, text=True, env={**os.environ, "PARTS_OFF": off},
    )


def test_json_parts_off_switches_off_what_it_names_and_only_that(tmp_path: Path) -> None:
    """The timing tool's variants differ from the command exactly where they say: constant hashes (another
    evaluation id), no intervals, or a stub kernel ([0, 1] widened to hold the value); a name it does not know is
    refused."""
    generate("tiny", tmp_path, quiet=True)
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    outputs = {}
    for off in ("none", "hash", "intervals", "kernel"):
        done = _parts_off(off, qrels, run)
        assert done.returncode == 0, done.stderr
        outputs[off] = json.loads(done.stdout)["evaluations"][0]
    ids = {off: output["evaluation_id"] for off, output in outputs.items()}  # made of the inputs' hashes
    assert ids["hash"] != ids["none"] == ids["intervals"] == ids["kernel"]
    rows = {off: output["per_query"] for off, output in outputs.items()}
    assert [row["value"] for row in rows["hash"]] == [row["value"] for row in rows["none"]]
    assert any(row["value_min"] < row["value_max"] for row in rows["none"])
    assert all(row["value_min"] is None for row in rows["intervals"])
    widened = [row for row in rows["kernel"] if row["value_min"] is not None and row["value_min"] < row["value"]]
    assert widened and all(row["value_min"] == 0.0 for row in widened)
    refused = _parts_off("kernel,bogus", qrels, run)
    assert refused.returncode == 1 and "PARTS_OFF" in refused.stderr
