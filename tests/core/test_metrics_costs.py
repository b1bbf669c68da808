"""The cost of better documentation (issue 39, item 5): per arm success, iterations, tool calls, tokens and
cost with task-level intervals, and paired differences against the reference arm by the score's own test
family (sign-flip, its interval inverted, Holm), checked against exact enumeration and scipy."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import numpy as np
import pytest
from scipy import stats as scipy_stats

from corral_core.metrics import TrialResult, analyse
from corral_core.metrics.costs import CostTally

TASKS = [f"t{i}" for i in range(10)]


def trial(arm: str, task: str, index: int, *, score: float, iterations: int, calls: int, prompt: int,
          completion: int, cost: float | None = None) -> TrialResult:
    return TrialResult(task_id=task, arm=arm, trial_index=index, score=score, iterations=iterations,
                       tool_calls=[{"tool_name": "lookup", "status": "success"}] * calls, prompt_tokens=prompt,
                       completion_tokens=completion, total_tokens=prompt + completion, cost=cost)


def design(seed: int = 4) -> list[TrialResult]:
    """Three arms x 10 tasks x 2 trials: `full` documents more, so it reads more prompt tokens and takes
    fewer steps; `brief` is between."""
    rng = random.Random(seed)
    records = []
    for task in TASKS:
        hard = rng.randint(0, 3)
        for index in range(2):
            for arm, extra_prompt, fewer in (("minimal", 0, 0), ("brief", 300, 1), ("full", 900, 2)):
                records.append(trial(arm, task, index, score=float(rng.random() < 0.4 + 0.15 * fewer),
                                     iterations=max(1, 4 + hard - fewer + rng.randint(0, 2)),
                                     calls=max(0, 3 + hard - fewer + rng.randint(-1, 1)),
                                     prompt=1_000 + 100 * hard + extra_prompt + rng.randint(0, 50),
                                     completion=200 + rng.randint(0, 40), cost=0.001 * (1 + fewer)))
    return records


def task_means(records: list[TrialResult], arm: str, value) -> list[float]:  # type: ignore[no-untyped-def]
    return [statistics.fmean(value(r) for r in records if r.arm == arm and r.task_id == task) for task in TASKS]


def exact_p(diffs: list[float]) -> float:
    """Two-sided sign-flip p by enumerating the 2^n sign patterns of the non-zero differences."""
    nonzero = [d for d in diffs if abs(d) > 1e-12]
    observed = abs(math.fsum(nonzero))
    hits = sum(abs(math.fsum(s * d for s, d in zip(signs, nonzero, strict=True))) >= observed - 1e-9
               for signs in itertools.product((1, -1), repeat=len(nonzero)))
    return hits / 2 ** len(nonzero)


@pytest.mark.parametrize(("outcome", "value"), [
    ("iterations", lambda r: r.iterations),
    ("tool_calls", lambda r: len(r.tool_calls)),
    ("prompt_tokens", lambda r: r.prompt_tokens),
    ("completion_tokens", lambda r: r.completion_tokens),
])
def test_paired_differences_for_steps_and_tokens_match_exact_enumeration_and_scipy(outcome: str, value) -> None:  # type: ignore[no-untyped-def]
    records = design()
    study = analyse(records, ["minimal", "brief", "full"]).costs
    assert study is not None and study.reference == "minimal"
    reference = task_means(records, "minimal", value)
    for arm in study.arms[1:]:
        other = task_means(records, arm.arm, value)
        diffs = [o - r for r, o in zip(reference, other, strict=True)]
        d = arm.differences[outcome]
        assert d.n_tasks == 10 and d.mean_diff == pytest.approx(statistics.fmean(diffs))
        assert d.p_value == pytest.approx(exact_p(diffs))
        # scipy's exact paired permutation test of the mean difference agrees
        reference_p = scipy_stats.permutation_test(
            (np.array(other), np.array(reference)), lambda x, y: np.mean(x - y), permutation_type="samples",
            n_resamples=np.inf, alternative="two-sided").pvalue
        assert d.p_value == pytest.approx(reference_p)
        if d.ci is not None:  # the interval inverts the test: 0 outside it exactly when p < 0.05
            assert (d.p_value < 0.05) == (not d.ci[0] <= 0.0 <= d.ci[1])
        mean = arm.means[outcome]
        t_interval = scipy_stats.t.interval(0.95, 9, loc=statistics.fmean(other),
                                            scale=statistics.stdev(other) / math.sqrt(10))
        assert mean.value == pytest.approx(statistics.fmean(other))
        assert mean.ci == pytest.approx((max(0.0, t_interval[0]), t_interval[1]))
    # Holm over the two arms compared with the reference, this outcome
    raw = [a.differences[outcome].p_value for a in study.arms[1:]]
    adjusted = [a.differences[outcome].p_adjusted for a in study.arms[1:]]
    low = min(range(2), key=lambda k: raw[k])
    assert adjusted[low] == pytest.approx(min(1.0, 2 * raw[low]))
    assert adjusted[1 - low] == pytest.approx(min(1.0, max(adjusted[low], raw[1 - low])))


def test_the_frontier_names_the_arms_no_other_beats_on_score_and_tokens() -> None:
    tally = CostTally()
    for task in TASKS[:6]:
        for index in range(2):
            tally.add(trial("cheap", task, index, score=0.5, iterations=3, calls=2, prompt=500, completion=100))
            tally.add(trial("costly", task, index, score=0.9, iterations=2, calls=1, prompt=2_000, completion=100))
            tally.add(trial("worse", task, index, score=0.4, iterations=4, calls=3, prompt=900, completion=100))
    study = tally.study(["cheap", "costly", "worse"])
    assert study is not None and study.frontier == ["cheap", "costly"]  # `worse` scores less and reads more
    assert study.summary[-1].startswith("frontier, score against tokens per trial: cheap, costly")
    assert study.summary[0].startswith("cost of documentation, costly vs cheap (per trial, mean over 6 paired")


def test_errored_trials_outside_the_agent_and_one_arm_are_left_out() -> None:
    tally = CostTally()
    tally.add(trial("a", "t0", 0, score=1.0, iterations=2, calls=1, prompt=10, completion=1))
    tally.add(TrialResult(task_id="t0", arm="a", trial_index=1, status="error", fault="provider", error="x",
                          iterations=9, prompt_tokens=999))
    assert tally.arms["a"]["t0"].n == 1 and tally.arms["a"]["t0"].mean("prompt_tokens") == 10
    assert tally.study(["a"]) is None  # one arm: nothing to compare with
