"""The plain trial record every metric reads, and what counts as an attempt and a success."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from corral_core.constants import TOOL_STATUSES as TOOL_STATUSES  # re-exported by corral_core.metrics

TRIAL_STATUSES = (
    "completed",
    "surrendered",
    "iteration_limit",
    "limit",
    "error",
    "timeout",
    "skipped",
    "cancelled",
    "stopped",
)
# Statuses where the agent had its go at the task: they enter the quality metrics (a missing score
# counts as 0). "stopped" (a hook ended the run) is the agent's own outcome, so it is an attempt;
# "limit" (over its cost/token limit, scored on its last reply) too, like "iteration_limit".
ATTEMPTED_STATUSES = frozenset(
    {"completed", "surrendered", "iteration_limit", "limit", "error", "timeout", "stopped"}
)
# An earlier attempt that `--retry-errors` replaced: kept in the store as the trial's history, in no metric.
# The store's (benchmark, arm, task, index) key is unique, so the old attempt keeps its arm and task and
# gets a negative history index that encodes its original index and which retry replaced it.
RETIRED_STATUS = "retried"
_RETIRED_STRIDE = 1_000_000


def retired_index(trial_index: int, attempt: int) -> int:
    """The history index of trial `trial_index` replaced by retry number `attempt` (1, 2, ...)."""
    return -(attempt * _RETIRED_STRIDE + trial_index + 1)


def retired_original_index(history_index: int) -> int:
    """The trial index a history index stands for."""
    return (-history_index - 1) % _RETIRED_STRIDE


def retired_attempt(history_index: int) -> int:
    """Which retry (1, 2, ...) replaced the attempt at this history index."""
    return (-history_index - 1) // _RETIRED_STRIDE
# Never attempted (skipped chain link) or not a measurement (a person cancelled it, still running):
# counted in status_counts, left out of scores, rates and pairings.
EXCLUDED_STATUSES = frozenset({"skipped", "cancelled", "running"})

# Whose fault an errored trial was: the model provider or the network to it, the environment
# (tool server, trial routes, approvals), the agent (its own parsing, hooks or code), or the grader.
# A trial that ran past its time limit is "timeout"; an error from before faults were recorded, "unknown".
FAULTS = ("provider", "environment", "agent", "grader", "timeout", "unknown")



@dataclass
class TrialRecord:
    """One finished (or skipped) trial, as plain data: the only input the metrics need.

    `tool_calls` holds ToolCall dicts (`tool_name`, `status`, `duration`, ...). `solvable` is the
    task's declared solvability (None when the task does not say). `chain_position` is the link's
    index in its chain, used when `chain_metrics` gets no explicit order.
    """

    task_id: str
    arm: str = ""
    trial_index: int = 0
    status: str = "completed"
    score: float | None = None
    surrendered: bool = False
    error: str | None = None
    fault: str | None = None  # one of FAULTS when the trial errored or timed out
    assisted: bool = False
    solvable: bool | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None
    duration: float | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    episode_id: str | None = None
    chain_position: int | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> TrialRecord:
        """Build a record from a dict (a store row, TRIAL_FINISHED data), ignoring unknown keys.

        None for a counter (tokens) or a list (tool_calls) becomes the field's default.
        """
        known = {f.name for f in fields(cls)}
        kwargs = {key: value for key, value in data.items() if key in known}
        for counter in ("prompt_tokens", "completion_tokens", "total_tokens"):
            if kwargs.get(counter) is None:
                kwargs.pop(counter, None)
        if kwargs.get("tool_calls") is None:
            kwargs.pop("tool_calls", None)
        for flag in ("surrendered", "assisted"):
            if kwargs.get(flag) is None:
                kwargs.pop(flag, None)
        return cls(**kwargs)


def is_attempted(record: TrialRecord) -> bool:
    """True when the agent actually attempted the task (see ATTEMPTED_STATUSES)."""
    return record.status in ATTEMPTED_STATUSES


def effective_score(record: TrialRecord) -> float:
    """The score a metric uses: a trial that produced no score scored 0, as in Corral."""
    return 0.0 if record.score is None else float(record.score)


def has_error(record: TrialRecord) -> bool:
    """True when the trial ended in an error: status "error" or a non-empty error message."""
    return record.status == "error" or bool(record.error)


def is_errored(record: TrialRecord) -> bool:
    """True when the trial errored or timed out: it measured the infrastructure, not the agent."""
    return record.status == "timeout" or has_error(record)


def is_missing(record: TrialRecord) -> bool:
    """True when the trial errored or timed out and the fault was not the agent's own: the primary
    analysis leaves it out as missing (a sensitivity line counts it as a failure)."""
    return is_errored(record) and record.fault != "agent"


class Outcome(Protocol):
    """What `success` reads of a trial: a TrialRecord, or a stored trial (corral_core.store.TrialInfo)."""

    @property
    def status(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def surrendered(self) -> bool: ...


def success(record: Outcome, pass_threshold: float = 0.0) -> bool:
    """A trial succeeds when status is completed, score > pass_threshold, no error, no surrender.

    The default threshold 0 keeps Corral's rule (any positive partial score passes); raise it to
    demand more. An empty error string counts as no error.
    """
    return (
        record.status == "completed"
        and record.score is not None
        and record.score > pass_threshold
        and not record.error
        and not record.surrendered
    )


def single_arm(records: list[TrialRecord], what: str) -> str:
    """The one arm name shared by `records`; ValueError when they mix arms."""
    arms = sorted({record.arm for record in records})
    if len(arms) > 1:
        raise ValueError(
            f"{what} got records from several arms {arms}; pass the records of one arm at a time."
        )
    return arms[0] if arms else ""
