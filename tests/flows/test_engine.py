"""The direct evaluation path (judged.flows.engine.evaluate): what it does beyond the transforms, here how it collects a run's
candidates a part at a time, and what a result keeps."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import judged.flows.engine.evaluate
from judged.flows.engine.evaluate import evaluate, plan
from judged.flows.store.readers import load_table
from judged.flows.engine.limits import Limits
from judged.schemas.spec import PRESETS, EvaluationSpec, build_spec
from judged.transforms.errors import InputError
from judged.transforms.ranking import candidate_rows, stretches_of
from judged.flows.store.reading_pass import last_stretch_start

SPECS = {
    "trec_eval@10": PRESETS["trec_eval"].with_options(cutoffs=(10,)),
    "judged@5,20,all": PRESETS["judged"].with_options(cutoffs=(5, 20, None)),
    "condensed-depth": PRESETS["trec_eval9"].with_options(cutoffs=(5, 20), unjudged="condensed", depth=30),
}


def run_lines(order: str) -> list[str]:
    """Six queries of 40 rows with many exact ties, listed query by query, with q1 split in two blocks far
    apart, or every row shuffled."""
    rng = random.Random(3)
    rows = [f"q{q} Q0 d{d} {d + 1} {rng.randint(0, 12)} t" for q in range(6) for d in range(40)]
    if order == "blocks":
        rows = rows[60:] + rows[:60]  # q1's rows 20-39 first, its rows 0-19 last
    elif order == "shuffled":
        rng.shuffle(rows)
    return rows


@pytest.mark.parametrize("spec_name", list(SPECS))
@pytest.mark.parametrize("order", ["grouped", "blocks", "shuffled"])
def test_candidates_in_parts_give_the_whole_runs_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str, spec_name: str
) -> None:
    """Parts end where a query id changes. A query listed in several parts (blocks, shuffled) makes the engine
    take the whole run at once: per part, its rows would be counted and ranked apart."""
    spec: EvaluationSpec = SPECS[spec_name]
    rng = random.Random(4)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {rng.randint(0, 3)}\n" for q in range(6) for d in range(0, 60, 2)))
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines(order)) + "\n")
    whole = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), spec)
    calls = []
    monkeypatch.setattr(judged.flows.engine.evaluate, "candidate_rows", lambda *args: calls.append(1) or candidate_rows(*args))
    limits = Limits(candidate_part_rows=50)
    in_parts = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), spec, limits=limits)
    assert in_parts.per_query.equals(whole.per_query)
    assert in_parts.summary.equals(whole.summary)
    if order == "grouped":  # queries start at rows 0, 40, ..., 200: parts from 0, 80, 120, 160 and 200, no retake
        assert len(calls) == 5


def test_a_result_does_not_keep_its_run_alive(tmp_path: Path) -> None:
    """The result's id is made on first use from the inputs' hashes and metadata: the loaded run (its rows) can go
    as soon as the evaluation returns, and the id is the one made at once."""
    import gc
    import weakref

    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 0\n")
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines("grouped")) + "\n")
    spec = SPECS["trec_eval@10"]
    loaded = load_table(run, "run")
    judgments = load_table(qrels, "judgments")
    expected = evaluate(load_table(run, "run"), judgments, spec).evaluation_id
    result = evaluate(loaded, judgments, spec)
    gone = weakref.ref(loaded)
    del loaded
    gc.collect()
    assert gone() is None
    assert result.evaluation_id == expected


def test_results_and_tables_compare_by_identity(tmp_path: Path) -> None:
    """Regression: frozen dataclasses with generated equality over frames made `result == result` and
    `hash(result)` raise TypeError. A result, a loaded or stored table and a plan are each equal to itself only;
    two evaluations of the same inputs tell their sameness by their ids."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 0\n")
    run = tmp_path / "run.txt"
    run.write_text("\n".join(run_lines("grouped")) + "\n")
    judgments = load_table(qrels, "judgments")
    loaded = load_table(run, "run")
    first = evaluate(loaded, judgments, SPECS["trec_eval@10"])
    second = evaluate(loaded, judgments, SPECS["trec_eval@10"])
    planned = plan(loaded, judgments, SPECS["trec_eval@10"])
    for item in (first, loaded, judgments, planned):
        assert item == item and len({item, item}) == 1
    assert first != second and len({first, second}) == 2
    assert first.evaluation_id == second.evaluation_id == planned.evaluation_id
    assert loaded != load_table(run, "run")


