"""Where trials run: `local` threads in this process (the default), or a Dask cluster.

`processes` starts a Dask `LocalCluster` on this machine (one worker process per core unless told
otherwise, each running THREADS_PER_WORKER trials at once; loopback, free ports, dashboard off);
`dask://HOST:PORT` connects to an existing scheduler (`dask scheduler` + `dask worker` on each
node, or dask-jobqueue on Slurm). Dask does the scheduling: the runner's jobs go out in batches
(a few trials per Dask task, so Dask's per-task cost is paid per batch) and come back as futures;
the worker side is runner/dask_worker.py.

Events: workers log them on EVENT_TOPIC; the driver subscribes (`subscribe_topic`) and the
`EventBridge` hands each one to the run's bus (store writer, TUI queue, batch progress) as if the
trial ran here. A trial that a dead worker's re-run would repeat (same arm, task and index as one
already finished) is dropped whole, so every trial is stored once.

Controls: the bridge registers each remote trial in the run's `ControlRegistry` with a
`RemoteController` and `RemoteInbox`, which log pause / step / resume / cancel / intervention
commands on CONTROL_TOPIC; run-wide commands (pause all, stop) go there too. Workers subscribe.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import multiprocessing
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from corral_core.constants import EXECUTOR_FIX, is_executor
from corral_core.domain import ControlState
from corral_core.errors import UserError
from corral_core.events import (
    Event,
    EventKind,
    EventSink,
    TrialStartedEvent,
    event_from,
)
from corral_core.runner.dask_worker import (
    CONTROL_TOPIC,
    EVENT_TOPIC,
    RemoteBatch,
    RemoteJob,
    RemoteTrial,
    run_batch,
    worker_plugin,
)
from corral_core.runner.live_trials import ControlRegistry

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
BATCHES_PER_WORKER = 4  # a run is cut into about this many Dask tasks per worker ...
MAX_BATCH = 32  # ... of at most this many trials each (an idle worker waits at most one batch at the end)
WAIT_SLICE = 0.1  # seconds between looks at the cancel event
THREADS_PER_WORKER = 2  # trials at once per worker process: one waits on its server while the other runs
EVENTS_GRACE = 60.0  # seconds the driver waits for the events of trials whose results have arrived
# Dask's own per-worker statistical profiler samples every thread 100 times a second: off for our workers.
# Its health checks, system and memory monitors wake each process 50, 2 and 10 times a second: less often
# (measured on an idle 2-worker LocalCluster: 5.3% of a core in all, 1.8% so)
DASK_CONFIG = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "200ms",
               "distributed.admin.system-monitor.interval": "2s", "distributed.admin.system-monitor.disk": False,
               "distributed.worker.memory.monitor-interval": "1s"}
# `processes` workers are forked from a forkserver that has imported what they need (runner/worker_preload.py);
# where there is no forkserver (Windows), Dask's default: each worker starts a fresh interpreter and imports
FORKSERVER = "forkserver" in multiprocessing.get_all_start_methods()
# Dask's scheduler and workers always listen for HTTP (dashboard, identity, workers, logs, call stacks), with
# no Host check: a web page that rebinds its name to 127.0.0.1 could read them. Our own cluster serves no
# route at all (nothing of ours needs them; each answers 404).
NO_HTTP_ROUTES: dict[str, list[str]] = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}
PROCESSES_CONFIG = {**DASK_CONFIG, **NO_HTTP_ROUTES,
                    **({"distributed.worker.multiprocessing-method": "forkserver"} if FORKSERVER else {})}
WORKER_PRELOAD = ["__main__", "corral_core.runner.worker_preload"]


class ClusterLost(Exception):
    """The Dask scheduler (or the connection to it) is gone: an infrastructure failure, never a trial's result.
    The trials it had not finished stay unrun, for a resume on a cluster that works."""


def check_executor(value: str | None) -> str:
    """`local`, `processes` or `dask://HOST:PORT` (None: `local`); anything else is a UserError."""
    text = (value or "local").strip()
    if is_executor(text):
        return text
    raise UserError(f"unknown executor {text!r}.", where="executor", fix=EXECUTOR_FIX)


def batch_size(trials: int, workers: int) -> int:
    """Trials per Dask task: few tasks per worker, none larger than MAX_BATCH."""
    return max(1, min(MAX_BATCH, math.ceil(trials / (max(1, workers) * BATCHES_PER_WORKER))))


def batches(remote: list[RemoteJob], size: int) -> list[list[int]]:
    """Consecutive jobs (indexes) grouped up to `size` trials each; a job is never split."""
    groups: list[list[int]] = []
    count = size
    for i, job in enumerate(remote):
        if count + len(job.links) > size and count > 0:
            groups.append([])
            count = 0
        groups[-1].append(i)
        count += len(job.links)
    return groups


class RemoteController:
    """A trial's controller on the driver: each command is logged for the worker that runs it."""

    blocked = False  # the wait at the gate happens on the worker
    remote = True  # run-wide commands reach its worker with their cause (ControlRegistry._each)

    def __init__(self, send: Callable[..., None], trial_id: str, *, start_paused: bool) -> None:
        self._send = send
        self.trial_id = trial_id
        # updated from the trial's CONTROL_STATE events
        self.state = ControlState.PAUSED if start_paused else ControlState.RUNNING

    def pause(self, cause: str | None = None) -> None:
        self.state = ControlState.PAUSED
        self._send("pause", trial_id=self.trial_id, cause=cause)

    def resume(self, cause: str | None = None) -> None:
        self.state = ControlState.RUNNING
        self._send("resume", trial_id=self.trial_id, cause=cause)

    continue_ = resume

    def step(self) -> None:
        self.state = ControlState.STEPPING
        self._send("step", trial_id=self.trial_id)

    def cancel(self, cause: str | None = None) -> None:
        self.state = ControlState.CANCELLED
        self._send("cancel", trial_id=self.trial_id, cause=cause)


