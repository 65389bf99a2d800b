"""The judging loop, measured on TREC DL 2020 passage: does judging in worklist order settle the ranking of the runs
with fewer judgments than random or depth-pooled judging?

Start from a reduced judgment set (each query's NIST judgments for the documents in the top k of two runs), then
judge in batches of a fixed budget, answering each batch from NIST's full judgments (a pair NIST never judged is
answered 0: under the full judgments it counts 0, as trec_eval treats it), in three orders over the same candidates
(every pair in some run's top k of a judged query):
- `worklist`: transforms/worklist.py's priority over every run (recomputed after each batch);
- `random`: uniformly among the unjudged candidates (seeded);
- `depth`: depth pooling over all runs: every run's rank-1 documents first, then rank 2, ... (query, doc by byte order).
After each batch: each run's mean nDCG@k (trec_eval preset) and its mean interval width (value_max - value_min), and
Kendall's tau (scipy) between the runs' order by mean nDCG@k and their order under NIST's full judgments.

The engine is called in-process (no Prefect). One command (from the repository root; `pip install -e '.[bench]'`):

    .venv/bin/python benchmarks/judging_loop.py --data ../shared/data/trec-dl-2020-passage --out benchmarks/results

It prints the markdown table that benchmarks/README.md holds and writes `judging_loop.png` and `judging_loop.json`
into `--out`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import polars as pl
from scipy.stats import kendalltau

from judged.flows.engine.evaluate import grade_scale
from judged.flows.store.readers import load_table
from judged.schemas.spec import preset
from judged.transforms.judging import attach_judgments
from judged.transforms.ranking import candidate_rows, rank_run
from judged.transforms.worklist import grade_counts, judging_worklist, smoothed_prior

ORDERS = ("worklist", "random", "depth")
JUDGMENT_COLUMNS = ["query_id", "doc_id", "relevance"]


def load_runs(folder: Path) -> dict[str, pl.DataFrame]:
    """Every run file of the folder, as (query_id, doc_id, score, ...) rows, by run name."""
    runs = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith("input.") and path.suffix == ".gz":
            runs[path.name.removeprefix("input.").removesuffix(".gz")] = load_table(path, "run").frame
    return runs


def ranked_heads(runs: dict[str, pl.DataFrame], spec) -> pl.DataFrame:
    """Each run's candidate rows for the spec's cutoff (the top k, ties at k kept), ranked, with `evaluation`."""
    heads = []
    for name, rows in runs.items():
        head = rank_run(candidate_rows(rows.lazy(), spec), spec).collect()
        heads.append(head.with_columns(evaluation=pl.lit(name)))
    return pl.concat(heads)


def measure(runs: dict[str, pl.DataFrame], judgments: pl.DataFrame, spec, grades) -> dict[str, dict[str, float]]:
    """Per run: mean nDCG@k over the scored queries and the mean interval width."""
    from judged.transforms.measures import per_query_measures

    out = {}
    for name, rows in runs.items():
        per_query = per_query_measures(candidate_rows(rows.lazy(), spec), judgments.lazy(), spec, grades).collect()
        scored = per_query.filter(pl.col("value").is_not_null())
        out[name] = {
            "ndcg": float(scored["value"].mean()),
            "width": float((scored["value_max"] - scored["value_min"]).mean()),
        }
    return out


def tau(current: dict[str, dict[str, float]], truth: dict[str, dict[str, float]]) -> float:
    names = sorted(truth)
    statistic = kendalltau([current[n]["ndcg"] for n in names], [truth[n]["ndcg"] for n in names]).statistic
    return float(statistic)


def next_batch(
    order: str,
    heads: pl.DataFrame,
    judgments: pl.DataFrame,
    candidates: pl.DataFrame,
    spec,
    grades: tuple[int, ...],
    budget: int,
    rng: random.Random,
) -> pl.DataFrame:
    """The next `budget` unjudged candidate pairs (query_id, doc_id) in the given order."""
    unjudged = candidates.join(judgments.select("query_id", "doc_id"), on=["query_id", "doc_id"], how="anti")
    if unjudged.height == 0:
        return unjudged.select("query_id", "doc_id")
    if order == "worklist":
        ranked = attach_judgments(heads.lazy(), judgments.lazy())
        prior = smoothed_prior(grade_counts(judgments.lazy()).collect(), grades)
        listed = judging_worklist(ranked, judgments.lazy(), spec, grades, prior, budget).collect()
        chosen = listed.select("query_id", "doc_id")
        if chosen.height < budget:  # intervals cannot use more: fill up in depth order, as a pool would
            rest = unjudged.join(chosen, on=["query_id", "doc_id"], how="anti").sort("best_rank", "query_id", "doc_id")
            chosen = pl.concat([chosen, rest.select("query_id", "doc_id").head(budget - chosen.height)])
        return chosen
    if order == "random":
        pairs = unjudged.sort("query_id", "doc_id").select("query_id", "doc_id")
        picked = sorted(rng.sample(range(pairs.height), min(budget, pairs.height)))
        return pairs[picked]
    return unjudged.sort("best_rank", "query_id", "doc_id").select("query_id", "doc_id").head(budget)


def answer(batch: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    """NIST's grade for each pair of the batch; 0 for a pair NIST never judged."""
    answered = batch.join(truth.select(JUDGMENT_COLUMNS), on=["query_id", "doc_id"], how="left")
    return answered.with_columns(pl.col("relevance").fill_null(0).cast(pl.Int32))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/trec-dl-2020-passage")
    parser.add_argument("--qrels", default="qrels.dl20-passage.txt")
    parser.add_argument("--seed-runs", default="p_bm25,pash_r3", help="runs whose top k start the judgment set")
    parser.add_argument("--cutoff", type=int, default=10)
    parser.add_argument("--budget", type=int, default=100, help="judgments per batch")
    parser.add_argument("--seed", type=int, default=13, help="seed of the random order")
    parser.add_argument("--out", type=Path, default=None, help="folder for judging_loop.png and judging_loop.json")
    args = parser.parse_args(argv)

    spec = preset("trec_eval").with_options(cutoffs=(args.cutoff,))
    truth_table = load_table(args.data / args.qrels, "judgments")
    grades = grade_scale(truth_table) or (0, 1, 2, 3)
    truth = truth_table.frame.filter(pl.col("relevance").is_not_null())
    runs = load_runs(args.data / "runs")
    judged_queries = truth.select("query_id").unique()
    runs = {name: rows.join(judged_queries, on="query_id", how="semi") for name, rows in runs.items()}
    heads = ranked_heads(runs, spec).filter(pl.col("rank") <= args.cutoff)
    candidates = heads.group_by("query_id", "doc_id").agg(best_rank=pl.col("rank").min())
    seed_runs = args.seed_runs.split(",")
    start = heads.filter(pl.col("evaluation").is_in(seed_runs)).select("query_id", "doc_id").unique()
    start_judgments = start.join(truth.select(JUDGMENT_COLUMNS), on=["query_id", "doc_id"])
    reference = measure(runs, truth.select(JUDGMENT_COLUMNS), spec, grades)

    results: list[dict] = []
    for order in ORDERS:
        rng = random.Random(args.seed)
        judgments = start_judgments.select(JUDGMENT_COLUMNS)
        spent = 0
        while True:
            began = time.perf_counter()
            scores = measure(runs, judgments, spec, grades)
            results.append(
                {
                    "order": order,
                    "judged": spent,
                    "tau": tau(scores, reference),
                    "mean_width": sum(s["width"] for s in scores.values()) / len(scores),
                    "runs": scores,
                }
            )
            batch = next_batch(order, heads, judgments, candidates, spec, grades, args.budget, rng)
            if batch.height == 0:
                break
            judgments = pl.concat([judgments, answer(batch, truth)])
            spent += batch.height
            print(f"{order}: {spent} judged, tau {results[-1]['tau']:.3f} ({time.perf_counter() - began:.1f} s)",
                  file=sys.stderr)

    print(markdown(results, reference, args, start_judgments.height, candidates.height))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "judging_loop.json").write_text(json.dumps({"reference": reference, "results": results}, indent=1))
        plot(results, args.out / "judging_loop.png", args)
    return 0


