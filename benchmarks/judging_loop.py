"""The judging loop, measured on the 59 official TREC DL 2020 passage runs: which judging order decides the
comparisons of the runs, and settles their ranking, with the fewest added judgments?

Start from a reduced judgment set (each query's NIST judgments for the documents in the top k of two runs), then
judge in batches of a fixed budget, answering each batch from NIST's full judgments (a document NIST never judged is
answered 0: under the full judgments it counts 0, as trec_eval treats it), over the same candidates (every
(query, document) in some run's top k of a judged query), in these orders:
- `pairs`: `transforms.worklist.pairs_worklist` over every pair of runs (recomputed after each batch): the documents
  whose judgment removes the most width from the paired difference intervals of the pairs still undecided
  (`pairs-relative`: the same with `relative=True`, each pair's share divided by its width). Its list is cut to the
  candidates (the runs' read rows also hold documents tied with the k-th, below k); when it lists fewer than the
  budget there (every pair decided, or the undecided pairs' candidates all judged), the rest comes from `width`;
- `width`: `transforms.worklist.judging_worklist` over every run (the per-run interval widths, expected removal),
  topped up in depth order when it lists fewer than the budget (its first calls at 59 runs take tens of seconds;
  `--width-batches N` stops it after N batches, and the table then says so);
- `depth`: depth pooling over all runs: every run's rank-1 documents first, then rank 2, ... (query, doc by byte order);
- `random`: uniformly among the unjudged candidates, one loop per seed;
- `maxmean`: the MaxMean bandit of Losada, Parapar & Barreiro (SIGIR 2016, "Feeling lucky? Multi-armed bandits for
  ordering judgements in pooling-based evaluation"), per query as there: the arms of a query are the runs, pulling
  one judges its best-ranked unjudged document of its top k, and the arm pulled is the one with the largest
  posterior mean of relevance, (relevant + 1) / (judged + 2) over the judged documents of its top k (relevant: a
  gain above 0), ties broken at random. A batch is shared out among the queries in turn (one pull each, queries in a
  seeded random order, until the budget is spent), and, as in every order, a batch sees no answer of its own
  documents before it is complete. One loop per seed.

After each batch:
- where every pair of runs (1,711 at 59 runs) stands, from `pair_states` at the judgments so far: `decided` when the
  interval of its mean nDCG@k difference excludes 0;
- each run's mean nDCG@k (trec_eval preset, unjudged counted 0) and Kendall's tau (scipy) between the runs' order by
  it and (a) NIST's order (the same under NIST's full judgments), (b) the loop's end state (every candidate judged,
  which every order reaches).

Checked, in every loop: a decided pair is never decided the other way later, and never undecided again; the
difference of its mean nDCG@k under NIST's full judgments has the sign it was decided with. A violation fails the
run (exit 1) after the results are written.

The engine is called in-process (no Prefect). One command (from the repository root; `pip install -e '.[bench]'`):

    .venv/bin/python benchmarks/judging_loop.py --data ../shared/data/trec-dl-2020-passage --out benchmarks/results

It prints progress to stderr and the markdown tables that benchmarks/README.md holds to stdout, and writes
`judging_loop.png` and `judging_loop.json` into `--out`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from scipy.stats import kendalltau

from judged.flows.engine.evaluate import grade_scale
from judged.flows.store.readers import load_table
from judged.schemas.spec import EvaluationSpec, preset
from judged.transforms.judging import ranked_and_judged
from judged.transforms.ranking import candidate_rows, rank_run
from judged.transforms.worklist import (
    grade_counts, judging_worklist, pair_states, pairs_worklist, smoothed_prior,
)

ORDERS = ("pairs", "pairs-relative", "width", "depth", "random", "maxmean")
DEFAULT_ORDERS = ("pairs", "width", "depth", "random", "maxmean")
SEEDED = ("random", "maxmean")
JUDGMENT_COLUMNS = ["query_id", "doc_id", "relevance"]
DECIDED_TARGETS = (0.8, 0.9, 0.95)
TAU_TARGETS = (0.9, 0.95)


@dataclass
class Setup:
    spec: EvaluationSpec
    grades: tuple[int, ...]
    truth: pl.DataFrame  # NIST's judgments (query_id, doc_id, relevance)
    candidates_of: dict[str, pl.DataFrame]  # per run: its candidate rows (`candidate_rows`) over the judged queries
    heads: pl.DataFrame  # every run's ranked top k (`rank_run`) with `evaluation` naming the run
    candidates: pl.DataFrame  # (query_id, doc_id, best_rank): the documents in some run's top k
    pairs: pl.LazyFrame  # baseline, run: every pair of runs
    start: pl.DataFrame  # the start's judgments
    reference: dict[str, float]  # mean nDCG@k per run under NIST's full judgments (engine)
    end: dict[str, float]  # the same with every candidate judged (the loop's end state)

    @property
    def names(self) -> list[str]:
        return sorted(self.candidates_of)


def load_runs(folder: Path) -> dict[str, pl.DataFrame]:
    """Every run file of the folder, as (query_id, doc_id, score, ...) rows, by run name."""
    runs = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith("input.") and path.suffix == ".gz":
            runs[path.name.removeprefix("input.").removesuffix(".gz")] = load_table(path, "run").frame
    return runs


def answer(batch: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    """NIST's grade for each pair of the batch; 0 for a pair NIST never judged."""
    answered = batch.join(truth.select(JUDGMENT_COLUMNS), on=["query_id", "doc_id"], how="left")
    return answered.with_columns(pl.col("relevance").fill_null(0).cast(pl.Int32)).select(JUDGMENT_COLUMNS)


