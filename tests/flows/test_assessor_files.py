"""Judgment sets that name their assessors (flows/store/assessor_files.py, flows/store/warehouse.py): several TREC
files read into one set, one per assessor, or a Parquet table with an `assessor` column; the identity that covers
the names; the refusals, each naming the file, line or option; and the set stored with its assessors and their
agreement, seen through the catalog's views. A set that names no assessor is read and stored as before. No Prefect:
the store is called directly."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from judged.flows.store.assessor_files import load_judgments, merged_sidecars, parse_assessor_kinds
from judged.flows.store.readers import load_table
from judged.flows.store.sql import open_readonly
from judged.flows.store.warehouse import Store
from judged.schemas.spec import SpecError
from judged.transforms.errors import InputError, UsageError
from tests.conftest import REPO

# Two assessors of two queries: they share (q1, d1), (q1, d2) and (q2, d1); d3 and d4 have one grade each.
ALICE = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 3\n"
BOB = "q1 0 d1 1\nq1 0 d2 1\nq1 0 d4 2\nq2 0 d1 2\n"
SEED_QRELS = REPO / "data" / "seed" / "qrels.txt"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "alice.txt").write_text(ALICE)
    (tmp_path / "bob.txt").write_text(BOB)
    return tmp_path / "alice.txt", tmp_path / "bob.txt"


def sql(store: Store, query: str) -> list[tuple]:
    store.refresh_catalog()
    connection = open_readonly(store)
    try:
        return connection.sql(query).fetchall()
    finally:
        connection.close()


def test_two_files_make_one_set_whose_rows_name_their_assessor(files: tuple[Path, Path]) -> None:
    table = load_judgments(files, ["alice", "bob"])
    rows = table.frame
    assert rows.columns == ["query_id", "iteration", "doc_id", "relevance", "assessor", "source_line"]
    assert rows["assessor"].to_list() == ["alice"] * 4 + ["bob"] * 4
    assert rows["source_line"].to_list() == [1, 2, 3, 4] * 2  # each file's own lines
    assert table.source == f"{files[0]}, {files[1]}" and table.unit == "line"
    # The order of the files is no part of the set; the names are.
    assert load_judgments(files[::-1], ["bob", "alice"]).table_id == table.table_id
    assert load_judgments(files, ["alice", "carol"]).table_id != table.table_id
    assert load_judgments(files, ["bob", "alice"]).table_id != table.table_id  # the grades change hands


def test_one_file_with_a_name_is_another_set_than_without(files: tuple[Path, Path]) -> None:
    alone = load_judgments(files[:1])
    assert "assessor" not in alone.frame.columns
    assert alone.table_id == load_table(files[0], "judgments").table_id  # exactly as before
    named = load_judgments(files[:1], ["alice"])
    assert named.frame["assessor"].unique().to_list() == ["alice"] and named.table_id != alone.table_id


def test_a_set_without_assessors_keeps_its_id() -> None:
    # The id main gave the seed's judgments before assessors were recorded.
    assert load_judgments([SEED_QRELS]).table_id == "894ac668e2bc0ec88aec21c7e7b8dafb"


def test_a_pair_graded_twice_by_one_assessor_is_refused_naming_the_file_and_lines(
    files: tuple[Path, Path]
) -> None:
    files[1].write_text(BOB + "q1 0 d2 3\n")
    with pytest.raises(InputError, match=r"bob\.txt, line 5: assessor 'bob' grades query 'q1', document 'd2' twice "
                                         r"with different grades, at lines 2 and 5"):
        load_judgments(files, ["alice", "bob"])


def test_the_same_pair_graded_by_two_assessors_is_two_opinions(files: tuple[Path, Path]) -> None:
    table = load_judgments(files, ["alice", "bob"])
    both = table.frame.filter((pl.col("query_id") == "q1") & (pl.col("doc_id") == "d2"))
    assert both.select("assessor", "relevance").rows() == [("alice", 0), ("bob", 1)]


@pytest.mark.parametrize(("names", "message"), [
    ([], "2 judgments files are one set only when each names its assessor"),
    (["alice"], "2 judgments file(s) and 1 --assessor name(s)"),
    (["alice", "alice"], "--assessor alice: is given for two files"),
    (["alice", " bob"], "has blanks around it"),
])
def test_names_that_do_not_fit_the_files_are_usage_errors(
    files: tuple[Path, Path], names: list[str], message: str
) -> None:
    with pytest.raises(UsageError) as raised:
        load_judgments(files, names)
    assert message in str(raised.value)


def test_a_parquet_table_names_its_assessors_in_its_column(tmp_path: Path, files: tuple[Path, Path]) -> None:
    frame = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d1", "d1"], "relevance": [1, 2, 0],
                          "assessor": ["x", "y", "x"]})
    frame.write_parquet(tmp_path / "qrels.parquet")
    table = load_judgments([tmp_path / "qrels.parquet"])
    assert table.frame["assessor"].to_list() == ["x", "y", "x"]
    with pytest.raises(UsageError, match="is a Parquet table, which names its assessors in an `assessor` column"):
        load_judgments([tmp_path / "qrels.parquet", files[0]], ["p", "alice"])
    frame.with_columns(assessor=pl.lit(None, pl.String)).write_parquet(tmp_path / "unnamed.parquet")
    assert "assessor" not in load_judgments([tmp_path / "unnamed.parquet"]).frame.columns  # names none
    frame.with_columns(assessor=pl.Series(["x", None, "x"])).write_parquet(tmp_path / "mixed.parquet")
    with pytest.raises(InputError, match="mixed.parquet, row 2: assessor is null while other rows name theirs"):
        load_judgments([tmp_path / "mixed.parquet"])
    frame.with_columns(query_id=pl.lit("q1")).filter(pl.col("assessor") == "x").write_parquet(tmp_path / "twice.parquet")
    with pytest.raises(InputError, match="twice.parquet, row 2: assessor 'x' grades query .* twice"):
        load_judgments([tmp_path / "twice.parquet"])
    frame.with_columns(assessor=pl.lit(3)).write_parquet(tmp_path / "numbers.parquet")
    with pytest.raises(InputError, match="column 'assessor' has type Int32; assessors are named by text"):
        load_judgments([tmp_path / "numbers.parquet"])


def test_kinds_from_options_and_sidecars(tmp_path: Path, files: tuple[Path, Path]) -> None:
    assert parse_assessor_kinds(["alice=human", "bob=model:gpt-4o"]) == {"alice": "human", "bob": "model:gpt-4o"}
    for bad, message in (("alice", "is not NAME=KIND"), ("alice=robot", "kind 'robot' is none of"),
                         ("=human", "is not NAME=KIND")):
        with pytest.raises(SpecError, match=f"--assessor-kind '{bad}': {message}"):
            parse_assessor_kinds([bad])
    with pytest.raises(SpecError, match="is given the kinds 'human' and 'adjudicator'"):
        parse_assessor_kinds(["alice=human", "alice=adjudicator"])
    (tmp_path / "alice.txt.meta.toml").write_text(
        'name = "panel"\n[assessors]\ndescription = "two judges"\nkinds = {alice = "human"}\n')
    (tmp_path / "bob.txt.meta.toml").write_text('name = "panel"\nrelevant_from = 2\n')
    merged = merged_sidecars(list(files))
    assert (merged.name, merged.relevant_from, merged.assessors.description) == ("panel", 2, "two judges")
    table = load_judgments(files, ["alice", "bob"], kinds={"bob": "adjudicator"})
    assert table.metadata.assessor_kinds == {"alice": "human", "bob": "adjudicator"}  # type: ignore[union-attr]
    with pytest.raises(InputError, match="a kind is declared for assessor\\(s\\) 'carol' .* the judgments name "
                                         "alice, bob"):
        load_judgments(files, ["alice", "bob"], kinds={"carol": "human"})
    with pytest.raises(InputError, match="the judgments name no assessor"):
        load_judgments(files[:1], kinds={"alice": "human"})
    (tmp_path / "bob.txt.meta.toml").write_text('name = "other"\n')
    with pytest.raises(InputError, match=r"bob\.txt\.meta\.toml: name is 'other' here and 'panel' in .*alice\.txt"):
        merged_sidecars(list(files))


def test_the_stored_set_shows_its_rows_assessors_and_agreement(tmp_path: Path, files: tuple[Path, Path]) -> None:
    store = Store(tmp_path / "w")
    table = load_judgments(files, ["alice", "bob"], kinds={"alice": "human", "bob": "model:gpt-4o"})
    set_id = store.store_table(table).id
    assert sql(store, "SELECT assessor, count(*) FROM judgments GROUP BY ALL ORDER BY 1") == [("alice", 4), ("bob", 4)]
    assert sql(store, "SELECT assessor, assessor_kind, n_judgments, n_queries FROM assessors") == [
        ("alice", "human", 4, 2), ("bob", "model:gpt-4o", 4, 2)]
    # Shared pairs (q1, d1), (q1, d2), (q2, d1): alice 1, 0, 3 and bob 1, 1, 2: one in three the same.
    (row,) = sql(store, "SELECT judgment_set_id, assessor_a, assessor_b, shared_pairs, agreement, relevant_from "
                        "FROM assessor_agreement")
    assert row == (set_id, "alice", "bob", 3, pytest.approx(1 / 3), 1)
    # One assessor's grades: exactly the rows of that file.
    assert sql(store, "SELECT doc_id, relevance FROM judgments WHERE assessor = 'bob' AND query_id = 'q1' "
                      "ORDER BY doc_id") == [("d1", 1), ("d2", 1), ("d4", 2)]


def test_a_set_without_assessors_is_stored_as_before(tmp_path: Path) -> None:
    store = Store(tmp_path / "w")
    set_id = store.store_table(load_judgments([SEED_QRELS])).id
    parts = list((store.root / "judgments" / set_id).glob("*.parquet"))
    assert parts and all("assessor" not in pl.read_parquet_schema(part) for part in parts)
    assert not (store.root / "assessors" / f"{set_id}.parquet").exists()
    assert not (store.root / "assessor_agreement" / f"{set_id}.parquet").exists()
    assert sql(store, "SELECT count(*), count(assessor) FROM judgments") == [(3, 0)]
    assert sql(store, "SELECT count(*) FROM assessors") == [(0,)]


def test_a_stored_set_refuses_kinds_of_nobody_and_writes_nothing(tmp_path: Path, files: tuple[Path, Path]) -> None:
    from dataclasses import replace

    store = Store(tmp_path / "w")
    table = load_judgments(files, ["alice", "bob"])
    strange = replace(table, metadata=table.metadata.with_assessors(kinds={"carol": "human"}))  # type: ignore[union-attr]
    with pytest.raises(InputError, match="a kind is declared for assessor\\(s\\) 'carol'"):
        store.store_table(strange)
    assert not list((store.root / "judgment_sets").glob("[!_]*.parquet"))
    assert not list((store.root / "judgments").glob("[!_]*"))


def test_a_warehouse_written_before_assessors_reads_its_views(tmp_path: Path) -> None:
    """Its files stay as they are: no `assessor` column, no assessors' tables. `judged sql` reads it (read-only: no
    writer has added the new tables' empty files yet) with the new columns and views empty."""
    store = Store(tmp_path / "w")
    store.store_table(load_judgments([SEED_QRELS]))
    store.refresh_catalog()
    for folder in ("assessors", "assessor_agreement"):  # as a warehouse of the previous version has them: absent
        for path in (store.root / folder).glob("*"):
            path.unlink()
        (store.root / folder).rmdir()
    connection = open_readonly(store)
    try:
        assert connection.sql("SELECT count(*), count(assessor) FROM judgments").fetchall() == [(3, 0)]
        assert connection.sql("SELECT count(*) FROM assessor_agreement").fetchall() == [(0,)]
        assert connection.sql("SELECT * FROM assessors").columns == ["judgment_set_id", "assessor", "assessor_kind",
                                                                    "n_judgments", "n_unresolved", "n_queries"]
    finally:
        connection.close()
