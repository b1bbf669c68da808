"""Paired arm comparison at the task level, every pair of arms with Holm, and CORAL attempt status."""

from __future__ import annotations

import json
import re

import pytest

from corral_core.metrics import (
    TrialResult,
    analyse,
    best_score,
    cohens_dz,
    compare_arms,
    format_p,
    holm,
    metrics_to_dict,
)


def tasks(arm: str, per_task: list[list[float]]) -> list[TrialResult]:
    """Task t<i> gets the trial scores per_task[i], trial indexes 0, 1, ..."""
    return [TrialResult(task_id=f"t{i}", arm=arm, trial_index=j, score=s)
            for i, scores in enumerate(per_task) for j, s in enumerate(scores)]


def test_arms_pair_by_task_means_not_by_trials() -> None:
    a = tasks("brief", [[1, 0, 0], [0, 0, 0], [1, 1, 1], [0, 1, 0]])
    b = tasks("full", [[1, 1, 1], [1, 0, 0], [1, 1, 1], [1, 1, 0]])
    c = compare_arms(a, b)
    assert (c.arm_a, c.arm_b, c.unit, c.n_tasks) == ("brief", "full", "task", 4)
    diffs = [2 / 3, 1 / 3, 0.0, 1 / 3]
    assert c.score.mean_diff == pytest.approx(sum(diffs) / 4)
    assert c.score.mean_a == pytest.approx((1 / 3 + 0 + 1 + 1 / 3) / 4)
    # three non-zero task differences, all positive: 2 of the 2^3 sign patterns are as extreme
    assert (c.score.p_value, c.score.p_method, c.score.p_min) == (0.25, "exact", 0.25)
    assert c.score.p_adjusted == c.score.p_value  # one pair: Holm changes nothing
    assert c.verdict == "no verdict is possible with 4 tasks (p < 0.05 needs at least 6 differing tasks)"
    # the trial-level McNemar stays, as a labelled secondary figure
    assert (c.mcnemar.n_pairs, c.mcnemar.b, c.mcnemar.c) == (12, 0, 4)
    assert c.mcnemar.p_value == pytest.approx(2 / 2**4) and "secondary" in c.mcnemar.note
    assert "secondary, trial level: McNemar p=0.13" in c.summary and "— 4 tasks, unit: task;" in c.summary


def test_one_task_with_three_identical_trials_cannot_give_a_small_p() -> None:
    """The issue's case: trial-level tests printed p=0.0005; the design allows nothing below 1 here."""
    c = compare_arms(tasks("a", [[0, 0, 0]]), tasks("b", [[1, 1, 1]]))
    assert c.n_tasks == 1 and c.score.mean_diff == 1.0
    assert c.score.p_value >= 0.25 and c.score.p_value == 1.0 and c.score.p_min == 1.0
    assert c.score.ci is None and c.score.d_z is None  # one task: no spread to estimate
    assert c.verdict == "no verdict is possible with 1 task (p < 0.05 needs at least 6 differing tasks)"
    assert c.mcnemar.p_value == 0.25  # even the trial-level figure is the exact 0.25
    printed = [float(p) for p in re.findall(r"p=([0-9.e+-]+)", c.summary)]
    assert len(printed) == 4 and min(printed) >= 0.25, c.summary  # no printed p below the exact 0.25


def test_few_tasks_never_print_a_p_below_the_design_minimum() -> None:
    five = compare_arms(tasks("a", [[0.2]] * 5), tasks("b", [[0.9]] * 5))
    assert five.score.p_value == five.score.p_min == 2 / 2**5  # 0.0625: cannot reach 0.05
    # deliberately changed: the verdict says no verdict is possible, and how many tasks it would take
    assert five.verdict == "no verdict is possible with 5 tasks (p < 0.05 needs at least 6 differing tasks)"
    assert "p=0.063" in five.summary  # printed rounded up, never as 0.062
    assert "d_z" not in five.summary and "MDE none (no verdict possible)" in five.summary
    assert five.score.ci == (-1.0, 1.0) and "whole range" in (five.score.ci_note or "")
    eight = compare_arms(tasks("a", [[0.2]] * 8), tasks("b", [[0.9]] * 8))
    assert eight.score.p_value == 2 / 2**8 and eight.verdict == "b better on score"
    assert format_p(0.0625) == "0.063" and format_p(1 / 10_001) == "1.0e-04" and format_p(1.0) == "1"


