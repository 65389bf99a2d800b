"""The reading pass (flows/store/reading_pass.py) as a store sees it: `open_table(...).reading_pass()` hands over
one object whose batches come as they are read, checked and looked at for repeats, that ends early when a batch
fails them, and whose checks and counts are the whole file's once it is finished, whoever iterated it."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from judged.flows.engine.limits import Limits
from judged.flows.store.readers import load_table, open_table
from judged.schemas.fields import QUERY
from tests.flows.test_ordered_ingest import write_variant

# Scanned in batches of ~40 of the run's ~360 rows.
SCANNED = Limits(in_memory_text_bytes=1, streamed_candidate_part_rows=40)


def test_a_plain_runs_pass_gives_every_row_in_batches_of_whole_queries(tmp_path: Path) -> None:
    run = write_variant(tmp_path / "run.txt", "in_order")
    reading = open_table(run, "run", limits=SCANNED, look_for_repeats=True).reading_pass()
    assert reading is not None and reading.tag == "tag"
    batches = list(reading.batches())
    taken = pl.concat(batches)
    expected = load_table(run, "run").frame
    assert len(batches) > 3 and taken.equals(expected)
    # Each query's rows in one batch.
    assert pl.concat([batch.select(QUERY).unique() for batch in batches])[QUERY].is_unique().all()
    reading.finish()
    assert reading.stopped is None and reading.plain and reading.duplicate_free
    assert int(reading.counts["n_rows"].sum()) == expected.height


def test_a_pass_ends_its_batches_at_a_line_the_fast_reader_leaves_and_finishes_the_file(tmp_path: Path) -> None:
    run = write_variant(tmp_path / "run.txt", "in_order")
    lines = run.read_text().splitlines()
    # Between two queries past the first batches, a comment line that the CSV reader reads as a run line.
    at = next(n for n in range(200, len(lines)) if lines[n].split()[0] != lines[n - 1].split()[0])
    run.write_text("\n".join([*lines[:at], "#comment Q0 D0 1 1.0 tag", *lines[at:]]) + "\n")
    opened = open_table(run, "run", limits=SCANNED, look_for_repeats=True)
    reading = opened.reading_pass()
    assert reading is not None
    taken = sum(batch.height for batch in reading.batches())
    assert 0 < taken < at and reading.stopped == "a line the fast reader leaves to the exact parser"
    reading.finish()
    assert not reading.plain and int(reading.counts["n_rows"].sum()) == len(lines) + 1  # as the CSV reader read it
    # The exact parser then reads the file: the comment is skipped, every row is there.
    assert opened.table().frame.height == len(lines)


def test_a_pass_nobody_iterates_finishes_alone_with_the_same_counts(tmp_path: Path) -> None:
    run = write_variant(tmp_path / "run.txt", "in_order")
    iterated = open_table(run, "run", limits=SCANNED, look_for_repeats=True).reading_pass()
    alone = open_table(run, "run", limits=SCANNED, look_for_repeats=True).reading_pass()
    assert iterated is not None and alone is not None
    for _ in iterated.batches():
        pass
    assert iterated.finish().counts.sort(QUERY).equals(alone.finish().counts.sort(QUERY))
    assert iterated.checks == alone.checks and alone.duplicate_free
