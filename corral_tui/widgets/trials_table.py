"""The run's trials, one row each: number, task, arm, status, iteration, score, and live telemetry
(elapsed time, tokens, cost, last action). Rows change cell by cell; the time of running trials
is refreshed by `tick` (once a second).

Under a flood of events, a drained batch changes many cells at once. `DataTable.update_cell` makes
the whole table stale (every visible cell is drawn again on the next frame), so the table instead
writes the cells whose text changed and forgets only their cached renders: a frame redraws the
changed cells and nothing else (pinned textual 8.2.8; `tests/tui/test_units.py` checks the drawn
rows against the live state).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text, TextType
from textual.geometry import Size
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from corral_core.domain import TrialStatus
from corral_tui.config import Redactor
from corral_tui.live import Changes, LiveRun, TrialLive
from corral_tui.render import format_cost, format_score, format_tokens, status_text

# (key, label, width); cells after the first start with a space (the table has no cell padding)
COLUMNS = (("number", "#", 3), ("task", "Task", 9), ("arm", "Arm", 7), ("status", "Status", 10),
           ("iteration", "It", 3), ("score", "Score", 5), ("elapsed", "Time", 6), ("tokens", "Tok", 5),
           ("cost", "Cost", 9), ("last", "Last", 10))
SHORT_STATUS: dict[str, str] = {TrialStatus.ITERATION_LIMIT: "iter-limit", TrialStatus.SURRENDERED: "surrender"}
RIGHT = frozenset({"number", "iteration", "score", "elapsed", "tokens", "cost"})
FIXED = frozenset({"number", "task"})  # set when the row is added, never changed


class TrialsTable(DataTable[Text]):
    """One row per trial of the current run, keyed by trial id."""

    def __init__(self, redact: Redactor, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, cell_padding=0, **kwargs)  # type: ignore[arg-type]
        self.redact = redact
        self.border_title = "Trials"
        self._stale: dict[RowKey, set[ColumnKey]] = {}  # cells written since the last repaint
        self._said: dict[str, dict[str, str]] = {}  # trial id -> the words each cell shows

    def on_mount(self) -> None:
        for position, (key, label, width) in enumerate(COLUMNS):
            pad = "" if position == 0 else " "
            self.add_column(Text(pad + label, justify="right" if key in RIGHT else "left"), key=key,
                            width=width + len(pad))

    def on_resize(self) -> None:
        """On a wide terminal the task, arm and last-action columns take the spare width (a long arm
        name was cut at 220 columns while the table stayed 79 wide)."""
        spare = max(0, self.scrollable_content_region.width - 1 - sum(
            width + (position > 0) for position, (_k, _l, width) in enumerate(COLUMNS)))
        extra = {"task": min(spare // 5, 24), "arm": min(spare // 5, 24)}
        extra["last"] = spare - extra["task"] - extra["arm"]
        changed = False
        for position, (key, _l, width) in enumerate(COLUMNS):
            column = self.columns.get(ColumnKey(key))
            wanted = width + (position > 0) + extra.get(key, 0)
            if column is not None and column.width != wanted:
                column.width, changed = wanted, True
        if changed:
            self._clear_caches()
            self._update_dimensions([])
            self.refresh()

    def reset(self) -> None:
        self.clear()
        self._said.clear()
        self._stale.clear()

    def selected_trial(self) -> str | None:
        if self.row_count == 0:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # the cursor is off the rows (table just cleared)
            return None

    def sync(self, live: LiveRun, changes: Changes, now: float) -> None:
        """Add the new trials and update the rows that changed."""
        for trial_id in changes.new_rows:
            self.add_row(*self._cells(live.trials[trial_id], now), key=trial_id)
        self._update((live.trials.get(trial_id) for trial_id in changes.rows if trial_id not in changes.new_rows), now)
        self._repaint()

    def tick(self, live: LiveRun, now: float) -> None:
        """Refresh the elapsed time of the running trials."""
        for trial in live.running():
            self._write(trial, "elapsed", self._elapsed(trial, now))
        self._repaint()

    def _update(self, trials: Iterable[TrialLive | None], now: float) -> None:
        for trial in trials:
            if trial is not None:
                for key, said in self._says(trial, now).items():
                    if key not in FIXED:
                        self._write(trial, key, said)

    def _write(self, trial: TrialLive, key: str, said: str) -> None:
        """Set a cell to say `said`, unless it does already (comparing words is cheaper than making cells)."""
        row = self._said.setdefault(trial.trial_id, {})
        if row.get(key) != said:
            row[key] = said
            self._set(trial.trial_id, key, self._status(trial) if key == "status" else self._cell(key, said))

    def _set(self, trial_id: str, key: str, value: Text) -> None:
        """Write one cell if its text changed (drawn by the next `_repaint`)."""
        row_key, column_key = RowKey(trial_id), ColumnKey(key)
        row = self._data.get(row_key)
        if row is None:
            return
        old = row.get(column_key)
        if isinstance(old, Text) and old == value and old.style == value.style:
            return
        row[column_key] = value
        self._stale.setdefault(row_key, set()).add(column_key)

    def _repaint(self) -> None:
        """Forget the cached renders of the written cells (and their rows' lines) and redraw those rows.

        What `update_cell` does, without making every other cell of the table stale too."""
        stale, self._stale = self._stale, {}
        if not stale:
            return
        cells, rows = self._cell_render_cache, self._row_render_cache  # LRU caches: not iterable themselves
        cell_keys, row_keys = cells.keys(), rows.keys()
        for cell_key in [key for key in cell_keys if key[1] in stale.get(key[0], ())]:
            cells.discard(cell_key)
        for row_key in [key for key in row_keys if key[0] in stale]:
            rows.discard(row_key)
        self._line_cache.clear()
        top = self.scroll_offset.y
        bottom = top + self.size.height
        for stale_row in stale:
            index = self._row_locations.get(stale_row)
            if index is not None:
                self._row_renderable_cache.discard((self._update_count, index))
                if top <= index <= bottom:  # rows out of sight are drawn afresh when scrolled to
                    self.refresh_row(index)  # (it sums the heights of the rows above: not for all)

    def add_row(self, *cells: Text, height: int | None = 1, key: str | None = None,
                label: TextType | None = None) -> RowKey:
        """Append a row, keeping the other rows' cached renders: DataTable's add makes every cell of
        the table stale, so with trials starting every tick the whole visible table was drawn again
        each frame. An appended row moves no other row; only the row positions are recomputed."""
        count = self._update_count
        row_key = super().add_row(*cells, height=height, key=key, label=label)
        self._update_count = count
        self._offset_cache.clear()  # row positions, cached by update count
        return row_key

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """The table's size after rows were added. Every column has a fixed width and every row one
        line, so unlike DataTable's this measures no cell (it measured all ten of each new row: a
        fifth of the UI thread with 256 trials in flight, 250 new rows a second)."""
        header = self.header_height if self.show_header else 0
        width = sum(column.get_render_width(self) for column in self.columns.values())
        self.virtual_size = Size(width + self._row_label_column_width, self._total_row_height + header)

    def _elapsed(self, trial: TrialLive, now: float) -> str:
        return self.redact.duration(trial.elapsed(now))

    def _says(self, trial: TrialLive, now: float) -> dict[str, str]:
        """The words of each cell of the trial's row (the status with its assisted mark)."""
        return {
            "number": str(trial.number), "task": trial.task_id, "arm": trial.arm or "-",
            "status": SHORT_STATUS.get(trial.status, trial.status) + ("*" if trial.assisted else ""),
            "iteration": str(trial.iteration) if trial.iteration else "-", "score": format_score(trial.score),
            "elapsed": self._elapsed(trial, now),
            "tokens": format_tokens(trial.tokens), "cost": format_cost(trial.cost), "last": trial.last_action,
        }

    def _cells(self, trial: TrialLive, now: float) -> list[Text]:
        said = self._said[trial.trial_id] = self._says(trial, now)
        return [self._status(trial) if key == "status" else self._cell(key, said[key], position == 0)
                for position, (key, _l, _w) in enumerate(COLUMNS)]

    def _status(self, trial: TrialLive) -> Text:
        status = status_text(trial.status)
        status.plain = SHORT_STATUS.get(trial.status, trial.status)
        if trial.assisted:
            status.append("*", style="magenta")
        return self._cell("status", status)

    @staticmethod
    def _cell(key: str, value: str | Text, first: bool = False) -> Text:
        text = Text("" if first else " ")
        text.append_text(value if isinstance(value, Text) else Text(value))
        text.no_wrap = True
        text.overflow = "ellipsis"
        text.justify = "right" if key in RIGHT else "left"
        return text
