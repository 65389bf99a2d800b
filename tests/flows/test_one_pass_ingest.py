"""A scanned text run (or a Parquet run) stored from the pass that reads and checks it (`read_run`, `OnePassShards`,
`StagedShards`): the same bytes and run id as the store's second pass, nothing left in the warehouse when a line is bad
or a check refuses the run, and the second pass taken whenever the first cannot stand for it; on every route that checks
a run before storing it (ingest-run, the evaluate flow's checks and store, the nightly flow)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import polars as pl
import pytest

import judged.flows.engine.evaluate as evaluate_module
import judged.flows.store.readers as readers_module
import judged.flows.store.reading_pass as reading_pass_module
import judged.flows.store.warehouse as warehouse_module
from judged.flows.engine.limits import Limits
from judged.flows.pipeline.flows import evaluate_flow, nightly
from judged.flows.pipeline.tasks import check_inputs_before_storing, ingest_checked_run, ingest_file
from judged.flows.store.kinds import RUN, InputKind
from judged.flows.store.readers import load_table
from judged.flows.store.warehouse import Store, StagedShards, read_run, staging_area
from judged.schemas.spec import PRESETS
from judged.transforms.errors import InputError
from judged.transforms.shards import RunLayout
from tests.flows.test_ordered_ingest import STREAMED, files_of, stored_in_two_passes, write_variant


# Read in batches of ~40 of a run's ~360 rows: a scattered run's rest is read at once after its first batch.
SMALL_BATCHES = replace(STREAMED, streamed_candidate_part_rows=40)


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
    """A list that grows by one each time the store parses a run again (by position or by bucket; judgments are
    not counted)."""
    passes: list[int] = []

    def counted(second: Callable[..., Path], rows: object, kind: InputKind, *args: object, **kwargs: object) -> Path:
        if kind is RUN:
            passes.append(1)
        return second(rows, kind, *args, **kwargs)

    for name in ("sink_position_shards", "sink_shards"):
        monkeypatch.setattr(warehouse_module, name, partial(counted, getattr(warehouse_module, name)))
    return passes


def run_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that grows by a run file's name each time a run file is parsed (judgments are not counted)."""
    parses: list[str] = []
    parse = readers_module._Parsing.parsed

    def counted(parsing: readers_module._Parsing) -> object:
        if parsing.kind is RUN:
            parses.append(parsing.path.name)
        return parse(parsing)

    monkeypatch.setattr(readers_module._Parsing, "parsed", counted)
    return parses


def stagings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that grows by the run id of each run whose reading pass staged its shards whole."""
    staged: list[str] = []
    write = StagedShards.write
    monkeypatch.setattr(StagedShards, "write", lambda self: staged.append(self.run_id) or write(self))
    return staged


def run_and_qrels(tmp_path: Path, qrels_lines: str) -> tuple[Path, Path]:
    """A run in order (`write_variant`) and a qrels file of these lines."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(qrels_lines)
    return write_variant(tmp_path / "run.txt", "in_order"), qrels


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


@pytest.mark.parametrize(
    "text", [b"", b"\n", b"a", b"a\n", b"a\nb", b"a\n\nb\n", b"\n\n\n", b"x" * 7 + b"\n" + b"y" * 9, b"ab\n" * 11]
)
@pytest.mark.parametrize("chunk_bytes", [1, 2, 3, 8, 1 << 16])
def test_line_count_counts_lines_across_chunks(tmp_path: Path, text: bytes, chunk_bytes: int) -> None:
    """A last line without its newline is a line; a chunk may end anywhere, on a newline or not."""
    path = tmp_path / "file.txt"
    path.write_bytes(text)
    assert readers_module.line_count(path, chunk_bytes) == len(text.decode().splitlines())


@pytest.mark.parametrize("variant", ["in_order", "shuffled"])  # shuffled: the rest after its first batch read at once
@pytest.mark.parametrize("bad", ["9 Q0 D1 x 1.5 tag", "9 Q0 D1 3 nan tag", "9 X0 D1 3 1.5 tag", "9 Q0 D1 3"])
def test_a_bad_line_late_in_the_file_leaves_nothing_and_the_same_message(
    tmp_path: Path, bad: str, variant: str
) -> None:
    run = write_variant(tmp_path / "run.txt", variant)
    lines = run.read_text().splitlines()
    run.write_text("\n".join([*lines[:-2], bad, *lines[-2:]]) + "\n")
    with pytest.raises(InputError) as two_passes:
        load_table(run, "run", limits=SMALL_BATCHES)
    with pytest.raises(InputError) as one_pass:
        ingest_file(Store(tmp_path / "w"), run, "run", limits=SMALL_BATCHES)
    assert str(one_pass.value) == str(two_passes.value)
    assert f"line {len(lines) - 1}" in str(one_pass.value)
    assert nothing_left(tmp_path / "w")


