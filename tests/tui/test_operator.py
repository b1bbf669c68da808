"""An operator's actions are never lost, stuck or misread (issue 12's bugs, each reproduced first).

Every test here drives the real app through its keys and reads what the store recorded.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, RichLog

from corral_core.env.approval import ApprovalRequest
from corral_core.events import EventKind, event_from
from corral_core.store import Repository, make_engine
from corral_tui.config import Redactor
from corral_tui.screens.approval import ApprovalScreen
from corral_tui.screens.dialogs import ConfirmScreen, InterventionScreen
from corral_tui.screens.timeline import TimelineScreen
from corral_tui.widgets.run_form import RunForm
from corral_tui.widgets.trials_table import TrialsTable
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG
from tests.tui.helpers import (
    SAMPLEMATH,
    SIZE,
    TUITEST,
    asking_trial_events,
    make_app,
    only_trial,
    pane_text,
    run_done,
    start_run,
    trial_events,
    wait_for,
    wait_ready,
)

pytestmark = pytest.mark.anyio
NEVER = 600.0  # an approval timeout no test may wait for


def pending(app):
    return app.services.approvals.pending()


def store_of(app):
    lifecycle = app.services.lifecycle
    assert lifecycle.writer.flush(HANG)
    return lifecycle.repository


async def test_keys_reach_the_workbench_wherever_the_focus_is(tmp_path: Path) -> None:
    """A field types letters, Enter there never starts a run, Esc leaves it, and while a run is live
    the form is locked so `x` stops the run wherever the focus was."""
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = app.workbench_screen
        form = screen.query_one(RunForm)
        form.set_values(paused=True)
        tasks = screen.query_one("#form-tasks", Input)
        tasks.focus()
        await pilot.press(*"count", "enter")  # c is Continue, but a field types it
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "form-agent",
                       "Enter to move on to the next field")
        assert tasks.value == "count"
        assert app.run_state == "idle", "Enter in a field started a run"
        await pilot.press("escape")
        assert app.focused is not None and form not in app.focused.ancestors_with_self
        await pilot.press("r")  # a letter outside the form never starts a run
        await pilot.pause()
        assert app.run_state == "idle"
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: app.live.trials and app.run_state == "paused", "the run to start paused")
        tasks.focus()  # the form is locked while the run is live: the focus cannot go back into it
        await pilot.pause()
        assert tasks.disabled and app.focused is not tasks
        await pilot.press("x")
        await wait_for(pilot, lambda: run_done(app), "x to stop the run")
        assert app.run_state == "interrupted" and tasks.value == "count"
        assert not tasks.disabled, "the form stays locked after the run"


async def test_an_intervention_sent_during_the_last_llm_call_is_reported_undelivered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-for-tests")
    release = threading.Event()
    replies = [FakeReply.tool_call("calculator", {"operation": "+", "a": 17, "b": 25}),
               FakeReply(content="Final Answer: 42", hold=release)]
    with FakeOpenAI(replies) as fake:
        app = make_app(tmp_path, suites=[SAMPLEMATH])
        async with app.run_test(size=SIZE) as pilot:
            await wait_ready(pilot)
            await start_run(pilot, "samplemath", tasks="add", agent="tool_calling", model="openai/fake-model",
                            api_base=fake.base_url)
            await wait_for(pilot, lambda: len(fake.received) >= 2, "the trial's last LLM call to be in flight")
            # the workbench learns of the trial at its next drain of the run's events: the provider can be first
            await wait_for(pilot, lambda: len(app.live.trials) == 1, "the trial on the workbench")
            trial_id = only_trial(app)
            await pilot.press("i")
            await wait_for(pilot, lambda: isinstance(app.screen, InterventionScreen), "the intervention dialog")
            await pilot.press(*"Round it", "ctrl+s")
            await wait_for(pilot, lambda: not isinstance(app.screen, InterventionScreen), "the dialog to close")
            # the dialog's result reaches the app on its next turn (Textual calls it with call_next)
            await wait_for(pilot, lambda: "Intervention queued" in str(screen_status(app)), "the queued line")
            release.set()
            await wait_for(pilot, lambda: run_done(app), "the run to finish")
            assert "NOT delivered" in str(screen_status(app))
            (undelivered,) = trial_events(app, trial_id, EventKind.INTERVENTION_UNDELIVERED)
            assert undelivered.data["text"] == "Round it"
            assert "NOT delivered" in await pane_text(pilot, "pane-hooks")
            stored = [e for e in store_of(app).timeline(trial_id) if e.kind == "intervention_undelivered"]
            assert [e.data["text"] for e in stored] == ["Round it"]
            assert not store_of(app).trial(trial_id).assisted  # it never reached the model


def screen_status(app) -> object:
    return app.workbench_screen.query_one("#status").render()


async def test_stop_with_two_pending_approvals_ends_the_run_and_cancels_both(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST], approval_timeout=NEVER)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", trials="2", parallel="2", approval="ask")
        await wait_for(pilot, lambda: len(pending(app)) == 2 and isinstance(app.screen, ApprovalScreen),
                       "two pending approvals")
        await pilot.press("escape", "x")  # put the dialog off, stop the run
        await wait_for(pilot, lambda: run_done(app), "the run to end (long before the approval timeout)")
        assert app.run_state == "interrupted" and pending(app) == []
        repository = store_of(app)
        decided = [e.data for trial_id in app.live.trials for e in repository.timeline(trial_id)
                   if e.kind == "approval_decided"]
        assert [(d["approved"], d["decided_by"]) for d in decided] == [(False, "cancelled")] * 2
        calls = [e.data for trial_id in app.live.trials for e in repository.timeline(trial_id) if e.kind == "tool_call"]
        assert [(c["status"], c["approval"]) for c in calls] == [("rejected", "cancelled")] * 2
        assert repository.get_benchmark(app.last_benchmark_id).status == "interrupted"


async def test_quit_with_an_approval_dialog_open_leaves_the_run_interrupted(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST], approval_timeout=NEVER)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", approval="ask")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
        await wait_for(pilot, lambda: app.live.benchmark_id is not None, "the benchmark to be recorded")
        benchmark_id = app.live.benchmark_id
        await pilot.press("ctrl+q")
    repository = Repository(make_engine(tmp_path / "corral.db"))
    benchmark = repository.get_benchmark(benchmark_id)
    assert benchmark is not None and benchmark.status == "interrupted" and benchmark.attempt_status is None
    (trial,) = repository.trials(benchmark_id).items
    decided = [e.data for e in repository.timeline(trial.id) if e.kind == "approval_decided"]
    assert [(d["approved"], d["decided_by"]) for d in decided] == [(False, "cancelled")]


async def test_q_during_a_run_asks_before_quitting(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="count", paused=True)
        await wait_for(pilot, lambda: app.run_state == "paused", "the run to start")
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the quit question")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen, "the question to close")
        assert app.run_state == "paused" and app.is_running
        benchmark_id = app.live.benchmark_id
        await pilot.press("q", "y")
    repository = Repository(make_engine(tmp_path / "corral.db"))
    assert repository.get_benchmark(benchmark_id).status == "interrupted"


async def test_an_evicted_trial_shows_its_panes_from_the_store_and_enter_opens_its_timeline(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[SAMPLEMATH])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", tasks="add", trials="45", parallel="4")
        await wait_for(pilot, lambda: run_done(app), "45 trials", timeout=120)
        trials = app.live.ordered()
        target = trials[-30]  # 30 places back from the newest: long evicted from the live buffer
        assert not target.events and trials[-1].events
        table = app.workbench_screen.query_one(TrialsTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(target.trial_id))
        await wait_for(pilot, lambda: app.workbench_screen.selected_trial() == target.trial_id, "the selection")
        await wait_for(pilot, lambda: "calculator" in _log(app, "pane-iterations"), "its panes from the store")
        text = await pane_text(pilot, "pane-iterations")
        assert "iteration 1" in text and "Answer: 42" in text
        assert "calculator" in await pane_text(pilot, "pane-tools")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen)
                       and app.screen.query_one(RichLog).lines, "its whole timeline")
        assert app.screen.trial_id == target.trial_id


def _log(app, pane_id: str) -> str:
    log = app.workbench_screen.query_one(f"#{pane_id}-log", RichLog)
    return "\n".join(strip.text for strip in log.lines)


async def test_reject_with_a_reason_and_end_the_asking_trial_from_the_dialog(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST], approval_timeout=NEVER)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", trials="2", parallel="2", approval="ask")
        await wait_for(pilot, lambda: len(pending(app)) == 2 and isinstance(app.screen, ApprovalScreen)
                       and app.screen.armed, "two pending approvals")
        first, dialog = app.screen.request, app.screen
        reason = dialog.query_one("#approval-reason", Input)
        await wait_for(pilot, lambda: dialog.focused is reason, "the reason field's focus (the dialog's default)")
        await pilot.press(*"not on a shared disk", "enter")  # y and n are typed here, Enter rejects
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.request.id != first.id
                       and app.screen.armed,
                       "the second request's dialog")
        second = app.screen.request
        await pilot.press("ctrl+t")  # reject it and end its trial (the chord works from the reason field)
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        statuses = {trial_id: trial.status for trial_id, trial in app.live.trials.items()}
        assert statuses[second.trial_id] == "cancelled" and statuses[first.trial_id] == "completed"
        decided = {e.trial_id: e.data for e in (trial_events(app, t, EventKind.APPROVAL_DECIDED)[0]
                                               for t in app.live.trials)}
        assert (decided[first.trial_id]["approved"], decided[first.trial_id]["reason"]) == \
            (False, "not on a shared disk")
        assert (decided[second.trial_id]["approved"], decided[second.trial_id]["decided_by"]) == (False, "user")
        assert not (tmp_path / "markers" / "marker.txt").exists()


async def test_a_new_dialog_takes_no_keys_during_its_grace_period(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST], approval_timeout=NEVER, dialog_grace=NEVER)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", approval="ask")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
        dialog = app.screen
        await pilot.press("y", "n", "enter", "escape")  # keys meant for the screen behind (press waits for them)
        await pilot.pause()
        assert app.screen is dialog and len(pending(app)) == 1, "a key answered the dialog during its grace period"
        dialog.arm()  # the grace timer fires
        await pilot.press("ctrl+y")
        await wait_for(pilot, lambda: run_done(app), "the approved run to finish")
        assert app.live.trials[only_trial(app)].status == "completed"


async def start_two_paused_trials(pilot: Pilot) -> None:
    """Start two trials of tuitest's `count` at once, paused, and wait until both are."""
    app = pilot.app
    await start_run(pilot, "tuitest", tasks="count", trials="2", parallel="2", paused=True)
    await wait_for(pilot, lambda: len(app.live.trials) == 2 and all(
        t.control == "paused" for t in app.live.trials.values()), "two paused trials")

