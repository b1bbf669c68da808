"""What the workbench knows about the run in progress, built from batches of engine events.

`LiveRun.apply(events)` folds one drained batch into per-trial rows (status, iteration, score,
tokens, cost, timing, last action) and bounded per-trial event buffers and returns a `Changes`
summary, so the screen redraws only the rows and panes that moved. Pure Python (no widgets), so it
is cheap to test and safe to call once per UI tick. Iterations are numbered from 1 everywhere the
UI shows them (the events count from 0).
"""

from __future__ import annotations

import math
import re
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field

from corral_core.domain import AgentStatus, ControlState, ToolStatus, TrialStatus
from corral_core.events import (
    BreakpointHitEvent,
    Event,
    EventKind,
    TrialFinishedData,
    marks_assisted,
)
from corral_core.trial_result import TrialResult

BUFFERED_TRIALS = 24  # finished trials whose recent events stay for the panes (the store has them all)
_THOUGHT = re.compile(r"<thought>(.*?)</thought>", re.DOTALL | re.IGNORECASE)
_STATUS_MARKS: dict[str, str] = {  # else ✗
    ToolStatus.SUCCESS: "✓", ToolStatus.REJECTED: "✗ rejected", ToolStatus.BLOCKED: "✗ blocked"}


@dataclass
class TrialLive:
    """One trial's row in the trials table, plus its most recent events."""

    trial_id: str
    task_id: str
    number: int  # display order (1-based)
    arm: str = ""
    index: int = 0  # the trial's 0-based index within its task (shown counted from 1)
    model: str = ""  # the model that runs it (TRIAL_STARTED)
    control: str = ControlState.RUNNING  # running | paused | stepping | cancelled (the run controls)
    result: str | None = None  # TRIAL_FINISHED status once the trial ended
    iteration: int = 0  # iterations started (1-based number of the current one)
    score: float | None = None
    assisted: bool = False
    tool_calls: int = 0
    tokens: int = 0
    cost: float | None = None
    started: float | None = None  # event time of TRIAL_STARTED
    paused_since: float | None = None  # event time of the CONTROL_STATE `paused` it waits at, if any
    paused_for: float = 0.0  # seconds spent paused before that (left out of its time, as from its duration)
    duration: float | None = None  # the trial's duration once finished (paused time left out)
    last_action: str = ""
    last_thought: str = ""
    held_by: str = ""  # the breakpoint hit the trial is paused at ("tool:calculator: about to call ..."), if any
    record: TrialResult | None = None  # the metrics record once finished
    events: deque[Event] = field(default_factory=deque)

    @property
    def status(self) -> str:
        """What the status column shows: the final status, or the control state while running."""
        return self.result or self.control

    @property
    def finished(self) -> bool:
        return self.result is not None

    def elapsed(self, now: float) -> float | None:
        """Seconds the trial has run, paused time left out (its duration once finished)."""
        if self.duration is not None:
            return self.duration
        if self.started is None:
            return None
        until = now if self.paused_since is None else min(now, self.paused_since)
        return max(0.0, until - self.started - self.paused_for)


@dataclass(frozen=True)
class ArmScore:
    """An arm's mean score so far (mean over tasks of task means, unassisted trials) with its 95% CI, the
    interval's method (over tasks, or over one task's trials), and its errored trials by fault."""

    arm: str
    value: float | None
    ci: tuple[float, float] | None
    n_tasks: int
    n_trials: int
    method: str = ""
    errors_by_fault: dict[str, int] = field(default_factory=dict)

    @property
    def n_errored(self) -> int:
        return sum(self.errors_by_fault.values())


@dataclass
class Changes:
    """What one batch changed."""

    rows: set[str] = field(default_factory=set)  # trial ids whose row changed
    new_rows: list[str] = field(default_factory=list)  # trial ids seen for the first time
    events: dict[str, list[Event]] = field(default_factory=dict)  # new events per trial
    undelivered: list[tuple[str, str]] = field(default_factory=list)  # (trial id, text) never delivered
    breakpoints: list[BreakpointHitEvent] = field(default_factory=list)  # BREAKPOINT_HIT events of this batch
    finished: int = 0  # trials that ended in this batch
    benchmark_finished: bool = False
    benchmark_id: str | None = None

    def __bool__(self) -> bool:
        return bool(self.rows or self.new_rows or self.events or self.undelivered or self.benchmark_finished)


