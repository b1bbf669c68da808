"""The Monte Carlo statistics on numpy give what the pure-Python versions gave: the sign-flip test and the task
bootstrap the same numbers for a seed (the same sign patterns, the same resampled tasks), the trend test the same
p within Monte Carlo error (its draws moved once to numpy's generator)."""

from __future__ import annotations

import math
import random
from operator import getitem

import pytest

from corral_core.metrics.paired import (
    _monte_carlo_bounds,
    _monte_carlo_extremes,
    bootstrap_mean_cis,
    expanded_alpha,
    percentile,
    sign_flip_tests,
)
from corral_core.metrics.trend import trend_test


def _old_tables(values: list[float]) -> list[list[float]]:
    tables = []
    for start in range(0, len(values), 8):
        table = [0.0]
        for v in values[start:start + 8]:
            table = table + [t + v for t in table]
        tables.append(table * (256 // len(table)))
    return tables


def _old_signed_sums(values: list[float], draws: int, seed: int) -> list[float]:
    """The pure-Python Monte Carlo of corral-tui before numpy (one random integer per draw, its bits the signs)."""
    tables = _old_tables(values)
    total = math.fsum(values)
    n_bytes = len(tables)
    rng = random.Random(seed)
    return [2.0 * sum(map(getitem, tables, rng.getrandbits(8 * n_bytes).to_bytes(n_bytes, "little"))) - total
            for _ in range(draws)]


def _differences(n: int, seed: int, shift: float) -> list[float]:
    rng = random.Random(seed)  # per-task mean differences of 5 trials: multiples of 0.2, like real runs
    return [round(sum(rng.random() < 0.5 + shift for _ in range(5)) / 5 - sum(rng.random() < 0.5 for _ in range(5))
                  / 5, 1) for _ in range(n)]


@pytest.mark.parametrize("n", [25, 61, 500])  # a short last block of 8, and the sweep's size
def test_the_monte_carlo_sign_flip_counts_are_those_of_the_pure_python_version(n: int) -> None:
    columns = [_differences(n, 1, 0.02), _differences(n, 2, 0.0)]
    thresholds = [abs(math.fsum(column)) - 1e-9 * max(1.0, math.fsum(map(abs, column))) for column in columns]
    for seed in (0, 7):
        old = [sum(abs(s) >= t for s in _old_signed_sums(column, 3_000, seed))
               for column, t in zip(columns, thresholds, strict=True)]
        assert _monte_carlo_extremes(columns, thresholds, 3_000, seed) == old
    if n > 100:  # beyond the exact path: the test's own p is (count + 1) / (draws + 1) from those counts
        tests = sign_flip_tests(columns, draws=3_000, seed=7)
        assert [t.method for t in tests] == ["monte-carlo", "monte-carlo"]
        assert [t.p_value for t in tests] == [(b + 1) / 3_001 for b in _monte_carlo_extremes(columns, thresholds,
                                                                                             3_000, 7)]


def test_the_monte_carlo_interval_bounds_are_those_of_the_pure_python_version() -> None:
    values = _differences(200, 3, 0.05)
    mean, alpha, draws, seed = math.fsum(values) / len(values), 0.05, 2_000, 0
    # the pure-Python bounds, pattern by pattern
    n, total = len(values), math.fsum(values)
    lows, highs, always = [], [], 0
    for a, s in zip(_old_signed_sums(values, draws, seed), _old_signed_sums([1.0] * n, draws, seed), strict=True):
        qa = s * s - n * n
        if qa >= 0.0:
            always += 1
            continue
        qb, qc = -2.0 * (a * s - total * n), a * a - total * total
        root = math.sqrt(max(0.0, qb * qb - 4.0 * qa * qc))
        r1, r2 = (-qb + root) / (2.0 * qa), (-qb - root) / (2.0 * qa)
        lows.append(min(r1, r2, mean))
        highs.append(max(r1, r2, mean))
    kept = max(0, math.ceil(alpha * (draws + 1) - 1.0 - 1e-9) - always)
    old = (sorted(lows)[kept - 1], sorted(highs, reverse=True)[kept - 1])
    assert _monte_carlo_bounds(values, mean, alpha, draws, seed) == pytest.approx(old, abs=1e-12)


def _old_trend_p(levels: list[str], rows: list[list[float]], draws: int, seed: int) -> float:
    """The pure-Python Monte Carlo trend p of corral-tui before numpy (levels shuffled within each task)."""
    count = len(levels)
    c = [j - (count - 1) / 2.0 for j in range(count)]
    observed = abs(math.fsum(math.fsum(cj * y for cj, y in zip(c, row, strict=True)) for row in rows))
    tolerance = 1e-9 * max(1.0, observed)
    rng, order, extreme = random.Random(seed), list(c), 0
    for _ in range(draws):
        total = 0.0
        for row in rows:
            rng.shuffle(order)
            total += math.fsum(o * y for o, y in zip(order, row, strict=True))
        extreme += abs(total) >= observed - tolerance
    return (extreme + 1) / (draws + 1)


@pytest.mark.parametrize("slope", [0.0, 0.01, 0.02])
def test_the_trend_p_agrees_with_the_pure_python_version_within_monte_carlo_error(slope: float) -> None:
    levels = [f"v{j}" for j in range(5)]
    rng = random.Random(4)
    bases = [rng.random() for _ in range(60)]
    rows = [[sum(rng.random() < min(1.0, base + slope * j) for _ in range(5)) / 5 for j in range(5)] for base in bases]
    means = {level: {f"t{t}": row[j] for t, row in enumerate(rows)} for j, level in enumerate(levels)}
    draws = 2_000
    new = trend_test(levels, means, seed=3, draws=draws)
    assert new is not None and new.p_method == "monte-carlo" and new.p_value is not None
    old = _old_trend_p(levels, rows, draws, seed=3)
    # two independent Monte Carlo estimates of the same p: 4 standard errors of their difference
    p = (old + new.p_value) / 2
    assert abs(new.p_value - old) <= 4 * math.sqrt(2 * p * (1 - p) / draws) + 2 / draws
    assert trend_test(levels, means, seed=3, draws=draws) == new  # seeded: reproducible


def _old_bootstrap(columns: list[list[float]], draws: int, seed: int) -> list[tuple[float, float]]:
    """The pure-Python task bootstrap of corral-tui before numpy (one resample shared by the columns)."""
    n = len(columns[0])
    uniform = random.Random(seed).random
    resampled: list[list[float]] = [[] for _ in columns]
    for _ in range(draws):
        chosen = [int(uniform() * n) for _ in range(n)]
        for column, out in zip(columns, resampled, strict=True):
            out.append(math.fsum(column[i] for i in chosen) / n)
    tail = expanded_alpha(n)
    bounds = []
    for column, out in zip(columns, resampled, strict=True):
        out.sort()
        mean = math.fsum(column) / n
        bounds.append((min(percentile(out, tail), mean), max(percentile(out, 1.0 - tail), mean)))
    return bounds


@pytest.mark.parametrize(("n", "seed"), [(3, 0), (40, 0), (300, 5), (40, 2**40 + 3)])
def test_the_task_bootstrap_gives_the_same_interval_as_the_pure_python_version(n: int, seed: int) -> None:
    rng = random.Random(n)
    columns = [[rng.random() for _ in range(n)], [float(rng.random() < 0.5) for _ in range(n)]]
    new = bootstrap_mean_cis(columns, draws=1_500, seed=seed)
    assert [ci.ci for ci in new if ci is not None] == _old_bootstrap(columns, 1_500, seed)
