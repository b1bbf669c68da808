"""The workbench during a run, the approval dialog and History at 80 x 24, 120 x 40 and 220 x 60
(issue 24): at 80 x 24 the trials take the run form's place during a run and the dialog's buttons
fit; at 220 x 60 the trials table uses the width; History cuts a long spec name instead of pushing
Status, Score and Attempt off the screen."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from corral_core.env.approval import ApprovalRequest
from corral_tui.screens.approval import ApprovalScreen
from corral_tui.screens.history import HistoryScreen
from tests.tui.helpers import (
    SAMPLEMATH,
    TUITEST,
    asking_trial_events,
    make_app,
    record_benchmark,
    wait_for,
    wait_ready,
)
from tests.tui.stable import FIXED_NOW

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40"),
         pytest.param((220, 60), id="220x60")]
LONG_SPEC = "fork-of-workbench-materials_chain-verbosity-sweep-with-a-very-long-descriptive-name"


@pytest.fixture(scope="module")
def long_names_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("long-names")
    record_benchmark(folder / "corral.db", folder / "work")
    record_benchmark(folder / "corral.db", folder / "work", name=LONG_SPEC)
    return folder / "corral.db"


@pytest.mark.parametrize("size", SIZES)
def test_workbench_during_a_run(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    """tuitest's `count` twice, one at a time: the first paused at its start (and selected), the second
    waiting (two in parallel start in either order, and the snapshot would too)."""

    async def run(pilot: Pilot) -> None:
        from tests.snapshots.test_every_screen import _paused_run  # the one paused-run flow of the snapshots

        await _paused_run(pilot)
        await pilot.pause()

    assert snap_compare(make_app(tmp_path, suites=[TUITEST]), terminal_size=size, run_before=run)


@pytest.mark.parametrize("size", SIZES)
def test_approval_dialog_at_size(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    async def ask(pilot: Pilot) -> None:
        app = pilot.app
        await wait_ready(pilot)
        for event in asking_trial_events("tr_demo0000", "sh_cleanup"):
            app.services.lifecycle.queue.emit(event)
        await wait_for(pilot, lambda: app.live.trials.get("tr_demo0000") and app.live.trials["tr_demo0000"].iteration,
                       "the asking trial's events")
        request = ApprovalRequest(task_id="sh_cleanup", trial_id="tr_demo0000", tool_name="delete_file",
                                  arguments={"path": "scratch.tmp"}, timeout=120.0, id="ap_demo0",
                                  created_at=FIXED_NOW - 15)
        threading.Thread(target=app.services.approvals.request, args=(request,), daemon=True).start()
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.armed
                       and app.screen.focused is app.screen.query_one("#approval-reason"),
                       "the approval dialog, its reason field focused")
        await pilot.pause()

    assert snap_compare(make_app(tmp_path, suites=[SAMPLEMATH]), terminal_size=size, run_before=ask)


@pytest.mark.parametrize("size", SIZES)
def test_history_at_size(snap_compare, tmp_path: Path, long_names_store: Path, size: tuple[int, int]) -> None:
    db = tmp_path / "corral.db"
    shutil.copy(long_names_store, db)

    async def open_history(pilot: Pilot) -> None:
        await wait_ready(pilot)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, HistoryScreen)
                       and pilot.app.screen.query_one("#rows", DataTable).row_count == 2, "benchmarks")

    assert snap_compare(make_app(tmp_path, suites=[SAMPLEMATH], db_url=str(db)), terminal_size=size,
                        run_before=open_history)


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES)
async def test_history_columns_fit_the_terminal(tmp_path: Path, long_names_store: Path, size: tuple[int, int]) -> None:
    """Every History column is on screen (no horizontal scrolling): at 120 columns Model, Agent and Date
    are there (they were pushed off by a 72-cell Spec); at 80 the lower-value ones are dropped."""
    db = tmp_path / "corral.db"
    shutil.copy(long_names_store, db)
    app = make_app(tmp_path, suites=[SAMPLEMATH], db_url=str(db))
    async with app.run_test(size=size) as pilot:
        await wait_ready(pilot)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen)
                       and app.screen.query_one("#rows", DataTable).row_count == 2, "benchmarks")
        table = app.screen.query_one("#rows", DataTable)
        await pilot.pause()
        headers = [str(column.label) for column in table.columns.values()]
        used = sum(column.get_render_width(table) for column in table.columns.values())
        assert used <= size[0] - 1, (headers, used)
        assert headers[:6] == ["Benchmark", "Spec", "Status", "Score", "Attempt", "Trials"] and headers[-1] == "Date"
        if size[0] >= 120:
            assert {"Model", "Agent"} <= set(headers)
        if size[0] >= 220:
            assert {"Arms", "Tokens · cost"} <= set(headers)


@pytest.mark.anyio
async def test_info_bar_and_footer_fit_80_columns(tmp_path: Path) -> None:
    """At 80 columns the info bar takes its short form (the model's id cut from the left to what is left)
    and the footer its compact one; at 120 both are as before."""
    from textual.widgets import Footer

    from corral_tui.widgets.status import InfoBar

    for size, short in (((80, 24), True), ((120, 40), False)):
        app = make_app(tmp_path / f"{size[0]}", suites=[TUITEST], model="openai/a-rather-long-model-name-for-80-cols")
        async with app.run_test(size=size) as pilot:
            await wait_ready(pilot)
            app.refresh_info()
            await pilot.pause()
            bar = app.workbench_screen.query_one(InfoBar)
            plain = str(bar.render().plain)  # type: ignore[union-attr]
            assert len(plain) <= size[0] - 2 if short else "server " in plain
            assert ("progress" not in plain) is short and plain.rstrip().endswith("idle")
            assert app.workbench_screen.query_one(Footer).compact is short


def test_workbench_made_80x24_mid_run(snap_compare, tmp_path: Path) -> None:
    """Started at 160 x 48, made 80 x 24 while the run is live: the trials take the locked form's place
    at once (issue 36: the form stayed, with 0 trial rows on screen)."""

    async def run(pilot: Pilot) -> None:
        from tests.snapshots.test_every_screen import _paused_run
        from tests.tui.helpers import drawn

        await _paused_run(pilot)
        await pilot.resize_terminal(80, 24)
        await drawn(pilot)

    assert snap_compare(make_app(tmp_path, suites=[TUITEST]), terminal_size=(160, 48), run_before=run)
