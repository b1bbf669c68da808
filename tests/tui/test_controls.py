"""A person in the loop: approving and rejecting confirm-level calls, intervening, stepping."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.events import EventKind
from corral_tui.screens.approval import ApprovalScreen
from corral_tui.screens.dialogs import InterventionScreen
from tests.timeouts import HANG
from tests.tui.helpers import (
    SIZE,
    TUITEST,
    make_app,
    only_trial,
    run_done,
    start_run,
    trial_events,
    wait_for,
    wait_ready,
)

pytestmark = pytest.mark.anyio


def pending(app):
    return app.services.approvals.pending()


def _stored_trial(app, trial_id):
    store = app.services.lifecycle
    assert store.writer.flush(HANG)
    return store.repository.trial(trial_id)


@pytest.mark.parametrize("key", ["y", "n"])
async def test_a_confirm_level_call_runs_only_after_approval(tmp_path: Path, tui_env: Path, key: str) -> None:
    marker = tui_env / "marker.txt"
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", approval="ask")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
        request = app.screen.request
        assert (request.tool_name, request.task_id, request.arguments) == ("write_marker", "mark",
                                                                             {"name": "marker.txt"})
        assert not marker.exists(), "the tool ran before anyone approved it"

        await pilot.press({"y": "ctrl+y", "n": "enter"}[key])  # the dialog's reason field has the focus
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        trial_id = only_trial(app)
        (call,) = [e.data for e in trial_events(app, trial_id, EventKind.TOOL_CALL)]
        decided = trial_events(app, trial_id, EventKind.APPROVAL_DECIDED)
        assert [(d.data["approved"], d.data["decided_by"]) for d in decided] == [(key == "y", "user")]
        if key == "y":
            assert marker.exists()
            assert (call["status"], call["approval"]) == ("success", "approved")
        else:
            assert not marker.exists()
            assert call["status"] == "rejected"
        order = [e.kind for e in trial_events(app, trial_id, EventKind.APPROVAL_DECIDED, EventKind.TOOL_CALL)]
        assert order == [EventKind.APPROVAL_DECIDED, EventKind.TOOL_CALL], "the call was settled before the decision"
        assert app.live.trials[trial_id].assisted
        stored = _stored_trial(app, trial_id)
        assert stored.assisted
        kinds = [entry.kind for entry in app.services.lifecycle.repository.timeline(trial_id)]
        assert "approval_asked" in kinds and "approval_decided" in kinds


async def test_an_unanswered_approval_times_out_rejected_and_its_dialog_closes(tmp_path: Path,
                                                                               tui_env: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST], approval_timeout=1.0)
    pushed: list[object] = []  # every screen the app opens: the dialog may come and go between two looks
    push_screen = app.push_screen
    app.push_screen = lambda screen, *args, **kwargs: (pushed.append(screen), push_screen(screen, *args, **kwargs))[1]
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", approval="ask")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        await wait_for(pilot, lambda: not isinstance(app.screen, ApprovalScreen), "the dialog to close by itself")
        assert [type(screen) for screen in pushed] == [ApprovalScreen], "the approval dialog never opened"
        trial_id = only_trial(app)
        (decided,) = trial_events(app, trial_id, EventKind.APPROVAL_DECIDED)
        assert (decided.data["approved"], decided.data["decided_by"]) == (False, "timeout")
        (call,) = trial_events(app, trial_id, EventKind.TOOL_CALL)
        assert call.data["status"] != "success" and not (tui_env / "marker.txt").exists()
        assert not pending(app) and not app.live.trials[trial_id].assisted


async def test_pending_approvals_queue_with_a_visible_count(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", trials="3", parallel="3", approval="ask")
        await wait_for(pilot, lambda: len(pending(app)) == 3, "three pending approvals")
        assert isinstance(app.screen, ApprovalScreen)
        # the dialog's count line is drawn by its timer or the inbox's next change: wait for it, not the clock
        await wait_for(pilot, lambda: "2 more pending" in str(app.screen.query_one("#approval-countdown").render()),
                       "the dialog's count of pending approvals")
        assert "approvals pending: 3" in str(app.workbench_screen.query_one("#info").render())
        await pilot.press("ctrl+r")  # this tool for the whole run: the other two go through too
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        assert not pending(app) and not isinstance(app.screen, ApprovalScreen)
        assert sorted(t.status for t in app.live.trials.values()) == ["completed"] * 3


async def test_an_intervention_reaches_the_agent_before_its_next_llm_call(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="count", paused=True)
        await wait_for(pilot, lambda: app.live.trials and next(iter(app.live.trials.values())).control == "paused",
                       "the trial to start paused")
        trial_id = only_trial(app)
        app.workbench_screen.query_one("#trials").focus()
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, InterventionScreen), "the intervention dialog")
        await pilot.press(*"Use bigger steps")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, InterventionScreen), "the dialog to close")
        await pilot.press("c")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")

        events = trial_events(app, trial_id, EventKind.INTERVENTION_APPLIED, EventKind.MESSAGE, EventKind.LLM_RESPONSE)
        applied = next(i for i, e in enumerate(events) if e.kind == EventKind.INTERVENTION_APPLIED)
        assert events[applied].data["text"] == "Use bigger steps"
        message = next(i for i, e in enumerate(events) if e.kind == EventKind.MESSAGE
                       and e.data["content"] == "Intervention from the operator: Use bigger steps")
        first_llm = next(i for i, e in enumerate(events) if e.kind == EventKind.LLM_RESPONSE)
        assert message < first_llm, "the intervention must reach the conversation before the next LLM call"
        assert _stored_trial(app, trial_id).assisted
        timeline = app.services.lifecycle.repository.timeline(trial_id)
        stored = [e.summary for e in timeline if e.kind == "intervention_applied"]
        assert stored == ["intervention (inbox): Use bigger steps"]


async def test_step_advances_exactly_one_iteration_per_key_press(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="count", paused=True)
        await wait_for(pilot, lambda: len(app.live.trials) == 1, "the trial to start")
        trial_id = only_trial(app)
        controller = app.services.session.active.controls.controller(trial_id)
        await wait_for(pilot, lambda: controller.blocked, "the agent to wait at its first iteration")
        app.workbench_screen.query_one("#trials").focus()

        def iterations() -> int:
            return len(trial_events(app, trial_id, EventKind.ITERATION_STARTED))

        assert iterations() == 0
        for expected in (1, 2, 3):
            await pilot.press("s")
            # the agent blocks before the UI has drained its "paused" event: wait for that event too
            await wait_for(pilot, lambda expected=expected: iterations() == expected and controller.blocked
                           and app.live.trials[trial_id].status == "paused",
                           f"iteration {expected} to run and the agent to pause again")
            # blocked again at exactly `expected`: a press that ran two iterations fails the wait above
            assert iterations() == expected, "one key press ran more than one iteration"
        assert "paused" in str(app.workbench_screen.query_one("#status").render())
        await pilot.press("C")  # shift+c: continue every trial
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        assert app.live.trials[trial_id].status == "completed" and iterations() == 6
