"""ir_measures as documented: its own TREC readers, `iter_calc([nDCG@10], qrels, run)`, per-query values.

    python benchmarks/tools/ir_measures_ndcg.py QRELS RUN > OUT     (lines: ndcg_cut_10 <tab> qid <tab> value)

For nDCG@10 ir_measures 0.4.3 picks its pytrec_eval provider (`PytrecEvalEvaluator`, checked with
`ir_measures.DefaultPipeline.evaluator`), so its values are pytrec_eval's (trec_eval 9 semantics, float32 scores).
"""

import sys

import ir_measures
from ir_measures import nDCG


def main() -> None:
    qrels_path, run_path = sys.argv[1:3]
    qrels = ir_measures.read_trec_qrels(qrels_path)
    run = ir_measures.read_trec_run(run_path)
    out = sys.stdout
    for metric in ir_measures.iter_calc([nDCG @ 10], qrels, run):
        out.write(f"ndcg_cut_10\t{metric.query_id}\t{metric.value!r}\n")


if __name__ == "__main__":
    main()