def ranked_rows(setup: Setup, judgments: pl.DataFrame) -> pl.LazyFrame:
    """Every run's ranked-and-judged rows with a `run` column, as `flows.engine.evaluate.ranked_rows` builds them
    (`ranked_and_judged` of the run's candidate rows): what the paired difference intervals read."""
    frames = [
        ranked_and_judged(rows.lazy(), judgments.lazy(), setup.spec).with_columns(run=pl.lit(name)).collect()
        for name, rows in setup.candidates_of.items()
    ]
    return pl.concat(frames).lazy()


def mean_ndcg(heads: pl.DataFrame, judgments: pl.DataFrame, k: int) -> dict[str, float]:
    """Each run's mean nDCG@k over the judged queries under the trec_eval preset (linear gain, unjudged counted 0,
    ideal over the judged documents, IDCG = 0 scoring 0), from the ranked heads: the loop's fast path, checked
    against the engine (`engine_mean_ndcg`) at the start and under NIST's full judgments."""
    resolved = judgments.filter(pl.col("relevance").is_not_null())
    ideal = (
        resolved.with_columns(gain=pl.col("relevance").clip(lower_bound=0).cast(pl.Float64))
        .sort("gain", descending=True)
        .with_columns(position=pl.int_range(1, pl.len() + 1).over("query_id"))
        .filter(pl.col("position") <= k)
        .group_by("query_id")
        .agg(idcg=(pl.col("gain") / (pl.col("position") + 1).log(2)).sum())
    )
    dcg = (
        heads.filter(pl.col("rank") <= k)
        .join(resolved.select(JUDGMENT_COLUMNS), on=["query_id", "doc_id"], how="left")
        .group_by("evaluation", "query_id")
        .agg(dcg=(pl.col("relevance").fill_null(0).clip(lower_bound=0) / (pl.col("rank") + 1).log(2)).sum())
    )
    runs = heads.select("evaluation").unique()
    per_query = (
        runs.join(ideal, how="cross")
        .join(dcg, on=["evaluation", "query_id"], how="left")
        .with_columns(value=pl.when(pl.col("idcg") > 0).then(pl.col("dcg").fill_null(0.0) / pl.col("idcg")).otherwise(0.0))
    )
    means = per_query.group_by("evaluation").agg(pl.col("value").mean())
    return dict(means.iter_rows())


def engine_mean_ndcg(setup: Setup, judgments: pl.DataFrame) -> dict[str, float]:
    """Each run's mean nDCG@k over its scored queries, from the engine (`per_query_measures`)."""
    from judged.transforms.measures import per_query_measures

    out = {}
    for name, rows in setup.candidates_of.items():
        per_query = per_query_measures(rows.lazy(), judgments.lazy(), setup.spec, setup.grades, intervals=False).collect()
        out[name] = float(per_query.filter(pl.col("value").is_not_null())["value"].mean())
    return out


def tau(current: dict[str, float], truth: dict[str, float]) -> float:
    names = sorted(truth)
    return float(kendalltau([current[n] for n in names], [truth[n] for n in names]).statistic)