def test_every_pair_of_arms_is_compared_and_the_verdict_follows_holm() -> None:
    minimal = [[0.1]] * 8
    brief = [[0.4]] * 6 + [[0.1]] * 2  # above minimal on 6 tasks: raw p = 2/2^6 = 0.031
    full = [[0.5], [0.3], [0.5], [0.3], [0.4], [0.4], [0.2], [0.2]]  # above minimal on all 8: 2/2^8
    records = tasks("minimal", minimal) + tasks("brief", brief) + tasks("full", full)
    result = analyse(records, ["minimal", "brief", "full"])
    pairs = [(c.arm_a, c.arm_b) for c in result.comparisons]
    assert pairs == [("minimal", "brief"), ("minimal", "full"), ("brief", "full")]
    raw = [c.score.p_value for c in result.comparisons]
    assert raw[0] == pytest.approx(2 / 64) and raw[1] == pytest.approx(2 / 256) and raw[2] > 0.5
    assert [c.score.p_adjusted for c in result.comparisons] == pytest.approx(holm(raw))
    brief_vs_minimal, full_vs_minimal, _ = result.comparisons
    # raw 0.031 < 0.05, but Holm over three pairs makes it 0.0625: the verdict follows the adjusted p,
    # and says that 6 differing tasks can never reach 0.05 after Holm over three pairs
    assert brief_vs_minimal.score.p_adjusted == pytest.approx(0.0625)
    assert brief_vs_minimal.verdict == ("no verdict is possible: the arms tie on 2 of 8 tasks, 6 differ (p < 0.05 "
                                        "after Holm needs at least 7 differing tasks)")
    assert full_vs_minimal.score.p_adjusted == pytest.approx(3 * 2 / 256)
    assert full_vs_minimal.verdict == "full better on score"
    assert all(c.n_tasks == 8 for c in result.comparisons)


def test_holm_against_a_raw_p_below_alpha() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([]) == []


def test_d_z_is_withheld_when_the_spread_is_float_noise() -> None:
    """Task means of 0.1+0.2 vs 0.3 differ in the 17th digit; d_z = mean/sd would be ~1e16."""
    assert cohens_dz([0.3, 0.1 + 0.2, 0.3, 0.3]) is None
    assert cohens_dz([1.0, 2.0, 3.0]) == pytest.approx(2.0)
    assert cohens_dz([0.5]) is None
    a = tasks("a", [[0.0, 0.0, 0.0]] * 4)
    b = tasks("b", [[0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [0.2, 0.1, 0.3], [0.3, 0.1, 0.2]])  # means 0.2 +- 1e-17
    c = compare_arms(a, b)
    assert c.score.mean_diff == pytest.approx(0.2) and c.score.d_z is None and "d_z" not in c.summary
    assert c.score.p_value == pytest.approx(2 / 16)  # four equal positive differences


def test_unpaired_unattempted_and_assisted_trials() -> None:
    a = tasks("a", [[1.0], [0.0], [1.0]])
    b = tasks("b", [[1.0], [1.0]])
    b[1] = b[1].evolve(assisted=True)  # t1 of b: assisted, so t1 has no analysed trial in b
    c = compare_arms(a, b)
    assert (c.n_tasks, c.n_unpaired_a, c.n_unpaired_b) == (1, 2, 0)
    assert compare_arms(a, b, include_assisted=True).n_tasks == 2


def test_degenerate_comparisons_do_not_invent_numbers() -> None:
    empty = compare_arms([], tasks("b", [[1.0]]))
    assert empty.n_tasks == 0 and empty.score.mean_diff is None and empty.score.ci is None
    assert empty.summary == "no paired tasks to compare" and empty.verdict == "no paired tasks"
    duplicate = tasks("a", [[1.0]]) + tasks("a", [[0.0]])
    with pytest.raises(ValueError, match="two analysed trials"):
        compare_arms(duplicate, tasks("b", [[1.0]]))
    json.dumps(metrics_to_dict(compare_arms(tasks("a", [[0.0]]), tasks("b", [[1.0]]))), allow_nan=False)


def test_comparisons_are_deterministic_for_a_seed_and_monte_carlo_beyond_24_tasks() -> None:
    a = tasks("a", [[0.1 * (i % 7)] for i in range(40)])
    b = tasks("b", [[0.1 * (i % 7) + (0.2 if i % 3 else -0.1)] for i in range(40)])
    first = compare_arms(a, b, seed=5)
    assert first == compare_arms(a, b, seed=5)
    assert (first.score.p_method, first.score.p_draws, first.seed) == ("monte-carlo", 10_000, 5)
    assert first.score.p_min == pytest.approx(1 / 10_001) and first.score.p_value >= first.score.p_min
    assert (first.score.ci_method, first.score.ci_draws) == ("sign-flip inversion (monte-carlo)", 2_000)
    assert first.score.ci is not None and first.score.ci[0] < first.score.mean_diff < first.score.ci[1]


def test_best_score_and_bad_direction() -> None:
    assert best_score([0.2, None, 0.9, float("nan")]) == 0.9
    assert best_score([0.2, 0.9], "minimize") == 0.2
    assert best_score([None]) is None
    with pytest.raises(ValueError, match="direction"):
        best_score([0.5], "up")


def test_the_words_say_what_was_computed() -> None:
    """Issue 33: `0 of 18 tasks differ` read as if 18 tasks could never give a verdict (they tied), and the
    trial-level McNemar reached the screen without the JSON's warning."""
    tied = compare_arms(tasks("a", [[0.5, 0.5]] * 18), tasks("b", [[0.5, 0.5]] * 18))
    assert tied.verdict == ("no verdict is possible: the arms tie on all 18 tasks (p < 0.05 needs at least 6 "
                            "differing tasks)")
    assert tied.summary.endswith("treats the trials of a task as independent, so it overstates the evidence)")
