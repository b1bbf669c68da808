"""Every status vocabulary, each in one place: what a trial, an agent's loop, a tool call, a benchmark, a
run, a run's attempt, a trial's controller, an environment's episode and the workbench can be in, and
whose fault an error was.

They are `StrEnum`s: a member *is* its string (`TrialStatus.ERROR == "error"`, `json.dumps` and
`str()` give `"error"`), so the wire JSON, the store, the exports and Corral's files stay byte-identical
while the code names each value once. tests/core/test_status_guard.py fails when a string constant equal
to a status value appears anywhere else in corral_core or corral_tui (its rule says which words are exempt).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["AgentStatus", "AttemptStatus", "BenchmarkStatus", "ControlState", "Decider", "EpisodeStatus", "Fault",
           "RunStatus", "ToolStatus", "TrialStatus", "WorkbenchState"]


class TrialStatus(StrEnum):
    """A trial's status, stored in the `trial` table (docs/glossary.md says what each means)."""

    RUNNING = "running"
    COMPLETED = "completed"
    SURRENDERED = "surrendered"
    ITERATION_LIMIT = "iteration_limit"
    LIMIT = "limit"
    ERROR = "error"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    STOPPED = "stopped"
    RETRIED = "retried"  # an earlier try --retry-errors replaced: history, in no metric


class AgentStatus(StrEnum):
    """How an agent's loop ended (`AgentOutcome.status`, `StepResult.status`)."""

    ANSWERED = "answered"
    SURRENDERED = "surrendered"
    ITERATION_LIMIT = "iteration_limit"
    LIMIT = "limit"
    STOPPED = "stopped"
    CANCELLED = "cancelled"
    ERROR = "error"


class ToolStatus(StrEnum):
    """Outcome of one tool call. The first four are Corral's; the rest come from risk enforcement."""

    SUCCESS = "success"
    INVALID_TOOL = "invalid_tool"
    INVALID_ARGS = "invalid_args"
    EXECUTION_ERROR = "execution_error"
    BLOCKED = "blocked"
    REJECTED = "rejected"
    TIMEOUT = "timeout"


class Fault(StrEnum):
    """Whose fault an errored (or timed-out) trial was, stored in the trial's `fault` (metrics.records.FAULTS)."""

    PROVIDER = "provider"  # the model's API failed
    ENVIRONMENT = "environment"  # the environment server or a tool's environment failed
    AGENT = "agent"  # the agent's own code
    GRADER = "grader"  # the task's grader overran or failed
    TIMEOUT = "timeout"  # the trial ran out of time
    UNKNOWN = "unknown"  # a bug somewhere below the runner


class BenchmarkStatus(StrEnum):
    """A benchmark's status, stored in the `benchmark` table."""

    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"  # stopped; resumable
    STORE_FAILED = "store_failed"  # the store refused writes; resumable


class RunStatus(StrEnum):
    """How one call of the runner ended (`BenchmarkResult.status`, `--json`, `export`)."""

    FINISHED = "finished"
    INTERRUPTED = "interrupted"
    LOST_OWNERSHIP = "lost_ownership"  # another process claimed the benchmark (docs/ownership.md)


class AttemptStatus(StrEnum):
    """A finished run's headline against the best earlier run of its spec (metrics/attempt.py), stored in the
    benchmark's `attempt_status`."""

    FIRST = "first"
    IMPROVED = "improved"
    NO_CHANGE = "no_change"
    BASELINE = "baseline"
    REGRESSED = "regressed"
    NO_UNASSISTED = "no_unassisted"
    CRASHED = "crashed"
    ERRORED = "errored"


class ControlState(StrEnum):
    """A live trial's controller: the CONTROL_STATE events' `state`."""

    RUNNING = "running"
    PAUSED = "paused"
    STEPPING = "stepping"
    CANCELLED = "cancelled"


class EpisodeStatus(StrEnum):
    """An environment episode's grading state (`EpisodeState.status`)."""

    RUNNING = "running"
    SCORED = "scored"
    SURRENDERED = "surrendered"
    TIMEOUT = "timeout"


class Decider(StrEnum):
    """Who answered an approval request (`ApprovalDecision.decided_by`, APPROVAL_DECIDED's `decided_by`)."""

    POLICY = "policy"  # the spec's approval policy, without asking
    USER = "user"  # a person in the workbench
    REMOTE = "remote"  # a person through the server's API
    TIMEOUT = "timeout"  # nobody answered in time
    CANCELLED = "cancelled"  # a stopped run (or a quit) rejected it with every other waiting request


class WorkbenchState(StrEnum):
    """The workbench's run: what its header and status bar show (the run presenter's states)."""

    IDLE = "idle"  # no run yet
    STARTING = "starting"  # asked for; the runner is being built
    RUNNING = "running"
    PAUSED = "paused"  # every trial held (P), or the run started paused
    FINISHED = "finished"  # every trial ran
    INTERRUPTED = "interrupted"  # stopped (x, quit); resumable
    LOST_OWNERSHIP = "lost_ownership"  # another process took the benchmark over
    STORE_FAILED = "store_failed"  # the store refused writes: the run stops, its recorded trials are kept
    FAILED = "failed"  # the run's worker raised (a user error or a bug): the form can be corrected

    @property
    def live(self) -> bool:
        """A run is under way: another cannot start, quitting asks first."""
        return self in (WorkbenchState.STARTING, WorkbenchState.RUNNING, WorkbenchState.PAUSED)