def prepare(args) -> Setup:
    spec = preset("trec_eval").with_options(cutoffs=(args.cutoff,))
    truth_table = load_table(args.data / args.qrels, "judgments")
    grades = grade_scale(truth_table) or (0, 1, 2, 3)
    truth = truth_table.frame.filter(pl.col("relevance").is_not_null()).select(JUDGMENT_COLUMNS)
    judged_queries = truth.select("query_id").unique()
    runs = {name: rows.join(judged_queries, on="query_id", how="semi") for name, rows in load_runs(args.data / args.runs).items()}
    candidates_of = {name: candidate_rows(rows.lazy(), spec).collect() for name, rows in runs.items()}
    heads = pl.concat([
        rank_run(rows.lazy(), spec).collect().with_columns(evaluation=pl.lit(name))
        for name, rows in candidates_of.items()
    ]).filter(pl.col("rank") <= args.cutoff)
    candidates = heads.group_by("query_id", "doc_id").agg(best_rank=pl.col("rank").min()).sort("query_id", "doc_id")
    seed_runs = args.seed_runs.split(",")
    unknown = [name for name in seed_runs if name not in runs]
    if unknown:
        raise SystemExit(f"seed runs not found among the runs: {', '.join(unknown)}")
    start = heads.filter(pl.col("evaluation").is_in(seed_runs)).select("query_id", "doc_id").unique()
    start_judgments = start.join(truth, on=["query_id", "doc_id"]).select(JUDGMENT_COLUMNS)
    pairs = pl.LazyFrame(
        list(itertools.combinations(sorted(runs), 2)), schema=["baseline", "run"], orient="row"
    )
    setup = Setup(spec, grades, truth, candidates_of, heads, candidates, pairs, start_judgments, {}, {})
    setup.reference = engine_mean_ndcg(setup, truth)
    # The fast path agrees with the engine, at the start and under the full judgments.
    for judgments, engine in ((start_judgments, engine_mean_ndcg(setup, start_judgments)), (truth, setup.reference)):
        fast = mean_ndcg(heads, judgments, args.cutoff)
        worst = max(abs(fast[n] - engine[n]) for n in engine)
        assert worst < 1e-9, f"the loop's mean nDCG@{args.cutoff} differs from the engine's by {worst}"
    everything = pl.concat([start_judgments, answer(candidates.select("query_id", "doc_id"), truth)]).unique(
        subset=["query_id", "doc_id"], keep="first"
    )
    setup.end = mean_ndcg(heads, everything, args.cutoff)
    return setup


# -- the orders ------------------------------------------------------------------------------------------------------


def depth_order(unjudged: pl.DataFrame, budget: int) -> pl.DataFrame:
    return unjudged.sort("best_rank", "query_id", "doc_id").select("query_id", "doc_id").head(budget)


def width_order(setup: Setup, judgments: pl.DataFrame, pool: pl.DataFrame, budget: int) -> pl.DataFrame:
    """The next `budget` documents of `pool` (unjudged candidates; the others are already in the batch) by
    `judging_worklist`, topped up in depth order when it lists fewer."""
    candidates = pl.concat([rows.lazy().with_columns(evaluation=pl.lit(name))
                            for name, rows in setup.candidates_of.items()])
    prior = smoothed_prior(grade_counts(judgments.lazy()).collect(), setup.grades)
    unjudged = setup.candidates.join(judgments.select("query_id", "doc_id"), on=["query_id", "doc_id"], how="anti")
    listed = judging_worklist(
        candidates, judgments.lazy(), setup.spec, setup.grades, prior, budget + unjudged.height - pool.height
    ).collect()
    chosen = listed.sort("position").join(pool, on=["query_id", "doc_id"], how="semi", maintain_order="left")
    chosen = chosen.select("query_id", "doc_id").head(budget)
    if chosen.height < budget:  # intervals cannot use more: fill up in depth order, as a pool would
        rest = pool.join(chosen, on=["query_id", "doc_id"], how="anti")
        chosen = pl.concat([chosen, depth_order(rest, budget - chosen.height)])
    return chosen


