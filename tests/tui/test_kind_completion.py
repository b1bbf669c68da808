"""The run form completes registered kinds as they are typed: a breakpoint kind in Breakpoints, an agent
type in + agents (Textual's inline suggestion; right arrow takes it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.message import Message
from textual.suggester import SuggestionReady
from textual.widgets import Input

from tests.tui.helpers import SIZE, make_app, wait_for, wait_ready

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("field_id", "typed", "completed"), [
    ("#form-breakpoints", "tool:calculator; to", "tool:calculator; tool:"),
    ("#form-agents", "planner, refl", "planner, reflection"),
])
async def test_a_form_field_completes_a_registered_kind(tmp_path: Path, field_id: str, typed: str,
                                                        completed: str) -> None:
    seen: list[Message] = []
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_ready(pilot)
        field = app.workbench_screen.query_one(field_id, Input)
        field.focus()
        await pilot.pause()
        field.value = typed
        field.action_end()
        await wait_for(pilot, lambda: any(isinstance(m, SuggestionReady) and m.suggestion == completed
                                          for m in seen), "the field's suggestion")
        await pilot.pause()
        await pilot.press("right")
        assert field.value == completed
