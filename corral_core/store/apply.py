"""Applies a batch of events to the database inside the writer's transaction.

Child rows (messages, tool calls, hook events, LLM calls) are buffered and inserted with one
executemany per table; trial rows are updated in event order. Statements use bound parameters so
SQLAlchemy compiles each once.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, insert, or_, select, update

from corral_core.events import (
    Event,
    EventKind,
    TrialFinishedEvent,
    TrialStartedEvent,
    marks_assisted,
)
from corral_core.store import event_rows as rows
from corral_core.store.tables import (
    TRIAL_CHILD_TABLES,
    hook_event_table,
    llm_call_table,
    message_table,
    tool_call_table,
    trial_table,
)

log = logging.getLogger(__name__)

_t = trial_table
# The row of this trial id and any other row holding the same (benchmark, arm, task, index) key.
_FIND_TRIAL = select(_t.c.id).where(
    or_(
        _t.c.id == bindparam("id"),
        and_(
            _t.c.benchmark_id == bindparam("benchmark_id"),
            _t.c.arm == bindparam("arm"),
            _t.c.task_id == bindparam("task_id"),
            _t.c.trial_index == bindparam("trial_index"),
        ),
    )
)
_UPDATE_TRIAL = update(_t).where(_t.c.id == bindparam("b_trial_id"))
_INSERT_TRIAL = insert(_t)

Batch = list[tuple[Event, Any]]


class EventApplier:
    """Turns prepared events into rows. Keeps the one piece of cross-batch state: trials marked
    assisted before their trial row existed."""

    def __init__(self) -> None:
        self._pending_assisted: set[str] = set()

    def save(self) -> frozenset[str]:
        return frozenset(self._pending_assisted)

    def restore(self, saved: frozenset[str]) -> None:
        self._pending_assisted = set(saved)

    def apply(self, conn: Connection, batch: Batch) -> None:
        children: dict[Any, list[dict[str, Any]]] = {
            message_table: [],
            tool_call_table: [],
            hook_event_table: [],
            llm_call_table: [],
        }
        for event, extra in batch:
            if event.kind is EventKind.TRIAL_STARTED:
                self._start_trial(conn, event, children)
            elif event.kind is EventKind.TRIAL_FINISHED:
                self._finish_trial(conn, event)
            elif event.kind is EventKind.MESSAGE:
                children[message_table].append(rows.message_row(event))
            elif event.kind is EventKind.TOOL_CALL:
                children[tool_call_table].append(rows.tool_call_row(event, extra))
            elif event.kind is EventKind.LLM_RESPONSE:
                children[llm_call_table].append(rows.llm_call_row(event, extra))
            elif isinstance(event, rows.HOOK_EVENT_TYPES):
                children[hook_event_table].append(rows.hook_event_row(event))
                if event.trial_id and marks_assisted(event):
                    self._mark_assisted(conn, event.trial_id)
        _insert_children(conn, children)

    def _start_trial(self, conn: Connection, event: TrialStartedEvent,
                     children: dict[Any, list[dict[str, Any]]]) -> None:
        """Insert the trial row, or reset it; a new start of the same key replaces the old trial."""
        if not event.trial_id:
            log.warning("TRIAL_STARTED without a trial_id (task %s) is not stored", event.task_id)
            return
        values = rows.trial_started_values(event)
        if event.trial_id in self._pending_assisted:
            self._pending_assisted.discard(event.trial_id)
            values["assisted"] = True
        found = conn.execute(
            _FIND_TRIAL,
            {k: values[k] for k in ("id", "benchmark_id", "arm", "task_id", "trial_index")},
        ).scalars().all()
        stale = [trial_id for trial_id in found if trial_id != event.trial_id]
        if stale:
            log.warning("trial %s replaces earlier trial(s) %s of the same key", event.trial_id, stale)
            _insert_children(conn, children)  # buffered rows of the old trial go too
            for table in TRIAL_CHILD_TABLES:
                conn.execute(delete(table).where(table.c.trial_id.in_(stale)))
            conn.execute(delete(_t).where(_t.c.id.in_(stale)))
        if event.trial_id in found:
            changed = {k: v for k, v in values.items() if k != "id"}
            conn.execute(_UPDATE_TRIAL, {"b_trial_id": event.trial_id, **changed})
        else:
            conn.execute(_INSERT_TRIAL, [values])

    def _finish_trial(self, conn: Connection, event: TrialFinishedEvent) -> None:
        """Record the outcome; a finish without a start still leaves a trial row."""
        if not event.trial_id:
            log.warning("TRIAL_FINISHED without a trial_id (task %s) is not stored", event.task_id)
            return
        values = rows.trial_finished_values(event)
        if event.data.get("assisted") or event.trial_id in self._pending_assisted:
            values["assisted"] = True  # never cleared: a person's touch found earlier stays
        self._pending_assisted.discard(event.trial_id)
        if conn.execute(_UPDATE_TRIAL, {"b_trial_id": event.trial_id, **values}).rowcount == 0:
            full = rows.trial_started_values(event)
            full.update(values, started_at=None)
            conn.execute(_INSERT_TRIAL, [full])

    def _mark_assisted(self, conn: Connection, trial_id: str) -> None:
        if conn.execute(_UPDATE_TRIAL, {"b_trial_id": trial_id, "assisted": True}).rowcount == 0:
            self._pending_assisted.add(trial_id)


def _insert_children(conn: Connection, children: dict[Any, list[dict[str, Any]]]) -> None:
    """Insert the buffered child rows, one executemany per table, and empty the buffers."""
    for table, table_rows in children.items():
        if table_rows:
            conn.execute(insert(table), table_rows)
            table_rows.clear()
