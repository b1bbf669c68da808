"""The job loop, one for every executor: the driver's worker pool and a Dask worker run a job's trials
through `run_job`, and differ only in their `JobSteps` (what "stop" means, where a finished trial goes).

Below both executors (benchmark_runner.py, dask_worker.py), so neither imports the other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from corral_core.domain import TrialStatus
from corral_core.spec.model import Timeouts

if TYPE_CHECKING:
    from corral_core.env import Suite
    from corral_core.events import TrialFinishedData
    from corral_core.runner.trial import RunContext
    from corral_core.spec import ArmSpec

log = logging.getLogger(__name__)

HTTP_MARGIN = 30.0  # seconds the environment client waits beyond the server's own limits
UNLIMITED_HTTP_PART = 300.0  # stands in for a spec timeout of null: the client never waits forever


def client_timeout(timeouts: Timeouts) -> float:
    """How long one request to the environment server may take: its limits plus a margin, always finite."""
    def finite(value: float | None) -> float:
        return UNLIMITED_HTTP_PART if value is None else value

    return max(finite(timeouts.tool) + finite(timeouts.approval), finite(timeouts.grader)) + HTTP_MARGIN


class JobSteps(Protocol):
    """What an executor does around the shared loop: the local pool writes to the store, a Dask worker
    collects the trials for the driver."""

    def stopped(self) -> bool:
        """True once no further trial of the job may start (checked before each one)."""

    def finished(self, task_id: str, index: int, trial_id: str, data: TrialFinishedData, chain_output: bool) -> bool:
        """A trial of the job ended (`chain_output`: a completed chain link whose output a resume needs);
        False ends the job here (the store refused it, the run lost its benchmark)."""


def run_job(ctx: RunContext, arm: ArmSpec, kind: str, links: Sequence[tuple[str, int]], steps: JobSteps, *,
            episode_id: str | None = None, suite: Suite | None = None, passed: Mapping[str, bool] | None = None,
            inputs: Callable[[], dict[str, str] | None] | None = None) -> None:
    """One job's trials in order, the same wherever it runs: a single trial, a reflection series (one
    agent for all of them) or a chain round (`episode_id`, the links of `suite` in dependency order:
    `passed` says how links finished earlier ended, `inputs` reads their outputs when the round starts)."""
    from corral_core.runner.trial import build_agent, execute_trial

    if ctx.stop.is_set():
        return
    if kind == "episode":
        assert suite is not None and episode_id is not None
        _run_episode(ctx, arm, links, steps, episode_id, suite, dict(passed or {}),
                     inputs() if inputs is not None else None)
        return
    agent = build_agent(arm, ctx.spec, None, ctx.sink) if kind == "series" else None
    for task_id, index in links:
        if steps.stopped():
            return
        trial_id, data = execute_trial(ctx, arm, task_id, index, agent=agent)
        if not steps.finished(task_id, index, trial_id, data, False):
            return


def _run_episode(ctx: RunContext, arm: ArmSpec, links: Sequence[tuple[str, int]], steps: JobSteps, episode_id: str,
                 suite: Suite, passed: dict[str, bool], inputs: dict[str, str] | None) -> None:
    """A chain round: a link whose upstream link failed is skipped, the others run in the episode."""
    from corral_core.metrics import success
    from corral_core.runner.trial import execute_trial, record_of, skip_trial

    router = None
    try:
        for task_id, index in links:
            if steps.stopped():
                return
            failed = [d for d in suite.tasks[task_id].depends_on if d in passed and not passed[d]]
            if failed:
                trial_id, data = skip_trial(ctx, arm, task_id, index, episode_id, failed)
            else:
                router = ctx.router_for(task_id)
                trial_id, data = execute_trial(ctx, arm, task_id, index, episode_id=episode_id, inputs=inputs)
            passed[task_id] = success(record_of(task_id, data), ctx.spec.pass_threshold)
            completed = not failed and data["status"] == TrialStatus.COMPLETED
            if not steps.finished(task_id, index, trial_id, data, completed):
                return
    finally:
        if router is not None:
            try:
                router.close_episode(episode_id)
            except Exception as exc:  # the episode goes with the server anyway
                log.debug("closing episode %s failed: %s", episode_id, exc)
