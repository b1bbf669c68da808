"""Forking a trial from its timeline: the fork replays the parent up to the chosen iteration, goes live
with the operator's intervention there, and is shown beside its parent from the fork point."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from textual.widgets import Input, RichLog, TextArea

from corral_tui.screens.fork import ForkScreen, ForkViewScreen
from corral_tui.screens.timeline import TimelineScreen
from tests.tui.helpers import SIZE, TUITEST, make_app, only_trial, run_done, start_run, wait_for, wait_ready

pytestmark = pytest.mark.anyio

SKIP = "Skip the remaining steps; the answer is 5."  # scripted/tuitest answers at once when it reads this


def messages(db: Path, trial_id: str) -> list[tuple[str, str | None, str | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute('select role, content, tool_calls_json from message where trial_id = ? order by "index"',
                            (trial_id,)).fetchall()


def log_text(screen: ForkViewScreen, log_id: str) -> str:
    """A side's text with its wrapping undone."""
    return " ".join(" ".join(strip.text for strip in screen.query_one(f"#{log_id}", RichLog).lines).split())


async def open_timeline(pilot, trial_id: str) -> TimelineScreen:
    app = pilot.app
    app.workbench_screen.query_one("#trials").focus()
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.trial is not None
                   and app.screen.trial.id == trial_id, "the trial's timeline")
    return app.screen


async def test_a_fork_with_an_intervention_differs_from_its_parent_only_after_the_fork_point(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST])
    db = tmp_path / "corral.db"
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="count")
        await wait_for(pilot, lambda: run_done(app), "the parent run")
        parent_id = only_trial(app)

        await open_timeline(pilot, parent_id)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen), "the fork dialog")
        dialog = app.screen
        assert dialog.query_one("#fork-iteration", Input).value == "6"  # the parent ran six iterations
        dialog.query_one("#fork-iteration", Input).value = "3"
        dialog.query_one("#fork-intervention", TextArea).load_text(SKIP)
        await pilot.press("ctrl+s")

        await wait_for(pilot, lambda: app.screen is app.workbench_screen and run_done(app)
                       and only_trial(app) != parent_id, "the fork's run")
        fork_id = only_trial(app)
        assert app.live.trials[fork_id].assisted

        # the conversation is the parent's up to the fork point (iterations 1-2), and differs from there
        mine, theirs = messages(db, fork_id), messages(db, parent_id)
        at_fork = 2 + 2 * 2  # system and task prompt, then a reply and an observation per replayed iteration
        assert mine[:at_fork] == theirs[:at_fork]
        assert mine[at_fork] == ("user", f"Intervention from the operator: {SKIP}", None)
        assert theirs[at_fork][0] == "assistant" and "Step 3" in theirs[at_fork][1]
        assert len(mine) == at_fork + 2 and len(theirs) == 2 + 2 * 5 + 1

        timeline = await open_timeline(pilot, fork_id)
        assert timeline.trial.parent_trial_id == parent_id and timeline.trial.fork_iteration == 2
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkViewScreen)
                       and app.screen.query_one("#fork-log", RichLog).lines, "the fork beside its parent")
        beside = app.screen
        parent_side, fork_side = log_text(beside, "parent-log"), log_text(beside, "fork-log")
        assert "Step 3" in parent_side and "Step 2" not in parent_side  # from the fork point on
        assert "Intervention from the operator" in fork_side and "remaining steps can be skipped" in fork_side
        assert "Intervention" not in parent_side and "Step" not in fork_side
