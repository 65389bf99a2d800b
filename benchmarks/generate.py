"""Deterministic generator of realistic TREC qrels and runs, at any size, for the benchmarks.

    python benchmarks/generate.py --size M --out /tmp/judged-bench/M

Writes `qrels.txt` (`qid 0 docid grade`), `run.txt` (`qid Q0 docid rank score tag`) and `run.parquet` (query_id,
doc_id, rank, score, run_tag), then `manifest.json` last. XL writes `qrels.txt` and `run.parquet` only. When the
manifest exists, matches the size, seed and generator version, and every file it lists has the recorded byte size,
nothing is regenerated. `--shuffled` writes the same rows with each run's rows in random order (another folder:
the manifest records it, and an ordered folder's files never match it).

What the data looks like (all vectorized with numpy/polars, one chunk of queries at a time, so XL never holds more
than one chunk of rows in memory):
- query ids are numeric strings; doc ids are numeric strings from a pool of 50M ids, drawn per query by an injective
  affine map `(a_q * slot + b_q) mod 50M` (a_q coprime with the pool size), so they are unique within a query;
- most queries retrieve `depth` documents, ~3% fewer (uniform in 1..depth);
- scores are integers of micro-units divided by 1e6 (the text's `%.6f` round-trips exactly and Parquet holds the same
  doubles), descending by exponential gaps (noise), with ~1% of rows copying the previous score (exact ties, tied
  documents in an order unrelated to their ids);
- judgments graded 0-3, ~50 per query: retrieved documents are judged with probability 0.75 in the top 10, decaying
  below (pool-like), one random position of every top 10 is left unjudged, and ~10 judged documents per query
  (Poisson) were not retrieved; grades are better near the top;
- ~3% of the judged queries have no relevant judgment (all grade 0), ~0.5% of the judged queries are missing from
  the run, ~0.5% of the run's queries have no judgments at all;
- shuffled (`--shuffled`): the run's rows of each chunk of ~4M rows in random order (seeded), so every query's rows
  are spread over its chunk among those of ~4,000 other queries, in no rank order; the chunks follow one another
  (a global shuffle would hold the whole run). The judgments are the same as the ordered data's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

GENERATOR_VERSION = 1
DEFAULT_SEED = 20240601
DOC_POOL = 50_000_000  # 2^7 * 5^8: a multiplier coprime with it is odd and not a multiple of 5
RUN_TAG = "bench"
ROWS_PER_CHUNK = 4_000_000  # run rows generated (and held) at once
PARQUET_ROW_GROUP = 1_000_000

# Per-query fractions.
SHORT_LIST_FRACTION = 0.03
NO_RELEVANT_FRACTION = 0.03
JUDGED_ONLY_FRACTION = 0.005  # judged, missing from the run
RUN_ONLY_FRACTION = 0.005  # in the run, no judgments
TIE_FRACTION = 0.01  # rows whose score copies the previous row's
EXTRA_JUDGED_MEAN = 10  # judged but not retrieved, Poisson mean
TOP_JUDGED_PROBABILITY = 0.75
JUDGED_DECAY = 43.0  # ranks below 10: probability 0.75 * exp(-(rank - 10) / 43)
# Grade distributions (0, 1, 2, 3) by where the judged document sits.
GRADES_TOP10 = (0.45, 0.25, 0.18, 0.12)
GRADES_BELOW = (0.70, 0.17, 0.09, 0.04)
GRADES_NOT_RETRIEVED = (0.80, 0.12, 0.06, 0.02)


@dataclass(frozen=True)
class Size:
    name: str
    queries: int
    depth: int
    text_run: bool = True


SIZES = {
    "tiny": Size("tiny", 50, 20),
    "S": Size("S", 1_000, 100),
    "M": Size("M", 7_000, 1_000),
    "L": Size("L", 50_000, 1_000),
    "XL": Size("XL", 500_000, 1_000, text_run=False),
}


@dataclass(frozen=True)
class Queries:
    """Query-level attributes for every query (small: one entry per query)."""

    ids: np.ndarray  # int64, printed as strings
    n_docs: np.ndarray  # documents the query's ranking has
    in_run: np.ndarray  # bool
    judged: np.ndarray  # bool
    no_relevant: np.ndarray  # bool: every grade 0
    extra_judged: np.ndarray  # judged documents that were not retrieved
    multiplier: np.ndarray  # a_q of the doc id map
    offset: np.ndarray  # b_q
    top_score: np.ndarray  # micro-units
    mean_gap: np.ndarray  # micro-units
    unjudged_top: np.ndarray  # position (0-based) in the top 10 forced unjudged


def _pick(rng: np.random.Generator, n: int, fraction: float, exclude: np.ndarray | None = None) -> np.ndarray:
    """A boolean mask of about `fraction * n` queries (at least one when n >= 20), avoiding `exclude`."""
    count = int(round(fraction * n))
    if count == 0 and n >= 20 and fraction > 0:
        count = 1
    candidates = np.flatnonzero(~exclude) if exclude is not None else np.arange(n)
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(candidates, size=min(count, candidates.size), replace=False)] = True
    return mask


def make_queries(size: Size, seed: int) -> Queries:
    rng = np.random.default_rng([seed, 0])
    n, depth = size.queries, size.depth
    ids = 100_000 + np.arange(n, dtype=np.int64) * 7 + rng.integers(0, 7, n)  # increasing, not contiguous
    short = rng.random(n) < SHORT_LIST_FRACTION
    n_docs = np.where(short, rng.integers(1, depth + 1, n), depth).astype(np.int64)
    judged_only = _pick(rng, n, JUDGED_ONLY_FRACTION)
    run_only = _pick(rng, n, RUN_ONLY_FRACTION, exclude=judged_only)
    no_relevant = _pick(rng, n, NO_RELEVANT_FRACTION, exclude=judged_only | run_only)
    multiplier = rng.integers(1, DOC_POOL, n, dtype=np.int64) | 1
    while (bad := multiplier % 5 == 0).any():  # a few passes at most, over the queries, not rows
        multiplier[bad] = (multiplier[bad] + 2) % DOC_POOL
    top_score = rng.integers(15_000_000, 40_000_000, n, dtype=np.int64)
    mean_gap = np.maximum(1.0, top_score * rng.uniform(0.3, 0.9, n) / depth)
    return Queries(
        ids=ids,
        n_docs=n_docs,
        in_run=~judged_only,
        judged=~run_only,
        no_relevant=no_relevant,
        extra_judged=rng.poisson(EXTRA_JUDGED_MEAN, n).astype(np.int64),
        multiplier=multiplier,
        offset=rng.integers(0, DOC_POOL, n, dtype=np.int64),
        top_score=top_score,
        mean_gap=mean_gap,
        unjudged_top=rng.integers(0, np.minimum(10, n_docs)),
    )


def _positions(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For groups of `counts` rows: the group index of each row and its position (0-based) within its group."""
    group = np.repeat(np.arange(counts.size), counts)
    starts = np.cumsum(counts) - counts
    return group, np.arange(counts.sum()) - starts[group]


