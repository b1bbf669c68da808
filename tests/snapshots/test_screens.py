"""Snapshots of every screen and dialog at 120 x 40 (they double as the README's screenshots).

Ports, times, durations and ids are hidden by the test config (StableRedactor), the model is
scripted and the clock is fixed, so a second run draws the same pixels. Update the baselines with
`pytest tests/snapshots --snapshot-update` and look at them before committing.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, RichLog, TextArea

from corral_core.env.approval import ApprovalRequest
from corral_tui.messages import CompareRequested, ForkViewRequested
from corral_tui.screens.approval import ApprovalScreen
from corral_tui.screens.compare import CompareScreen
from corral_tui.screens.dialogs import HelpScreen, InterventionScreen
from corral_tui.screens.fork import ForkViewScreen
from corral_tui.screens.history import HistoryScreen, TrialsScreen
from corral_tui.screens.timeline import TimelineScreen
from tests.tui.helpers import (
    SAMPLEMATH,
    SIZE,
    TUITEST,
    asking_trial_events,
    fake_trial_events,
    make_app,
    record_fork,
    record_progress_store,
    run_done,
    start_run,
    telemetry_events,
    wait_for,
    wait_ready,
)
from tests.tui.stable import FIXED_NOW


async def _idle(pilot: Pilot) -> None:
    await wait_ready(pilot)
    await wait_for(pilot, lambda: pilot.app.workbench_screen.shown_task is not None, "the task's prompt and guide")
    pilot.app.refresh_info()  # the info bar's model follows the selection; its timer may not have run yet
    await pilot.pause()


def test_workbench_idle(snap_compare, tmp_path: Path) -> None:
    """The workbench at start-up on the sample suites: tasks, the selected task's guide, the run form."""
    app = make_app(tmp_path, suites=None)
    assert snap_compare(app, terminal_size=SIZE, run_before=_idle)


def test_workbench_after_a_run(snap_compare, tmp_path: Path) -> None:
    """samplemath at two verbosity levels, finished; the first trial's iterations on the right."""

    async def run(pilot: Pilot) -> None:
        await _idle(pilot)
        await start_run(pilot, "samplemath", arms="minimal, full", trials="1")
        await wait_for(pilot, lambda: run_done(pilot.app), "the run to finish")

    app = make_app(tmp_path, suites=[SAMPLEMATH])
    assert snap_compare(app, terminal_size=SIZE, run_before=run)


def test_workbench_telemetry(snap_compare, tmp_path: Path) -> None:
    """Live telemetry: per-trial time, tokens, cost and last action; the run's elapsed time, ETA and
    each arm's mean score so far with its 95% CI over tasks."""

    async def flood(pilot: Pilot) -> None:
        await _idle(pilot)
        app = pilot.app
        for event in telemetry_events():
            app.services.lifecycle.queue.emit(event)
        await wait_for(pilot, lambda: len(app.live.trials) == 8 and app.live.done == 4, "the trials")
        app.workbench_screen.tick()
        app.refresh_info()  # the info bar's own timer (every 0.5 s) may not have fired yet on a busy machine

    assert snap_compare(make_app(tmp_path, suites=[SAMPLEMATH]), terminal_size=SIZE, run_before=flood)


def _history_app(tmp_path: Path, store: Path):
    db = tmp_path / "corral.db"
    shutil.copy(store, db)
    return make_app(tmp_path, suites=[SAMPLEMATH], db_url=str(db))


def _rows(pilot: Pilot) -> int:
    return pilot.app.screen.query_one("#rows", DataTable).row_count


async def _open_history(pilot: Pilot) -> None:
    await _idle(pilot)
    await pilot.press("h")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, HistoryScreen) and _rows(pilot) == 2, "benchmarks")


async def _open_trials(pilot: Pilot) -> None:
    await _open_history(pilot)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, TrialsScreen) and _rows(pilot) == 8, "trials")


def test_history(snap_compare, tmp_path: Path, recorded_store: Path) -> None:
    """Past benchmarks with their headline score and attempt status."""
    assert snap_compare(_history_app(tmp_path, recorded_store), terminal_size=SIZE, run_before=_open_history)


def test_trials(snap_compare, tmp_path: Path, recorded_store: Path) -> None:
    """One benchmark's trials, filterable by task, arm and status."""
    assert snap_compare(_history_app(tmp_path, recorded_store), terminal_size=SIZE, run_before=_open_trials)


def test_trial_timeline(snap_compare, tmp_path: Path, recorded_store: Path) -> None:
    """One trial's stored timeline: messages, LLM calls, hooks and tool calls in time order."""

    async def open_timeline(pilot: Pilot) -> None:
        await _open_trials(pilot)
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, TimelineScreen)
                       and pilot.app.screen.query_one(RichLog).lines, "the timeline")
        await pilot.press("end")

    assert snap_compare(_history_app(tmp_path, recorded_store), terminal_size=SIZE, run_before=open_timeline)


def test_compare(snap_compare, tmp_path: Path, recorded_store: Path) -> None:
    """Two verbosity arms side by side: metrics, paired test, bar chart, per-task matrix."""

    async def open_compare(pilot: Pilot) -> None:
        await _open_history(pilot)
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, CompareScreen)
                       and pilot.app.screen.query_one("#compare-chart").bars, "the comparison")

    assert snap_compare(_history_app(tmp_path, recorded_store), terminal_size=SIZE, run_before=open_compare)


