"""A top-k read of a run whose every row was read (text parsed in memory, a scan in batches or whole) gives the
same exact intervals as the whole list: the unjudged rows past the first k are counted, not bounded."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from judged.flows.engine.evaluate import evaluate
from judged.flows.engine.limits import Limits
from judged.flows.store.readers import load_table
from judged.schemas.measures import parse_measures
from judged.schemas.spec import PRESETS
from judged.transforms.judging import attach_judgments
from judged.transforms.intervals import ndcg_intervals, with_intervals
from judged.transforms.measures import per_query_values
from judged.transforms.ranking import candidate_rows, rank_run
from tests.transforms.test_ndcg import judgment_frame, run_frame


def short_lists(tmp_path: Path) -> tuple[Path, Path, list, list]:
    """200 queries of 2-12 documents with distinct scores, about half of them judged, and up to three judged
    documents per query that the run does not retrieve."""
    rng = random.Random(9)
    run_rows, judgment_rows = [], []
    for q in range(200):
        for d in range(rng.randint(2, 12)):
            run_rows.append((f"q{q}", f"d{d}", float(100 - d)))
            if rng.random() < 0.5:
                judgment_rows.append((f"q{q}", f"d{d}", rng.randint(0, 3)))
        judgment_rows += [(f"q{q}", f"x{e}", rng.randint(0, 3)) for e in range(rng.randint(0, 3))]
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("".join(f"{q} Q0 {d} {i + 1} {s} t\n" for i, (q, d, s) in enumerate(run_rows)))
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in judgment_rows))
    return run, qrels, run_rows, judgment_rows


MEASURES = "nDCG@10,AP@10,R@10,P@10,RR@10"


@pytest.mark.parametrize("limits", [Limits(), Limits(in_memory_text_bytes=1, streamed_candidate_part_rows=400,
                                                     scanned_candidate_rows=800, whole_scan_rows=1)],
                         ids=["in memory", "scanned in batches"])
def test_a_top_k_read_of_rows_all_read_has_the_whole_lists_exact_intervals(tmp_path: Path, limits: Limits) -> None:
    run, qrels, _, _ = short_lists(tmp_path)
    spec = PRESETS["trec_eval"].with_options(measures=parse_measures(MEASURES))
    whole_spec = spec.with_options(measures=parse_measures(MEASURES + ",R-Prec"))  # R-Prec reads every row
    top_k = evaluate(load_table(run, "run", limits=limits), load_table(qrels, "judgments"), spec, limits=limits)
    whole = evaluate(load_table(run, "run"), load_table(qrels, "judgments"), whole_spec)
    columns = ["query_id", "measure", "cutoff", "value", "value_min", "value_max", "interval_kind"]
    expected = whole.per_query.filter(pl.col("measure") != "R-Prec").select(columns)
    assert top_k.per_query.select(columns).equals(expected)
    assert set(top_k.per_query["interval_kind"].drop_nulls()) == {"exact"}


def test_without_the_count_the_same_rows_are_bounds(tmp_path: Path) -> None:
    # The top-k read's candidates alone (no count of the unjudged rows past them) leave some nDCG rows `bound`:
    # the rows the count makes exact.
    _, _, run_rows, judgment_rows = short_lists(tmp_path)
    spec = PRESETS["trec_eval"].with_options(cutoffs=(10,))
    run, judgments = run_frame(run_rows), judgment_frame(judgment_rows)
    ranked = attach_judgments(rank_run(candidate_rows(run, spec), spec), judgments)
    uncounted = with_intervals(per_query_values(run, judgments, spec), ndcg_intervals(ranked, judgments, spec))
    assert uncounted.collect()["interval_kind"].to_list().count("bound") > 0
