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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import (
    Any,
    ClassVar,
    Generic,
    Literal,
    Protocol,
    TypeAlias,
    TypedDict,
    TypeVar,
    Union,
    get_args,
    runtime_checkable,
)

from corral_core.domain import Decider

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


# --- payloads: what `data` holds for each kind ---------------------------------------------------------
# One TypedDict per payload shape, bound to its kinds by the event classes below. At run time they are plain
# dicts. Keys are optional (total=False): emitters leave some out (a message without `name`, a trial not
# forked), readers use `.get`.


class BenchmarkStartedData(TypedDict, total=False):
    name: str
    spec_digest: str
    resumed: bool
    live_elsewhere: Any
    notices: list[str]
    parallel: int
    tasks: list[str]
    trials_per_task: int
    total_trials: int
    pending_trials: int
    arms: list[dict[str, Any]]  # per arm: name, total, done, score_sum, ...


class BenchmarkFinishedData(TypedDict, total=False):
    status: str
    headline_score: float | None
    previous_best: float | None
    attempt_status: str | None
    duration: float
    trials_run: int
    errored: int


class TrialStartedData(TypedDict, total=False):
    arm: str
    trial_index: int
    episode_id: str | None
    agent: str
    model: str
    verbosity: str
    parent_trial_id: str  # a fork's (runner/plan.py ForkPoint.started_data)
    fork_iteration: int
    assisted: bool  # a fork is assisted from its start


class TrialFinishedData(TypedDict, total=False):
    """A TrialResult's fields but trial_result.NOT_FINISHED, with their types, in wire order (FINISHED_KEYS is
    this order): TrialResult.finished_data() builds it. tests/core/test_trial_shapes.py keeps the two in step."""

    status: str
    score: float | None
    answer: str | None
    surrendered: bool
    error: str | None
    fault: str | None
    explanation: str | None
    iterations: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float | None
    duration: float | None
    tool_duration: float | None
    assisted: bool
    llm_retries: int
    llm_retry_wait: float
    rate_limit_wait: float
    arm: str
    trial_index: int
    episode_id: str | None


class TrialOpenedData(TypedDict, total=False):
    episode_id: str | None
    workspace: str | None
    meta: dict[str, Any]


class TrialClosedData(TypedDict, total=False):
    pass


class ToolCallData(TypedDict, total=False):
    """A tool call as the environment records it (env.records.ToolCall.to_dict), plus the agent's iteration."""

    tool_name: str
    arguments: dict[str, Any]
    result: Any
    status: str
    error_message: str | None
    duration: float | None
    timestamp: str
    risk: str | None
    approval: str | None
    render: str | None
    content: Any
    structured_content: Any
    fault: str
    iteration: int  # TOOL_CALL only
    seq: int  # a stored call's place among its trial's calls (store/convert.py tool_call_entry), never emitted


class ToolCallRequestedData(TypedDict, total=False):
    tool_name: str
    arguments: dict[str, Any]
    risk: str | None


class ApprovalAskedData(TypedDict, total=False):
    approval_id: str
    tool_name: str
    arguments: dict[str, Any]
    risk: str
    timeout: float | None


class ApprovalDecidedData(TypedDict, total=False):
    approval_id: str
    tool_name: str
    approved: bool
    decided_by: str  # ASSISTING_DECIDERS are a person
    reason: str | None


class RequestServedData(TypedDict, total=False):
    method: str
    path: str
    status: int
    latency_ms: float


class IterationStartedData(TypedDict, total=False):
    iteration: int
    agent: str  # a nested agent's label


class LLMRequestData(TypedDict, total=False):
    role: str | None
    turn: int
    digest: str | None
    n_messages: int
    model: str


class LLMResponseData(TypedDict, total=False):
    role: str | None
    turn: int
    digest: str | None
    content: str | None
    tool_calls: list[dict[str, Any]]
    usage: dict[str, int]
    cost: float | None
    duration: float | None
    model: str | None
    arm: str
    trial_index: int
    retries: int
    retry_wait: float
    rate_limit_wait: float
    n_messages: int


class MessageData(TypedDict, total=False):
    index: int
    role: str | None
    content: Any
    name: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    agent: str