class LiveRun:
    """The trials of the current run, keyed by trial id, in the order they appeared."""

    def __init__(self, buffer: int = 1_000, buffered_trials: int = BUFFERED_TRIALS) -> None:
        self.buffer = buffer
        self.buffered_trials = buffered_trials
        self.trials: dict[str, TrialLive] = {}
        self._with_events: OrderedDict[str, None] = OrderedDict()  # trials holding events, least recent first
        self._finished_with_events: OrderedDict[str, None] = OrderedDict()  # the finished ones: evictable
        self.benchmark_id: str | None = None
        self.total = 0
        self.finished = False
        self.started: float | None = None  # event time of BENCHMARK_STARTED
        self.requested: float | None = None  # when the person asked for the run (cluster start-up included)
        self.ended: float | None = None
        self.done = 0
        self.undelivered: list[tuple[str, str]] = []  # (trial id, text) of interventions never delivered
        self.events_seen = 0

    def reset(self, total: int = 0) -> None:
        """Forget the previous run (a new one is starting)."""
        self.trials.clear()
        self._with_events.clear()
        self._finished_with_events.clear()
        self.benchmark_id = None
        self.total = total
        self.finished = False
        self.started = self.ended = self.requested = None
        self.done = 0
        self.undelivered = []

    def ordered(self) -> list[TrialLive]:
        return list(self.trials.values())

    def running(self) -> list[TrialLive]:
        return [trial for trial in self.trials.values() if not trial.finished]

    def apply(self, events: list[Event]) -> Changes:
        changes = Changes()
        for event in events:
            self.events_seen += 1
            self._apply_one(event, changes)
        return changes

    # --- the run as a whole -----------------------------------------------------------------------

    def elapsed(self, now: float) -> float | None:
        """Seconds since the run was asked for (its start-up included: a Dask cluster can take long),
        else since the benchmark started."""
        since = self.requested if self.requested is not None else self.started
        if since is None:
            return None
        return max(0.0, (self.ended if self.ended is not None else now) - since)

    def _running_for(self, now: float) -> float | None:
        """Seconds since the benchmark started (the pace of its trials: what the ETA is based on)."""
        if self.started is None:
            return None
        return max(0.0, (self.ended if self.ended is not None else now) - self.started)

    def eta(self, now: float) -> float | None:
        """Seconds left at the pace of the trials finished so far (None before the first one ends)."""
        elapsed = self._running_for(now)
        if elapsed is None or not self.done or self.finished or self.total <= self.done:
            return None
        return elapsed / self.done * (self.total - self.done)

    def arm_scores(self) -> list[ArmScore]:
        """Each arm's mean score so far, as the final metrics will compute it (corral_core.metrics)."""
        by_arm: dict[str, list[TrialResult]] = {}
        for trial in self.trials.values():
            if trial.record is not None:
                by_arm.setdefault(trial.arm, []).append(trial.record)
        if not by_arm:
            return []
        from corral_core.metrics import arm_metrics, fault_of, is_attempted  # with the first finished trial

        scores = []
        for arm, records in by_arm.items():
            metrics = arm_metrics(records, [1])
            estimate = metrics.average_score
            faults = Counter(fault for record in records if is_attempted(record) and (fault := fault_of(record)))
            scores.append(ArmScore(arm, estimate.value, estimate.ci, metrics.n_tasks, metrics.n_trials,
                                   estimate.method, dict(sorted(faults.items()))))
        return scores

    def totals(self) -> tuple[int, float | None]:
        """The run's tokens and cost so far, over every trial (None: no trial knows its cost)."""
        tokens, costs = 0, [trial.cost for trial in self.trials.values() if trial.cost is not None]
        for trial in self.trials.values():
            tokens += trial.tokens
        return tokens, (math.fsum(costs) if costs else None)

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
        if trial.finished:  # (a late event of a finished trial, maybe one that gave its events up)
            self._finished_with_events[trial_id] = None
            self._finished_with_events.move_to_end(trial_id)
        if len(self._with_events) > self.buffered_trials and self._finished_with_events:
            self._evict()
        return trial

    def _evict(self) -> None:
        """Drop the buffered events of the least recently active finished trial (its row stays; the store
        has them). Running trials keep theirs: with more of them in flight than `buffered_trials`, this
        is asked on every event, so it must not look at them (it walked them all: O(trials) per event)."""
        trial_id, _ = self._finished_with_events.popitem(last=False)
        del self._with_events[trial_id]
        trial = self.trials.get(trial_id)
        if trial is not None:
            trial.events.clear()

    def _apply_one(self, event: Event, changes: Changes) -> None:
        if event.kind is EventKind.BENCHMARK_STARTED:
            started = event.data
            self.benchmark_id = event.benchmark_id
            self.started = event.ts
            self.total = int(started.get("total_trials") or self.total)
            pending = started.get("pending_trials")
            self.done = self.total - int(pending) if pending is not None else 0  # resumed trials count
            changes.benchmark_id = event.benchmark_id
            return
        if event.kind is EventKind.BENCHMARK_FINISHED:
            self.finished = True
            self.ended = event.ts
            changes.benchmark_finished = True
            changes.benchmark_id = event.benchmark_id or self.benchmark_id
            return
        if not event.trial_id or event.kind is EventKind.REQUEST_SERVED:
            return
        trial = self._trial(event, changes)
        trial.events.append(event)
        changes.events.setdefault(trial.trial_id, []).append(event)
        if event.kind is EventKind.INTERVENTION_UNDELIVERED:
            changes.undelivered.append((trial.trial_id, str(event.data.get("text") or "")))
            self.undelivered.append(changes.undelivered[-1])
        if event.kind is EventKind.BREAKPOINT_HIT:
            changes.breakpoints.append(event)
        if event.kind is EventKind.TRIAL_FINISHED and not trial.finished:
            self.done += 1
            changes.finished += 1
            self._finished_with_events[trial.trial_id] = None
        if _update_row(trial, event):
            changes.rows.add(trial.trial_id)


