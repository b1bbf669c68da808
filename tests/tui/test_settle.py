"""The snapshot tests picture a screen only once it is drawn for its state (`tests.tui.helpers.drawn`).

A DataTable sizes its columns to rows just added on its next idle, so a picture taken right after the rows
arrive shows each cell cut to its header's width (the History snapshot failed so in CI under load). The
wait must hold until that sizing is drawn, and must name the Textual internals it reads."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Footer

from tests.tui import helpers
from tests.tui.helpers import drawn, quiet

LONG = "a cell far wider than its header"
SHOWN = LONG.replace(" ", "&#160;")  # as the SVG picture writes it


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield DataTable()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).add_column("id")


@pytest.mark.anyio
async def test_a_picture_waits_for_the_columns_sized_to_new_rows() -> None:
    app = TableApp()
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        app.query_one(DataTable).add_rows([[LONG]])
        assert not quiet(app)  # the sizing is still pending: a picture now would cut the cell
        assert SHOWN not in app.export_screenshot()
        await drawn(pilot)
        assert quiet(app)
        assert SHOWN in app.export_screenshot()


def test_every_pending_flag_the_wait_reads_exists_in_this_textual() -> None:
    table = DataTable[str]()
    for flag in helpers._PENDING:
        assert hasattr(table, flag), f"a widget has no {flag}: tests.tui.helpers.quiet would never see it pending"


@pytest.mark.anyio
async def test_a_picture_waits_for_a_short_worker_to_bring_its_text() -> None:
    """A task's prompt arrives from a thread worker (group "task-text"): the snapshot of the breakpoints
    dialog showed the suite's text instead, under two hogs in CI, taken while the worker still ran."""
    import threading

    from textual.widgets import Static

    release = threading.Event()

    class Loading(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("loading", id="text")

        def on_mount(self) -> None:
            self.run_worker(self.fetch, thread=True, group="task-text")

        def fetch(self) -> None:
            release.wait(30)
            self.call_from_thread(self.query_one("#text", Static).update, "the prompt")

    app = Loading()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert not quiet(app)  # the worker still fetches
        release.set()
        await drawn(pilot)
        assert "the&#160;prompt" in app.export_screenshot()