@pytest.mark.parametrize("variant", ["in_order", "shuffled"])
def test_a_tag_that_differs_late_in_a_scanned_run_is_found(tmp_path: Path, variant: str) -> None:
    """The reading pass's checks see the whole file, batch by batch or, once a run's rows are scattered, its rest
    at once: a tag that differs on one late line leaves the run without a common tag, as a read in memory finds."""
    run = write_variant(tmp_path / "run.txt", variant)
    lines = run.read_text().splitlines()
    other = lines[-2].rsplit(" ", 1)[0] + " another_tag"
    run.write_text("\n".join([*lines[:-2], other, lines[-1]]) + "\n")
    assert load_table(run, "run", limits=SMALL_BATCHES).metadata.tag == load_table(run, "run").metadata.tag == ""
    run.write_text("\n".join(lines) + "\n")
    readers_module._SCANNED_TABLES.clear()
    assert load_table(run, "run", limits=SMALL_BATCHES).metadata.tag == load_table(run, "run").metadata.tag != ""


def test_checks_that_refuse_the_run_discard_its_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_text_scanned: None
) -> None:
    # query 404 is not in the run: refused under a strict query set
    run, qrels = run_and_qrels(tmp_path, "9 0 D1 1\n404 0 D2 1\n")
    spec = PRESETS["trec_eval"].with_options(query_set="judged_strict")
    staged = stagings(monkeypatch)
    store = Store(tmp_path / "w")
    with staging_area(store.root) as staging:
        with pytest.raises(InputError, match="missing from the run"):
            check_inputs_before_storing(store, str(qrels), [str(run)], [spec], staging=staging)
        assert staged  # the reading pass staged the run whole before the check refused it
    assert nothing_left(tmp_path / "w")


def test_the_checks_stage_and_the_store_publishes_without_reading_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_text_scanned: None
) -> None:
    run, qrels = run_and_qrels(tmp_path, "9 0 D1 1\n")
    store = Store(tmp_path / "w")
    parses = run_parses(monkeypatch)
    passes = second_passes(monkeypatch)
    with staging_area(store.root) as staging:
        staged = check_inputs_before_storing(store, str(qrels), [str(run)], [PRESETS["trec_eval"]], staging=staging)
        assert list(staged) == [str(run)] and Path(staged[str(run)]).parent == staging
        assert list(Path(staged[str(run)]).rglob("*.parquet"))  # staged: written where no view sees them
        assert not [path for path in (tmp_path / "w" / "run_rows").glob("*") if not path.name.startswith("_")]
        report = ingest_file(store, run, "run", staged_shards=Path(staged[str(run)]))
        assert not Path(staged[str(run)]).exists()  # the store takes the folder it is given
    assert parses == ["run.txt"] and not passes
    one = files_of(tmp_path / "w", report.id)
    readers_module._SCANNED_TABLES.clear()
    assert one == stored_in_two_passes(tmp_path / "two", warehouse_module.DEFAULT_LIMITS, run)
    assert not list((tmp_path / "w" / "_staging").iterdir())


def test_shards_staged_for_another_run_are_dropped_and_the_run_stored_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_text_scanned: None
) -> None:
    """A store handed shards its run's reading did not stage (another run's) stores the run from its file."""
    first = write_variant(tmp_path / "first.txt", "in_order")
    second = write_variant(tmp_path / "second.txt", "in_order", seed=8)
    store = Store(tmp_path / "w")
    with staging_area(store.root) as staging:
        other = read_run(first, staging).staged_shards
        passes = second_passes(monkeypatch)
        report = store.store_table(load_table(second, "run"), staged_shards=other)
        assert passes and other is not None and not other.exists()
    readers_module._SCANNED_TABLES.clear()
    two = stored_in_two_passes(tmp_path / "two", warehouse_module.DEFAULT_LIMITS, second)
    assert files_of(tmp_path / "w", report.id) == two


def test_shards_staged_outside_the_warehouse_are_refused(tmp_path: Path) -> None:
    run = write_variant(tmp_path / "run.txt", "in_order")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(ValueError, match="staging area of the warehouse"):
        Store(tmp_path / "w").store_table(load_table(run, "run"), staged_shards=elsewhere)
    assert elsewhere.exists()  # not the store's to remove


