"""Runs stored by position (flows.store.warehouse.sink_position_shards): a run whose queries each lie together in
the file is cut into consecutive stretches of whole queries as it streams past, each part listing its queries; a
scattered run keeps the shards by bucket. Every evaluation path gives byte-identical per-query tables on both
layouts (and on runs stored before layouts), for runs in order, with shuffled ties, interleaved and shuffled."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

import judged.flows.store.warehouse as warehouse_module
from judged.flows.engine.evaluate import JudgmentsRead, Part, evaluate, plan
from judged.flows.engine.limits import Limits
from judged.flows.pipeline.evaluation import evaluate_shard, finish_evaluation, parts_staging, stored_plan
from judged.flows.pipeline.tasks import ingest_file
from judged.flows.store.readers import PART_QUERIES_KEY, load_table, open_stored
from judged.flows.store.warehouse import Store, now_utc
from judged.schemas.spec import PRESETS
from judged.transforms.shards import RunLayout
from tests.flows.test_ordered_ingest import write_variant

HEAD = PRESETS["trec_eval"].with_options(cutoffs=(3, 10))  # each query's first 11 positions: a stored head read
WHOLE = PRESETS["judged"].with_options(cutoffs=(5, None))  # whole lists: every row of each part
SMALL = Limits(rows_per_shard=120)
# Text scanned (not parsed in memory) and cut from batches of 37 rows: shards end in the middle of batches.
SCANNED = Limits(rows_per_shard=120, in_memory_text_bytes=1, sink_batch_rows=37)
VARIANTS = ["in_order", "ties_ascending", "interleaved", "shuffled"]


def write_qrels(path: Path, run: Path, seed: int = 3) -> Path:
    """Grades for about half of each query's documents, a query the run lacks (77) and documents it never
    retrieved."""
    rng = random.Random(seed)
    lines = sorted({(line.split()[0], line.split()[2]) for line in run.read_text().splitlines()})
    judged = [f"{q} 0 {d} {rng.randint(0, 3)}" for q, d in lines if rng.random() < 0.5]
    judged += [f"77 0 D{d} {d % 4}" for d in range(5)] + [f"9 0 X{d} 2" for d in range(3)]
    path.write_text("\n".join(judged) + "\n")
    return path


def as_bytes(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.rechunk().write_ipc(buffer)
    return buffer.getvalue()


def store_run(root: Path, run: Path, limits: Limits, layout: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, str]:
    """The run stored as the store chooses (`auto`), by bucket (the choice overruled), or as a run stored before
    layouts (by bucket, its record without a layout)."""
    store = Store(root)
    with monkeypatch.context() as patched:
        if layout != "auto":
            patched.setattr(warehouse_module, "position_blocks", lambda *args: None)
        run_id = ingest_file(store, run, "run", limits=limits).id
    if layout == "before layouts":
        record = store.run_record(run_id)
        metadata = {k.decode(): v.decode() for k, v in pq.ParquetFile(record).metadata.metadata.items()
                    if k != b"ARROW:schema"}
        pl.read_parquet(record).drop("layout").write_parquet(record, metadata=metadata)
    return store, run_id


@pytest.mark.parametrize("limits", [SMALL, SCANNED], ids=["in-memory", "scanned"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_run_whose_queries_lie_together_is_stored_by_position(
    tmp_path: Path, variant: str, limits: Limits, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_variant(tmp_path / "run.txt", variant)
    store, run_id = store_run(tmp_path / "w", run, limits, "auto", monkeypatch)
    stored = store.stored("run", run_id)
    together = variant in ("in_order", "ties_ascending")
    assert stored.layout is (RunLayout.POSITION if together else RunLayout.BUCKET)
    assert store.record("run", run_id)["layout"] == stored.layout.value
    if not together:
        assert all(PART_QUERIES_KEY not in pl.read_parquet_metadata(path) for path in stored.parts())
        return
    # Consecutive stretches of whole queries, in the file's order, about 120 rows each, each listing its queries.
    in_file = list(dict.fromkeys(line.split()[0] for line in run.read_text().splitlines()))
    listed = [json.loads(pl.read_parquet_metadata(path)[PART_QUERIES_KEY]) for path in stored.parts()]
    assert [query for queries in listed for query in queries] == in_file
    rows = [pl.read_parquet(path) for path in stored.parts()]
    assert [sorted(frame["query_id"].unique()) for frame in rows] == [sorted(queries) for queries in listed]
    assert sum(frame.height for frame in rows) == store.record("run", run_id)["n_rows"]
    assert 1 < len(rows) == stored.shards <= -(-sum(frame.height for frame in rows) // 120)
    # The same rows, in the same stored order, as the shards by bucket hold.
    by_bucket, bucket_id = store_run(tmp_path / "b", run, limits, "bucket", monkeypatch)
    assert bucket_id == run_id
    assert by_bucket.stored("run", run_id).layout is RunLayout.BUCKET
    keys = ["query_id", "position"]
    assert pl.concat(rows).sort(keys).equals(
        pl.concat([pl.read_parquet(p) for p in by_bucket.stored("run", run_id).parts()]).sort(keys)
    )


def test_a_run_stored_by_position_evaluates_as_the_file(tmp_path: Path) -> None:
    """The fast loop's case of the agreement below: a head read and whole lists of a run stored by position."""
    run = write_variant(tmp_path / "run.txt", "in_order")
    qrels = load_table(write_qrels(tmp_path / "qrels.txt", run), "judgments")
    store = Store(tmp_path / "w")
    stored = store.stored("run", ingest_file(store, run, "run", limits=SMALL).id)
    assert stored.layout is RunLayout.POSITION and stored.shards > 1
    for spec in (HEAD, WHOLE):
        direct = evaluate(load_table(run, "run"), qrels, spec)
        assert as_bytes(evaluate(stored, qrels, spec).per_query) == as_bytes(direct.per_query)


