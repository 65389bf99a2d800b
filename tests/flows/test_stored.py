"""Stored runs: the ranked layout written at ingest, its duplicate counts, and reading it back (judged.flows.store.readers.StoredTable)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from judged.flows.engine.evaluate import Part, Read, evaluate, plan
from judged.flows.store.readers import DUPLICATE_PAIRS_KEY, load_table, open_stored
from judged.flows.engine.limits import Limits
from judged.flows.pipeline.tasks import ingest_file
from judged.flows.store.warehouse import Store
from judged.schemas.spec import PRESETS
from judged.transforms.errors import InputError

SPEC = PRESETS["trec_eval"].with_options(cutoffs=(3, 10))


def write_run(path: Path, queries: int = 40, depth: int = 30, duplicate: bool = False) -> Path:
    lines = [
        f"q{q} Q0 d{(q * 37 + i * 11) % 500} {i + 1} {float(depth - i - (i % 7 == 2)):.1f} sys"
        for q in range(queries) for i in range(depth)
    ]
    if duplicate:
        lines.append(lines[5].replace(" 6 ", " 99 ", 1))  # the sixth row's (query, document) once more
    path.write_text("\n".join(lines) + "\n")
    return path


def write_qrels(path: Path, queries: int = 40) -> Path:
    path.write_text("".join(f"q{q} 0 d{(q * 37 + i * 11) % 500} {i % 4}\n" for q in range(queries) for i in range(0, 40, 3)))
    return path


@pytest.fixture()
def stored(tmp_path: Path) -> dict:
    warehouse = Store(tmp_path / "warehouse")
    qrels, run = write_qrels(tmp_path / "qrels.txt"), write_run(tmp_path / "run.txt")
    report = ingest_file(warehouse, run, "run", limits=Limits(rows_per_shard=300))
    return {"warehouse": warehouse, "qrels": qrels, "run": run, "id": report.id}


def test_parts_are_ranked_with_the_first_band_as_first_row_group(stored: dict) -> None:
    table = stored["warehouse"].stored("run", stored["id"])
    parts = table.parts()
    assert table.shards == len(parts) == 4
    for part in parts:
        metadata = pq.ParquetFile(part).metadata
        first = metadata.row_group(0)
        position = [first.column(i) for i in range(first.num_columns) if first.column(i).path_in_schema == "position"]
        assert (position[0].statistics.min, position[0].statistics.max) == (1, 11)
        assert metadata.metadata[DUPLICATE_PAIRS_KEY.encode()] == b"0"
        rows = pl.read_parquet(part)
        assert rows.group_by("query_id").agg(pl.col("query_rows").first(), n=pl.len()).filter(
            pl.col("query_rows") != pl.col("n")
        ).height == 0
    assert stored["warehouse"].record("run", stored["id"])["n_duplicate_pairs"] == 0
    assert table.load().stored_order is not None and table.load().duplicate_free


def test_stored_head_equals_the_direct_evaluation(stored: dict) -> None:
    judgments = load_table(stored["qrels"], "judgments")
    direct = evaluate(load_table(stored["run"], "run"), judgments, SPEC)
    from_folder = evaluate(open_stored(stored["warehouse"].root / "run_rows" / stored["id"], "run"), judgments, SPEC)
    assert from_folder.per_query.equals(direct.per_query)
    assert from_folder.evaluation_id == direct.evaluation_id
    assert direct.per_query["ties_straddling_k"].sum() > 0  # the data has ties at the cutoffs


def test_a_head_read_takes_more_parts_when_the_judgments_are_many(stored: dict) -> None:
    judgments = load_table(stored["qrels"], "judgments")  # 560 judgments; the heads are 40 x 11 rows
    direct = evaluate(load_table(stored["run"], "run"), judgments, SPEC)
    table = stored["warehouse"].stored("run", stored["id"])
    assert table.shards == 4
    assert plan(table, judgments, SPEC).parts == (Part(0, 1),)  # every head together
    assert evaluate(table, judgments, SPEC).per_query.equals(direct.per_query)
    fewer_judgments = Limits(judgment_rows_per_part=300)
    assert plan(table, judgments, SPEC, fewer_judgments).parts == (Part(0, 2), Part(1, 2))
    assert evaluate(table, judgments, SPEC, limits=fewer_judgments).per_query.equals(direct.per_query)
    # A spec that reads every row takes the stored shards.
    whole_lists = SPEC.with_options(cutoffs=(3, None))
    assert plan(table, judgments, whole_lists).parts == tuple(Part(s, 4) for s in range(4))
    assert evaluate(table, judgments, whole_lists).per_query.equals(
        evaluate(load_table(stored["run"], "run"), judgments, whole_lists).per_query
    )


def test_a_run_with_a_duplicate_pair_is_counted_and_read_whole(tmp_path: Path) -> None:
    warehouse = Store(tmp_path / "warehouse")
    qrels, run = write_qrels(tmp_path / "qrels.txt"), write_run(tmp_path / "run.txt", duplicate=True)
    report = ingest_file(warehouse, run, "run", limits=Limits(rows_per_shard=300))
    assert warehouse.record("run", report.id)["n_duplicate_pairs"] == 1
    table = warehouse.stored("run", report.id)
    assert table.load().stored_order is None and not table.load().duplicate_free
    judgments = load_table(qrels, "judgments")
    with pytest.raises(InputError, match="duplicate run row for query 'q0'"):
        evaluate(table, judgments, SPEC)
    first = SPEC.with_options(run_duplicates="first")
    direct = evaluate(load_table(run, "run"), judgments, first)
    assert evaluate(table, judgments, first).per_query.equals(direct.per_query)


def test_parts_without_duplicate_counts_are_read_whole(stored: dict) -> None:
    table = stored["warehouse"].stored("run", stored["id"])
    for part in table.parts():  # as an older layout wrote them: no count in the metadata
        contents = pq.read_table(part)
        written = pq.ParquetFile(part).metadata.metadata
        kept = {k: v for k, v in written.items() if k not in (DUPLICATE_PAIRS_KEY.encode(), b"ARROW:schema")}
        pq.write_table(contents.replace_schema_metadata(kept), part)
    assert table.load().stored_order is None
    judgments = load_table(stored["qrels"], "judgments")
    batches = (Read.SCANNED_BATCHES, "a stored part of text outside the ranked layout")
    assert [(read.read, read.why) for read in plan(table, judgments, SPEC).reads] == [batches] * 4
    direct = evaluate(load_table(stored["run"], "run"), judgments, SPEC)
    assert evaluate(table, judgments, SPEC).per_query.equals(direct.per_query)


def test_a_judgments_folder_is_not_a_run(stored: dict) -> None:
    judgments = ingest_file(stored["warehouse"], stored["qrels"], "judgments")
    with pytest.raises(InputError, match="holds a stored 'judgments' table, not a run"):
        open_stored(stored["warehouse"].root / "judgments" / judgments.id, "run")


def test_streamed_ingest_writes_the_same_parts_as_the_in_memory_one(
    stored: dict, tmp_path: Path
) -> None:
    streamed = Store(tmp_path / "streamed")
    # Every run of more than one row takes the two streaming passes, in batches of 100 rows.
    limits = Limits(rows_per_shard=300, in_memory_sink_rows=1, sink_batch_rows=100, spill_batch_rows=7)
    report = ingest_file(streamed, stored["run"], "run", limits=limits)
    assert report.id == stored["id"]
    in_memory = stored["warehouse"].stored("run", stored["id"]).parts()
    assert [p.name for p in streamed.stored("run", report.id).parts()] == [p.name for p in in_memory]
    written = sorted(p.name for p in (tmp_path / "streamed" / "run_rows" / report.id).iterdir())
    assert written == [p.name for p in in_memory]  # the spill is gone
    for ours, theirs in zip(streamed.stored("run", report.id).parts(), in_memory, strict=True):
        assert pl.read_parquet(ours).equals(pl.read_parquet(theirs))
        assert pq.ParquetFile(ours).metadata.metadata[DUPLICATE_PAIRS_KEY.encode()] == b"0"
