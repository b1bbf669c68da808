"""Every screen and dialog of the workbench at the small (80 x 24) and the normal (120 x 40) terminal.

`COVERAGE` names, for each Screen subclass under corral_tui, its snapshot at both sizes (here or in
the other snapshot modules); `test_every_screen_has_a_snapshot_at_both_sizes` enumerates the
subclasses, so a new screen without snapshots fails the suite. Each dialog is opened the way a person
opens it (its key, or the message its screen posts) on the deterministic app of tests/tui/helpers.py.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input, RichLog, TextArea

import corral_tui
from corral_tui.messages import ForkRequested, ForkViewRequested
from corral_tui.screens.approval import ApprovalScreen
from corral_tui.screens.base import QueryScreen
from corral_tui.screens.compare import CompareScreen
from corral_tui.screens.dialogs import (
    BreakpointsScreen,
    ConfirmScreen,
    ErrorScreen,
    HelpScreen,
    InterventionScreen,
    SpecFileScreen,
)
from corral_tui.screens.fork import ForkScreen, ForkViewScreen
from corral_tui.screens.history import HistoryScreen, PagedScreen, TrialsScreen
from corral_tui.screens.timeline import TimelineScreen
from corral_tui.screens.workbench import WorkbenchScreen
from tests.snapshots import test_screens as screens_module
from tests.tui.helpers import (
    SAMPLEMATH,
    SIZE,
    TUITEST,
    fake_trial_events,
    make_app,
    record_fork,
    start_run,
    wait_for,
    wait_ready,
)

SMALL, NORMAL = (80, 24), SIZE
SIZE_IDS = {SMALL: "80x24", NORMAL: "120x40"}
SNAPSHOTS = Path(__file__).resolve().parent / "__snapshots__"
BASES = {QueryScreen, PagedScreen}  # shared behaviour, never shown themselves

Opener = Callable[[Pilot], Awaitable[None]]


async def _shown(pilot: Pilot, screen_type: type[Screen[Any]], focused: type[Any] | None = None) -> None:
    """Wait until `screen_type` is on top (and its initial focus given, as mount gives it late on a
    loaded machine); the picture holds its cursors (conftest's `snap_compare`)."""
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, screen_type)
                   and (focused is None or isinstance(app.screen.focused, focused)), f"the {screen_type.__name__}")
    await pilot.pause()


async def _paused_run(pilot: Pilot) -> None:
    """tuitest's `count` twice, one at a time, the first paused at its start: a run in progress."""
    app = pilot.app
    await wait_ready(pilot)
    await start_run(pilot, "tuitest", tasks="count", trials="2", parallel="1", paused=True)
    await wait_for(pilot, lambda: len(app.live.trials) == 1 and all(
        t.control == "paused" for t in app.live.trials.values()), "the first trial, paused")
    first = app.live.ordered()[0].trial_id
    await wait_for(pilot, lambda: app.workbench_screen.selected_trial() == first, "the first trial selected")
    app.workbench_screen.tick()
    app.refresh_info()


async def open_breakpoints(pilot: Pilot) -> None:
    """b during a run: the run's breakpoints (none yet)."""
    await _paused_run(pilot)
    await pilot.press("b")
    await _shown(pilot, BreakpointsScreen, Input)


async def open_confirm(pilot: Pilot) -> None:
    """q during a run asks first."""
    await _paused_run(pilot)
    await pilot.press("q")
    await _shown(pilot, ConfirmScreen)


async def open_spec_file(pilot: Pilot) -> None:
    """ctrl+o: a .bench.yaml to open into the run form."""
    await wait_ready(pilot)
    await pilot.press("ctrl+o")
    await _shown(pilot, SpecFileScreen, Input)


async def open_error(pilot: Pilot) -> None:
    """i with no trial to intervene in: the refusal, in words."""
    await wait_ready(pilot)
    await pilot.press("i")
    await _shown(pilot, ErrorScreen)


async def open_fork(pilot: Pilot) -> None:
    """The fork dialog for a trial of four iterations (the trials screen posts this message on f)."""
    await wait_ready(pilot)
    pilot.app.post_message(ForkRequested("tr_demo0000", 4))
    await _shown(pilot, ForkScreen, Input)


async def open_help(pilot: Pilot) -> None:
    await wait_ready(pilot)
    await pilot.press("f1")
    await _shown(pilot, HelpScreen)


# dialogs on the workbench: (opener, suite)
DIALOGS: dict[str, tuple[Opener, Path]] = {
    "breakpoints": (open_breakpoints, TUITEST),
    "confirm": (open_confirm, TUITEST),
    "spec_file": (open_spec_file, SAMPLEMATH),
    "error": (open_error, SAMPLEMATH),
    "fork": (open_fork, SAMPLEMATH),
}


@pytest.mark.parametrize("size", [SMALL, NORMAL], ids=SIZE_IDS.get)
@pytest.mark.parametrize("name", list(DIALOGS))
def test_dialog(snap_compare, tmp_path: Path, name: str, size: tuple[int, int]) -> None:
    opener, suite = DIALOGS[name]
    assert snap_compare(make_app(tmp_path, suites=[suite]), terminal_size=size, run_before=opener)


