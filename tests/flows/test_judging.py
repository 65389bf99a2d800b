"""The judging loop's stored tables (flows/pipeline/judging.py) against their declarations, without Prefect: a
worklist and a judgment version that extends another store nulls in exactly the columns declared nullable."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from judged.flows.pipeline.judging import ancestors, extend_judgments, make_worklist, resolve_parent
from judged.flows.store.readers import load_table
from judged.flows.store.warehouse import Store
from judged.schemas.provenance import METHOD_VERSION, JudgmentSetMetadata, RunMetadata
from judged.schemas.spec import build_spec
from judged.schemas.tables import JUDGMENT_LINEAGE_TABLE, WORKLISTS_TABLE, Table
from judged.transforms.errors import InputError
from tests.helpers import tree_listing

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n"
# q1: d3 and d4 unjudged in the top 3; q2: d2 and d3.
RUN = "q1 Q0 d1 1 3.0 toy\nq1 Q0 d3 2 2.0 toy\nq1 Q0 d4 3 1.0 toy\nq2 Q0 d2 1 2.0 toy\nq2 Q0 d3 2 1.0 toy\n"


def stored(tmp_path: Path) -> Store:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    store = Store(tmp_path / "warehouse")
    store.store_table(load_table(tmp_path / "qrels.txt", "judgments", JudgmentSetMetadata(name="toy", version="v1")))
    store.store_table(load_table(tmp_path / "run.txt", "run", RunMetadata(tag="toy")))
    return store


def assert_null_where_declared(table: Table, path: Path) -> None:
    frame = table.validate(pl.read_parquet(path))
    assert tuple(c for c in frame.columns if frame[c].null_count()) == table.nullable, table.name


def test_worklist_and_lineage_are_null_exactly_where_declared(tmp_path: Path) -> None:
    """Their nullability is declared, not guessed: a worklist without --topics has no query text (and nothing else
    null), an extension answering no worklist has no worklist id (and nothing else null)."""
    store = stored(tmp_path)
    worklist = make_worklist(store, "toy", build_spec("trec_eval", cutoffs=(3,)), 3, [], [])
    assert worklist.rows.height == 3
    assert_null_where_declared(WORKLISTS_TABLE, store.root / "worklists" / f"{worklist.worklist_id}.parquet")

    answers = tmp_path / "answers.txt"
    answers.write_text("".join(f"{q} 0 {d} 1\n" for q, d in worklist.rows.select("query_id", "doc_id").rows()))
    extension = extend_judgments(store, str(answers), "toy", "v2")
    assert extension.n_added == 3
    assert_null_where_declared(JUDGMENT_LINEAGE_TABLE, store.root / "judgment_lineage" / f"{extension.store.id}.parquet")


def test_runs_sharing_a_tag_are_each_in_the_worklist_labelled_by_run_id(tmp_path: Path) -> None:
    """Two stored runs tagged `toy`: both are ranked from (before, the one whose id sorts last was kept and the
    other dropped, with its unjudged documents), each labelled as `compare` labels runs that share a name."""
    from judged.flows.pipeline.judging import chosen_runs

    store = stored(tmp_path)
    (tmp_path / "other.txt").write_text("q1 Q0 d5 1 3.0 toy\nq1 Q0 d1 2 2.0 toy\n")  # d5: unjudged, only here
    store.store_table(load_table(tmp_path / "other.txt", "run", RunMetadata(tag="toy")))
    run_ids = sorted(pl.concat([pl.read_parquet(p) for p in store.record_files("run")])["run_id"].to_list())
    labels = {f"toy [{run_id[:8]}]": run_id for run_id in run_ids}
    assert chosen_runs(store, [], []) == labels
    assert chosen_runs(store, [], ["toy"]) == labels
    worklist = make_worklist(store, "toy", build_spec("trec_eval", cutoffs=(3,)), 10, [], ["toy"])
    assert ("q1", "d5") in worklist.rows.select("query_id", "doc_id").rows()
    assert worklist.rows.height == 5  # q1: d3, d4, d5; q2: d2, d3
    assert {name for names in worklist.rows["evaluations"] for name in names} == set(labels)


def test_a_version_label_means_one_set(tmp_path: Path) -> None:
    """`name@version` names one set: a taken label is refused (on a plain store and on an extension) unless it is
    the very same set; a rerun of an extension writes nothing; an answer off the declared scale and an unknown
    worklist are refused before anything is written."""
    store = stored(tmp_path)
    (tmp_path / "answers.txt").write_text("q1 0 d3 1\n")
    v2 = extend_judgments(store, str(tmp_path / "answers.txt"), "toy@v1", "v2")
    assert ancestors(store, v2.store.id) == [resolve_parent(store, "toy@v1")]
    before = tree_listing(store.root)
    assert not extend_judgments(store, str(tmp_path / "answers.txt"), "toy@v1", "v2").store.created
    (tmp_path / "other.txt").write_text("q1 0 d4 1\n")
    with pytest.raises(InputError, match="judgment set 'toy' has a version 'v1' already"):
        extend_judgments(store, str(tmp_path / "other.txt"), "toy@v2", "v1")
    with pytest.raises(InputError, match="judgment set 'toy' has a version 'v2' already"):
        store.store_table(load_table(tmp_path / "other.txt", "judgments", JudgmentSetMetadata(name="toy",
                                                                                              version="v2")))
    assert not store.store_table(
        load_table(tmp_path / "qrels.txt", "judgments", JudgmentSetMetadata(name="toy", version="v1"))).created
    with pytest.raises(InputError, match="--worklist: no worklist with id 'nope'"):
        extend_judgments(store, str(tmp_path / "other.txt"), "toy", "v3", worklist_id="nope")
    assert tree_listing(store.root) == before

    scaled = Store(tmp_path / "scaled")
    scaled.store_table(load_table(tmp_path / "qrels.txt", "judgments",
                                  JudgmentSetMetadata(name="toy", version="v1", grade_scale={0: "no", 1: "yes"})))
    (tmp_path / "off-scale.txt").write_text("q1 0 d3 1\nq1 0 d4 3\n")
    with pytest.raises(InputError, match=r"off-scale.txt, line 2: grade 3 is not on the declared scale of toy@v1"):
        extend_judgments(scaled, str(tmp_path / "off-scale.txt"), "toy", "v2")


def test_a_label_two_older_sets_share_is_refused_as_ambiguous(tmp_path: Path) -> None:
    """Two sets with one label (stored before labels were unique, here by writing the second record by hand):
    `name@version` names neither silently."""
    store = stored(tmp_path)
    (record,) = store.record_files("judgments")
    copy = pl.read_parquet(record).with_columns(judgment_set_id=pl.lit("0" * 32))
    copy.write_parquet(record.with_name("0" * 32 + ".parquet"))
    with pytest.raises(InputError, match=r"toy@v1: 2 judgment sets carry this label .*give the id of the one meant"):
        resolve_parent(store, "toy@v1")


def test_a_worklist_of_an_older_method_is_never_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The method version is in the worklist's id and provenance: the same inputs under another method version
    are ranked again and stored beside the older list, never read back from it."""
    import json

    import judged.flows.pipeline.judging as judging

    store = stored(tmp_path)
    spec = build_spec("trec_eval", cutoffs=(3,))
    current = make_worklist(store, "toy", spec, 3, [], [])
    monkeypatch.setattr(judging, "METHOD_VERSION", "older")
    older = make_worklist(store, "toy", spec, 3, [], [])
    assert older.created and older.worklist_id != current.worklist_id
    path = store.root / "worklists" / f"{current.worklist_id}.parquet"
    provenance = json.loads(pl.read_parquet_metadata(path)["judged.provenance"])
    assert provenance["method_version"] == METHOD_VERSION


