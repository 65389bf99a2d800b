"""The in-memory, streaming, sharded and Dask paths give identical per-query tables (and the same evaluation id)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from judged.flows.engine.evaluate import Part, evaluate
from judged.flows.store.readers import load_table, open_stored
from judged.flows.engine.limits import Limits
from judged.flows.pipeline.evaluation import evaluate_shard, finish_evaluation, parts_staging, stored_plan
from judged.flows.pipeline.flows import evaluate_flow, ingest_judgments, ingest_run, task_runner
from judged.flows.pipeline.tasks import ingest_file
from judged.flows.store.warehouse import now_utc
from judged.flows.store.warehouse import Store
from judged.schemas.spec import PRESETS, EvaluationSpec
from tests.conftest import SAMPLE

SPECS = {
    "judged@5,10,100": PRESETS["judged"].with_options(cutoffs=(5, 10, 100)),
    "trec_eval@10,all": PRESETS["trec_eval"].with_options(cutoffs=(10, None)),
    "sklearn@10": PRESETS["sklearn"].with_options(cutoffs=(10,)),
    "condensed-depth": PRESETS["trec_eval9"].with_options(cutoffs=(5, 20), unjudged="condensed", depth=50),
}


def generated_s(directory: Path, queries: int = 1_000, depth: int = 100, seed: int = 5) -> tuple[Path, Path]:
    """Size S: 1k queries x 100 documents, ~1% exact ties, some unjudged documents in every top 10."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(queries), depth)
    j = np.tile(np.arange(depth), queries)
    doc = (q * 7919 + j * 104729) % 5_000_000
    score = np.round(20 - j * 0.05 + rng.normal(0, 0.01, q.size), 4)
    tie = rng.random(q.size) < 0.01
    score[1:][tie[1:]] = score[:-1][tie[1:]]
    run = pl.DataFrame({"q": q.astype(str), "z": "Q0", "d": doc.astype(str), "r": j + 1, "s": score, "t": "gen"})
    judged = ((j < 10) & (rng.random(q.size) < 0.7)) | (rng.random(q.size) < 0.2)
    qrels = pl.DataFrame({"q": q[judged].astype(str), "i": "0", "d": doc[judged].astype(str),
                          "g": rng.integers(0, 4, judged.sum())})
    run_path, qrels_path = directory / "run.txt", directory / "qrels.txt"
    run.write_csv(run_path, separator=" ", include_header=False)
    qrels.write_csv(qrels_path, separator=" ", include_header=False)
    return qrels_path, run_path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    return {
        "dl2020-DoRA_Large": (SAMPLE / "qrels.dl20-passage.txt", SAMPLE / "runs" / "input.DoRA_Large.gz"),
        "generated-S": generated_s(tmp_path_factory.mktemp("generated")),
    }


@pytest.mark.parametrize("spec_name", list(SPECS))
@pytest.mark.parametrize("data", ["dl2020-DoRA_Large", "generated-S"])
def test_in_memory_streaming_and_sharded_agree(
    inputs: dict, tmp_path: Path, data: str, spec_name: str
) -> None:
    spec: EvaluationSpec = SPECS[spec_name]
    qrels, run = inputs[data]
    in_memory = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), spec, engine="in-memory")
    streaming = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), spec, engine="streaming")
    # The default picks an engine per step (candidates of a short head on the streaming one).
    chosen = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), spec)
    # Plain text read in pieces, candidates found in parts (as at M, scaled down).
    scaled_down = Limits(text_piece_bytes=100_000, candidate_part_rows=3_000)
    in_parts = evaluate(
        load_table(run, "run", limits=scaled_down), load_table(qrels, "judgments", limits=scaled_down), spec,
        limits=scaled_down,
    )
    # The flow's steps without orchestration: its plan of a stored run, each part staged, then finished.
    warehouse = Store(tmp_path / "warehouse")
    judgments = ingest_file(warehouse, qrels, "judgments", limits=Limits(rows_per_shard=2_000))
    stored_run = ingest_file(warehouse, run, "run", limits=Limits(rows_per_shard=10_000))
    assert int(warehouse.record("run", stored_run.id)["n_shards"]) >= 8
    # A head of one row per part at most: as many parts as the stored run has shards, whatever the spec.
    planned = stored_plan(warehouse, stored_run.id, judgments.id, spec, Limits(head_rows_per_part=1))
    assert planned.parts == tuple(Part(shard, planned.run.shards) for shard in range(planned.run.shards))
    with parts_staging(warehouse) as folder:
        staged = [evaluate_shard(planned, part, folder) for part in planned.parts]
        report = finish_evaluation(warehouse, planned, staged, now_utc(), None)
    _, sharded, summary = warehouse.load_evaluation(report.evaluation_id)

    direct_sharded = evaluate(
        open_stored(warehouse.root / "run_rows" / stored_run.id, "run"), load_table(qrels, "judgments"), spec
    )

    assert streaming.per_query.equals(in_memory.per_query)
    assert chosen.per_query.equals(in_memory.per_query)
    assert in_parts.per_query.equals(in_memory.per_query)
    assert direct_sharded.per_query.equals(in_memory.per_query)
    assert direct_sharded.summary.equals(in_memory.summary)
    assert report.evaluation_id == in_memory.evaluation_id == direct_sharded.evaluation_id
    assert sharded.select(in_memory.per_query.columns).equals(in_memory.per_query)
    assert summary.select(in_memory.summary.columns).equals(in_memory.summary)


