"""The running trials: trial, task, arm, #, status, iteration, score; updated cell by cell."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from corral_tui.config import Redactor
from corral_tui.live import Changes, LiveRun, TrialLive
from corral_tui.render import format_score, status_text

COLUMNS = (("trial", "Trial", 7), ("task", "Task", 12), ("arm", "Arm", 8), ("index", "#", 2),
           ("status", "Status", 11), ("iteration", "Iter", 4), ("score", "Score", 5))
SHORT_STATUS = {"iteration_limit": "iter-limit"}


class TrialsTable(DataTable):
    """One row per trial of the current run, keyed by trial id."""

    def __init__(self, redact: Redactor, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.redact = redact
        self.border_title = "Trials"

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def reset(self) -> None:
        self.clear()

    def selected_trial(self) -> str | None:
        if self.row_count == 0:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # the cursor is off the rows (table just cleared)
            return None

    def sync(self, live: LiveRun, changes: Changes) -> None:
        """Add the new trials and update the rows that changed."""
        for trial_id in changes.new_rows:
            trial = live.trials[trial_id]
            self.add_row(*self._cells(trial), key=trial_id)
        for trial_id in changes.rows:
            if trial_id in changes.new_rows:
                continue
            changed = live.trials.get(trial_id)
            if changed is None:
                continue
            for (key, _label, _width), value in zip(COLUMNS, self._cells(changed), strict=True):
                if key in ("status", "iteration", "score", "arm", "index"):
                    self.update_cell(trial_id, key, value)

    def _cells(self, trial: TrialLive) -> tuple[object, ...]:
        status = status_text(trial.status)
        status.plain = SHORT_STATUS.get(trial.status, trial.status)
        if trial.assisted:
            status.append("*", style="magenta")
        return (self.redact.ident(trial.trial_id), trial.task_id, trial.arm or "-", str(trial.index), status,
                str(trial.iteration), Text(format_score(trial.score), justify="right"))
