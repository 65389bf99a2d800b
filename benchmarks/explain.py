"""Confirm the causes the harness gives for disagreements, after `benchmarks/run.py --size SIZE` has run.

    python benchmarks/explain.py --size M [--data-dir /tmp/judged-bench]

- pytrec_eval and ir_measures (trec_eval 9 inside, scores stored as float32): judged is run once more with
  `--preset trec_eval9` (float32 scores, otherwise the same) and their per-query values are compared with it at 1e-9.
- ranx: for every query where ranx differs from judged, the query's rows are given to ranx in the file's order (what
  `Run.from_file` does), sorted as `evaluate(make_comparable=True)` sorts them, ranx's own order is read back, and NDCG@10 is recomputed from that order and from
  trec_eval's order (score descending, then doc id descending by bytes): the first must give ranx's value, the
  second judged's.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.run import CUTOFF, DEFAULT_DATA_DIR, _judged_args, compare, read_values  # noqa: E402


def _dcg(gains: list[int]) -> float:
    return sum(gain / math.log2(position + 2) for position, gain in enumerate(gains[:CUTOFF]))


def explain_trec_eval9(data: Path, work: Path, results: dict) -> list[str]:
    tools = [r for r in results["results"] if r["tool"] in ("pytrec_eval", "ir_measures") and r["agreement"]]
    if not tools:
        return []
    run = data / "run.txt" if (data / "run.txt").is_file() else data / "run.parquet"
    output = work / "judged-trec_eval9.out"
    argv = [a if a != "trec_eval" else "trec_eval9" for a in _judged_args(data / "qrels.txt", run)]
    with output.open("wb") as out:
        subprocess.run(argv, stdout=out, check=True)
    reference = read_values(output)
    lines = []
    for result in tools:
        tool_output = work / f"{result['tool']}.rep{len(result['walls'])}.out"
        agreement = compare(reference, read_values(tool_output), 1e-9)
        lines.append(
            f"{result['tool']}: vs judged --preset trec_eval9 (float32 scores): {agreement.n_common:,} common queries, "
            f"{len(agreement.mismatches)} differ by more than 1e-9 (max {agreement.max_difference:.2e}); "
            f"{len(agreement.only_reference)} only in judged, {len(agreement.only_tool)} only in the tool; "
            f"vs --preset trec_eval: {len(result['agreement']['mismatches'])} differed"
        )
    return lines


def explain_ranx(data: Path, results: dict) -> list[str]:
    tools = [r for r in results["results"] if r["tool"].startswith("ranx") and r["agreement"]]
    wanted = sorted({q for r in tools for q in r["agreement"]["mismatches"]})
    if not wanted:
        return [f"{r['tool']}: no mismatch to explain" for r in tools]
    import polars as pl
    from ranx import Qrels, Run

    rows = (
        pl.scan_parquet(data / "run.parquet")
        .with_row_index("file_order")
        .filter(pl.col("query_id").is_in(wanted))
        .sort("file_order")
        .collect()
    )
    grades: dict[str, dict[str, int]] = {}
    qrels = pl.scan_csv(data / "qrels.txt", separator=" ", has_header=False,
                        new_columns=["query_id", "iteration", "doc_id", "grade"],
                        schema_overrides={"query_id": pl.String, "iteration": pl.String, "doc_id": pl.String,
                                          "grade": pl.Int64}).filter(pl.col("query_id").is_in(wanted)).collect()
    for query, doc, grade in qrels.select("query_id", "doc_id", "grade").iter_rows():
        grades.setdefault(query, {})[doc] = grade
    in_file_order: dict[str, dict[str, float]] = {}
    for query, doc, score in rows.select("query_id", "doc_id", "score").iter_rows():
        in_file_order.setdefault(query, {})[doc] = score
    # As the tool does: Run.from_file builds the run with Run.from_dict (which sorts every query by score), then
    # evaluate(make_comparable=True) sorts it once more; a second sort can move tied documents again.
    ranx_run = Run.from_dict(in_file_order).make_comparable(Qrels.from_dict({q: grades.get(q, {}) for q in wanted}))
    lines = []
    for result in tools:
        reproduced, ties_only = 0, 0
        for query, (judged_value, ranx_value) in result["agreement"]["mismatches"].items():
            judged_grades = grades.get(query, {})
            ideal = _dcg(sorted((max(g, 0) for g in judged_grades.values()), reverse=True))
            ranx_order = list(ranx_run.run[query].keys())
            trec_order = sorted(in_file_order[query], key=lambda d: (-in_file_order[query][d], _descending(d)))
            ndcg_ranx = _dcg([max(judged_grades.get(d, 0), 0) for d in ranx_order]) / ideal if ideal else 0.0
            ndcg_trec = _dcg([max(judged_grades.get(d, 0), 0) for d in trec_order]) / ideal if ideal else 0.0
            if abs(ndcg_ranx - ranx_value) <= 1e-9 and abs(ndcg_trec - judged_value) <= 1e-9:
                reproduced += 1
            scores_ranx = [in_file_order[query][d] for d in ranx_order[:CUTOFF + 1]]
            scores_trec = [in_file_order[query][d] for d in trec_order[:CUTOFF + 1]]
            # same scores position by position: the two orders differ only within groups of equal scores
            ties_only += scores_ranx == scores_trec
        n = len(result["agreement"]["mismatches"])
        lines.append(
            f"{result['tool']}: {n} queries differ; ranx's own order reproduces its value and trec_eval's order "
            f"(score desc, doc id desc) reproduces judged's for {reproduced}/{n}; the two orders hold the same score "
            f"at every one of the first {CUTOFF + 1} positions (they differ only inside groups of equal scores) for "
            f"{ties_only}/{n}"
        )
    return lines


class _descending:  # noqa: N801 (a sort key)
    """Doc id in descending byte order, trec_eval's tie-break (strcmp)."""

    __slots__ = ("key",)

    def __init__(self, doc: str) -> None:
        self.key = doc.encode()

    def __lt__(self, other: _descending) -> bool:
        return self.key > other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _descending) and self.key == other.key


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", required=True)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    args = parser.parse_args(argv)
    data = Path(args.data_dir) / args.size
    work = Path(args.data_dir) / "work" / args.size
    results = json.loads((work / "results.json").read_text())
    for line in explain_trec_eval9(data, work, results) + explain_ranx(data, results):
        print(line)


if __name__ == "__main__":
    main()
