"""Keys reach a text field in the order they are typed, under two CPU hogs (issue 36): Backspace and the
letter typed with it, Tab and the keys after it. Every key is queued at once (tests/tui/typing.py); each
test waits until the keys are posted and every node's queue is empty, then reads the fields."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, TextArea

from corral_tui.screens.dialogs import InterventionScreen
from tests.tui.helpers import SIZE, make_app, quiet, wait_for, wait_ready
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