def _update_row(trial: TrialLive, event: Event) -> bool:
    """Fold one event into the trial's row; True when a shown column changed."""
    if event.kind is EventKind.TRIAL_STARTED:
        started = event.data
        trial.arm = str(started.get("arm") or "")
        trial.index = int(started.get("trial_index") or 0)
        trial.model = str(started.get("model") or "")
        trial.started = event.ts
        return True
    if event.kind is EventKind.ITERATION_STARTED:
        iteration = event.data
        if iteration.get("agent"):  # a nested agent's iteration (planner executor): not the trial's count
            return False
        trial.iteration = int(iteration.get("iteration") or 0) + 1
        trial.last_action = f"iteration {trial.iteration}"
        return True
    if event.kind is EventKind.LLM_RESPONSE:
        response = event.data
        usage = response.get("usage") or {}
        trial.tokens += int(usage.get("total_tokens") or 0)
        cost = response.get("cost")
        if cost is not None:
            trial.cost = (trial.cost or 0.0) + float(cost)
        trial.last_action = "llm replied" if not response.get("tool_calls") else "llm → tool call"
        return True
    if event.kind is EventKind.MESSAGE:
        message = event.data
        if message.get("role") == "assistant" and message.get("content"):
            trial.last_thought = _thought(str(message["content"]))
        return False
    if event.kind is EventKind.CONTROL_STATE:
        trial.control = str(event.data.get("state") or trial.control)
        if trial.control != ControlState.PAUSED:
            trial.held_by = ""
        _count_pause(trial, event.ts)
        return True
    if event.kind is EventKind.BREAKPOINT_HIT:
        hit = event.data
        trial.last_action = f"breakpoint {hit.get('breakpoint')}"
        if hit.get("paused"):  # its CONTROL_STATE follows at once; say it now
            trial.control, trial.held_by = ControlState.PAUSED, f"{hit.get('breakpoint')}: {hit.get('reason')}"
        return True
    if event.kind is EventKind.TOOL_CALL:
        call = event.data
        trial.tool_calls += 1
        status = str(call.get("status") or "")
        trial.last_action = f"{call.get('tool_name')} {_STATUS_MARKS.get(status, '✗')}"
        return True
    if event.kind is EventKind.APPROVAL_ASKED:
        trial.last_action = f"asks: {event.data.get('tool_name')}"
        return True
    if marks_assisted(event):  # the engine's one rule: what the store marks, the live line leaves out
        trial.assisted = True
        if event.kind is EventKind.INTERVENTION_APPLIED:
            trial.last_action = "intervention read"
        return True
    if event.kind is EventKind.AGENT_FINISHED:
        state = event.data.get("status")
        trial.last_action = AgentStatus.ANSWERED if state == AgentStatus.ANSWERED else str(state or "")
        return True
    if event.kind is EventKind.TRIAL_FINISHED:
        _finish_row(trial, event.data)
        return True
    return False


def _finish_row(trial: TrialLive, data: TrialFinishedData) -> None:
    trial.result = str(data.get("status") or TrialStatus.COMPLETED)
    trial.score = data.get("score")
    trial.assisted = bool(data.get("assisted")) or trial.assisted
    iterations, tokens, cost = data.get("iterations"), data.get("total_tokens"), data.get("cost")
    if iterations is not None:
        trial.iteration = int(iterations)
    if tokens is not None:
        trial.tokens = int(tokens)
    if cost is not None:
        trial.cost = float(cost)
    trial.duration = data.get("duration")
    trial.record = TrialResult.from_mapping({**data, "task_id": trial.task_id, "arm": trial.arm,
                                             "assisted": trial.assisted, "tool_calls": []})


def _count_pause(trial: TrialLive, ts: float) -> None:
    """Start or end the pause the trial's control state says it is in (paused time is not trial time)."""
    if trial.control == ControlState.PAUSED:
        if trial.paused_since is None:
            trial.paused_since = ts
    elif trial.paused_since is not None:
        trial.paused_for += max(0.0, ts - trial.paused_since)
        trial.paused_since = None


def _thought(content: str) -> str:
    """The model's last thought in a reply: its <thought> part, else the reply's text."""
    found = _THOUGHT.findall(content)
    text = found[-1] if found else content
    return " ".join(text.split())
