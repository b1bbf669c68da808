"""Per-arm metrics: success rule, tool-failure counting, pass@k, assisted split, calibration."""

from __future__ import annotations

import json
import math
from enum import Enum

import pytest

from corral_core.metrics import (
    TrialResult,
    arm_metrics,
    metrics_to_dict,
    success,
    surrender_calibration,
    to_jsonable,
    tool_call_stats,
)


def rec(task: str, index: int = 0, score: float | None = 1.0, **fields: object) -> TrialResult:
    """A trial of arm "full"; extra fields override TrialResult defaults."""
    return TrialResult.from_mapping(
        {"task_id": task, "arm": "full", "trial_index": index, "score": score, **fields}
    )


def call(name: str, status: str, duration: float = 0.5) -> dict[str, object]:
    return {"tool_name": name, "status": status, "duration": duration, "error_message": None}


def test_success_needs_a_completed_unsurrendered_error_free_score_above_the_threshold() -> None:
    assert success(rec("t", score=0.1))  # Corral's rule: any positive score passes
    assert not success(rec("t", score=0.0))
    assert not success(rec("t", score=0.5), pass_threshold=0.5)
    assert success(rec("t", score=0.6), pass_threshold=0.5)
    assert not success(rec("t", score=1.0, error="Agent Error: boom"))
    assert not success(rec("t", score=1.0, surrendered=True))
    assert not success(rec("t", score=1.0, status="iteration_limit"))
    assert not success(rec("t", score=None))
    assert success(rec("t", score=1.0, error=""))


def test_every_non_success_tool_status_counts_as_a_failure() -> None:
    statuses = [
        "success", "invalid_tool", "invalid_args", "execution_error", "blocked", "rejected",
        "timeout",
    ]
    records = [
        rec("t", 0, tool_calls=[call("calc", s) for s in statuses]),
        rec("t", 1, tool_calls=[call("calc", "success"), call("cli", "invalid_args", 1.0)]),
    ]
    stats = tool_call_stats(records)
    assert (stats.total, stats.successful, stats.failed) == (9, 2, 7)
    assert stats.failure_rate == pytest.approx(7 / 9)
    assert stats.by_status["invalid_args"] == 2 and stats.by_status["success"] == 2
    assert stats.by_tool == {
        "calc": {"total": 8, "successful": 2, "failed": 6},
        "cli": {"total": 1, "successful": 0, "failed": 1},
    }
    assert stats.total_duration == pytest.approx(8 * 0.5 + 1.0)

    class Status(str, Enum):  # the shape of corral_core.env.ToolStatus
        SUCCESS = "success"
        BLOCKED = "blocked"

    enum_calls = [
        {"tool_name": "x", "status": Status.SUCCESS},
        {"name": "y", "status": Status.BLOCKED},
    ]
    enum_stats = tool_call_stats([rec("t", tool_calls=enum_calls)])
    assert (enum_stats.successful, enum_stats.failed) == (1, 1)
    assert set(enum_stats.by_tool) == {"x", "y"}
    unknown = tool_call_stats([rec("t", tool_calls=[{"tool_name": "x", "status": "failed"}])])
    assert unknown.failed == 1 and unknown.mean_duration is None


