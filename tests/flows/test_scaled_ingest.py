"""A run ingested in pieces (flows/store/scaled.py, `ingest-run --dask`): cut at query boundaries, surveyed and
written by Dask workers, stored byte for byte as a local ingest stores it (same run id, same part files, same
record); a bad line is named with the whole file's line number; a failure leaves nothing visible or staged."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import judged.flows.pipeline.flows as flows_module
import judged.flows.store.warehouse as warehouse_module
from judged.flows.cli.app import app
from judged.flows.engine.limits import Limits
from judged.flows.pipeline.tasks import ingest_file
from judged.flows.store.hashing import hash_in_background
from judged.flows.store.readers import load_table
from judged.flows.store.scaled import Local, Pieces, cut_pieces, plan_pieces, survey_piece, write_shard_group
from judged.flows.store.warehouse import STAGING, Store
from judged.schemas.provenance import RunMetadata
from judged.transforms.errors import InputError
from tests.flows.test_ordered_ingest import write_variant

# Pieces of about 3,000 bytes (text) or 100 rows (Parquet), shards of about 120 rows: several of each.
SMALL = Limits(rows_per_shard=120, piece_bytes=3_000, piece_rows=100)
FIXED_CLOCK = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def text_run(folder: Path, variant: str = "ties_ascending") -> Path:
    """A run in rank order with tie groups, blank lines between and inside queries (they are numbered, never
    rows)."""
    run = write_variant(folder / f"{variant}.txt", variant)
    lines = run.read_text().splitlines()
    run.write_text("\n".join([*lines[:50], "", *lines[50:300], "  ", *lines[300:]]) + "\n")
    return run


def parquet_run(folder: Path) -> Path:
    """The same rows as Parquet, in row groups of 37 rows: queries span row groups."""
    run = write_variant(folder / "plain.txt", "ties_ascending")
    columns = ["query_id", "q0", "doc_id", "source_rank", "score", "run_tag"]
    frame = pl.read_csv(run, separator=" ", has_header=False, new_columns=columns,
                        schema_overrides={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64})
    path = folder / "run.parquet"
    frame.drop("q0").write_parquet(path, row_group_size=37)
    return path


def stored_bytes(root: Path, run_id: str) -> dict[str, bytes]:
    """Every file of the stored run: its parts and its record."""
    files = sorted((root / "run_rows" / run_id).iterdir()) + [root / "runs" / f"{run_id}.parquet"]
    return {path.name: path.read_bytes() for path in files}


def nothing_left(root: Path) -> None:
    """No run visible, and no staging folder or lock left."""
    assert not list((root / "runs").glob("[!_]*.parquet")), "a run record is visible"
    assert not list((root / "run_rows").glob("[!_]*")), "run rows are visible"  # (`_empty`: the views' file)
    assert not (root / STAGING).exists() or not list((root / STAGING).iterdir()), "staging was left behind"


def in_pieces(path: Path, limits: Limits = SMALL) -> tuple[Pieces, list]:
    pieces = cut_pieces(path, limits)
    assert isinstance(pieces, Pieces) and len(pieces.windows) > 2, pieces
    return pieces, [survey_piece(str(path), pieces.source_format, RunMetadata(), limits, w) for w in pieces.windows]


def test_text_pieces_begin_where_a_query_begins(tmp_path: Path) -> None:
    run = text_run(tmp_path)
    pieces, surveys = in_pieces(run)
    data = run.read_bytes()
    assert pieces.windows[0].start == 0 and pieces.windows[-1].end == len(data)
    for before, after in zip(pieces.windows, pieces.windows[1:], strict=False):
        assert before.end == after.start
        previous_query = data[:after.start].rstrip().rsplit(b"\n", 1)[-1].split()[0]
        assert data[after.start:].split()[0] != previous_query
    # Each query in one piece, and the pieces' queries in the file's order.
    queries = [query for survey in surveys for query, *_ in survey.blocks]
    assert queries == list(dict.fromkeys(line.split()[0] for line in run.read_text().split("\n") if line.strip()))


def test_a_bad_line_is_named_with_its_line_in_the_whole_file(tmp_path: Path) -> None:
    """Two bad lines in different pieces: the error is the local ingest's, word for word (the first one's line,
    every bad line counted), and nothing is written."""
    run = text_run(tmp_path)
    lines = run.read_text().split("\n")
    first, second = len(lines) // 2, len(lines) - 5
    lines[first] = lines[first].replace(" Q0 ", " QX ")
    lines[second] = lines[second].rsplit(" ", 1)[0]  # five columns
    run.write_text("\n".join(lines))
    with pytest.raises(InputError) as local:
        load_table(run, "run")
    pieces, surveys = in_pieces(run)
    assert sum(survey.error is not None for survey in surveys) == 2  # in two pieces, numbered from 1 each
    with pytest.raises(InputError) as scaled:
        plan_pieces(run, pieces, surveys, RunMetadata(), hash_in_background([run])[run], SMALL)
    assert str(scaled.value) == str(local.value)
    assert scaled.value.line == first + 1 and "(1 more bad lines)" in str(scaled.value)


def test_scattered_queries_are_ingested_locally(tmp_path: Path) -> None:
    run = write_variant(tmp_path / "run.txt", "interleaved")
    pieces, surveys = in_pieces(run)
    planned = plan_pieces(run, pieces, surveys, RunMetadata(), hash_in_background([run])[run], SMALL)
    assert isinstance(planned, Local) and "scattered" in planned.reason
    assert isinstance(cut_pieces(tmp_path / "run.txt", Limits()), Local)  # below the piece size: one piece


def test_a_failed_write_leaves_nothing_visible_or_staged(tmp_path: Path) -> None:
    """The file changes after its survey: the worker whose window no longer holds its planned queries fails after
    others have written their shards, and the warehouse shows nothing of the run, nor keeps its staging."""
    run = text_run(tmp_path)
    pieces, surveys = in_pieces(run)
    planned = plan_pieces(run, pieces, surveys, RunMetadata(), hash_in_background([run])[run], SMALL)
    assert not isinstance(planned, Local) and len(planned.groups) > 2
    written: list[str] = []
    last_query = planned.groups[-1].blocks[0][0].encode()

    def write(folder: Path, metadata: dict[str, str]) -> None:
        for number, group in enumerate(planned.groups):
            if number == len(planned.groups) - 1:  # the last group's first query now has another id
                run.write_bytes(run.read_bytes().replace(b"\n" + last_query + b" Q0", b"\nZZ Q0"))
            write_shard_group(str(run), planned.source_format, planned.metadata, SMALL, group, planned.shards,
                              planned.table_id, str(folder), metadata)
            written.extend(path.name for path in folder.iterdir())

    store = Store(tmp_path / "w")
    with pytest.raises(RuntimeError, match="does not hold the queries planned for it"):
        store.store_by_position(planned, planned.blocks, write)
    assert written  # shards were written before the failure
    nothing_left(store.root)


def test_ingest_run_refuses_a_bad_dask_value(tmp_path: Path) -> None:
    run = text_run(tmp_path)
    for value in ("local:0", "local:x", "ftp://host"):
        result = CliRunner().invoke(app, ["ingest-run", str(run), "--warehouse", str(tmp_path / "w"), "--dask", value])
        assert result.exit_code == 2, result.output
        assert f"--dask must be local:N (N workers, N >= 1) or a scheduler address such as tcp://host:8786, not " \
               f"{value!r}" in result.output
        result = CliRunner().invoke(app, ["nightly", "--inbox", str(tmp_path / "inbox"), "--warehouse",
                                          str(tmp_path / "w"), "--dask", value])
        assert result.exit_code == 2, result.output
    assert not (tmp_path / "w").exists()


def test_a_cluster_of_two_worker_processes_stores_the_local_bytes(
    prefect_harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ingest_run` with `scale_out` on a LocalCluster of two worker processes: a text run and a Parquet run, each
    in several pieces and shards, stored with the run id and every byte of a local ingest (never falling back to
    it); a bad line refused with the local message and nothing left behind."""
    from distributed import LocalCluster

    monkeypatch.setattr(warehouse_module, "now_utc", lambda: FIXED_CLOCK)  # the record is made by this process
    # The worker processes report their task runs to the session's Prefect server (not each a temporary one).
    monkeypatch.setenv("PREFECT_API_URL", prefect_harness)
    runs = [text_run(tmp_path), parquet_run(tmp_path)]
    bad = text_run(tmp_path, "in_order")
    bad.write_text(bad.read_text().replace("\n100 Q0 ", "\n100 Q1 ", 1))
    local = {run: ingest_file(Store(tmp_path / f"local-{run.suffix}"), run, "run", limits=SMALL) for run in runs}
    with pytest.raises(InputError) as refused_locally:
        load_table(bad, "run")

    def no_local_route(*args: object, **kwargs: object) -> None:
        raise AssertionError("the run was ingested locally, not in pieces")

    monkeypatch.setattr(flows_module, "ingest_file_task", no_local_route)
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        flow = flows_module.ingest_run.with_options(task_runner=flows_module.task_runner(cluster.scheduler_address))
        for run in runs:
            root = tmp_path / f"dask-{run.suffix}"
            report = flow(str(run), str(root), scale_out=True, limits=SMALL)
            assert report.created and report.id == local[run].id
            expected, found = stored_bytes(tmp_path / f"local-{run.suffix}", report.id), stored_bytes(root, report.id)
            assert len(expected) > 3 and found.keys() == expected.keys()
            for name in expected:
                assert found[name] == expected[name], (run.name, name)
            assert flow(str(run), str(root), scale_out=True, limits=SMALL).created is False
        with pytest.raises(InputError) as refused:
            flow(str(bad), str(tmp_path / "dask-bad"), scale_out=True, limits=SMALL)
    assert str(refused.value) == str(refused_locally.value)
    nothing_left(tmp_path / "dask-bad")
