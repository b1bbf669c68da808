"""Where trials run: `local` threads in this process (the default), or a Dask cluster.

`processes` starts a Dask `LocalCluster` (one single-threaded worker process per core, dashboard
off); `dask://HOST:PORT` connects to an existing scheduler (`dask scheduler` + `dask worker` on each
node, or dask-jobqueue on Slurm). Jobs go to workers as plain data (the spec's mapping, an arm name,
(task, index) pairs); each worker process keeps the spec and one embedded environment server per
suite for its life, so litellm's import and the servers' start are paid once per worker.

Events: a worker publishes every event of its trials with `log_event` on the topic EVENT_TOPIC; the
driver subscribes to it and hands each event to the run's bus (store writer, TUI, batch progress),
as if the trial ran here. A job's result is its finished trials; the driver waits until their
TRIAL_FINISHED events have arrived before it reads the store, so nothing is counted before it is
written.

Not yet: chained suites (episodes) and pause/step/approve of a trial on a worker.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral_core.errors import UserError
from corral_core.events import Event, EventKind, EventSink

log = logging.getLogger(__name__)

EXECUTORS = ("local", "processes")
EVENT_TOPIC = "corral-events"
PUBLISH_BATCH = 500  # events per message at most


def check_executor(value: str | None) -> str:
    """`local`, `processes` or `dask://HOST:PORT`; anything else is a UserError."""
    text = (value or "local").strip()
    if text in EXECUTORS or (text.startswith("dask://") and ":" in text[len("dask://"):]):
        return text
    raise UserError(f"unknown executor {text!r}.", where="executor",
                    fix="use `local` (threads here), `processes` (a Dask LocalCluster on this machine's cores) "
                        "or `dask://HOST:PORT` (an existing Dask scheduler).")


@dataclass
class RemoteJob:
    """One job as plain data for a worker."""

    spec_data: dict[str, Any]
    base_dir: str
    source: str
    digest: str
    benchmark_id: str
    arm: str
    kind: str
    links: list[tuple[str, int]]


class DaskCluster:
    """A Dask client (and the LocalCluster behind it for `processes`), with the event subscription."""

    def __init__(self, executor: str, workers: int | None = None) -> None:
        from distributed import Client, LocalCluster

        self.cluster = None
        if executor == "processes":
            self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                        dashboard_address=None)
            self.client = Client(self.cluster)
        else:
            self.client = Client(executor.replace("dask://", "tcp://", 1))
        self._sinks: dict[str, EventSink] = {}
        self._finished: dict[str, set[str]] = {}
        self._arrived = threading.Condition()
        self.client.subscribe_topic(EVENT_TOPIC, self._on_event)

    def attach(self, benchmark_id: str, sink: EventSink) -> None:
        with self._arrived:
            self._sinks[benchmark_id] = sink
            self._finished[benchmark_id] = set()

    def _on_event(self, item: tuple[float, Any]) -> None:
        for message in item[1]:
            self._deliver(message)

    def _deliver(self, message: dict[str, Any]) -> None:
        event = Event(kind=EventKind(message["kind"]), trial_id=message.get("trial_id"),
                      task_id=message.get("task_id"), data=message.get("data") or {},
                      benchmark_id=message.get("benchmark_id"), ts=message.get("ts") or 0.0)
        sink = self._sinks.get(event.benchmark_id or "")
        if sink is None:
            return
        try:
            sink.emit(event)
        finally:
            if event.kind is EventKind.TRIAL_FINISHED and event.trial_id:
                with self._arrived:
                    self._finished[event.benchmark_id or ""].add(event.trial_id)
                    self._arrived.notify_all()

    def wait_for_events(self, benchmark_id: str, trial_ids: set[str], timeout: float = 60.0) -> bool:
        """Wait until the TRIAL_FINISHED events of these trials have reached the driver."""
        with self._arrived:
            return self._arrived.wait_for(lambda: trial_ids <= self._finished.get(benchmark_id, set()), timeout)

    def close(self) -> None:
        try:
            self.client.unsubscribe_topic(EVENT_TOPIC)
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


# --- on a worker ---------------------------------------------------------------------------------

_worker_lock = threading.Lock()
_worker_state: dict[str, Any] = {}  # digest -> (spec, router_for): kept for the worker process's life


class _Publisher:
    """Sends events to the driver through the worker's Dask event log (from any thread of the worker),
    in batches: one message per finished trial (or per PUBLISH_BATCH events), in emission order."""

    def __init__(self) -> None:
        from distributed import get_worker

        self._worker = get_worker()  # found from a task's thread; the server's threads could not
        self._lock = threading.Lock()
        self._buffer: list[dict[str, Any]] = []

    def emit(self, event: Event) -> None:
        try:
            message = json.loads(json.dumps(event.to_dict(), default=str))
            with self._lock:
                self._buffer.append(message)
                if event.kind is EventKind.TRIAL_FINISHED or len(self._buffer) >= PUBLISH_BATCH:
                    batch, self._buffer = self._buffer, []
                    self._worker.log_event(EVENT_TOPIC, batch)
        except Exception:  # a sink never raises; the trial's result still reaches the driver
            log.warning("could not publish a %s event to the driver", event.kind.value, exc_info=True)


def run_remote_job(job: RemoteJob) -> list[tuple[str, str, dict[str, Any]]]:
    """Run one job on a Dask worker; returns (trial id, task id, TRIAL_FINISHED data) per trial."""
    from corral_core.runner.live_trials import ControlRegistry
    from corral_core.runner.trial import RunContext, build_agent, execute_trial

    spec, router_for = _worker_setup(job)
    sink = _Publisher()
    ctx = RunContext(spec, job.benchmark_id, sink, ControlRegistry(), router_for, threading.Event())
    arm = next(a for a in spec.arms if a.name == job.arm)
    agent = build_agent(arm, spec, None, sink) if job.kind == "series" else None
    rows = []
    for task_id, index in job.links:
        trial_id, data = execute_trial(ctx, arm, task_id, index, agent=agent)
        rows.append((trial_id, task_id, json.loads(json.dumps(data, default=str))))
    return rows


def _worker_setup(job: RemoteJob) -> tuple[Any, Any]:
    with _worker_lock:
        known = _worker_state.get(job.digest)
        if known is not None:
            return known
        from corral_core.client import CorralRouter
        from corral_core.llm import preload
        from corral_core.runner.benchmark_runner import client_timeout
        from corral_core.server import EmbeddedServer, PolicyGate, create_app
        from corral_core.spec import spec_from_dict

        spec = spec_from_dict(job.spec_data, Path(job.base_dir), source=job.source)
        if spec.digest != job.digest:
            raise RuntimeError(f"the worker sees a different spec (digest {spec.digest[:12]}, driver "
                               f"{job.digest[:12]}): its suite files or scripts differ from the driver's")
        preload()
        sink = _Publisher()
        gate = PolicyGate(approve=spec.approval == "approve")
        by_task: dict[str, Any] = {}
        for suite in spec.suites:
            app = create_app(suite, gate=gate, sink=sink, tool_timeout=spec.timeouts.tool,
                             grader_timeout=spec.timeouts.grader)
            router = CorralRouter(EmbeddedServer(app).start(), default_verbosity=None,
                                  timeout=client_timeout(spec.timeouts))
            for task_id in suite.task_ids:
                by_task[task_id] = router
        _worker_state[job.digest] = (spec, by_task.__getitem__)
        return _worker_state[job.digest]
