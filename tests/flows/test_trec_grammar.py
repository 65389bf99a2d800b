"""One TREC grammar (transforms/trec_grammar.py, docs/trec-format.md) for every reader of TREC text: the fast reader
(Polars' CSV reader, flows/store/readers.py) returns exactly the exact parser's rows or declines, and a run is stored
with the same files and run id whether it is ingested locally (parsed in memory, then stored by a second pass), from
its reading pass (`read_run`, a scanned file) or in pieces (flows/store/scaled.py, the route of `ingest-run --dask`).

Property tests generate files with tabs or spaces, blanks beside separators, comment and blank lines, CRLF ends, a
byte order mark, non-ASCII ids (non-ASCII white space among them), extra run columns, bad lines and gzip."""

from __future__ import annotations

import gzip
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

import polars as pl
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import judged
import judged.flows.pipeline.flows as flows_module
import judged.flows.store.warehouse as warehouse_module
from judged.flows.cli.common import read_weights
from judged.flows.engine.limits import Limits
from judged.flows.pipeline.tasks import ingest_file
from judged.flows.store.hashing import hash_in_background
from judged.flows.store.kinds import input_kind
from judged.flows.store.readers import TableKind, load_table, read_lines, read_trec_fast
from judged.flows.store.scaled import Local, cut_pieces, plan_pieces, survey_piece, write_shard_group
from judged.flows.store.warehouse import Store
from judged.schemas.provenance import RunMetadata
from judged.transforms.errors import InputError
from judged.transforms.parse import in_contract, parse_trec_qrels, parse_trec_run, raise_first_problem
from tests.flows.test_ordered_ingest import files_of

FIXED_CLOCK = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
QRELS_LINE = "q1\t0\td1 \t1\n"  # issue 36: a blank beside a tab
RUN_TEXT = "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0.5 t\n"


