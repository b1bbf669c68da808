"""Tool selection per arm (issue 39, item 4): how often each offered tool was called first and at all, as
rates over tasks with task-level intervals, checked against a hand computation."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as scipy_stats

from corral_core.metrics import TrialResult, analyse
from corral_core.metrics.selection import NO_CALL

# Two equivalent tools; per arm, task -> the calls of each of its 4 trials (first call first)
CALLS = {
    "plain": {"t0": [["convert_a"], ["convert_b"], ["convert_a", "convert_b"], []],
              "t1": [["convert_b"], ["convert_b"], ["convert_a"], ["convert_b"]],
              "t2": [["convert_a"], ["convert_a"], ["convert_b", "convert_a"], ["convert_a"]]},
    "clear": {"t0": [["convert_b"]] * 4,
              "t1": [["convert_b"], ["convert_b"], ["convert_b"], ["convert_a", "convert_b"]],
              "t2": [["convert_b"], ["convert_b"], ["convert_a"], ["convert_b"]]},
}


def records() -> list[TrialResult]:
    return [TrialResult(task_id=task, arm=arm, trial_index=i, score=1.0, iterations=len(calls) + 1,
                        tool_calls=[{"tool_name": name, "status": "success"} for name in calls])
            for arm, tasks in CALLS.items() for task, trials in tasks.items() for i, calls in enumerate(trials)]


def test_selection_rates_and_intervals_match_a_hand_computation() -> None:
    study = analyse(records(), ["plain", "clear"]).selection
    assert study is not None and [a.arm for a in study.arms] == ["plain", "clear"]
    plain, clear = study.arms
    by_tool = {t.tool: t for t in plain.tools}
    # first calls of convert_a: t0 2/4, t1 1/4, t2 3/4 -> mean 0.5
    first_a = [2 / 4, 1 / 4, 3 / 4]
    assert by_tool["convert_a"].first.value == pytest.approx(statistics.fmean(first_a))
    # the floor 0.5 * 0.5 / 4 = 0.0625 is above this spread (variance 0.0625): equal, so the t interval stands
    floor_sd = math.sqrt(0.5 * 0.5 / 4)
    sd = max(statistics.stdev(first_a), floor_sd)
    half = scipy_stats.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert by_tool["convert_a"].first.ci == pytest.approx((max(0.0, 0.5 - half), min(1.0, 0.5 + half)))
    # called at all: convert_a t0 2/4, t1 1/4, t2 4/4; convert_b t0 2/4, t1 3/4, t2 1/4
    assert by_tool["convert_a"].called.value == pytest.approx((2 / 4 + 1 / 4 + 4 / 4) / 3)
    assert by_tool["convert_b"].called.value == pytest.approx((2 / 4 + 3 / 4 + 1 / 4) / 3)
    # one trial of t0 called nothing: no_call 1/4, 0, 0
    assert plain.no_call.value == pytest.approx(1 / 12)
    clear_b = {t.tool: t for t in clear.tools}["convert_b"]
    assert clear_b.first.value == pytest.approx((4 / 4 + 3 / 4 + 3 / 4) / 3)
    assert clear_b.called.value == pytest.approx((4 / 4 + 4 / 4 + 3 / 4) / 3)  # t2's third trial: convert_a only
    clear_a = {t.tool: t for t in clear.tools}["convert_a"]
    assert clear_a.first.value == pytest.approx((0 + 1 / 4 + 1 / 4) / 3)
    assert clear_a.first.ci is not None and clear_a.first.ci[0] == 0.0 < clear_a.first.ci[1] <= 1.0
    line = study.summary[1]
    assert line.startswith("tool selection, clear (share of trials, mean over 3 tasks, 95% t interval over tasks)")
    assert "convert_b first 0.83" in line


def test_no_tool_calls_means_no_selection_study() -> None:
    plain = [TrialResult(task_id="t0", arm="a", trial_index=0, score=1.0),
             TrialResult(task_id="t0", arm="b", trial_index=0, score=0.0)]
    assert analyse(plain, ["a", "b"]).selection is None
    assert NO_CALL.startswith("(")
