"""The work between the first frame and "Ready." that Textual would otherwise repeat: the screen is
painted with its width and height classes from the start (not once without them and again after its
first Resize), a Resize to the size it is laid out at lays nothing out (Textual sends three after the
first frame), and the key footer is rebuilt only when the keys it shows change (Textual rebuilds it,
25 widgets, each time the focus moves: eight times before "Ready.")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.app import App
from textual.screen import Screen
from textual.widgets import Input
from textual.widgets._footer import FooterKey

from corral_tui.widgets.status import FittingFooter, InfoBar
from tests.tui.helpers import SIZE, footer_settled, make_app, settle, wait_for, wait_ready

pytestmark = pytest.mark.anyio


async def test_the_first_frame_is_painted_with_the_screens_breakpoint_classes(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    first: list[set[str]] = []
    display = App._display

    def spy(self: App[Any], screen: Any, renderable: Any) -> None:
        if renderable is not None and not first:
            first.append(set(screen.classes))
        display(self, screen, renderable)

    monkeypatch.setattr(App, "_display", spy)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        settled = set(app.workbench_screen.classes)  # what Textual gave it on its Resize
    assert {"-normal", "-tall"} <= settled
    assert first == [settled]


async def test_the_first_frame_shows_the_info_bar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server, model and run state are in the first frame: the app's first update of the bar comes after
    that frame (it mounts after its screen), and its half-second timer drew the bar ~0.5 s later."""
    first: list[str] = []
    display = App._display

    def spy(self: App[Any], screen: Any, renderable: Any) -> None:
        if renderable is not None and not first:
            first.append(str(screen.query_one(InfoBar).render()))
        display(self, screen, renderable)

    monkeypatch.setattr(App, "_display", spy)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
    assert len(first) == 1
    assert "server starting…" in first[0] and "model" in first[0] and "run idle" in first[0]


async def test_before_the_first_frame_nothing_restyles_the_whole_workbench(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Each widget is styled as it mounts, and that is all before the first frame: the view classes come with
    the breakpoint classes in compose (set on mount, they restyled every widget), and the screen's first
    resume does not restyle it all again as Textual's handler would."""
    painted: list[bool] = []
    restyled: list[str] = []  # screens restyled as a whole (with their widgets) before the first frame
    display, update_styles = App._display, App.update_styles

    def spy_display(self: App[Any], screen: Any, renderable: Any) -> None:
        if renderable is not None:
            painted.append(True)
        display(self, screen, renderable)

    def spy_styles(self: App[Any], node: Any, animate: bool = True) -> None:
        if not painted and isinstance(node, Screen) and node.children:
            restyled.append(str(node.id))
        update_styles(self, node, animate)

    monkeypatch.setattr(App, "_display", spy_display)
    monkeypatch.setattr(App, "update_styles", spy_styles)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
    assert painted
    assert restyled == []


async def test_the_footer_is_rebuilt_only_when_its_keys_change(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        footer = app.workbench_screen.query_one(FittingFooter)
        fields = [field for field in app.workbench_screen.query(Input) if field.id and field.id.startswith("form-")]
        fields[0].focus()
        await settle(pilot)
        keys = list(footer.query(FooterKey))
        for field in fields[1:4]:  # the run form's other fields: the same keys in force in each
            field.focus()
            await pilot.pause()
            await wait_for(pilot, lambda: footer_settled(app), "the footer to show the keys in force")
        assert list(footer.query(FooterKey)) == keys  # the same widgets: not rebuilt

        app.workbench_screen.query_one("#trials").focus()  # the trial keys come into force
        await wait_for(pilot, lambda: footer_settled(app) and list(footer.query(FooterKey)) != keys,
                       "the footer to show the trials table's keys")


async def test_the_footers_keys_are_styled_as_they_mount_and_not_again(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual creates a footer key compact, restyles it as it mounts and again when the footer's (not
    compact) state reaches it: 23 keys restyled twice each time the keys change. Only the command palette's
    key, which Textual leaves compact, still is."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await settle(pilot)
        footer = app.workbench_screen.query_one(FittingFooter)
        next(field for field in app.workbench_screen.query(Input) if field.id == "form-tasks").focus()
        await settle(pilot)
        restyled: list[FooterKey] = []
        update_styles = App.update_styles

        def spy(self: App[Any], node: Any, animate: bool = True) -> None:
            if isinstance(node, FooterKey):
                restyled.append(node)
            update_styles(self, node, animate)

        monkeypatch.setattr(App, "update_styles", spy)
        keys = list(footer.query(FooterKey))
        app.workbench_screen.query_one("#trials").focus()  # the trial keys come into force: the footer rebuilds
        await wait_for(pilot, lambda: footer_settled(app) and list(footer.query(FooterKey)) != keys,
                       "the footer to show the trials table's keys")
        await settle(pilot)
        assert len(footer.query(FooterKey)) > 10
        assert [key for key in restyled if not key.has_class("-command-palette")] == []
        assert not any(key.has_class("-compact") for key in footer.query(FooterKey)
                       if not key.has_class("-command-palette"))  # as wide as it is: not compact


async def test_a_resize_to_the_size_laid_out_lays_nothing_out_and_a_real_one_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await settle(pilot)
        screen = app.workbench_screen
        layouts: list[object] = []
        refresh_layout = Screen._refresh_layout

        def spy(self: Screen[Any], *args: Any, **kwargs: Any) -> None:
            layouts.append(args[0] if args else kwargs.get("size"))
            refresh_layout(self, *args, **kwargs)

        monkeypatch.setattr(Screen, "_refresh_layout", spy)
        screen.post_message(events.Resize(app.size, app.size))
        await pilot.pause()
        await pilot.pause()
        assert layouts == []  # Textual's own handler laid the whole screen out again
        await pilot.resize_terminal(90, 24)
        await wait_for(pilot, lambda: screen.size == (90, 24) and screen.has_class("-narrow", "-short"),
                       "the workbench laid out at 90 x 24 with its narrow and short classes")
        assert layouts