# -- the finding ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("comment", ["", "# judged by pool 1\n"], ids=["plain", "with a comment"])
def test_a_blank_beside_a_tab_is_part_of_the_separator(tmp_path: Path, comment: str) -> None:
    """`q1<TAB>0<TAB>d1 <TAB>1` judges d1 (trec_eval strips the blank), whichever reader takes the file: with a
    comment line the exact parser reads it, without one the fast reader did, keeping `d1 `, and nDCG@5 was 0."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text(comment + QRELS_LINE)
    run.write_text(RUN_TEXT)
    evaluation = judged.evaluate(qrels, run, measures="nDCG@5", preset="trec_eval")
    # d1 (grade 1) at rank 1 and the ideal list d1: DCG@5 = IDCG@5 = 1.
    assert evaluation.per_query["value"].to_list() == [1.0]
    assert load_table(qrels, "judgments").frame["doc_id"].to_list() == ["d1"]


def test_a_run_with_a_blank_beside_a_tab_is_stored_alike_in_pieces_and_locally(tmp_path: Path) -> None:
    """The finding's Dask half, in process (`in_pieces` runs the workers' functions): a piece holding a line only
    the exact parser reads and pieces the fast reader takes stored `d1 ` and `d1` in one run, under the run id of a
    local ingest that stores `d1` throughout."""
    lines = [f"q{query}\tQ0\td{doc} \t{doc}\t{10 - doc}\tt" for query in range(1, 30) for doc in range(1, 6)]
    lines[100] = "#" + lines[100]  # a comment: its piece goes to the exact parser
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    limits = Limits(rows_per_shard=20, piece_bytes=400)
    with mock.patch.object(warehouse_module, "now_utc", lambda: FIXED_CLOCK):
        local = files_of(tmp_path / "local", ingest_file(Store(tmp_path / "local"), run, "run", limits=limits).id)
        pieces = in_pieces(run, tmp_path / "pieces", limits)
    assert pieces == local
    stored = pl.read_parquet(tmp_path / "local" / "run_rows" / local[0] / "*.parquet")
    assert stored["doc_id"].str.contains(" ").sum() == 0 and stored.height == 144


def test_query_weights_are_split_by_the_same_grammar(tmp_path: Path) -> None:
    """A query weights file's ids are the runs' text: a blank beside a tab is a separator, non-ASCII white space part
    of the id, and comment lines (indented too) are skipped."""
    weights = tmp_path / "weights.txt"
    weights.write_text("\ufeff# weights\nq1 \t0.5\r\n  # indented\nq\u00a0x\t2\n\n")
    assert read_weights(weights) == (("q1", 0.5), ("q\u00a0x", 2.0))


# -- fast = exact ---------------------------------------------------------------------------------------------------

BLANK_RUNS = st.text(" \t\r\v\f", min_size=1, max_size=3)
# Ids of the characters TREC ids hold, `#` inside one, quotes (no quoting anywhere), and non-ASCII ones, white space
# among them (no blank of the grammar: it belongs to its field).
ID_CHARACTERS = "abqXY0129_-.:#\"'é中\u00a0\u3000"
IDS = st.builds(str.__add__, st.sampled_from(ID_CHARACTERS.replace("#", "")), st.text(ID_CHARACTERS, max_size=4))
SCORES = st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                   st.sampled_from(["1", "+2", "-0", ".5", "5.", "1e3", "1E-2", "007", "0.000001"]))
BAD_FIELDS = {"run": ["x", "1.5e", "nan", "inf", "1_0"], "judgments": ["x", "1.5", "99999999999", ""]}


@dataclass(frozen=True)
class TrecFile:
    """A generated file: its bytes (gzipped or not), and whether it is plainly what the fast reader takes."""

    data: bytes
    gzipped: bool
    plain: bool


# What may make a line other than plain, one at a time: a run of blanks (or the other separator) beside a separator
# (the likeliest: the finding's) or at either end of the line, a comment or blank line after it, a run's columns
# beyond the sixth, a bad field.
NOISES = ["blank beside"] * 3 + ["blank before", "blank after", "skipped line after", "extra columns", "bad field"]


@st.composite
def trec_files(
    draw: st.DrawFn, kind: TableKind, gzip_allowed: bool = True, most_noises: int = 2, least_queries: int = 1,
    noises: Sequence[str] = NOISES,
) -> TrecFile:
    """A TREC file of `kind`: unique queries in stretches of unique documents, each line's fields separated by the
    file's separator (a tab or a space), empty lines between some; LF or CRLF ends, maybe a byte order mark. Up to
    `most_noises` lines carry one of the `noises` each, the rest are plain, so the fast reader's checks meet each
    noise in a file it would otherwise take."""
    separator = draw(st.sampled_from(["\t", " "]))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    rows: list[list[str]] = []
    for query in draw(st.lists(IDS, min_size=least_queries, max_size=6, unique=True)):
        for rank, doc in enumerate(draw(st.lists(IDS, min_size=1, max_size=6, unique=True)), start=1):
            rows.append([query, draw(st.sampled_from(["Q0", "0"])), doc, str(rank), draw(SCORES), "tag"]
                        if kind == "run" else [query, draw(st.sampled_from(["0", "Q7"])), doc,
                                               str(draw(st.integers(-2, 4)))])
    kinds = [noise for noise in noises if not (noise == "extra columns" and kind == "judgments")]
    noisy = dict(draw(st.lists(st.tuples(st.integers(0, len(rows) - 1), st.sampled_from(kinds)),
                               max_size=most_noises)))
    lines: list[str] = []
    for number, fields in enumerate(rows):
        noise = noisy.get(number)
        if noise == "bad field":
            fields[draw(st.sampled_from(range(1, len(fields))))] = draw(st.sampled_from(BAD_FIELDS[kind]))
        elif noise == "extra columns":
            fields.append(draw(st.sampled_from(["extra", "more columns"])))
        gaps = [separator] * (len(fields) - 1)
        if noise == "blank beside":
            blanks = draw(BLANK_RUNS)
            gaps[draw(st.sampled_from(range(len(gaps))))] = draw(
                st.sampled_from([blanks + separator, separator + blanks, blanks]))
        line = "".join(field + gap for field, gap in zip(fields, [*gaps, ""], strict=True))
        lines.append(draw(BLANK_RUNS) + line if noise == "blank before" else
                     line + draw(BLANK_RUNS) if noise == "blank after" else line)
        if noise == "skipped line after":
            lines.append(draw(st.sampled_from(["# a comment", "  # indented", f"#{fields[0]} Q0 {fields[2]} 1 1 t",
                                               "   ", "\t", "\r"])))
        elif draw(st.integers(0, 9)) == 9:
            lines.append("")  # an empty line: plain
    text = ("\ufeff" if draw(st.booleans()) else "") + end.join(lines) + (end if draw(st.booleans()) else "")
    gzipped = gzip_allowed and draw(st.integers(0, 3)) == 3
    data = gzip.compress(text.encode(), mtime=0) if gzipped else text.encode()
    return TrecFile(data, gzipped, plain=not noisy)


# The fast reader's routes: in memory in one piece or in pieces of a few lines, and scanned in small batches.
FAST_ROUTES = {
    "in memory": Limits(),
    "in pieces": Limits(text_piece_bytes=64),
    "scanned": Limits(in_memory_text_bytes=1, streamed_candidate_part_rows=7),
}


def exact_rows(path: Path, kind: TableKind, gzipped: bool) -> pl.DataFrame:
    """The exact parser's rows of the file in the kind's contract (InputError on its first bad line)."""
    lines = read_lines(path, gzipped)
    parsed = (parse_trec_qrels(lines) if kind == "judgments" else parse_trec_run(lines)).collect()
    raise_first_problem(parsed, str(path))
    return in_contract(parsed.lazy(), input_kind(kind).input_contract).collect()


@pytest.mark.parametrize("route", list(FAST_ROUTES))
@pytest.mark.parametrize("kind", ["run", "judgments"])
@settings(max_examples=max(1, settings.default.max_examples // 6), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_reader_returns_the_exact_rows_or_declines(kind: TableKind, route: str, data: st.DataObject) -> None:
    generated = data.draw(trec_files(kind))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.txt"
        path.write_bytes(generated.data)
        try:
            exact: pl.DataFrame | InputError = exact_rows(path, kind, generated.gzipped)
        except InputError as error:
            exact = error
        fast = read_trec_fast(path, generated.gzipped, kind, FAST_ROUTES[route])
        event(f"{'plain' if generated.plain else 'noisy'} file, {'declined' if fast is None else 'read fast'}")
        if fast is None:
            assert not generated.plain, "the fast reader declined a plain file"
            return
        assert isinstance(exact, pl.DataFrame), f"the fast reader read a file the exact parser refuses: {exact}"
        assert fast.rows.collect().equals(exact)


# -- local = one pass = in pieces -----------------------------------------------------------------------------------

ROWS_PER_SHARD = 10
LOCAL = Limits(rows_per_shard=ROWS_PER_SHARD)
ONE_PASS = Limits(rows_per_shard=ROWS_PER_SHARD, in_memory_text_bytes=1, streamed_candidate_part_rows=5)
PIECES = Limits(rows_per_shard=ROWS_PER_SHARD, piece_bytes=60)


def in_pieces(run: Path, root: Path, limits: Limits) -> tuple[str, dict[str, bytes]] | None:
    """What `ingest-run --dask` stores (`flows.pipeline.flows.ingest_in_pieces`), its workers' functions run here:
    None when the run is not stored in pieces (then it is ingested locally)."""
    pieces = cut_pieces(run, limits)
    if isinstance(pieces, Local):
        return None
    surveys = [survey_piece(str(run), pieces.source_format, RunMetadata(), limits, w) for w in pieces.windows]
    planned = plan_pieces(run, pieces, surveys, RunMetadata(), hash_in_background([run])[run], limits)
    if isinstance(planned, Local):
        return None

    def write(folder: Path, part_metadata: dict[str, str]) -> None:
        for group in planned.groups:
            write_shard_group(str(run), planned.source_format, planned.metadata, limits, group, planned.shards,
                              planned.table_id, str(folder), part_metadata)

    return files_of(root, Store(root).store_by_position(planned, planned.blocks, write).id)


def outcome(store: Callable[[], tuple[str, dict[str, bytes]] | None]) -> tuple[str, dict[str, bytes]] | str | None:
    """What a route stored (its run id and files), or the message of its InputError."""
    try:
        return store()
    except InputError as error:
        return str(error)


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Store]:
    """A warehouse for each route, kept for every example: a run is stored once, under its content's id."""
    root = tmp_path_factory.mktemp("routes")
    return {route: Store(root / route).ensure() for route in ("local", "one pass", "pieces")}


