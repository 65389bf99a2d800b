"""ranx: qrels from TREC text, the run from TREC text or Parquet, `evaluate(qrels, run, "ndcg@10")`, per-query values.

    python benchmarks/tools/ranx_ndcg.py QRELS RUN [--parquet] > OUT   (lines: ndcg_cut_10 <tab> qid <tab> value)

`make_comparable=True` is needed because the qrels and the run do not hold the same queries (ranx asserts they do
otherwise): it adds an empty ranking (NDCG 0) for each judged query missing from the run and drops run queries
without judgments, which is what trec_eval -c reports.
"""

import sys

from ranx import Qrels, Run, evaluate


def read_parquet_run(path: str) -> Run:
    """`Run.from_parquet`; with pandas >= 3 its dtype check (`object` ids) fails on pandas' string dtype, so the
    fallback reads the same file with pandas and hands object columns to `Run.from_df`."""
    try:
        return Run.from_parquet(path, q_id_col="query_id", doc_id_col="doc_id", score_col="score")
    except AssertionError as error:
        import pandas as pd

        print(f"ranx: Run.from_parquet failed ({error}); using Run.from_df on object columns", file=sys.stderr)
        frame = pd.read_parquet(path, columns=["query_id", "doc_id", "score"])
        frame = frame.astype({"query_id": object, "doc_id": object})
        return Run.from_df(frame, q_id_col="query_id", doc_id_col="doc_id", score_col="score")


def main() -> None:
    qrels_path, run_path = sys.argv[1:3]
    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = read_parquet_run(run_path) if "--parquet" in sys.argv[3:] else Run.from_file(run_path, kind="trec")
    evaluate(qrels, run, "ndcg@10", make_comparable=True)
    out = sys.stdout
    for query_id, value in run.scores["ndcg@10"].items():
        out.write(f"ndcg_cut_10\t{query_id}\t{float(value)!r}\n")


if __name__ == "__main__":
    main()
