"""What the workbench knows about the run in progress, built from batches of engine events.

`LiveRun.apply(events)` folds one drained batch into per-trial rows and bounded per-trial event
buffers and returns a `Changes` summary, so the screen redraws only the rows and panes that moved.
Pure Python (no widgets), so it is cheap to test and safe to call once per UI tick.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from corral_core.events import Event, EventKind

BUFFERED_TRIALS = 24  # finished trials whose recent events stay for the panes (the store has them all)


@dataclass
class TrialLive:
    """One trial's row in the trials table, plus its most recent events."""

    trial_id: str
    task_id: str
    number: int  # display order (1-based)
    arm: str = ""
    index: int = 0
    control: str = "running"  # running | paused | stepping | cancelled (the run controls)
    result: str | None = None  # TRIAL_FINISHED status once the trial ended
    iteration: int = 0
    score: float | None = None
    assisted: bool = False
    tool_calls: int = 0
    events: deque[Event] = field(default_factory=deque)

    @property
    def status(self) -> str:
        """What the status column shows: the final status, or the control state while running."""
        return self.result or self.control

    @property
    def finished(self) -> bool:
        return self.result is not None


@dataclass
class Changes:
    """What one batch changed."""

    rows: set[str] = field(default_factory=set)  # trial ids whose row changed
    new_rows: list[str] = field(default_factory=list)  # trial ids seen for the first time
    events: dict[str, list[Event]] = field(default_factory=dict)  # new events per trial
    benchmark_finished: bool = False
    benchmark_id: str | None = None

    def __bool__(self) -> bool:
        return bool(self.rows or self.new_rows or self.events or self.benchmark_finished)


class LiveRun:
    """The trials of the current run, keyed by trial id, in the order they appeared."""

    def __init__(self, buffer: int = 1_000, buffered_trials: int = BUFFERED_TRIALS) -> None:
        self.buffer = buffer
        self.buffered_trials = buffered_trials
        self.trials: dict[str, TrialLive] = {}
        self._with_events: OrderedDict[str, None] = OrderedDict()
        self.benchmark_id: str | None = None
        self.total = 0
        self.finished = False
        self.events_seen = 0

    def reset(self, total: int = 0) -> None:
        """Forget the previous run (a new one is starting)."""
        self.trials.clear()
        self._with_events.clear()
        self.benchmark_id = None
        self.total = total
        self.finished = False

    @property
    def done(self) -> int:
        return sum(1 for trial in self.trials.values() if trial.finished)

    def ordered(self) -> list[TrialLive]:
        return list(self.trials.values())

    def apply(self, events: list[Event]) -> Changes:
        changes = Changes()
        for event in events:
            self.events_seen += 1
            self._apply_one(event, changes)
        return changes

    # --- internals ------------------------------------------------------------------------------

    def _trial(self, event: Event, changes: Changes) -> TrialLive:
        trial_id = event.trial_id or ""
        trial = self.trials.get(trial_id)
        if trial is None:
            trial = TrialLive(trial_id, event.task_id or "", len(self.trials) + 1,
                              events=deque(maxlen=self.buffer))
            self.trials[trial_id] = trial
            changes.new_rows.append(trial_id)
        self._with_events[trial_id] = None
        self._with_events.move_to_end(trial_id)
        if len(self._with_events) > self.buffered_trials:
            self._evict()
        return trial

    def _evict(self) -> None:
        """Drop the buffered events of the oldest finished trial (its row stays)."""
        for trial_id in self._with_events:
            trial = self.trials.get(trial_id)
            if trial is None or trial.finished:
                del self._with_events[trial_id]
                if trial is not None:
                    trial.events.clear()
                return

    def _apply_one(self, event: Event, changes: Changes) -> None:
        kind, data = event.kind, event.data
        if kind == EventKind.BENCHMARK_STARTED:
            self.benchmark_id = event.benchmark_id
            self.total = int(data.get("total_trials") or data.get("total") or self.total)
            changes.benchmark_id = event.benchmark_id
            return
        if kind == EventKind.BENCHMARK_FINISHED:
            self.finished = True
            changes.benchmark_finished = True
            changes.benchmark_id = event.benchmark_id or self.benchmark_id
            return
        if not event.trial_id or kind == EventKind.REQUEST_SERVED:
            return
        trial = self._trial(event, changes)
        trial.events.append(event)
        changes.events.setdefault(trial.trial_id, []).append(event)
        if self._update_row(trial, kind, data):
            changes.rows.add(trial.trial_id)

    @staticmethod
    def _update_row(trial: TrialLive, kind: EventKind, data: dict[str, Any]) -> bool:
        """Fold one event into the trial's row; True when a shown column changed."""
        if kind == EventKind.TRIAL_STARTED:
            trial.arm = str(data.get("arm") or "")
            trial.index = int(data.get("trial_index") or 0)
            return True
        if kind == EventKind.ITERATION_STARTED and not data.get("agent"):  # nested agents have a label
            trial.iteration = int(data.get("iteration") or 0)
            return True
        if kind == EventKind.CONTROL_STATE:
            trial.control = str(data.get("state") or trial.control)
            return True
        if kind == EventKind.TOOL_CALL:
            trial.tool_calls += 1
            return False
        if kind == EventKind.INTERVENTION_APPLIED and data.get("source") == "inbox":
            trial.assisted = True
            return True
        if kind == EventKind.APPROVAL_DECIDED and data.get("decided_by") in ("user", "remote"):
            trial.assisted = True
            return True
        if kind == EventKind.TRIAL_FINISHED:
            trial.result = str(data.get("status") or "completed")
            trial.score = data.get("score")
            trial.assisted = bool(data.get("assisted")) or trial.assisted
            if data.get("iterations") is not None:
                trial.iteration = int(data["iterations"])
            return True
        return False