@settings(max_examples=max(1, settings.default.max_examples // 8), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(generated=trec_files("run", gzip_allowed=False, most_noises=4, least_queries=3, noises=NOISES[:-1]))
def test_local_one_pass_and_pieces_store_the_same_files(warehouses: dict[str, Store], generated: TrecFile) -> None:
    local, one_pass, pieces = warehouses.values()
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(warehouse_module, "now_utc", lambda: FIXED_CLOCK):
        run = Path(folder) / "run.txt"
        run.write_bytes(generated.data)
        locally = outcome(lambda: files_of(local.root, local.store_table(load_table(run, "run", limits=LOCAL),
                                                                          LOCAL).id))
        in_one_pass = outcome(lambda: files_of(one_pass.root, ingest_file(one_pass, run, "run", limits=ONE_PASS).id))
        by_pieces = outcome(lambda: in_pieces(run, pieces.root, PIECES))
    assert in_one_pass == locally
    assert by_pieces is None or by_pieces == locally


def test_a_cluster_stores_the_finding_s_run_as_a_local_ingest(
    prefect_harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ingest_run` with `scale_out` on a LocalCluster of two worker processes: the run of blanks beside tabs and a
    comment stored with the files and run id of a local ingest, in several pieces."""
    from distributed import LocalCluster

    lines = [f"q{query}\tQ0\td{doc} \t{doc}\t{10 - doc}\tt" for query in range(1, 30) for doc in range(1, 6)]
    lines[100] = "# " + lines[100]
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    limits = replace(PIECES, piece_bytes=400)
    monkeypatch.setattr(warehouse_module, "now_utc", lambda: FIXED_CLOCK)
    monkeypatch.setenv("PREFECT_API_URL", prefect_harness)
    local = files_of(tmp_path / "local", ingest_file(Store(tmp_path / "local"), run, "run", limits=limits).id)
    monkeypatch.setattr(flows_module, "ingest_file_task", lambda *args, **kwargs: pytest.fail("ingested locally"))
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        flow = flows_module.ingest_run.with_options(task_runner=flows_module.task_runner(cluster.scheduler_address))
        report = flow(str(run), str(tmp_path / "dask"), scale_out=True, limits=limits)
    assert files_of(tmp_path / "dask", report.id) == local
