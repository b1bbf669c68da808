"""A secret we read (a provider key, a header value) is masked in the live panes as it is in the store:
a tool result or a provider error that echoes it reaches the screen as `***` (before, the panes showed the
raw event text until the trial was drawn again from the store)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.events import EventKind, event_from
from corral_core.safetext import register_secret
from corral_tui.widgets.trials_table import TrialsTable
from tests.tui.helpers import SIZE, make_app, pane_text, wait_for, wait_ready

pytestmark = pytest.mark.anyio
SECRET = "sk-live-redaction-test-0123456789"


async def test_a_secret_echoed_by_a_tool_or_a_provider_is_masked_in_the_live_panes(tmp_path: Path) -> None:
    register_secret(SECRET)
    trial_id, task = "tr_secret0001", "count"
    events = [
        event_from(EventKind.TRIAL_STARTED, trial_id, task, {"arm": "full", "trial_index": 0}, ts=0.0),
        event_from(EventKind.ITERATION_STARTED, trial_id, task, {"iteration": 0}, ts=0.0),
        event_from(EventKind.MESSAGE, trial_id, task,
              {"role": "assistant", "content": f"The key is {SECRET}, I will use it.", "index": 1}, ts=0.0),
        event_from(EventKind.TOOL_CALL, trial_id, task, {
            "tool_name": "http_get", "status": "success", "arguments": {"header": f"Bearer {SECRET}"},
            "result": f"echo: Authorization: Bearer {SECRET}", "iteration": 0}, ts=0.0),
    ]
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        for event in events:
            app.services.lifecycle.queue.emit(event)
        await wait_for(pilot, lambda: trial_id in app.live.trials, "the trial row")
        table = app.workbench_screen.query_one(TrialsTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(trial_id))
        await wait_for(pilot, lambda: app.workbench_screen.selected_trial() == trial_id, "the selection")
        iterations = await pane_text(pilot, "pane-iterations")
        tools = await pane_text(pilot, "pane-tools")
    shown = iterations + tools
    assert "The key is ***" in iterations and "http_get" in tools
    assert SECRET not in shown and SECRET[:20] not in shown
