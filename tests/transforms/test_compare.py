"""Tests of transforms/compare.py: the paired per-query table and the statistical tests, each against an independent
reference (scipy, exact enumeration, simulation with a known mean, hand-worked corrections)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from scipy import stats

from judged.schemas.spec import build_spec
from judged.transforms.paired_intervals import with_difference_intervals
from judged.transforms.compare import (
    adjusted_p_values,
    bootstrap_interval,
    bootstrap_intervals,
    cohens_d_z,
    paired_per_query,
    pair_table,
    paired_t_test,
    randomization_test,
    randomization_tests,
    randomised_tukey_hsd,
    sample_matrix,
    with_robustness,
    wins_ties_losses,
    with_measure,
)


def _pairs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(seed)
    baseline = generator.uniform(0, 1, n)
    return baseline, np.clip(baseline + generator.normal(0.05, 0.15, n), 0, 1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_t_test_is_scipy_ttest_rel(seed: int) -> None:
    baseline, run = _pairs(43, seed)
    ours = paired_t_test(run - baseline)
    reference = stats.ttest_rel(run, baseline)
    assert ours.statistic == pytest.approx(float(reference.statistic), abs=1e-12)
    assert ours.p_value == pytest.approx(float(reference.pvalue), abs=1e-12)


def test_t_test_undefined_when_differences_do_not_vary() -> None:
    assert paired_t_test(np.array([0.1, 0.1, 0.1])).p_value is None
    assert paired_t_test(np.array([0.3])).p_value is None
    assert cohens_d_z(np.array([0.2, 0.2])) is None


def _exact_by_enumeration(differences: np.ndarray) -> float:
    """Every sign vector listed one by one (itertools), independently of the vectorised enumeration."""
    observed = abs(differences.sum())
    extreme = sum(
        abs(np.dot(signs, differences)) >= observed - 1e-12
        for signs in itertools.product((1.0, -1.0), repeat=differences.size)
    )
    return extreme / 2**differences.size


@pytest.mark.parametrize("n", [4, 7, 10])
def test_randomization_exact_on_small_n(n: int) -> None:
    baseline, run = _pairs(n, n)
    differences = run - baseline
    result = randomization_test(differences, permutations=10_000, seed=0)
    assert result.method == "exact" and result.permutations == 2**n
    assert result.p_value == pytest.approx(_exact_by_enumeration(differences), abs=1e-15)


def test_randomization_sampled_approaches_exact_and_never_zero() -> None:
    baseline, run = _pairs(16, 5)  # 65,536 sign vectors: sampling 20,000 of them estimates the exact p
    differences = run - baseline
    exact = randomization_test(differences, permutations=2**16, seed=0)
    sampled = randomization_test(differences, permutations=20_000, seed=7)
    assert exact.method == "exact" and sampled.method == "sampled"
    # binomial standard error of a proportion near p over 20,000 draws is below 0.0036: 4 of them
    assert abs(sampled.p_value - exact.p_value) < 0.015
    far = randomization_test(np.full(40, 0.5) + np.linspace(0, 0.01, 40), permutations=1000, seed=0)
    assert far.p_value == pytest.approx(1 / 1001)  # b = 0: p = (0 + 1) / (B + 1), never 0


def test_same_seed_same_numbers() -> None:
    baseline, run = _pairs(60, 11)
    differences = run - baseline
    assert randomization_test(differences, 3000, 42) == randomization_test(differences, 3000, 42)
    assert bootstrap_interval(differences, 2000, 0.95, 42) == bootstrap_interval(differences, 2000, 0.95, 42)
    values = np.column_stack([baseline, run, (baseline + run) / 2])
    assert np.array_equal(randomised_tukey_hsd(values, 2000, 3), randomised_tukey_hsd(values, 2000, 3))
    assert randomization_test(differences, 3000, 42) != randomization_test(differences, 3000, 43)


def test_bootstrap_is_scipy_percentile_bootstrap() -> None:
    """The draws are scipy.stats.bootstrap's (one generator, DRAWS_PER_BLOCK resamples at a time): same seed, same
    interval to rounding, across more than one block."""
    generator = np.random.default_rng(5)
    for n in (7, 40):
        differences = generator.normal(0.02, 0.1, n)
        expected = stats.bootstrap((differences,), np.mean, n_resamples=3000, confidence_level=0.9,
                                   method="percentile", vectorized=True, batch=1000, rng=np.random.default_rng(11))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("judged.transforms.compare.DRAWS_PER_BLOCK", 1000)
            low, high = bootstrap_interval(differences, 3000, 0.9, 11)
        assert (low, high) == pytest.approx((expected.confidence_interval.low, expected.confidence_interval.high),
                                            abs=1e-12)


@pytest.mark.parametrize("shared_cells", [16_000_000, 10])
def test_draws_shared_across_samples_give_each_its_own_numbers(shared_cells: int) -> None:
    """Many pairs of one comparison share their draws (or, beyond SHARED_DRAW_CELLS, draw again): each sample's
    p-value and interval are those it has alone, whatever came before it."""
    generator = np.random.default_rng(2)
    samples = [generator.normal(0.01 * i, 0.1, n) for i, n in enumerate((10, 30, 10, 0, 1, 30, 20))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("judged.transforms.compare.SHARED_DRAW_CELLS", shared_cells)
        tests = randomization_tests(samples, 3000, 9)
        intervals = bootstrap_intervals(samples, 2000, 0.95, 9)
    assert tests == [randomization_test(sample, 3000, 9) for sample in samples]
    assert intervals == [bootstrap_interval(sample, 2000, 0.95, 9) for sample in samples]
    assert tests[0].method == "exact" and tests[1].method == "sampled" and tests[3].p_value is None
    assert intervals[4] == (None, None) and intervals[0] != intervals[2]


def test_bootstrap_interval_covers_the_true_mean_95_percent_of_the_time() -> None:
    """200 simulated samples of 40 differences with true mean 0.05: a 95% interval covers it in about 190 of them.
    The binomial(200, 0.95) count has standard deviation 3.08; 3 of them each side gives 181..199."""
    generator = np.random.default_rng(2024)
    covered = 0
    for simulation in range(200):
        differences = generator.normal(0.05, 0.2, 40)
        low, high = bootstrap_interval(differences, 2000, 0.95, simulation)
        covered += low <= 0.05 <= high
    assert 181 <= covered <= 199


def test_effect_size_and_counts() -> None:
    differences = np.array([0.2, -0.1, 0.0, 0.3, 1e-12])
    # mean 0.08, sd (ddof 1) = sqrt(((0.12)^2 + (0.18)^2 + (0.08)^2 + (0.22)^2 + (0.08)^2) / 4) = sqrt(0.027)
    assert cohens_d_z(differences) == pytest.approx(0.08 / np.sqrt(0.027), rel=1e-9)
    assert wins_ties_losses(differences, 1e-9) == (2, 2, 1)


def test_holm_and_benjamini_hochberg_against_a_hand_worked_family() -> None:
    p = [0.01, 0.04, 0.03, 0.005, None]
    # Holm, m = 4, sorted 0.005, 0.01, 0.03, 0.04: 4*0.005 = 0.02, 3*0.01 = 0.03, 2*0.03 = 0.06, 1*0.04 = 0.04 -> the
    # running maximum 0.06 for the last. The undefined p is no member of the family.
    assert adjusted_p_values(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02, None])
    # BH: p_(i) * m / i = 0.005*4/1 = 0.02, 0.01*4/2 = 0.02, 0.03*4/3 = 0.04, 0.04*4/4 = 0.04; running minimum from
    # the top leaves them.
    assert adjusted_p_values(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02, None])
    assert adjusted_p_values([0.5, 0.9, 0.8], "holm") == pytest.approx([1.0, 1.0, 1.0])


def test_tukey_hsd_separates_a_clearly_better_run() -> None:
    generator = np.random.default_rng(8)
    base = generator.uniform(0.2, 0.6, 50)
    values = np.column_stack([base, base + generator.normal(0.0, 0.02, 50), base + 0.2])
    p = randomised_tukey_hsd(values, 2000, 0)
    assert p[0, 2] == pytest.approx(1 / 2001) and p[1, 2] == pytest.approx(1 / 2001)
    assert p[0, 1] > 0.05
    assert np.allclose(p, p.T)


def test_tukey_hsd_of_two_runs_is_the_randomization_test() -> None:
    """With two runs, permuting a query's pair flips the sign of its difference and the spread of the two means is
    |mean difference|: the same null distribution as the sign-flip test, here checked against its exact p."""
    baseline, run = _pairs(14, 21)
    exact = randomization_test(run - baseline, 2**14, 0)
    assert exact.method == "exact"
    p = randomised_tukey_hsd(np.column_stack([baseline, run]), 20_000, 1)
    assert abs(p[0, 1] - exact.p_value) < 0.015  # 4 binomial standard errors at 20,000 draws


def _per_query(rows: list[tuple[str, int, str, float | None]]) -> pl.LazyFrame:
    return pl.DataFrame(
        rows, schema={"query_id": pl.String, "cutoff": pl.Int32, "status": pl.String, "value": pl.Float64},
        orient="row",
    ).lazy()


def test_paired_table_common_and_judged_query_sets() -> None:
    spec = build_spec("trec_eval", cutoffs=(10,))
    a = with_measure(_per_query([("q1", 10, "scored", 0.5), ("q2", 10, "scored", 0.2),
                                 ("q3", 10, "missing_from_run", None), ("q9", 10, "no_judgments", None)]), spec)
    b = with_measure(_per_query([("q1", 10, "scored", 0.7), ("q2", 10, "scored", 0.1),
                                 ("q3", 10, "scored", 0.4), ("q8", 10, "no_judgments", None)]), spec)
    common = paired_per_query([("a", a), ("b", b)], [("a", "b")], "common").collect()
    assert common["query_id"].to_list() == ["q1", "q2"]
    assert common["difference"].to_list() == pytest.approx([0.2, -0.1])
    assert common["measure"].to_list() == [spec.label(10)] * 2
    robust = with_robustness(with_difference_intervals(common.lazy(), None), 1e-9).collect()
    assert robust["robustness"].null_count() == 2  # no intervals: unknown, never guessed
    judged = paired_per_query([("a", a), ("b", b)], [("a", "b")], "judged").collect()
    assert judged["query_id"].to_list() == ["q1", "q2", "q3"]
    assert judged.filter(pl.col("query_id") == "q3")["baseline_value"].item() == 0.0  # missing: scored 0 (-c)
    matrix = sample_matrix([("a", a), ("b", b)], "common").collect()
    assert matrix.columns == ["measure", "cutoff", "query_id", "a", "b"] and matrix.height == 2


def test_paired_table_robustness_from_intervals() -> None:
    def frame(values: list[tuple[str, float, float, float]]) -> pl.LazyFrame:
        return pl.DataFrame(
            [(q, 10, "scored", v, lo, hi, "m") for q, v, lo, hi in values],
            schema={"query_id": pl.String, "cutoff": pl.Int32, "status": pl.String, "value": pl.Float64,
                    "value_min": pl.Float64, "value_max": pl.Float64, "measure": pl.String},
            orient="row",
        ).lazy()

    base = frame([("q1", 0.3, 0.3, 0.4), ("q2", 0.6, 0.5, 0.7), ("q3", 0.5, 0.4, 0.6), ("q4", 0.7, 0.7, 0.7),
                  ("q5", 0.7, 0.7, 0.7)])
    run = frame([("q1", 0.6, 0.5, 0.6), ("q2", 0.4, 0.3, 0.45), ("q3", 0.55, 0.55, 0.9), ("q4", 0.7, 0.7, 0.7),
                 ("q5", 0.7, 0.7, 0.75)])
    paired = paired_per_query([("base", base), ("run", run)], [("base", "run")], "common")
    table = with_robustness(with_difference_intervals(paired, None), 1e-9).collect()
    # The per-run intervals bound the difference: [run min - base max, run max - base min].
    # q1: run's min 0.5 > base's max 0.4; q2: run's max 0.45 < base's min 0.5; q3: [0.55, 0.9] meets [0.4, 0.6];
    # q4: both fixed at 0.7 whatever the missing judgments; q5: equal values, but the run could reach 0.75
    assert table["robustness"].cast(pl.String).to_list() == [
        "robust_win", "robust_loss", "unresolved", "robust_tie", "unresolved"
    ]


def test_pair_table_reads_each_pair_in_its_direction_and_sorts_decided_then_significant() -> None:
    rows = [  # baseline, run, measure, cutoff, mean_difference, its interval, CI, decided, significant
        ("a", "b", "nDCG", 10, -0.2, -0.3, -0.1, -0.25, -0.15, True, True),
        ("a", "c", "nDCG", 10, 0.05, -0.1, 0.2, 0.01, 0.09, False, True),
        ("b", "c", "nDCG", 10, 0.3, 0.1, 0.5, 0.2, 0.4, True, False),
        ("a", "b", "AP", None, 0.0, -0.1, 0.1, -0.05, 0.05, False, False),
    ]
    names = ["baseline", "run", "measure", "cutoff", "mean_difference", "mean_difference_min", "mean_difference_max",
             "ci_low", "ci_high", "decided", "significant"]
    frame = pl.DataFrame(rows, schema=names, orient="row").with_columns(
        *(pl.lit(None, pl.Int64).alias(c) for c in ("assessor_worlds_agree", "assessor_worlds", "unjudged_documents",
                                                    "open_queries", "disputed_documents", "disputed_queries")),
        *(pl.lit(None, pl.Float64).alias(c) for c in ("p_t", "p_randomization", "p_tukey_hsd")),
        p_adjusted=pl.lit(0.01), n_queries=pl.lit(50), effect_size=pl.col("mean_difference") * 2, wins=pl.lit(30),
        ties=pl.lit(5), losses=pl.lit(15), unresolved=pl.lit(0))
    table = pair_table(frame.lazy()).collect()
    assert table.select("better", "direction", "worse", "measure").rows() == [
        ("a", ">", "b", "nDCG"), ("c", ">", "b", "nDCG"), ("c", ">", "a", "nDCG"), ("b", "=", "a", "AP")]
    flipped = table.row(0, named=True)  # a - b read as b's loss: every end mirrored
    assert (flipped["mean_difference"], flipped["mean_difference_min"], flipped["mean_difference_max"],
            flipped["ci_low"], flipped["ci_high"], flipped["effect_size"]) == pytest.approx((0.2, 0.1, 0.3, 0.15, 0.25, 0.4))
    assert (flipped["wins"], flipped["ties"], flipped["losses"]) == (15, 5, 30)
    assert table.row(1, named=True)["mean_difference_min"] == pytest.approx(0.1)
