"""How each event kind becomes a row: pure functions from `Event` to column dicts.

Values from event data are coerced defensively (an emitter's odd type must cost one field, not a
batch of rows).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from corral_core.domain import TrialStatus
from corral_core.events import (
    ApprovalAskedData,
    ApprovalDecidedData,
    BreakpointHitData,
    ControlStateData,
    Event,
    EventKind,
    HookData,
    InterventionData,
    LLMRequestData,
    LLMResponseData,
    MessageData,
    ToolCallData,
    TrialFinishedData,
    TrialStartedData,
    payload,
)
from corral_core.store.convert import dumps

HOOK_EVENT_KINDS = frozenset(
    {
        EventKind.HOOK_FIRED,
        EventKind.HOOK_ERROR,
        EventKind.INTERVENTION_APPLIED,
        EventKind.INTERVENTION_UNDELIVERED,
        EventKind.APPROVAL_ASKED,
        EventKind.APPROVAL_DECIDED,
        EventKind.CONTROL_STATE,
        EventKind.BREAKPOINT_HIT,
        EventKind.ITERATION_STARTED,
    }
)


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


def trial_started_values(event: Event) -> dict[str, Any]:
    data = payload(event, TrialStartedData)
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


def trial_finished_values(event: Event) -> dict[str, Any]:
    """Columns a TRIAL_FINISHED event sets (`assisted` is OR-ed in by the writer)."""
    data = payload(event, TrialFinishedData)
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


def message_row(event: Event) -> dict[str, Any]:
    data = payload(event, MessageData)
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


def tool_call_row(event: Event, seq: int) -> dict[str, Any]:
    data = payload(event, ToolCallData)
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


def hook_event_row(event: Event) -> dict[str, Any]:
    data = event.data
    kind = event.kind
    name: str | None = None
    if kind in (EventKind.HOOK_FIRED, EventKind.HOOK_ERROR):
        name = payload(event, HookData).get("hook")
    elif kind is EventKind.APPROVAL_ASKED:
        name = payload(event, ApprovalAskedData).get("tool_name")
    elif kind is EventKind.APPROVAL_DECIDED:
        name = payload(event, ApprovalDecidedData).get("tool_name")
    elif kind in (EventKind.INTERVENTION_APPLIED, EventKind.INTERVENTION_UNDELIVERED):
        name = payload(event, InterventionData).get("source")
    elif kind is EventKind.CONTROL_STATE:
        name = payload(event, ControlStateData).get("state")
    elif kind is EventKind.BREAKPOINT_HIT:
        name = payload(event, BreakpointHitData).get("breakpoint")
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


def llm_call_row(event: Event, request_messages_n: int | None) -> dict[str, Any]:
    data = payload(event, LLMResponseData)
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


def llm_request_key(event: Event) -> tuple[Any, ...]:
    """Joins an LLM_REQUEST (which knows the message count) to its LLM_RESPONSE."""
    data = payload(event, LLMRequestData)
    return (event.trial_id, data.get("role"), data.get("turn"), data.get("digest"))