def two_runs(tmp_path: Path) -> Store:
    """The toy judgments and run, and a second run (tag `other`) that ranks q1's unjudged d4 first."""
    store = stored(tmp_path)
    (tmp_path / "other.txt").write_text("q1 Q0 d4 1 3.0 other\nq1 Q0 d1 2 2.0 other\nq2 Q0 d3 1 2.0 other\n")
    store.store_table(load_table(tmp_path / "other.txt", "run", RunMetadata(tag="other")))
    store.refresh_catalog()
    return store


@pytest.mark.parametrize("objective", ["pairs", "width"])
def test_query_weights_that_sum_to_zero_are_one_line_and_store_nothing(tmp_path: Path, objective: str) -> None:
    """Every priority would be 0 (the pairs objective divided by the weights' sum: exit 70 before)."""
    from typer.testing import CliRunner

    from judged.flows.cli.app import app

    store = two_runs(tmp_path)
    (tmp_path / "weights.txt").write_text("q1 0\nq2 0\n")
    before = tree_listing(store.root)
    result = CliRunner().invoke(app, ["worklist", "--judgments", "toy", "--warehouse", str(store.root), "--cutoff",
                                      "3", "--objective", objective, "--query-weights", str(tmp_path / "weights.txt")])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert result.stderr == ("judged: error: query weights: the weights of the 2 scored queries sum to 0: no judgment "
                             "can move their weighted mean, so nothing can be ranked; give some query a weight "
                             "above 0\n")
    assert tree_listing(store.root) == before


def test_topics_give_the_query_text_of_a_worklist_stored_before(tmp_path: Path) -> None:
    """The same worklist asked again with --topics: its stored rows (the text is not part of its identity) come
    back with the topics' text (before, the text the first request stored: none)."""
    store = stored(tmp_path)
    spec = build_spec("trec_eval", cutoffs=(3,))
    first = make_worklist(store, "toy", spec, 3, [], [])
    assert first.created and first.rows["query_text"].null_count() == 3
    (tmp_path / "topics.txt").write_text("q1\tfirst question\nq2\tsecond question\n")
    again = make_worklist(store, "toy", spec, 3, [], [], topics=tmp_path / "topics.txt")
    assert not again.created and again.worklist_id == first.worklist_id
    texts = dict(again.rows.select("query_id", "query_text").iter_rows())
    assert texts == {"q1": "first question", "q2": "second question"}
    assert again.rows.select("query_id", "doc_id").equals(first.rows.select("query_id", "doc_id"))


def test_worklist_names_the_pairs_it_counts() -> None:
    from judged.flows.pipeline.judging import WorklistReport

    states = pl.DataFrame({"baseline": ["a", "a", "b", "c"], "run": ["b", "c", "c", "d"],
                           "decided": [True, False, True, False], "could_decide": [True, True, True, False]})
    report = WorklistReport("w", "j", pl.DataFrame(), True, "pairs", states)
    assert report.named_pairs() == {"decided": ["a:b", "b:c"], "could_decide": ["a:c"]}
    assert report.pairs_line() == ("2 of 4 pairs of runs decided now (a:b, b:c); judging the listed documents could "
                                   "decide 1 more at best (a:c) (an estimate: docs/method.md, \"Worklist objectives\")")
    assert report.pairs_line(most_named=1).startswith("2 of 4 pairs of runs decided now (a:b and 1 more);")
    assert WorklistReport("w", "j", pl.DataFrame(), True).pairs_line() is None
