"""The worker side of the Dask executors: what runs inside a Dask worker process.

A worker process keeps, for its whole life, one `_WorkerState`: the spec (per digest), one
embedded environment server per suite, litellm imported once, an event publisher and the
control listener. A Dask task is a `RemoteBatch`: a few jobs of one benchmark, run in order.

Events go to the driver through the scheduler's event log (`log_event` on EVENT_TOPIC), collected
in the publisher and flushed every PUBLISH_INTERVAL seconds and at the end of each batch: one
message per flush, not per event, and that message is one JSON text (a list of `Event.to_dict()`),
encoded once here and decoded once on the driver: Dask checks and msgpacks one string instead of
every nested event field (in the worker, the scheduler and the driver). Controls come back the
same way: the driver logs commands on CONTROL_TOPIC, and each worker's client subscribes to it
(`subscribe_topic`); a command reaches the worker-local `ControlRegistry` of its run (one run of a
benchmark: a resume is another run, so the stop that ended the first never reaches it), which holds
the trials running here.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from corral_core.agents.breakpoints import Breakpoint, BreakpointSet
from corral_core.events import Event, TrialFinishedData
from corral_core.runner.live_trials import ControlRegistry

log = logging.getLogger(__name__)

EVENT_TOPIC = "corral-events"
CONTROL_TOPIC = "corral-controls"
PUBLISH_INTERVAL = 0.1  # seconds between event flushes from a worker
PUBLISH_BATCH = 2000  # events per message at most
KEPT_RUNS = 32  # benchmarks whose controls a worker remembers (oldest forgotten first)
LIMIT_PREFIX = "corral-llm "  # the name of a cluster-wide max_connections semaphore, + model and api_base


@dataclass
class RemoteJob:
    """One job as plain data: independent trials, a reflection series or a chain round (episode)."""

    kind: str
    arm: str
    links: list[tuple[str, int]]
    episode_id: str | None = None
    upstream_passed: dict[str, bool] = field(default_factory=dict)  # chain links finished earlier
    inputs: dict[str, str] | None = None  # their outputs (resume of a cut round)


@dataclass
class RemoteBatch:
    """One Dask task: jobs of one benchmark, with what a worker needs to run them."""

    spec_data: dict[str, Any]
    base_dir: str
    source: str
    digest: str
    benchmark_id: str
    start_paused: bool
    approval: str | None
    jobs: list[RemoteJob]
    server_url: str | None = None  # a shared environment server (--server); else one embedded per worker
    token: str | None = None
    threads: int = 1  # jobs of this batch run at once on the worker (the spec's `parallel` over the cluster)
    hold_on_breakpoints: bool = False  # a person watches (the workbench): a breakpoint hit pauses the trial
    breakpoints: list[str] = field(default_factory=list)  # the run's breakpoints when the batch was sent
    run: str = ""  # this run's id: controls are per run (a resume of the benchmark is another run)


@dataclass
class RemoteTrial:
    """A finished trial as the driver gets it back (its events came separately)."""

    trial_id: str
    task_id: str
    data: TrialFinishedData
    chain_output: bool = False  # a completed chain link: the driver records its output for resume


class _Publisher:
    """Sends events to the driver through the worker's Dask event log, from any thread, in batches."""

    def __init__(self, worker: Any) -> None:
        self._worker = worker
        self._lock = threading.Lock()
        self._buffer: list[str] = []  # each event as JSON
        self._wake = threading.Event()
        threading.Thread(target=self._flush_periodically, name="corral-publish", daemon=True).start()

    def emit(self, event: Event) -> None:
        try:
            message = json.dumps(event.to_dict(), default=str)  # encoded now: the data may change after emit
        except Exception:  # a sink never raises
            log.warning("could not encode a %s event for the driver", event.kind.value, exc_info=True)
            return
        with self._lock:
            self._buffer.append(message)
            full = len(self._buffer) >= PUBLISH_BATCH
        if full:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            batch, self._buffer = self._buffer, []
            if batch:  # under the lock: batches leave in emission order
                try:
                    self._worker.log_event(EVENT_TOPIC, f"[{','.join(batch)}]")
                except Exception:
                    log.warning("could not publish %d events to the driver", len(batch), exc_info=True)

    def _flush_periodically(self) -> None:
        while not self._wake.wait(PUBLISH_INTERVAL):
            self.flush()

    def close(self) -> None:
        self._wake.set()
        self.flush()