def pairs_order(
    setup: Setup, ranked: pl.LazyFrame, judgments: pl.DataFrame, unjudged: pl.DataFrame, budget: int, relative: bool
) -> tuple[pl.DataFrame, pl.DataFrame, bool]:
    """The next batch by the pairs objective, the pairs' state at the current judgments, and whether the batch
    fell back (in part) to `width`."""
    unread = ranked.filter(pl.col("relevance").is_null()).select("query_id", "doc_id").unique().collect().height
    listed, states = pairs_worklist(
        ranked, judgments.lazy(), setup.spec, setup.grades, setup.pairs, max(budget, unread), relative=relative
    )
    chosen = listed.sort("position").join(unjudged, on=["query_id", "doc_id"], how="semi", maintain_order="left")
    chosen = chosen.select("query_id", "doc_id").head(budget)
    if chosen.height == budget or unjudged.height == chosen.height:
        return chosen, states, False
    rest = unjudged.join(chosen, on=["query_id", "doc_id"], how="anti")
    return pl.concat([chosen, width_order(setup, judgments, rest, budget - chosen.height)]), states, True


def random_order(unjudged: pl.DataFrame, budget: int, rng: random.Random) -> pl.DataFrame:
    pool = unjudged.sort("query_id", "doc_id").select("query_id", "doc_id")
    picked = sorted(rng.sample(range(pool.height), min(budget, pool.height)))
    return pool[picked]


def run_lists(heads: pl.DataFrame) -> dict[str, dict[str, list[str]]]:
    """Per query, per run: its top-k documents in rank order."""
    lists: dict[str, dict[str, list[str]]] = {}
    for query, run, docs in (
        heads.sort("query_id", "evaluation", "rank").group_by("query_id", "evaluation", maintain_order=True)
        .agg("doc_id").iter_rows()
    ):
        lists.setdefault(query, {})[run] = docs
    return lists


def maxmean_order(
    lists: dict[str, dict[str, list[str]]], judgments: pl.DataFrame, budget: int, rng: random.Random
) -> pl.DataFrame:
    grade = {(q, d): r for q, d, r in judgments.iter_rows()}
    pending: set[tuple[str, str]] = set()

    def pull(query: str) -> str | None:
        best, arms = -1.0, []
        for run, docs in lists[query].items():
            if all((query, d) in grade or (query, d) in pending for d in docs):
                continue  # an exhausted arm
            seen = [grade[query, d] for d in docs if (query, d) in grade]
            mean = (sum(1 for g in seen if g > 0) + 1) / (len(seen) + 2)
            if mean > best + 1e-12:
                best, arms = mean, [run]
            elif abs(mean - best) <= 1e-12:
                arms.append(run)
        if not arms:
            return None
        run = rng.choice(sorted(arms))
        doc = next(d for d in lists[query][run] if (query, d) not in grade and (query, d) not in pending)
        pending.add((query, doc))
        return doc

    chosen: list[tuple[str, str]] = []
    active = sorted(lists)
    rng.shuffle(active)
    while active and len(chosen) < budget:
        still = []
        for query in active:
            if len(chosen) == budget:
                break
            doc = pull(query)
            if doc is not None:
                chosen.append((query, doc))
                still.append(query)
        active = still
    return pl.DataFrame(chosen, schema=["query_id", "doc_id"], orient="row")


# -- the loop --------------------------------------------------------------------------------------------------------