def test_a_nightly_run_is_stored_from_its_checking_pass_and_a_refused_one_leaves_nothing_staged(
    prefect_harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_text_scanned: None
) -> None:
    inbox, warehouse = tmp_path / "inbox", tmp_path / "w"
    inbox.mkdir()
    whole = write_variant(inbox / "whole.run", "in_order")
    lines = whole.read_text().splitlines()
    (inbox / "without-10.run").write_text("\n".join(line for line in lines if not line.startswith("10 ")) + "\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("9 0 D1 1\n10 0 D2 1\n")  # query 10 is missing from one run: refused under a strict query set
    spec = PRESETS["trec_eval"].with_options(query_set="judged_strict")
    parses, passes, staged = run_parses(monkeypatch), second_passes(monkeypatch), stagings(monkeypatch)
    report = nightly(str(inbox), str(qrels), [spec.canonical_json()], str(warehouse))
    assert list(report.rejected) == ["without-10.run"] and "missing from the run" in report.rejected["without-10.run"]
    assert sorted(parses) == ["whole.run", "without-10.run"]  # each run file parsed once
    assert not passes and len(staged) == 2  # both staged by their reading pass; the refused one's removed
    assert not list((warehouse / "_staging").iterdir())
    (run_id,) = [path.name for path in (warehouse / "run_rows").iterdir() if not path.name.startswith("_")]
    readers_module._SCANNED_TABLES.clear()
    processed = inbox / "processed" / "whole.run"
    two_id, two = stored_in_two_passes(tmp_path / "two", warehouse_module.DEFAULT_LIMITS, processed)
    one = files_of(warehouse, run_id)[1]
    assert two_id == run_id and one.keys() == two.keys()
    for name in one:  # the same rows (the record, and so each part's metadata, names where the night found it)
        if name.startswith("part-"):
            assert pl.read_parquet(one[name]).equals(pl.read_parquet(two[name])), name


def test_the_evaluate_flow_stores_a_run_from_its_checking_pass(
    prefect_harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_text_scanned: None
) -> None:
    run, qrels = run_and_qrels(tmp_path, "9 0 D1 1\n")
    parses, passes, staged = run_parses(monkeypatch), second_passes(monkeypatch), stagings(monkeypatch)
    (report,) = evaluate_flow(str(qrels), [str(run)], PRESETS["trec_eval"].canonical_json(), str(tmp_path / "w"))
    assert parses == ["run.txt"] and not passes and staged == [report.run_id]
    assert not list((tmp_path / "w" / "_staging").iterdir())


# A Parquet run read in batches of 50 rows (several to a shard, and a query running on from one batch into the next)
# and cut into shards of about 120 rows.
PARQUET_PASS = Limits(rows_per_shard=120, sink_batch_rows=97, streamed_candidate_part_rows=50)


def parquet_variant(tmp_path: Path, variant: str, drop: tuple[str, ...] = (), two_tags: bool = False) -> Path:
    """`write_variant`'s run as a Parquet file, without the columns `drop` names (a run's rank and tag are
    optional in Parquet); with `two_tags`, every other query's rows carry another tag."""
    text = write_variant(tmp_path / f"{variant}.txt", variant)
    path = tmp_path / f"{variant}.parquet"
    rows = load_table(text, "run").frame.drop("source_line", *drop)
    if two_tags:
        rows = rows.with_columns(run_tag=pl.format("tag{}", pl.col("query_id").rank("dense") % 2))
    rows.write_parquet(path, row_group_size=40)
    readers_module._SCANNED_TABLES.clear()
    return path


@pytest.mark.parametrize(("variant", "drop", "two_tags", "one_pass"), [
    ("in_order", (), False, True), ("ties_ascending", (), False, True),
    ("in_order", ("source_rank", "run_tag"), False, True), ("in_order", (), True, True),
    ("interleaved", (), False, False), ("shuffled", (), False, False), ("duplicate", (), False, False),
])
def test_a_parquet_run_is_stored_from_its_checking_pass_with_the_bytes_of_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variant: str, drop: tuple[str, ...], two_tags: bool,
    one_pass: bool,
) -> None:
    """A Parquet run's reading pass (after the checks of its columns) stages its shards as a text run's does: the
    same parts, record and run id as the store's own pass, whether a batch holds one tag or two; a run whose queries
    are scattered, or that may hold a pair twice, is stored by that pass as before."""
    run = parquet_variant(tmp_path, variant, drop, two_tags)
    # With two tags, batches of several queries: some hold one tag, some both.
    limits = replace(PARQUET_PASS, streamed_candidate_part_rows=200) if two_tags else PARQUET_PASS
    passes, staged = second_passes(monkeypatch), stagings(monkeypatch)
    report = ingest_file(Store(tmp_path / "one"), run, "run", limits=limits)
    assert (not passes) is one_pass and bool(staged) is one_pass
    assert not list((tmp_path / "one" / "_staging").iterdir())
    readers_module._SCANNED_TABLES.clear()
    assert files_of(tmp_path / "one", report.id) == stored_in_two_passes(tmp_path / "two", limits, run)