# Every measure, several cutoffs, whole lists and a depth cut: heads of a few rows, and specs that read every row.
BOUNDED_SPECS = {
    "trec_eval@10": PRESETS["trec_eval"].with_options(cutoffs=(10,)),
    "every-measure": build_spec(
        "judged",
        measures="nDCG@3,nDCG@10,nDCG,AP,AP@5,RR,RR(rel=2)@3,P@5,P@20,R@10,R-Prec,Judged@5,"
        "Judged(convention=trec_eval)@10,RBP(p=0.8)",
    ),
    "condensed-depth": PRESETS["trec_eval9"].with_options(cutoffs=(5, 20), unjudged="condensed", depth=30),
}


def bounded_run_lines(order: str) -> list[str]:
    """Sixty queries of 50 rows with exact ties, listed query by query, with q1 split in two blocks far apart, or
    every row shuffled."""
    rng = random.Random(6)
    rows = [f"q{q} Q0 d{d} {d + 1} {rng.randint(0, 30)} t" for q in range(60) for d in range(50)]
    if order == "blocks":
        rows = rows[75:] + rows[:75]  # q1's rows 25-49 first, its rows 0-24 last
    elif order == "shuffled":
        rng.shuffle(rows)
    return rows


def with_duplicates(rows: list[str]) -> list[str]:
    """The rows with three more, each repeating the (query, document) pair of an earlier row at another score."""
    rows = list(rows)
    for number in (5, 470, 1300):
        query, q0, doc, rank, score, tag = rows[number].split()
        rows.insert(number + 3, f"{query} {q0} {doc} {rank} {int(score) + 5} {tag}")
    return rows


def bounded_inputs(tmp_path: Path, rows: list[str]) -> tuple[Path, Path, Path]:
    """qrels with unjudged documents (odd ids never judged), a query without judgments (q5), a judged query the
    run lacks (q99) and one without a relevant judgment (q4); the run's rows as text and as Parquet."""
    rng = random.Random(5)
    qrels = tmp_path / "qrels.txt"
    judged_queries = [q for q in (*range(60), 99) if q != 5]
    lines = [f"q{q} 0 d{d} {0 if q == 4 else rng.randint(0, 3)}" for q in judged_queries for d in range(0, 60, 2)]
    qrels.write_text("\n".join(lines) + "\n")
    text = tmp_path / "run.txt"
    text.write_text("\n".join(rows) + "\n")
    parquet = tmp_path / "run.parquet"
    load_table(text, "run").frame.drop("source_line").write_parquet(parquet)
    return qrels, text, parquet


# Every measure at once costs as much as the other specs together, and each case evaluates four inputs under four
# policies: the fast loop keeps the trec_eval spec on a run grouped by query.
@pytest.mark.parametrize("spec_name", [
    name if name == "trec_eval@10" else pytest.param(name, marks=pytest.mark.slow) for name in BOUNDED_SPECS
])
@pytest.mark.parametrize("order", ["grouped", pytest.param("blocks", marks=pytest.mark.slow),
                                   pytest.param("shuffled", marks=pytest.mark.slow)])
def test_scanned_runs_in_batches_give_the_in_memory_result(tmp_path: Path, order: str, spec_name: str) -> None:
    """A run too large to parse in memory (here: any text, by `Limits`) and a Parquet run are scanned, their
    candidates found a batch of a few hundred rows at a time (or a small Parquet run's in one pass) and evaluated
    in groups: the same per-query rows,
    summary and warnings as the run parsed in memory, for a run without duplicates and one with, under each
    duplicates policy (an `error` one refuses it with the same message)."""
    # Groups of 800 candidates (16 queries of whole lists) at least: in much smaller frames, Polars computes some
    # quotients (P@k) an ulp apart (see `scanned_per_query`); the engine's groups hold a million.
    bounded = Limits(in_memory_text_bytes=1, streamed_candidate_part_rows=400, scanned_candidate_rows=800,
                     whole_scan_rows=1)
    rows = bounded_run_lines(order)
    cases = [("error", rows)] + [(policy, with_duplicates(rows)) for policy in ("first", "last", "error")]
    for case, (policy, lines) in enumerate(cases):
        (folder := tmp_path / str(case)).mkdir()
        qrels, text, parquet = bounded_inputs(folder, lines)
        spec = BOUNDED_SPECS[spec_name].with_options(run_duplicates=policy)
        outcomes = []
        # The Parquet file in batches (bounded) and whole, as a small one is read (`choose_read`).
        for run, limits in ((text, Limits()), (text, bounded), (parquet, bounded), (parquet, Limits())):
            loaded = load_table(run, "run", limits=limits)
            assert loaded.in_memory == (limits == Limits() and run == text)
            try:
                result = evaluate(loaded, load_table(qrels, "judgments"), spec, limits=limits)
            except InputError as error:
                outcomes.append(str(error).replace(str(run), "RUN").replace(" row", " line"))
                continue
            warnings = [w.replace(str(run), "RUN").replace(" row", " line") for w in result.warnings]
            outcomes.append((result.per_query, result.summary, warnings))
        in_memory, *scanned = outcomes
        for outcome in scanned:
            if isinstance(in_memory, str):
                assert outcome == in_memory
                continue
            if policy == "error":
                assert outcome[0].equals(in_memory[0])
                assert outcome[1].equals(in_memory[1])
            else:  # resolved duplicates: the whole run on both sides, where Polars' in-memory and streaming
                # engines may compute a quotient (Judged@k) an ulp apart, as they did before batches
                assert_frame_equal(outcome[0], in_memory[0], rel_tol=1e-14, abs_tol=0)
                assert_frame_equal(outcome[1], in_memory[1], rel_tol=1e-14, abs_tol=0)
            assert outcome[2] == in_memory[2]
        assert isinstance(in_memory, str) == (case == 3)