def one_loop(setup: Setup, order: str, seed: int | None, args, lists, log) -> tuple[list[dict], list[str]]:
    """The records of one loop (one per batch, the start included) and the violations of the no-reversal check."""
    rng = random.Random(seed)
    label = order if seed is None else f"{order} seed {seed}"
    nist_difference = {
        (b, r): setup.reference[r] - setup.reference[b] for b, r in setup.pairs.collect().iter_rows()
    }
    first_direction: dict[tuple[str, str], tuple[str, int]] = {}
    violations: list[str] = []
    judgments = setup.start
    records: list[dict] = []
    spent, batches, fell_back = 0, 0, None
    while True:
        began = time.perf_counter()
        unjudged = setup.candidates.join(judgments.select("query_id", "doc_id"), on=["query_id", "doc_id"], how="anti")
        ranked = ranked_rows(setup, judgments)
        stop = unjudged.height == 0 or (order == "width" and 0 < args.width_batches <= batches)
        states, batch = None, None
        if not stop and order in ("pairs", "pairs-relative"):
            batch, states, fell = pairs_order(setup, ranked, judgments, unjudged, args.budget, order == "pairs-relative")
            if fell and fell_back is None:
                fell_back = spent
                log(f"{label}: the pairs objective listed fewer than {args.budget} candidates after {spent} added: "
                    "the rest of each batch from `width` from here on")
        selected = time.perf_counter()
        if states is None:
            states = pair_states(ranked, judgments.lazy(), setup.spec, setup.grades, setup.pairs)[1]
        stated = time.perf_counter()
        if batch is None and not stop:
            if order == "width":
                batch = width_order(setup, judgments, unjudged, args.budget)
            elif order == "depth":
                batch = depth_order(unjudged, args.budget)
            elif order == "random":
                batch = random_order(unjudged, args.budget, rng)
            elif order == "maxmean":
                batch = maxmean_order(lists, judgments, args.budget, rng)
            else:
                raise ValueError(order)
        ended = time.perf_counter()

        decided = states.filter(pl.col("decided"))
        for baseline, run, direction in decided.select("baseline", "run", "decided_direction").iter_rows():
            pair = (baseline, run)
            if pair not in first_direction:
                first_direction[pair] = (direction, spent)
                truth = nist_difference[pair]
                if (truth > 0) != (direction == "run") or truth == 0:
                    violations.append(f"{label}: {run} vs {baseline} decided for {direction} after {spent} added, "
                                      f"but NIST's full judgments give a difference of {truth:+.6f}")
            elif first_direction[pair][0] != direction:
                violations.append(f"{label}: {run} vs {baseline} decided for {first_direction[pair][0]} after "
                                  f"{first_direction[pair][1]} added, for {direction} after {spent}")
        undone = set(first_direction) - set(decided.select("baseline", "run").iter_rows())
        violations += [f"{label}: {r} vs {b} decided after {first_direction[b, r][1]} added, undecided after {spent}"
                       for b, r in sorted(undone)]
        means = mean_ndcg(setup.heads, judgments, args.cutoff)
        width = (states["mean_difference_max"] - states["mean_difference_min"]).mean()
        records.append({
            "order": order, "seed": seed, "judged": spent, "decided": decided.height, "pairs": states.height,
            "tau": tau(means, setup.reference), "tau_end": tau(means, setup.end), "mean_pair_width": float(width),
            "select_seconds": round(selected - began + ended - stated, 3), "states_seconds": round(stated - selected, 3),
            "runs": means,
        })
        r = records[-1]
        log(f"{label}: {spent} added, {r['decided']}/{r['pairs']} pairs decided, tau {r['tau']:.3f} "
            f"(order {r['select_seconds']:.1f} s, states {r['states_seconds']:.1f} s)")
        if stop or batch is None or batch.height == 0:
            break
        assert batch.height == batch.unique().height == batch.join(unjudged, on=["query_id", "doc_id"], how="semi").height
        judgments = pl.concat([judgments, answer(batch, setup.truth)])
        spent += batch.height
        batches += 1
    if fell_back is not None:
        records[-1]["fell_back_to_width_after"] = fell_back
    return records, violations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/trec-dl-2020-passage")
    parser.add_argument("--runs", default="official-top100", help="folder of --data holding the input.*.gz runs")
    parser.add_argument("--qrels", default="qrels.dl20-passage.txt")
    parser.add_argument("--seed-runs", default="p_bm25,pash_r3", help="runs whose top k start the judgment set")
    parser.add_argument("--cutoff", type=int, default=10)
    parser.add_argument("--budget", type=int, default=200, help="judgments per batch")
    parser.add_argument("--orders", default=",".join(DEFAULT_ORDERS), help=f"comma-separated, of {', '.join(ORDERS)}")
    parser.add_argument("--seeds", default="13,14,15", help="seeds of the random and maxmean orders")
    parser.add_argument("--width-batches", type=int, default=0, help="stop the (slow) width order after N batches "
                        "(0: run it to the end)")
    parser.add_argument("--out", type=Path, default=None, help="folder for judging_loop.png and judging_loop.json")
    args = parser.parse_args(argv)
    orders = [o for o in args.orders.split(",") if o]
    if unknown := [o for o in orders if o not in ORDERS]:
        parser.error(f"unknown orders: {', '.join(unknown)}")
    seeds = [int(s) for s in args.seeds.split(",") if s]

    began = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - began:6.0f} s] {message}", file=sys.stderr, flush=True)

    setup = prepare(args)
    log(f"{len(setup.names)} runs, {setup.pairs.collect().height} pairs, {setup.candidates.height} candidates, "
        f"{setup.start.height} start judgments; tau of the end state against NIST {tau(setup.end, setup.reference):.4f}")
    call = single_call(setup, args.budget)
    log(f"one pairs_worklist call from the start (budget {args.budget}): {call:.1f} s")
    lists = run_lists(setup.heads)
    results: list[dict] = []
    violations: list[str] = []
    for order in orders:
        for seed in (seeds if order in SEEDED else [None]):
            records, found = one_loop(setup, order, seed, args, lists, log)
            results += records
            violations += found
    elapsed = time.perf_counter() - began

    print(markdown(results, setup, args, orders, call, elapsed))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        payload = {"reference": setup.reference, "end": setup.end, "single_call_seconds": call,
                   "elapsed_seconds": elapsed, "violations": violations, "results": results}
        (args.out / "judging_loop.json").write_text(json.dumps(payload, indent=1))
        plot(results, orders, args.out / "judging_loop.png", args)
    if violations:
        print("\n".join(["NO-REVERSAL CHECK FAILED:", *violations]), file=sys.stderr)
        return 1
    log("no decided pair was ever reversed or undecided again, and each agrees with NIST's full judgments")
    return 0


