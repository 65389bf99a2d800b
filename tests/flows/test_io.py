"""Reading judgments and runs from disk (judged.flows.store.readers.load_table): TREC text, gzip detected from the bytes, Parquet,
and the one-line InputError that names the file, the line and the problem."""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

import judged.flows.store.readers
import judged.flows.store.hashing
from judged.flows.store.hashing import content_hashes, hash_ahead, hash_in_background, hashes_on_demand
from judged.flows.store.readers import LoadedTable, TableKind, load_table, read_trec_fast
from judged.flows.engine.limits import Limits
from judged.schemas.tables import JUDGMENTS_TABLE, RUN
from judged.transforms.errors import InputError

JUDGMENTS = JUDGMENTS_TABLE.schema_for(())  # of a set that names no assessor

QRELS_TEXT = "# seed judgments\nq1 0 d1 3\nq1 0 d2 0\n\nq1 0 d3 2\n007 0 007 1\n"
# (query_id, iteration, doc_id, relevance, source_line): the comment is line 1, the blank line 4.
QRELS_ROWS = [
    ("q1", "0", "d1", 3, 2),
    ("q1", "0", "d2", 0, 3),
    ("q1", "0", "d3", 2, 5),
    ("007", "0", "007", 1, 6),
]
RUN_TEXT = "q1 Q0 d1 1 3.0 seed\nq1\tQ0\td2\t2\t2.0\tseed\nq1 0 d3 3 1.0 seed extra junk\n"
# (query_id, doc_id, source_rank, score, run_tag, source_line)
RUN_ROWS = [
    ("q1", "d1", 1, 3.0, "seed", 1),
    ("q1", "d2", 2, 2.0, "seed", 2),
    ("q1", "d3", 3, 1.0, "seed", 3),
]

# Three queries of 12 rows, a blank line after the 4th and the 11th row of each: for reads in pieces and scans.
PIECES_RUN = "".join(
    f"q{q} Q0 doc-{q}-{d} {d + 1} {10 - d / 4:.2f} tag-x\n" + ("\n" if d % 7 == 3 else "")
    for q in range(1, 4)
    for d in range(12)
)


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def input_error(path: Path, kind: TableKind) -> InputError:
    with pytest.raises(InputError) as caught:
        load_table(path, kind)
    return caught.value


def test_hashes_started_in_the_background_are_the_tables_hashes(tmp_path: Path) -> None:
    """What the command line starts before its imports: one future per existing file (folders and missing paths
    are left to whoever opens them), and the same hashes as a table hashing its own file."""
    plain = write(tmp_path / "run.txt", RUN_TEXT)
    packed = write(tmp_path / "run.gz", gzip.compress(RUN_TEXT.encode()))
    empty = write(tmp_path / "empty.txt", b"")
    futures = hash_in_background([plain, packed, empty, tmp_path, tmp_path / "missing.txt"])
    assert set(futures) == {plain, packed, empty}
    assert futures[empty].result() == (hashlib.sha256(b"").hexdigest(),) * 2
    assert futures[plain].result() == (sha256_of(plain), sha256_of(plain))
    assert futures[packed].result() == (sha256_of(packed), sha256_of(plain))  # content: the decompressed text
    for path in (plain, packed):
        prefetched = load_table(path, "run", hashes=futures[path])
        own = load_table(path, "run")
        assert (prefetched.source_sha256, prefetched.content_sha256) == (own.source_sha256, own.content_sha256)


def test_hashes_on_demand_are_computed_once_when_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = write(tmp_path / "run.txt", RUN_TEXT)
    hashed: list[Path] = []
    monkeypatch.setattr(judged.flows.store.hashing, "content_hashes", lambda path: hashed.append(path) or content_hashes(path))
    futures = hashes_on_demand([plain, tmp_path / "missing.txt"])
    assert set(futures) == {plain}
    table = load_table(plain, "run", hashes=futures[plain])
    assert table.frame.rows() == RUN_ROWS
    assert hashed == []  # reading and validating never needs them
    with ThreadPoolExecutor(4) as pool:
        asked = list(pool.map(lambda _: futures[plain].result(), range(8)))
    assert asked == [(sha256_of(plain), sha256_of(plain))] * 8
    assert table.content_sha256 == sha256_of(plain)
    assert hashed == [plain]