def test_a_scanned_run_is_cut_between_queries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 17 rows of six queries of 40 rows each: each part ends where a query id changes, so the
    candidates come from six parts of one query each, never from the whole run taken again."""
    qrels, text, _ = bounded_inputs(tmp_path, run_lines("grouped"))  # q0-q5 of 40 rows
    bounded = Limits(in_memory_text_bytes=1, streamed_candidate_part_rows=17, scanned_candidate_rows=30)
    spec = BOUNDED_SPECS["trec_eval@10"]
    whole = evaluate(load_table(text, "run"), load_table(qrels, "judgments"), spec)
    parts: list[int] = []

    def counted(rows: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
        parts.append(rows.select(pl.len()).collect().item())
        return candidate_rows(rows, spec)

    monkeypatch.setattr(judged.flows.engine.evaluate, "candidate_rows", counted)
    scanned = evaluate(load_table(text, "run", limits=bounded), load_table(qrels, "judgments"), spec, limits=bounded)
    assert scanned.per_query.equals(whole.per_query)
    assert [rows for rows in parts if rows] == [40] * 6  # (an empty frame gives the queries the run lacks)


@pytest.mark.parametrize(
    ("layout", "repeated"),
    [
        ("one stretch per query", False),
        ("one stretch per query", True),
        ("a query in two stretches", False),
        ("a query in two stretches", True),  # the repeated document lies in both stretches
    ],
)
def test_checks_before_storing_look_at_a_scanned_run_in_bounded_batches(
    tmp_path: Path, layout: str, repeated: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scanned run (`in_memory_text_bytes=1`) is checked for repeated documents a few rows at a time: a repeat
    within a stretch, and one across two stretches of a query (never seen together in a batch), are both refused;
    a run without one passes. The in-memory check agrees."""
    from judged.flows.engine.evaluate import check_before_storing, may_repeat_documents

    rows = {q: [f"{q} Q0 d{i} {i + 1} {100 - i} t" for i in range(6)] for q in ("q1", "q2")}
    if repeated:
        rows["q1"][5] = "q1 Q0 d0 6 95 t"
    if layout == "one stretch per query":
        lines = rows["q1"] + rows["q2"]
    else:
        lines = rows["q1"][:3] + rows["q2"] + rows["q1"][3:]
    text = tmp_path / "run.txt"
    text.write_text("\n".join(lines) + "\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d0 1\nq2 0 d1 2\n")
    bounded = Limits(in_memory_text_bytes=1, streamed_candidate_part_rows=4)
    scanned, in_memory = load_table(text, "run", limits=bounded, look_for_repeats=True), load_table(text, "run")
    assert not scanned.in_memory and in_memory.in_memory
    assert may_repeat_documents(scanned, 4) is repeated
    assert may_repeat_documents(in_memory, 4) is repeated
    # The pass that read and checked the scanned run proved it free of repeats when its queries lie together.
    assert scanned.duplicate_free is (not repeated and layout == "one stretch per query")
    judgments, spec = load_table(qrels, "judgments"), PRESETS["trec_eval"]
    looked_at = []
    look = judged.flows.engine.evaluate.may_repeat_documents
    monkeypatch.setattr(judged.flows.engine.evaluate, "may_repeat_documents",
                        lambda table, rows: looked_at.append(table) or look(table, rows))
    if repeated:
        with pytest.raises(InputError, match="duplicate"):
            check_before_storing(scanned, judgments, spec, bounded)
    else:
        check_before_storing(scanned, judgments, spec, bounded)
    # A run proven free of repeats is not read again for them.
    assert (scanned in looked_at) is not scanned.duplicate_free