def single_call(setup: Setup, budget: int) -> float:
    """Seconds of one `pairs_worklist` call over every pair of runs at the start's judgments."""
    ranked = ranked_rows(setup, setup.start)
    began = time.perf_counter()
    pairs_worklist(ranked, setup.start.lazy(), setup.spec, setup.grades, setup.pairs, budget)
    return time.perf_counter() - began


# -- the report ------------------------------------------------------------------------------------------------------


def reached(series: list[dict], value, target: float) -> int | None:
    """Added judgments at the first batch from which the value stays at or above the target (None: never)."""
    for index, record in enumerate(series):
        if all(value(r) >= target - 1e-12 for r in series[index:]):
            return record["judged"]
    return None


def loops(results: list[dict], order: str) -> list[list[dict]]:
    seeds = sorted({r["seed"] for r in results if r["order"] == order}, key=lambda s: -1 if s is None else s)
    return [[r for r in results if r["order"] == order and r["seed"] == seed] for seed in seeds]


def cell(values: list[int | None], truncated_at: int | None) -> str:
    if any(v is None for v in values):
        never = f"not within {truncated_at:,} (stopped)" if truncated_at is not None else "never"
        reached_ = [v for v in values if v is not None]
        return never if not reached_ else f"{never} for {len(values) - len(reached_)} of {len(values)} seeds"
    text = f"{values[0]:,}" if len(values) == 1 else (
        f"{sum(values) / len(values):,.0f} ({min(values):,}-{max(values):,})"
    )
    return text + ("*" if truncated_at is not None else "")


def markdown(results: list[dict], setup: Setup, args, orders: list[str], call: float, elapsed: float) -> str:
    n_pairs = results[0]["pairs"]
    n_seeds = max((len(loops(results, order)) for order in orders if order in SEEDED), default=0)
    targets = [(f"{t:.0%} decided", lambda r, t=t: r["decided"] / r["pairs"], t) for t in DECIDED_TARGETS]
    targets += [(f"tau NIST >= {t}", lambda r: r["tau"], t) for t in TAU_TARGETS]
    targets += [(f"tau end >= {t}", lambda r: r["tau_end"], t) for t in TAU_TARGETS]
    lines = [
        f"Start: {setup.start.height} judgments (NIST's, for the top {args.cutoff} of {args.seed_runs}); candidates: "
        f"{setup.candidates.height:,} (query, document) pairs in some run's top {args.cutoff}, "
        f"{setup.candidates.height - setup.start.height:,} of them unjudged at the start; batches of {args.budget}; "
        f"{len(setup.names)} runs, {n_pairs:,} pairs. End state (every candidate judged): "
        f"{results[-1]['decided']:,} pairs decided ({results[-1]['decided'] / n_pairs:.1%}), tau against NIST "
        f"{tau(setup.end, setup.reference):.4f}. One `pairs_worklist` call from the start: {call:.1f} s. "
        f"Whole benchmark: {elapsed:.0f} s.",
        "",
        "Added judgments until each target is reached and stays reached"
        + (f" (seeded orders: mean (min-max) over {n_seeds} seeds):" if n_seeds else ":"),
        "",
        "| order | " + " | ".join(name for name, _, _ in targets) + " |",
        "|---|" + "---:|" * len(targets),
    ]
    for order in orders:
        series = loops(results, order)
        truncated = None
        if order == "width" and series and series[0][-1]["judged"] < setup.candidates.height - setup.start.height:
            truncated = series[0][-1]["judged"]
        cells = [cell([reached(s, value, target) for s in series], truncated) for _, value, target in targets]
        lines.append(f"| {order} | " + " | ".join(cells) + " |")
    if any(cell_text.endswith("*") or "stopped" in cell_text for cell_text in "\n".join(lines).split(" | ")):
        lines += ["", f"*: `width` ran {args.width_batches} batches only (its first calls take tens of seconds at "
                      f"{len(setup.names)} runs): a share decided is final (it never falls), a tau holds up to where "
                      "the loop stopped."]
    verdict = acceptance(results, orders)
    lines += ["", *verdict, ""] if verdict else [""]
    lines += per_batch(results, orders, setup)
    return "\n".join(lines)


