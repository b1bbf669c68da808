"""The selected trial's live panes: iterations, tool calls and hook events.

A trial whose events the live buffer has given up (an older finished trial) is shown from the
store instead: the screen loads its events and hands them over with `show_stored`.
Only the pane on screen is drawn. A hidden `RichLog` cannot render (its size is unknown) and would
queue every write without bound, so a tick writes to the visible pane only, and switching trials or
tabs replays the newest `REPLAY` items of that pane from the trial's bounded event buffer. A tick
with more new items than the pane has lines (a burst) writes only the newest that fill the pane
(`min_lines` counts an item's lines without drawing it): the pane follows the newest item, so older
ones of the burst would scroll out of sight in the frame they were drawn in, and drawing an item is
most of the pane's cost (a tool call with a result table is ~15 lines). They stay in the buffer: a
tab switch or a reselect draws them, and Enter opens the whole timeline. Drawing cost never grows
with the run or with the rate of events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.json import JSON
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import RichLog, TabbedContent, TabPane

from corral_core.events import Event, EventKind
from corral_tui.config import Redactor
from corral_tui.live import TrialLive
from corral_tui.render import hook_line, iteration_item, tool_call_block, trial_end_line

PER_TICK = 40
REPLAY = 300
APPROVALS = (EventKind.APPROVAL_ASKED, EventKind.APPROVAL_DECIDED)


@dataclass(frozen=True)
class Pane:
    title: str
    kinds: frozenset[EventKind]
    render: Callable[[Event, Redactor], RenderableType | None]


def _tool_item(event: Event, redact: Redactor) -> RenderableType | None:
    return tool_call_block(event.data, redact) if event.kind == EventKind.TOOL_CALL else hook_line(event)


def _hook_item(event: Event, _redact: Redactor) -> RenderableType | None:
    """A hook-type event, or the trial's end (so a finished trial's pane never ends on "running")."""
    return trial_end_line(event.data) if event.kind == EventKind.TRIAL_FINISHED else hook_line(event)


PANES = {
    "pane-iterations": Pane("Iterations", frozenset({
        EventKind.ITERATION_STARTED, EventKind.MESSAGE, EventKind.INTERVENTION_APPLIED,
        EventKind.INTERVENTION_UNDELIVERED, EventKind.LLM_RESPONSE, EventKind.BREAKPOINT_HIT,
        EventKind.AGENT_FINISHED, EventKind.TRIAL_FINISHED}), iteration_item),
    "pane-tools": Pane("Tool calls", frozenset({EventKind.TOOL_CALL, *APPROVALS}), _tool_item),
    "pane-hooks": Pane("Hooks", frozenset({
        EventKind.HOOK_FIRED, EventKind.HOOK_ERROR, EventKind.INTERVENTION_APPLIED, EventKind.INTERVENTION_UNDELIVERED,
        EventKind.CONTROL_STATE, EventKind.BREAKPOINT_HIT, EventKind.TRIAL_FINISHED, *APPROVALS}), _hook_item),
}


class TrialPanes(Vertical):
    """Iterations / Tool calls / Hooks of one trial, as tabs."""

    def __init__(self, redact: Redactor, max_lines: int = 1_000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.redact = redact
        self.max_lines = max_lines
        self.trial: TrialLive | None = None
        self.stored: list[Event] | None = None  # the trial's events read from the store

    @property
    def trial_id(self) -> str | None:
        return self.trial.trial_id if self.trial is not None else None

    def compose(self) -> ComposeResult:
        with TabbedContent(id="pane-tabs"):
            for pane_id, pane in PANES.items():
                with TabPane(pane.title, id=pane_id):
                    yield RichLog(max_lines=self.max_lines, wrap=True, markup=False, highlight=False,
                                  id=f"{pane_id}-log")

    @property
    def active(self) -> str:
        return self.query_one(TabbedContent).active or "pane-iterations"

    def next_pane(self) -> None:
        """Show the next tab (Iterations, Tool calls, Hooks, then Iterations again)."""
        order = list(PANES)
        self.query_one(TabbedContent).active = order[(order.index(self.active) + 1) % len(order)]

    def log_for(self, pane_id: str) -> RichLog:
        return self.query_one(f"#{pane_id}-log", RichLog)

    @property
    def needs_store(self) -> bool:
        """The shown trial's live events are gone (evicted): its panes must come from the store."""
        trial = self.trial
        return trial is not None and trial.finished and not trial.events and self.stored is None

    def show(self, trial: TrialLive | None) -> None:
        """Switch to `trial` (None: nothing selected) and draw the visible pane."""
        self.trial = trial
        self.stored = None
        for pane_id in PANES:
            self.log_for(pane_id).clear()
        self._replay(self.active)

    def show_stored(self, trial_id: str, events: list[Event]) -> None:
        """The store's events of the shown trial (ignored if another trial is shown by now)."""
        if self.trial_id != trial_id:
            return
        self.stored = events
        self._replay(self.active)

    def append(self, events: Iterable[Event]) -> None:
        """Draw new events of the shown trial in the visible pane (the newest, as many as fill it). The
        trial's end draws the pane again whole, so a burst never leaves its final state undrawn."""
        pane_id = self.active
        events = list(events)
        if any(event.kind == EventKind.TRIAL_FINISHED for event in events):
            self._replay(pane_id)
            return
        height = self.log_for(pane_id).scrollable_content_region.height
        self._write(pane_id, events, PER_TICK, lines=height if height > 0 else None)

    @on(TabbedContent.TabActivated)
    def _tab_changed(self, event: TabbedContent.TabActivated) -> None:
        event.stop()
        if event.pane.id in PANES:
            self._replay(event.pane.id)

    def _replay(self, pane_id: str) -> None:
        log = self.log_for(pane_id)
        log.clear()
        if self.trial is None:
            log.write(Text("No trial selected.", style="dim"))
            return
        if self.needs_store:
            log.write(Text("Loading this trial from the store…", style="dim"))
            return
        events = self.stored if self.stored is not None and not self.trial.events else self.trial.events
        self._write(pane_id, events, REPLAY, note="(Enter opens the whole timeline)")

    def _write(self, pane_id: str, events: Iterable[Event], limit: int, note: str = "in this burst",
               lines: int | None = None) -> None:
        """Draw the newest `limit` items of `events` in the pane; when there are more than `lines`, only
        the newest that fill `lines` lines (a burst: the older ones would scroll out unseen)."""
        pane = PANES[pane_id]
        wanted = [event for event in events if event.kind in pane.kinds]
        if lines is not None and len(wanted) <= lines:
            lines = None  # a few items (most ticks): all of them, so the pane's scrollback stays whole
        items: list[RenderableType] = []
        taken = 0
        for event in reversed(wanted):
            if taken == limit or (lines is not None and lines <= 0):
                break
            taken += 1
            item = pane.render(event, self.redact)
            if item is not None:
                items.append(item)
                if lines is not None:
                    lines -= min_lines(item)
        log = self.log_for(pane_id)
        if taken < len(wanted):
            log.write(Text(f"… {len(wanted) - taken} earlier items not drawn {note}", style="dim"))
        for item in reversed(items):
            log.write(item)


def min_lines(item: RenderableType) -> int:
    """The fewest lines `item` takes in a pane (wrapping only adds lines), without drawing it."""
    if isinstance(item, Text):
        return item.plain.count("\n") + 1
    if isinstance(item, Group):
        return sum(min_lines(part) for part in item.renderables)
    if isinstance(item, JSON):
        return min_lines(item.text)
    if isinstance(item, Table):
        return item.row_count + (1 if item.show_header else 0)
    from rich.syntax import Syntax  # render.py imports it with the first code result

    if isinstance(item, Syntax):
        return item.code.count("\n") + 1
    return 1
