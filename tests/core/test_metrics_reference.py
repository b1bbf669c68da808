"""Every statistic corral-tui prints, checked against scipy / statsmodels (test extras only; the runtime
computes them in pure Python)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import scipy.stats as ss
from scipy.special import comb
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from corral_core.metrics import (
    Cluster,
    bootstrap_mean_ci,
    clustered_mean,
    clustered_proportion,
    cohens_dz,
    holm,
    mcnemar_exact,
    mean_ci,
    pass_at_k,
    pass_hat_k,
    sign_flip_test,
    t_cdf,
    t_quantile,
    task_mean_interval,
    wilson_interval,
)
from corral_core.metrics.intervals import cluster_variance
from corral_core.metrics.paired import expanded_alpha
from corral_core.metrics.stats import wilson_from_rate


def test_pass_at_k_and_pass_hat_k_match_scipy_binomials() -> None:
    for n in range(1, 30, 3):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k, exact=True) / comb(n, k, exact=True),
                                                           abs=1e-12)
                assert pass_hat_k(n, c, k) == pytest.approx(comb(c, k, exact=True) / comb(n, k, exact=True),
                                                            abs=1e-12)


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9, 29, 120, 5000])
def test_t_distribution_matches_scipy(df: int) -> None:
    for q in (0.6, 0.9, 0.95, 0.975, 0.995):
        assert t_quantile(q, df) == pytest.approx(ss.t.ppf(q, df), rel=1e-9)
    for t in (-4.0, -1.0, 0.0, 0.5, 2.0, 7.0):
        assert t_cdf(t, df) == pytest.approx(ss.t.cdf(t, df), abs=1e-12)


def test_t_interval_matches_scipy() -> None:
    rng = random.Random(1)
    for n in (2, 3, 10, 40):
        values = [rng.random() for _ in range(n)]
        low, high = ss.t.interval(0.95, n - 1, loc=np.mean(values), scale=ss.sem(values))
        assert mean_ci(values).ci == pytest.approx((low, high), rel=1e-9)
        assert task_mean_interval(values).ci == pytest.approx((max(low, 0.0), min(high, 1.0)), rel=1e-9)


def test_wilson_matches_statsmodels_including_fractional_effective_n() -> None:
    for count, n in [(0, 5), (5, 5), (8, 10), (3, 17), (50, 100)]:
        assert wilson_interval(count, n) == pytest.approx(proportion_confint(count, n, method="wilson"), abs=1e-12)
    for p, n_eff in [(0.3, 9.0), (0.42, 13.7), (0.9, 4.2)]:
        expected = proportion_confint(p * n_eff, n_eff, method="wilson")
        assert wilson_from_rate(p, n_eff) == pytest.approx(expected, abs=1e-12)


def test_mcnemar_matches_statsmodels_and_scipy_up_to_100000_trials() -> None:
    for b, c in [(0, 0), (1, 6), (6, 1), (0, 5), (2, 10), (3, 3), (12, 30)]:
        assert mcnemar_exact(b, c) == pytest.approx(mcnemar([[0, b], [c, 0]], exact=True).pvalue, rel=1e-12)
    for b, c in [(400, 620), (2_000, 2_100), (49_000, 51_000), (49_900, 50_100)]:
        assert mcnemar_exact(b, c) == pytest.approx(ss.binomtest(b, b + c, 0.5).pvalue, rel=1e-8)


def test_exact_sign_flip_matches_scipy_permutation_test() -> None:
    rng = random.Random(7)
    for n in (2, 3, 5, 8, 11, 14):
        for _ in range(4):
            diffs = [round(rng.gauss(0.1, 0.3), 2) for _ in range(n)]
            diffs[0] = 0.0  # a tie: contributes nothing, as in scipy
            if n > 4:
                diffs[1] = -diffs[2]  # equal magnitudes: ties in the permutation distribution
            ours = sign_flip_test(diffs)
            reference = ss.permutation_test((np.array(diffs),), np.mean, permutation_type="samples",
                                            n_resamples=np.inf, alternative="two-sided")
            assert ours.method == "exact"
            assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-9), diffs


def test_exact_sign_flip_at_24_nonzero_differences_matches_an_independent_count() -> None:
    """scipy's exact enumeration at 2^24 patterns needs ~24 GB; on integer-valued differences the
    null distribution is a convolution, counted exactly by dynamic programming."""
    rng = random.Random(11)
    steps = [rng.choice([-1, 1]) * rng.randint(1, 40) for _ in range(24)]
    ways = {0: 1}  # signed sum -> number of sign patterns
    for step in steps:
        following: dict[int, int] = {}
        for total, count in ways.items():
            for signed in (total + step, total - step):
                following[signed] = following.get(signed, 0) + count
        ways = following
    observed = abs(sum(steps))
    expected = sum(count for total, count in ways.items() if abs(total) >= observed) / 2**24
    ours = sign_flip_test([s / 100 for s in steps])
    assert ours.method == "exact" and ours.n_nonzero == 24
    assert ours.p_value == pytest.approx(expected, rel=1e-12)


def test_monte_carlo_sign_flip_agrees_with_the_exact_p() -> None:
    rng = random.Random(3)
    for _ in range(3):
        diffs = [rng.gauss(0.08, 0.3) for _ in range(20)]
        exact = sign_flip_test(diffs).p_value
        sampled = sign_flip_test(diffs, exact_max=10, seed=1)  # force Monte Carlo
        assert sampled.method == "monte-carlo" and sampled.draws == 10_000
        tolerance = 4 * math.sqrt(exact * (1 - exact) / 10_000) + 1 / 10_001
        assert abs(sampled.p_value - exact) < tolerance
        assert sampled.p_value >= sampled.min_p == pytest.approx(1 / 10_001)


def test_monte_carlo_sign_flip_matches_scipy_beyond_the_exact_range() -> None:
    rng = random.Random(5)
    diffs = [rng.gauss(0.05, 0.3) for _ in range(60)]
    ours = sign_flip_test(diffs)
    reference = ss.permutation_test((np.array(diffs),), np.mean, permutation_type="samples", n_resamples=50_000,
                                    alternative="two-sided", random_state=1).pvalue
    assert ours.method == "monte-carlo"
    assert abs(ours.p_value - reference) < 4 * math.sqrt(reference * (1 - reference) * (1 / 10_000 + 1 / 50_000))


def test_cluster_bootstrap_matches_scipy_bootstrap_percentile_at_the_expanded_level() -> None:
    rng = random.Random(9)
    for n in (6, 15, 40):
        values = [rng.gauss(0.1, 0.3) for _ in range(n)]
        ours = bootstrap_mean_ci(values, draws=40_000, seed=2)
        assert ours is not None and ours.method == "cluster-bootstrap"
        tail = expanded_alpha(n)
        reference = ss.bootstrap((np.array(values),), np.mean, confidence_level=1 - 2 * tail, method="percentile",
                                 n_resamples=100_000, random_state=1).confidence_interval
        spread = float(np.std(values, ddof=1) / math.sqrt(n))
        assert ours.ci[0] == pytest.approx(reference.low, abs=0.08 * spread)
        assert ours.ci[1] == pytest.approx(reference.high, abs=0.08 * spread)


def test_expanded_alpha_is_hesterbergs_formula() -> None:
    for n in (2, 5, 20, 200):
        expected = ss.norm.cdf(-math.sqrt(n / (n - 1)) * ss.t.ppf(0.975, n - 1))
        assert expanded_alpha(n) == pytest.approx(expected, rel=1e-9)


def test_above_2000_tasks_the_interval_is_the_t_interval_it_converges_to() -> None:
    rng = random.Random(4)
    values = [rng.gauss(0.02, 0.3) for _ in range(2_500)]
    ours = bootstrap_mean_ci(values)
    assert ours is not None and ours.method == "t" and ours.draws is None
    low, high = ss.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=ss.sem(values))
    assert ours.ci == pytest.approx((low, high), rel=1e-9)


def test_holm_matches_statsmodels() -> None:
    rng = random.Random(2)
    for m in (1, 2, 3, 6, 10):
        p_values = [rng.random() ** 3 for _ in range(m)]
        assert holm(p_values) == pytest.approx(list(multipletests(p_values, method="holm")[1]), rel=1e-12)


def test_cohens_dz_matches_numpy() -> None:
    diffs = [0.1, 0.4, -0.2, 0.3, 0.25]
    assert cohens_dz(diffs) == pytest.approx(np.mean(diffs) / np.std(diffs, ddof=1), rel=1e-12)


def _clustered_data(seed: int, tasks: int, binary: bool) -> tuple[list[float], list[int]]:
    rng = random.Random(seed)
    values, groups = [], []
    for g in range(tasks):
        level = rng.random()
        for _ in range(rng.randint(1, 6)):  # unbalanced: 1 to 6 trials per task
            values.append(float(rng.random() < level) if binary else min(1.0, max(0.0, rng.gauss(level, 0.2))))
            groups.append(g)
    return values, groups


def _ols_cluster(values: list[float], groups: list[int]):  # type: ignore[no-untyped-def]
    return OLS(np.array(values), np.ones(len(values))).fit(cov_type="cluster", cov_kwds={"groups": np.array(groups)},
                                                           use_t=True)


def _clusters(values: list[float], groups: list[int]) -> list[Cluster]:
    by_group: dict[int, list[float]] = {}
    for v, g in zip(values, groups, strict=True):
        by_group.setdefault(g, []).append(v)
    return [Cluster(len(vs), math.fsum(vs), math.fsum(v * v for v in vs)) for vs in by_group.values()]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_clustered_standard_error_matches_statsmodels_cluster_covariance(seed: int) -> None:
    values, groups = _clustered_data(seed, 12, binary=False)
    fit = _ols_cluster(values, groups)
    clusters = _clusters(values, groups)
    mean = float(np.mean(values))
    assert math.sqrt(cluster_variance(clusters, mean)) == pytest.approx(fit.bse[0], rel=1e-9)
    low, high = fit.conf_int(alpha=0.05)[0]  # t with G - 1 degrees of freedom
    estimate = clustered_mean(clusters)
    assert estimate.method == "cluster-se-by-task" and estimate.n_tasks == 12
    assert estimate.ci == pytest.approx((max(low, 0.0), min(high, 1.0)), rel=1e-9)


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_clustered_proportion_is_wilson_on_the_statsmodels_effective_n(seed: int) -> None:
    values, groups = _clustered_data(seed, 15, binary=True)
    fit = _ols_cluster(values, groups)
    p, n = float(np.mean(values)), len(values)
    n_eff = min(n, p * (1 - p) / fit.bse[0] ** 2)  # design effect = clustered / binomial variance, at least 1
    estimate = clustered_proportion(_clusters(values, groups))
    assert estimate.value == pytest.approx(p) and estimate.method == "wilson-deff-by-task"
    assert estimate.ci == pytest.approx(proportion_confint(p * n_eff, n_eff, method="wilson"), rel=1e-9)


def test_above_5000_nonzero_differences_the_sign_flip_p_is_its_normal_limit() -> None:
    """The sign-flip sum has mean 0 and variance sum(d^2); scipy's normal tail gives the reference, and
    the Monte Carlo test on the same differences (forced) agrees within its own error."""
    rng = random.Random(8)
    diffs = [min(1.0, max(-1.0, rng.gauss(0.012, 0.4))) for _ in range(6_000)]
    ours = sign_flip_test(diffs)
    z = abs(sum(diffs)) / math.sqrt(sum(d * d for d in diffs))
    assert ours.method == "normal" and ours.draws is None and ours.n_nonzero == 6_000
    assert ours.p_value == pytest.approx(2 * ss.norm.sf(z), rel=1e-6)  # ties tolerance: |sum| - 1e-9 * sum|d|
    sampled = sign_flip_test(diffs, monte_carlo_max=10_000, seed=3)
    assert sampled.method == "monte-carlo"
    assert abs(sampled.p_value - ours.p_value) < 4 * math.sqrt(ours.p_value * (1 - ours.p_value) / 10_000) + 1e-4


def test_above_5000_lattice_differences_the_normal_tail_is_continuity_corrected() -> None:
    """One trial per task: differences in {-1, 0, 1}, so the sign-flip sum is 2B - k with B binomial. The
    plain normal tail was anti-conservative (by up to 0.005); the corrected one matches scipy's exact test."""
    rng = random.Random(12)
    for shift in (0.0, 0.02, 0.035):
        diffs = [1.0 if rng.random() < 0.5 + shift else -1.0 for _ in range(5_200)]
        ours = sign_flip_test(diffs)
        wins = sum(d > 0 for d in diffs)
        exact = ss.binomtest(wins, len(diffs), 0.5).pvalue
        assert ours.method == "normal (continuity-corrected)"
        assert ours.p_value == pytest.approx(exact, abs=2e-4), (shift, ours.p_value, exact)
        assert ours.p_value >= exact - 2e-4