def _grades(rng: np.random.Generator, bucket: np.ndarray) -> np.ndarray:
    """A grade 0-3 per row, from the distribution of its bucket (0 top 10, 1 retrieved below, 2 not retrieved)."""
    cumulative = np.cumsum(np.array([GRADES_TOP10, GRADES_BELOW, GRADES_NOT_RETRIEVED]), axis=1)
    u = rng.random(bucket.size)
    return (u[:, None] >= cumulative[bucket][:, :3]).sum(axis=1).astype(np.int32)


def make_chunk(queries: Queries, lo: int, hi: int, seed: int, chunk: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Run rows and judgments of queries [lo, hi): (query_id, doc_id, rank, score, run_tag) and
    (query_id, iteration, doc_id, relevance)."""
    rng = np.random.default_rng([seed, 1, chunk])
    n_docs = queries.n_docs[lo:hi]
    extra = queries.extra_judged[lo:hi]
    multiplier, offset = queries.multiplier[lo:hi], queries.offset[lo:hi]

    # The ranking of every query (also of those left out of the run: their judgments come from it).
    group, position = _positions(n_docs)
    gaps = np.floor(rng.exponential(queries.mean_gap[lo:hi][group])).astype(np.int64) + 1
    gaps[(position == 0) | (rng.random(group.size) < TIE_FRACTION)] = 0
    cumulative = np.cumsum(gaps)
    group_start = np.cumsum(n_docs) - n_docs
    score_units = queries.top_score[lo:hi][group] - (cumulative - cumulative[group_start][group])
    # Slots 0..n-1 of the doc id map in a random order per query, so that neighbours (and tied documents) have
    # unrelated ids; slots past n are the documents judged but not retrieved.
    slot = position[np.lexsort((rng.random(group.size), group))]
    doc = (multiplier[group] * slot + offset[group]) % DOC_POOL

    # Judged retrieved documents: pool-like, biased to the top, one forced hole in every top 10.
    probability = np.where(
        position < 10, TOP_JUDGED_PROBABILITY, TOP_JUDGED_PROBABILITY * np.exp(-(position - 9) / JUDGED_DECAY)
    )
    judged = rng.random(group.size) < probability
    judged &= position != queries.unjudged_top[lo:hi][group]
    # Judged documents that were not retrieved: slots past the ranking's end, distinct by injectivity.
    extra_group, extra_position = _positions(extra)
    extra_doc = (multiplier[extra_group] * (n_docs[extra_group] + extra_position) + offset[extra_group]) % DOC_POOL

    judged_group = np.concatenate([group[judged], extra_group])
    bucket = np.concatenate([np.where(position[judged] < 10, 0, 1), np.full(extra_group.size, 2)])
    grades = _grades(rng, bucket)
    grades[queries.no_relevant[lo:hi][judged_group]] = 0
    keep = queries.judged[lo:hi][judged_group]

    qids = pl.Series(queries.ids[lo:hi]).cast(pl.String)
    in_run = queries.in_run[lo:hi][group]
    run = pl.DataFrame(
        {
            "query_id": qids.gather(group[in_run]),
            "doc_id": pl.Series(doc[in_run]).cast(pl.String),
            "rank": pl.Series(position[in_run] + 1, dtype=pl.Int32),
            "score": pl.Series(score_units[in_run] / 1e6, dtype=pl.Float64),  # exact: k / 1e6 is correctly rounded
        }
    ).with_columns(run_tag=pl.lit(RUN_TAG))
    qrels = (
        pl.DataFrame(
            {
                "order": judged_group[keep],
                "query_id": qids.gather(judged_group[keep]),
                "doc_id": pl.Series(np.concatenate([doc[judged], extra_doc])[keep]).cast(pl.String),
                "relevance": pl.Series(grades[keep], dtype=pl.Int32),
            }
        )
        .sort("order", "doc_id")  # by query, then doc id as a string, as NIST's files are
        .select("query_id", iteration=pl.lit("0"), doc_id="doc_id", relevance="relevance")
    )
    return run, qrels


def _chunks(queries: Queries) -> list[tuple[int, int]]:
    """Query ranges of about ROWS_PER_CHUNK ranking rows each."""
    bounds, lo = [], 0
    totals = np.cumsum(queries.n_docs)
    n = queries.ids.size
    while lo < n:
        hi = int(np.searchsorted(totals, totals[lo] - queries.n_docs[lo] + ROWS_PER_CHUNK, side="right"))
        hi = max(hi, lo + 1)
        bounds.append((lo, min(hi, n)))
        lo = hi
    return bounds


RUN_SCHEMA = pa.schema(
    [
        ("query_id", pa.large_string()),
        ("doc_id", pa.large_string()),
        ("rank", pa.int32()),
        ("score", pa.float64()),
        ("run_tag", pa.large_string()),
    ]
)


def manifest_matches(out: Path, size: Size, seed: int, shuffled: bool = False) -> bool:
    manifest = out / "manifest.json"
    if not manifest.is_file():
        return False
    try:
        recorded = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return False
    # An ordered folder's manifest has no "shuffled" entry (those files came before the variant).
    if (recorded.get("size"), recorded.get("seed"), recorded.get("generator_version"),
            recorded.get("shuffled", False)) != (size.name, seed, GENERATOR_VERSION, shuffled):
        return False
    return all((out / name).is_file() and (out / name).stat().st_size == nbytes
               for name, nbytes in recorded.get("files", {}).items())


def generate(size_name: str, out: str | Path, seed: int = DEFAULT_SEED, force: bool = False,
             quiet: bool = False, shuffled: bool = False) -> dict:
    """Write the files of `size_name` into `out` (unless already there) and return the manifest. `shuffled`: each
    chunk's run rows in random order."""
    size = SIZES[size_name]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if not force and manifest_matches(out, size, seed, shuffled):
        return json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").unlink(missing_ok=True)
    started = time.perf_counter()
    queries = make_queries(size, seed)
    names = ["qrels.txt", "run.parquet"] + (["run.txt"] if size.text_run else [])
    temporary = {name: out / f"{name}.tmp-{os.getpid()}" for name in names}
    counts = {"run_rows": 0, "judgments": 0, "ties": 0, "relevant_judgments": 0}
    chunks = _chunks(queries)
    qrels_file = temporary["qrels.txt"].open("wb")
    run_file = temporary["run.txt"].open("wb") if size.text_run else None
    writer = pq.ParquetWriter(temporary["run.parquet"], RUN_SCHEMA, compression="zstd")
    try:
        for index, (lo, hi) in enumerate(chunks):
            run, qrels = make_chunk(queries, lo, hi, seed, index)
            counts["run_rows"] += run.height
            counts["judgments"] += qrels.height
            counts["relevant_judgments"] += int((qrels["relevance"] > 0).sum())
            same_query = pl.col("query_id") == pl.col("query_id").shift(1)
            counts["ties"] += int(run.select(((pl.col("score") == pl.col("score").shift(1)) & same_query).sum()).item())
            if shuffled:
                run = run.sample(fraction=1.0, shuffle=True, seed=seed + index)
            qrels.write_csv(qrels_file, separator=" ", include_header=False, quote_style="never")
            if run_file is not None:
                run.select("query_id", q0=pl.lit("Q0"), doc_id="doc_id", rank="rank", score="score",
                           run_tag="run_tag").write_csv(
                    run_file, separator=" ", include_header=False, quote_style="never", float_precision=6
                )
            writer.write_table(run.to_arrow().cast(RUN_SCHEMA), row_group_size=PARQUET_ROW_GROUP)
            if not quiet:
                print(f"  chunk {index + 1}/{len(chunks)}: queries {lo}-{hi}, {counts['run_rows']:,} run rows",
                      file=sys.stderr)
    finally:
        qrels_file.close()
        if run_file is not None:
            run_file.close()
        writer.close()
    for name, path in temporary.items():
        path.replace(out / name)
    manifest = {
        "size": size.name,
        "seed": seed,
        "generator_version": GENERATOR_VERSION,
        **({"shuffled": True} if shuffled else {}),
        "queries": size.queries,
        "depth": size.depth,
        "doc_pool": DOC_POOL,
        "rows_per_chunk": ROWS_PER_CHUNK,
        "chunks": len(chunks),
        "run_queries": int(queries.in_run.sum()),
        "judged_queries": int(queries.judged.sum()),
        "judged_queries_missing_from_run": int((~queries.in_run).sum()),
        "run_queries_without_judgments": int((~queries.judged).sum()),
        "judged_queries_without_relevant": int((queries.no_relevant & queries.judged).sum()),
        "short_lists": int((queries.n_docs < size.depth).sum()),
        **counts,
        "seconds": round(time.perf_counter() - started, 1),
        "files": {name: (out / name).stat().st_size for name in names},
        "spec": asdict(size),
    }
    (out / "manifest.json.tmp").write_text(json.dumps(manifest, indent=1))
    (out / "manifest.json.tmp").replace(out / "manifest.json")
    return manifest


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=list(SIZES), required=True)
    parser.add_argument("--out", required=True, help="Directory for qrels.txt, run.txt, run.parquet, manifest.json")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--force", action="store_true", help="Regenerate even when the manifest matches.")
    parser.add_argument("--shuffled", action="store_true", help="Each run's rows in random order (see above).")
    args = parser.parse_args(argv)
    manifest = generate(args.size, args.out, args.seed, args.force, shuffled=args.shuffled)
    print(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
