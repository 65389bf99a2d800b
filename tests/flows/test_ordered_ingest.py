"""Ingest of a run already in rank order (flows.warehouse.write_ranked's route without a sort): the stored files are
byte for byte those of the full sort, on runs in order, with shuffled ties, with interleaved queries and shuffled."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

import judged.flows.store.readers as readers_module
import judged.flows.store.warehouse as warehouse_module
from judged.flows.engine.limits import Limits
from judged.flows.pipeline.tasks import check_inputs_before_storing, ingest_file
from judged.flows.store.readers import load_table
from judged.flows.store.warehouse import Store
from judged.schemas.spec import PRESETS

IN_MEMORY = Limits(rows_per_shard=120)
STREAMED = Limits(
    rows_per_shard=120, in_memory_sink_rows=1, sink_batch_rows=97, in_memory_text_bytes=1, spill_batch_rows=5
)


def ranked_lines(seed: int, ties: str) -> list[list[str]]:
    """Each query's lines in rank order (score descending; equal scores in tie groups), the tie groups' documents in
    random order (`ties='shuffled'`) or ascending (`'ascending'`, the reverse of the stored order). Query ids of
    different widths, so that the file's query order is not their byte order; a one-row query; -0.0 and 0.0."""
    rng = random.Random(seed)
    queries = []
    for query in [9, 10, 100, 11, 2, 1000, 3]:
        depth = 1 if query == 3 else rng.randint(20, 130)
        scores = sorted((float(rng.randint(-6, 40)) / 4 for _ in range(depth)), reverse=True)
        if query == 9:
            scores = [*scores[:-3], 0.0, -0.0, 0.0]
        docs = rng.sample(range(10_000), depth)
        rows = list(zip(scores, docs, strict=True))
        groups: dict[float, list[int]] = {}
        for score, doc in rows:
            groups.setdefault(score + 0.0, []).append(doc)
        ordered = []
        for score, members in groups.items():
            if ties == "ascending":
                members = sorted(members, key=lambda doc: f"D{doc}")
            else:
                rng.shuffle(members)
            ordered += [(score, doc) for doc in members]
        queries.append([f"{query} Q0 D{doc} {rank} {score} tag" for rank, (score, doc) in enumerate(ordered, 1)])
    return queries


def write_variant(path: Path, variant: str, seed: int = 7) -> Path:
    queries = ranked_lines(seed, "ascending" if variant == "ties_ascending" else "shuffled")
    if variant == "interleaved":
        lines = [query[i] for i in range(max(map(len, queries))) for query in queries if i < len(query)]
    elif variant == "shuffled":
        lines = [line for query in queries for line in query]
        random.Random(seed).shuffle(lines)
    elif variant == "duplicate":
        queries[1].append(queries[1][4].replace(" Q0 ", " Q0 ", 1))  # the same line twice in one query
        lines = [line for query in queries for line in query]
    else:
        lines = [line for query in queries for line in query]
    path.write_text("\n".join(lines) + "\n")
    return path


def stored_files(root: Path, limits: Limits, run: Path) -> tuple[str, dict[str, bytes]]:
    return files_of(root, ingest_file(Store(root), run, "run", limits=limits).id)


def stored_in_two_passes(root: Path, limits: Limits, run: Path) -> tuple[str, dict[str, bytes]]:
    """The run read without its look for repeats, then stored by a second pass over its file (as `ingest-run`
    stored a scanned text run before its reading pass wrote the shards)."""
    return files_of(root, Store(root).store_table(load_table(run, "run", limits=limits), limits).id)


def files_of(root: Path, run_id: str) -> tuple[str, dict[str, bytes]]:
    """A stored run's part files and record, by name."""
    files = sorted((root / "run_rows" / run_id).iterdir()) + [root / "runs" / f"{run_id}.parquet"]
    return run_id, {path.name: path.read_bytes() for path in files}


