"""Every screen of the workbench in one list: the help screen lists their key bindings from it, and
the command palette offers to open the ones that open on their own.

The list is built on first use (the help screen, the palette): the screens behind it are imported
then, not before the workbench's first frame."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from textual.screen import Screen


@dataclass(frozen=True)
class ScreenInfo:
    name: str  # "where" in the help screen
    screen: type[Screen[Any]]
    description: str
    open_action: str | None = None  # the app action that opens it from anywhere (palette "Open ...")


@cache
def screens() -> tuple[ScreenInfo, ...]:
    """Every screen, in the order the help screen lists them."""
    from corral_tui.screens.approval import ApprovalScreen
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
    from corral_tui.screens.history import HistoryScreen, TrialsScreen
    from corral_tui.screens.timeline import TimelineScreen
    from corral_tui.screens.workbench import WorkbenchScreen

    return (
        ScreenInfo("workbench", WorkbenchScreen, "suites, run form, live trials and their panes"),
        ScreenInfo("approval", ApprovalScreen, "a confirm-level tool call waiting for a person", "app.approvals"),
        ScreenInfo("intervention", InterventionScreen, "a message for a running trial"),
        ScreenInfo("breakpoints", BreakpointsScreen, "the breakpoints of the run in progress"),
        ScreenInfo("spec file", SpecFileScreen, "a .bench.yaml to open into the run form or save it as"),
        ScreenInfo("history", HistoryScreen, "past benchmarks", "app.history"),
        ScreenInfo("trials", TrialsScreen, "one benchmark's trials"),
        ScreenInfo("timeline", TimelineScreen, "one trial's stored timeline"),
        ScreenInfo("fork", ForkScreen, "where a fork of a trial goes live, and what it is told there"),
        ScreenInfo("fork view", ForkViewScreen, "a fork beside its parent from the fork point"),
        ScreenInfo("compare", CompareScreen, "a benchmark's arms side by side", "app.compare_last"),
        ScreenInfo("help", HelpScreen, "every key binding", "app.help"),
        ScreenInfo("confirm", ConfirmScreen, "a yes/no question (quit during a run)"),
        ScreenInfo("error", ErrorScreen, "a problem in words"),
    )
