"""A scanned text run stored from the pass that reads and checks it (`Store.read_run_writing_shards`,
`OnePassShards`): the same bytes and run id as the store's second pass, nothing left in the warehouse when a line is
bad or a check refuses the run, and the second pass taken whenever the first cannot stand for it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

import judged.flows.store.readers as readers_module
import judged.flows.store.warehouse as warehouse_module
from judged.flows.pipeline.tasks import check_inputs_before_storing, ingest_file
from judged.flows.store.pending_footer import fill_pending_value, pending_value
from judged.flows.store.readers import load_table
from judged.flows.store.warehouse import Store
from judged.schemas.spec import PRESETS
from judged.transforms.errors import InputError
from tests.flows.test_ordered_ingest import STREAMED, files_of, stored_in_two_passes, write_variant


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warehouse_module, "now_utc", lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    readers_module._SCANNED_TABLES.clear()


@pytest.fixture
def every_text_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every text run is read as a large one is (scanned in batches), under the limits the flow uses."""
    for module in (readers_module, warehouse_module):
        monkeypatch.setattr(module, "streamed_text", lambda *args: True)


def second_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time the store parses the run again (by position or by bucket)."""
    passes: list[int] = []
    for name in ("sink_position_shards", "sink_shards"):
        second = getattr(warehouse_module, name)
        monkeypatch.setattr(warehouse_module, name,
                            lambda *args, second=second, **kwargs: passes.append(1) or second(*args, **kwargs))
    return passes


def nothing_left(root: Path) -> bool:
    """Whether the warehouse holds no run rows, no run record and nothing staged."""
    staged = list((root / "_staging").iterdir()) if (root / "_staging").exists() else []
    rows = [path for path in (root / "run_rows").glob("*") if not path.name.startswith("_")]
    records = [path for path in (root / "runs").glob("*.parquet") if not path.name.startswith("_")]
    return not staged and not rows and not records


@pytest.mark.parametrize(("variant", "one_pass"), [
    ("in_order", True), ("ties_ascending", True), ("interleaved", False), ("shuffled", False), ("duplicate", False),
])
def test_one_pass_stores_the_bytes_of_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variant: str, one_pass: bool
) -> None:
    run = write_variant(tmp_path / "run.txt", variant)
    passes = second_passes(monkeypatch)
    report = ingest_file(Store(tmp_path / "one"), run, "run", limits=STREAMED)
    one_id, one = files_of(tmp_path / "one", report.id)
    assert (not passes) is one_pass  # a scattered run or one with a repeat is parsed again, as before
    assert not list((tmp_path / "one" / "_staging").iterdir())
    readers_module._SCANNED_TABLES.clear()
    two_id, two = stored_in_two_passes(tmp_path / "two", STREAMED, run)
    assert one_id == two_id and one.keys() == two.keys() and len(one) > 2
    for name in one:
        assert one[name] == two[name], name


def test_a_blank_line_cuts_the_shards_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shards are first cut for the file's lines; blank lines make the rows fewer, and when the cut differs
    the staged parts are dropped and the run stored by a second pass, with the same bytes."""
    run = write_variant(tmp_path / "run.txt", "in_order")
    lines = run.read_text().splitlines()
    run.write_text("\n".join([*lines[:40], *[""] * 300, *lines[40:]]) + "\n")  # more than the rows of a shard
    passes = second_passes(monkeypatch)
    one_id, one = files_of(tmp_path / "one", ingest_file(Store(tmp_path / "one"), run, "run", limits=STREAMED).id)
    assert passes
    readers_module._SCANNED_TABLES.clear()
    assert (one_id, one) == stored_in_two_passes(tmp_path / "two", STREAMED, run)
    assert not list((tmp_path / "one" / "_staging").iterdir())


@pytest.mark.parametrize("bad", ["9 Q0 D1 x 1.5 tag", "9 Q0 D1 3 nan tag", "# a comment"])
def test_a_bad_line_late_in_the_file_leaves_nothing_and_the_same_message(tmp_path: Path, bad: str) -> None:
    run = write_variant(tmp_path / "run.txt", "in_order")
    lines = run.read_text().splitlines()
    run.write_text("\n".join([*lines[:-2], bad, *lines[-2:]]) + "\n")
    with pytest.raises(InputError) as two_passes:
        load_table(run, "run", limits=STREAMED)
    with pytest.raises(InputError) as one_pass:
        ingest_file(Store(tmp_path / "w"), run, "run", limits=STREAMED)
    assert str(one_pass.value) == str(two_passes.value)
    assert f"line {len(lines) - 1}" in str(one_pass.value)
    assert nothing_left(tmp_path / "w")


def test_checks_that_refuse_the_run_discard_its_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_text_scanned: None
) -> None:
    run = write_variant(tmp_path / "run.txt", "in_order")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("9 0 D1 1\n404 0 D2 1\n")  # query 404 is not in the run: refused under a strict query set
    spec = PRESETS["trec_eval"].with_options(query_set="judged_strict")
    staged = []
    stage = warehouse_module.StagedRun
    monkeypatch.setattr(warehouse_module, "StagedRun", lambda *args: staged.append(1) or stage(*args))
    with pytest.raises(InputError, match="missing from the run"):
        check_inputs_before_storing(Store(tmp_path / "w"), str(qrels), [str(run)], [spec])
    assert staged and nothing_left(tmp_path / "w")


def test_the_checks_stage_and_the_store_publishes_without_reading_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_text_scanned: None
) -> None:
    run = write_variant(tmp_path / "run.txt", "in_order")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("9 0 D1 1\n")
    store = Store(tmp_path / "w")
    check_inputs_before_storing(store, str(qrels), [str(run)], [PRESETS["trec_eval"]])
    assert nothing_left(tmp_path / "w") is False  # staged: written where no view sees them
    assert list((tmp_path / "w" / "_staging").rglob("*.parquet"))
    assert not [path for path in (tmp_path / "w" / "run_rows").glob("*") if not path.name.startswith("_")]
    reads = []
    checked_by_query = readers_module._checked_by_query
    monkeypatch.setattr(readers_module, "_checked_by_query", lambda *args: reads.append(1))
    passes = second_passes(monkeypatch)
    report = ingest_file(store, run, "run")
    assert not reads and not passes
    one = files_of(tmp_path / "w", report.id)
    readers_module._SCANNED_TABLES.clear()
    monkeypatch.setattr(readers_module, "_checked_by_query", checked_by_query)
    assert one == stored_in_two_passes(tmp_path / "two", warehouse_module.DEFAULT_LIMITS, run)
    assert not list((tmp_path / "w" / "_staging").iterdir())


def test_a_filled_in_footer_is_the_footer_written_with_the_value(tmp_path: Path) -> None:
    frame = pl.DataFrame({"a": range(500), "b": ["x"] * 500})
    value = '[{"n_rows": 500, "name": "é' + "r" * 200 + '"}]'  # a length whose varint takes two bytes
    frame.write_parquet(tmp_path / "direct.parquet", row_group_size=64, metadata={"k": "v", "record": value})
    placeholder = pending_value()
    frame.write_parquet(tmp_path / "filled.parquet", row_group_size=64, metadata={"k": "v", "record": placeholder})
    fill_pending_value(tmp_path / "filled.parquet", placeholder, value)
    assert (tmp_path / "filled.parquet").read_bytes() == (tmp_path / "direct.parquet").read_bytes()
    with pytest.raises(RuntimeError, match="pending value"):
        fill_pending_value(tmp_path / "filled.parquet", placeholder, value)
