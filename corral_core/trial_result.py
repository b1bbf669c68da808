"""The one finished-trial record: emitted in TRIAL_FINISHED, stored, read back, measured and shown.

`TrialResult` is what a trial came to. The runner builds one and emits its `finished_data()`; the
store reads its rows back as TrialResults; the metrics read nothing else. Its `success(threshold)`
is the success rule (`passes` is the same rule for readers that hold the values, not a record).
Who counts as having assisted a trial is `corral_core.events.marks_assisted`, the one assisted rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from corral_core.domain import TrialStatus
from corral_core.events import TrialFinishedData


def passes(status: str, score: float | None, error: str | None, surrendered: bool, threshold: float = 0.0) -> bool:
    """The success rule: completed, a score above `threshold`, no error (an empty one is none), no surrender.

    The default threshold 0 keeps Corral's rule (any positive partial score passes)."""
    return status == TrialStatus.COMPLETED and score is not None and score > threshold and not error and not surrendered


@dataclass(frozen=True)
class TrialResult:
    """One finished (or skipped) trial, as plain data.

    `tool_calls` holds ToolCall dicts (`tool_name`, `status`, `duration`, ...). `solvable` is the task's
    declared solvability (None when the task does not say). `chain_position` is the link's index in its
    chain. The fields before `trial_id` are in the order the metrics' streaming converter passes them
    (corral_core.runner.results.iter_records_from_values, by position).
    """

    task_id: str
    arm: str = ""
    trial_index: int = 0
    status: str = TrialStatus.COMPLETED
    score: float | None = None
    surrendered: bool = False
    error: str | None = None
    fault: str | None = None  # one of metrics.FAULTS when the trial errored or timed out
    assisted: bool = False  # a person touched it (corral_core.events.marks_assisted)
    solvable: bool | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None
    duration: float | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    episode_id: str | None = None
    chain_position: int | None = None
    trial_id: str | None = None
    answer: str | None = None
    explanation: str | None = None
    iterations: int = 0
    tool_duration: float | None = None
    llm_retries: int = 0  # transient provider failures retried (429, timeout, 5xx)
    llm_retry_wait: float = 0.0  # seconds waited before those retries
    rate_limit_wait: float = 0.0  # seconds waited for the model's requests/tokens-per-minute budget

    def success(self, threshold: float = 0.0) -> bool:
        """The trial succeeded (`passes`)."""
        return passes(self.status, self.score, self.error, self.surrendered, threshold)

    def finished_data(self) -> TrialFinishedData:
        """The TRIAL_FINISHED payload: FINISHED_KEYS, in that order (the wire and the store read it)."""
        return TrialFinishedData(
            status=self.status, score=self.score, answer=self.answer, surrendered=self.surrendered, error=self.error,
            fault=self.fault, explanation=self.explanation, iterations=self.iterations,
            prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
            total_tokens=self.total_tokens, cost=self.cost, duration=self.duration, tool_duration=self.tool_duration,
            assisted=self.assisted, llm_retries=self.llm_retries, llm_retry_wait=self.llm_retry_wait,
            rate_limit_wait=self.rate_limit_wait, arm=self.arm, trial_index=self.trial_index,
            episode_id=self.episode_id)

    def evolve(self, **changes: Any) -> TrialResult:
        """A copy with `changes` (field -> value), without __init__ (cheap: a reader may rename a million)."""
        unknown = changes.keys() - FIELD_NAMES
        if unknown:
            raise TypeError(f"TrialResult has no field {', '.join(sorted(unknown))}")
        record = self.__class__.__new__(self.__class__)
        record.__dict__.update(self.__dict__, **changes)
        return record

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> TrialResult:
        """A record of a dict (a store row, TRIAL_FINISHED data), ignoring unknown keys.

        None for a counter (tokens, retries), a flag or a list (tool_calls) becomes the field's default.
        """
        kwargs = {key: value for key, value in data.items() if key in FIELD_NAMES}
        for defaulted in _NONE_IS_DEFAULT:
            if defaulted in kwargs and kwargs[defaulted] is None:
                del kwargs[defaulted]
        return cls(**kwargs)

    @classmethod
    def from_values(cls, values: Sequence[Any]) -> TrialResult:
        """A record of every field's value in FIELD_NAMES order, without __init__: the fast path of a
        reader that builds a million of them (a frozen __init__ sets each field through
        object.__setattr__, several times slower)."""
        record = cls.__new__(cls)
        record.__dict__.update(zip(FIELD_NAMES, values, strict=True))
        return record


FIELD_NAMES = tuple(f.name for f in fields(TrialResult))
_NONE_IS_DEFAULT = ("prompt_tokens", "completion_tokens", "total_tokens", "tool_calls", "surrendered", "assisted",
                    "iterations", "llm_retries", "llm_retry_wait", "rate_limit_wait")
# The TRIAL_FINISHED payload's keys, in wire order (events.TrialFinishedData's): the outcome, then (for
# progress readers) where it ran. Every field but these: the event's own ids, the task's facts a reader
# adds (runner.results.TaskFacts) and the tool calls (each its own TOOL_CALL event and tool_call row).
NOT_FINISHED = ("task_id", "trial_id", "solvable", "chain_position", "tool_calls")
FINISHED_KEYS = tuple(TrialFinishedData.__annotations__)
