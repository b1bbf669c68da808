"""Plain domain objects the store hands out. Callers never see SQLModel rows or sessions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from corral_core.events import Event, stored_event


@dataclass(slots=True)
class ArmInfo:
    """One arm of a benchmark: a name plus what it varies."""

    name: str
    verbosity: str | None = None
    model: str | None = None
    agent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "verbosity": self.verbosity, "model": self.model, "agent": self.agent}


@dataclass(slots=True)
class BenchmarkInfo:
    id: str
    spec_name: str
    spec_digest: str
    spec_yaml: str
    suites: list[str]
    agent: str
    model: str
    arms: list[ArmInfo]
    trials_per_task: int
    status: str  # running | finished | interrupted
    headline_score: float | None
    attempt_status: str | None  # metrics.ATTEMPT_STATUSES, or None (unfinished)
    created_at: datetime
    finished_at: datetime | None
    metrics: dict[str, Any] | None
    trial_count: int = 0  # filled by list_benchmarks / get_benchmark
    finished_count: int = 0  # trials whose status is not "running"
    errored_count: int = 0  # trials that errored or timed out (attempts a retry replaced left out)
    total_tokens: int = 0  # tokens of every attempt
    cost_total: float | None = None  # cost of every attempt (None when no trial knows its cost)
    owner_pid: int | None = None  # the process running (or last running) it
    owner_host: str | None = None
    heartbeat_at: datetime | None = None  # its owner's last sign of life (the database's clock)
    owner_token: str | None = None  # the fencing token of the current ownership (ownership.py)


@dataclass(slots=True)
class BenchmarkPage:
    items: list[BenchmarkInfo]
    offset: int
    limit: int
    has_more: bool


# A stored trial's fields beside its two events' payloads: the events' ids (`id` is the trial id) and times.
TRIAL_EVENT_FIELDS = ("id", "benchmark_id", "task_id", "started_at", "finished_at")


@dataclass(slots=True)
class TrialInfo:
    """A stored trial: a TrialResult (corral_core.trial_result) as the `trial` table keeps it, with where and
    when it ran. Its fields are TRIAL_EVENT_FIELDS, TRIAL_STARTED's payload (events.TrialStartedData) and
    TRIAL_FINISHED's (trial_result.FINISHED_KEYS, with TrialResult's types). Their order is the order of the
    JSON export's keys (runner.results.ROW_KEYS): a new field goes last. tests/core/test_trial_declaration.py
    names a field TrialResult declares stored and this class lacks (as test_trial_shapes.py keeps the shapes in step).
    """

    id: str
    benchmark_id: str | None
    arm: str
    task_id: str
    trial_index: int
    episode_id: str | None
    agent: str | None
    model: str | None
    verbosity: str | None
    status: str
    score: float | None
    answer: str | None
    explanation: str | None
    surrendered: bool
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost: float | None
    duration: float | None
    tool_duration: float | None
    iterations: int
    assisted: bool
    started_at: datetime | None
    finished_at: datetime | None
    fault: str | None = None  # whose fault an error was (metrics.records.FAULTS)
    parent_trial_id: str | None = None  # a fork's parent trial (runner/fork.py)
    fork_iteration: int | None = None  # the 0-based iteration the fork ran live from
    llm_retries: int = 0  # transient provider failures retried (429, timeout, 5xx)
    llm_retry_wait: float = 0.0  # seconds waited before those retries
    rate_limit_wait: float = 0.0  # seconds waited for the model's requests/tokens-per-minute budget


@dataclass(slots=True)
class TrialPage:
    items: list[TrialInfo]
    offset: int
    limit: int
    has_more: bool


@dataclass(slots=True)
class TimelineEntry:
    """One line of a trial's history: a message, tool call, hook event, approval or LLM call."""

    ts: datetime
    kind: str  # "message" | "tool_call" | "llm_call" | an EventKind value | "trial_started" | "trial_finished"
    summary: str
    data: dict[str, Any]

    def event(self, trial_id: str | None = None) -> Event | None:
        """The event this entry was written from, its payload typed by its kind (None for a kind that is none)."""
        return stored_event(self.kind, self.data, trial_id, self.ts.timestamp())


@dataclass(slots=True)
class LLMCallInfo:
    """A recorded LLM response: what replay returns for a (benchmark, arm, task, trial, role, turn)."""

    content: str | None
    tool_calls: list[dict[str, Any]]  # [{id, name, arguments}]
    usage: dict[str, int]  # {prompt_tokens, completion_tokens, total_tokens}
    digest: str | None
    n_messages: int | None = None  # size of the recorded request, to explain a digest mismatch
    cost: float | None = None
    duration: float | None = None
    model: str | None = None
    trial_id: str | None = None
    ts: datetime | None = None


@dataclass(slots=True)
class ChainOutputInfo:
    benchmark_id: str | None
    episode_id: str | None
    task_id: str
    output: str | None
    score: float | None
    trial_id: str | None
    ts: datetime