@pytest.mark.parametrize("run_kind", ["text", "parquet", "stored"])
def test_an_evaluation_without_intervals_differs_only_in_them(tmp_path: Path, run_kind: str) -> None:
    """`intervals=False` (trec_eval's lines, the tie warning's means) leaves value_min, value_max and
    interval_kind null on every row and every other column as the full evaluation has it, on each path; the full
    evaluation does have intervals, some of them wider than the value."""
    from judged.flows.pipeline.tasks import ingest_file
    from judged.flows.store.warehouse import Store

    qrels, text, parquet = bounded_inputs(tmp_path, bounded_run_lines("grouped"))
    spec = build_spec("trec_eval", measures="nDCG@10,AP,P@5")
    judgments = load_table(qrels, "judgments")
    if run_kind == "stored":
        warehouse = Store(tmp_path / "w")
        run = warehouse.stored("run", ingest_file(warehouse, text, "run").id)  # type: ignore[assignment]
    else:
        run = load_table(text if run_kind == "text" else parquet, "run")
    full = evaluate(run, judgments, spec)
    bare = evaluate(run, judgments, spec, intervals=False)
    interval_columns = ["value_min", "value_max", "interval_kind"]
    assert bare.per_query.select(interval_columns).null_count().row(0) == (bare.per_query.height,) * 3
    assert_frame_equal(bare.per_query.drop(interval_columns), full.per_query.drop(interval_columns))
    assert bare.summary["value"].to_list() == full.summary["value"].to_list()
    ndcg = full.per_query.filter(pl.col("measure") == "nDCG", pl.col("value").is_not_null())
    assert ndcg["value_min"].null_count() == 0
    assert (ndcg["value_max"] - ndcg["value_min"]).max() > 0


def stretch_starts(run: pl.LazyFrame) -> pl.LazyFrame:
    """The stretches of one query id by their definition: a row starts one where its id differs from the row
    before's (the reference `stretches_of` and `last_stretch_start` are checked against)."""
    first = (pl.col("query_id") != pl.col("query_id").shift()).fill_null(True)
    return run.select(start=pl.arg_where(first), query_id=pl.col("query_id").filter(first))


@pytest.mark.parametrize("lengths", [[1], [5000], [3, 1], [2, 9000], [7000, 1, 1, 4], [1] * 50])
def test_the_last_stretch_starts_where_stretch_starts_says(lengths: list[int]) -> None:
    """Looked for from the end in doubling windows, including stretches longer than the first window."""
    ids = pl.Series("query_id", [f"q{number % 2}" for number, length in enumerate(lengths) for _ in range(length)])
    expected = stretch_starts(ids.to_frame().lazy()).select(pl.col("start").last()).collect().item()
    assert last_stretch_start(ids) == expected


@pytest.mark.parametrize("lengths", [[], [1], [5000], [3, 1], [2, 9000], [7000, 1, 1, 4], [1] * 50])
def test_stretches_of_ids_in_memory_are_stretch_starts(lengths: list[int]) -> None:
    """The run-length encoding gives the same stretches as comparing each id with the one before it, a query
    listed in several stretches included (q0 and q1 alternate)."""
    ids = pl.Series("query_id", [f"q{number % 2}" for number, length in enumerate(lengths) for _ in range(length)],
                    dtype=pl.String)
    assert_frame_equal(stretches_of(ids), stretch_starts(ids.to_frame().lazy()).collect())


@pytest.mark.parametrize("order", ["grouped", "blocks", "shuffled"])
def test_the_fast_readers_stretches_are_those_of_its_rows(tmp_path: Path, order: str) -> None:
    """A run parsed in memory keeps the stretches its checks found, which the plan cuts its parts at: they are its
    rows' own, blank lines dropped; a table of other rows (a shard, some queries) keeps none."""
    lines = run_lines(order)
    run_file = tmp_path / "run.txt"
    run_file.write_text("\n".join([*lines[:7], "", "  ", *lines[7:]]) + "\n")
    run = load_table(run_file, "run")
    assert run.stretches is not None
    assert_frame_equal(run.stretches, stretch_starts(run.scan).collect())
    assert run.load(0, 2).stretches is None
    assert run.load_queries(pl.DataFrame({"query_id": ["q1"]})).stretches is None
    rows, part_rows = run.frame.height, 50
    assert judged.flows.engine.evaluate.candidate_bounds(run.scan, rows, part_rows, run.stretches) == (
        judged.flows.engine.evaluate.candidate_bounds(run.scan, rows, part_rows))


