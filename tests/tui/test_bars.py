"""The one-line bars (info, run, status) are rewritten every half second, every second and every event
batch: an unchanged text is not redrawn, and a new one is drawn without laying the whole screen out
again (their height is fixed), which an idle workbench otherwise did twice a second."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from corral_tui.widgets.status import Bar, InfoBar, RunBar, StatusLine
from tests.tui.helpers import SIZE, make_app, wait_for, wait_ready


@pytest.mark.anyio
async def test_an_unchanged_bar_is_not_redrawn_and_a_new_text_needs_no_layout(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = app.workbench_screen
        refreshed: list[tuple[str, bool]] = []

        def spy(bar: Bar) -> None:
            original = bar.refresh

            def refresh(*args: Any, **kwargs: Any) -> Any:
                refreshed.append((type(bar).__name__, bool(kwargs.get("layout", False))))
                return original(*args, **kwargs)

            bar.refresh = refresh  # type: ignore[method-assign]

        # the bars as they are now (the info bar's requests and model may have moved since its last
        # timer tick: a loaded machine reaches "Ready." between ticks), then the same calls again with
        # no await in between: no timer runs and nothing changes, so nothing may be drawn
        app.refresh_info()
        screen.tick()
        for kind in (InfoBar, RunBar, StatusLine):
            spy(screen.query_one(kind))
        said = screen.query_one(StatusLine).render()
        app.refresh_info()
        screen.tick()
        screen.say(str(said))
        assert refreshed == []
        screen.say("Something new happened.")
        assert refreshed == [("StatusLine", False)]


@pytest.mark.anyio
async def test_what_waits_for_a_bar_runs_after_the_frame_that_draws_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """"Ready." starts litellm's import (seconds holding the GIL) only once a frame with it has gone out:
    `App.call_after_refresh` waits for the app's own queue only, and under load the import came first."""
    from rich.text import Text

    frames: list[str] = []
    order: list[str] = []
    app = _status_app(monkeypatch, frames)
    async with app.run_test() as pilot:
        await pilot.pause()
        shown = len(frames)
        app.query_one(StatusLine).show_text(Text("Ready."), when_drawn=lambda: order.append(f"after {len(frames)}"))
        assert order == []
        await pilot.pause()
        await pilot.pause()
        assert order and int(order[0].split()[1]) > shown  # a frame went out before it ran
        app.query_one(StatusLine).show_text(Text("Ready."), when_drawn=lambda: order.append("again"))
        await pilot.pause()
        assert order[-1] == "again"  # already on screen: runs without waiting for a frame


@pytest.mark.anyio
async def test_a_newer_text_before_the_frame_does_not_drop_what_waits() -> None:
    """"Ready." (with litellm's warm-up and the collector's return waiting for it) and another line said
    before the next frame: the warm-up still runs once that line is drawn (it was dropped, leaving the
    workbench without its warm-up and, since corral-tui pauses the collector until it, without garbage
    collection)."""
    from rich.text import Text
    from textual.app import App, ComposeResult

    ran: list[str] = []

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield StatusLine()

    app = One()
    async with app.run_test() as pilot:
        await pilot.pause()
        bar = app.query_one(StatusLine)
        bar.show_text(Text("Ready."), when_drawn=lambda: ran.append("warm-up"))
        bar.show_text(Text("A spec file was opened."))  # in the same turn: no frame between
        await wait_for(pilot, lambda: ran, "the warm-up")
        assert ran == ["warm-up"]


@pytest.mark.anyio
async def test_the_same_text_again_before_its_frame_still_waits_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same text said twice before its frame: the second wait is not "already on screen" either."""
    from rich.text import Text

    frames: list[str] = []
    order: list[str] = []
    app = _status_app(monkeypatch, frames)
    async with app.run_test() as pilot:
        await pilot.pause()
        shown = len(frames)
        bar = app.query_one(StatusLine)
        bar.show_text(Text("Ready."), when_drawn=lambda: order.append(f"first after {len(frames)}"))
        bar.show_text(Text("Ready."), when_drawn=lambda: order.append(f"second after {len(frames)}"))
        await wait_for(pilot, lambda: len(order) == 2, "both waits")
        assert all(int(entry.split()[-1]) > shown for entry in order), order  # a frame went out before each


def _status_app(monkeypatch: pytest.MonkeyPatch, frames: list[str]) -> Any:
    """An app showing one status line; each frame it writes to the terminal appends to `frames`."""
    from textual.app import App, ComposeResult

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield StatusLine()

    original = App._display

    def display(self: App[None], screen: Any, renderable: Any) -> None:
        if renderable is not None:
            frames.append("frame")
        original(self, screen, renderable)

    monkeypatch.setattr(App, "_display", display)
    return One()