class _RunControls(ControlRegistry):
    """A run's trials running on this worker; commands for a trial not registered yet wait.

    The driver sends a run-wide command (pause / resume / cancel all) once for the run and once per
    trial it knows, both with the same `cause`: a trial gets it once — from the run-wide command if it
    was registered here by then, else from its own (a resume must not release a breakpoint's hold
    that began after it)."""

    def __init__(self, *, start_paused: bool, hold_on_breakpoints: bool = False) -> None:
        super().__init__(start_paused=start_paused, hold_on_breakpoints=hold_on_breakpoints)
        self.stopped = threading.Event()
        self.breakpoints: BreakpointSet | None = None  # the run's, shared by its trials here; replaced by command
        self._early: dict[str, list[tuple[str, str | None, str | None]]] = {}
        self._applied: dict[str, set[str]] = {}  # trial id -> causes of run-wide commands it got
        self._wide = threading.Lock()  # a run-wide command and a registration do not interleave

    def register(self, trial_id: str, **kwargs: Any) -> None:
        with self._wide:
            super().register(trial_id, **kwargs)  # registered after a stop: the trial cancels itself (trial.py)
        for op, text, cause in self._early.pop(trial_id, []):
            self.apply_to_trial(trial_id, op, text, cause)

    def unregister(self, trial_id: str) -> bool:
        with self._wide:
            self._applied.pop(trial_id, None)
        return super().unregister(trial_id)

    def run_wide(self, op: str, cause: str | None) -> None:
        with self._wide:
            if cause is not None:
                for trial in self.running():
                    self._applied.setdefault(trial.trial_id, set()).add(cause)
            if op == "cancel_all":
                self.stopped.set()
            getattr(self, op)()

    def apply_to_trial(self, trial_id: str, op: str, text: str | None, cause: str | None = None) -> None:
        controller = self.controller(trial_id)
        if controller is None:
            if len(self._early) < 1000:
                self._early.setdefault(trial_id, []).append((op, text, cause))
            return
        if cause is not None:
            with self._wide:
                if cause in self._applied.get(trial_id, ()):
                    return  # the run-wide command reached it already
                self._applied.setdefault(trial_id, set()).add(cause)
        if op == "send":
            self.send(trial_id, text or "")
        else:
            getattr(controller, op)()


class _WorkerState:
    """What one worker process keeps for its life."""

    def __init__(self) -> None:
        from distributed import get_client, get_worker

        self.publisher = _Publisher(get_worker())
        self.specs: dict[str, tuple[Any, Any]] = {}  # digest and server -> (spec, task id -> router)
        self.servers: list[Any] = []
        self.routers: list[Any] = []
        self.runs: OrderedDict[str, _RunControls] = OrderedDict()
        self.lock = threading.Lock()
        client = get_client()
        client.subscribe_topic(CONTROL_TOPIC, self._on_command)
        self._history = [message for _, message in client.get_events(CONTROL_TOPIC)]  # sent before we listened

    def close(self) -> None:
        """Stop the servers (their thread pools would keep the worker process alive for seconds)."""
        for controls in self.runs.values():
            controls.close()
        for router in self.routers:
            router.close()
        for server in self.servers:
            server.stop()
        self.publisher.close()

    def run_controls(self, batch: RemoteBatch) -> _RunControls:
        run = batch.run or batch.benchmark_id
        with self.lock:
            controls = self.runs.get(run)
            if controls is None:
                controls = self.runs[run] = _RunControls(start_paused=batch.start_paused,
                                                         hold_on_breakpoints=batch.hold_on_breakpoints)
                controls.breakpoints = BreakpointSet(Breakpoint.parse(text) for text in batch.breakpoints)
                while len(self.runs) > KEPT_RUNS:
                    self.runs.popitem(last=False)[1].close()
                history = [m for m in self._history if _run_of(m) == run]
            else:
                history = []
        for message in history:
            self._apply(controls, message)
        return controls

    def _on_command(self, item: tuple[float, Any]) -> None:
        message = item[1]
        with self.lock:
            self._history.append(message)
            if len(self._history) > 10_000:
                del self._history[:5_000]
            controls = self.runs.get(_run_of(message))
        if controls is not None:
            self._apply(controls, message)

    @staticmethod
    def _apply(controls: _RunControls, message: dict[str, Any]) -> None:
        op, trial_id, cause = str(message.get("op")), message.get("trial_id"), message.get("cause")
        if trial_id:
            controls.apply_to_trial(str(trial_id), op, message.get("text"), cause)
        elif op == "breakpoints" and controls.breakpoints is not None:
            controls.breakpoints.replace(Breakpoint.parse(text) for text in json.loads(message.get("text") or "[]"))
        elif op in ("pause_all", "step_all", "resume_all", "cancel_all"):
            controls.run_wide(op, cause)

    def spec_for(self, batch: RemoteBatch) -> tuple[Any, Any]:
        key = f"{batch.digest} {batch.server_url or ''}"
        with self.lock:
            known = self.specs.get(key)
            if known is None:
                known = self.specs[key] = self._load(batch)
            return known

    def _load(self, batch: RemoteBatch) -> tuple[Any, Any]:
        from corral_core.client import CorralRouter
        from corral_core.llm import preload
        from corral_core.runner.jobs import client_timeout
        from corral_core.runner.trial import model_settings
        from corral_core.server import EmbeddedServer, PolicyGate, create_app
        from corral_core.spec import spec_from_dict

        spec = spec_from_dict(batch.spec_data, Path(batch.base_dir), source=batch.source)
        if spec.digest != batch.digest:
            raise RuntimeError(f"the worker sees a different spec (digest {spec.digest[:12]}, driver "
                               f"{batch.digest[:12]}): its suite files or scripts differ from the driver's")
        # litellm's import, once per worker process (done already in a worker forked by `processes`)
        preload(model_settings(arm) for arm in spec.arms)
        if any(arm.model.max_connections for arm in spec.arms):
            _share_connection_limits()
        timeout = client_timeout(spec.timeouts)
        if batch.server_url is not None:  # the driver checked its tasks and approval policy
            shared = CorralRouter(batch.server_url, default_verbosity=None, token=batch.token, timeout=timeout)
            self.routers.append(shared)
            return spec, lambda task_id: shared
        gate = PolicyGate(approve=spec.approval == "approve")
        by_task: dict[str, Any] = {}
        for suite in spec.suites:
            app = create_app(suite, gate=gate, sink=self.publisher, tool_timeout=spec.timeouts.tool,
                             grader_timeout=spec.timeouts.grader, telemetry=False)
            server = EmbeddedServer(app)
            self.servers.append(server)
            router = CorralRouter(server.start(), default_verbosity=None, timeout=timeout)
            self.routers.append(router)
            for task_id in suite.task_ids:
                by_task[task_id] = router
        return spec, by_task.__getitem__