def test_a_hash_started_ahead_is_taken_once_by_the_reading_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a warehouse command starts before its imports (`hash_ahead`): the reading pass that hashes the same file
    next takes that hash instead of hashing it again, and the one after it hashes anew."""
    plain = write(tmp_path / "run.txt", RUN_TEXT)
    hashed: list[Path] = []
    monkeypatch.setattr(judged.flows.store.hashing, "content_hashes", lambda path: hashed.append(path) or content_hashes(path))
    hash_ahead([plain, tmp_path, tmp_path / "missing.txt"])
    table = load_table(plain, "run")
    assert table.content_sha256 == sha256_of(plain) and hashed == [plain]
    assert load_table(plain, "run").content_sha256 == sha256_of(plain)
    assert hashed == [plain, plain]


def test_a_file_started_ahead_twice_is_hashed_once_in_a_thread_that_exit_does_not_wait_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console script and then the command itself start the same file's hash ahead (flows/console.py, `hash_ahead`
    in `evaluate` with a warehouse): one hash, taken once. The thread is a daemon: a command that ends before anyone
    takes the hash (a usage error) does not wait for it at exit."""
    plain = write(tmp_path / "run.txt", RUN_TEXT)
    hashed: list[Path] = []
    started = threading.Event()

    def counted_hashes(path: Path) -> tuple[str, str]:
        hashed.append(path)
        started.set()
        assert threading.current_thread().daemon
        return content_hashes(path)

    monkeypatch.setattr(judged.flows.store.hashing, "content_hashes", counted_hashes)
    hash_ahead([plain])
    hash_ahead([plain])
    assert started.wait(10)
    assert hash_in_background([plain])[plain].result() == (sha256_of(plain), sha256_of(plain))
    assert hashed == [plain]


def test_a_file_changed_after_its_hash_started_ahead_is_hashed_again(tmp_path: Path) -> None:
    """A file changed since its hash was started ahead (its size or modification time differ) is not given that
    hash: its table's id is that of what it holds now."""
    run = write(tmp_path / "run.txt", RUN_TEXT)
    hash_ahead([run])
    hash_ahead([run])  # unchanged, and started ahead already: not hashed twice
    changed = RUN_TEXT.replace("tag-x", "tag-y")
    assert len(changed) == len(RUN_TEXT)
    first_seen = run.stat().st_mtime_ns
    write(run, changed)
    os.utime(run, ns=(first_seen + 10**9, first_seen + 10**9))  # whatever the file system's clock resolution
    assert hash_in_background([run])[run].result() == (sha256_of(run), sha256_of(run))
    assert load_table(run, "run").content_sha256 == hashlib.sha256(changed.encode()).hexdigest()


def test_content_hashes_of_a_file_longer_than_one_read(tmp_path: Path) -> None:
    """The hash reads blocks into one reused buffer: every block, the last one partial, counts once."""
    text = (RUN_TEXT * 200_000).encode()  # ~11 MB: one full 8 MB block and a partial one
    plain = write(tmp_path / "run.txt", text)
    packed = write(tmp_path / "run.gz", gzip.compress(text, compresslevel=1))
    expected = hashlib.sha256(text).hexdigest()
    assert content_hashes(plain) == (expected, expected)
    assert content_hashes(packed) == (sha256_of(packed), expected)


# -- TREC text, plain and gzip ---------------------------------------------------------------------------------------