def planned_reads(run: object, judgments: object, spec: EvaluationSpec, limits: Limits = Limits()) -> list[tuple]:
    """(read, why) of each part of the plan."""
    from judged.flows.engine.evaluate import plan

    return [(read.read, read.why) for read in plan(run, judgments, spec, limits).reads]  # type: ignore[arg-type]


def test_the_plan_reads_held_rows_in_memory_or_in_parts_of_whole_queries(tmp_path: Path) -> None:
    """Parsed text is read in memory: its candidates at once when it is small, or a part of whole queries at a
    time (the plan holds the slices); a query listed in several stretches makes the plan take them all at once."""
    from judged.flows.engine.evaluate import Read

    qrels, text, _ = bounded_inputs(tmp_path, run_lines("grouped"))  # q0-q5 of 40 rows
    judgments, spec = load_table(qrels, "judgments"), SPECS["trec_eval@10"]
    assert planned_reads(load_table(text, "run"), judgments, spec) == [
        (Read.IN_MEMORY, "240 rows held, at most Limits.candidate_part_rows")]
    in_parts = plan(load_table(text, "run"), judgments, spec, Limits(candidate_part_rows=50))
    assert [read.read for read in in_parts.reads] == [Read.IN_PARTS]
    assert in_parts.reads[0].bounds == ((0, 80), (80, 120), (120, 160), (160, 200), (200, 240))
    blocks = tmp_path / "blocks.txt"
    blocks.write_text("\n".join(run_lines("blocks")) + "\n")
    assert planned_reads(load_table(blocks, "run"), judgments, spec, Limits(candidate_part_rows=50)) == [
        (Read.IN_MEMORY, "240 rows held; a query listed in several stretches takes them all")]


def test_the_plan_scans_large_text_in_batches_and_a_small_parquet_run_whole(tmp_path: Path) -> None:
    from judged.flows.engine.evaluate import Read

    qrels, text, parquet = bounded_inputs(tmp_path, bounded_run_lines("grouped"))
    judgments, spec = load_table(qrels, "judgments"), SPECS["trec_eval@10"]
    scanned = Limits(in_memory_text_bytes=1)
    assert planned_reads(load_table(text, "run", limits=scanned), judgments, spec, scanned) == [
        (Read.SCANNED_BATCHES, "text too large to hold")]
    assert planned_reads(load_table(parquet, "run"), judgments, spec) == [
        (Read.SCANNED_WHOLE, "Parquet of 3,000 rows, at most Limits.whole_scan_rows")]
    assert planned_reads(load_table(parquet, "run"), judgments, spec, Limits(whole_scan_rows=2999)) == [
        (Read.SCANNED_BATCHES, "Parquet of 3,000 rows, above Limits.whole_scan_rows")]


def test_the_plan_reads_a_stored_head_and_a_stored_part_with_duplicates_whole(tmp_path: Path) -> None:
    """A stored run in its ranked layout: each query's head for a top-k spec, the whole part for whole lists. A
    part holding duplicate pairs counted at ingest is planned whole: the duplicates policy takes the whole part,
    so its batches are never read first (they were, then read again whole)."""
    from judged.flows.engine.evaluate import Read
    from judged.flows.pipeline.tasks import ingest_file
    from judged.flows.store.warehouse import Store

    qrels, text, _ = bounded_inputs(tmp_path, bounded_run_lines("grouped"))
    judgments, spec = load_table(qrels, "judgments"), SPECS["trec_eval@10"]
    warehouse = Store(tmp_path / "w")
    stored = warehouse.stored("run", ingest_file(warehouse, text, "run", limits=Limits(rows_per_shard=1000)).id)
    head = (Read.STORED_HEAD, "each query's first 11 rows, in stored order")  # k + 1: a tie at k shows
    assert planned_reads(stored, judgments, spec) == [head]
    whole_lists = SPECS["judged@5,20,all"]
    assert planned_reads(stored, judgments, whole_lists) == [
        (Read.SCANNED_WHOLE, "a stored run in ranked layout, and the spec reads whole lists")] * stored.shards

    duplicated = tmp_path / "duplicated.txt"
    duplicated.write_text("\n".join(with_duplicates(bounded_run_lines("grouped"))) + "\n")
    with_pairs = warehouse.stored("run", ingest_file(warehouse, duplicated, "run", limits=Limits(rows_per_shard=1000)).id)
    whole = "counted at ingest: the duplicates policy takes the whole part"
    assert planned_reads(with_pairs, judgments, spec) == [
        (Read.SCANNED_WHOLE, f"2 duplicate pairs {whole}"), head, head, (Read.SCANNED_WHOLE, f"1 duplicate pair {whole}")]
    first = spec.with_options(run_duplicates="first")
    expected = evaluate(load_table(duplicated, "run"), judgments, first)
    assert evaluate(with_pairs, judgments, first).per_query.equals(expected.per_query)


