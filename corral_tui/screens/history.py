"""History: past benchmarks, then one benchmark's trials (filtered, paged).

Each screen shows one page of a query it runs through the `StoreQueries` it was given; totals come
from COUNT queries, so the screens open at once on a store with 100,000 trials. Opening a row asks
the app for the next screen (`TrialsRequested`, `TimelineRequested`, `CompareRequested`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Generic

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import DataTable, Header, Label, Select

from corral_core.domain import BenchmarkStatus
from corral_core.report import planned_trials, trials_done_text
from corral_tui.analysis import TRIAL_FILTER_STATUSES, Item, Page, TrialFilter, arm_label
from corral_tui.config import Redactor
from corral_tui.messages import CompareRequested, ResumeRequested, TimelineRequested, TrialsRequested
from corral_tui.render import clip, format_cost, format_score, format_tokens, status_text
from corral_tui.screens.base import QueryScreen
from corral_tui.widgets.select import Choice
from corral_tui.widgets.status import FittingFooter

if TYPE_CHECKING:
    from corral_core.store import BenchmarkInfo, TrialInfo
    from corral_tui.services.queries import StoreQueries

ATTEMPT_STYLES = {"improved": "green", "baseline": "cyan", "no_change": "cyan", "regressed": "red", "crashed": "red",
                  "errored": "red"}
PAGE_BINDINGS = [
    Binding("n,pagedown", "page(1)", "Next page", id="history.next_page"),
    Binding("b,pageup", "page(-1)", "Prev page", id="history.prev_page"),
    # priority: the table's own Home/End go to the first/last column
    Binding("home", "row(0)", "First row", show=False, priority=True, id="history.first_row"),
    Binding("end", "row(-1)", "Last row", show=False, priority=True, id="history.last_row"),
    Binding("escape", "app.pop_screen", "Back", id="history.back"),
]
# History's columns: (header, the cells it takes with its padding, the narrowest terminal that shows it).
# A narrower terminal drops the lower-value columns (cost, arms, then agent and model: the trials and
# Compare show them); Spec gets what the others leave (between the bounds), so a long spec name (a
# fork's) is cut instead of pushing columns off the screen. Below 160 columns the date loses its year.
BENCHMARK_COLUMNS = (("Benchmark", 14, 0), ("Spec", 0, 0), ("Status", 11, 0), ("Score", 7, 0), ("Attempt", 10, 0),
                     ("Trials", 10, 0), ("Tokens · cost", 18, 180), ("Arms", 18, 160), ("Model", 18, 100),
                     ("Agent", 14, 110), ("Date", 13, 0))
SPEC_WIDTH = (12, 60)
WIDE_HISTORY = 160  # from here: the model's id up to 28 cells, the date with its year and seconds


def fit(text: str, width: int) -> str:
    """`text` in at most `width` cells, cut with an ellipsis."""
    return text if len(text) <= width else text[:max(width - 1, 1)] + "…"
TRIAL_COLUMNS = ("Trial", "Task", "Arm", "#", "Status", "Score", "Iter", "Tokens", "Duration", "Assisted")


class PageLoaded(Message, Generic[Item]):
    def __init__(self, page: Page[Item]) -> None:
        super().__init__()
        self.page = page


class PagedScreen(QueryScreen, Generic[Item]):
    """A screen with one paged DataTable."""

    def __init__(self, queries: StoreQueries, redact: Redactor) -> None:
        super().__init__()
        self.queries = queries
        self.redact = redact
        self.start = 0
        self.page: Page[Item] | None = None

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one("#rows", DataTable)

    def on_mount(self) -> None:
        self.load()

    def load(self) -> None:
        self.query_one("#page-info", Label).update(Text("Loading…", style="dim"))
        self.ask(self.query_for(self.start), PageLoaded)

    def query_for(self, offset: int) -> Callable[[], Page[Item]]:
        """The query of the page at `offset`, with the screen's filters as they are now (the call
        runs on a worker thread)."""
        raise NotImplementedError

    def query_now(self) -> Any:
        """What the screen asks for now (filters); a reply for anything else is stale."""
        return None

    def action_page(self, delta: int) -> None:
        if self.page is None:
            return
        offset = self.start + delta * self.queries.page_size
        if offset < 0 or offset >= max(self.page.total, 1):
            self.notify("No more pages that way.", severity="information")
            return
        self.start = offset
        self.load()

    @on(PageLoaded)
    def _loaded(self, message: PageLoaded[Item]) -> None:
        message.stop()
        page = message.page
        if page.offset != self.start or page.query != self.query_now():
            return  # a reply to an earlier request (keys pressed faster than the store answers)
        self.page = page
        table = self.table
        table.clear()
        for key, cells in self.rows(page.items):
            table.add_row(*cells, key=key)
        last = min(page.offset + len(page.items), page.total)
        self.query_one("#page-info", Label).update(
            f"Page {page.number} of {page.pages}  ·  rows {page.offset + 1 if page.items else 0}–{last} "
            f"of {page.total}")

    def rows(self, items: list[Item]) -> list[tuple[str, tuple[Any, ...]]]:
        raise NotImplementedError

    def action_row(self, row: int) -> None:
        """Home / End: the first or the last row of the page (DataTable's own go to a column)."""
        table = self.table
        if table.row_count:
            table.move_cursor(row=row if row >= 0 else table.row_count - 1)

    def selected(self) -> Item | None:
        if self.page is None or not self.page.items:
            return None
        row = self.table.cursor_row
        return self.page.items[row] if 0 <= row < len(self.page.items) else None


def _trial_counts(benchmark: BenchmarkInfo) -> Text:
    """Finished of planned trials ("6/8"), with what the store holds when the plan is unknown."""
    planned = planned_trials(benchmark)
    text = trials_done_text(benchmark)
    if benchmark.errored_count:
        return Text(text, style="bold red")
    if planned is None:
        return Text(text, style="dim")
    return Text(text, style="" if benchmark.finished_count >= planned else "yellow")


class HistoryScreen(PagedScreen["BenchmarkInfo"]):
    """Past benchmarks, newest first."""

    BINDINGS = [*PAGE_BINDINGS, Binding("m", "compare", "Compare arms", id="history.compare"),
                Binding("u", "resume", "Resume (finish it here)", id="history.resume"),
                Binding("space", "mark", "Mark for compare", id="history.mark"),
                Binding("c", "compare_marked", "Compare the two marked", id="history.compare_marked")]

    def __init__(self, queries: StoreQueries, redact: Redactor) -> None:
        super().__init__(queries, redact)
        self.marked: list[BenchmarkInfo] = []  # at most two, oldest mark first
        self.columns: list[str] = []  # the headers shown at this width (BENCHMARK_COLUMNS)
        self._laid_out_width = 0  # the terminal width the columns and rows were fitted to

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label("Benchmarks", classes="screen-title", id="history-title")
        yield DataTable(id="rows", cursor_type="row", zebra_stripes=True)
        yield Label("", id="page-info")
        yield FittingFooter()

    def on_mount(self) -> None:
        # Status, Score and Attempt right after the Spec (cut to fit), so they are on screen at any width
        self.columns = self._columns_for(self.app.size.width)
        self._laid_out_width = self.app.size.width
        self.table.add_columns(*self.columns)
        self.table.focus()
        super().on_mount()

    @staticmethod
    def _columns_for(width: int) -> list[str]:
        return [name for name, _, narrowest in BENCHMARK_COLUMNS if width >= narrowest]

    def on_resize(self, event: events.Resize) -> None:
        """A new width re-fits the columns and the rows at once (History kept the layout of the width it
        was opened at until it was opened again)."""
        if not self.columns or event.size.width == self._laid_out_width:
            return
        self._laid_out_width = event.size.width
        table, row = self.table, self.table.cursor_row
        columns = self._columns_for(event.size.width)
        if columns != self.columns:
            self.columns = columns
            table.clear(columns=True)
            table.add_columns(*columns)
        if self.page is not None:
            table.clear()
            for key, cells in self.rows(self.page.items):
                table.add_row(*cells, key=key)
            if table.row_count:
                table.move_cursor(row=min(row, table.row_count - 1))

    def query_for(self, offset: int) -> Callable[[], Page[BenchmarkInfo]]:
        return partial(self.queries.benchmarks, offset)

    def rows(self, items: list[BenchmarkInfo]) -> list[tuple[str, tuple[Any, ...]]]:
        redact = self.redact
        width = self._laid_out_width or self.app.size.width
        wide = width >= WIDE_HISTORY
        cells = {name: cells for name, cells, _ in BENCHMARK_COLUMNS}
        others = sum(cells[name] for name in self.columns) + (12 if wide else 2) + 2  # + wider model, date; scrollbar
        spec_width = min(max(width - others, SPEC_WIDTH[0]), SPEC_WIDTH[1])

        def row(b: BenchmarkInfo) -> tuple[Any, ...]:
            stamp = redact.timestamp(b.created_at)
            values = {"Benchmark": redact.ident(b.id), "Spec": fit(b.spec_name, spec_width),
                      "Status": status_text(b.status), "Score": format_score(b.headline_score),
                      "Attempt": Text(b.attempt_status or "-", style=ATTEMPT_STYLES.get(b.attempt_status or "", "dim")),
                      "Trials": _trial_counts(b),
                      "Tokens · cost": f"{format_tokens(b.total_tokens)} · {format_cost(b.cost_total)}",
                      "Arms": fit(arm_label(b), 16), "Model": fit(clip(b.model or "-", 28), 26 if wide else 16),
                      "Agent": fit(b.agent or "-", 12), "Date": stamp if wide or len(stamp) != 19 else stamp[5:16]}
            return tuple(values[name] for name in self.columns)

        return [(b.id, row(b)) for b in items]

    @on(DataTable.RowSelected, "#rows")
    def _open(self) -> None:
        benchmark = self.selected()
        if benchmark is not None:
            self.post_message(TrialsRequested(benchmark))

    def action_compare(self) -> None:
        benchmark = self.selected()
        if benchmark is not None:
            self.post_message(CompareRequested(benchmark.id))

    def action_mark(self) -> None:
        """space: mark the selected benchmark (again: unmark); a third mark replaces the oldest."""
        benchmark = self.selected()
        if benchmark is None:
            return
        ids = [b.id for b in self.marked]
        if benchmark.id in ids:
            del self.marked[ids.index(benchmark.id)]
        else:
            self.marked = [*self.marked[-1:], benchmark]
        names = "  ·  ".join(f"{letter} = {self.redact.ident(b.id)} {b.spec_name}"
                             for letter, b in zip("AB", self.marked, strict=False))
        hint = {0: "", 1: "  (space marks a second one of the same suite)", 2: "  (c compares them, paired by task)"}
        self.query_one("#history-title", Label).update(
            f"Benchmarks  ·  marked: {names}{hint[len(self.marked)]}" if self.marked else "Benchmarks")

    def action_compare_marked(self) -> None:
        if len(self.marked) < 2:
            self.notify("Mark two benchmarks of one suite with space first (c then compares them).",
                        severity="warning")
            return
        first, second = self.marked
        self.post_message(CompareRequested(first.id, second.id))

    def action_resume(self) -> None:
        """u: finish the selected benchmark (interrupted or stopped) in the workbench, from its stored spec."""
        benchmark = self.selected()
        if benchmark is None:
            return
        if benchmark.status == BenchmarkStatus.FINISHED:
            self.notify(f"{self.redact.ident(benchmark.id)} has finished: nothing to resume.", severity="warning")
            return
        self.post_message(ResumeRequested(benchmark.id))


class TrialsScreen(PagedScreen["TrialInfo"]):
    """One benchmark's trials, filtered by task, arm and status."""

    BINDINGS = [*PAGE_BINDINGS, Binding("m", "compare", "Compare arms", id="trials.compare")]

    def __init__(self, benchmark: BenchmarkInfo, queries: StoreQueries, redact: Redactor) -> None:
        super().__init__(queries, redact)
        self.benchmark = benchmark
        self.filters = TrialFilter()

    def compose(self) -> ComposeResult:
        tasks, arms = self.queries.filter_choices(self.benchmark)
        yield Header()
        yield Label(f"Trials of {self.benchmark.spec_name} ({self.redact.ident(self.benchmark.id)})",
                    classes="screen-title")
        with Horizontal(id="filters"):
            yield Choice([(t, t) for t in tasks], prompt="any task", id="filter-task", compact=True)
            yield Choice([(a, a) for a in arms], prompt="any arm", id="filter-arm", compact=True)
            yield Choice([(s, s) for s in TRIAL_FILTER_STATUSES], prompt="any status", id="filter-status",
                         compact=True)
        yield DataTable(id="rows", cursor_type="row", zebra_stripes=True)
        yield Label("", id="page-info")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.table.add_columns(*TRIAL_COLUMNS)
        self.table.focus()
        super().on_mount()

    def query_for(self, offset: int) -> Callable[[], Page[TrialInfo]]:
        return partial(self.queries.trials, self.benchmark.id, dataclasses.replace(self.filters), offset)

    def query_now(self) -> Any:
        return self.filters

    def rows(self, items: list[TrialInfo]) -> list[tuple[str, tuple[Any, ...]]]:
        redact = self.redact
        return [(t.id, (redact.ident(t.id), t.task_id, t.arm, str(t.trial_index), status_text(t.status),
                        format_score(t.score), str(t.iterations), str(t.total_tokens), redact.duration(t.duration),
                        "yes" if t.assisted else "")) for t in items]

    @on(Select.Changed)
    def _filter(self, event: Select.Changed) -> None:
        value = None if event.value is Select.NULL else str(event.value)
        name = str(event.select.id).removeprefix("filter-")
        setattr(self.filters, name, value)
        self.start = 0
        self.load()

    @on(DataTable.RowSelected, "#rows")
    def _open(self) -> None:
        trial = self.selected()
        if trial is not None:
            self.post_message(TimelineRequested(trial.id))

    def action_compare(self) -> None:
        self.post_message(CompareRequested(self.benchmark.id))