def test_plain_text_judgments(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.txt", QRELS_TEXT)
    table = load_table(path, "judgments")
    assert isinstance(table, LoadedTable)
    assert (table.kind, table.source, table.source_format, table.unit) == ("judgments", str(path), "trec", "line")
    assert table.source_sha256 == sha256_of(path)
    assert table.frame.schema == pl.Schema(JUDGMENTS)
    assert table.frame.rows() == QRELS_ROWS


def test_plain_text_run(tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", RUN_TEXT)
    table = load_table(str(path), "run")  # a str path works as well as a Path
    assert (table.kind, table.source_format, table.unit) == ("run", "trec", "line")
    assert table.frame.schema == pl.Schema(RUN)
    assert table.frame.rows() == RUN_ROWS


@pytest.mark.parametrize(
    ("text", "tag", "row_tags"),
    [
        ("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\n", "a", ["a", "a"]),
        ("q1\tQ0\td1\t1\t3.0\ta\r\nq1\tQ0\td2\t2\t2.0\ta\r\n", "a", ["a", "a"]),
        # Another tag after the first line: the run is read again with plain strings, every row keeps its own.
        ("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 b\n", "", ["a", "b"]),
        ("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq2 Q0 d1 1 1.0 a_b\n", "", ["a", "a", "a_b"]),
    ],
)
def test_run_tag_common_to_every_row(tmp_path: Path, text: str, tag: str, row_tags: list[str]) -> None:
    path = write(tmp_path / "run.txt", text)
    fast = read_trec_fast(path, gzipped=False, kind="run")
    assert fast is not None and fast.common_tag == tag
    table = load_table(path, "run")
    assert table.metadata.tag == tag
    assert table.frame.schema == pl.Schema(RUN)
    assert table.frame["run_tag"].to_list() == row_tags


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        (PIECES_RUN, "tag-x"),
        (RUN_TEXT.replace("extra junk", ""), "seed"),
        ("q1 Q0 d1 1 3.0 b\nq1 Q0 d2 2 2.0 a\nq1 Q0 d3 3 1.0 c\n", ""),  # the first tag neither the least nor the most
        ("q1 Q0 d1 1 3.0 a\n\nq1 Q0 d2 2 2.0 a\n", "a"),
    ],
)
def test_text_scanned_in_a_streaming_pass_equals_text_read_in_memory(
    tmp_path: Path, text: str, tag: str
) -> None:
    """Text above `Limits.in_memory_text_bytes` is scanned: the same rows, line numbers and common tag."""
    path = write(tmp_path / "run.txt", text)
    in_memory = load_table(path, "run")
    scanned = load_table(path, "run", limits=Limits(in_memory_text_bytes=1))
    assert not scanned.in_memory and in_memory.in_memory
    assert scanned.metadata.tag == in_memory.metadata.tag == tag
    assert scanned.frame.equals(in_memory.frame)
    assert scanned.counts == in_memory.counts


def test_the_scan_of_a_plain_run_counts_its_queries_in_its_checking_pass(tmp_path: Path) -> None:
    """The counts (and the store's query ids) of a scanned run come from the pass that checked it."""
    path = write(tmp_path / "run.txt", "q2 Q0 d1 1 3.0 a\nq1 Q0 d2 1 2.0 a\nq2 Q0 d3 2 1.0 a\n")
    scanned = load_table(path, "run", limits=Limits(in_memory_text_bytes=1))
    assert scanned.query_rows is not None
    assert dict(scanned.query_rows.select("query_id", "n_rows").iter_rows()) == {"q1": 1, "q2": 2}
    # Where each query's lines begin and end: q2's lines are not together (the store's layout is chosen from this).
    assert sorted(scanned.query_rows.select("query_id", "first_line", "last_line").rows()) == [
        ("q1", 2, 2), ("q2", 1, 3)]
    assert scanned.query_blocks(batch_rows=2) is None
    assert scanned.counts == {"n_rows": 3, "n_unresolved": 0, "n_queries": 2}


