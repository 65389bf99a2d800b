"""Several assessors on real data: NIST's TREC DL 2019 passage judgments and the eight-annotator re-annotation of
Parry et al. ("Variations in Relevance Judgments and the Shelf Life of Test Collections", SIGIR 2025), over the 37
official DL 2019 passage runs on nDCG@10 (trec_eval preset: linear gain, unjudged documents free in the intervals).

Subcommands (from the repository root; the engine is called in-process, no Prefect):

    .venv/bin/python benchmarks/assessors_dl19.py download [--from DIR] [--to DIR]
    .venv/bin/python benchmarks/assessors_dl19.py measure --runs DIR --nist QRELS [--annotations DIR]
    .venv/bin/python benchmarks/assessors_dl19.py loop --runs DIR --nist QRELS [--every N] [--batches N]

- `download` fetches the eight annotators' qrels (`judgments/main/qrels/<annotator>-qrels.txt` of
  github.com/Parry-Parry/sigir25-annotation at commit 935c789f) into `--to` (default `benchmarks/.cache/dl19-reannotation`,
  ignored by git). The repository states no licence: the files are fetched for local measurement only and never go
  into data/ or into the repository. `--from DIR` copies local copies instead (the same file names).
- `measure` prints the markdown of benchmarks/README.md's "Several assessors" section to stdout (progress to
  stderr) and writes `assessors_dl19.json` into `--out`:
  - agreement with NIST per annotator (`transforms.assessors.agreement_by_pair`, the code of `judged agreement`);
  - the pairs of runs (666 at 37 runs) decided on nDCG@10 under NIST alone, under `set` and under `range` (NIST and
    the eight annotators), and under each single-assessor world (`single:NAME`), from `transforms.worklist.pair_states`
    (the paired difference intervals of every pair), with the time each took;
- `loop`, the adjudication loop (`adjudication_loop_dl19.json`): starting from `set`, batches of 50 disputed documents are adjudicated, the adjudicator
    answering NIST's grade (a row of kind `adjudicator`, resolved by `transforms.assessors.resolve_assessors`), in
    the order of `--objective adjudicate` (`transforms.worklist.adjudication_worklist`, recomputed after each batch),
    in depth order (best rank over the runs, then query and document id) and at random (3 seeds); after each
    batch, the pairs decided. `--every N` takes every N-th run by name (the loop recomputes every pair's
    set-valued intervals after each batch).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import shutil
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from judged.flows.store.readers import load_table
from judged.schemas.spec import EvaluationSpec, preset
from judged.transforms.assessors import agreement_by_pair, resolve_assessors
from judged.transforms.judging import ranked_and_judged
from judged.transforms.ranking import candidate_rows, rank_run
from judged.transforms.worklist import adjudication_worklist, pair_states

REPOSITORY = "Parry-Parry/sigir25-annotation"
COMMIT = "935c789fd39a6aa450ce1911188e76a0b26a407a"
ANNOTATORS = ("andrew-parry", "eugene-yang", "ferdinand-schlatt", "froebe", "guglielmo-faggioli", "harry-scells",
              "saber-zerhoudi", "sean-macavaney")
DEFAULT_CACHE = Path("benchmarks/.cache/dl19-reannotation")
SCALE = (0, 1, 2, 3)
ADJUDICATOR = "adjudicator"
BATCH = 50
SEEDS = (1, 2, 3)
PAIR = ["query_id", "doc_id"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- download --------------------------------------------------------------------------------------------------------


def download(target: Path, source: Path | None) -> None:
    """The eight annotators' qrels into `target`: copied from `source`, or fetched from the repository at COMMIT."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ANNOTATORS:
        file = f"{name}-qrels.txt"
        if source is not None:
            shutil.copyfile(source / file, target / file)
        else:
            url = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/judgments/main/qrels/{file}"
            with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (a fixed https URL)
                (target / file).write_bytes(response.read())
        digest = hashlib.sha256((target / file).read_bytes()).hexdigest()
        lines = (target / file).read_text().count("\n")
        print(f"{file}  {lines} lines  sha256 {digest}")


# -- inputs ----------------------------------------------------------------------------------------------------------