class RemoteInbox:
    """A trial's intervention inbox on the driver: the message goes to the worker's inbox."""

    def __init__(self, send: Callable[..., None], trial_id: str) -> None:
        self._send = send
        self.trial_id = trial_id

    def post(self, text: str) -> bool:
        self._send("send", trial_id=self.trial_id, text=text)
        return True


class _RemoteAgent:
    """What the registry reads from an agent (its iteration), kept from the trial's events."""

    current_iteration = 0
    wait_seconds = 0.0


class EventBridge:
    """Events from the workers onto the run's bus; remote trials into the run's ControlRegistry."""

    def __init__(self, benchmark_id: str, sink: EventSink, controls: ControlRegistry,
                 send: Callable[..., None]) -> None:
        self.benchmark_id = benchmark_id
        self._sink = sink
        self._controls = controls
        self._send = send
        self._cond = threading.Condition()
        self._keys: dict[str, tuple[str, str, int]] = {}  # running trial id -> (arm, task, index)
        self._agents: dict[str, _RemoteAgent] = {}
        self._dropped: set[str] = set()  # trial ids of a repeated (arm, task, index)
        self.finished_keys: set[tuple[str, str, int]] = set()
        self.finished_ids: set[str] = set()
        self.rejected: set[str] = set()  # finished trials whose events were dropped: not results

    def on_message(self, item: tuple[float, Any]) -> None:
        """One message from a worker's publisher: a JSON list of events (runner/dask_worker.py)."""
        for message in json.loads(item[1]):
            if message.get("benchmark_id") == self.benchmark_id:
                self._deliver(event_from(message["kind"], message.get("trial_id"), message.get("task_id"),
                                         message.get("data") or {}, self.benchmark_id, message.get("ts") or 0.0))

    def _deliver(self, event: Event) -> None:
        trial_id = event.trial_id or ""
        if event.kind is EventKind.TRIAL_STARTED:
            key = (str(event.data.get("arm")), str(event.task_id), int(event.data.get("trial_index") or 0))
            with self._cond:
                if key in self.finished_keys:
                    self._dropped.add(trial_id)  # a re-run of a trial already stored (a worker died after it)
                    return
                stale = [t for t, k in self._keys.items() if k == key]  # its worker died during it
                for earlier in stale:
                    del self._keys[earlier]
                    self._dropped.add(earlier)
                self._keys[trial_id] = key
            for earlier in stale:
                self._controls.unregister(earlier)
            self._register(event)
        elif trial_id in self._dropped:
            if event.kind is EventKind.TRIAL_FINISHED:
                with self._cond:
                    self._dropped.discard(trial_id)
                    self.rejected.add(trial_id)
                    self._cond.notify_all()
            return
        elif event.kind is EventKind.ITERATION_STARTED and trial_id in self._agents:
            self._agents[trial_id].current_iteration = int(event.data.get("iteration") or 0)
        elif event.kind is EventKind.CONTROL_STATE:
            controller = self._controls.controller(trial_id)
            if isinstance(controller, RemoteController):
                controller.state = str(event.data.get("state") or controller.state)
        try:
            self._sink.emit(event)
        finally:
            if event.kind is EventKind.TRIAL_FINISHED:
                self._controls.unregister(trial_id)
                with self._cond:
                    self._agents.pop(trial_id, None)
                    finished_key = self._keys.pop(trial_id, None)
                    if finished_key is not None:
                        self.finished_keys.add(finished_key)
                    self.finished_ids.add(trial_id)
                    self._cond.notify_all()

    def _register(self, event: TrialStartedEvent) -> None:
        trial_id = str(event.trial_id)
        if trial_id.startswith(("er_", "lm_", "sk_")):  # reported without running: nothing to control
            return
        agent = self._agents[trial_id] = _RemoteAgent()
        self._controls.register(trial_id, task_id=str(event.task_id), arm=str(event.data.get("arm")),
                                index=int(event.data.get("trial_index") or 0),
                                controller=RemoteController(self._send, trial_id,  # type: ignore[arg-type]
                                                            start_paused=self._controls.start_paused),
                                inbox=RemoteInbox(self._send, trial_id),  # type: ignore[arg-type]
                                agent=agent, episode_id=event.data.get("episode_id"))

    def claim(self, key: tuple[str, str, int]) -> bool:
        """True (once) for a trial key no worker finished: the caller reports it; a late run is dropped."""
        with self._cond:
            if key in self.finished_keys:
                return False
            self.finished_keys.add(key)
            return True

    def wait_for(self, trial_ids: set[str], timeout: float = EVENTS_GRACE) -> bool:
        """Wait until the TRIAL_FINISHED events of these trials have been delivered (or dropped)."""
        with self._cond:
            return self._cond.wait_for(lambda: trial_ids <= self.finished_ids | self.rejected, timeout)


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker with a real stderr. It is handed `sys.stderr`'s descriptor,
    which a host that captures output may not have (the workbench: Textual's stderr says -1), and then
    every worker process of a LocalCluster fails to start ("bad value(s) in fds_to_keep")."""
    from multiprocessing import resource_tracker

    try:
        usable = sys.stderr.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        usable = False
    if usable or sys.__stderr__ is None:
        resource_tracker.ensure_running()
        return
    captured, sys.stderr = sys.stderr, sys.__stderr__
    try:
        resource_tracker.ensure_running()
    finally:
        sys.stderr = captured


def start_forkserver() -> None:
    """Start the forkserver that forks `processes` workers, preloaded with litellm and the worker code (once per
    process, in the background: it imports while the caller goes on). Workers forked from it start in a
    fraction of a second and pay no import; on exit they skip the interpreter's teardown (os._exit), which
    takes 1-2 s with litellm loaded."""
    if not FORKSERVER:
        return
    import multiprocessing.forkserver

    import dask
    from distributed.utils import get_mp_context

    with _forkserver_lock:
        _start_resource_tracker()
        with dask.config.set(PROCESSES_CONFIG):
            get_mp_context()  # Dask's own preload list, set once per process: ours replaces it (before the start)
        multiprocessing.forkserver.set_forkserver_preload(WORKER_PRELOAD)
        multiprocessing.forkserver.ensure_running()


_forkserver_lock = threading.Lock()


class DaskExecutor:
    """A Dask client (and the LocalCluster behind it for `processes`); `run` sends a run's jobs out."""

    def __init__(self, executor: str, workers: int | None = None) -> None:
        import dask
        from distributed import Client, LocalCluster

        self.cluster: Any = None
        self.address = executor
        self.lost = False  # the scheduler went away during a run
        with dask.config.set(PROCESSES_CONFIG if executor == "processes" else DASK_CONFIG):
            if executor == "processes":
                start_forkserver()
                # the scheduler's HTTP server (no routes: NO_HTTP_ROUTES) on a free loopback port (not :8787)
                # one worker per core (Dask's own default would be cores / threads per worker)
                # env: this process's environment now (the forkserver has the one from when it started)
                self.cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1,
                                            threads_per_worker=THREADS_PER_WORKER, processes=True,
                                            host=LOOPBACK, scheduler_port=0, dashboard_address=None,
                                            scheduler_kwargs={"dashboard_address": f"{LOOPBACK}:0"},
                                            env=dict(os.environ))
                self.client = Client(self.cluster)
            else:
                address = executor.replace("dask://", "tcp://", 1)
                try:
                    self.client = Client(address, timeout=30)
                except OSError as exc:
                    raise UserError(f"cannot reach the Dask scheduler at {address}: {exc}", where="executor",
                                    fix="start it with `dask scheduler` (and `dask worker ADDRESS` on each node), "
                                        "or check HOST:PORT.") from None
        self.client.register_plugin(worker_plugin(), name="corral-tui")  # closes our servers with each worker

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def workers(self) -> int:
        return len(self.client.scheduler_info().get("workers", {}))

    def threads(self) -> int:
        """Tasks the cluster runs at once: the sum of its workers' Dask threads."""
        workers = self.client.scheduler_info().get("workers", {}).values()
        return sum(int(worker.get("nthreads") or 1) for worker in workers) or 1

    def send_command(self, run: str, op: str, **fields: Any) -> None:
        """Log a control command for the workers running this run's trials (RemoteBatch.run); nothing to send
        to once the scheduler is lost (its workers have nothing to run either)."""
        if self.lost or self.client.status != "running":  # lost: the client may not have noticed yet
            log.info("not sending %s: the scheduler is lost or the client %s", op, self.client.status)
            return
        self.client.log_event(CONTROL_TOPIC, {"run": run, "op": op, **fields})

    def run(self, template: RemoteBatch, remote: list[RemoteJob], bridge: EventBridge, *,
            stopped: Callable[[], bool], on_trial: Callable[[int, RemoteTrial], None],
            on_failed: Callable[[int, str], None], parallel: int = 1) -> None:
        """Run the jobs, about `parallel` at once across the cluster (at least one per Dask thread);
        `on_trial(job index, trial)` per finished trial, `on_failed(job index, error)` for a job whose
        batch failed (the trials it did not finish are the caller's to report). A lost scheduler raises
        ClusterLost at once: Dask cancels every future when the client loses it, and those trials are unrun,
        not failed; so does a scheduler lost while a finished batch's trials are fetched."""
        self.client.subscribe_topic(EVENT_TOPIC, bridge.on_message)
        try:
            threads = max(1, math.ceil(parallel / self.threads()))  # jobs at once within one batch
            template = RemoteBatch(**{**template.__dict__, "threads": threads})
            size = max(threads, batch_size(sum(len(job.links) for job in remote), self.workers()))
            done: queue.Queue[Any] = queue.Queue()
            owners = {}
            for group in batches(remote, size):
                batch = RemoteBatch(**{**template.__dict__, "jobs": [remote[i] for i in group]})
                future = self.client.submit(run_batch, batch, pure=False, retries=0)
                owners[future.key] = group
                future.add_done_callback(done.put)
            returned: list[tuple[int, RemoteTrial]] = []
            left = len(owners)
            while left:
                try:
                    future = done.get(timeout=WAIT_SLICE)
                except queue.Empty:
                    stopped()  # looks at the cancel event; a stop reaches the workers as a command
                    continue
                left -= 1
                group = owners[future.key]
                if future.status == "cancelled":  # the runner cancels no future: the client lost the scheduler
                    raise self._lost()
                if future.status == "finished":
                    try:  # its trials come from the worker through the scheduler
                        trials: list[RemoteTrial] = future.result()
                    except OSError as exc:  # Dask's CommClosedError: the scheduler died after the batch ended
                        raise self._lost() from exc
                    job_of = {(t, i): j for j in group for t, i in remote[j].links}
                    returned += [(job_of[(t.task_id, int(t.data["trial_index"]))], t) for t in trials]
                else:
                    error = f"the batch could not run on a Dask worker: {future.exception()!r}"
                    for j in group:
                        on_failed(j, error)
            if not bridge.wait_for({trial.trial_id for _, trial in returned}):
                log.warning("not every trial's events reached the driver within %g s", EVENTS_GRACE)
            for index, trial in returned:  # a trial the bridge dropped (a repeat) is no result
                if trial.trial_id not in bridge.rejected:
                    on_trial(index, trial)
        finally:
            if self.client.status == "running":
                self.client.unsubscribe_topic(EVENT_TOPIC)

    def _lost(self) -> ClusterLost:
        self.lost = True
        return ClusterLost(f"the connection to the Dask scheduler ({self.address}) was lost")

    def close(self) -> None:
        try:
            if self.lost:  # Dask logs its cancelled reconnection as an error, traceback included: the run said why
                with _quiet("distributed.client", "distributed.comm"):
                    self.client.close()
            else:
                self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


@contextlib.contextmanager
def _quiet(*names: str) -> Iterator[None]:
    """These loggers say nothing while the block runs."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class StartingCluster:
    """A DaskExecutor being started in a thread, so that a run's own setup (store, plan) goes on meanwhile."""

    def __init__(self, executor: str, workers: int | None) -> None:
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._cluster: DaskExecutor | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._start, args=(executor, workers), name="corral-cluster-start",
                         daemon=True).start()

    def _start(self, executor: str, workers: int | None) -> None:
        try:
            self._cluster = DaskExecutor(executor, workers)
        except BaseException as exc:  # raised by get()
            self._error = exc
        finally:
            self._done.set()

    def get(self) -> DaskExecutor:
        """The started executor (waits for it); its start's error is raised here."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._cluster is not None
        return self._cluster

    def close(self) -> None:
        """Close the executor once it has started (safe to call twice)."""
        self._done.wait()
        with self._lock:
            cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.close()