def markdown(results: list[dict], reference: dict, args, n_start: int, n_candidates: int) -> str:
    budgets = sorted({r["judged"] for r in results})
    by = {(r["order"], r["judged"]): r for r in results}
    lines = [
        f"Start: {n_start} judgments (NIST's, for the top {args.cutoff} of {args.seed_runs}); candidates: "
        f"{n_candidates} pairs in some run's top {args.cutoff}; batches of {args.budget}; {len(reference)} runs.",
        "",
        "| judged | " + " | ".join(f"tau {o}" for o in ORDERS) + " | " + " | ".join(f"width {o}" for o in ORDERS) + " |",
        "|---:|" + "---:|" * (2 * len(ORDERS)),
    ]
    for budget in budgets:
        taus = [f"{by[o, budget]['tau']:.3f}" if (o, budget) in by else "" for o in ORDERS]
        widths = [f"{by[o, budget]['mean_width']:.3f}" if (o, budget) in by else "" for o in ORDERS]
        lines.append(f"| {budget} | " + " | ".join(taus) + " | " + " | ".join(widths) + " |")
    lines += ["", "Judgments needed to reach a tau (first batch at or above it, and staying there):", ""]
    lines += ["| tau | " + " | ".join(ORDERS) + " |", "|---:|" + "---:|" * len(ORDERS)]
    for target in (0.8, 0.9, 1.0):
        cells = []
        for order in ORDERS:
            series = [r for r in results if r["order"] == order]
            reached = next(
                (r["judged"] for i, r in enumerate(series) if all(s["tau"] >= target - 1e-12 for s in series[i:])), None
            )
            cells.append("never" if reached is None else str(reached))
        lines.append(f"| {target} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(results: list[dict], path: Path, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for order in ORDERS:
        series = [r for r in results if r["order"] == order]
        left.plot([r["judged"] for r in series], [r["tau"] for r in series], marker=".", label=order)
        right.plot([r["judged"] for r in series], [r["mean_width"] for r in series], marker=".", label=order)
    left.set(xlabel="judgments added", ylabel="Kendall tau vs NIST's full judgments", title=f"Run order, nDCG@{args.cutoff}")
    right.set(xlabel="judgments added", ylabel="mean interval width", title=f"nDCG@{args.cutoff} interval width")
    left.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
