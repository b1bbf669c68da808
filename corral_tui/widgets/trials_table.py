"""The run's trials, one row each: number, task, arm, status, iteration, score, and live telemetry
(elapsed time, tokens, cost, last action). Rows change cell by cell; the time of running trials
is refreshed by `tick` (once a second)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.widgets import DataTable

from corral_tui.config import Redactor
from corral_tui.live import Changes, LiveRun, TrialLive
from corral_tui.render import format_cost, format_score, format_tokens, status_text

# (key, label, width); cells after the first start with a space (the table has no cell padding)
COLUMNS = (("number", "#", 3), ("task", "Task", 9), ("arm", "Arm", 7), ("status", "Status", 10),
           ("iteration", "It", 3), ("score", "Score", 5), ("elapsed", "Time", 6), ("tokens", "Tok", 5),
           ("cost", "Cost", 6), ("last", "Last action", 13))
SHORT_STATUS = {"iteration_limit": "iter-limit", "surrendered": "surrender"}
RIGHT = frozenset({"number", "iteration", "score", "elapsed", "tokens", "cost"})


class TrialsTable(DataTable[Text]):
    """One row per trial of the current run, keyed by trial id."""

    def __init__(self, redact: Redactor, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, cell_padding=0, **kwargs)  # type: ignore[arg-type]
        self.redact = redact
        self.border_title = "Trials"

    def on_mount(self) -> None:
        for position, (key, label, width) in enumerate(COLUMNS):
            pad = "" if position == 0 else " "
            self.add_column(Text(pad + label, justify="right" if key in RIGHT else "left"), key=key,
                            width=width + len(pad))

    def reset(self) -> None:
        self.clear()

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

    def tick(self, live: LiveRun, now: float) -> None:
        """Refresh the elapsed time of the running trials."""
        for trial in live.running():
            self.update_cell(trial.trial_id, "elapsed", self._cell("elapsed", self._elapsed(trial, now)))

    def _update(self, trials: Iterable[TrialLive | None], now: float) -> None:
        for trial in trials:
            if trial is None:
                continue
            for (key, _label, _width), value in zip(COLUMNS, self._cells(trial, now), strict=True):
                if key not in ("number", "task"):
                    self.update_cell(trial.trial_id, key, value)

    def _elapsed(self, trial: TrialLive, now: float) -> str:
        return self.redact.duration(trial.elapsed(now))

    def _cells(self, trial: TrialLive, now: float) -> list[Text]:
        status = status_text(trial.status)
        status.plain = SHORT_STATUS.get(trial.status, trial.status)
        if trial.assisted:
            status.append("*", style="magenta")
        values: dict[str, str | Text] = {
            "number": str(trial.number), "task": trial.task_id, "arm": trial.arm or "-", "status": status,
            "iteration": str(trial.iteration), "score": format_score(trial.score),
            "elapsed": self._elapsed(trial, now),
            "tokens": format_tokens(trial.tokens), "cost": format_cost(trial.cost), "last": trial.last_action,
        }
        return [self._cell(key, values[key], position == 0) for position, (key, _l, _w) in enumerate(COLUMNS)]

    @staticmethod
    def _cell(key: str, value: str | Text, first: bool = False) -> Text:
        text = Text("" if first else " ")
        text.append_text(value if isinstance(value, Text) else Text(value))
        text.no_wrap = True
        text.overflow = "ellipsis"
        text.justify = "right" if key in RIGHT else "left"
        return text
