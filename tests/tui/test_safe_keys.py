"""Safe hands on the controls (issue 24): what a person types lands where they meant it, and nothing
they type takes an action they did not mean. Keys are queued with no pause between them
(tests/tui/typing.py), as fast typing or a loaded machine delivers them; the tests wait for focus
and for results, never for the clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from corral_core.events import EventKind, event_from
from corral_tui.screens.approval import ApprovalScreen
from corral_tui.screens.history import HistoryScreen
from corral_tui.widgets.trials_table import TrialsTable
from tests.tui.helpers import SIZE, TUITEST, make_app, run_done, start_run, trial_events, wait_for, wait_ready
from tests.tui.typing import type_now, type_text

pytestmark = pytest.mark.anyio
NEVER = 600.0  # an approval timeout no test may wait for
REASON = "scratch files must stay for the audit"


def pending(app):
    return app.services.approvals.pending()


async def test_a_rejection_reason_typed_with_no_pause_lands_in_the_field_and_rejects_with_it(tmp_path: Path) -> None:
    """The dialog opens with the reason field focused: every letter of the reason (t ends a trial, w
    approves the tool, h opens History elsewhere) is typed, and Enter rejects with that reason. The
    other trial, asking too, is not touched."""
    app = make_app(tmp_path, suites=[TUITEST], approval_timeout=NEVER)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", trials="2", parallel="2", approval="ask")
        await wait_for(pilot, lambda: len(pending(app)) == 2 and isinstance(app.screen, ApprovalScreen)
                       and app.screen.armed and app.screen.focused is not None, "the dialog, focused")
        dialog = app.screen
        first = dialog.request
        other = next(request for request in pending(app) if request.id != first.id)
        type_text(app, REASON, "enter")
        await wait_for(pilot, lambda: first.id not in {request.id for request in pending(app)}, "the rejection")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.request.id == other.id
                       and isinstance(app.screen.focused, Input), "the other request's dialog, its field focused")
        assert [request.id for request in pending(app)] == [other.id], "the other trial's request was decided"
        assert not app.live.trials[other.trial_id].finished, "the other trial was touched"
        assert app.screen.query_one("#approval-reason", Input).value == "", "the reason leaked into the next dialog"
        app.screen.query_one("#approval-reason", Input).value = "no"
        await pilot.press("enter")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        (decided,) = trial_events(app, first.trial_id, EventKind.APPROVAL_DECIDED)
        assert (decided.data["approved"], decided.data["reason"]) == (False, REASON)
        assert {trial.status for trial in app.live.trials.values()} == {"completed"}
        assert not isinstance(app.screen, HistoryScreen)
        assert not (tmp_path / "markers" / "marker.txt").exists()


async def start_two_paused_trials(pilot) -> None:
    app = pilot.app
    await start_run(pilot, "tuitest", tasks="count", trials="2", parallel="2", paused=True)
    await wait_for(pilot, lambda: len(app.live.trials) == 2 and all(
        t.control == "paused" for t in app.live.trials.values()), "two paused trials")


async def test_text_typed_after_a_refused_i_goes_nowhere(tmp_path: Path) -> None:
    """`i` on a finished trial is refused in a dialog that names what to select; the intervention typed
    right after it (S steps all, k ends a trial, h opens History, c continues ...) goes nowhere, and
    Enter closes the refusal with the focus back on the trials table."""
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_two_paused_trials(pilot)
        table = app.workbench_screen.query_one(TrialsTable)
        table.focus()
        first, second = app.live.ordered()
        await wait_for(pilot, lambda: app.workbench_screen.selected_trial() == first.trial_id, "the first trial")
        await pilot.press("k")  # ends it (this config does not ask first)
        await wait_for(pilot, lambda: first.finished, "the first trial to end")
        iteration = second.iteration
        type_text(app, "i", *"Skip the rest; check history, compare and pause", "enter")
        await pilot.pause()  # every queued key handled
        await wait_for(pilot, lambda: app.screen is app.workbench_screen and app.focused is table,
                       "the refusal to close, the focus back on the table")
        refusal = [n.message for n in app._notifications]
        assert not refusal, f"a key acted: {refusal}"
        assert (second.finished, second.control, second.iteration) == (False, "paused", iteration), \
            "the typed text steered the other trial"
        assert app.run_state == "paused" and len(app.live.trials) == 2
        assert app.workbench_screen.selected_trial() == first.trial_id


async def test_the_refusal_names_what_to_select(tmp_path: Path) -> None:
    from corral_tui.screens.dialogs import ErrorScreen

    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        app.workbench_screen.query_one(TrialsTable).focus()
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen), "the refusal")
        assert "Select a running trial" in app.screen.title_text and "trials table" in app.screen.message
        await pilot.press("h", "q", "escape")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen, "the refusal to close")
        assert app.is_running and not any(isinstance(s, HistoryScreen) for s in app.screen_stack)


async def test_ending_a_trial_and_stopping_the_run_ask_first(tmp_path: Path) -> None:
    from corral_tui.screens.dialogs import ConfirmScreen

    app = make_app(tmp_path, suites=[TUITEST], confirm_destructive=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_two_paused_trials(pilot)
        app.workbench_screen.query_one(TrialsTable).focus()
        first, second = app.live.ordered()
        await wait_for(pilot, lambda: app.workbench_screen.selected_trial() == first.trial_id, "the first trial")
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question before ending it")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen, "the question to close")
        assert not first.finished
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question again")
        await pilot.press("y")
        await wait_for(pilot, lambda: first.finished, "the trial to end")
        assert first.status == "cancelled" and not second.finished
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question before stopping")
        shown = app.config.redact.ident(app.live.benchmark_id)  # as every id on screen (the real one outside tests)
        assert shown in app.screen.message, "the question does not name the benchmark"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen, "the question to close")
        assert app.run_state == "paused" and not second.finished
        await pilot.press("x", "y")
        await wait_for(pilot, lambda: run_done(app), "the run to stop")
        assert app.run_state == "interrupted"


async def test_ending_the_asking_trial_from_the_approval_dialog_asks_first(tmp_path: Path) -> None:
    from corral_tui.screens.dialogs import ConfirmScreen

    app = make_app(tmp_path, suites=[TUITEST], approval_timeout=NEVER, confirm_destructive=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", approval="ask")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.focused is not None,
                       "the dialog")
        dialog = app.screen
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is dialog, "back to the dialog")
        assert len(pending(app)) == 1
        await pilot.press("ctrl+t", "y")
        await wait_for(pilot, lambda: run_done(app), "the run to end")
        assert app.live.trials[dialog.request.trial_id].status == "cancelled"


async def test_keys_typed_right_after_tab_go_to_the_field_tab_focused(tmp_path: Path) -> None:
    """`2 Tab 3` and `Tab 7 Tab 8` typed with no pause fill two fields each. Tab moves the focus before
    the next key is handed out (it waited behind the field's own queue and `3` landed in Trials)."""
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = app.workbench_screen
        fields = {name: screen.query_one(f"#form-{name}", Input)
                  for name in ("trials", "parallel", "iterations", "model", "api_base")}
        for field in fields.values():
            field.value = ""
        fields["trials"].focus()
        await wait_for(pilot, lambda: app.focused is fields["trials"], "the Trials field's focus")
        type_now(app, "2", "tab", "3")
        await pilot.pause()
        await wait_for(pilot, lambda: app.focused is fields["parallel"], "the focus on Parallel")
        assert (fields["trials"].value, fields["parallel"].value) == ("2", "3")
        fields["iterations"].focus()
        await wait_for(pilot, lambda: app.focused is fields["iterations"], "the Max iterations field's focus")
        type_now(app, "tab", "7", "tab", "8")
        await pilot.pause()
        await wait_for(pilot, lambda: app.focused is fields["api_base"], "the focus on API base")
        assert (fields["model"].value, fields["api_base"].value) == ("7", "8")


async def test_keys_typed_right_after_enter_go_to_the_next_field(tmp_path: Path) -> None:
    """Enter in a form field moves on at once, like Tab: `5 Enter 6` fills two fields."""
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = app.workbench_screen
        trials, parallel = screen.query_one("#form-trials", Input), screen.query_one("#form-parallel", Input)
        trials.value = parallel.value = ""
        trials.focus()
        await wait_for(pilot, lambda: app.focused is trials, "the Trials field's focus")
        type_now(app, "5", "enter", "6")
        await pilot.pause()
        await wait_for(pilot, lambda: app.focused is parallel, "the focus on Parallel")
        assert (trials.value, parallel.value) == ("5", "6") and app.run_state == "idle"


async def test_task_ids_typed_outside_a_field_start_nothing(tmp_path: Path) -> None:
    """The rule of the key table (docs/keys-and-layout.md): a letter acts only where what it acts on has the
    focus. Task ids typed on the suites tree (r, b, p, s, c, m are in them) start no run, move no focus and switch
    no screen; the status line says where the letters work."""
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        tree = app.workbench_screen.query_one("#tasks")
        tree.focus()
        await wait_for(pilot, lambda: app.focused is tree, "the tree's focus")
        type_text(app, "power, add, subtract, compute, b")
        await pilot.pause()
        assert app.run_state == "idle" and app.services.session.active is None, "a typed letter started a run"
        assert app.focused is tree and app.screen is app.workbench_screen
        assert "Breakpoints field from the run form" in str(app.workbench_screen.query_one("#status").render())


async def test_checkboxes_show_their_state_without_colour_and_enter_moves_on(tmp_path: Path) -> None:
    from textual.widgets import Button, Checkbox

    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = app.workbench_screen
        surrender = screen.query_one("#form-surrender", Checkbox)
        assert "X" not in str(surrender.render()), "an unticked box shows an X"
        surrender.focus()
        await wait_for(pilot, lambda: app.focused is surrender, "the checkbox's focus")
        await pilot.press("space")
        await wait_for(pilot, lambda: surrender.value, "space to tick it")
        assert "X" in str(surrender.render())
        type_now(app, "enter")
        await pilot.pause()
        assert surrender.value, "Enter toggled the checkbox"
        assert app.focused is screen.query_one("#form-paused", Checkbox), "Enter did not move on"
        type_now(app, "enter")
        await pilot.pause()
        assert app.focused is screen.query_one("#form-start", Button) and app.run_state == "idle"


async def test_a_long_field_value_shows_its_start(tmp_path: Path) -> None:
    url = "http://127.0.0.1:8000/v1/a/very/long/path/that/does/not/fit/in/the/field"
    app = make_app(tmp_path, suites=[TUITEST], model="openai/local", model_base_url=url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        field = app.workbench_screen.query_one("#form-api_base", Input)
        await pilot.pause()
        assert field.scroll_offset.x == 0 and "http://127" in str(field.render_line(0).text)
        field.focus()
        await wait_for(pilot, lambda: app.focused is field, "the field's focus")
        await pilot.pause()
        assert field.cursor_position == 0 and "http://127" in field.render_line(0).text
        type_text(app, "http://h/v1")  # the whole value is selected: typing replaces it
        await pilot.pause()
        assert field.value == "http://h/v1"


def test_the_runs_elapsed_time_counts_from_the_start_request() -> None:
    """With --executor processes the cluster starts first (30 s at load 20): the run's elapsed time
    counts from the request, the ETA from the trials' pace."""
    from corral_tui.live import LiveRun

    live = LiveRun()
    live.requested = 1_000.0
    live.apply([event_from(EventKind.BENCHMARK_STARTED, None, None, {"total_trials": 2, "pending_trials": 2},
                      benchmark_id="bm_x", ts=1_030.0)])
    live.total = 2
    live.apply([event_from(EventKind.TRIAL_STARTED, "tr_1", "add", {"arm": "full", "trial_index": 0}, ts=1_030.0),
                event_from(EventKind.TRIAL_FINISHED, "tr_1", "add", {"status": "completed", "score": 1.0}, ts=1_040.0)])
    assert live.elapsed(1_040.0) == 40.0
    assert live.eta(1_040.0) == 10.0  # one of two trials done in 10 s of running
