"""The live line's figures from engine events: the engine's assisted rule, errors by fault, run totals,
the interval's method, and money with significant digits."""

from __future__ import annotations

import pytest

from corral_core.events import Event, EventKind, event_from
from corral_tui.live import LiveRun
from corral_tui.render import format_cost


def _trial(trial_id: str, task: str, *extra: Event, **finished: object) -> list[Event]:
    data = {"status": "completed", "score": 1.0, "assisted": False, **finished}
    return [event_from(EventKind.TRIAL_STARTED, trial_id, task, {"arm": "full", "trial_index": 0}), *extra,
            event_from(EventKind.TRIAL_FINISHED, trial_id, task, data)]


def test_an_approval_by_a_person_leaves_the_trial_out_of_the_live_score() -> None:
    """The workbench's server decides approvals outside the runner, so TRIAL_FINISHED says assisted=False
    for a trial a person approved; the store marks it assisted, and so must the live line."""
    live = LiveRun()
    approved = event_from(EventKind.APPROVAL_DECIDED, "tr_a", "mark", {"approved": True, "decided_by": "user"})
    live.apply(_trial("tr_a", "mark", approved))
    live.apply(_trial("tr_b", "solo", score=0.0))
    (score,) = live.arm_scores()
    assert (score.value, score.n_trials, score.n_tasks) == (0.0, 1, 1)
    assert live.trials["tr_a"].assisted


def test_a_policy_approval_is_not_a_person() -> None:
    live = LiveRun()
    policy = event_from(EventKind.APPROVAL_DECIDED, "tr_a", "mark", {"approved": True, "decided_by": "policy"})
    live.apply(_trial("tr_a", "mark", policy))
    (score,) = live.arm_scores()
    assert score.n_trials == 1 and not live.trials["tr_a"].assisted


def test_errored_trials_are_counted_by_fault_and_the_run_totals_add_up() -> None:
    live = LiveRun()
    live.apply(_trial("tr_1", "add", total_tokens=120, cost=0.00013695))
    live.apply(_trial("tr_2", "divide", status="error", score=None, error="Missing credentials", fault="provider",
                      total_tokens=0, cost=None))
    live.apply(_trial("tr_3", "power", status="timeout", score=None, fault=None, total_tokens=30, cost=0.0001))
    (score,) = live.arm_scores()
    assert score.errors_by_fault == {"provider": 1, "timeout": 1} and score.n_errored == 2
    tokens, cost = live.totals()
    assert tokens == 150 and cost == pytest.approx(0.00023695)


def test_one_task_names_its_interval_over_trials() -> None:
    live = LiveRun()
    for index, score in enumerate((1.0, 0.0, 1.0)):
        live.apply(_trial(f"tr_{index}", "add", score=score, trial_index=index))
    (score,) = live.arm_scores()
    assert score.n_tasks == 1 and "over trials" in score.method


@pytest.mark.parametrize(("value", "shown"), [(0.00013695, "$0.000137"), (0.0053, "$0.00530"), (0.012, "$0.0120"),
                                               (2.5, "$2.50"), (1234.5, "$1,234.50"), (None, "-"), (0.0, "$0")])
def test_cost_keeps_three_significant_digits(value: float | None, shown: str) -> None:
    assert format_cost(value) == shown
