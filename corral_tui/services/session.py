"""The run session: the one run in progress, its controls (pause, step, resume, cancel) and interventions.

`run()` blocks until the run ends, so the app calls it from a thread worker; every other method is
quick and thread-safe. Stopping the run also decides every pending approval at once (`cancelled`),
so a stop never waits for the approval timeout.

With `--executor processes` or `dask://HOST:PORT` the trials run on Dask workers, which use this
workbench's environment server (its URL goes to the runner as their shared server): their
confirm-level calls are asked here, in the approvals inbox, and their events and controls travel
through the runner's EventBridge as if the trials ran in this process.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from corral_core.domain import BenchmarkStatus
from corral_core.errors import UserError
from corral_tui.run_request import RunRequest
from corral_tui.services.approvals import ApprovalInbox
from corral_tui.services.catalogue import SuiteCatalogue
from corral_tui.services.lifecycle import ServiceLifecycle
from corral_tui.services.queries import SERVICES_WAIT

if TYPE_CHECKING:
    from corral_core.agents.breakpoints import Breakpoint
    from corral_core.runner import BenchmarkRunner, ControlRegistry
    from corral_core.spec import BenchmarkSpec

CLOSE_TIMEOUT = 0.5  # seconds the run thread gets to end when the app quits: it takes ~0.1 s, unless a
# provider call is in flight, which cannot be interrupted; then the run is recorded interrupted at once
# and its thread left to end on its own (quitting took 3-4 s waiting for it)
Command = Literal["pause", "step", "resume"]
STOP_REASON = "the operator stopped the run"


@dataclass(frozen=True)
class RunSummary:
    benchmark_id: str
    status: str
    headline_score: float | None
    attempt_status: str | None
    previous_best: float | None
    trials_run: int
    errored: int
    fork_of: str | None = None  # the parent trial, when the run was a fork
    attempt_text: str = ""  # how the attempt status was reached (metrics.Attempt.text)


@dataclass
class ActiveRun:
    request: RunRequest | None  # None for a fork
    total: int
    model: str
    controls: ControlRegistry
    cancel: threading.Event = field(default_factory=threading.Event)
    runner: BenchmarkRunner | None = None
    thread: threading.Thread | None = None


def check_models(spec: BenchmarkSpec) -> None:
    """Refuse a model litellm cannot route before anything runs (UserError naming the fix)."""
    from corral_core.spec.preflight import check_models as check_routes

    check_routes(spec, file=None, where="run form (Model)", fix="correct the model id; `scripted/<script>` runs "
                                                                  "offline.")


class RunSession:
    """Runs one benchmark at a time from the run form, and steers it while it runs."""

    def __init__(self, catalogue: SuiteCatalogue, services: ServiceLifecycle, approvals: ApprovalInbox, *,
                 approval_timeout: float, max_connections: int | None = None, executor: str = "local",
                 workers: int | None = None) -> None:
        self.catalogue = catalogue
        self.max_connections = max_connections
        self.executor = executor  # where the trials run; on Dask the workers use this workbench's server
        self.workers = workers
        self.cluster: Any = None  # the DaskExecutor of every run (started by the first), closed with the session
        self.services = services
        self.approvals = approvals
        self.approval_timeout = approval_timeout
        self.active: ActiveRun | None = None
        # benchmark id -> the breakpoints its run ended with, when changed during it (b): its forks use them
        self.changed_breakpoints: dict[str, list[Breakpoint]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def closing(self) -> bool:
        return self._closed

    def run(self, request: RunRequest, on_started: Callable[[ActiveRun], None] | None = None) -> RunSummary:
        """Run a benchmark to its end (blocking). Only one run at a time; UserError for mistakes."""
        from corral_core.runner import BenchmarkRunner

        spec = self.catalogue.build_spec(request, self.approval_timeout)
        check_models(spec)
        if self.max_connections:  # --max-connections (the run form carries --model-base-url itself)
            spec = spec.with_overrides(max_connections=self.max_connections)
        url = self._server_for(request.suite)
        services = self.services

        def runner(controls: ControlRegistry) -> BenchmarkRunner:
            return BenchmarkRunner(spec, repository=services.repository, writer_sink=services.writer,
                                   sink=services.ui_sink, server_url=url, token=services.token, controls=controls,
                                   auto_resume=False, executor=self.executor, workers=self.workers,
                                   cluster=self._cluster())

        return self._drive(runner, request.approval, request.start_paused, on_started, request)

    def fork(self, trial_id: str, iteration: int, intervention: str | None,
             on_started: Callable[[ActiveRun], None] | None = None) -> RunSummary:
        """Fork a stored trial at `iteration` (0-based) and run the fork to its end (blocking), as a run:
        it replays the trial up to there, then goes on live, with `intervention` delivered first."""
        from corral_core.runner.fork import ForkRunner, plan_fork

        services = self.services
        repository = services.store(SERVICES_WAIT)
        spec = plan_fork(repository, trial_id, iteration, intervention)[0]
        suite = spec.suites[0]
        opened = self.catalogue.suites.get(suite.name)
        if opened is None or Path(opened.path or "") != Path(suite.path or ""):
            raise UserError(f"the trial ran suite {suite.name!r} ({suite.path}), which this workbench has not "
                            "opened.", where="fork", fix=f"start corral-tui with {suite.path} to fork it.")
        url = self._server_for(suite.name)

        parent = repository.trial(trial_id)
        changed = self.changed_breakpoints.get(parent.benchmark_id or "") if parent is not None else None

        def runner(controls: ControlRegistry) -> ForkRunner:
            fork = ForkRunner(repository, services.writer, trial_id, iteration, intervention,
                              sink=services.ui_sink, server_url=url, token=services.token, controls=controls)
            if changed is not None:  # the parent's run changed its breakpoints (b): the fork uses them too
                fork.set_breakpoints(changed)
            return fork

        summary = self._drive(runner, spec.approval, False, on_started, None)
        return replace(summary, fork_of=trial_id)

    def resume(self, benchmark_id: str, on_started: Callable[[ActiveRun], None] | None = None) -> RunSummary:
        """Finish an interrupted (or stopped) benchmark from its stored spec (blocking): its finished trials
        are kept, the missing ones run, none twice (the runner's resume)."""
        from corral_core.runner import BenchmarkRunner
        from corral_core.runner.results import stored_spec

        services = self.services
        repository = services.store(SERVICES_WAIT)
        info = repository.get_benchmark(benchmark_id)
        if info is None:
            raise UserError(f"no benchmark {benchmark_id!r} in the store.", where="resume")
        if info.status == BenchmarkStatus.FINISHED:
            raise UserError(f"benchmark {benchmark_id} has finished: every trial ran.", where="resume",
                            fix="open its trials (Enter) or compare them (m); r in the run form starts a new run.")
        spec = stored_spec(info)
        for suite in spec.suites:
            opened = self.catalogue.suites.get(suite.name)
            if opened is None or Path(opened.path or "") != Path(suite.path or ""):
                raise UserError(f"benchmark {benchmark_id} ran suite {suite.name!r} ({suite.path}), which this "
                                "workbench has not opened.", where="resume",
                                fix=f"start corral-tui with --suite {suite.path} to resume it here, or headless: "
                                    f"corral-tui --batch SPEC --resume {benchmark_id}.")
        check_models(spec)
        url = self._server_for(spec.suites[0].name)

        def runner(controls: ControlRegistry) -> BenchmarkRunner:
            return BenchmarkRunner(spec, repository=services.repository, writer_sink=services.writer,
                                   sink=services.ui_sink, server_url=url, token=services.token, controls=controls,
                                   auto_resume=False, executor=self.executor, workers=self.workers,
                                   cluster=self._cluster())

        return self._drive(runner, spec.approval, False, on_started, None, resume_id=benchmark_id)

    def _cluster(self) -> Any:
        """The Dask cluster (or client of `dask://`) all runs share, so its workers and their litellm
        import outlive a run; started by the first run (seconds), None for `local`."""
        if self.executor == "local":
            return None
        if self._closed:
            raise UserError("the workbench is closing.")
        if self.cluster is None:
            from corral_core.runner.executors import DaskExecutor

            self.cluster = DaskExecutor(self.executor, self.workers)
        return self.cluster

    def _server_for(self, suite: str) -> str:
        url = self.services.url_for(suite)
        if url is None:
            raise UserError("the environment server is not running.", where="workbench",
                            fix="wait until the header shows its URL, then start the run again.")
        return url

    def _drive(self, make_runner: Callable[[ControlRegistry], BenchmarkRunner], approval: str, start_paused: bool,
               on_started: Callable[[ActiveRun], None] | None, request: RunRequest | None,
               resume_id: str | None = None) -> RunSummary:
        from corral_core.runner import ControlRegistry

        with self._lock:
            if self.active is not None:
                raise UserError("a run is already in progress.", where="run form",
                                fix="wait for it to finish, or stop it with x.")
            if self._closed:
                raise UserError("the workbench is closing.")
            active = ActiveRun(request, 0, "", ControlRegistry(start_paused=start_paused, hold_on_breakpoints=True),
                               thread=threading.current_thread())
            self.active = active
        try:
            active.runner = make_runner(active.controls)
            active.total, active.model = active.runner.spec.total_trials, active.runner.spec.model.id
            self.approvals.begin_run(approval)
            if on_started is not None:
                on_started(active)
            result = active.runner.run(cancel_event=active.cancel) if resume_id is None \
                else active.runner.run(resume_id=resume_id, cancel_event=active.cancel)
        finally:
            with self._lock:
                self.active = None
        return RunSummary(result.benchmark_id, result.status, result.headline_score, result.attempt_status,
                          result.previous_best, result.trials_run, result.errored,
                          attempt_text=result.attempt.text if result.attempt is not None else "")

    def stop(self, reason: str = STOP_REASON) -> bool:
        """Stop the run in progress: running trials are cancelled, pending approvals decided
        `cancelled`, the run is recorded interrupted. False if no run is in progress."""
        active = self.active
        if active is None:
            return False
        active.cancel.set()
        if active.runner is not None:
            active.runner.stop()
        active.controls.cancel_all()
        self.approvals.cancel_all(reason)
        return True

    def control(self, command: Command, trial_id: str | None) -> bool:
        """pause / step / resume one trial (`trial_id`) or all of them (None). False if not running."""
        active = self.active
        if active is None:
            return False
        registry = active.controls
        if trial_id is None:
            {"pause": registry.pause_all, "step": registry.step_all, "resume": registry.resume_all}[command]()
            return True
        controller = registry.controller(trial_id)
        if controller is None:
            return False
        {"pause": controller.pause, "step": controller.step, "resume": controller.resume}[command]()
        return True

    def cancel_trial(self, trial_id: str, reason: str = "the operator ended the trial", *,
                     decide_pending: bool = True) -> bool:
        """End one running trial (status `cancelled`), deciding its pending approvals `cancelled`
        (unless the caller decides them itself). False if it is not running."""
        active = self.active
        controller = active.controls.controller(trial_id) if active is not None else None
        if controller is None:
            return False
        controller.cancel()
        if decide_pending:
            self.approvals.cancel_all(reason, trial_id)
        return True

    def breakpoints(self) -> tuple[Breakpoint, ...] | None:
        """The breakpoints of the run in progress (None: no run)."""
        active = self.active  # read once: the run thread sets it to None when the run ends
        runner = active.runner if active is not None else None
        return runner.breakpoints.points if runner is not None else None

    def set_breakpoints(self, points: list[Breakpoint]) -> bool:
        """Replace the run's breakpoints: every running trial checks the new ones from its next check
        point on, and trials that start later too. False if no run is in progress."""
        active = self.active  # read once: the run thread sets it to None when the run ends
        runner = active.runner if active is not None else None
        if runner is None:
            return False
        runner.set_breakpoints(points)
        if runner.benchmark_id:
            self.changed_breakpoints[runner.benchmark_id] = list(points)
        return True

    def intervene(self, trial_id: str, text: str) -> bool:
        """Send a message to a running trial; it reaches the model before its next LLM call."""
        active = self.active
        return bool(active is not None and active.controls.send(trial_id, text))

    def close(self, *, wait: bool = True) -> None:
        """Stop the run (and with `wait`, give its thread a bounded moment to end); later runs are refused."""
        self._closed = True
        self.stop("the workbench is closing")
        active = self.active
        if wait and active is not None and active.thread is not None \
                and active.thread is not threading.current_thread():
            active.thread.join(CLOSE_TIMEOUT)
            runner, repository = active.runner, self.services.repository
            if active.thread.is_alive() and runner is not None and runner.benchmark_id and repository is not None:
                # the process is about to end under the run: record it interrupted (resumable) now, and
                # take its fencing token from the thread, which may still be writing: nothing it writes
                # after this lands (a late trial row or close would overwrite `interrupted`)
                from corral_core.store.ownership import OwnershipLost  # the store loads after the first frame

                with contextlib.suppress(OwnershipLost):  # another process runs it now: that one closes it
                    repository.finish_benchmark(runner.benchmark_id, status=BenchmarkStatus.INTERRUPTED,
                                                token=runner.ownership_token, revoke=True)
        if wait and self.cluster is not None:  # its worker processes must not outlive the workbench
            cluster, self.cluster = self.cluster, None
            cluster.close()
