"""SQLModel tables of the store (schema only: queries live in repository.py, domain objects in
models.py).

Timestamps are stored as UTC and read back as timezone-aware UTC datetimes. JSON payloads are
plain TEXT columns so any SQLAlchemy backend works. Child tables (message, tool_call, hook_event,
llm_call) carry `trial_id` as an indexed column without a foreign key: a standalone agent run
writes its events before (or without) any trial row.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Column, DateTime, Index, Table, Text, UniqueConstraint
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

from corral_core.constants import utc_now as utc_now  # re-exported for the repository
from corral_core.domain import BenchmarkStatus, TrialStatus


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out (SQLite has no time zones)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return utc_from_driver(value)


_fromisoformat = datetime.fromisoformat


def utc_from_driver(value: str | datetime | None) -> datetime | None:
    """A UTCDateTime column's value as the DB-API driver gives it (SQLite: the stored text; PostgreSQL:
    a datetime), read as SQLAlchemy reads it (its SQLite DATETIME parses with fromisoformat), for the
    whole-benchmark reads that skip SQLAlchemy's per-value processing (Repository._keyset)."""
    if value is None:
        return None
    when = _fromisoformat(value) if isinstance(value, str) else value
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def iso_from_driver(value: str | datetime | None) -> str | None:
    """`utc_from_driver(value).isoformat()` (None stays None), without making the aware datetime: a
    naive UTC time's ISO text with the offset UTC's isoformat writes (two per row of a million-row export)."""
    if value is None:
        return None
    when = _fromisoformat(value) if isinstance(value, str) else value
    return when.isoformat() + "+00:00" if when.tzinfo is None else when.astimezone(UTC).isoformat()


def _ts(*, nullable: bool = False, index: bool = False) -> Any:
    return Field(
        default=None,
        sa_column=Column(UTCDateTime(), nullable=nullable, index=index),
    )


def _text(*, nullable: bool = True) -> Any:
    return Field(default=None, sa_column=Column(Text, nullable=nullable))


class BenchmarkRow(SQLModel, table=True):
    """One run of a spec: its arms, status and headline result."""

    __tablename__ = "benchmark"
    __table_args__ = (
        Index("ix_benchmark_created_at", "created_at", "id"),
        Index("ix_benchmark_digest_created", "spec_digest", "created_at"),
    )

    id: str = Field(primary_key=True)
    spec_name: str = ""
    spec_digest: str = ""
    spec_yaml: str | None = _text()
    suites_json: str | None = _text()  # JSON list of suite names
    agent: str = ""
    model: str = ""
    arms_json: str | None = _text()  # JSON list of {name, verbosity, model, agent}
    trials_per_task: int = 1
    status: str = BenchmarkStatus.RUNNING  # running | finished | interrupted
    headline_score: float | None = None
    attempt_status: str | None = None  # first | improved | baseline | regressed | no_unassisted | crashed
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    finished_at: datetime | None = _ts(nullable=True)
    metrics_json: str | None = _text()
    # Who runs it (see ownership.py): auto-resume never takes over a run whose owner is alive.
    owner_pid: int | None = None
    owner_host: str | None = None
    heartbeat_at: datetime | None = _ts(nullable=True)  # in the database's own clock (ownership.py)
    owner_token: str | None = None  # the fencing token of the current ownership: checked on every trial write


class TrialRow(SQLModel, table=True):
    """One attempt of one task by one arm; `id` is the server's trial runtime id (tr_...)."""

    __tablename__ = "trial"
    __table_args__ = (
        UniqueConstraint("benchmark_id", "arm", "task_id", "trial_index", name="uq_trial_key"),
        Index("ix_trial_benchmark_started", "benchmark_id", "started_at", "id"),
        Index("ix_trial_benchmark_status", "benchmark_id", "status"),
        Index("ix_trial_benchmark_task", "benchmark_id", "task_id"),
        Index("ix_trial_parent", "parent_trial_id"),
    )

    id: str = Field(primary_key=True)
    benchmark_id: str | None = Field(default=None, foreign_key="benchmark.id")
    arm: str = ""
    task_id: str = ""
    trial_index: int = 0
    episode_id: str | None = None
    agent: str | None = None
    model: str | None = None
    verbosity: str | None = None
    status: str = TrialStatus.RUNNING
    score: float | None = None
    answer: str | None = _text()
    explanation: str | None = _text()
    surrendered: bool = False
    error: str | None = _text()
    fault: str | None = None  # whose fault an error was (metrics.records.FAULTS)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None
    duration: float | None = None
    tool_duration: float | None = None
    iterations: int = 0
    assisted: bool = False
    started_at: datetime | None = _ts(nullable=True)
    finished_at: datetime | None = _ts(nullable=True)
    # A fork (runner/fork.py) replays its parent trial up to `fork_iteration` (0-based), then runs live.
    parent_trial_id: str | None = None
    fork_iteration: int | None = None
    # Provider trouble, apart from the agent's own work: transient failures retried, the seconds waited
    # before those retries, and the seconds waited for the model's requests/tokens-per-minute budget.
    # (The database's own default 0 is what migration 0004 gave the rows it found; a new store has it too.)
    llm_retries: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    llm_retry_wait: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})
    rate_limit_wait: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})