def test_average_score_is_the_mean_of_task_means_and_rates_cover_trials() -> None:
    records = [
        rec("a", 0, 1.0), rec("a", 1, 1.0), rec("a", 2, 0.0), rec("a", 3, 0.0),
        rec("b", 0, 0.5),
        rec("c", 0, 0.0, status="error", error="boom", fault="agent"),  # the agent's own error: a failure
        rec("c", 1, None, status="iteration_limit"),
        rec("c", 2, 0.0, status="surrendered", surrendered=True),
        rec("a", 4, None, status="skipped"),
        rec("b", 1, None, status="cancelled"),
    ]
    m = arm_metrics(records, k_values=[1, 3])
    assert m.arm == "full"
    assert (m.n_records, m.n_trials, m.n_tasks, m.n_not_attempted, m.n_missing) == (10, 8, 3, 2, 0)
    assert m.average_score.value == pytest.approx((0.5 + 0.5 + 0.0) / 3)
    assert m.average_score.n == 3 and m.average_score.ci is not None
    # three tasks spread less than pass/fail trials at the arm's rate would: the floor sets the width
    assert (m.average_score.method, m.average_score.n_tasks) == ("t-over-tasks, variance floor", 3)
    assert (m.n_success, m.success_rate.value) == (3, pytest.approx(3 / 8))
    assert (m.success_rate.method, m.success_rate.n_tasks) == ("wilson-deff-by-task", 3)
    assert m.surrender_rate.value == pytest.approx(1 / 8)
    assert m.error_rate.value == pytest.approx(1 / 8)
    assert m.status_counts == {
        "cancelled": 1, "completed": 5, "error": 1, "iteration_limit": 1, "skipped": 1,
        "surrendered": 1,
    }
    k1, k3 = m.pass_k[1], m.pass_k[3]
    assert k1.pass_at_k == pytest.approx((0.5 + 1.0 + 0.0) / 3) and k1.n_tasks_excluded == 0
    # b has 1 analysed trial: left out of k=3, counted and named.
    assert (k3.n_tasks, k3.n_tasks_excluded, k3.tasks_excluded) == (2, 1, ("b",))
    assert k3.pass_at_k == pytest.approx((1.0 + 0.0) / 2)  # a: n=4, c=2 -> 1 - C(2,3)/C(4,3)
    assert k3.pass_hat_k == pytest.approx(0.0)
    row = m.tasks["a"]
    assert (row.n, row.c, row.mean_score, row.success_rate) == (4, 2, 0.5, 0.5)
    assert m.tasks["c"].n_errors == 1 and m.tasks["c"].n_surrendered == 1


def test_assisted_trials_are_reported_apart() -> None:
    records = [rec("a", 0, 0.0), rec("a", 1, 1.0, assisted=True), rec("b", 0, 1.0, assisted=True)]
    m = arm_metrics(records)
    assert (m.n_trials, m.n_assisted, m.n_tasks) == (1, 2, 1)
    assert m.success_rate.value == 0.0
    assert m.assisted.n_assisted == 2 and m.assisted.n_unassisted == 1
    assert m.assisted.assisted_success_rate.value == 1.0
    everything = arm_metrics(records, include_assisted=True)
    assert everything.n_trials == 3 and everything.success_rate.value == pytest.approx(2 / 3)


def test_resources_cover_every_record() -> None:
    records = [
        rec("a", 0, prompt_tokens=100, completion_tokens=20, total_tokens=120, cost=0.01,
            duration=2.0),
        rec("a", 1, status="cancelled", prompt_tokens=50, completion_tokens=5, total_tokens=55,
            cost=0.005, duration=1.0),
        rec("a", 2, duration=None),
    ]
    r = arm_metrics(records).resources
    assert (r.prompt_tokens, r.completion_tokens, r.total_tokens) == (150, 25, 175)
    assert r.cost == pytest.approx(0.015)
    assert (r.duration_total, r.duration_mean) == (3.0, 1.5)
    assert arm_metrics([rec("a")]).resources.cost is None


def test_surrender_calibration_against_declared_unsolvable_tasks() -> None:
    records = [
        rec("impossible", 0, 0.0, status="surrendered", surrendered=True, solvable=False),
        rec("impossible", 1, 0.0, status="surrendered", surrendered=True, solvable=False),
        rec("impossible", 2, 0.0, solvable=False),
        rec("easy", 0, 1.0, solvable=True),
        rec("easy", 1, 0.0, status="surrendered", surrendered=True, solvable=True),
        rec("undeclared", 0, 0.0, status="surrendered", surrendered=True),
    ]
    cal = surrender_calibration(records)
    assert cal is not None
    counts = (cal.true_positive, cal.false_positive, cal.false_negative, cal.true_negative)
    assert counts == (2, 1, 1, 1)
    assert cal.precision == pytest.approx(2 / 3) and cal.recall == pytest.approx(2 / 3)
    assert arm_metrics(records).surrender_calibration == cal
    assert surrender_calibration([rec("a", surrendered=True)]) is None
    only_solvable = surrender_calibration([rec("a", solvable=True)])
    assert only_solvable is not None
    assert only_solvable.precision is None and only_solvable.recall is None