async def test_k_ends_the_selected_trial_as_cancelled_and_the_run_goes_on(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_two_paused_trials(pilot)
        table = app.workbench_screen.query_one(TrialsTable)
        table.focus()
        first, second = app.live.ordered()
        await wait_for(pilot, lambda: app.workbench_screen.selected_trial() == first.trial_id, "the first trial")
        await pilot.press("k")
        await wait_for(pilot, lambda: first.finished, "the trial to end")
        assert first.status == "cancelled" and not second.finished
        await pilot.press("C")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        assert (first.status, second.status, app.run_state) == ("cancelled", "completed", "finished")
        assert store_of(app).trial(first.trial_id).status == "cancelled"


async def test_the_approval_dialog_shows_the_asking_trials_iteration_and_thought_still_queued(tmp_path: Path) -> None:
    """A request reaches the dialog before the next drain of the event queue (a tenth of a second): the
    asking trial's iteration and last thought, already queued, are in the dialog all the same."""
    app = make_app(tmp_path, approval_timeout=NEVER, drain_interval=NEVER)  # no drain but the dialog's own
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        for event in asking_trial_events("tr_asking", "add"):
            app.services.lifecycle.queue.emit(event)
        request = ApprovalRequest(task_id="add", trial_id="tr_asking", tool_name="delete_file",
                                  arguments={"path": "scratch.tmp"}, timeout=NEVER, id="ap_asking")
        threading.Thread(target=app.services.approvals.request, args=(request,), daemon=True).start()
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
        asking = app.screen.asking
        assert asking.iteration == 3
        assert asking.last_thought.startswith("The scratch file is left over from the build")


async def test_a_paused_trials_time_stands_still_in_the_trials_table(tmp_path: Path) -> None:
    """Paused time is not trial time: the Time column stops while the trial is paused and goes on from
    there, as the trial's stored duration does (it jumped back when the trial ended)."""
    now = [1_000.0]
    app = make_app(tmp_path, clock=lambda: now[0], redact=Redactor())
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        table = app.workbench_screen.query_one(TrialsTable)

        def shown() -> str:
            return table.get_cell("tr_paused", "elapsed").plain.strip() if table.row_count else ""

        def emit(kind: EventKind, ts: float, **data: object) -> None:
            app.services.lifecycle.queue.emit(event_from(kind, "tr_paused", "add", dict(data), ts=ts))

        emit(EventKind.TRIAL_STARTED, 1_000.0, arm="full", trial_index=0)
        emit(EventKind.CONTROL_STATE, 1_002.0, state="running", iteration=0)
        now[0] = 1_100.0
        emit(EventKind.CONTROL_STATE, 1_003.0, state="paused", iteration=1)  # 3 s run, then 97 s paused
        await wait_for(pilot, lambda: shown() == "3.0 s", f"3 s of trial time (shown: {shown()!r})")
        now[0] = 1_200.0
        emit(EventKind.CONTROL_STATE, 1_195.0, state="running", iteration=1)  # 192 s paused, 5 s running
        await wait_for(pilot, lambda: shown() == "8.0 s", f"8 s of trial time (shown: {shown()!r})")
        emit(EventKind.TRIAL_FINISHED, 1_200.0, status="completed", score=1.0, duration=8.0)
        await wait_for(pilot, lambda: app.live.trials["tr_paused"].finished, "the trial to finish")
        assert shown() == "8.0 s"


async def test_a_run_whose_only_scored_trial_was_assisted_says_so(tmp_path: Path) -> None:
    """One trial told something and scored, the other ended by the stop: there is no headline score
    because the scored trial was assisted, not because no trial was scored."""
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_two_paused_trials(pilot)
        app.workbench_screen.query_one(TrialsTable).focus()
        first, second = app.live.ordered()
        await wait_for(pilot, lambda: app.workbench_screen.selected_trial() == first.trial_id, "the first trial")
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, InterventionScreen), "the intervention dialog")
        await pilot.press(*"Count carefully", "ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, InterventionScreen), "the dialog to close")
        await pilot.press("c")
        await wait_for(pilot, lambda: first.finished, "the told trial to finish")
        await pilot.press("x")
        await wait_for(pilot, lambda: run_done(app), "the stopped run")
        assert (first.status, first.assisted, first.score, second.status) == ("completed", True, 1.0, "cancelled")
        status = str(screen_status(app))
        assert "only assisted trials were scored" in status and "no trial was scored" not in status