def acceptance(results: list[dict], orders: list[str]) -> list[str]:
    """The acceptance line: each pairs order against depth pooling, at 80% and 90% of the pairs decided."""
    variants = [o for o in ("pairs", "pairs-relative") if o in orders]
    if not variants or "depth" not in orders:
        return []

    def share(record: dict) -> float:
        return record["decided"] / record["pairs"]

    out = []
    for target in (0.8, 0.9):
        depth = reached(loops(results, "depth")[0], share, target)
        for order in variants:
            needed = reached(loops(results, order)[0], share, target)
            if needed is None or not depth:
                out.append(f"- {target:.0%} decided: {order} {needed}, depth {depth}: not comparable")
                continue
            saving = 1 - needed / depth
            met = "met" if saving >= 0.2 - 1e-12 else "NOT met"
            out.append(f"- {target:.0%} of the pairs decided: {order} {needed:,}, depth {depth:,} added judgments "
                       f"(saving {saving:.0%}; >= 20% fewer: {met})")
    return ["Acceptance (`pairs` needs >= 20% fewer added judgments than depth pooling to decide 80% and 90%):", *out]


def per_batch(results: list[dict], orders: list[str], setup: Setup) -> list[str]:
    budgets = sorted({r["judged"] for r in results})
    columns = []
    for order in orders:
        series = loops(results, order)
        by = [{r["judged"]: r for r in s} for s in series]
        columns.append((order, by))
    head = "| added | " + " | ".join(f"decided {o}" for o, _ in columns) + " | " + " | ".join(f"tau {o}" for o, _ in columns) + " |"
    lines = ["Per batch: share of the pairs decided, and tau against NIST (seeded orders: mean over seeds):", "",
             head, "|---:|" + "---:|" * (2 * len(columns))]
    for budget in budgets:
        decided, taus = [], []
        for _, by in columns:
            at = [b[budget] for b in by if budget in b]
            decided.append(f"{sum(r['decided'] / r['pairs'] for r in at) / len(at):.1%}" if at else "")
            taus.append(f"{sum(r['tau'] for r in at) / len(at):.3f}" if at else "")
        lines.append(f"| {budget:,} | " + " | ".join(decided) + " | " + " | ".join(taus) + " |")
    return lines


def plot(results: list[dict], orders: list[str], path: Path, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for order in orders:
        series = loops(results, order)
        color = None
        for index, s in enumerate(series):
            label = order if index == 0 else None
            style = {"alpha": 0.6 if len(series) > 1 else 1.0, "marker": "." if len(series) == 1 else None}
            line = left.plot([r["judged"] for r in s], [r["decided"] / r["pairs"] for r in s], label=label,
                             color=color, **style)[0]
            color = line.get_color()  # every seed of an order in one colour
            right.plot([r["judged"] for r in s], [r["tau"] for r in s], color=color, label=label, **style)
    left.set(xlabel="judgments added", ylabel="share of run pairs decided (paired intervals)", title=f"Pairs decided, nDCG@{args.cutoff}")
    right.set(xlabel="judgments added", ylabel="Kendall tau vs NIST's full judgments", title=f"Run order, nDCG@{args.cutoff}")
    left.legend(title="seeded orders: one line per seed" if any(o in SEEDED for o in orders) else None)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