@pytest.mark.parametrize(
    ("lines", "proven"),
    [
        (["q2 Q0 d1 1 3.0 a", "q2 Q0 d2 2 2.0 a", "q2 Q0 d3 3 1.0 a", "q1 Q0 d1 1 2.0 a", "q1 Q0 d2 2 1.0 a"], True),
        (["q2 Q0 d1 1 3.0 a", "q2 Q0 d2 2 2.0 a", "q2 Q0 d1 3 1.0 a", "q1 Q0 d1 1 2.0 a"], False),  # d1 twice in q2
        (["q2 Q0 d1 1 3.0 a", "q1 Q0 d1 1 2.0 a", "q2 Q0 d2 2 1.0 a"], False),  # q2 in two stretches
    ],
)
def test_the_checking_pass_of_a_scanned_run_proves_it_free_of_repeated_pairs(
    tmp_path: Path, lines: list[str], proven: bool
) -> None:
    """Asked to (`look_for_repeats`, as the checks before storing ask), the pass that checks and counts a scanned
    run, a batch of whole stretches at a time (here of about 2 rows, so a query's stretch runs on past a batch),
    also finds whether a (query, document) pair could occur twice: a run without one, each query in one stretch,
    is proven free of them (`duplicate_free`), so the checks before storing and the store look no further; a
    repeat, or a query in two stretches, leaves it unproven. A run parsed in memory is not looked at here."""
    path = write(tmp_path / "run.txt", "\n".join(lines) + "\n")
    limits = Limits(in_memory_text_bytes=1, streamed_candidate_part_rows=2)
    scanned = load_table(path, "run", limits=limits, look_for_repeats=True)
    assert scanned.duplicate_free is proven
    assert scanned.counts == load_table(path, "run").counts
    assert not load_table(path, "run", look_for_repeats=True).duplicate_free
    # Not asked to look (the direct evaluation, `ingest-run`), the pass looks at no pair (other limits: the file is
    # read anew, not taken from the table kept above).
    assert not load_table(path, "run", limits=replace(limits, text_piece_bytes=3)).duplicate_free


