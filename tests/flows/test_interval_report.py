"""The interval next to the value, as `judged evaluate` (table), `judged show` and the markdown artifact print it
(flows.report.interval_lines), and the two fields on every per-query row of `--format json`."""

from __future__ import annotations

import json
import math
from pathlib import Path

from typer.testing import CliRunner

from judged.flows.cli.app import app

runner = CliRunner()

# The example: a judged grade-1 document at rank 1, nine judged non-relevant, one unjudged at rank 10.
# trec_eval: NDCG@10 = 1.0; graded 3, the unjudged one gives (1 + 3/log2(11)) / (3 + 1/log2(3)) = 0.5142.
LOW = (1 + 3 / math.log2(11)) / (3 + 1 / math.log2(3))


def write_example(folder: Path) -> tuple[Path, Path]:
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    docs = [f"d{i}" for i in range(1, 11)]
    qrels.write_text("q1 0 d1 1\n" + "".join(f"q1 0 {d} 0\n" for d in docs[1:9]))
    # The scale is declared 0-3 (sidecar); without it only the grades present (0, 1) could be given.
    (folder / "qrels.txt.meta.toml").write_text('[grade_scale]\n0 = "no"\n1 = "related"\n2 = "highly"\n3 = "perfect"\n')
    run.write_text("".join(f"q1 Q0 {d} {rank} {20 - rank} t\n" for rank, d in enumerate(docs, start=1)))
    return qrels, run


def test_table_names_the_interval_and_the_widest_queries(tmp_path: Path) -> None:
    qrels, run = write_example(tmp_path)
    result = runner.invoke(app, ["evaluate", str(qrels), str(run), "--preset", "trec_eval", "--cutoffs", "10"])
    assert result.exit_code == 0, result.output
    assert f"nDCG@10 = 1.0000, [{LOW:.4f}, 1.0000] over 1 unjudged documents (1 of 1 queries wider than 0.1)" in (
        " ".join(result.stdout.split())
    )
    assert f"widest: q1 1.0000 [{LOW:.4f}, 1.0000]" in " ".join(result.stdout.split())


def test_json_carries_the_interval_on_every_row_and_in_the_summary(tmp_path: Path) -> None:
    qrels, run = write_example(tmp_path)
    result = runner.invoke(app, ["evaluate", str(qrels), str(run), "--preset", "trec_eval", "--cutoffs", "1,10",
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    (evaluation,) = json.loads(result.stdout)["evaluations"]
    assert evaluation["interval_world"].startswith("closed: ")
    rows = {row["cutoff"]: row for row in evaluation["per_query"]}
    # @1: nothing unjudged in the top 1, but graded 3 the document at rank 10 makes IDCG@1 = 3: [1/3, 1].
    assert rows[1]["value"] == rows[1]["value_max"] == 1.0 and abs(rows[1]["value_min"] - 1 / 3) < 1e-15
    assert abs(rows[10]["value_min"] - LOW) < 1e-12 and rows[10]["value_max"] == 1.0
    assert rows[10]["interval_kind"] == "exact"
    summary = {row["cutoff"]: row for row in evaluation["summary"]}
    assert abs(summary[10]["value_min"] - LOW) < 1e-12 and summary[10]["n_wide_intervals"] == 1
