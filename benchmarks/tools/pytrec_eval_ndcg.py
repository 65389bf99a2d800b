"""pytrec_eval as people use it: parse both TREC text files in Python, evaluate ndcg_cut.10, print per-query values.

    python benchmarks/tools/pytrec_eval_ndcg.py QRELS RUN > OUT     (lines: ndcg_cut_10 <tab> qid <tab> value)
"""

import sys

import pytrec_eval


def main() -> None:
    qrels_path, run_path = sys.argv[1:3]
    with open(qrels_path) as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(run_path) as handle:
        run = pytrec_eval.parse_run(handle)
    results = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    out = sys.stdout
    for query_id, measures in results.items():
        out.write(f"ndcg_cut_10\t{query_id}\t{measures['ndcg_cut_10']!r}\n")


if __name__ == "__main__":
    main()