@pytest.fixture(scope="module")
def stored_by_layout(
    prefect_harness: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, str, str]]:
    """The sample's DoRA_Large run and judgments stored once per layout, by position (its queries lie together) and
    by bucket (the store's choice overruled): layout -> (warehouse, judgment set id, run id). Each evaluation below
    starts from a copy, so that none reuses another's."""
    import judged.flows.store.warehouse as warehouse_module

    qrels, run = SAMPLE / "qrels.dl20-passage.txt", SAMPLE / "runs" / "input.DoRA_Large.gz"
    stored = {}
    for layout in ("position", "bucket"):
        warehouse = tmp_path_factory.mktemp(f"stored-by-{layout}")
        with pytest.MonkeyPatch.context() as patch:
            if layout == "bucket":
                patch.setattr(warehouse_module, "position_blocks", lambda *args: None)
            judgments = ingest_judgments(str(qrels), str(warehouse), rows_per_shard=2_000).id
            run_id = ingest_run(str(run), str(warehouse), rows_per_shard=20_000).id
        record = Store(warehouse).record("run", run_id)
        # 200,000 rows: 10 stretches of 20 whole queries, or 16 shards of buckets.
        assert (record["layout"], int(record["n_shards"])) == (layout, 10 if layout == "position" else 16)
        stored[layout] = (warehouse, judgments, run_id)
    return stored


@pytest.mark.parametrize("spec", [PRESETS["trec_eval"].with_options(cutoffs=(10, 100)),  # a head read
                                  PRESETS["trec_eval"].with_options(cutoffs=(10, None))],  # whole lists
                         ids=["head", "whole"])
def test_dask_cluster_gives_the_local_result(
    stored_by_layout: dict[str, tuple[Path, str, str]], tmp_path: Path, spec: EvaluationSpec
) -> None:
    """The evaluate flow on a thread pool and on a Dask cluster, over the run stored by position and by bucket: one
    evaluation id, and byte for byte the same rows."""
    from distributed import LocalCluster

    results = {}
    with LocalCluster(n_workers=2, processes=False, dashboard_address=None) as cluster:
        for layout, (stored, judgments, run_id) in stored_by_layout.items():
            for where, runner in (("local", task_runner(None)), ("dask", task_runner(cluster.scheduler_address))):
                warehouse = tmp_path / f"{layout}-{where}"
                shutil.copytree(stored, warehouse)
                (report,) = evaluate_flow.with_options(task_runner=runner)(
                    judgments, [run_id], spec.canonical_json(), str(warehouse)
                )
                assert report.created, (layout, where)
                stored_rows = Store(warehouse).load_evaluation(report.evaluation_id)
                results[(layout, where)] = (report.evaluation_id, stored_rows)
    local_id, (_, local_rows, local_summary) = results[("position", "local")]
    for key, (evaluation_id, (_, rows, summary)) in results.items():
        assert evaluation_id == local_id, key
        assert rows.equals(local_rows) and summary.equals(local_summary), key
    if spec.cutoffs == (10, 100):
        assert local_summary.filter(pl.col("cutoff") == 10)["value"][0] == pytest.approx(0.0414, abs=5e-5)