def assessor_rows(nist: Path, annotations: Path) -> pl.DataFrame:
    """NIST's judgments and each annotator's, one row per assessor and pair (`assessor`: nist or the annotator)."""
    frames = [load_table(nist, "judgments").frame.select(*PAIR, "relevance").with_columns(assessor=pl.lit("nist"))]
    for name in ANNOTATORS:
        rows = load_table(annotations / f"{name}-qrels.txt", "judgments").frame
        frames.append(rows.select(*PAIR, "relevance").with_columns(assessor=pl.lit(name)))
    return pl.concat(frames).with_columns(pl.col("relevance").cast(pl.Int32),
                                          source_line=pl.int_range(1, pl.len() + 1))


def run_candidates(folder: Path, spec: EvaluationSpec, queries: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Each run's candidate rows (`candidate_rows`) over the judged queries, by run name."""
    out = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".gz" and "input." in path.name:
            name = path.name.split("input.", 1)[1].removesuffix(".gz")
            rows = load_table(path, "run").frame.join(queries, on="query_id", how="semi")
            out[name] = candidate_rows(rows.lazy(), spec).collect()
    return out


def ranked(candidates: dict[str, pl.DataFrame], judgments: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """Every run's ranked-and-judged rows with `run`, as `flows.engine.evaluate.ranked_rows` builds them."""
    return pl.concat([ranked_and_judged(rows.lazy(), judgments, spec).with_columns(run=pl.lit(name)).collect()
                      for name, rows in candidates.items()], how="diagonal_relaxed").lazy()


def states(candidates: dict[str, pl.DataFrame], judgments: pl.LazyFrame, spec: EvaluationSpec,
           pairs: pl.LazyFrame) -> tuple[pl.DataFrame, float]:
    """Every pair's state (`pair_states`) under the resolved `judgments`, and the seconds it took (ranking
    included)."""
    started, cpu = time.perf_counter(), time.process_time()
    _, per_pair = pair_states(ranked(candidates, judgments, spec), judgments, spec, SCALE, pairs)
    log(f"  pair_states: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
    return per_pair, time.perf_counter() - started


def resolved(rows: pl.DataFrame, model: str) -> pl.LazyFrame:
    return resolve_assessors(rows.lazy(), model, SCALE, adjudicators=[ADJUDICATOR]).collect().lazy()


# -- the loop --------------------------------------------------------------------------------------------------------


def disputed(rows: pl.DataFrame) -> pl.DataFrame:
    """The pairs whose grades differ between assessors (the disputes `set` leaves open)."""
    return resolved(rows, "set").filter(pl.col("grade_set").is_not_null()).select(PAIR).collect()


def adjudicated(rows: pl.DataFrame, batch: pl.DataFrame, nist: pl.DataFrame) -> pl.DataFrame:
    """`rows` with the adjudicator's rows for `batch`: NIST's grade (every disputed pair here is one NIST judged)."""
    answers = batch.join(nist, on=PAIR).select(*PAIR, "relevance").with_columns(
        assessor=pl.lit(ADJUDICATOR), source_line=pl.lit(0, pl.Int64))
    return pl.concat([rows, answers], how="diagonal_relaxed")


def loop(order: str, rows: pl.DataFrame, candidates: dict[str, pl.DataFrame], spec: EvaluationSpec,
         pairs: pl.LazyFrame, nist: pl.DataFrame, depth: pl.DataFrame, batches: int, seed: int | None) -> list[dict]:
    """Pairs decided after each batch of BATCH adjudications in `order`."""
    open_pairs = disputed(rows)
    if order == "random":
        shuffled = list(open_pairs.sort(PAIR).iter_rows())
        random.Random(seed).shuffle(shuffled)
        fixed_order = pl.DataFrame(shuffled, schema=PAIR, orient="row")
    elif order == "depth":
        fixed_order = open_pairs.join(depth, on=PAIR, how="left").sort("best_rank", *PAIR, nulls_last=True).select(PAIR)
    points = []
    current = rows
    for step in range(batches + 1):
        judgments = resolved(current, "set")
        started = time.perf_counter()
        if order == "adjudicate" and step < batches:
            listed, per_pair = adjudication_worklist(ranked(candidates, judgments, spec), judgments, spec, SCALE,
                                                     pairs, BATCH)
            batch = listed.select(PAIR)
        else:
            per_pair, _ = states(candidates, judgments, spec, pairs)
            batch = fixed_order.slice(step * BATCH, BATCH) if order != "adjudicate" else None
        seconds = time.perf_counter() - started
        decided = int(per_pair["decided"].sum())
        points.append({"adjudicated": step * BATCH, "decided": decided, "seconds": round(seconds, 1)})
        log(f"{order}{'' if seed is None else f' seed {seed}'}: {step * BATCH} adjudicated, {decided} decided "
            f"({seconds:.1f} s)")
        if step < batches and batch is not None and batch.height:
            current = adjudicated(current, batch, nist)
    return points


# -- measure ---------------------------------------------------------------------------------------------------------


def measure(args: argparse.Namespace) -> dict:
    spec = preset("trec_eval").with_options(cutoffs=(10,), assessor_model="set")
    rows = assessor_rows(args.nist, args.annotations)
    nist = rows.filter(pl.col("assessor") == "nist").select(*PAIR, "relevance")
    queries = nist.select("query_id").unique()
    candidates = run_candidates(args.runs, spec, queries)
    names = sorted(candidates)
    pairs = pl.LazyFrame(list(itertools.combinations(names, 2)), schema=["baseline", "run"], orient="row")
    n_pairs = len(names) * (len(names) - 1) // 2
    log(f"{len(names)} runs, {n_pairs} pairs, {queries.height} queries, {rows.height} judgment rows")
    result: dict = {"runs": len(names), "pairs": n_pairs, "queries": queries.height}

    shared = rows.filter(pl.col("assessor") != "nist").select(PAIR).unique()
    agreement = agreement_by_pair(rows.join(shared, on=PAIR, how="semi"), threshold=2).filter(
        (pl.col("assessor_a") == "nist") | (pl.col("assessor_b") == "nist"))
    result["agreement"] = agreement.to_dicts()

    worlds: dict[str, dict] = {}
    plain = nist.with_columns(source_line=pl.int_range(1, pl.len() + 1)).lazy()
    models = [m for m in args.models.split(",") if m]
    for label, judgments in [("NIST alone", plain), *[(m, resolved(rows, m)) for m in models],
                             *[(f"single:{a}", resolved(rows, f"single:{a}")) for a in ("nist", *ANNOTATORS)]]:
        per_pair, seconds = states(candidates, judgments, spec, pairs)
        worlds[label] = {"decided": int(per_pair["decided"].sum()), "seconds": round(seconds, 2),
                         "directions": per_pair.select("baseline", "run", "decided_direction").rows()}
        log(f"{label}: {worlds[label]['decided']} of {n_pairs} decided ({seconds:.1f} s)")
    result["worlds"] = {k: {"decided": v["decided"], "seconds": v["seconds"]} for k, v in worlds.items()}
    reference = {(b, r): d for b, r, d in worlds["NIST alone"]["directions"]}
    singles = [label for label in worlds if label.startswith("single:")]
    directions = {label: {(b, r): d for b, r, d in worlds[label]["directions"]} for label in singles}
    every_world = sum(1 for pair in reference
                      if len({directions[label][pair] for label in singles}) == 1
                      and directions[singles[0]][pair] is not None)
    flips_some = sum(1 for pair, d in reference.items() if d is not None and any(
        directions[label][pair] not in (None, d) for label in singles))
    undecided_some = sum(1 for pair, d in reference.items() if d is not None and any(
        directions[label][pair] != d for label in singles))
    result["every_single_world_agrees"] = every_world
    result["reversed_in_some_world"] = flips_some
    result["not_decided_alike_in_some_world"] = undecided_some

    result["disputed"] = disputed(rows).height
    return result


def measure_loop(args: argparse.Namespace) -> dict:
    """The adjudication loop over every `args.every`-th run by name (all with 1)."""
    spec = preset("trec_eval").with_options(cutoffs=(10,), assessor_model="set")
    rows = assessor_rows(args.nist, args.annotations)
    nist = rows.filter(pl.col("assessor") == "nist").select(*PAIR, "relevance")
    every = run_candidates(args.runs, spec, nist.select("query_id").unique())
    names = sorted(every)[::args.every]
    candidates = {name: every[name] for name in names}
    pairs = pl.LazyFrame(list(itertools.combinations(names, 2)), schema=["baseline", "run"], orient="row")
    log(f"loop over {len(names)} runs ({', '.join(names)}), {len(names) * (len(names) - 1) // 2} pairs")
    depth = pl.concat([rank_run(c.lazy(), spec).collect() for c in candidates.values()]).group_by(PAIR).agg(
        best_rank=pl.col("rank").min())
    loops: dict[str, list[dict]] = {}
    for order, seed in [("adjudicate", None), ("depth", None), *[("random", s) for s in SEEDS]]:
        key = order if seed is None else f"random-{seed}"
        loops[key] = loop(order, rows, candidates, spec, pairs, nist, depth, args.batches, seed)
    nist_alone = nist.with_columns(source_line=pl.int_range(1, pl.len() + 1)).lazy()
    under_nist, _ = states(candidates, nist_alone, spec.with_options(assessor_model=None), pairs)
    return {"runs": names, "pairs": len(names) * (len(names) - 1) // 2, "disputed": disputed(rows).height,
            "decided_under_nist_alone": int(under_nist["decided"].sum()), "loops": loops}


def loop_markdown(result: dict) -> str:
    orders = list(result["loops"])
    steps = max(len(v) for v in result["loops"].values())
    lines = [f"{len(result['runs'])} runs, {result['pairs']} pairs; {result['disputed']} disputed documents; "
             f"{result['decided_under_nist_alone']} pairs decided under NIST alone.", "",
             "| adjudicated | " + " | ".join(orders) + " |", "|---:|" + "---:|" * len(orders)]
    for i in range(steps):
        cells = [str(result["loops"][o][i]["decided"]) if i < len(result["loops"][o]) else "" for o in orders]
        lines.append(f"| {i * BATCH} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown(result: dict) -> str:
    lines = ["| annotator | shared pairs | agreement | kappa | weighted kappa | kappa relevant (grade >= 2) |",
             "|---|---:|---:|---:|---:|---:|"]
    for row in result["agreement"]:
        other = row["assessor_b"] if row["assessor_a"] == "nist" else row["assessor_a"]
        cells = [f"{row[c]:.3f}" if row[c] is not None else "-" for c in ("agreement", "kappa", "weighted_kappa",
                                                                           "kappa_relevant")]
        lines.append(f"| {other} | {row['shared_pairs']} | " + " | ".join(cells) + " |")
    lines += ["", "| judgments | pairs decided (of %d) | seconds |" % result["pairs"], "|---|---:|---:|"]
    lines += [f"| {label} | {v['decided']} | {v['seconds']} |" for label, v in result["worlds"].items()]
    lines += ["", f"Every single-assessor world decides a pair the same way: {result['every_single_world_agrees']}; "
              f"decided under NIST but reversed in some single world: {result['reversed_in_some_world']}; not "
              f"decided alike (reversed or open) in some single world: {result['not_decided_alike_in_some_world']}.",
              "", f"Disputed documents (grades that differ between assessors): {result['disputed']}."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("download", help="fetch (or copy, --from) the eight annotators' qrels")
    fetch.add_argument("--from", dest="source", type=Path, default=None)
    fetch.add_argument("--to", type=Path, default=DEFAULT_CACHE)
    run = commands.add_parser("measure", help="agreement, pairs decided, and the adjudication loop")
    run.add_argument("--runs", type=Path, required=True, help="the folder of the 37 official runs (*input.NAME.gz)")
    run.add_argument("--nist", type=Path, required=True, help="NIST's qrels.dl19-passage.txt")
    run.add_argument("--annotations", type=Path, default=DEFAULT_CACHE)
    run.add_argument("--models", default="set,range", help="the set models to time (empty: the worlds only)")
    run.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    adjudication = commands.add_parser("loop", help="the adjudication loop")
    adjudication.add_argument("--runs", type=Path, required=True)
    adjudication.add_argument("--nist", type=Path, required=True)
    adjudication.add_argument("--annotations", type=Path, default=DEFAULT_CACHE)
    adjudication.add_argument("--batches", type=int, default=6, help="batches of 50 adjudications per order")
    adjudication.add_argument("--every", type=int, default=1, help="every N-th run by name (1: all 37)")
    adjudication.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    if args.command == "download":
        download(args.to, args.source)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "loop":
        result = measure_loop(args)
        (args.out / "adjudication_loop_dl19.json").write_text(json.dumps(result, indent=1) + "\n")
        sys.stdout.write(loop_markdown(result))
        return
    result = measure(args)
    (args.out / "assessors_dl19.json").write_text(json.dumps(result, indent=1) + "\n")
    sys.stdout.write(markdown(result))


if __name__ == "__main__":
    main()
