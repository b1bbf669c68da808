"""Which trials a run still owes, grouped into jobs for the worker pool.

- An independent task's trial is a job of its own.
- A chain round is one job: per arm and trial index, the chained tasks of a suite run in
  dependency order as one *episode*, so each link sees its upstream links' outputs of that round
  and no other.
- A reflection agent learns across the trials of a task, so its trials of one task form one job,
  run in order by one agent.

Resume hands in the trials already done; a job keeps only what is left (a cut chain round re-runs
only its unfinished links, and knows how the finished ones ended).

A fork's `ForkPoint` is plan data too: fork.py builds it from the stored parent, and a trial attaches it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from corral_core.agents import AgentHooks, HookContext, HookPoint, InterventionInbox
from corral_core.env import Suite
from corral_core.events import TrialStartedData
from corral_core.metrics import TrialResult
from corral_core.spec import ArmSpec, BenchmarkSpec

TrialKey = tuple[str, str, int]  # (arm, task_id, trial_index): the identity resume goes by
JobKind = Literal["single", "series", "episode"]
FORK_HOOK = "fork"  # the hook's name in HOOK_FIRED at the fork point
FORK_PRIORITY = 700  # after the run controller's pause gate (1000), before the intervention inbox (500)


@dataclass
class Job:
    """Trials one worker runs in order. `links` are (task_id, trial_index) pairs still to run."""

    kind: JobKind
    arm: ArmSpec
    links: list[tuple[str, int]]
    episode_id: str | None = None
    suite: Suite | None = None
    finished: dict[str, TrialResult] = field(default_factory=dict)  # episode links done earlier

    @property
    def size(self) -> int:
        return len(self.links)


def episode_id_for(benchmark_id: str, arm: str, index: int, chain: int = 0) -> str:
    """The episode of one chain round; a second chained suite in one spec gets a suffix."""
    base = f"{benchmark_id}:{arm}:{index}"
    return base if chain == 0 else f"{base}:{chain}"


def chained_tasks(suite: Suite, selected: list[str]) -> list[str]:
    """The selected tasks of `suite` that take part in a chain, in dependency order."""
    return suite.chained_task_ids(selected)


def plan_jobs(spec: BenchmarkSpec, benchmark_id: str, done: Mapping[TrialKey, TrialResult]) -> list[Job]:
    """Every job still to run, ordered so all arms advance together (round by round)."""
    selected = spec.task_ids
    chains: list[tuple[int, Suite, list[str]]] = []
    in_chain: set[str] = set()
    for suite in spec.suites:
        links = chained_tasks(suite, selected)
        if links:
            chains.append((len(chains), suite, links))
            in_chain.update(links)
    singles = [t for t in selected if t not in in_chain]
    jobs: list[Job] = []
    for arm in spec.arms:
        if arm.agent.type != "reflection":
            continue
        for task_id in singles:
            pending = [(task_id, i) for i in range(spec.trials_per_task) if (arm.name, task_id, i) not in done]
            if pending:
                jobs.append(Job("series", arm, pending))
    for index in range(spec.trials_per_task):
        for arm in spec.arms:
            for chain_no, suite, links in chains:
                job = _episode_job(arm, index, links, suite, done, episode_id_for(benchmark_id, arm.name, index,
                                                                                   chain_no))
                if job is not None:
                    jobs.append(job)
            if arm.agent.type == "reflection":
                continue
            for task_id in singles:
                if (arm.name, task_id, index) not in done:
                    jobs.append(Job("single", arm, [(task_id, index)]))
    return jobs


def _episode_job(arm: ArmSpec, index: int, links: list[str], suite: Suite, done: Mapping[TrialKey, TrialResult],
                 episode_id: str) -> Job | None:
    pending = [(t, index) for t in links if (arm.name, t, index) not in done]
    if not pending:
        return None
    finished = {t: done[(arm.name, t, index)] for t in links if (arm.name, t, index) in done}
    return Job("episode", arm, pending, episode_id, suite, finished)


@dataclass(frozen=True)
class ForkPoint:
    """Where a fork leaves its parent: iterations before `iteration` (0-based) are replayed."""

    parent_trial_id: str
    parent_benchmark_id: str
    iteration: int
    intervention: str | None = None
    replayed: tuple[tuple[int, str], ...] = ()  # (iteration, text): the parent's own operator interventions

    def started_data(self) -> TrialStartedData:
        """What TRIAL_STARTED carries for a fork (the store keeps the parent and the fork point)."""
        return TrialStartedData(parent_trial_id=self.parent_trial_id, fork_iteration=self.iteration, assisted=True)

    def attach(self, hooks: AgentHooks, inbox: InterventionInbox) -> None:
        """Replay from the task's start, go live at the fork point (with the intervention, if any)."""
        live: list[Any] = []
        replay_model = f"replay/{self.parent_benchmark_id}"

        def replay(ctx: HookContext) -> None:
            live.append(ctx.agent.settings)
            ctx.agent.settings = dataclasses.replace(ctx.agent.settings, model=replay_model)
            ctx.agent.mark_assisted()  # a person chose where it goes live: never an unassisted result

        def go_live(ctx: HookContext) -> None:
            for iteration, text in self.replayed:  # the parent's requests held them: so must the fork's
                if iteration == ctx.iteration:
                    inbox.post(text)
            if ctx.iteration != self.iteration:
                return
            ctx.agent.settings = live.pop()
            if self.intervention:
                inbox.post(self.intervention)
            hooks.remove(HookPoint.BEFORE_ITERATION, go_live)
            go_live.quiet = False  # type: ignore[attr-defined]  # reported (HOOK_FIRED) at the fork point only

        replay.hook_name = "fork_replay"  # type: ignore[attr-defined]
        replay.quiet = True  # type: ignore[attr-defined]
        go_live.hook_name = FORK_HOOK  # type: ignore[attr-defined]
        go_live.quiet = True  # type: ignore[attr-defined]
        hooks.register(HookPoint.BEFORE_TASK, replay, FORK_PRIORITY)
        hooks.register(HookPoint.BEFORE_ITERATION, go_live, FORK_PRIORITY)