def test_crlf_text_is_read_like_lf(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.txt", QRELS_TEXT.replace("\n", "\r\n"))
    assert load_table(path, "judgments").frame.rows() == QRELS_ROWS


def test_last_line_without_newline(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.txt", "q1 0 d1 1\nq1 0 d2 2")
    assert load_table(path, "judgments").frame.select("doc_id", "relevance").rows() == [("d1", 1), ("d2", 2)]


@pytest.mark.parametrize("name", ["qrels.txt.gz", "qrels.gz", "qrels"])
def test_gzip_judgments_detected_from_bytes(tmp_path: Path, name: str) -> None:
    # The last name has no .gz suffix: only the magic bytes 1f 8b say it is gzip.
    path = write(tmp_path / name, gzip.compress(QRELS_TEXT.encode()))
    table = load_table(path, "judgments")
    assert table.source_format == "trec.gz"
    assert table.frame.rows() == QRELS_ROWS
    assert table.source_sha256 == sha256_of(path)  # of the bytes as stored, i.e. compressed


@pytest.mark.parametrize("name", ["run.txt.gz", "run-no-suffix"])
def test_gzip_run_detected_from_bytes(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, gzip.compress(RUN_TEXT.encode()))
    table = load_table(path, "run")
    assert table.source_format == "trec.gz"
    assert table.frame.rows() == RUN_ROWS


def test_plain_text_with_gz_suffix_is_read_as_plain(tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt.gz", RUN_TEXT)
    table = load_table(path, "run")
    assert table.source_format == "trec"
    assert table.frame.rows() == RUN_ROWS


# -- InputError messages for text -----------------------------------------------------------------------------------


def test_bad_run_line_names_file_line_and_problem(tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 abc t\n")
    error = input_error(path, "run")
    assert str(error) == f"{path}, line 3: score 'abc' is not a number"
    assert (error.source, error.line, error.problem) == (str(path), 3, "score 'abc' is not a number")


def test_bad_line_number_counts_blank_and_comment_lines(tmp_path: Path) -> None:
    # Lines 1-3 are a comment, a blank line and a good judgment: the bad grade is on line 4 of the file.
    path = write(tmp_path / "qrels.txt", "# c\n\nq1 0 d1 1\nq1 0 d2 1.5\n")
    assert str(input_error(path, "judgments")) == f"{path}, line 4: grade '1.5' is not an integer"


def test_bad_line_in_gzip_file_names_the_path_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "run.gz", gzip.compress(b"q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 NaN t\n"))
    assert str(input_error(path, "run")) == f"{path}, line 2: score 'NaN' is NaN"


def test_several_bad_lines_report_the_first_and_count_the_rest(tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 3.0\nq1 X d2 2 2.0 t\nq1 Q0 d3 3 1.0 t\nq1 Q0 d4 x 0.5 t\n")
    # Lines 1 (5 columns), 2 (bad Q0) and 4 (bad rank) are bad: line 1 reported, two more counted.
    assert str(input_error(path, "run")) == (
        f"{path}, line 1: expected 6 columns `qid Q0 docid rank score tag`, found 5 (2 more bad lines)"
    )


def test_doubled_and_trailing_separators_read_like_single_ones(tmp_path: Path) -> None:
    # The fast reader sees an empty field (null) and leaves these lines to the exact parser, which splits on blanks.
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 3.0 t\nq1 Q0  d2 2 2.0 t\nq1 Q0 d3 3 1.0 t \n")
    assert load_table(path, "run").scan.collect().rows() == [
        ("q1", "d1", 1, 3.0, "t", 1), ("q1", "d2", 2, 2.0, "t", 2), ("q1", "d3", 3, 1.0, "t", 3)
    ]


def test_a_bad_second_column_in_a_well_formed_run_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 3.0 t\nq1 X d2 2 2.0 t\nq1 0 d3 3 1.0 t\n")
    assert str(input_error(path, "run")) == f"{path}, line 2: second column must be Q0 or 0, found 'X' (columns shifted?)"


def test_judgments_read_as_run_fail_on_column_count(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.txt", "q1 0 d1 1\n")
    assert str(input_error(path, "run")) == (f"{path}, line 1: expected 6 columns `qid Q0 docid rank score tag`, found 4: "
                                             "this looks like qrels; the order is QRELS RUN")


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.txt"
    error = input_error(path, "run")
    assert str(error) == f"{path}: no such file"
    assert error.line is None


def test_directory_is_an_input_error(tmp_path: Path) -> None:
    assert str(input_error(tmp_path, "judgments")) == f"{tmp_path}: is a directory, not a judgments file"


def test_non_utf8_text_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.txt", b"q1 0 d\xe91 1\n")  # latin-1 e-acute
    assert str(input_error(path, "judgments")) == f"{path}, line 1: is not UTF-8 text (a byte sequence that is not UTF-8)"


def test_truncated_gzip_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.gz", gzip.compress(b"q1 0 d1 1\n" * 100)[:30])
    assert str(input_error(path, "judgments")).startswith(f"{path}: cannot be read as text: ")


def test_file_of_blank_lines_is_an_empty_table(tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", "\n\n")
    table = load_table(path, "run", allow_empty=True)
    assert table.frame.height == 0
    assert table.frame.schema == pl.Schema(RUN)


def test_zero_byte_file_behaves_like_a_file_of_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", b"")
    assert load_table(path, "run", allow_empty=True).frame.height == 0


@pytest.mark.parametrize("kind", ["run", "judgments"])
def test_a_table_without_rows_is_refused_unless_allowed(tmp_path: Path, kind: str) -> None:
    path = write(tmp_path / "input.txt", "\n \n")
    assert str(input_error(path, kind)) == (
        f"{path}: has no rows (no lines, or only blank or comment lines): an empty "
        f"{'run' if kind == 'run' else 'judgment set'} is refused unless --allow-empty is given")


# -- Parquet ---------------------------------------------------------------------------------------------------------


def test_parquet_judgments(tmp_path: Path) -> None:
    path = tmp_path / "qrels.parquet"
    pl.DataFrame(
        {"query_id": ["q1", "q1", "007"], "doc_id": ["d1", "d2", "007"], "relevance": [3, None, 1]},
        schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64},
    ).write_parquet(path)
    # The set declares unresolved judgments (its sidecar's unresolved_token): a null grade is one of them.
    (tmp_path / "qrels.parquet.meta.toml").write_text('unresolved_token = "?"\n')
    table = load_table(path, "judgments")
    assert (table.source_format, table.unit) == ("parquet", "row")
    assert table.source_sha256 == sha256_of(path)
    assert table.frame.schema == pl.Schema(JUDGMENTS)
    # No iteration column: "0"; source_line = 1-based row; a null grade stays null (an unresolved judgment).
    assert table.frame.rows() == [("q1", "0", "d1", 3, 1), ("q1", "0", "d2", None, 2), ("007", "0", "007", 1, 3)]


def test_parquet_judgments_iteration_column_is_kept_as_string(tmp_path: Path) -> None:
    path = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q1"], "iteration": [7], "doc_id": ["d1"], "relevance": [1]}).write_parquet(path)
    assert load_table(path, "judgments").frame["iteration"].to_list() == ["7"]


def test_parquet_run_with_rank_and_tag(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pl.DataFrame(
        {"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [3.0, 2.0], "rank": [1, 2], "run_tag": ["r", "r"]}
    ).write_parquet(path)
    table = load_table(path, "run")
    assert table.frame.schema == pl.Schema(RUN)
    assert table.frame.rows() == [("q1", "d1", 1, 3.0, "r", 1), ("q1", "d2", 2, 2.0, "r", 2)]


def test_parquet_run_minimal_columns_and_integer_scores(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": pl.Series([5], dtype=pl.Int32)}).write_parquet(path)
    # No rank and no tag columns: both null; the integer score becomes 5.0.
    assert load_table(path, "run").frame.rows() == [("q1", "d1", None, 5.0, None, 1)]


def test_parquet_detected_from_bytes_not_suffix(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]}).write_parquet(path)
    assert load_table(path, "run").source_format == "parquet"


@pytest.mark.parametrize(
    ("kind", "columns", "column"),
    [
        ("judgments", {"query_id": [301], "doc_id": ["d1"], "relevance": [1]}, "query_id"),
        ("judgments", {"query_id": ["301"], "doc_id": [7], "relevance": [1]}, "doc_id"),
        ("run", {"query_id": [301], "doc_id": ["d1"], "score": [1.0]}, "query_id"),
        ("run", {"query_id": ["301"], "doc_id": [7], "score": [1.0]}, "doc_id"),
    ],
)
def test_parquet_integer_identifiers_are_rejected(
    tmp_path: Path, kind: TableKind, columns: dict[str, list[object]], column: str
) -> None:
    path = tmp_path / "table.parquet"
    pl.DataFrame(columns).write_parquet(path)
    assert str(input_error(path, kind)) == (
        f"{path}: column '{column}' has type Int64; identifiers must be strings ('007' is not '7')"
    )


def test_parquet_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"]}).write_parquet(path)
    assert str(input_error(path, "run")) == f"{path}: missing column(s) ['score']; found ['query_id', 'doc_id']"


def test_parquet_float_grades_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1.0]}).write_parquet(path)
    assert str(input_error(path, "judgments")) == (
        f"{path}: column 'relevance' has type Float64; grades must be integers"
    )


def test_parquet_string_scores_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": ["1.0"]}).write_parquet(path)
    assert str(input_error(path, "run")) == f"{path}: column 'score' has type String; scores must be numbers"


def test_parquet_bad_rows_name_the_row(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pl.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "score": [1.0, None, float("nan")]}).write_parquet(
        path
    )
    # Row 2 has a null score, row 3 a NaN: row 2 is reported, row 3 counted.
    assert str(input_error(path, "run")) == f"{path}, row 2: score is null (1 more bad rows)"


def test_parquet_null_identifier_names_the_row(tmp_path: Path) -> None:
    path = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q1", None], "doc_id": ["d1", "d2"], "relevance": [1, 1]}).write_parquet(path)
    assert str(input_error(path, "judgments")) == f"{path}, row 2: query_id is null"


def test_corrupt_parquet_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.parquet", b"PAR1 not really parquet")
    assert str(input_error(path, "judgments")).startswith(f"{path}: cannot be read as Parquet: ")


def test_parquet_grade_out_of_int32_range_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [2**40]}).write_parquet(path)
    with pytest.raises(InputError):
        load_table(path, "judgments")