def _run_of(message: dict[str, Any]) -> str:
    """The run a control command is for (its benchmark id from drivers that did not say)."""
    return str(message.get("run") or message.get("benchmark_id"))


def _share_connection_limits() -> None:
    """max_connections holds across all workers: each slot is a lease of a cluster-wide Dask Semaphore."""
    from distributed import Semaphore

    from corral_core.llm import retry

    semaphores: dict[str, Any] = {}

    def cluster_slot(key: str, limit: int) -> Any:
        name = f"{LIMIT_PREFIX}{key} x{limit}"
        if name not in semaphores:
            semaphores[name] = Semaphore(max_leases=limit, name=name)
        return semaphores[name]

    retry.set_slot_factory(cluster_slot)


_state_lock = threading.Lock()
_state: _WorkerState | None = None


def _worker_state() -> _WorkerState:
    global _state
    with _state_lock:
        if _state is None:
            _state = _WorkerState()
        return _state


def close_worker_state() -> None:
    global _state
    with _state_lock:
        state, _state = _state, None
    if state is not None:
        state.close()


def worker_plugin() -> Any:
    """A Dask WorkerPlugin that closes this module's worker state when the worker closes."""
    from distributed import WorkerPlugin

    class CorralWorker(WorkerPlugin):
        name = "corral-tui"

        def teardown(self, worker: Any) -> None:
            close_worker_state()

    return CorralWorker()


def run_batch(batch: RemoteBatch) -> list[RemoteTrial]:
    """Run one batch on a Dask worker (the task function); its events are flushed before it returns.

    `batch.threads` jobs run at once (their own threads), so a spec's `parallel` holds across the
    cluster even when it is larger than the cluster's Dask threads (trials that wait on a provider)."""
    from corral_core.runner.trial import RunContext

    state = _worker_state()
    spec, router_for = state.spec_for(batch)
    controls = state.run_controls(batch)
    ctx = RunContext(spec, batch.benchmark_id, state.publisher, controls, router_for, controls.stopped,
                     approval=batch.approval, breakpoints=controls.breakpoints)
    arms = {arm.name: arm for arm in spec.arms}
    results: list[list[RemoteTrial]] = [[] for _ in batch.jobs]
    try:
        threads = min(batch.threads, len(batch.jobs))
        if threads <= 1:
            for job, finished in zip(batch.jobs, results, strict=True):
                _run_job(ctx, arms[job.arm], job, finished)
        else:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="corral-trial") as pool:
                for future in [pool.submit(_run_job, ctx, arms[job.arm], job, finished)
                               for job, finished in zip(batch.jobs, results, strict=True)]:
                    future.result()
    finally:
        state.publisher.flush()
    return [trial for finished in results for trial in finished]


def _run_job(ctx: Any, arm: Any, job: RemoteJob, finished: list[RemoteTrial]) -> None:
    """One job's trials in order (jobs.run_job, as on the driver's pool), collected for the driver."""
    from corral_core.runner.jobs import run_job

    suite = next(s for s in ctx.spec.suites if job.links[0][0] in s.task_ids) if job.kind == "episode" else None
    run_job(ctx, arm, job.kind, job.links, _Collected(ctx, finished), episode_id=job.episode_id, suite=suite,
            passed=job.upstream_passed, inputs=lambda: job.inputs)


class _Collected:
    """A job on a Dask worker (jobs.JobSteps): its finished trials go back to the driver as plain data."""

    def __init__(self, ctx: Any, finished: list[RemoteTrial]) -> None:
        self.ctx, self.trials = ctx, finished

    def stopped(self) -> bool:
        return bool(self.ctx.stop.is_set())

    def finished(self, task_id: str, index: int, trial_id: str, data: TrialFinishedData, chain_output: bool) -> bool:
        self.trials.append(RemoteTrial(trial_id, task_id, _plain(data), chain_output=chain_output))
        return True


def _plain(data: TrialFinishedData) -> TrialFinishedData:
    """The payload as JSON makes it (what crosses to the driver)."""
    return cast(TrialFinishedData, json.loads(json.dumps(data, default=str)))