def test_bad_input_is_refused_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="one arm at a time"):
        arm_metrics([rec("a"), TrialResult(task_id="a", arm="other")])
    with pytest.raises(ValueError, match="k values"):
        arm_metrics([rec("a")], k_values=[0])


def test_empty_arm_gives_none_not_nan() -> None:
    m = arm_metrics([], k_values=[1])
    assert m.n_trials == 0 and m.average_score.value is None and m.success_rate.value is None
    assert m.pass_k[1].pass_at_k is None
    json.dumps(metrics_to_dict(m), allow_nan=False)


def test_metrics_to_dict_is_strict_json() -> None:
    records = [rec("a", 0, 1.0, tool_calls=[call("calc", "success")]), rec("a", 1, 0.0),
               rec("b", 0, 1.0, cost=math.nan)]
    data = metrics_to_dict(arm_metrics(records, k_values=[1, 2]))
    text = json.dumps(data, allow_nan=False)
    loaded = json.loads(text)
    assert loaded["pass_k"]["2"]["n_tasks_excluded"] == 1
    assert loaded["average_score"]["ci"] is not None and len(loaded["average_score"]["ci"]) == 2
    assert loaded["resources"]["cost"] is None  # NaN became None
    assert to_jsonable({"x": (1.0, math.inf)}) == {"x": [1.0, None]}
    with pytest.raises(TypeError):
        metrics_to_dict({"not": "a dataclass"})


def test_from_mapping_ignores_unknown_keys_and_null_counters() -> None:
    record = TrialResult.from_mapping(
        {"task_id": "a", "score": 0.5, "status": "completed", "total_tokens": None,
         "explanation": "ok", "tool_calls": None}
    )
    assert record.task_id == "a" and record.total_tokens == 0 and record.tool_calls == []


def test_surrender_calibration_leaves_errored_and_timed_out_trials_out_and_counts_them() -> None:
    records = [
        rec("impossible", 0, 0.0, status="surrendered", surrendered=True, solvable=False),
        rec("impossible", 1, None, status="error", error="provider: rate limited", solvable=False),
        rec("impossible", 2, None, status="timeout", error="the trial ran too long", solvable=False),
        rec("easy", 0, 1.0, solvable=True),
        rec("easy", 1, None, status="error", error="connection refused", solvable=True),
    ]
    cal = arm_metrics(records).surrender_calibration
    assert cal is not None
    # before the fix the errored and timed-out unsolvable trials were "kept going": recall 1/3
    assert (cal.true_positive, cal.false_positive, cal.false_negative, cal.true_negative) == (1, 0, 0, 1)
    assert cal.recall == 1.0 and cal.precision == 1.0
    assert (cal.n_excluded_errors, cal.n_excluded_timeouts) == (2, 1)


