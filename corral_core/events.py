"""The one event vocabulary of corral-tui.

Every part of the engine reports what happens as an `Event` sent to an `EventSink`: the server
(trials opened, tool calls requested, approvals asked and decided), the agents (iterations, LLM
calls, messages, tool calls, hooks, interventions) and the runner (benchmarks and trials). The
store writes these events, the TUI draws them, and batch mode prints them: nobody invents a
side channel.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

log = logging.getLogger(__name__)


class EventKind(str, Enum):
    """What happened. Grouped by who emits it."""

    # runner
    BENCHMARK_STARTED = "benchmark_started"
    BENCHMARK_FINISHED = "benchmark_finished"
    TRIAL_STARTED = "trial_started"
    TRIAL_FINISHED = "trial_finished"
    # server
    TRIAL_OPENED = "trial_opened"
    TRIAL_CLOSED = "trial_closed"
    TOOL_CALL_REQUESTED = "tool_call_requested"
    APPROVAL_ASKED = "approval_asked"
    APPROVAL_DECIDED = "approval_decided"
    TOOL_CALL_EXECUTED = "tool_call_executed"
    REQUEST_SERVED = "request_served"
    # agents
    ITERATION_STARTED = "iteration_started"
    LLM_REQUEST = "llm_request"
    LLM_RESPONSE = "llm_response"
    MESSAGE = "message"
    TOOL_CALL = "tool_call"
    HOOK_FIRED = "hook_fired"
    HOOK_ERROR = "hook_error"
    INTERVENTION_APPLIED = "intervention_applied"
    INTERVENTION_UNDELIVERED = "intervention_undelivered"  # the trial ended before the message reached it
    CONTROL_STATE = "control_state"
    BREAKPOINT_HIT = "breakpoint_hit"  # a breakpoint's condition held (agents/breakpoints.py); paused or recorded
    AGENT_FINISHED = "agent_finished"
    # store (emitted by the runner when the store writer reports that the database refused writes)
    STORE_FAILED = "store_failed"
    # another process claimed the run's benchmark (its fencing token changed): the run stopped (ownership.py)
    OWNERSHIP_LOST = "ownership_lost"


@dataclass(slots=True)
class Event:
    """One thing that happened, tied to a trial where it has one.

    `trial_id` is the server's trial runtime id (``tr_...``) for trial-scoped events: it is the key
    that joins server, agent and runner events for one trial.
    """

    kind: EventKind
    trial_id: str | None = None
    task_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    benchmark_id: str | None = None
    ts: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "trial_id": self.trial_id,
            "task_id": self.task_id,
            "benchmark_id": self.benchmark_id,
            "ts": self.ts,
            "data": self.data,
        }


# Who touched a trial, as the events say: the one rule for "assisted" that the store, the runner and the
# workbench's live line all apply (a person's approval, or an intervention a person sent that reached it).
INBOX_SOURCE = "inbox"  # INTERVENTION_APPLIED/UNDELIVERED `source` of what a person sent
ASSISTING_DECIDERS = frozenset({"user", "remote"})  # APPROVAL_DECIDED `decided_by` of a person


def marks_assisted(event: Event) -> bool:
    """A person touched the trial: a human/remote approval or an intervention from the live inbox."""
    if event.kind is EventKind.APPROVAL_DECIDED:
        return event.data.get("decided_by") in ASSISTING_DECIDERS
    if event.kind is EventKind.INTERVENTION_APPLIED:
        return event.data.get("source") == INBOX_SOURCE
    return False


@runtime_checkable
class EventSink(Protocol):
    """Receives events. `emit` must be cheap, thread-safe and must never raise."""

    def emit(self, event: Event) -> None: ...


class NullSink:
    """Discards every event."""

    def emit(self, event: Event) -> None:
        return None


NULL_SINK = NullSink()


class EventBus:
    """Fans one event out to several sinks; a failing sink is logged and skipped."""

    def __init__(self, *sinks: EventSink) -> None:
        self._sinks: tuple[EventSink, ...] = tuple(sinks)
        self._lock = threading.Lock()

    def add(self, sink: EventSink) -> None:
        with self._lock:
            self._sinks = (*self._sinks, sink)

    def remove(self, sink: EventSink) -> None:
        with self._lock:
            self._sinks = tuple(s for s in self._sinks if s is not sink)

    def emit(self, event: Event) -> None:
        for sink in self._sinks:  # the tuple is replaced, never mutated: no lock needed to read
            try:
                sink.emit(event)
            except Exception:  # a broken sink must not break the engine
                log.exception("event sink %r failed on %s", sink, event.kind)


class QueueSink:
    """A bounded queue of events for a consumer that drains it in batches (the TUI, batch progress).

    When the consumer falls behind, the oldest events are dropped and counted, so a flood can never
    exhaust memory or block the emitting thread.
    """

    def __init__(self, maxsize: int = 10_000) -> None:
        self._queue: queue.Queue[Event] = queue.Queue(maxsize=maxsize)
        self.dropped = 0

    def emit(self, event: Event) -> None:
        while True:
            try:
                self._queue.put_nowait(event)
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    self.dropped += 1
                except queue.Empty:
                    pass

    def drain(self, max_items: int = 1_000) -> list[Event]:
        """Return up to `max_items` queued events, oldest first, without blocking."""
        items: list[Event] = []
        while len(items) < max_items:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return items

    def get(self, timeout: float | None = None) -> Event | None:
        """Block up to `timeout` seconds for one event."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def __len__(self) -> int:
        return self._queue.qsize()


class ListSink:
    """Keeps every event in a list. For tests and small scripts."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def of_kind(self, *kinds: EventKind) -> list[Event]:
        with self._lock:
            return [e for e in self.events if e.kind in kinds]


def emit_event(
    sink: EventSink | None,
    kind: EventKind,
    *,
    trial_id: str | None = None,
    task_id: str | None = None,
    benchmark_id: str | None = None,
    **data: Any,
) -> None:
    """Build and emit an event in one call; a `None` sink is a no-op."""
    if sink is None:
        return
    sink.emit(Event(kind, trial_id=trial_id, task_id=task_id, data=data, benchmark_id=benchmark_id))


def combine(sinks: Iterable[EventSink | None]) -> EventSink:
    """One sink for many (skipping `None`s); a single sink is returned as is."""
    real = [s for s in sinks if s is not None]
    if not real:
        return NULL_SINK
    if len(real) == 1:
        return real[0]
    return EventBus(*real)