def test_parquet_non_integer_rank_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0], "rank": [1.5]}).write_parquet(path)
    with pytest.raises(InputError):
        load_table(path, "run")


# -- plain text read in pieces ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text",
    [PIECES_RUN, PIECES_RUN.replace("\n", "\r\n"), PIECES_RUN.rstrip("\n"), PIECES_RUN.replace(" ", "\t")],
    ids=["lf-with-blank-lines", "crlf", "no-final-newline", "tabs"],
)
@pytest.mark.parametrize("piece_bytes", [30, 64, 500])
def test_text_read_in_pieces_equals_one_read(
    tmp_path: Path, text: str, piece_bytes: int
) -> None:
    """Pieces end after a newline: every line lands whole in one piece, and blank lines still count for the
    line numbers. (Lines are longer than the smallest piece, so no piece is only a blank line.)"""
    path = write(tmp_path / "run.txt", text)
    whole = load_table(path, "run").frame
    limits = Limits(text_piece_bytes=piece_bytes)
    fast = read_trec_fast(path, gzipped=False, kind="run", limits=limits)
    assert fast is not None and fast.common_tag == "tag-x"
    pieces = load_table(path, "run", limits=limits).frame
    assert pieces.equals(whole)
    assert pieces["source_line"].to_list()[:6] == [1, 2, 3, 4, 6, 7]


