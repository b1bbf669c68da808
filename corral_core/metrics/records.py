"""What counts as an attempt, an error and a success of the trial record every metric reads (TrialResult)."""

from __future__ import annotations

from typing import Protocol

from corral_core.constants import TOOL_STATUSES as TOOL_STATUSES  # re-exported by corral_core.metrics
from corral_core.domain import Fault, TrialStatus
from corral_core.trial_result import TrialResult as TrialResult  # re-exported by corral_core.metrics
from corral_core.trial_result import passes as passes  # re-exported for the metrics

TRIAL_STATUSES = (
    TrialStatus.COMPLETED,
    TrialStatus.SURRENDERED,
    TrialStatus.ITERATION_LIMIT,
    TrialStatus.LIMIT,
    TrialStatus.ERROR,
    TrialStatus.TIMEOUT,
    TrialStatus.SKIPPED,
    TrialStatus.CANCELLED,
    TrialStatus.STOPPED,
)
# Statuses where the agent had its go at the task: they enter the quality metrics (a missing score
# counts as 0). "stopped" (a hook ended the run) is the agent's own outcome, so it is an attempt;
# "limit" (over its cost/token limit, scored on its last reply) too, like "iteration_limit".
ATTEMPTED_STATUSES = frozenset(
    {TrialStatus.COMPLETED, TrialStatus.SURRENDERED, TrialStatus.ITERATION_LIMIT, TrialStatus.LIMIT, TrialStatus.ERROR,
     TrialStatus.TIMEOUT, TrialStatus.STOPPED}
)
# An earlier attempt that `--retry-errors` replaced: kept in the store as the trial's history, in no metric.
# The store's (benchmark, arm, task, index) key is unique, so the old attempt keeps its arm and task and
# gets a negative history index that encodes its original index and which retry replaced it.
RETIRED_STATUS = TrialStatus.RETRIED
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
EXCLUDED_STATUSES = frozenset({TrialStatus.SKIPPED, TrialStatus.CANCELLED, TrialStatus.RUNNING})

# Whose fault an errored trial was: the model provider or the network to it, the environment
# (tool server, trial routes, approvals), the agent (its own parsing, hooks or code), or the grader.
# A trial that ran past its time limit is "timeout"; an error from before faults were recorded, "unknown".
FAULTS = tuple(fault.value for fault in Fault)



def is_attempted(record: TrialResult) -> bool:
    """True when the agent actually attempted the task (see ATTEMPTED_STATUSES)."""
    return record.status in ATTEMPTED_STATUSES


def effective_score(record: TrialResult) -> float:
    """The score a metric uses: a trial that produced no score scored 0, as in Corral."""
    return 0.0 if record.score is None else float(record.score)


def has_error(record: TrialResult) -> bool:
    """True when the trial ended in an error: status "error" or a non-empty error message."""
    return record.status == TrialStatus.ERROR or bool(record.error)


def is_errored(record: TrialResult) -> bool:
    """True when the trial errored or timed out: it measured the infrastructure, not the agent."""
    return record.status == TrialStatus.TIMEOUT or has_error(record)


def is_missing(record: TrialResult) -> bool:
    """True when the trial errored or timed out and the fault was not the agent's own: the primary
    analysis leaves it out as missing (a sensitivity line counts it as a failure)."""
    return is_errored(record) and record.fault != Fault.AGENT


def in_primary_analysis(record: TrialResult, include_assisted: bool = False) -> bool:
    """True when the primary analysis counts the trial: attempted, not missing (`is_missing`), and not
    assisted by a person unless assisted trials are asked for."""
    return is_attempted(record) and not is_missing(record) and (include_assisted or not record.assisted)


class Outcome(Protocol):
    """What `success` reads of a trial: a TrialResult, or a stored trial (corral_core.store.TrialInfo)."""

    @property
    def status(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def surrendered(self) -> bool: ...


def success(record: Outcome, pass_threshold: float = 0.0) -> bool:
    """A trial succeeds when status is completed, score > pass_threshold, no error, no surrender
    (corral_core.trial_result.passes, the one success rule; TrialResult.success for a record)."""
    return passes(record.status, record.score, record.error, record.surrendered, pass_threshold)


def single_arm(records: list[TrialResult], what: str) -> str:
    """The one arm name shared by `records`; ValueError when they mix arms."""
    arms = sorted({record.arm for record in records})
    if len(arms) > 1:
        raise ValueError(
            f"{what} got records from several arms {arms}; pass the records of one arm at a time."
        )
    return arms[0] if arms else ""