@pytest.mark.parametrize("limits", [IN_MEMORY, STREAMED], ids=["in-memory", "streamed"])
@pytest.mark.parametrize(
    ("variant", "without_sort"),
    [("in_order", True), ("ties_ascending", True), ("interleaved", False), ("shuffled", False), ("duplicate", False)],
)
def test_both_routes_store_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: Limits, variant: str, without_sort: bool
) -> None:
    run = write_variant(tmp_path / "run.txt", variant)
    monkeypatch.setattr(warehouse_module, "now_utc", lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    taken = []
    fast_route = warehouse_module.in_stored_order_of_ranked
    monkeypatch.setattr(warehouse_module, "in_stored_order_of_ranked", lambda rows: taken.append(1) or fast_route(rows))
    fast_id, fast = stored_files(tmp_path / "fast", limits, run)
    shards = len(fast) - 1
    # The route under test was really taken by every shard (or refused by some, for these runs).
    assert (len(taken) == shards) == without_sort

    def never_ranked(rows: pl.LazyFrame) -> pl.LazyFrame:
        return rows.select(ranked=pl.lit(False))

    monkeypatch.setattr(warehouse_module, "is_ranked", never_ranked)  # every shard takes the full sort
    sorted_id, full = stored_files(tmp_path / "sorted", limits, run)
    assert fast_id == sorted_id
    assert len(fast) > 2 and fast.keys() == full.keys()
    for name in fast:
        assert fast[name] == full[name], name


def test_a_run_its_reading_pass_proved_free_of_repeats_is_stored_with_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scanned run whose reading pass proved it free of repeated (query, document) pairs (`duplicate_free`, the
    checks before storing ask for it) is stored without counting them shard by shard, and its files are byte for
    byte those of the same run counted."""
    run = write_variant(tmp_path / "run.txt", "in_order")
    monkeypatch.setattr(warehouse_module, "now_utc", lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    looked = []
    look = warehouse_module.may_have_duplicates
    monkeypatch.setattr(warehouse_module, "may_have_duplicates", lambda rows: looked.append(1) or look(rows))
    assert load_table(run, "run", limits=STREAMED, look_for_repeats=True).duplicate_free  # as the checks read it
    proven_id, proven = stored_files(tmp_path / "proven", STREAMED, run)  # the store takes the table they kept
    assert not looked
    readers_module._SCANNED_TABLES.clear()  # the run is read again, not looked at
    counted_id, counted = stored_in_two_passes(tmp_path / "counted", STREAMED, run)
    assert len(looked) == len(counted) - 1 > 1  # every shard counted
    assert proven_id == counted_id and proven == counted


@pytest.mark.parametrize(("variant", "proven"), [("in_order", True), ("duplicate", False)])
def test_the_checks_before_storing_hand_their_proof_to_the_store_of_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variant: str, proven: bool
) -> None:
    """The checks before storing look at a Parquet run (which reading it does not) for repeated pairs: a run
    without one is then proven free of them (`proven_duplicate_free`), and the store that reads the same file next
    counts no shard's pairs; its files are byte for byte those of the run stored unchecked. A run with a repeat
    (kept under the policy `first`) stays unproven, and is counted."""
    parquet = tmp_path / "run.parquet"
    load_table(write_variant(tmp_path / "run.txt", variant), "run").frame.drop("source_line").write_parquet(parquet)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("9 0 D1 1\n")
    monkeypatch.setattr(warehouse_module, "now_utc", lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    unchecked_id, unchecked = stored_files(tmp_path / "unchecked", Limits(), parquet)
    readers_module._SCANNED_TABLES.clear()  # read again, as a new command would
    looked = []
    look = warehouse_module.may_have_duplicates
    monkeypatch.setattr(warehouse_module, "may_have_duplicates", lambda rows: looked.append(1) or look(rows))
    spec = PRESETS["trec_eval"].with_options(run_duplicates="first")
    check_inputs_before_storing(Store(tmp_path / "checked"), str(qrels), [str(parquet)], [spec, spec])
    assert load_table(parquet, "run").duplicate_free is proven
    checked_id, checked = stored_files(tmp_path / "checked", Limits(), parquet)
    assert bool(looked) is not proven
    assert checked_id == unchecked_id and checked == unchecked