class MessageRow(SQLModel, table=True):
    """One message appended to an agent's conversation."""

    __tablename__ = "message"
    __table_args__ = (Index("ix_message_trial_index", "trial_id", "index"),)

    id: int | None = Field(default=None, primary_key=True)
    trial_id: str | None = None
    index: int = 0
    role: str = ""
    content: str | None = _text()
    name: str | None = None
    tool_calls_json: str | None = _text()
    tool_call_id: str | None = None
    ts: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class ToolCallRow(SQLModel, table=True):
    """One tool call as the agent saw it (works with remote servers too)."""

    __tablename__ = "tool_call"
    __table_args__ = (Index("ix_tool_call_trial_seq", "trial_id", "seq"),)

    id: int | None = Field(default=None, primary_key=True)
    trial_id: str | None = None
    seq: int = 0
    tool_name: str = ""
    arguments_json: str | None = _text()
    result: str | None = _text()
    status: str = ""
    error_message: str | None = _text()
    risk: str | None = None
    approval: str | None = None
    render: str | None = None
    duration: float | None = None
    iteration: int | None = None
    ts: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class HookEventRow(SQLModel, table=True):
    """Hooks, interventions, approvals, control changes and iteration starts of a trial."""

    __tablename__ = "hook_event"
    __table_args__ = (Index("ix_hook_event_trial_ts", "trial_id", "ts"),)

    id: int | None = Field(default=None, primary_key=True)
    trial_id: str | None = None
    kind: str = ""  # an EventKind value
    point: str | None = None  # hook point, where there is one
    name: str | None = None  # hook name, tool name, intervention source, control state or breakpoint
    iteration: int | None = None
    data_json: str | None = _text()
    ts: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class LLMCallRow(SQLModel, table=True):
    """One LLM response with its usage: what `replay/<benchmark_id>` reads back."""

    __tablename__ = "llm_call"
    __table_args__ = (
        Index("ix_llm_call_trial", "trial_id"),
        Index(
            "ix_llm_call_replay_key",
            "benchmark_id", "arm", "task_id", "trial_index", "role", "turn",
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    trial_id: str | None = None
    benchmark_id: str | None = None
    arm: str = ""
    task_id: str | None = None
    trial_index: int = 0
    role: str = "agent"
    turn: int = 0
    digest: str | None = None
    request_messages_n: int | None = None
    content: str | None = _text()
    tool_calls_json: str | None = _text()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None
    duration: float | None = None
    model: str | None = None
    ts: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class ChainOutputRow(SQLModel, table=True):
    """The output a chained task passed downstream in one episode."""

    __tablename__ = "chain_output"
    __table_args__ = (Index("ix_chain_output_benchmark_episode", "benchmark_id", "episode_id"),)

    id: int | None = Field(default=None, primary_key=True)
    benchmark_id: str | None = None
    episode_id: str | None = None
    task_id: str = ""
    trial_id: str | None = None
    output: str | None = _text()
    score: float | None = None
    ts: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


def _table_of(row: type[SQLModel]) -> Table:
    """The Core table SQLModel builds for a `table=True` class (its stubs do not declare `__table__`)."""
    table: Table = row.__table__  # type: ignore[attr-defined]
    return table


benchmark_table = _table_of(BenchmarkRow)
trial_table = _table_of(TrialRow)
message_table = _table_of(MessageRow)
tool_call_table = _table_of(ToolCallRow)
hook_event_table = _table_of(HookEventRow)
llm_call_table = _table_of(LLMCallRow)
chain_output_table = _table_of(ChainOutputRow)

metadata = SQLModel.metadata
ALL_TABLES = [
    benchmark_table,
    trial_table,
    message_table,
    tool_call_table,
    hook_event_table,
    llm_call_table,
    chain_output_table,
]
# A change to these tables needs its migration: `alembic -x db=/tmp/dev.db revision --autogenerate -m ...`
# writes one in migrations/versions (see schema.py); tests/core/test_store_schema.py checks they agree.
# Tables keyed by trial_id whose rows belong to one trial (deleted with it on resume).
TRIAL_CHILD_TABLES = [message_table, tool_call_table, hook_event_table, llm_call_table]
