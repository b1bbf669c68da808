"""pass@k, pass^k, t quantiles, intervals and McNemar checked against known values."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction
from itertools import combinations

import pytest

from corral_core.metrics import (
    mcnemar_exact,
    mean_ci,
    pass_at_k,
    pass_hat_k,
    pass_k_over_tasks,
    proportion,
    t_cdf,
    t_quantile,
    wilson_interval,
)


def brute_force(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """Share of all k-subsets of n trials (c successes) with any success / with all successes."""
    trials = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    any_success = sum(any(trials[i] for i in s) for s in subsets)
    all_success = sum(all(trials[i] for i in s) for s in subsets)
    return Fraction(any_success, len(subsets)), Fraction(all_success, len(subsets))


@pytest.mark.parametrize("n", range(1, 7))
def test_pass_at_k_and_pass_hat_k_match_enumeration_of_every_subset(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            expected_any, expected_all = brute_force(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(float(expected_any), abs=1e-12), (n, c, k)
            assert pass_hat_k(n, c, k) == pytest.approx(float(expected_all), abs=1e-12), (n, c, k)


def test_pass_at_k_is_unbiased_where_corrals_formula_is_not() -> None:
    # corral-facts 7.4: n=4, c=1, k=4 -> Corral reports 1 - (3/4)^4 = 0.684; the truth is 1.0.
    assert pass_at_k(4, 1, 4) == 1.0
    assert pytest.approx(0.684, abs=1e-3) == 1 - (1 - 1 / 4) ** 4
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_hat_k(10, 3, 2) == pytest.approx(3 * 2 / (10 * 9))


def test_pass_at_k_stays_accurate_for_large_n() -> None:
    n, c, k = 400, 150, 60
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-12)
    exact_hat = Fraction(math.comb(c, k), math.comb(n, k))
    assert pass_hat_k(n, c, k) == pytest.approx(float(exact_hat), rel=1e-9)
    assert pass_at_k(1000, 1, 1) == pytest.approx(0.001)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 1, 0), (3, 4, 1), (3, -1, 1), (0, 0, 1)])
def test_pass_at_k_rejects_impossible_arguments(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_pass_k_over_tasks_averages_tasks_and_counts_the_short_ones() -> None:
    result = pass_k_over_tasks({"a": (4, 1), "b": (4, 4), "short": (2, 0)}, 3)
    assert result.n_tasks == 2 and result.n_tasks_excluded == 1
    assert result.pass_at_k == pytest.approx((0.75 + 1.0) / 2)  # 1 - C(3,3)/C(4,3) = 0.75
    assert result.pass_hat_k == pytest.approx((0.0 + 1.0) / 2)
    assert pass_k_over_tasks({"short": (1, 1)}, 2).pass_at_k is None


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (29, 2.045), (30, 2.042), (120, 1.980)],
)
def test_t_quantile_matches_the_table(df: int, expected: float) -> None:
    assert round(t_quantile(0.975, df), 3) == expected


def test_t_quantile_tails_symmetry_and_limit() -> None:
    assert round(t_quantile(0.995, 1), 3) == 63.657
    assert round(t_quantile(0.95, 5), 3) == 2.015
    assert t_quantile(0.025, 7) == pytest.approx(-t_quantile(0.975, 7))
    assert round(t_quantile(0.975, 10**6), 3) == 1.960
    assert round(t_quantile(0.975, 10**9), 3) == 1.960
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError):
            t_quantile(bad, 3)


def test_t_cdf_with_one_degree_of_freedom_is_the_cauchy_cdf() -> None:
    for t in (-30.0, -1.0, 0.0, 0.3, 2.0, 100.0):
        assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-12)


def test_mean_ci_uses_the_t_interval() -> None:
    estimate = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.7764451 * math.sqrt(2.5) / math.sqrt(5)
    assert estimate.value == 3.0 and estimate.n == 5
    assert estimate.ci == pytest.approx((3.0 - half, 3.0 + half), abs=1e-6)
    assert mean_ci([0.7]).ci is None and mean_ci([0.7]).value == 0.7
    assert mean_ci([]).value is None
    assert mean_ci([0.5, 0.5, 0.5]).ci == (0.5, 0.5)


def test_wilson_interval_known_value_and_edges() -> None:
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    low, high = wilson_interval(0, 5) or (None, None)
    assert low == 0.0 and 0.4 < high < 0.5
    low, high = wilson_interval(5, 5) or (None, None)
    assert high == 1.0 and 0.5 < low < 0.6
    assert wilson_interval(0, 0) is None
    assert proportion(3, 4).value == 0.75
    assert proportion(0, 0).value is None


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (1, 6, 2 * (1 + 7) / 2**7),
        (6, 1, 2 * (1 + 7) / 2**7),
        (0, 5, 2 / 2**5),
        (2, 10, 2 * (1 + 12 + 66) / 2**12),
        (3, 3, 1.0),
        (0, 0, 1.0),
    ],
)
def test_mcnemar_exact_is_the_two_sided_binomial_test(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_at_100000_trials_needs_no_big_integer_sums() -> None:
    """Above 1,000 discordant pairs the exact tail comes from the incomplete beta function."""
    p = mcnemar_exact(49_000, 51_000)
    assert 0.0 < p < 1e-9
    assert mcnemar_exact(50_000, 50_000) == 1.0
    assert mcnemar_exact(0, 100_000) == 0.0  # 2 / 2^100000 is below the float range
    # the two methods agree where they meet
    assert mcnemar_exact(480, 521) == pytest.approx(2 * sum(math.comb(1001, i) for i in range(481)) / 2**1001,
                                                    rel=1e-9)


def test_metrics_import_only_the_standard_library() -> None:
    code = (
        "import sys, corral_core.metrics\n"
        "bad = [m for m in ('numpy', 'scipy', 'textual', 'corral_tui', 'sqlmodel', 'litellm')"
        " if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_mean_ci_can_be_kept_inside_the_range_of_the_values():
    from corral_core.metrics.stats import UNIT, mean_ci

    open_interval = mean_ci([1.0, 1.0, 0.0])
    assert open_interval.ci[0] < 0.0 and open_interval.ci[1] > 1.0
    clipped = mean_ci([1.0, 1.0, 0.0], bounds=UNIT)
    assert clipped.value == open_interval.value
    assert clipped.ci == (0.0, 1.0)