def test_help(snap_compare, tmp_path: Path) -> None:
    """Every key binding with its id."""

    async def open_help(pilot: Pilot) -> None:
        await _idle(pilot)
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), "the help screen")

    assert snap_compare(make_app(tmp_path, suites=[SAMPLEMATH]), terminal_size=SIZE, run_before=open_help)


def test_approval_dialog(snap_compare, tmp_path: Path) -> None:
    """A confirm-level call waiting for a person, with the asking trial's iteration and last thought,
    and a second request queued behind it."""

    async def ask(pilot: Pilot) -> None:
        await _idle(pilot)
        app = pilot.app
        for event in asking_trial_events("tr_demo0000", "sh_cleanup"):
            app.services.lifecycle.queue.emit(event)
        await wait_for(pilot, lambda: app.live.trials.get("tr_demo0000") and app.live.trials["tr_demo0000"].iteration,
                       "the asking trial's events")
        approvals = app.services.approvals
        for index, name in enumerate(("scratch.tmp", "notes.txt")):
            request = ApprovalRequest(task_id="sh_cleanup", trial_id=f"tr_demo000{index}", tool_name="delete_file",
                                      arguments={"path": name}, timeout=120.0, id=f"ap_demo{index}",
                                      created_at=FIXED_NOW - 15)
            # a server thread asks the gate and waits for the answer (the app's close rejects it)
            threading.Thread(target=approvals.request, args=(request,), daemon=True).start()
            await wait_for(pilot, lambda count=index + 1: len(approvals.pending()) == count, "the request to wait")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.pending == 2,
                       "the approval dialog")
        await wait_for(pilot, lambda: app.screen.focused is app.screen.query_one("#approval-reason"), "its field")
        await pilot.pause()

    assert snap_compare(make_app(tmp_path, suites=[SAMPLEMATH]), terminal_size=SIZE, run_before=ask)


def test_intervention_dialog(snap_compare, tmp_path: Path) -> None:
    """Writing a message for a paused trial."""

    async def intervene(pilot: Pilot) -> None:
        await _idle(pilot)
        app = pilot.app
        for event in fake_trial_events():
            app.services.lifecycle.queue.emit(event)
        await wait_for(pilot, lambda: app.live.trials, "the trial row")
        app.workbench_screen.query_one("#trials").focus()
        await pilot.press("i")
        # typing starts once the text area has the focus (given on mount: late on a loaded machine)
        await wait_for(pilot, lambda: isinstance(app.screen, InterventionScreen)
                       and isinstance(app.focused, TextArea), "the intervention dialog's text area")
        message = "Round to two digits before answering."
        await pilot.press(*message)
        await wait_for(pilot, lambda: app.screen.query_one(TextArea).text == message, "the typed message")

    assert snap_compare(make_app(tmp_path, suites=[SAMPLEMATH]), terminal_size=SIZE, run_before=intervene)


def test_fork_beside_parent(snap_compare, tmp_path: Path) -> None:
    """A fork of tuitest's `count` at iteration 3, told to skip the rest, beside its parent from there."""
    fork_id = record_fork(tmp_path / "corral.db", "Skip the remaining steps; the answer is 5.")

    async def open_fork_view(pilot: Pilot) -> None:
        await wait_ready(pilot)
        pilot.app.post_message(ForkViewRequested(fork_id))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ForkViewScreen)
                       and pilot.app.screen.query_one("#fork-log", RichLog).lines, "the fork beside its parent")

    assert snap_compare(make_app(tmp_path, suites=[TUITEST]), terminal_size=SIZE, run_before=open_fork_view)


def test_compare_with_errors_and_cost(snap_compare, tmp_path: Path) -> None:
    """Compare of an interrupted run: the errored row by fault, the flagged score, cost per arm and for
    the run, done of planned in the title."""
    db = tmp_path / "corral.db"
    interrupted, _running = record_progress_store(db)

    async def open_compare(pilot: Pilot) -> None:
        await _idle(pilot)
        pilot.app.post_message(CompareRequested(interrupted))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, CompareScreen)
                       and pilot.app.screen.view is not None, "the comparison")
        await pilot.pause()

    app = make_app(tmp_path, suites=[SAMPLEMATH], db_url=str(db))
    assert snap_compare(app, terminal_size=SIZE, run_before=open_compare)


def test_history_progress(snap_compare, tmp_path: Path) -> None:
    """History with a running and an interrupted run: trials done of planned, errored, tokens and cost."""
    db = tmp_path / "corral.db"
    record_progress_store(db)

    async def open_history(pilot: Pilot) -> None:
        await _idle(pilot)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, HistoryScreen) and _rows(pilot) == 2,
                       "benchmarks")

    app = make_app(tmp_path, suites=[SAMPLEMATH], db_url=str(db))
    assert snap_compare(app, terminal_size=SIZE, run_before=open_history)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_compare_plots(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    """Three documentation levels: the forest plot of one pair's per-task differences, then score by level."""
    from tests.tui.test_compare_plots import levels_store

    app = make_app(tmp_path, suites=[SAMPLEMATH], db_url=str(levels_store(tmp_path / "levels.db")))

    async def open_plots(pilot: Pilot) -> None:
        await wait_ready(pilot)
        pilot.app.push_screen(CompareScreen("bm_levels", pilot.app.services.queries, pilot.app.config.redact))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, CompareScreen)
                       and pilot.app.screen.view is not None, "the comparison")
        pilot.app.screen.query_one("#compare-forest-caption").scroll_visible(top=True, animate=False)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_plots)
