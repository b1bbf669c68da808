"""Bindings, the help screen and the command palette."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.command import CommandPalette
from textual.widgets import TabbedContent

from corral_tui.app import WorkbenchApp
from corral_tui.commands import all_binding_owners
from corral_tui.screens.dialogs import HelpScreen
from corral_tui.screens.history import HistoryScreen
from tests.tui.helpers import SIZE, make_app, static_text, wait_for, wait_ready


def test_every_binding_has_an_id_and_no_id_means_two_things() -> None:
    actions: dict[str, str] = {}
    for where, owner in all_binding_owners(WorkbenchApp):
        for binding in Binding.make_bindings(owner.BINDINGS):
            assert binding.id, f"{where}: the binding {binding.key!r} -> {binding.action} has no id"
            assert actions.setdefault(binding.id, binding.action) == binding.action, f"{binding.id} is reused"


@pytest.mark.anyio
async def test_help_lists_the_bindings_and_the_palette_runs_actions(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        text = static_text(app.screen.query_one("#help-table"))
        for expected in ("workbench.step_all", "approval.approve_tool", "approval.terminate", "history.next_page",
                         "Intervene", "End trial"):
            assert expected in text
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), "the command palette")
        await pilot.press(*"History")
        await wait_for(pilot, lambda: _palette_highlights(app, "History"), "the palette to offer History")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen), "the history screen from the palette")


@pytest.mark.anyio
async def test_t_cycles_the_selected_trials_panes_from_the_keyboard(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        tabs = app.screen.query_one("#pane-tabs", TabbedContent)
        assert tabs.active == "pane-iterations"
        for expected in ("pane-tools", "pane-hooks", "pane-iterations"):
            await pilot.press("t")
            await wait_for(pilot, lambda expected=expected: tabs.active == expected, f"the {expected} tab")


def _palette_highlights(app, text: str) -> bool:
    """The command palette's highlighted result mentions `text` (its search runs in the background)."""
    from textual.command import CommandList

    found = app.screen.query(CommandList)
    if not found or found.first().highlighted is None:
        return False
    command_list = found.first()
    return text in str(command_list.get_option_at_index(command_list.highlighted).prompt)