def test_a_parquet_run_with_a_query_back_at_its_end_is_stored_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query whose rows come back in the file's last batch, each batch holding its queries together: only the
    pass's end shows it, and what the pass wrote is dropped; the run is stored by bucket from its file."""
    run = parquet_variant(tmp_path, "in_order")
    rows = pl.read_parquet(run)
    pl.concat([rows.slice(1), rows.head(1)]).write_parquet(run)
    passes, staged = second_passes(monkeypatch), stagings(monkeypatch)
    report = ingest_file(Store(tmp_path / "one"), run, "run", limits=PARQUET_PASS)
    assert passes and not staged and not list((tmp_path / "one" / "_staging").iterdir())
    assert Store(tmp_path / "one").stored("run", report.id).layout is RunLayout.BUCKET
    readers_module._SCANNED_TABLES.clear()
    assert files_of(tmp_path / "one", report.id) == stored_in_two_passes(tmp_path / "two", PARQUET_PASS, run)


def test_a_shuffled_parquet_runs_pass_ends_at_its_first_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shuffled run shows a query in two stretches in its first rows: the pass ends there, before any batch is
    made, not at the file's end (the store then reads the run its own way)."""
    run = parquet_variant(tmp_path, "shuffled")
    batches: list[int] = []
    batched = reading_pass_module.whole_stretch_batches

    def counted(*args: object) -> object:
        for batch in batched(*args):  # type: ignore[arg-type]
            batches.append(batch.height)
            yield batch

    monkeypatch.setattr(reading_pass_module, "whole_stretch_batches", counted)
    with staging_area(Store(tmp_path / "w").ensure().root) as staging:
        read = read_run(run, staging, limits=PARQUET_PASS)
    assert read.staged_shards is None and not read.table.duplicate_free
    assert not batches and read.table.counts["n_rows"] > 2 * PARQUET_PASS.streamed_candidate_part_rows


def test_a_bad_parquet_value_leaves_nothing_and_the_same_message(tmp_path: Path) -> None:
    run = parquet_variant(tmp_path, "in_order")
    rows = pl.read_parquet(run)
    rows.with_columns(score=pl.when(pl.int_range(pl.len()) == rows.height - 3).then(float("nan"))
                      .otherwise("score")).write_parquet(run)
    with pytest.raises(InputError) as without_staging:
        load_table(run, "run", limits=PARQUET_PASS)
    with pytest.raises(InputError) as one_pass:
        ingest_file(Store(tmp_path / "w"), run, "run", limits=PARQUET_PASS)
    assert str(one_pass.value) == str(without_staging.value) and f"row {rows.height - 2}" in str(one_pass.value)
    assert nothing_left(tmp_path / "w")


def test_the_evaluate_flow_stores_a_parquet_run_from_its_checking_pass(
    prefect_harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flow's checks read the Parquet run once, and it is neither looked at for repeats again nor read by the
    store: its shards were staged by that pass."""
    run = parquet_variant(tmp_path, "in_order")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("9 0 D1 1\n")
    parses, passes, staged = run_parses(monkeypatch), second_passes(monkeypatch), stagings(monkeypatch)
    looked_at: list[str] = []  # the sources of the tables looked at for repeats
    look = evaluate_module.may_repeat_documents
    monkeypatch.setattr(evaluate_module, "may_repeat_documents",
                        lambda table, *args: looked_at.append(table.source) or look(table, *args))
    (report,) = evaluate_flow(str(qrels), [str(run)], PRESETS["trec_eval"].canonical_json(), str(tmp_path / "w"))
    assert parses == ["in_order.parquet"] and not passes and staged == [report.run_id]
    assert str(qrels) in looked_at and str(run) not in looked_at  # proven free of repeats by its reading pass
    assert not list((tmp_path / "w" / "_staging").iterdir())
