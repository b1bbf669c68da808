"""Fork a stored trial at an iteration: replay its conversation up to there, then run live.

A fork is a benchmark of one trial with its parent's arm, task and trial index, so the
`replay/<parent benchmark>` model finds the parent's recorded LLM responses in the store turn by turn.
Its tool calls run again on a fresh trial of the environment server, which rebuilds the environment's
state; a tool that answers differently than it did changes the next request, and replay then ends the
fork with a `replay_divergence` error naming the turn, so a fork never silently drifts from its parent.
Interventions an operator sent the parent before the fork point are posted again at their
iterations, so the replayed requests match the recorded ones. At the fork point a hook gives the
agent back the arm's own model and posts the new intervention (if any) to the trial's inbox, which
delivers it before the first live LLM call. The fork is stored with its parent trial and fork
point, and is always assisted.

    runner = ForkRunner(repository, writer, "tr_...", iteration=2, intervention="Check the units.")
    result = runner.run()           # runner.fork_trial_id is the new trial
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from corral_core.agents.interventions import INBOX_SOURCE
from corral_core.domain import TrialStatus
from corral_core.errors import UserError
from corral_core.events import EventKind
from corral_core.runner.benchmark_runner import BenchmarkRunner
from corral_core.runner.collaborators import RunRepository, StoreSink
from corral_core.runner.plan import ForkPoint, Job, TrialKey
from corral_core.runner.results import stored_spec
from corral_core.spec import ArmSpec, BenchmarkSpec
from corral_core.store.models import TimelineEntry

FORKABLE_AGENTS = ("react", "tool_calling")  # a planner's executor and a reflection's memory are not replayed


class ForkRunner(BenchmarkRunner):
    """Runs the fork of one stored trial as a benchmark of its own (`run()` as for any benchmark).

    Other keyword arguments are BenchmarkRunner's (sink, server_url, token, controls, gate)."""

    def __init__(self, repository: RunRepository, writer_sink: StoreSink | None, trial_id: str, iteration: int,
                 intervention: str | None = None, **kwargs: Any) -> None:
        spec, self.arm, self.parent_index, fork = plan_fork(repository, trial_id, iteration, intervention)
        super().__init__(spec, repository=repository, writer_sink=writer_sink, auto_resume=False, **kwargs)
        self.fork = fork

    @property
    def fork_trial_id(self) -> str | None:
        """The new trial's id, once it has run."""
        with self._rows_lock:
            return self._first_trial_id

    def _plan(self, benchmark_id: str, done: dict[TrialKey, Any]) -> list[Job]:
        return [Job("single", self.arm, [(self.spec.task_ids[0], self.parent_index)])]

    def _replayed(self) -> set[str]:
        """The fork replays its parent's recorded responses up to the fork point."""
        assert self.fork is not None
        return super()._replayed() | {self.fork.parent_benchmark_id}


def plan_fork(repository: RunRepository, trial_id: str, iteration: int, intervention: str | None
              ) -> tuple[BenchmarkSpec, ArmSpec, int, ForkPoint]:
    """The fork's spec (the parent's, down to its arm and task), arm, trial index and fork point.
    UserError when the trial cannot be forked there."""
    trial = repository.trial(trial_id)
    if trial is None:
        raise UserError(f"no trial {trial_id!r} in the store.", where="fork", fix="pick a trial in the history.")
    benchmark = repository.get_benchmark(trial.benchmark_id) if trial.benchmark_id else None
    if benchmark is None:
        raise UserError(f"trial {trial_id} belongs to no stored benchmark, so its spec is unknown.", where="fork",
                        fix="fork a trial of a benchmark run by corral-tui.")
    if trial.status == TrialStatus.RUNNING:
        raise UserError(f"trial {trial_id} is still running.", where="fork", fix="fork it once it has finished.")
    if not 0 <= iteration < trial.iterations:
        raise UserError(f"trial {trial_id} ran {trial.iterations} iteration(s); it cannot be forked at iteration "
                        f"{iteration + 1}.", where="fork", fix=f"pick an iteration from 1 to {trial.iterations}.")
    if trial.episode_id:
        raise UserError(f"trial {trial_id} is a link of a chained task, whose inputs come from its episode.",
                        where="fork", fix="fork a trial of an independent task.")
    spec = stored_spec(benchmark)
    arm = next((a for a in spec.arms if a.name == trial.arm), None)
    if arm is None:
        raise UserError(f"the spec of benchmark {benchmark.id} has no arm {trial.arm!r} any more.", where="fork",
                        fix="fork a trial whose arm its stored spec still names.")
    if arm.agent.type not in FORKABLE_AGENTS:
        raise UserError(f"trial {trial_id} ran a {arm.agent.type} agent, which a fork cannot replay.",
                        where="fork", fix=f"fork a trial of a {' or '.join(FORKABLE_AGENTS)} agent.")
    where = f"fork of {trial_id} at iteration {iteration + 1}"
    header = f"# {where} (arm {arm.name}, task {trial.task_id}, trial {trial.trial_index})\n"
    fork_spec = dataclasses.replace(spec, name=f"{spec.name} ({where})", arms=(arm,), model=arm.model,
                                    tasks=(trial.task_id,),
                                    trials_per_task=1, executor="local", text=header + spec.text)
    replayed = tuple(_inbox_interventions(repository.timeline(trial_id), iteration))
    point = ForkPoint(trial_id, benchmark.id, iteration, (intervention or "").strip() or None, replayed)
    return fork_spec, arm, trial.trial_index, point


def _inbox_interventions(timeline: list[TimelineEntry], before: int) -> Iterator[tuple[int, str]]:
    """(iteration, text) of each intervention a person sent that reached the trial before iteration `before`."""
    for entry in timeline:
        event = entry.event()
        if event is not None and event.kind is EventKind.INTERVENTION_APPLIED \
                and event.data.get("source") == INBOX_SOURCE:
            named = event.data.get("iteration")
            if isinstance(named, int) and named < before:
                yield named, str(event.data.get("text"))

