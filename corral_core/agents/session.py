"""run_trial: one agent run on one task, ending in a submission, a surrender, or neither.

Only a deliberate answer is submitted and only a deliberate surrender surrenders. A run that hit
the iteration limit, was stopped by a hook, was cancelled or failed submits nothing, so no error
text is ever scored as an answer; its status says what happened.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from corral_core.domain import AgentStatus, Fault, TrialStatus
from corral_core.llm.types import Usage

from .base import BaseAgent

log = logging.getLogger(__name__)


@dataclass
class TrialOutcome:
    """How a trial ended. `status` uses the trial vocabulary: "completed" for a submitted answer,
    "surrendered", or the agent's own status (iteration_limit, stopped, cancelled, error)."""

    status: str
    score: float | None = None
    answer: str | None = None
    surrendered: bool = False
    explanation: str | None = None
    error: str | None = None
    iterations: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    duration: float = 0.0  # seconds, without time spent paused by a controller
    trial_id: str | None = None  # the finished trial's id as the server reported it
    assisted: bool = False
    fault: str | None = None  # with status "error": provider, environment, agent or grader


def run_trial(agent: BaseAgent, interface: Any, task_id: str, **run_kwargs: Any) -> TrialOutcome:
    """Run `agent` on `task_id`, then submit or surrender as its outcome says, and hand the result
    to `agent.on_trial_result` (when it has one); never raises for a failed run or a failed
    submission (those end as status "error")."""
    started = time.perf_counter()
    agent.run(interface, task_id, **run_kwargs)
    outcome = agent.outcome
    answer: str | None
    error: str | None
    if outcome is None:  # a custom agent that overrode run() without setting it
        outcome_status, answer, error = AgentStatus.ERROR, None, "the agent did not record an outcome"
        fault: str | None = Fault.AGENT
        iterations, usage, cost, assisted = 0, Usage(), None, False
    else:
        outcome_status, answer, error = outcome.status, outcome.answer, outcome.error
        fault = outcome.fault
        iterations, usage, cost, assisted = outcome.iterations, outcome.usage, outcome.cost, outcome.assisted
    trial = TrialOutcome(status=outcome_status, answer=answer, error=error, iterations=iterations,
                         usage=usage, cost=cost, assisted=assisted, fault=fault)
    try:
        if outcome_status == AgentStatus.ANSWERED:
            result = interface.submit_answer(task_id, answer or "")
            trial.status = TrialStatus.COMPLETED
            _copy_result(trial, result)
        elif outcome_status == AgentStatus.LIMIT:  # over its cost/token limit: scored on its last reply, if any
            trial.status = TrialStatus.LIMIT
            if answer:
                _copy_result(trial, interface.submit_answer(task_id, answer))
        elif outcome_status == AgentStatus.SURRENDERED:
            result = interface.surrender_task(task_id)
            trial.status = TrialStatus.SURRENDERED
            _copy_result(trial, result)
            trial.surrendered = True
    except Exception as exc:  # the server refused or vanished: report it, do not crash the runner
        log.warning("could not finish trial of %s: %s", task_id, exc)
        verb = "submitting the answer" if outcome_status == AgentStatus.ANSWERED else "surrendering"
        trial.status, trial.error, trial.fault = TrialStatus.ERROR, f"{verb} failed: {exc}", Fault.ENVIRONMENT
    wait = getattr(agent, "wait_seconds", 0.0) or 0.0
    trial.duration = max(0.0, time.perf_counter() - started - wait)
    _report_result(agent, task_id, trial)
    return trial


def _report_result(agent: Any, task_id: str, trial: TrialOutcome) -> None:
    """Tell the agent how its own trial ended, so it never has to ask the server (whose task
    history mixes every arm and benchmark running on it)."""
    report = getattr(agent, "on_trial_result", None)
    if report is None:
        return
    try:
        report(task_id, trial)
    except Exception:  # the trial is finished and scored: an agent's bookkeeping cannot undo that
        log.warning("agent %s failed to take the result of task %s", type(agent).__name__, task_id, exc_info=True)


def _copy_result(trial: TrialOutcome, result: Any) -> None:
    get = result.get if isinstance(result, dict) else lambda key, default=None: getattr(result, key, default)
    score = get("score", None)
    trial.score = float(score) if score is not None else None
    trial.explanation = get("explanation", None)
    trial.trial_id = get("trial_id", None)
    if get("surrendered", False):
        trial.surrendered = True
