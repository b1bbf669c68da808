"""Cost and token limits per trial and per benchmark: a trial over its limit ends as `limit`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from corral_core.agents.limits import BenchmarkBudget, LimitReached, UsageLimits
from corral_core.errors import UserError
from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"


def run(limits: dict[str, Any] | None, **extra: Any) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    data = {"name": "limits", "suite": str(SAMPLEMATH), "tasks": ["add", "multiply"], "trials_per_task": 2,
            "parallel": 1, **extra}
    if limits is not None:
        data["limits"] = limits
    sink = ListSink()
    result = BenchmarkRunner(spec_from_dict(data, SAMPLEMATH.parent), sink=sink).run()
    return result, [(e.trial_id or "", e.data) for e in sink.of_kind(EventKind.TRIAL_FINISHED)]


def test_without_limits_the_scripted_trials_complete() -> None:
    _, trials = run(None)
    assert [d["status"] for _, d in trials] == ["completed"] * 4


def test_a_trial_over_its_token_limit_ends_as_limit_scored_on_its_last_reply() -> None:
    result, trials = run({"trial": {"tokens": 1}})
    assert [d["status"] for _, d in trials] == ["limit"] * 4
    assert all(d["error"] is None and "limits.trial.tokens" in d["explanation"] for _, d in trials)
    assert all(d["score"] is not None for _, d in trials)  # submitted: graded on what it had
    assert result.errored == 0


def test_a_benchmark_over_its_limit_starts_no_more_trials() -> None:
    _, trials = run({"benchmark": {"tokens": 1}})
    assert [d["status"] for _, d in trials] == ["limit"] * 4
    ran, not_started = trials[0], trials[1:]
    assert ran[0].startswith("tr_") and "limits.benchmark.tokens" in ran[1]["explanation"]
    assert all(tid.startswith("lm_") and d["explanation"].startswith("not started") for tid, d in not_started)


def test_cost_limits_count_dollars() -> None:
    budget = BenchmarkBudget(cost_limit=1.0)
    trial = UsageLimits(cost_limit=0.5, benchmark=budget)
    trial.charge(10, 0.4, 10, 0.4)
    with pytest.raises(LimitReached, match=r"trial cost \$0\.6000"):
        trial.charge(10, 0.2, 20, 0.6)
    other = UsageLimits(cost_limit=0.5, benchmark=budget)
    with pytest.raises(LimitReached, match="limits.benchmark.cost"):
        other.charge(10, 0.45, 10, 0.45)
    assert budget.exceeded() is not None
    UsageLimits().charge(10**9, 10.0**6, 10**9, 10.0**6)  # no limits: never raises


@pytest.mark.parametrize("limits", [{"trial": {"cost": -1}}, {"trial": {"tokens": 0}}, {"run": {"cost": 1}},
                                    {"trial": {"dollars": 1}}])
def test_bad_limits_are_user_errors(limits: dict[str, Any]) -> None:
    with pytest.raises(UserError, match="limits"):
        spec_from_dict({"name": "x", "suite": str(SAMPLEMATH), "limits": limits}, SAMPLEMATH.parent)


def test_limits_enter_the_digest_only_when_set() -> None:
    base = {"name": "x", "suite": str(SAMPLEMATH)}
    plain = spec_from_dict(base, SAMPLEMATH.parent)
    assert "limits" not in plain.normalized()
    limited = spec_from_dict({**base, "limits": {"trial": {"cost": 1}}}, SAMPLEMATH.parent)
    assert limited.digest != plain.digest
