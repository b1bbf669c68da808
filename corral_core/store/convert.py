"""Converters from stored rows (SQLAlchemy row mappings) to the plain objects in models.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from sqlalchemy import RowMapping

from corral_core import safetext
from corral_core.domain import Decider
from corral_core.events import EventKind, stored_event
from corral_core.llm.types import shown_turn
from corral_core.store.models import (
    ArmInfo,
    BenchmarkInfo,
    ChainOutputInfo,
    LLMCallInfo,
    TimelineEntry,
    TrialInfo,
)
from corral_core.trial_result import RECORD_COLUMNS, TrialResult, build_record

log = logging.getLogger(__name__)

SUMMARY_WIDTH = 120

# A query result's row, or a plain dict of the same columns (a benchmark just written).
StoredRow = RowMapping | Mapping[str, Any]


def loads(text: str | None, default: Any) -> Any:
    """Parse a JSON column; a damaged value reads as `default` instead of breaking a screen."""
    if text is None or text == "":
        return default
    try:
        return json.loads(text)
    except ValueError:
        log.warning("unreadable JSON in the store: %.80r", text)
        return default


def dumps(value: Any) -> str | None:
    """JSON text for a column; values JSON cannot hold are stored by their str()."""
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, default=str)


def clip(text: Any, width: int = SUMMARY_WIDTH) -> str:
    """A timeline summary: one line of at most `width` characters (`corral_core.safetext.clip`)."""
    return safetext.clip(text, width, one_line=True)


def benchmark_from_row(row: StoredRow, trial_count: int = 0, finished_count: int = 0, errored_count: int = 0,
                       total_tokens: int = 0, cost_total: float | None = None) -> BenchmarkInfo:
    arms = [
        ArmInfo(
            name=str(a.get("name", "")),
            verbosity=a.get("verbosity"),
            model=a.get("model"),
            agent=a.get("agent"),
        )
        for a in loads(row["arms_json"], [])
        if isinstance(a, dict)
    ]
    return BenchmarkInfo(
        id=row["id"],
        spec_name=row["spec_name"],
        spec_digest=row["spec_digest"],
        spec_yaml=row["spec_yaml"] or "",
        suites=[str(s) for s in loads(row["suites_json"], [])],
        agent=row["agent"],
        model=row["model"],
        arms=arms,
        trials_per_task=row["trials_per_task"],
        status=row["status"],
        headline_score=row["headline_score"],
        attempt_status=row["attempt_status"],
        created_at=row["created_at"],
        finished_at=row["finished_at"],
        metrics=loads(row["metrics_json"], None),
        trial_count=trial_count,
        finished_count=finished_count,
        errored_count=errored_count,
        total_tokens=total_tokens,
        cost_total=cost_total,
        owner_pid=row.get("owner_pid"),
        owner_host=row.get("owner_host"),
        heartbeat_at=row.get("heartbeat_at"),
        owner_token=row.get("owner_token"),
    )


_TRIAL_FIELDS = tuple(f.name for f in fields(TrialInfo))


def trial_from_row(row: StoredRow) -> TrialInfo:
    values = {name: row[name] for name in _TRIAL_FIELDS}
    values["surrendered"] = bool(values["surrendered"])
    values["assisted"] = bool(values["assisted"])
    return TrialInfo(**values)


TRIAL_COLUMNS = _TRIAL_FIELDS  # select these, in this order, for trial_from_values
_SURRENDERED, _ASSISTED = _TRIAL_FIELDS.index("surrendered"), _TRIAL_FIELDS.index("assisted")


def trial_from_values(values: Sequence[Any]) -> TrialInfo:
    """`trial_from_row` for a row of TRIAL_COLUMNS in order (by position: no lookup by name)."""
    info = TrialInfo(*values)
    info.surrendered = bool(values[_SURRENDERED])
    info.assisted = bool(values[_ASSISTED])
    return info


# The columns a metrics record is read from, `id` first (trial_result.RECORD_COLUMNS: derived from TrialResult's
# declaration, as is the builder below).
TRIAL_RECORD_COLUMNS = RECORD_COLUMNS


def trial_record_from_values(values: Sequence[Any], tool_calls: list[dict[str, Any]] | None = None) -> TrialResult:
    """The TrialResult of a row of TRIAL_RECORD_COLUMNS in order, with its tool calls (trial_result.build_record)."""
    record: TrialResult = build_record(values, tool_calls=tool_calls)
    return record


def trial_record_from_row(row: StoredRow) -> TrialResult:
    return trial_record_from_values([row[name] for name in TRIAL_RECORD_COLUMNS])


def llm_call_from_row(row: StoredRow) -> LLMCallInfo:
    return LLMCallInfo(
        content=row["content"],
        tool_calls=loads(row["tool_calls_json"], []),
        usage={
            "prompt_tokens": row["prompt_tokens"],
            "completion_tokens": row["completion_tokens"],
            "total_tokens": row["total_tokens"],
        },
        digest=row["digest"],
        n_messages=row["request_messages_n"],
        cost=row["cost"],
        duration=row["duration"],
        model=row["model"],
        trial_id=row["trial_id"],
        ts=row["ts"],
    )


def chain_output_from_row(row: StoredRow) -> ChainOutputInfo:
    return ChainOutputInfo(
        benchmark_id=row["benchmark_id"],
        episode_id=row["episode_id"],
        task_id=row["task_id"],
        output=row["output"],
        score=row["score"],
        trial_id=row["trial_id"],
        ts=row["ts"],
    )


# --- timeline -------------------------------------------------------------------------------

def message_entry(row: StoredRow) -> TimelineEntry:
    tool_calls = loads(row["tool_calls_json"], None)
    summary = f"{row['role']}: {clip(row['content'])}" if row["content"] else f"{row['role']}:"
    if tool_calls:
        names = ", ".join(str(c.get("name") or c.get("function", {}).get("name", "?")) for c in tool_calls)
        summary = clip(f"{summary} -> {names}")
    data = {
        "index": row["index"],
        "role": row["role"],
        "content": row["content"],
        "name": row["name"],
        "tool_calls": tool_calls,
        "tool_call_id": row["tool_call_id"],
    }
    return TimelineEntry(row["ts"], "message", summary, data)


def tool_call_entry(row: StoredRow) -> TimelineEntry:
    arguments = loads(row["arguments_json"], {})
    args_text = dumps(arguments) or ""
    summary = f"{row['tool_name']}({clip(args_text, 60)}) -> {row['status']}"
    if row["approval"]:
        summary += f" [{row['approval']}]"
    if row["error_message"]:
        summary += f": {clip(row['error_message'], 60)}"
    data = {
        "seq": row["seq"],
        "tool_name": row["tool_name"],
        "arguments": arguments,
        "result": row["result"],
        "status": row["status"],
        "error_message": row["error_message"],
        "risk": row["risk"],
        "approval": row["approval"],
        "render": row["render"],
        "duration": row["duration"],
        "iteration": row["iteration"],
    }
    return TimelineEntry(row["ts"], "tool_call", clip(summary), data)


def hook_event_entry(row: StoredRow) -> TimelineEntry:
    kind = row["kind"]
    data = loads(row["data_json"], {})
    return TimelineEntry(row["ts"], kind, clip(_hook_summary(kind, row, data)), data)


def _hook_summary(kind: str, row: StoredRow, data: dict[str, Any]) -> str:
    name, point = row["name"], row["point"]
    event = stored_event(kind, data)
    if event is None:
        return f"{kind} {name or ''}".strip()
    if event.kind is EventKind.ITERATION_STARTED:
        return f"iteration {row['iteration']}"
    if event.kind is EventKind.HOOK_FIRED:
        flags = []
        if event.data.get("should_continue") is False:
            flags.append("stop")
        if event.data.get("skip_current_step"):
            flags.append("skip step")
        return f"hook {name} at {point}" + (f" ({', '.join(flags)})" if flags else "")
    if event.kind is EventKind.HOOK_ERROR:
        return f"hook {name} at {point} failed: {event.data.get('error')}"
    if event.kind is EventKind.INTERVENTION_APPLIED:
        return f"intervention ({event.data.get('source')}): {event.data.get('text')}"
    if event.kind is EventKind.INTERVENTION_UNDELIVERED:
        return f"intervention not delivered ({event.data.get('reason')}): {event.data.get('text')}"
    if event.kind is EventKind.APPROVAL_ASKED:
        return f"approval asked: {event.data.get('tool_name')} ({event.data.get('risk')})"
    if event.kind is EventKind.APPROVAL_DECIDED:
        decided = event.data
        reason = f": {decided['reason']}" if decided.get("reason") else ""
        if decided.get("decided_by") == Decider.CANCELLED:
            return f"{decided.get('tool_name')} cancelled{reason}"
        verdict = "approved" if decided.get("approved") else "rejected"
        return f"{decided.get('tool_name')} {verdict} by {decided.get('decided_by')}{reason}"
    if event.kind is EventKind.CONTROL_STATE:
        control = event.data
        return f"control: {control.get('state')}" + (f" ({control['reason']})" if control.get("reason") else "")
    if event.kind is EventKind.BREAKPOINT_HIT:
        hit = event.data
        return f"breakpoint {name} hit: {hit.get('reason')}" + (" (paused)" if hit.get("paused") else "")
    return f"{kind} {name or ''}".strip()


def llm_call_entry(row: StoredRow) -> TimelineEntry:
    summary = f"LLM {row['role']} turn {shown_turn(row['turn'])}: {row['total_tokens']} tokens"
    if row["model"]:
        summary += f" ({row['model']})"
    data = {
        "role": row["role"],
        "turn": row["turn"],
        "digest": row["digest"],
        "content": row["content"],
        "tool_calls": loads(row["tool_calls_json"], []),
        "prompt_tokens": row["prompt_tokens"],
        "completion_tokens": row["completion_tokens"],
        "total_tokens": row["total_tokens"],
        "cost": row["cost"],
        "duration": row["duration"],
        "model": row["model"],
        "request_messages_n": row["request_messages_n"],
    }
    return TimelineEntry(row["ts"], "llm_call", summary, data)
