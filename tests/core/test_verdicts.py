"""Verdicts a reviewer accepts: errors outside the agent kept apart, intervals that agree with the test
and never lie by width, and a verdict that says when the design cannot give one."""

from __future__ import annotations

import random

import pytest

from corral_core.metrics import TrialResult, analyse, compare_arms, sign_flip_interval, sign_flip_test


def scored(arm: str, per_task: list[list[float]]) -> list[TrialResult]:
    return [TrialResult(task_id=f"t{i}", arm=arm, trial_index=j, score=s)
            for i, scores in enumerate(per_task) for j, s in enumerate(scores)]


def identical_agents_b_provider_down(fault: str = "provider") -> list[TrialResult]:
    """The issue's case: two identical agents, 8 tasks x 3 trials; B's provider fails on 6 of the 8 tasks."""
    records = []
    for t in range(8):
        for i in range(3):
            score = 1.0 if (t + i) % 3 else 0.0
            records.append(TrialResult(f"t{t}", "A", i, score=score))
            if t < 6:
                records.append(TrialResult(f"t{t}", "B", i, status="error", error="429 from the provider",
                                           fault=fault))
            else:
                records.append(TrialResult(f"t{t}", "B", i, score=score))
    return records


def test_identical_agents_with_provider_errors_get_no_verdict_and_the_errors_apart() -> None:
    """Before: "A better on score (8 tasks): score -0.750 ..., sign-flip p=0.032"."""
    result = analyse(identical_agents_b_provider_down(), ["A", "B"])
    b = result.arms["B"]
    # errored trials are missing, not zeros: B's score is over its 2 scored tasks, like A's on them
    assert (b.n_trials, b.n_missing, b.missing_by_fault) == (6, 18, {"provider": 18})
    assert b.tasks_only_missing == [f"t{t}" for t in range(6)]
    assert b.average_score.value == pytest.approx(2 / 3) and b.error_rate.value == pytest.approx(0.75)
    (c,) = result.comparisons
    assert c.verdict.startswith("no verdict: errors outside the agent differ (A 0 of 24 trials, B 18 of 24")
    assert "better" not in c.verdict and c.n_tasks == 2
    assert c.errors is not None and (c.errors.missing_a, c.errors.missing_b) == (0, 18)
    assert "errors outside the agent, left out: A 0 of 24, B 18 of 24 (provider 18)" in c.summary
    assert "unpaired tasks: A 6 (t0, t1, t2, t3, t4 …), B 0" in c.summary
    # the sensitivity line counts them as failures, which is what the old verdict rested on
    assert c.sensitivity is not None and c.sensitivity.n_tasks == 8
    assert c.sensitivity.mean_diff == pytest.approx(-0.5) and c.sensitivity.p_value == pytest.approx(2 / 2**6)
    assert "sensitivity, errors as failures: score -0.500 over 8 tasks, sign-flip p=0.032" in c.summary


def test_the_agents_own_errors_stay_failures() -> None:
    result = analyse(identical_agents_b_provider_down(fault="agent"), ["A", "B"])
    b = result.arms["B"]
    assert (b.n_trials, b.n_missing, b.errors_by_fault) == (24, 0, {"agent": 18})
    (c,) = result.comparisons
    assert c.n_tasks == 8 and c.sensitivity is None and c.verdict == "A better on score"


def test_a_few_errors_alike_in_both_arms_do_not_withhold_the_verdict() -> None:
    a = scored("a", [[0.1, 0.2]] * 10)
    b = scored("b", [[0.8, 0.9]] * 10)
    for records in (a, b):
        records[0] = records[0].evolve(status="timeout", error="ran out of time", fault="timeout")
    c = compare_arms(a, b)
    assert c.errors is not None and c.errors.withheld is None and c.verdict == "b better on score"
    assert "errors outside the agent, left out: a 1 of 20 (timeout 1), b 1 of 20 (timeout 1)" in c.summary


def random_design(rng: random.Random, tasks: int, trials: int, rate_a: float, rate_b: float
                  ) -> tuple[list[TrialResult], list[TrialResult]]:
    a = scored("a", [[float(rng.random() < rate_a) for _ in range(trials)] for _ in range(tasks)])
    b = scored("b", [[float(rng.random() < rate_b) for _ in range(trials)] for _ in range(tasks)])
    return a, b


def test_the_difference_interval_agrees_with_the_test_and_is_never_zero_width_by_accident() -> None:
    """Before: 391 zero-width difference intervals and 2,124 intervals excluding 0 under "no clear difference"
    in 22,474 designs of 1-5 tasks x 1-3 trials."""
    rng = random.Random(7)
    for tasks in range(1, 9):
        for trials in (1, 2, 3):
            for _ in range(40):
                c = compare_arms(*random_design(rng, tasks, trials, 0.5, 0.6))
                s = c.score
                if s.ci is None:
                    assert tasks == 1
                    continue
                assert (s.p_value < 0.05) == (not s.ci[0] <= 0.0 <= s.ci[1]), (tasks, trials, s)
                if s.ci[0] == s.ci[1]:
                    assert s.ci_note == "no variation: every trial of each arm scored the same on each task"
                if tasks <= 5:
                    assert s.ci == (-1.0, 1.0) and "whole range" in (s.ci_note or "")