class HookData(TypedDict, total=False):
    """HOOK_FIRED and HOOK_ERROR."""

    point: str
    hook: str
    iteration: int
    should_continue: bool
    skip_current_step: bool
    error: str  # HOOK_ERROR only


class InterventionData(TypedDict, total=False):
    """INTERVENTION_APPLIED and INTERVENTION_UNDELIVERED (with its `reason`)."""

    text: str
    source: str  # INBOX_SOURCE: a person sent it
    iteration: int
    reason: str


class ControlStateData(TypedDict, total=False):
    state: str
    iteration: int
    reason: str


class BreakpointHitData(TypedDict, total=False):
    breakpoint: str
    point: str
    reason: str
    iteration: int
    paused: bool
    tokens: int
    cost: float | None
    tool_name: str
    arguments: dict[str, Any]
    status: str


class AgentFinishedData(TypedDict, total=False):
    status: str
    answer: str | None
    error: str | None
    iterations: int
    usage: dict[str, int]
    cost: float | None


class StoreFailedData(TypedDict, total=False):
    error: str


class OwnershipLostData(TypedDict, total=False):
    pass


# --- events: one class per kind, its payload type bound to it --------------------------------------------
# `kind` is a class constant typed as its one EventKind member, so `if event.kind is EventKind.X:` (or
# `isinstance(event, XEvent)`) narrows an `Event` to XEvent and `event.data` to X's payload type: mypy checks
# every key an emitter writes (`XEvent(data=XData(...))`) and every key a reader reads. `data` is the plain
# dict it always was: the wire and the store see the same JSON, and an event costs no more to build.

P = TypeVar("P")


@dataclass(slots=True, kw_only=True)
class EventBase(Generic[P]):
    """One thing that happened, tied to a trial where it has one. Build the subclass of its kind.

    `trial_id` is the server's trial runtime id (``tr_...``) for trial-scoped events: it is the key
    that joins server, agent and runner events for one trial.
    """

    kind: ClassVar[EventKind]
    data: P
    trial_id: str | None = None
    task_id: str | None = None
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


@dataclass(slots=True, kw_only=True)
class BenchmarkStartedEvent(EventBase[BenchmarkStartedData]):
    kind: ClassVar[Literal[EventKind.BENCHMARK_STARTED]] = EventKind.BENCHMARK_STARTED


@dataclass(slots=True, kw_only=True)
class BenchmarkFinishedEvent(EventBase[BenchmarkFinishedData]):
    kind: ClassVar[Literal[EventKind.BENCHMARK_FINISHED]] = EventKind.BENCHMARK_FINISHED


@dataclass(slots=True, kw_only=True)
class TrialStartedEvent(EventBase[TrialStartedData]):
    kind: ClassVar[Literal[EventKind.TRIAL_STARTED]] = EventKind.TRIAL_STARTED


@dataclass(slots=True, kw_only=True)
class TrialFinishedEvent(EventBase[TrialFinishedData]):
    kind: ClassVar[Literal[EventKind.TRIAL_FINISHED]] = EventKind.TRIAL_FINISHED


@dataclass(slots=True, kw_only=True)
class TrialOpenedEvent(EventBase[TrialOpenedData]):
    kind: ClassVar[Literal[EventKind.TRIAL_OPENED]] = EventKind.TRIAL_OPENED


@dataclass(slots=True, kw_only=True)
class TrialClosedEvent(EventBase[TrialClosedData]):
    kind: ClassVar[Literal[EventKind.TRIAL_CLOSED]] = EventKind.TRIAL_CLOSED


@dataclass(slots=True, kw_only=True)
class ToolCallRequestedEvent(EventBase[ToolCallRequestedData]):
    kind: ClassVar[Literal[EventKind.TOOL_CALL_REQUESTED]] = EventKind.TOOL_CALL_REQUESTED


@dataclass(slots=True, kw_only=True)
class ApprovalAskedEvent(EventBase[ApprovalAskedData]):
    kind: ClassVar[Literal[EventKind.APPROVAL_ASKED]] = EventKind.APPROVAL_ASKED