def test_piece_ends_fall_after_newlines(tmp_path: Path) -> None:
    data = b"a\n" + b"x" * 200_000 + b"\nb\nc"  # a line longer than one probe (64 KiB)
    path = write(tmp_path / "t.txt", data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert judged.flows.store.readers._piece_ends(fd, len(data), 1) == [2, 200_003, 200_005, len(data)]
    finally:
        os.close(fd)


def test_rank_beyond_int32_is_read_whole(tmp_path: Path) -> None:
    """The fast reader takes ranks as Int32; a larger one sends the file to the exact parser (Int64)."""
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 3000000000 2.0 t\n")
    frame = load_table(path, "run").frame
    assert frame.schema == pl.Schema(RUN)
    assert frame["source_rank"].to_list() == [1, 3_000_000_000]


def test_a_scanned_run_is_read_once_per_version_of_its_file(tmp_path: Path) -> None:
    """A flow checks a run, then stores it: a run too large to hold (here: any, by the limits) is read and checked
    once, until its file changes; a run parsed in memory is read again (its rows are not kept)."""
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 tag\nq1 Q0 d2 2 1.0 tag\n")
    scanned = Limits(in_memory_text_bytes=1)
    first = load_table(run, "run", limits=scanned)
    assert not first.in_memory
    assert load_table(run, "run", limits=scanned) is first
    assert load_table(run, "run") is not load_table(run, "run")  # parsed in memory
    run.write_text("q1 Q0 d1 1 2.0 tag\nq1 Q0 d3 2 1.0 tag\n")  # same size, new content
    later = run.stat().st_mtime_ns + 1_000_000
    os.utime(run, ns=(later, later))
    changed = load_table(run, "run", limits=scanned)
    assert changed is not first
    assert changed.scan.collect()["doc_id"].to_list() == ["d1", "d3"]


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (["a"] * 6, "a"),
        (["a", "a", None, "a", "a", "a"], "a"),  # no tag is not another tag
        ([None] * 6, ""),
        (["a", "a", "a", "a", "a", "b"], ""),  # another tag in a later row group only
        (["b", "a", "a", "a", "a", "a"], ""),
    ],
)
def test_a_parquet_runs_common_tag_from_its_own_column(tmp_path: Path, tags: list, expected: str) -> None:
    path = tmp_path / "run.parquet"
    pl.DataFrame({
        "query_id": ["q1"] * 6, "doc_id": [f"d{i}" for i in range(6)], "score": [6.0, 5, 4, 3, 2, 1], "run_tag": tags,
    }).write_parquet(path, row_group_size=2)  # statistics per two rows: most groups are skipped by them
    assert load_table(path, "run").metadata.tag == expected


def test_a_parquet_runs_problems_in_later_row_groups_are_named(tmp_path: Path) -> None:
    """Row groups without nulls are skipped by their statistics while looking for problems: those in the others
    are still found, and the first one named with the count of the rest."""
    path = tmp_path / "run.parquet"
    docs: list[str | None] = [f"d{i}" for i in range(40)]
    scores = [float(40 - i) for i in range(40)]
    docs[33], scores[21] = None, float("nan")
    pl.DataFrame({"query_id": ["q1"] * 40, "doc_id": docs, "score": scores}).write_parquet(path, row_group_size=4)
    assert str(input_error(path, "run")) == f"{path}, row 22: score is NaN (1 more bad rows)"
