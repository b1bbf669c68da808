"""How each event kind becomes a row: pure functions from `Event` to column dicts.

Values from event data are coerced defensively (an emitter's odd type must cost one field, not a
batch of rows).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from corral_core.domain import TrialStatus
from corral_core.events import (
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    BreakpointHitEvent,
    ControlStateEvent,
    Event,
    HookErrorEvent,
    HookFiredEvent,
    InterventionAppliedEvent,
    InterventionUndeliveredEvent,
    IterationStartedEvent,
    LLMRequestEvent,
    LLMResponseEvent,
    MessageEvent,
    ToolCallEvent,
    TrialFinishedEvent,
    TrialStartedEvent,
)
from corral_core.store.convert import dumps

# the events stored as hook_event rows, their payload JSON whole (data_json)
HookEvent = (HookFiredEvent | HookErrorEvent | InterventionAppliedEvent | InterventionUndeliveredEvent
             | ApprovalAskedEvent | ApprovalDecidedEvent | ControlStateEvent | BreakpointHitEvent
             | IterationStartedEvent)
HOOK_EVENT_TYPES: tuple[type[HookEvent], ...] = (
    HookFiredEvent, HookErrorEvent, InterventionAppliedEvent, InterventionUndeliveredEvent, ApprovalAskedEvent,
    ApprovalDecidedEvent, ControlStateEvent, BreakpointHitEvent, IterationStartedEvent)
HOOK_EVENT_KINDS = frozenset(event_type.kind for event_type in HOOK_EVENT_TYPES)


def event_time(event: Event) -> datetime:
    return datetime.fromtimestamp(event.ts, UTC)


def as_int(value: Any, default: int = 0) -> int:
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def as_float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        return dumps(value)
    return str(value)


def trial_started_values(event: TrialStartedEvent | TrialFinishedEvent) -> dict[str, Any]:
    """The trial row of a TRIAL_STARTED, or of a TRIAL_FINISHED whose start never came (its arm, index, episode)."""
    data = event.data
    return {
        "id": event.trial_id,
        "benchmark_id": event.benchmark_id,
        "arm": as_text(data.get("arm")) or "",
        "task_id": event.task_id or "",
        "trial_index": as_int(data.get("trial_index")),
        "episode_id": as_text(data.get("episode_id")),
        "agent": as_text(data.get("agent")),
        "model": as_text(data.get("model")),
        "verbosity": as_text(data.get("verbosity")),
        "status": TrialStatus.RUNNING,
        "score": None,
        "answer": None,
        "explanation": None,
        "surrendered": False,
        "error": None,
        "fault": None,  # a trial that starts again under its id has no fault yet
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
        "cost": None,
        "duration": None,
        "tool_duration": None,
        "iterations": 0,
        "assisted": bool(data.get("assisted")),  # a fork is assisted from its start
        "started_at": event_time(event),
        "finished_at": None,
        "parent_trial_id": as_text(data.get("parent_trial_id")),
        "fork_iteration": None if data.get("fork_iteration") is None else as_int(data.get("fork_iteration")),
        "llm_retries": 0,
        "llm_retry_wait": 0.0,
        "rate_limit_wait": 0.0,
    }


def trial_finished_values(event: TrialFinishedEvent) -> dict[str, Any]:
    """Columns a TRIAL_FINISHED event sets (`assisted` is OR-ed in by the writer)."""
    data = event.data
    return {
        "status": as_text(data.get("status")) or TrialStatus.COMPLETED,
        "score": as_float(data.get("score")),
        "answer": as_text(data.get("answer")),
        "explanation": as_text(data.get("explanation")),
        "surrendered": bool(data.get("surrendered")),
        "error": as_text(data.get("error")),
        "fault": as_text(data.get("fault")),
        "prompt_tokens": as_int(data.get("prompt_tokens")),
        "completion_tokens": as_int(data.get("completion_tokens")),
        "total_tokens": as_int(data.get("total_tokens")),
        "cost": as_float(data.get("cost")),
        "duration": as_float(data.get("duration")),
        "tool_duration": as_float(data.get("tool_duration")),
        "iterations": as_int(data.get("iterations")),
        "llm_retries": as_int(data.get("llm_retries")),
        "llm_retry_wait": as_float(data.get("llm_retry_wait")) or 0.0,
        "rate_limit_wait": as_float(data.get("rate_limit_wait")) or 0.0,
        "finished_at": event_time(event),
    }


def message_row(event: MessageEvent) -> dict[str, Any]:
    data = event.data
    tool_calls = data.get("tool_calls")
    return {
        "trial_id": event.trial_id,
        "index": as_int(data.get("index")),
        "role": as_text(data.get("role")) or "",
        "content": as_text(data.get("content")),
        "name": as_text(data.get("name")),
        "tool_calls_json": dumps(tool_calls) if tool_calls else None,
        "tool_call_id": as_text(data.get("tool_call_id")),
        "ts": event_time(event),
    }


def tool_call_row(event: ToolCallEvent, seq: int) -> dict[str, Any]:
    data = event.data
    return {
        "trial_id": event.trial_id,
        "seq": seq,
        "tool_name": as_text(data.get("tool_name")) or "",
        "arguments_json": dumps(data.get("arguments", {})),
        "result": as_text(data.get("result")),
        "status": as_text(data.get("status")) or "",
        "error_message": as_text(data.get("error_message")),
        "risk": as_text(data.get("risk")),
        "approval": as_text(data.get("approval")),
        "render": as_text(data.get("render")),
        "duration": as_float(data.get("duration")),
        "iteration": as_int(data["iteration"]) if data.get("iteration") is not None else None,
        "ts": event_time(event),
    }


def hook_event_row(event: HookEvent) -> dict[str, Any]:
    data = event.data
    kind = event.kind
    name: str | None = None
    if isinstance(event, HookFiredEvent | HookErrorEvent):
        name = event.data.get("hook")
    elif isinstance(event, ApprovalAskedEvent | ApprovalDecidedEvent):
        name = event.data.get("tool_name")
    elif isinstance(event, InterventionAppliedEvent | InterventionUndeliveredEvent):
        name = event.data.get("source")
    elif isinstance(event, ControlStateEvent):
        name = event.data.get("state")
    elif isinstance(event, BreakpointHitEvent):
        name = event.data.get("breakpoint")
    iteration = data.get("iteration")
    return {
        "trial_id": event.trial_id,
        "kind": kind.value,
        "point": as_text(data.get("point")),
        "name": as_text(name),
        "iteration": as_int(iteration) if iteration is not None else None,
        "data_json": dumps(data),
        "ts": event_time(event),
    }


def llm_call_row(event: LLMResponseEvent, request_messages_n: int | None) -> dict[str, Any]:
    data = event.data
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    tool_calls = data.get("tool_calls") or []
    n = data.get("n_messages", request_messages_n)
    return {
        "trial_id": event.trial_id,
        "benchmark_id": event.benchmark_id,
        "arm": as_text(data.get("arm")) or "",
        "task_id": event.task_id,
        "trial_index": as_int(data.get("trial_index")),
        "role": as_text(data.get("role")) or "agent",
        "turn": as_int(data.get("turn")),
        "digest": as_text(data.get("digest")),
        "request_messages_n": as_int(n) if n is not None else None,
        "content": as_text(data.get("content")),
        "tool_calls_json": dumps(tool_calls),
        "prompt_tokens": as_int(usage.get("prompt_tokens")),
        "completion_tokens": as_int(usage.get("completion_tokens")),
        "total_tokens": as_int(usage.get("total_tokens")),
        "cost": as_float(data.get("cost")),
        "duration": as_float(data.get("duration")),
        "model": as_text(data.get("model")),
        "ts": event_time(event),
    }


def llm_request_key(event: LLMRequestEvent | LLMResponseEvent) -> tuple[Any, ...]:
    """Joins an LLM_REQUEST (which knows the message count) to its LLM_RESPONSE."""
    data = event.data
    return (event.trial_id, data.get("role"), data.get("turn"), data.get("digest"))