def test_a_result_says_how_each_part_was_read_and_why(tmp_path: Path) -> None:
    """`reads`, which `--profile` prints: the plan's read of each part; a scanned run whose batches' one pass finds
    a repeated document is read whole, and the line says so beside what was planned (no pass of the plan's own
    could know it), with the result of the run parsed in memory."""
    bounded = Limits(in_memory_text_bytes=1, streamed_candidate_part_rows=400, scanned_candidate_rows=800)
    qrels, text, _ = bounded_inputs(tmp_path, bounded_run_lines("grouped"))
    judgments, spec = load_table(qrels, "judgments"), BOUNDED_SPECS["trec_eval@10"]
    batched = evaluate(load_table(text, "run", limits=bounded), judgments, spec, limits=bounded)
    planned = plan(load_table(text, "run", limits=bounded), judgments, spec, bounded)
    whole_if = "read whole if its rows fail a check, may repeat a document or list a query in two batches"
    assert batched.reads == tuple(planned.describe()) == (
        f"read part 1/1: scanned in batches (text too large to hold; {whole_if})",)

    (folder := tmp_path / "duplicated").mkdir()
    qrels, text, _ = bounded_inputs(folder, with_duplicates(bounded_run_lines("grouped")))
    first = spec.with_options(run_duplicates="first")
    taken_whole = evaluate(load_table(text, "run", limits=bounded), judgments, first, limits=bounded)
    assert taken_whole.reads == (
        "read part 1/1: scanned whole (a batch may repeat a document: the duplicates policy takes the whole run), "
        f"planned scanned in batches (text too large to hold; {whole_if})",)
    in_memory = evaluate(load_table(text, "run"), judgments, first)
    assert in_memory.reads == ("read part 1/1: in memory (3,003 rows held, at most Limits.candidate_part_rows)",)
    assert_frame_equal(taken_whole.per_query, in_memory.per_query, rel_tol=1e-14, abs_tol=0)


def test_a_stored_runs_part_holds_its_judgments_and_a_loaded_run_takes_them_as_loaded(tmp_path: Path) -> None:
    """Parquet judgments beside a stored run are held in memory, the part's judgments only (the in-memory engine
    then takes the part), even when the plan has one part; beside a loaded run, which is one part, they are taken
    as loaded (scanned)."""
    from judged.flows.pipeline.tasks import ingest_file
    from judged.flows.store.warehouse import Store

    qrels, text, _ = bounded_inputs(tmp_path, bounded_run_lines("grouped"))
    load_table(qrels, "judgments").frame.drop("source_line").write_parquet(qrels_parquet := tmp_path / "qrels.parquet")
    judgments, spec = load_table(qrels_parquet, "judgments"), SPECS["trec_eval@10"]
    assert not judgments.in_memory
    warehouse = Store(tmp_path / "w")
    stored = warehouse.stored("run", ingest_file(warehouse, text, "run", limits=Limits(rows_per_shard=1000)).id)
    one_part = plan(stored, judgments, spec)
    assert one_part.parts == (judged.flows.engine.evaluate.Part(0, 1),)
    run_part, judgments_part = one_part.inputs(one_part.parts[0])
    assert judgments_part.in_memory and judgments_part.frame.equals(judgments.frame)
    loaded = plan(load_table(text, "run"), judgments, spec)
    assert loaded.inputs(loaded.parts[0])[1] is judgments
    in_four = plan(stored, judgments, spec, Limits(judgment_rows_per_part=500))
    assert sum(in_four.inputs(part)[1].frame.height for part in in_four.parts) == judgments.frame.height
