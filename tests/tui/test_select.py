"""The workbench's selects survive a value set before their label row is composed (Textual #6581: at
load 10-18 the run form's agent Select raised NoMatches at mount and the workbench exited)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.css.query import NoMatches
from textual.widgets import Select, Static
from textual.widgets._select import SelectCurrent

from corral_tui.widgets.select import Choice, _Current


@pytest.mark.anyio
@pytest.mark.parametrize("current, crashes", [(SelectCurrent, True), (_Current, False)])
async def test_a_label_set_before_the_row_is_composed(current: type[SelectCurrent], crashes: bool) -> None:
    """Textual's own row raises (the bug this module exists for: the test fails when a Textual release
    fixes it, and the workaround can go); ours keeps the label and shows it once composed."""
    app = App[None]()
    async with app.run_test() as pilot:
        row = current("placeholder")
        if crashes:
            with pytest.raises(NoMatches):
                row.update("react")
            return
        row.update("react")
        await app.mount(row)
        await pilot.pause()
        assert str(row.query_one("#label", Static).render()) == "react"


class Form(App[None]):
    def compose(self) -> ComposeResult:
        yield Choice([("react", "react"), ("tool_calling", "tool_calling")], value="react", allow_blank=False,
                     id="agent")
        yield Choice([("a", "a")], prompt="any arm", id="arm")


@pytest.mark.anyio
async def test_a_choice_is_textuals_select() -> None:
    app = Form()
    async with app.run_test() as pilot:
        agent = app.query_one("#agent", Select)
        assert agent.value == "react"
        assert str(agent.query_one("#label", Static).render()) == "react"
        assert str(app.query_one("#arm", Select).query_one("#label", Static).render()) == "any arm"
        agent.value = "tool_calling"
        await pilot.pause()
        assert str(agent.query_one("#label", Static).render()) == "tool_calling"
