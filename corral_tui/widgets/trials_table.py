"""The run's trials, one row each: number, task, arm, status, iteration, score, and live telemetry
(elapsed time, tokens, cost, last action). Rows change cell by cell; the time of running trials
is refreshed by `tick` (once a second).

Under a flood of events, a drained batch changes many cells at once: the table writes only the
cells whose words changed, and `FastTable` (corral_tui/widgets/textual_adapter.py, the one module that
touches Textual's internals) redraws those cells and nothing else (`tests/tui/test_units.py`
checks the drawn rows against the live state).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.widgets.data_table import ColumnKey

from corral_core.domain import TrialStatus
from corral_tui.config import Redactor
from corral_tui.live import Changes, LiveRun, TrialLive
from corral_tui.render import format_cost, format_score, format_tokens, status_text
from corral_tui.widgets.textual_adapter import FastTable

# (key, label, width); cells after the first start with a space (the table has no cell padding)
COLUMNS = (("number", "#", 3), ("task", "Task", 9), ("arm", "Arm", 7), ("status", "Status", 10),
           ("iteration", "It", 3), ("score", "Score", 5), ("elapsed", "Time", 6), ("tokens", "Tok", 5),
           ("cost", "Cost", 9), ("last", "Last", 10))
SHORT_STATUS: dict[str, str] = {TrialStatus.ITERATION_LIMIT: "iter-limit", TrialStatus.SURRENDERED: "surrender"}
RIGHT = frozenset({"number", "iteration", "score", "elapsed", "tokens", "cost"})
FIXED = frozenset({"number", "task"})  # set when the row is added, never changed


class TrialsTable(FastTable):
    """One row per trial of the current run, keyed by trial id."""

    def __init__(self, redact: Redactor, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, cell_padding=0, **kwargs)
        self.redact = redact
        self.border_title = "Trials"
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
            self.columns_resized()

    def reset(self) -> None:
        self.clear()
        self._said.clear()
        self.forget_written()

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
        self.repaint_written()

    def tick(self, live: LiveRun, now: float) -> None:
        """Refresh the elapsed time of the running trials."""
        for trial in live.running():
            self._write(trial, "elapsed", self._elapsed(trial, now))
        self.repaint_written()

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
            self.write_cell(trial.trial_id, key, self._status(trial) if key == "status" else self._cell(key, said))

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
