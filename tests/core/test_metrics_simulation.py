"""Seeded simulation: is the primary comparison honest when tasks differ?

Each simulated benchmark has 16 tasks and 5 trials per task and arm. Tasks differ in difficulty
(base success 0.35 to 0.5) and in how each arm suits them: a task-by-arm effect u uniform on
[-0.5, 0.5] splits between the arms (A: base - u/2, B: base + delta + u/2). With delta = 0 the arms
are exchangeable within every task (no true difference), yet the trials of a task share their
task's rates: exactly the case where trial-level tests are overconfident.
"""

from __future__ import annotations

import random

from corral_core.metrics import mcnemar_exact, sign_flip_interval, sign_flip_test

BENCHMARKS, TASKS, TRIALS, SPREAD, ALPHA = 400, 16, 5, 0.5, 0.05


def simulate(rng: random.Random, delta: float) -> tuple[list[float], int, int]:
    """Per-task differences of mean score (B - A), and the trial-level discordant pair counts."""
    diffs, only_a, only_b = [], 0, 0
    for _ in range(TASKS):
        base, u = rng.uniform(0.35, 0.5), rng.uniform(-SPREAD, SPREAD)
        rate_a, rate_b = base - u / 2, base + delta + u / 2
        a = [rng.random() < rate_a for _ in range(TRIALS)]
        b = [rng.random() < rate_b for _ in range(TRIALS)]
        diffs.append((sum(b) - sum(a)) / TRIALS)
        only_a += sum(x and not y for x, y in zip(a, b, strict=True))
        only_b += sum(y and not x for x, y in zip(a, b, strict=True))
    return diffs, only_a, only_b


def test_without_a_true_difference_the_primary_test_keeps_its_level() -> None:
    rng = random.Random(20240509)
    primary = trial_level = 0
    for _ in range(BENCHMARKS):
        diffs, only_a, only_b = simulate(rng, 0.0)
        primary += sign_flip_test(diffs).p_value < ALPHA
        trial_level += mcnemar_exact(only_a, only_b) < ALPHA
    assert primary / BENCHMARKS <= 0.065, primary / BENCHMARKS
    # the trial-level test on the same benchmarks declares differences that are not there
    assert trial_level / BENCHMARKS > 0.065, trial_level / BENCHMARKS


def test_with_a_true_difference_the_interval_covers_it() -> None:
    rng = random.Random(20240510)
    delta, covered = 0.15, 0
    for seed in range(BENCHMARKS):
        diffs, _, _ = simulate(rng, delta)
        interval = sign_flip_interval(diffs, seed=seed)  # the test inverted (was: the cluster bootstrap)
        assert interval.ci is not None and interval.method == "sign-flip inversion (exact)"
        covered += interval.ci[0] <= delta <= interval.ci[1]
    assert covered / BENCHMARKS >= 0.93, covered / BENCHMARKS
