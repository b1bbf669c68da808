"""One trial in detail: its merged timeline and its recorded LLM responses.

Functions over an open connection; `Repository` opens it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, select

from corral_core.store import convert
from corral_core.store.models import LLMCallInfo, TimelineEntry, TrialInfo
from corral_core.store.tables import (
    hook_event_table,
    llm_call_table,
    message_table,
    tool_call_table,
    trial_table,
)

# Where timestamps tie, show events in the order they happen inside one iteration.
_TIMELINE_RANK = {
    "trial_started": 0,
    "iteration_started": 1,
    "control_state": 2,
    "hook_fired": 3,
    "hook_error": 3,
    "intervention_applied": 4,
    "intervention_undelivered": 9,
    "llm_call": 5,
    "message": 6,
    "approval_asked": 7,
    "approval_decided": 8,
    "tool_call": 9,
    "trial_finished": 10,
}


def load_timeline(conn: Connection, trial_id: str) -> list[TimelineEntry]:
    """Messages, tool calls, hook events and LLM calls of a trial, merged by time."""
    sources = [
        (message_table, message_table.c.index, convert.message_entry),
        (tool_call_table, tool_call_table.c.seq, convert.tool_call_entry),
        (hook_event_table, hook_event_table.c.id, convert.hook_event_entry),
        (llm_call_table, llm_call_table.c.id, convert.llm_call_entry),
    ]
    entries: list[TimelineEntry] = []
    for table, order, make in sources:
        rows = conn.execute(select(table).where(table.c.trial_id == trial_id).order_by(table.c.ts, order)).all()
        entries.extend(make(row._mapping) for row in rows)
    trial_row = conn.execute(select(trial_table).where(trial_table.c.id == trial_id)).first()
    if trial_row is not None:
        entries.extend(_trial_edges(convert.trial_from_row(trial_row._mapping)))
    entries.sort(key=lambda e: (e.ts, _TIMELINE_RANK.get(e.kind, 5)))  # stable within a source
    return entries


def _trial_edges(trial: TrialInfo) -> list[TimelineEntry]:
    """Start and end lines of a trial's timeline, from its trial row."""
    entries = []
    if trial.started_at is not None:
        summary = f"trial {trial.trial_index} of {trial.task_id} started"
        if trial.arm:
            summary += f" (arm {trial.arm})"
        entries.append(TimelineEntry(trial.started_at, "trial_started", summary, {"arm": trial.arm}))
    if trial.finished_at is not None:
        summary = f"trial {trial.status}: score {trial.score}"
        if trial.error:
            summary += f", error: {convert.clip(trial.error, 60)}"
        data = {"status": trial.status, "score": trial.score, "answer": trial.answer, "error": trial.error}
        entries.append(TimelineEntry(trial.finished_at, "trial_finished", convert.clip(summary), data))
    return entries


def load_llm_response(
    conn: Connection, benchmark_id: str, arm: str, task_id: str, trial_index: int, role: str, turn: int
) -> LLMCallInfo | None:
    """The latest LLM response recorded for this call position.

    The exact arm first; if the recorded benchmark answered this position in exactly one other arm
    (a one-arm benchmark replayed under another arm name), that one.
    """
    lc = llm_call_table
    position = and_(
        lc.c.benchmark_id == benchmark_id,
        lc.c.task_id == task_id,
        lc.c.trial_index == trial_index,
        lc.c.role == role,
        lc.c.turn == turn,
    )
    row = conn.execute(select(lc).where(position, lc.c.arm == arm).order_by(lc.c.id.desc()).limit(1)).first()
    if row is None:
        arms = conn.execute(select(lc.c.arm).where(position).distinct().limit(2)).scalars().all()
        if len(arms) == 1:
            row = conn.execute(
                select(lc).where(position, lc.c.arm == arms[0]).order_by(lc.c.id.desc()).limit(1)
            ).first()
    return convert.llm_call_from_row(row._mapping) if row else None


def load_transcripts(conn: Connection, trial_ids: list[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Each trial's conversation and tool calls, as the export writes them (`export --with-transcripts`):
    {trial_id: {"messages": [...], "tool_calls": [...]}}, in their order within the trial. Two queries
    for the whole list, whatever its length (a page of the export)."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {t: {"messages": [], "tool_calls": []} for t in trial_ids}
    m, c = message_table.c, tool_call_table.c
    for row in conn.execute(select(m.trial_id, m.index, m.role, m.content, m.name, m.tool_calls_json, m.tool_call_id)
                            .where(m.trial_id.in_(trial_ids)).order_by(m.trial_id, m.index)):
        message: dict[str, Any] = {"role": row.role, "content": row.content}
        if row.name:
            message["name"] = row.name
        if row.tool_calls_json:
            message["tool_calls"] = convert.loads(row.tool_calls_json, [])
        if row.tool_call_id:
            message["tool_call_id"] = row.tool_call_id
        found[row.trial_id]["messages"].append(message)
    for call in conn.execute(select(c.trial_id, c.seq, c.tool_name, c.arguments_json, c.result, c.status,
                                    c.error_message, c.risk, c.approval, c.duration, c.iteration)
                             .where(c.trial_id.in_(trial_ids)).order_by(c.trial_id, c.seq)):
        found[call.trial_id]["tool_calls"].append({
            "seq": call.seq, "tool": call.tool_name, "arguments": convert.loads(call.arguments_json, {}),
            "result": call.result, "status": call.status, "error": call.error_message, "risk": call.risk,
            "approval": call.approval, "duration": call.duration, "iteration": call.iteration})
    return found