@dataclass(slots=True, kw_only=True)
class ApprovalDecidedEvent(EventBase[ApprovalDecidedData]):
    kind: ClassVar[Literal[EventKind.APPROVAL_DECIDED]] = EventKind.APPROVAL_DECIDED


@dataclass(slots=True, kw_only=True)
class ToolCallExecutedEvent(EventBase[ToolCallData]):
    kind: ClassVar[Literal[EventKind.TOOL_CALL_EXECUTED]] = EventKind.TOOL_CALL_EXECUTED


@dataclass(slots=True, kw_only=True)
class RequestServedEvent(EventBase[RequestServedData]):
    kind: ClassVar[Literal[EventKind.REQUEST_SERVED]] = EventKind.REQUEST_SERVED


@dataclass(slots=True, kw_only=True)
class IterationStartedEvent(EventBase[IterationStartedData]):
    kind: ClassVar[Literal[EventKind.ITERATION_STARTED]] = EventKind.ITERATION_STARTED


@dataclass(slots=True, kw_only=True)
class LLMRequestEvent(EventBase[LLMRequestData]):
    kind: ClassVar[Literal[EventKind.LLM_REQUEST]] = EventKind.LLM_REQUEST


@dataclass(slots=True, kw_only=True)
class LLMResponseEvent(EventBase[LLMResponseData]):
    kind: ClassVar[Literal[EventKind.LLM_RESPONSE]] = EventKind.LLM_RESPONSE


@dataclass(slots=True, kw_only=True)
class MessageEvent(EventBase[MessageData]):
    kind: ClassVar[Literal[EventKind.MESSAGE]] = EventKind.MESSAGE


@dataclass(slots=True, kw_only=True)
class ToolCallEvent(EventBase[ToolCallData]):
    kind: ClassVar[Literal[EventKind.TOOL_CALL]] = EventKind.TOOL_CALL


@dataclass(slots=True, kw_only=True)
class HookFiredEvent(EventBase[HookData]):
    kind: ClassVar[Literal[EventKind.HOOK_FIRED]] = EventKind.HOOK_FIRED


@dataclass(slots=True, kw_only=True)
class HookErrorEvent(EventBase[HookData]):
    kind: ClassVar[Literal[EventKind.HOOK_ERROR]] = EventKind.HOOK_ERROR


@dataclass(slots=True, kw_only=True)
class InterventionAppliedEvent(EventBase[InterventionData]):
    kind: ClassVar[Literal[EventKind.INTERVENTION_APPLIED]] = EventKind.INTERVENTION_APPLIED


@dataclass(slots=True, kw_only=True)
class InterventionUndeliveredEvent(EventBase[InterventionData]):
    kind: ClassVar[Literal[EventKind.INTERVENTION_UNDELIVERED]] = EventKind.INTERVENTION_UNDELIVERED


@dataclass(slots=True, kw_only=True)
class ControlStateEvent(EventBase[ControlStateData]):
    kind: ClassVar[Literal[EventKind.CONTROL_STATE]] = EventKind.CONTROL_STATE


@dataclass(slots=True, kw_only=True)
class BreakpointHitEvent(EventBase[BreakpointHitData]):
    kind: ClassVar[Literal[EventKind.BREAKPOINT_HIT]] = EventKind.BREAKPOINT_HIT


@dataclass(slots=True, kw_only=True)
class AgentFinishedEvent(EventBase[AgentFinishedData]):
    kind: ClassVar[Literal[EventKind.AGENT_FINISHED]] = EventKind.AGENT_FINISHED


@dataclass(slots=True, kw_only=True)
class StoreFailedEvent(EventBase[StoreFailedData]):
    kind: ClassVar[Literal[EventKind.STORE_FAILED]] = EventKind.STORE_FAILED


@dataclass(slots=True, kw_only=True)
class OwnershipLostEvent(EventBase[OwnershipLostData]):
    kind: ClassVar[Literal[EventKind.OWNERSHIP_LOST]] = EventKind.OWNERSHIP_LOST


