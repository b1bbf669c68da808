"""Keys reach a text field in the order they are typed, under two CPU hogs (issue 36): Backspace and the
letter typed with it, Tab and the keys after it; ctrl+r from a field; nothing typed after a refusal fires
a binding. Every key is queued at once (tests/tui/typing.py); each
test waits until the keys are posted and every node's queue is empty, then reads the fields."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, TextArea

from corral_tui.screens.dialogs import ErrorScreen, InterventionScreen
from corral_tui.widgets.run_form import RunForm
from tests.tui.helpers import SIZE, make_app, quiet, run_done, wait_for, wait_ready
from tests.tui.typing import cpu_hogs, handled, type_now, type_text

pytestmark = pytest.mark.anyio


async def _focused_field(pilot, field_id: str, value: str) -> Input:
    field = pilot.app.screen.query_one(f"#{field_id}", Input)
    field.value = value
    field.focus()
    await wait_for(pilot, lambda: field.has_focus and quiet(pilot.app), f"{field_id} focused")
    field.cursor_position = len(value)  # the cursor after the value, nothing selected
    return field


async def test_backspace_and_the_key_typed_with_it_act_in_order(tmp_path: Path) -> None:
    """Trials holds 12: Backspace then 7 with no pause gives 17 (the 7 was inserted, then deleted by the
    Backspace that reached the field first but acted last); a burst of Backspaces then a word keeps
    every letter of the word."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        with cpu_hogs():
            trials = await _focused_field(pilot, "form-trials", "12")
            type_now(app, "backspace", "7")
            await handled(pilot)
            assert trials.value == "17"
            arms = await _focused_field(pilot, "form-arms", "full")
            type_now(app, *["backspace"] * 4)
            type_text(app, "minimal, full")
            await handled(pilot)
            assert arms.value == "minimal, full"


async def test_keys_after_a_tab_land_in_the_next_field(tmp_path: Path) -> None:
    """`BSpace 2 Tab BSpace 6` from Trials (holding 1) gives Trials 2 and Parallel 6 (it gave Trials 12 and
    an empty Parallel)."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        with cpu_hogs():
            trials = await _focused_field(pilot, "form-trials", "1")
            parallel = app.screen.query_one("#form-parallel", Input)
            type_now(app, "backspace", "2", "tab", "backspace", "6")
            await handled(pilot)
            assert (trials.value, parallel.value) == ("2", "6")


async def test_backspace_in_a_dialogs_text_area_acts_in_order(tmp_path: Path) -> None:
    """The intervention dialog's text area: `sto`, Backspace, `op` typed at once reads `stop` (it read `stoo`)."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        app.push_screen(InterventionScreen("trial 1"))
        await wait_for(pilot, lambda: isinstance(app.screen.focused, TextArea) and quiet(app), "the dialog")
        area = app.screen.query_one(TextArea)
        with cpu_hogs():
            type_text(app, "sto", "backspace", "o", "p")
            await handled(pilot)
        assert area.text == "stop"


async def test_ctrl_r_runs_the_form_from_a_text_field(tmp_path: Path) -> None:
    """The key table says ctrl+r runs the form "from anywhere": from the Trials field too (it did nothing)."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        app.workbench_screen.query_one(RunForm).set_values(tasks="add")
        await _focused_field(pilot, "form-trials", "1")
        with cpu_hogs():
            type_now(app, "ctrl+r")
            await wait_for(pilot, lambda: run_done(app), "the run ctrl+r started")
        assert app.run_state == "finished" and len(app.live.trials) == 1


async def test_the_keys_typed_after_a_refused_ctrl_s_go_nowhere(tmp_path: Path) -> None:
    """A refused save (the form names a task the suite lacks) opens a dialog: the path typed next (m opens
    Compare, h History elsewhere) reaches the dialog and no binding; Enter closes it, the focus back on the
    suites tree where it was."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = app.workbench_screen
        screen.query_one(RunForm).set_values(tasks="nosuchtask")
        tree = screen.query_one("#tasks")
        tree.focus()
        await wait_for(pilot, lambda: tree.has_focus and quiet(app), "the suites tree focused")
        with cpu_hogs():
            type_now(app, "ctrl+s", *"my-run.bench.yaml")
            await handled(pilot)
        assert isinstance(app.screen, ErrorScreen), f"the refusal is a dialog, not {app.screen!r}"
        assert "has no task nosuchtask" in app.screen.message
        type_now(app, "enter")
        await handled(pilot)
        assert app.screen is screen and screen.focused is tree
        assert app.services.session.active is None
