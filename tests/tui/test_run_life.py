"""A run's whole life inside the workbench (issue 24): an interrupted run is resumed from History with
one key, from its stored spec, and ends with every planned trial exactly once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from textual.widgets import DataTable

from corral_core.store import Repository, make_engine
from corral_tui.screens.dialogs import ConfirmScreen
from corral_tui.screens.history import HistoryScreen
from tests.timeouts import HANG
from tests.tui.helpers import SIZE, TUITEST, make_app, run_done, start_run, wait_for, wait_ready

pytestmark = pytest.mark.anyio


def _stored_trials(app, benchmark_id: str) -> list:
    lifecycle = app.services.lifecycle
    assert lifecycle.writer.flush(HANG)
    return list(lifecycle.repository.iter_trials(benchmark_id))


async def test_an_interrupted_run_resumes_from_history_with_one_key(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="count", trials="3", parallel="1", paused=True)
        await wait_for(pilot, lambda: app.live.trials and app.run_state == "paused"
                       and all(t.control == "paused" for t in app.live.trials.values()), "the first trial, paused")
        benchmark_id = app.live.benchmark_id
        await pilot.press("x")  # this config does not ask first
        await wait_for(pilot, lambda: app.run_state == "interrupted", "the stopped run")
        assert len(_stored_trials(app, benchmark_id)) < 3
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen)
                       and app.screen.query_one("#rows", DataTable).row_count == 1, "History")
        await pilot.press("u")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen, "back on the workbench")
        await wait_for(pilot, lambda: app.run_state == "finished" and run_done(app), "the resumed run to finish")
        trials = _stored_trials(app, benchmark_id)
        assert Counter(t.trial_index for t in trials) == {0: 1, 1: 1, 2: 1}, "a trial ran twice or not at all"
        assert app.last_benchmark_id == benchmark_id
        assert app.services.lifecycle.repository.get_benchmark(benchmark_id).status == "finished"


async def test_the_quit_question_names_the_benchmark_and_how_to_resume(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="count", paused=True)
        await wait_for(pilot, lambda: app.live.benchmark_id is not None and app.run_state == "paused", "the run")
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the quit question")
        message = app.screen.message
        shown = app.config.redact.ident(app.live.benchmark_id)  # as every id on screen (the real one outside tests)
        assert shown in message and "press u" in message and "--resume" in message
        await pilot.press("y")
    repository = Repository(make_engine(tmp_path / "corral.db"))
    assert repository.get_benchmark(app.live.benchmark_id).status == "interrupted"


async def test_two_benchmarks_of_one_suite_compare_from_history(tmp_path: Path) -> None:
    """space marks two rows of History, c compares them: each one's arms side by side, paired by task."""
    from corral_tui.screens.compare import CompareScreen
    from tests.tui.helpers import SAMPLEMATH, record_benchmark

    db = tmp_path / "corral.db"
    older = record_benchmark(db, tmp_path / "work")
    newer = record_benchmark(db, tmp_path / "work", name="history-demo-again")
    app = make_app(tmp_path, suites=[SAMPLEMATH], db_url=str(db))
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen)
                       and app.screen.query_one("#rows", DataTable).row_count == 2, "History")
        history = app.screen
        table = history.query_one("#rows", DataTable)
        await pilot.press("end")  # the last row (DataTable's own End went to the last column)
        assert table.cursor_row == 1
        await pilot.press("home")
        assert table.cursor_row == 0
        await pilot.press("c")  # nothing marked: it says what to do
        assert app.screen is history
        await pilot.press("space", "down", "space")
        assert [b.id for b in history.marked] == [newer, older]
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.query_one(
            "#compare-chart").bars, "the comparison of the two")
        screen = app.screen
        assert (screen.benchmark_id, screen.other_id) == (newer, older)
        view = app.services.queries.compare_two(newer, older)
        assert [arm.name for arm in view.arms] == ["A minimal", "A full", "B minimal", "B full"]
        assert [arm.n_trials for arm in view.arms] == [4, 4, 4, 4]
        assert ("A minimal", "B minimal") in [(a, b) for a, b, _ in view.comparisons]
        assert ("A full", "B full") in [(a, b) for a, b, _ in view.comparisons]
        assert sorted(view.tasks) == ["add", "power"]
        title = str(screen.query_one("#compare-title").render())
        assert "vs" in title and "B = history-demo" in title


async def test_a_fork_uses_the_breakpoints_its_run_ended_with(tmp_path: Path) -> None:
    """The run started with `tool:tally` in the form and cleared its breakpoints with b; a fork of its
    trial runs to its end without stopping at tally (it stopped there: the form's old breakpoints)."""
    from textual.widgets import Input

    from corral_core.events import EventKind
    from corral_tui.screens.dialogs import BreakpointsScreen
    from corral_tui.screens.fork import ForkScreen
    from corral_tui.screens.timeline import TimelineScreen
    from tests.tui.helpers import only_trial, trial_events

    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="count", paused=True, breakpoints="tool:tally")
        await wait_for(pilot, lambda: app.live.trials and app.run_state == "paused", "the paused trial")
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, BreakpointsScreen)
                       and isinstance(app.screen.focused, Input), "the run's breakpoints")
        app.screen.query_one(Input).value = ""
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen, "the dialog to close")
        await pilot.press("C")
        await wait_for(pilot, lambda: run_done(app), "the run, without stopping")
        parent_id = only_trial(app)
        app.workbench_screen.query_one("#trials").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.trial is not None,
                       "the timeline")
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkScreen), "the fork dialog")
        app.screen.query_one("#fork-iteration", Input).value = "3"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen and run_done(app)
                       and only_trial(app) != parent_id, "the fork to run to its end")
        fork_id = only_trial(app)
        assert not trial_events(app, fork_id, EventKind.BREAKPOINT_HIT)
        assert app.live.trials[fork_id].status == "completed"


async def test_the_form_remembers_its_last_values(tmp_path: Path) -> None:
    from textual.widgets import Checkbox, Input, Select

    memory = tmp_path / "state" / "last-run-form.json"
    app = make_app(tmp_path, suites=[TUITEST], form_memory=memory)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="count", arms="minimal, full", trials="2", parallel="2",
                        iterations="7", agent="tool_calling", approval="approve", breakpoints="tool:tally",
                        paused=True)
        await wait_for(pilot, lambda: app.run_state == "paused", "the run")
        await pilot.press("x")
        await wait_for(pilot, lambda: app.run_state == "interrupted", "the stopped run")
    assert memory.is_file()
    again = make_app(tmp_path / "again", suites=[TUITEST], form_memory=memory)
    async with again.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = again.workbench_screen
        await wait_for(pilot, lambda: screen.query_one("#form-arms", Input).value == "minimal, full",
                       "the remembered values")
        values = {name: screen.query_one(f"#form-{name}", Input).value
                  for name in ("tasks", "trials", "parallel", "iterations", "breakpoints")}
        assert values == {"tasks": "count", "trials": "2", "parallel": "2", "iterations": "7",
                          "breakpoints": "tool:tally"}
        assert screen.query_one("#form-agent", Select).value == "tool_calling"
        assert screen.query_one("#form-approval", Select).value == "approve"
        assert screen.query_one("#form-paused", Checkbox).value