Event: TypeAlias = Union[  # noqa: UP007 (a `|` chain of 25 reads worse)
    BenchmarkStartedEvent,
    BenchmarkFinishedEvent,
    TrialStartedEvent,
    TrialFinishedEvent,
    TrialOpenedEvent,
    TrialClosedEvent,
    ToolCallRequestedEvent,
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    ToolCallExecutedEvent,
    RequestServedEvent,
    IterationStartedEvent,
    LLMRequestEvent,
    LLMResponseEvent,
    MessageEvent,
    ToolCallEvent,
    HookFiredEvent,
    HookErrorEvent,
    InterventionAppliedEvent,
    InterventionUndeliveredEvent,
    ControlStateEvent,
    BreakpointHitEvent,
    AgentFinishedEvent,
    StoreFailedEvent,
    OwnershipLostEvent,
]
EVENT_TYPES: dict[EventKind, type[Event]] = {event_type.kind: event_type for event_type in get_args(Event)}
PAYLOADS: dict[EventKind, type[Any]] = {  # each kind's payload type, as its class binds it
    kind: get_args(vars(event_type)["__orig_bases__"][0])[0] for kind, event_type in EVENT_TYPES.items()}


def event_from(kind: EventKind | str, trial_id: str | None = None, task_id: str | None = None,
               data: Mapping[str, Any] | None = None, benchmark_id: str | None = None,
               ts: float | None = None) -> Event:
    """The event of `kind` around `data` read back from JSON (a Dask worker's message, the store's rows): the one
    place a payload is taken on trust, because only this engine wrote it. An unknown kind raises ValueError."""
    payload: Any = {} if data is None else data
    event_type = EVENT_TYPES[EventKind(kind)]
    if ts is None:
        return event_type(data=payload, trial_id=trial_id, task_id=task_id, benchmark_id=benchmark_id)
    return event_type(data=payload, trial_id=trial_id, task_id=task_id, benchmark_id=benchmark_id, ts=ts)


# the store's timeline entries that are rows of their own table, and the kind of the event each was written from
_ENTRY_KINDS = {"message": EventKind.MESSAGE, "tool_call": EventKind.TOOL_CALL, "llm_call": EventKind.LLM_RESPONSE}


def stored_event(kind: str, data: dict[str, Any], trial_id: str | None = None, ts: float | None = None) -> Event | None:
    """The event a stored timeline entry of `kind` was written from (an LLM call's usage gathered back from its
    columns), or None when `kind` is no event's."""
    event_kind = _ENTRY_KINDS.get(kind)
    if event_kind is None:
        try:
            event_kind = EventKind(kind)
        except ValueError:
            return None
    if event_kind is EventKind.LLM_RESPONSE:
        data = {**data, "usage": {name: data.get(name) for name in ("prompt_tokens", "completion_tokens",
                                                                    "total_tokens")}}
    return event_from(event_kind, trial_id, data=data, ts=ts)


# The server's own telemetry (server/runtime.py emits it only when its host asks): the store, the workbench
# and batch read none of it.
TELEMETRY_KINDS = frozenset({EventKind.TRIAL_OPENED, EventKind.TRIAL_CLOSED, EventKind.TOOL_CALL_REQUESTED,
                             EventKind.TOOL_CALL_EXECUTED, EventKind.REQUEST_SERVED})


# Who touched a trial, as the events say: the one rule for "assisted" that the store, the runner and the
# workbench's live line all apply (a person's approval, or an intervention a person sent that reached it).
INBOX_SOURCE = "inbox"  # INTERVENTION_APPLIED/UNDELIVERED `source` of what a person sent
ASSISTING_DECIDERS = frozenset({Decider.USER, Decider.REMOTE})  # APPROVAL_DECIDED `decided_by` of a person


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


def emit_event(sink: EventSink | None, event: Event) -> None:
    """Emit `event`; a `None` sink is a no-op."""
    if sink is not None:
        sink.emit(event)


def combine(sinks: Iterable[EventSink | None]) -> EventSink:
    """One sink for many (skipping `None`s); a single sink is returned as is."""
    real = [s for s in sinks if s is not None]
    if not real:
        return NULL_SINK
    if len(real) == 1:
        return real[0]
    return EventBus(*real)