def test_equal_task_differences_with_varied_trials_get_the_floor_width() -> None:
    a = scored("a", [[1.0, 0.0]] * 8)
    b = scored("b", [[0.0, 1.0]] * 8)
    c = compare_arms(a, b)
    assert c.score.mean_diff == 0.0 and c.score.ci is not None and c.score.ci[1] - c.score.ci[0] > 0.5
    assert c.score.ci_method == "t over tasks, variance floor"
    same = compare_arms(scored("a", [[0.0]] * 8), scored("b", [[1.0]] * 8))
    assert same.score.ci == (1.0, 1.0) and "no variation" in (same.score.ci_note or "")


def test_an_arm_interval_is_never_zero_width_between_0_and_1() -> None:
    """Before: "0.67 [0.67, 0.67]" from three tasks with 2 of 3 trials passing each."""
    result = analyse(scored("a", [[1.0, 1.0, 0.0]] * 3), ["a"])
    estimate = result.arms["a"].average_score
    assert estimate.value == pytest.approx(2 / 3) and estimate.ci is not None
    assert estimate.ci[1] - estimate.ci[0] > 0.3 and estimate.method == "t-over-tasks, variance floor"


@pytest.mark.parametrize("tasks", [2, 3, 5, 6, 8, 10])
def test_the_difference_interval_covers_a_true_difference_at_few_tasks(tasks: int) -> None:
    """Before: the 95% interval covered a true +0.10 in 46.7% of runs at 2 tasks, 72.5% at 3, 90.5% at 5."""
    rng = random.Random(tasks)
    runs, covered = 300, 0
    for _ in range(runs):
        diffs = []
        for _ in range(tasks):
            base, u = rng.uniform(0.3, 0.6), rng.uniform(-0.2, 0.2)
            a = sum(rng.random() < base - u / 2 for _ in range(3)) / 3
            b = sum(rng.random() < base + 0.10 + u / 2 for _ in range(3)) / 3
            diffs.append(b - a)
        interval = sign_flip_interval(diffs, test_p=sign_flip_test(diffs).p_value)
        assert interval.ci is not None
        covered += interval.ci[0] <= 0.10 <= interval.ci[1]
    assert covered / runs >= 0.93, covered / runs


def test_monte_carlo_and_exact_inversion_agree() -> None:
    rng = random.Random(3)
    diffs = [rng.choice([-1, 0, 1]) * rng.random() for _ in range(14)]
    exact = sign_flip_interval(diffs)
    sampled = sign_flip_interval(diffs, exact_max=0, draws=20_000)
    assert exact.method == "sign-flip inversion (exact)" and sampled.method == "sign-flip inversion (monte-carlo)"
    assert exact.ci is not None and sampled.ci is not None
    assert sampled.ci == pytest.approx(exact.ci, abs=0.03)


def test_equivalence_within_a_margin_the_spec_sets() -> None:
    from pathlib import Path

    from corral_core.runner.results import compute_metrics
    from corral_core.spec import spec_from_dict

    samples = Path(__file__).resolve().parents[2] / "sample_tasks"
    base = {"name": "eq", "suite": str(samples / "samplemath.yaml"), "model": "scripted/samplemath",
            "arms": [{"name": "a"}, {"name": "b"}]}
    spec = spec_from_dict({**base, "equivalence_margin": 0.1}, samples)
    assert spec.digest != spec_from_dict(base, samples).digest and spec.equivalence_margin == 0.1
    rng = random.Random(11)
    rates = [rng.uniform(0.3, 0.7) for _ in range(40)]
    a = scored("a", [[r] * 2 for r in rates])
    b = scored("b", [[r + rng.uniform(-0.02, 0.02)] * 2 for r in rates])
    _, (c,), _, _ = compute_metrics(spec, a + b)
    assert c.equivalence is not None and c.equivalence.equivalent and c.verdict == "equivalent on score within ±0.1"
    assert "TOST within ±0.1: equivalent (90% interval [" in c.summary
    with pytest.raises(Exception, match="equivalence_margin"):
        spec_from_dict({**base, "equivalence_margin": 1.5}, samples)


def test_thousands_of_tasks_do_not_overflow_the_design_minimum() -> None:
    """2 / 2^n as a float overflowed past 1,023 tasks (the interval and a zero-sum test both computed it)."""
    balanced = [1.0, -1.0] * 700  # 1,400 differing tasks summing to exactly 0
    test = sign_flip_test(balanced)
    assert test.p_value == 1.0 and test.min_p == 0.0  # 2^-1399 underflows: any p is above it
    interval = sign_flip_interval(balanced, test_p=test.p_value)
    assert interval.ci is not None and interval.ci[0] < 0.0 < interval.ci[1]
