"""Paired comparison of runs: the paired per-query table, and the statistical tests as pure functions of arrays.

Belongs here: building the per-query pairs (baseline against each run, per measure and cutoff) from per-query
LazyFrames, and the numbers computed from paired differences: the paired t-test, the paired randomization test, the
paired bootstrap interval of the mean difference, Cohen's d_z, wins / ties / losses, the multiple-comparison
corrections (Holm, Benjamini-Hochberg) and the randomised Tukey HSD blocked by query (Sakai 2018). No I/O, no
global state: every random draw comes from a generator seeded by the caller.

References: Smucker, Allan & Carterette, "A comparison of statistical significance tests for information retrieval
evaluation", CIKM 2007 (randomization, bootstrap and t agree); Holm, "A simple sequentially rejective multiple test
procedure", Scand. J. Statist. 1979; Benjamini & Hochberg, JRSS B 1995; Sakai, "Laboratory Experiments in
Information Retrieval", Springer 2018, ch. 4 (randomised Tukey HSD).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl
from scipy import stats

from judged.schemas.comparison import ComparisonQuerySet, Correction
from judged.schemas.spec import EvaluationSpec

# Permutations or resamples drawn per block: the sign-flip (or index) matrix of a block holds this many rows times
# the number of queries, so memory stays bounded however many are asked for. Fixed, so a seed gives the same draws.
DRAWS_PER_BLOCK = 1_000


def with_measure(per_query: pl.LazyFrame, spec: EvaluationSpec) -> pl.LazyFrame:
    """The per-query rows with a `measure` column: kept when present, else the spec's label of each row's cutoff
    (the label the stored per-query table carries)."""
    if "measure" in per_query.collect_schema().names():
        return per_query
    labels = pl.DataFrame(
        {"cutoff": list(spec.cutoffs), "measure": [spec.label(k) for k in spec.cutoffs]},
        schema={"cutoff": pl.Int32, "measure": pl.String},
    ).lazy()
    return per_query.join(labels, on="cutoff", how="left", nulls_equal=True, maintain_order="left")


def _comparable_rows(
    name: str, per_query: pl.LazyFrame, query_set: ComparisonQuerySet, undefined: bool = False
) -> pl.LazyFrame:
    """One run's rows that may enter the paired sample: its value under the declared query set, and its interval
    when the evaluation carries one (null columns otherwise). With `undefined`, also the rows of a judged query
    whose value is undefined now (no relevant judgment, under no_relevant='null'), with a null value: such a query
    joins the sample in the worlds that give it a value (see `paired_per_query`)."""
    columns = per_query.collect_schema().names()
    interval = [
        (pl.col(bound) if bound in columns else pl.lit(None, pl.Float64)).alias(bound)
        for bound in ("value_min", "value_max")
    ]
    value = pl.col("value")
    status = pl.col("status")
    if query_set == "judged":
        # A judged query the run did not return scores 0 (trec_eval -c), unless its value is undefined anyway
        # (no relevant judgment): then it stays null and leaves the sample, as in `common`.
        defined = pl.col("idcg") > 0 if "idcg" in columns else pl.lit(True)
        missing = (status == "missing_from_run") & defined
        value = pl.when(missing).then(value.fill_null(0.0)).otherwise(value)
        interval = [pl.when(missing).then(bound.fill_null(0.0)).otherwise(bound) for bound in interval]
        keep = status != "no_judgments"
    else:
        keep = (status == "scored") | ((status == "no_relevant_judgments") & pl.lit(undefined))
    rows = per_query.filter(keep).select(
        pl.lit(name).alias("run"), "measure", "cutoff", "query_id", value.alias("value"), *interval
    )
    return rows if undefined else rows.filter(pl.col("value").is_not_null())


def paired_per_query(
    runs: Sequence[tuple[str, pl.LazyFrame]],
    pairs: Sequence[tuple[str, str]],
    query_set: ComparisonQuerySet,
) -> pl.LazyFrame:
    """Per pair (`pairs`: each (reference, run), the reference in the `baseline` column), measure, cutoff and query
    of the paired sample (queries with a value in every run): both values, the difference (run - reference) and
    both per-run intervals, in the order of `pairs`. Each frame needs `measure` (see `with_measure`), `cutoff`,
    `query_id`, `status` and `value`.

    A judged query whose value is undefined now in one run or more (no relevant judgment) has a row too, with a
    null difference: it joins the sample in the worlds where some unjudged document is relevant, and the pair's
    interval over every world counts it there (`transforms.summary.aggregate_interval`); the statistics leave it
    out."""
    names = [name for name, _ in runs]
    if len(set(names)) != len(names):
        raise ValueError(f"two runs share a name: {names}")
    unknown = sorted({name for pair in pairs for name in pair} - set(names))
    if unknown:
        raise ValueError(f"pairs name {unknown}, none of the runs {names}")
    rows = pl.concat([_comparable_rows(name, frame, query_set, undefined=True) for name, frame in runs])
    keys = ["measure", "cutoff", "query_id"]
    in_every_run = rows.group_by(keys).agg(
        pl.len().alias("n_runs"), valued=pl.col("value").is_not_null().all()
    ).filter(pl.col("n_runs") == len(runs))
    sample = rows.join(in_every_run.select(*keys, "valued"), on=keys, how="inner", nulls_equal=True)
    reference = sample.select(
        *keys, pl.col("run").alias("baseline"), "valued", pl.col("value").alias("baseline_value"),
        pl.col("value_min").alias("baseline_value_min"), pl.col("value_max").alias("baseline_value_max"),
    )
    compared = sample.select(
        *keys, "run", pl.col("value").alias("run_value"),
        pl.col("value_min").alias("run_value_min"), pl.col("value_max").alias("run_value_max"),
    )
    pair_order = pl.LazyFrame(
        {"baseline": [a for a, _ in pairs], "run": [b for _, b in pairs], "pair_order": list(range(len(pairs)))},
        schema={"baseline": pl.String, "run": pl.String, "pair_order": pl.Int64},
    )
    return (
        pair_order.join(reference, on="baseline", how="inner")
        .join(compared, on=["run", *keys], how="inner", nulls_equal=True)
        # A query without a value in every run is out of the sample now (`common`: the queries with a value in
        # every run), and in it in the worlds that give it one.
        .with_columns(difference=pl.when("valued").then(pl.col("run_value") - pl.col("baseline_value")))
        .sort("pair_order", "measure", "cutoff", "query_id", nulls_last=True)
        .select(
            "baseline", "run", "measure", "cutoff", "query_id", "baseline_value", "run_value", "difference",
            "baseline_value_min", "baseline_value_max", "run_value_min", "run_value_max",
        )
    )


def with_robustness(paired: pl.LazyFrame, tie_tolerance: float) -> pl.LazyFrame:
    """Whether the sign of each query's difference survives the missing judgments, from its difference interval
    (`transforms.paired_intervals.with_difference_intervals`): a robust win or loss when the interval lies beyond
    the tie tolerance on one side, a robust tie when it lies within it, unresolved otherwise; null without one."""
    low, high = pl.col("difference_min"), pl.col("difference_max")
    robustness = (
        pl.when(low.is_null()).then(pl.lit(None, pl.String))
        .when(low > tie_tolerance).then(pl.lit("robust_win"))
        .when(high < -tie_tolerance).then(pl.lit("robust_loss"))
        .when((low >= -tie_tolerance) & (high <= tie_tolerance)).then(pl.lit("robust_tie"))
        .otherwise(pl.lit("unresolved"))
    )
    return paired.with_columns(robustness=robustness)


def sample_matrix(runs: Sequence[tuple[str, pl.LazyFrame]], query_set: ComparisonQuerySet) -> pl.LazyFrame:
    """Per measure, cutoff and query of the paired sample, one value column per run (named after the run): the
    blocks of the Tukey HSD."""
    keys = ["measure", "cutoff", "query_id"]
    columns = [
        _comparable_rows(name, frame, query_set).select(*keys, pl.col("value").alias(name)) for name, frame in runs
    ]
    matrix = columns[0]
    for column in columns[1:]:
        matrix = matrix.join(column, on=keys, how="inner", nulls_equal=True)
    return matrix.sort(keys, nulls_last=True)


# -- tests on paired differences ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TTest:
    statistic: float | None
    p_value: float | None


def paired_t_test(differences: np.ndarray) -> TTest:
    """Two-sided paired Student t-test of mean difference 0 (scipy's one-sample test on the differences, which is
    `scipy.stats.ttest_rel`). Undefined (None) with fewer than two queries or when every difference is equal (the
    standard deviation is 0)."""
    if differences.size < 2 or np.ptp(differences) == 0:
        return TTest(None, None)
    result = stats.ttest_1samp(differences, 0.0)
    return TTest(float(result.statistic), float(result.pvalue))


@dataclass(frozen=True)
class RandomizationTest:
    p_value: float | None
    method: Literal["exact", "sampled"] | None
    permutations: int  # sign vectors evaluated: 2^n when exact, B when sampled


def randomization_test(differences: np.ndarray, permutations: int, seed: int) -> RandomizationTest:
    """Two-sided paired randomization (sign-flip) test of mean difference 0: under the null hypothesis each query's
    difference is as likely to have either sign. When 2^n <= `permutations` every sign vector is enumerated and
    p = #{|sum of flipped| >= |observed sum|} / 2^n exactly; otherwise B = `permutations` sign vectors are drawn
    (seeded) and p = (b + 1) / (B + 1), b counting the draws at least as extreme (never 0: the observed assignment
    is one of the possible ones). Sums are compared with a relative tolerance of 1e-12, so assignments equal to the
    observed one up to rounding count as extreme."""
    return randomization_tests([differences], permutations, seed)[0]


def randomization_tests(samples: Sequence[np.ndarray], permutations: int, seed: int) -> list[RandomizationTest]:
    """`randomization_test` of each sample. Every sample of n queries sees the same sign vectors (one seed), so they
    are drawn (or enumerated) once per n and shared while they fit `SHARED_DRAW_CELLS`: each sample's p-value is
    the one it has alone."""

    def sign_blocks(n: int) -> Iterator[np.ndarray]:
        if 2**n <= permutations:
            # Every sign vector: row i's signs are the bits of i.
            bits = (np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)) & 1
            yield 1 - 2 * bits.astype(np.float64)
            return
        generator = np.random.default_rng(seed)
        for start in range(0, permutations, DRAWS_PER_BLOCK):
            size = min(DRAWS_PER_BLOCK, permutations - start)
            yield 1.0 - 2.0 * generator.integers(0, 2, size=(size, n), dtype=np.int8)

    draws = _SharedDraws(sign_blocks, permutations)
    results = []
    for differences in samples:
        n = differences.size
        if n == 0:
            results.append(RandomizationTest(None, None, 0))
            continue
        observed = abs(float(differences.sum()))
        tolerance = 1e-12 * float(np.abs(differences).sum())
        extreme = sum(int(np.count_nonzero(np.abs(block @ differences) >= observed - tolerance))
                      for block in draws.blocks(n))
        if 2**n <= permutations:
            results.append(RandomizationTest(extreme / 2**n, "exact", 2**n))
        else:
            results.append(RandomizationTest((extreme + 1) / (permutations + 1), "sampled", permutations))
    return results


def bootstrap_interval(
    differences: np.ndarray, resamples: int, confidence_level: float, seed: int
) -> tuple[float | None, float | None]:
    """Percentile interval of the mean difference from the paired bootstrap: queries are resampled with
    replacement (each query keeps its pair), `resamples` times, seeded. None with fewer than two queries."""
    return bootstrap_intervals([differences], resamples, confidence_level, seed)[0]


def bootstrap_intervals(
    samples: Sequence[np.ndarray], resamples: int, confidence_level: float, seed: int
) -> list[tuple[float | None, float | None]]:
    """`bootstrap_interval` of each sample, by the draws of scipy.stats.bootstrap's percentile method: resamples
    drawn DRAWS_PER_BLOCK at a time from one generator seeded with `seed`, and the (1 - level) / 2 and
    (1 + level) / 2 quantiles of their means (linear interpolation); a resample's mean is computed from how often it
    draws each query. Every sample of n queries sees the same draws, shared while they fit `SHARED_DRAW_CELLS`:
    each sample's interval is the one it has alone, and scipy.stats.bootstrap's to rounding
    (tests/transforms/test_compare.py)."""
    alpha = (1 - confidence_level) / 2

    def count_blocks(n: int) -> Iterator[np.ndarray]:
        """Blocks of resamples x n: how often each resample draws each query."""
        generator = np.random.default_rng(seed)
        for start in range(0, resamples, DRAWS_PER_BLOCK):
            size = min(DRAWS_PER_BLOCK, resamples - start)
            drawn = generator.integers(0, n, (size, n)) + n * np.arange(size)[:, None]
            yield np.bincount(drawn.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)

    draws = _SharedDraws(count_blocks, resamples)
    results: list[tuple[float | None, float | None]] = []
    for differences in samples:
        n = differences.size
        if n < 2:
            results.append((None, None))
        elif np.ptp(differences) == 0:  # every resample has the same mean
            results.append((float(differences[0]), float(differences[0])))
        else:
            means = np.concatenate([block @ differences / n for block in draws.blocks(n)])
            low, high = np.quantile(means, [alpha, 1 - alpha])
            results.append((float(low), float(high)))
    return results


SHARED_DRAW_CELLS = 16_000_000
"""Draws x queries kept for the samples that share them (128 MB of doubles); more are drawn again for each sample,
a block at a time, so that memory stays bounded however many draws and queries there are."""


class _SharedDraws:
    """The blocks of draws `make(n)` yields for samples of n queries (`total` draws in all), made once and kept for
    the next sample of n while they fit SHARED_DRAW_CELLS, otherwise made again for each."""

    def __init__(self, make: Callable[[int], Iterator[np.ndarray]], total: int) -> None:
        self.make, self.total = make, total
        self.kept: dict[int, list[np.ndarray]] = {}

    def blocks(self, n: int) -> Iterable[np.ndarray]:
        if n in self.kept:
            return self.kept[n]
        if self.total * n > SHARED_DRAW_CELLS:
            return self.make(n)
        self.kept[n] = list(self.make(n))
        return self.kept[n]


def cohens_d_z(differences: np.ndarray) -> float | None:
    """Paired Cohen's d, the d_z variant: mean difference / sample standard deviation of the differences (ddof=1).
    None with fewer than two queries or when the differences do not vary."""
    if differences.size < 2 or np.ptp(differences) == 0:
        return None
    return float(differences.mean() / differences.std(ddof=1))


def wins_ties_losses(differences: np.ndarray, tie_tolerance: float) -> tuple[int, int, int]:
    """Queries where the run is better by more than the tolerance, within it, worse by more than it."""
    wins = int(np.count_nonzero(differences > tie_tolerance))
    losses = int(np.count_nonzero(differences < -tie_tolerance))
    return wins, differences.size - wins - losses, losses


def adjusted_p_values(p_values: Sequence[float | None], correction: Correction) -> list[float | None]:
    """The family's p-values corrected for multiple comparisons: Holm's step-down (family-wise error) or
    Benjamini-Hochberg (false discovery rate). Undefined p-values (None) stay None and are not members of the
    family."""
    defined = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if not defined:
        return adjusted
    ps = np.array([p_values[i] for i in defined], dtype=np.float64)
    corrected = holm(ps) if correction == "holm" else stats.false_discovery_control(ps, method="bh")
    for i, value in zip(defined, corrected, strict=True):
        adjusted[i] = float(value)
    return adjusted


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values: the i-th smallest (1-based) becomes max over j <= i of min(1, (m - j + 1) p_(j))."""
    m = p_values.size
    order = np.argsort(p_values, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p_values[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted


def randomised_tukey_hsd(values: np.ndarray, permutations: int, seed: int) -> np.ndarray:
    """Randomised Tukey HSD blocked by query (Sakai 2018): `values` is queries x runs. Under the null hypothesis
    the runs' values for a query are exchangeable, so each draw permutes every query's row independently and
    records the largest difference between two runs' means; the p-value of runs i and j is (b + 1) / (B + 1), b
    counting the draws whose largest difference reaches |mean_i - mean_j|. It controls the family-wise error over
    all pairs of runs. Returns the runs x runs matrix of p-values (1 on the diagonal)."""
    n, m = values.shape
    means = values.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    tolerance = 1e-12 * float(np.abs(values).sum()) / max(n, 1)
    generator = np.random.default_rng(seed)
    reached = np.zeros((m, m), dtype=np.int64)
    for start in range(0, permutations, DRAWS_PER_BLOCK):
        size = min(DRAWS_PER_BLOCK, permutations - start)
        shuffled = generator.permuted(np.broadcast_to(values, (size, n, m)), axis=2)
        draw_means = shuffled.mean(axis=1)
        largest = draw_means.max(axis=1) - draw_means.min(axis=1)
        reached += np.count_nonzero(largest[:, None, None] >= observed[None, :, :] - tolerance, axis=0)
    p_values = (reached + 1) / (permutations + 1)
    np.fill_diagonal(p_values, 1.0)
    return p_values


PAIR_TABLE_COLUMNS = (
    "measure", "cutoff", "better", "worse", "direction", "mean_difference", "mean_difference_min",
    "mean_difference_max", "assessor_worlds_agree", "assessor_worlds", "ci_low", "ci_high", "p_adjusted", "decided",
    "significant", "unjudged_documents", "open_queries", "disputed_documents", "disputed_queries", "n_queries",
    "p_t", "p_randomization", "p_tukey_hsd", "effect_size", "wins", "ties", "losses", "unresolved",
)
"""The pair table's columns: each pair oriented so that its mean difference (better - worse) is not negative."""


def pair_table(pairs: pl.LazyFrame) -> pl.LazyFrame:
    """Every pair of a comparison's statistics (one row per pair, measure and cutoff) read in the direction of its
    mean difference: `better` and `worse` (the run, then the reference, when the run is ahead or level), `direction`
    (`>`, or `=` when the mean difference is 0 or null), the mean difference, its interval over the unjudged worlds
    and its bootstrap CI turned to read better - worse (its effect size, wins and losses too). Per measure and cutoff (in the order given), the decided
    pairs first, then the significant ones, then by mean difference, largest first; the pair names break ties."""
    ahead = pl.col("mean_difference").fill_null(0.0) >= 0

    def oriented(value: str, mirrored: str) -> pl.Expr:
        """`value` when the run is ahead, else minus `mirrored` (an interval's other end)."""
        return pl.when(ahead).then(pl.col(value)).otherwise(-pl.col(mirrored)).alias(value)

    order = pairs.select("measure", "cutoff").unique(maintain_order=True).with_row_index("_measure_order")
    return (
        pairs.with_columns(
            better=pl.when(ahead).then("run").otherwise("baseline"),
            worse=pl.when(ahead).then("baseline").otherwise("run"),
            direction=pl.when(pl.col("mean_difference").fill_null(0.0) == 0).then(pl.lit("=")).otherwise(pl.lit(">")),
        )
        .with_columns(
            oriented("mean_difference", "mean_difference"),
            oriented("mean_difference_min", "mean_difference_max"),
            oriented("mean_difference_max", "mean_difference_min"),
            oriented("ci_low", "ci_high"), oriented("ci_high", "ci_low"), oriented("effect_size", "effect_size"),
            wins=pl.when(ahead).then("wins").otherwise("losses"), losses=pl.when(ahead).then("losses").otherwise("wins"),
        )
        .join(order, on=["measure", "cutoff"], how="left", nulls_equal=True)
        .sort(
            "_measure_order", pl.col("decided").fill_null(False), pl.col("significant").fill_null(False),
            "mean_difference", "better", "worse",
            descending=[False, True, True, True, False, False], nulls_last=True,
        )
        .select(PAIR_TABLE_COLUMNS)
    )