def test_arm_metrics_read_any_iterable_once() -> None:
    records = [rec(f"t{i % 7}", i // 7, float(i % 3 == 0)) for i in range(70)]
    once = arm_metrics(iter(records), k_values=[1, 5])  # a generator: consumed once, never held whole
    assert once == arm_metrics(records, k_values=[1, 5])
    assert once.n_trials == 70 and once.n_tasks == 7


def test_intervals_respect_clustering_by_task() -> None:
    """Ten tasks of ten identical trials carry the information of ten observations, not a hundred."""
    records = [rec(f"t{t}", i, float(t < 3)) for t in range(10) for i in range(10)]
    m = arm_metrics(records)
    low, high = m.success_rate.ci or (0.0, 0.0)
    naive = wilson(30, 100)
    # CR1 variance = G/(G-1) * sum_g (c_g - p n_g)^2 / N^2 = 10/9 * 10 * 0.3 * 0.7 / 10^2 of a binomial's
    # 0.3 * 0.7 / 100: design effect 100/9, so the 100 trials count as 9 observations
    assert (low, high) == pytest.approx(wilson_from_rate(0.3, 9.0))
    assert high - low > 1.8 * (naive[1] - naive[0])
    assert m.average_score.method == "t-over-tasks" and m.average_score.n_tasks == 10


def test_one_task_intervals_are_over_its_trials_and_say_so() -> None:
    m = arm_metrics([rec("only", i, float(i % 2)) for i in range(6)])
    assert m.average_score.method == "t (one task: over trials)" and m.average_score.ci is not None
    assert m.success_rate.method == "wilson (one task: over trials)"
    assert m.success_rate.ci == pytest.approx(wilson(3, 6))


def wilson_from_rate(p: float, n: float) -> tuple[float, float]:
    from corral_core.metrics.stats import wilson_from_rate as computed

    return computed(p, n)


def wilson(c: int, n: int) -> tuple[float, float]:
    from corral_core.metrics import wilson_interval

    interval = wilson_interval(c, n)
    assert interval is not None
    return interval


def test_the_tally_applies_the_record_rules_of_records_py() -> None:
    """ArmTally.add spells out is_attempted, success, effective_score, is_errored and fault_of for speed;
    over every combination of what they read, its sums agree with those functions."""
    from itertools import product

    from corral_core.metrics import ArmTally
    from corral_core.metrics.arm import fault_of
    from corral_core.metrics.records import effective_score, is_attempted, is_errored, is_missing

    statuses = ["completed", "surrendered", "iteration_limit", "error", "timeout", "stopped", "skipped", "running"]
    combos = list(product(statuses, [None, 0.0, 0.4, 1.0, 2], [None, "", "boom"], [False, True], [False, True],
                          [None, "agent", "infra"], [0.0, 0.5]))
    for include_assisted in (False, True):
        tallies = {limit: ArmTally("full", limit, include_assisted=include_assisted) for limit in (0.0, 0.5)}
        expected: dict[float, dict[str, list[float]]] = {0.0: {}, 0.5: {}}
        faults: dict[float, dict[str, int]] = {0.0: {}, 0.5: {}}
        for i, (status, score, error, surrendered, assisted, fault, threshold) in enumerate(combos):
            record = TrialResult(task_id=f"t{i % 7}", arm="full", trial_index=i, status=status, score=score,
                                 error=error, surrendered=surrendered, assisted=assisted, fault=fault)
            tallies[threshold].add(record)
            if not is_attempted(record) or (assisted and not include_assisted):
                continue
            sums = expected[threshold].setdefault(record.task_id, [0, 0, 0.0, 0, 0, 0])
            if (who := fault_of(record)) is not None:
                faults[threshold][who] = faults[threshold].get(who, 0) + 1
            sums[4] += is_errored(record)
            if is_missing(record):  # errored outside the agent: missing, in no score or rate
                sums[5] += 1
                continue
            value = effective_score(record)
            sums[0] += 1
            sums[1] += success(record, threshold)
            sums[2] += value
            sums[3] += surrendered
        for threshold, tally in tallies.items():
            got = {task: [s.n, s.c, s.score_sum, s.n_surrendered, s.n_errors, s.n_missing]
                   for task, s in tally._tasks.items()}
            assert got == expected[threshold]
            assert dict(tally._faults) == faults[threshold]
            units = {task: (u.n, u.sums.c, u.sums.score_sum) for task, u in tally.units.items()}
            assert units == {task: (s[0], s[1], s[2]) for task, s in expected[threshold].items() if s[0]}


def test_surrender_calibration_reports_its_n_and_intervals() -> None:
    """Before: "precision 1.00, recall 1.00" from 2 tasks, with nothing to say how little that is."""
    records = [rec("u", 0, 0.0, status="surrendered", surrendered=True, solvable=False),
               rec("s", 0, 1.0, solvable=True)]
    calibration = arm_metrics(records).surrender_calibration
    assert calibration is not None and (calibration.precision, calibration.recall, calibration.n_tasks) == (1, 1, 2)
    assert calibration.precision_ci is not None and calibration.precision_ci[0] < 0.25  # one trial: wide
    assert calibration.recall_ci is not None and calibration.interval_note.startswith("95% Wilson over trials")