# Each case evaluates a run some 20 ways: the whole matrix is for the full suite.
@pytest.mark.slow
@pytest.mark.parametrize("layout", ["auto", "bucket", "before layouts"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_evaluation_path_agrees_across_layouts(
    tmp_path: Path, variant: str, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_variant(tmp_path / "run.txt", variant)
    qrels = write_qrels(tmp_path / "qrels.txt", run)
    store, run_id = store_run(tmp_path / "w", run, SMALL, layout, monkeypatch)
    stored = store.stored("run", run_id)
    judgment_set_id = ingest_file(store, qrels, "judgments", limits=Limits(rows_per_shard=40)).id
    stored_judgments = store.stored("judgments", judgment_set_id)
    assert stored_judgments.shards > 1
    loaded_judgments = load_table(qrels, "judgments")
    expected_read = (JudgmentsRead.PART_QUERIES if stored.layout is RunLayout.POSITION
                     else JudgmentsRead.SAME_BUCKETS)
    for spec in (HEAD, WHOLE):
        direct = evaluate(load_table(run, "run"), loaded_judgments, spec)
        expected = as_bytes(direct.per_query)
        assert direct.per_query.filter(pl.col("query_id") == "77")["status"].unique().to_list() == ["missing_from_run"]
        for judgments in (loaded_judgments, stored_judgments):
            # The plan's own parts (a head read takes every shard at once), one part a shard, and the folder alone.
            for limits in (Limits(), Limits(head_rows_per_part=1, judgment_rows_per_part=1)):
                planned = plan(stored, judgments, spec, limits)
                assert planned.judgments_read is expected_read
                result = evaluate(stored, judgments, spec, limits=limits)
                assert as_bytes(result.per_query) == expected, (spec.full_label(), limits)
                assert result.evaluation_id == direct.evaluation_id
            folder = open_stored(store.root / "run_rows" / run_id, "run")
            assert as_bytes(evaluate(folder, judgments, spec).per_query) == expected
        # The flow's steps, without orchestration: the stored plan, each part staged, then the stored evaluation.
        planned = stored_plan(store, run_id, judgment_set_id, spec, Limits(head_rows_per_part=1))
        assert planned.parts == tuple(Part(shard, stored.shards) for shard in range(stored.shards))
        with parts_staging(store) as folder:
            staged = [evaluate_shard(planned, part, folder) for part in planned.parts]
            report = finish_evaluation(store, planned, staged, now_utc(), None)
        _, per_query, _ = store.load_evaluation(report.evaluation_id)
        assert as_bytes(per_query.select(direct.per_query.columns)) == expected


def test_a_parquet_run_is_stored_by_position_from_its_query_ids(tmp_path: Path) -> None:
    """A Parquet run whose queries lie together is stored by position (from the pass after its checks:
    tests/flows/test_one_pass_ingest.py); its parts hold the text run's rows."""
    text = write_variant(tmp_path / "run.txt", "in_order")
    parquet = tmp_path / "run.parquet"
    load_table(text, "run").frame.drop("source_line").write_parquet(parquet, row_group_size=50)
    limits = Limits(rows_per_shard=120, sink_batch_rows=29)
    from_text, from_parquet = Store(tmp_path / "t"), Store(tmp_path / "p")
    text_id = ingest_file(from_text, text, "run", limits=limits).id
    parquet_id = ingest_file(from_parquet, parquet, "run", limits=limits).id
    assert from_parquet.stored("run", parquet_id).layout is RunLayout.POSITION
    for ours, theirs in zip(from_parquet.stored("run", parquet_id).parts(), from_text.stored("run", text_id).parts(),
                            strict=True):
        assert pl.read_parquet(ours).drop("run_id").equals(pl.read_parquet(theirs).drop("run_id"))


def test_a_failure_while_writing_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard that fails to write (here: the second) leaves no rows folder, no record and no staging: the run is
    stored whole or not at all; the next ingest stores it."""
    run = write_variant(tmp_path / "run.txt", "in_order")
    store = Store(tmp_path / "w")
    written = warehouse_module.write_ranked
    calls: list[Path] = []

    def failing(rows: pl.DataFrame, target: Path, *args: object) -> None:
        calls.append(target)
        if len(calls) == 2:
            raise OSError("disk full")
        written(rows, target, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(warehouse_module, "write_ranked", failing)
    with pytest.raises(OSError, match="disk full"):
        ingest_file(store, run, "run", limits=SMALL)
    assert not list((store.root / "run_rows").glob("[!_]*")) and not list((store.root / "runs").glob("[!_]*"))
    assert not list((store.root / "_staging").iterdir())
    monkeypatch.setattr(warehouse_module, "write_ranked", written)
    report = ingest_file(store, run, "run", limits=SMALL)
    assert report.created and store.stored("run", report.id).layout is RunLayout.POSITION


def test_rows_that_are_not_as_many_as_counted_are_refused() -> None:
    rows = pl.LazyFrame({"query_id": ["a", "a", "b"]})
    assert [frame["query_id"].to_list() for frame in warehouse_module.cut_rows(rows, [2, 1], 2)] == [["a", "a"], ["b"]]
    with pytest.raises(RuntimeError, match="more rows than were counted"):
        list(warehouse_module.cut_rows(rows, [2], 2))
    with pytest.raises(RuntimeError, match="fewer rows than were counted"):
        list(warehouse_module.cut_rows(rows, [2, 2], 2))


def test_the_runs_view_says_each_runs_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`layout` in the `runs` view: position or bucket as stored, bucket for a run stored before layouts (its
    record has no such column), even in a warehouse none of whose records has it."""
    from judged.flows.store.sql import open_readonly

    in_order, shuffled = write_variant(tmp_path / "a.txt", "in_order"), write_variant(tmp_path / "b.txt", "shuffled")
    store, older = store_run(tmp_path / "w", in_order, SMALL, "before layouts", monkeypatch)
    (store.root / "runs" / "_empty.parquet").unlink()  # as a warehouse written before layouts has it
    pl.DataFrame({"run_id": []}, schema={"run_id": pl.String}).write_parquet(store.root / "runs" / "_empty.parquet")
    store.refresh_catalog()
    with open_readonly(store) as connection:
        assert connection.execute("SELECT run_id, layout FROM runs").fetchall() == [(older, "bucket")]
    _, by_position = store_run(tmp_path / "w", write_variant(tmp_path / "c.txt", "in_order", seed=8), SMALL, "auto",
                               monkeypatch)
    _, by_bucket = store_run(tmp_path / "w", shuffled, SMALL, "auto", monkeypatch)
    store.refresh_catalog()
    with open_readonly(store) as connection:
        found = dict(connection.execute("SELECT run_id, layout FROM runs").fetchall())
    assert found == {older: "bucket", by_position: "position", by_bucket: "bucket"}