async def _intervene(pilot: Pilot) -> None:
    app = pilot.app
    await wait_ready(pilot)
    for event in fake_trial_events():
        app.services.lifecycle.queue.emit(event)
    await wait_for(pilot, lambda: app.live.trials, "the trial row")
    app.workbench_screen.query_one("#trials").focus()
    await pilot.press("i")
    await _shown(pilot, InterventionScreen, TextArea)
    message = "Round to two digits before answering."
    await pilot.press(*message)
    await wait_for(pilot, lambda: app.screen.query_one(TextArea).text == message, "the typed message")


# the small size of the screens test_screens.py shows at 120 x 40
SMALL_DIALOGS: dict[str, Opener] = {"help": open_help, "intervention": _intervene}


@pytest.mark.parametrize("name", list(SMALL_DIALOGS))
def test_small_workbench_dialog(snap_compare, tmp_path: Path, name: str) -> None:
    assert snap_compare(make_app(tmp_path, suites=[SAMPLEMATH]), terminal_size=SMALL, run_before=SMALL_DIALOGS[name])


@pytest.mark.parametrize("name", ["trials", "timeline"])
def test_small_stored_screen(snap_compare, tmp_path: Path, recorded_store: Path, name: str) -> None:
    db = tmp_path / "corral.db"
    shutil.copy(recorded_store, db)

    async def opener(pilot: Pilot) -> None:
        await screens_module._open_trials(pilot)
        if name == "timeline":
            await pilot.press("down", "enter")
            await _shown(pilot, TimelineScreen)
            await wait_for(pilot, lambda: pilot.app.screen.query_one(RichLog).lines, "the timeline")
            await pilot.press("end")
            await pilot.pause()

    app = make_app(tmp_path, suites=[SAMPLEMATH], db_url=str(db))
    assert snap_compare(app, terminal_size=SMALL, run_before=opener)


def test_small_fork_view(snap_compare, tmp_path: Path) -> None:
    fork_id = record_fork(tmp_path / "corral.db", "Skip the remaining steps; the answer is 5.")

    async def opener(pilot: Pilot) -> None:
        await wait_ready(pilot)
        pilot.app.post_message(ForkViewRequested(fork_id))
        await _shown(pilot, ForkViewScreen)
        await wait_for(pilot, lambda: pilot.app.screen.query_one("#fork-log", RichLog).lines,
                       "the fork beside its parent")

    assert snap_compare(make_app(tmp_path, suites=[TUITEST]), terminal_size=SMALL, run_before=opener)


def _both(small: str, normal: str) -> dict[tuple[int, int], str]:
    return {SMALL: small, NORMAL: normal}


def _sized(name: str) -> dict[tuple[int, int], str]:
    return {size: f"{name}[{label}]" for size, label in SIZE_IDS.items()}


def _dialog(name: str) -> dict[tuple[int, int], str]:
    return {size: f"test_every_screen/test_dialog[{name}-{label}]" for size, label in SIZE_IDS.items()}


# every screen: its snapshot (a file under __snapshots__, without .svg) at each size
COVERAGE: dict[type[Screen[Any]], dict[tuple[int, int], str]] = {
    WorkbenchScreen: _sized("test_sizes/test_workbench_during_a_run"),
    ApprovalScreen: _sized("test_sizes/test_approval_dialog_at_size"),
    HistoryScreen: _sized("test_sizes/test_history_at_size"),
    CompareScreen: _sized("test_screens/test_compare_plots"),
    TrialsScreen: _both("test_every_screen/test_small_stored_screen[trials]", "test_screens/test_trials"),
    TimelineScreen: _both("test_every_screen/test_small_stored_screen[timeline]", "test_screens/test_trial_timeline"),
    ForkViewScreen: _both("test_every_screen/test_small_fork_view", "test_screens/test_fork_beside_parent"),
    HelpScreen: _both("test_every_screen/test_small_workbench_dialog[help]", "test_screens/test_help"),
    InterventionScreen: _both("test_every_screen/test_small_workbench_dialog[intervention]",
                              "test_screens/test_intervention_dialog"),
    BreakpointsScreen: _dialog("breakpoints"),
    ConfirmScreen: _dialog("confirm"),
    SpecFileScreen: _dialog("spec_file"),
    ErrorScreen: _dialog("error"),
    ForkScreen: _dialog("fork"),
}


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    return found.union(*(_subclasses(sub) for sub in found)) if found else found


def _rows(svg: Path) -> int:
    """The terminal's height a snapshot was taken at: its clip paths number the lines from 0."""
    return max(int(number) for number in re.findall(r'-line-(\d+)"', svg.read_text())) + 2


def test_every_screen_has_a_snapshot_at_both_sizes() -> None:
    for module in pkgutil.walk_packages(corral_tui.__path__, "corral_tui."):
        importlib.import_module(module.name)
    screens = {cls for cls in _subclasses(Screen) if cls.__module__.startswith("corral_tui.")} - BASES
    assert sorted(cls.__name__ for cls in screens - COVERAGE.keys()) == [], \
        "add a snapshot at 80x24 and at 120x40 for these screens to COVERAGE"
    for cls, shots in COVERAGE.items():
        assert set(shots) == {SMALL, NORMAL}, cls.__name__
        for (_columns, rows), name in shots.items():
            svg = SNAPSHOTS / f"{name}.svg"
            assert svg.is_file(), f"{cls.__name__}: no snapshot {svg.name}"
            assert _rows(svg) == rows, f"{cls.__name__}: {svg.name} is not {rows} lines high"
