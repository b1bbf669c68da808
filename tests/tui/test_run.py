"""Starting a run from the form and watching its trials, tool calls and hook events appear."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.message import Message

from corral_core.events import EventKind
from corral_tui.messages import RunFinished, RunStarted, ServicesReady, SuitesLoaded
from corral_tui.screens.timeline import TimelineScreen
from tests.tui.helpers import (
    SIZE,
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


async def test_a_run_shows_its_tool_calls(tmp_path: Path) -> None:
    seen: list[Message] = []
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", tasks="add", arms="full", trials="1")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")

        trial_id = only_trial(app)
        trial = app.live.trials[trial_id]
        assert (trial.task_id, trial.arm, trial.status, trial.score) == ("add", "full", "completed", 1.0)
        calls = trial_events(app, trial_id, EventKind.TOOL_CALL)
        assert [c.data["tool_name"] for c in calls] == ["calculator"]
        tools_pane = await pane_text(pilot, "pane-tools")
        assert "calculator" in tools_pane and "success" in tools_pane and '"operation": "+"' in tools_pane
        assert "Answer: 42" in await pane_text(pilot, "pane-iterations")
        assert "control: running" in await pane_text(pilot, "pane-hooks")  # the controller's own state
        assert "1/1" in str(app.workbench_screen.query_one("#info").render())

    kinds = [type(m) for m in seen if isinstance(m, (SuitesLoaded, ServicesReady, RunStarted, RunFinished))]
    assert kinds == [SuitesLoaded, ServicesReady, RunStarted, RunFinished]
    finished = next(m for m in seen if isinstance(m, RunFinished))
    assert finished.summary.status == "finished" and finished.summary.headline_score == 1.0


async def test_a_bad_form_value_is_explained_and_nothing_runs(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", arms="full, loud")
        await wait_for(pilot, lambda: "unknown verbosity level loud" in
                       str(app.workbench_screen.query_one("#status").render()), "the form's error in the status line")
        assert app.run_state == "idle"


async def test_enter_after_starting_a_run_from_the_task_tree_opens_the_trials_timeline(tmp_path: Path) -> None:
    """r from the task tree (where the workbench opens) gives the focus to the run's trials, so Enter
    opens the selected trial's timeline, as the status line says of a selected trial (it went to the
    task tree)."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", tasks="add")  # focus on the task tree, then r
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen), "the trial's timeline")
        assert app.screen.trial_id == only_trial(app)
