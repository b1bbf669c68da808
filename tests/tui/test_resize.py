"""Layouts follow the terminal the moment it changes size (issue 36 item 3): a run's trials stay on
screen when the terminal is made short mid-run, `z` gives the maximised table the whole width, and
History re-fits its columns to a new width without being opened again. Keys are typed with no pause
under two CPU hogs."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from corral_tui.screens.history import HistoryScreen
from corral_tui.widgets.trials_table import TrialsTable
from tests.tui.helpers import TUITEST, drawn, make_app, record_benchmark, start_run, wait_for, wait_ready
from tests.tui.typing import cpu_hogs, handled, type_now

pytestmark = pytest.mark.anyio


async def _paused_run(pilot) -> None:
    app = pilot.app
    await start_run(pilot, "tuitest", tasks="count", trials="2", parallel="2", paused=True)
    await wait_for(pilot, lambda: len(app.live.trials) == 2 and all(
        t.control == "paused" for t in app.live.trials.values()), "two paused trials")


async def test_a_terminal_made_short_mid_run_shows_the_trials(tmp_path: Path) -> None:
    """160x48 -> 80x24 while a run is live: the trials table takes the locked form's place at once (it
    stayed hidden behind the form, 0 rows on screen)."""
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_ready(pilot)
        await _paused_run(pilot)
        with cpu_hogs():
            await pilot.resize_terminal(80, 24)
            await drawn(pilot)
        table = app.workbench_screen.query_one(TrialsTable)
        assert app.workbench_screen.has_class("-short") and app.workbench_screen.has_class("-collapsed")
        assert table.region.height >= 4 and table.region.width == 80, table.region
        assert table.row_count == 2


async def test_z_gives_the_maximised_trials_table_the_whole_width(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_ready(pilot)
        await _paused_run(pilot)
        table = app.workbench_screen.query_one(TrialsTable)
        table.focus()
        with cpu_hogs():
            type_now(app, "z")
            await handled(pilot)
            await drawn(pilot)
        assert app.workbench_screen.maximized is table
        assert table.region.width == 160, table.region  # it stayed 79 wide


async def test_history_refits_its_columns_after_a_resize(tmp_path: Path) -> None:
    """Opened at 80 columns, History shows the narrow set of columns; made 220 wide it shows every column
    at once (it kept the 80-column layout until reopened), and back."""
    record_benchmark(tmp_path / "corral.db", tmp_path / "work")
    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.page is not None,
                       "History with its page")
        screen = app.screen
        narrow = [str(column.label) for column in screen.query_one("#rows", DataTable).columns.values()]
        with cpu_hogs():
            await pilot.resize_terminal(220, 60)
            await drawn(pilot)
        table = screen.query_one("#rows", DataTable)
        wide = [str(column.label) for column in table.columns.values()]
        assert set(narrow) < set(wide) and {"Model", "Agent", "Arms"} <= set(wide), (narrow, wide)
        assert table.row_count == 1
        await pilot.resize_terminal(80, 24)
        await drawn(pilot)
        assert [str(column.label) for column in table.columns.values()] == narrow
