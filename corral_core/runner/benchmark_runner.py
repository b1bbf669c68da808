"""`BenchmarkRunner`: arms x tasks x trials on a bounded worker pool, with chains and resume.

A run starts (or resumes) a benchmark in the store, starts an embedded environment server per
suite (or uses a remote one), runs the jobs of `plan.plan_jobs` on `parallel` worker threads over
the server's trial routes, then computes metrics, classifies the headline score against the best
earlier run of the same spec, and closes the benchmark. Every step is an event on the run's sinks.

Resume: the trials already finished in the store (any status but running or cancelled) are never
run again; the rest are. Trials left `running` by a dead process are deleted first, so nothing is
duplicated; `cancelled` ones are replaced when re-run. A benchmark that another live process is
running is never resumed (see lineage.py).

A job that fails unexpectedly reports its trials that had not finished as errors, so a broken run
exits as errored, never as a silent success. When the store refuses writes, the writer says so at
once: the run stops (no trial starts after that), the benchmark is marked `store_failed` if the
store still takes that, STORE_FAILED goes out on the sinks, and `run()` raises the StoreError. What
the store committed before stays, and a resume runs the rest.

Ownership: the run holds its benchmark's fencing token (store/ownership.py). When another process
claims the benchmark (this one was silent past the heartbeat, e.g. stopped by SIGSTOP), the run
learns it from the store writer (its next trial write is refused), from its heartbeat or from the
check before each trial, whichever comes first, and stops at once: no trial starts after that,
nothing more of it is written (the benchmark is left to its new owner, not closed), OWNERSHIP_LOST
goes out on the sinks, and `run()` returns with status `lost_ownership`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import json
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from corral_core.agents.breakpoints import Breakpoint, BreakpointSet
from corral_core.domain import BenchmarkStatus, TrialStatus
from corral_core.env.approval import is_stricter
from corral_core.errors import StoreError, UserError
from corral_core.events import (
    BenchmarkFinishedData,
    BenchmarkStartedData,
    EventBus,
    EventKind,
    EventSink,
    StoreFailedData,
    TrialFinishedData,
    emit_event,
)
from corral_core.llm import preload as preload_llm
from corral_core.metrics import (
    ATTEMPTED_STATUSES,
    EarlierRun,
    TrialResult,
    classify_attempt,
    headline_units,
    metrics_to_dict,
    success,
)
from corral_core.metrics.records import RETIRED_STATUS
from corral_core.runner.collaborators import ApprovalGate, Cluster, RunRepository, StoreSink
from corral_core.runner.executors import ClusterLost, StartingCluster, check_executor
from corral_core.runner.jobs import client_timeout, run_job
from corral_core.runner.lineage import Heartbeat, OpenedBenchmark, open_benchmark
from corral_core.runner.live_trials import ControlRegistry
from corral_core.runner.plan import Job, TrialKey, plan_jobs
from corral_core.runner.results import (
    LOST_OWNERSHIP,
    BenchmarkResult,
    Trials,
    analyse_stored,
    compute_analysis,
    metrics_records,
)
from corral_core.runner.trial import (
    AssistTracker,
    NoPersonGate,
    RunContext,
    fail_trial,
    model_settings,
    record_of,
)
from corral_core.spec import BenchmarkSpec
from corral_core.store.ownership import Owner, OwnershipLost

if TYPE_CHECKING:
    from corral_core.runner.plan import ForkPoint

log = logging.getLogger(__name__)

# resume runs these again (retired: an earlier attempt --retry-errors keeps as history; its key runs again)
RERUN_STATUSES = frozenset({TrialStatus.RUNNING, TrialStatus.CANCELLED, RETIRED_STATUS})
WAIT_SLICE = 0.1
# A trial starts without a look at the store if the last look was this recent (seconds): at tens of trials
# per second the look was a read per trial, and the store writer fences every write of the run anyway
OWNER_CHECK_EVERY = 0.25
_clock = time.monotonic


class BenchmarkRunner:
    """Runs one spec. `run()` blocks; call it from a worker thread in a UI.

    repository / writer_sink: the store (both or neither). sink: extra event sinks (TUI queue,
    batch progress). server_url: a remote environment server (else embedded, one per suite).
    gate: the approval gate for confirm-level tools (default from the spec's `approval`).
    controls: the registry the TUI uses to reach running trials (one is made if None).
    auto_resume: continue the newest unfinished benchmark of the same spec digest, if any.
    executor / workers: where trials run (runner/executors.py). cluster: a started DaskExecutor for it,
    kept by the caller across runs (the workbench); without one a Dask run starts and closes its own.
    """

    def __init__(self, spec: BenchmarkSpec, *, repository: RunRepository | None = None,
                 writer_sink: StoreSink | None = None, sink: EventSink | Iterable[EventSink] | None = None,
                 server_url: str | None = None, gate: ApprovalGate | None = None, token: str | None = None,
                 controls: ControlRegistry | None = None,
                 auto_resume: bool = True, server_telemetry: bool = False, executor: str | None = None,
                 workers: int | None = None, cluster: Cluster | None = None) -> None:
        if (repository is None) != (writer_sink is None):
            raise ValueError("pass both repository and writer_sink (a started StoreWriter on the same engine), "
                             "or neither")
        self.spec = spec
        self.repository = repository
        self.writer = writer_sink
        extra = [] if sink is None else ([sink] if hasattr(sink, "emit") else list(sink))
        self.server_url = server_url
        self.gate = gate
        self.token = token
        self.controls = controls if controls is not None else ControlRegistry()
        self.auto_resume = auto_resume
        self.server_telemetry = server_telemetry  # the embedded servers' TELEMETRY_KINDS on the bus (unread)
        # local | processes | dask://HOST:PORT (runner/executors.py); None: the spec's `executor:`
        self.executor = check_executor(executor or spec.executor)
        # On Dask, each worker's embedded server has nobody to ask; a shared server (server_url: the
        # workbench's own, or `corral-tui serve --approve ask`) holds the gate and asks as in a local run.
        if self.executor != "local" and server_url is None and (spec.approval == "ask" or gate is not None):
            raise UserError("a run on Dask workers with their own environment servers cannot ask a person about "
                            "confirm-level tools.", file=spec.source, where="executor",
                            fix="use `approval: approve` or `reject`, run this spec with --executor local, or give "
                                "the workers a shared server that asks (`corral-tui serve SUITE --approve ask`, "
                                "then --server URL; the workbench shows its approvals).")
        self.workers = workers
        self.cluster = cluster
        self._starting: StartingCluster | None = None  # the run's own Dask executor, while run() goes on
        self.benchmark_id: str | None = None
        self.owner = Owner.current()
        self._no_person = NoPersonGate() if gate is None and spec.approval == "ask" else None
        self._sinks = [s for s in (writer_sink, *extra) if s is not None]
        self._stop = threading.Event()
        self._used = False
        self._rows_lock = threading.Lock()
        # the finished trials' payloads, kept only without a store (with one, the store has them and the
        # run keeps a count: a long run's memory stays flat)
        self._rows: list[tuple[str, str, TrialFinishedData]] = []
        self._trials_run = 0
        self._first_trial_id: str | None = None
        self._notices: list[str] = []  # said once in BENCHMARK_STARTED (e.g. a server without trial routes)
        self._bus: EventSink | None = None
        self._store_failure: StoreError | None = None
        self._store_failing = threading.Lock()  # taken once, by the first thread that meets the store's refusal
        self.ownership_token: str | None = None  # the benchmark's fencing token while this run owns it
        self._lost_cluster: str | None = None  # why the run's Dask cluster went away (the run is interrupted)
        self._ownership_lost = threading.Event()
        self._owner_checked_at: float | None = None  # _clock() at the last look at the store
        self.fork: ForkPoint | None = None  # set by ForkRunner (runner/fork.py)
        # the spec's breakpoints; the workbench replaces them while the run goes on (set_breakpoints)
        self.breakpoints = BreakpointSet(spec.hooks.breakpoints)

    def set_breakpoints(self, points: Iterable[Breakpoint]) -> None:
        """Replace the run's breakpoints: running trials check the new ones from their next check point
        on, trials that start later too, here and on Dask workers."""
        self.breakpoints.replace(points)
        send = self.controls.forward  # set while the run is on Dask: commands to its workers
        if send is not None:
            send("breakpoints", text=json.dumps([str(point) for point in self.breakpoints.points]))

    def stop(self) -> None:
        """Stop the run: running trials are cancelled, queued ones never start (resume finishes them)."""
        self._stop.set()
        self.controls.cancel_all()

    # --- the run ---------------------------------------------------------------------------------

    def run(self, resume_id: str | None = None, cancel_event: threading.Event | None = None, *,
            retry_errors: bool = False) -> BenchmarkResult:
        """Run (or resume) the benchmark and return its results. User mistakes raise UserError.

        A runner runs once. `cancel_event` (or `stop()`) ends the run early as `interrupted`.
        `retry_errors` (with `resume_id`): run the benchmark's errored trials again, in the same
        benchmark; each earlier attempt stays in the store as history (status `retried`).
        """
        if retry_errors and (resume_id is None or self.repository is None):
            raise UserError("retrying errored trials needs the benchmark's id and the store it is in.",
                            where="--retry-errors", fix="pass --retry-errors BENCHMARK_ID with the same --db.")
        if self._used:
            raise RuntimeError("a BenchmarkRunner runs once; create a new one for another run")
        self._used = True
        with self._replay_scope():
            return self._run(resume_id, cancel_event, retry_errors)

    def _run(self, resume_id: str | None, cancel_event: threading.Event | None, retry_errors: bool) -> BenchmarkResult:
        started = time.perf_counter()
        spec = self.spec
        self._check_api_keys()
        assists = AssistTracker()
        bus = self._bus = EventBus(*self._sinks, assists)
        status = BenchmarkStatus.INTERRUPTED
        servers: list[Any] = []
        routers: list[Any] = []
        benchmark_id: str | None = None
        heartbeat: Heartbeat | None = None
        unfence: Callable[[], None] | None = None
        unwatch = self._watch_store()
        # a Dask run's own cluster starts now, while this run is set up (runner/executors.py); for `processes`
        # that starts the forkserver too, whose imports go on in the background meanwhile
        self._starting = StartingCluster(self.executor, self.workers) \
            if self.executor != "local" and self.cluster is None else None
        try:
            router_for = self._connect(bus, servers, routers)  # first: a server that fails records nothing
            opened = open_benchmark(spec, self.repository, self.owner, resume_id, self.auto_resume)
            benchmark_id, resumed = opened.benchmark_id, opened.resumed
            self.benchmark_id = benchmark_id
            if self.repository is not None and opened.token is not None:
                self.ownership_token, self._owner_checked_at = opened.token, None
                unfence = self._fence(benchmark_id, opened.token)
                heartbeat = Heartbeat(self.repository, benchmark_id, opened.token, self._lost_ownership).start()
            if retry_errors:
                self._retire_errored(benchmark_id)
            done = self._finished_trials(benchmark_id) if resumed else {}
            jobs = self._plan(benchmark_id, done)
            # A server we did not build applies the spec's approval policy per trial (or refuses: _check_remote).
            approval = spec.approval if self.server_url is not None else None
            ctx = RunContext(spec, benchmark_id, bus, self.controls, router_for, self._stop, self._no_person, assists,
                             approval=approval, fork=self.fork, breakpoints=self.breakpoints)
            self._emit_started(bus, opened, done, jobs)
            if jobs and self.executor == "local":  # on Dask the workers import it (runner/dask_worker.py)
                # the imports take seconds: keep them out of the first trials' durations
                preload_llm(model_settings(arm) for arm in spec.arms)
            finished = self._execute(ctx, jobs, cancel_event)
            status = BenchmarkStatus.FINISHED if finished else BenchmarkStatus.INTERRUPTED
        except BaseException:
            if self.repository is not None and benchmark_id is not None and self._store_failure is None \
                    and not self._ownership_lost.is_set():
                try:
                    self.repository.finish_benchmark(benchmark_id, status=BenchmarkStatus.INTERRUPTED,
                                                     token=self.ownership_token)
                except OwnershipLost:
                    log.info("benchmark %s is run by another process now: left to it", benchmark_id)
                except Exception:
                    log.exception("could not mark benchmark %s interrupted", benchmark_id)
            if unfence is not None:
                unfence()
            raise
        finally:
            if self._starting is not None:
                self._starting.close()
            if heartbeat is not None:
                heartbeat.stop()
            if unwatch is not None:
                unwatch()
            self.controls.cancel_all()
            for router in routers:
                router.close()
            for server in servers:
                server.stop()
            self.controls.close()
        try:  # the fence holds until the writer has flushed this run's last trials
            result = self._results(benchmark_id, status, resumed, time.perf_counter() - started)
        finally:
            if unfence is not None:
                unfence()
        emit_event(bus, EventKind.BENCHMARK_FINISHED, benchmark_id=benchmark_id, **BenchmarkFinishedData(
            status=status, headline_score=result.headline_score, previous_best=result.previous_best,
            attempt_status=result.attempt_status, duration=result.duration, trials_run=result.trials_run,
            errored=result.errored))
        return result

    def _plan(self, benchmark_id: str, done: dict[TrialKey, TrialResult]) -> list[Job]:
        """The jobs this run still owes (ForkRunner plans its one trial itself)."""
        return plan_jobs(self.spec, benchmark_id, done)

    def _fence(self, benchmark_id: str, token: str) -> Callable[[], None] | None:
        """Have the store writer check the token on every trial write; returns the function undoing that."""
        if self.writer is None:
            return None
        lift = self.writer.fence(benchmark_id, token)
        remove = self.writer.on_lost(lambda lost_id: self._lost_ownership() if lost_id == benchmark_id else None)

        def undo() -> None:
            remove()
            lift()

        return undo

    def _lost_ownership(self) -> None:
        """Another process claimed this run's benchmark (any thread): stop at once, write nothing more."""
        if self._ownership_lost.is_set():
            return
        self._ownership_lost.set()
        self.stop()
        if self._bus is not None:
            emit_event(self._bus, EventKind.OWNERSHIP_LOST, benchmark_id=self.benchmark_id)

    def _still_owner(self) -> bool:
        """Checked before each trial starts (the store at most every OWNER_CHECK_EVERY s): False (and the run
        stops) once another process owns the benchmark."""
        if self._ownership_lost.is_set():
            return False
        if self.repository is None or self.ownership_token is None or self.benchmark_id is None:
            return True
        now = _clock()
        if self._owner_checked_at is not None and now - self._owner_checked_at < OWNER_CHECK_EVERY:
            return True
        self._owner_checked_at = now
        try:
            owned = self.repository.owns(self.benchmark_id, self.ownership_token)
        except StoreError as exc:  # the store writer says when the store is gone for good
            log.info("could not check the ownership of benchmark %s: %s", self.benchmark_id, exc)
            return True
        if not owned:
            self._lost_ownership()
        return owned

    def _watch_store(self) -> Callable[[], None] | None:
        """Stop the run the moment the store writer fails; returns the unsubscribe function."""
        if self.writer is None:
            return None
        earlier = self.writer.failure
        if earlier is not None:  # a workbench whose store failed during an earlier run
            raise earlier
        return self.writer.on_failure(self._store_failed)

    def _store_failed(self, error: StoreError) -> None:
        """The store refuses writes (any thread): start no more trials, cancel the running ones. The first
        caller takes it (an atomic latch: a worker thread and the writer's listener may call at once);
        STORE_FAILED goes out once."""
        if not self._store_failing.acquire(blocking=False):
            return
        self._store_failure = error
        self.stop()
        if self._bus is not None:
            emit_event(self._bus, EventKind.STORE_FAILED, benchmark_id=self.benchmark_id,
                       **StoreFailedData(error=error.problem))

    def _raise_store_failure(self, benchmark_id: str, error: StoreError) -> None:
        """Close the benchmark as store_failed (if the store still takes that) and raise the error."""
        assert self.repository is not None  # a store failure comes from the run's store
        stored = None
        try:
            self.repository.finish_benchmark(benchmark_id, status=BenchmarkStatus.STORE_FAILED)
            stored = len(self.repository.finished_trial_keys(benchmark_id))
        except StoreError as exc:  # it may refuse this too: the benchmark then looks abandoned, resumable
            log.info("could not mark benchmark %s store_failed: %s", benchmark_id, exc)
        kept = f"the {stored} trials it recorded are kept" if stored is not None else "what it recorded is kept"
        failure = StoreError(f"{error.problem} The run of benchmark {benchmark_id} was stopped: {kept}, and the "
                             "rest run when it is resumed.", where=error.where, fix=error.fix)
        failure.benchmark_id = benchmark_id
        raise failure

    def _replayed(self) -> set[str]:
        """The benchmarks whose recorded LLM responses this run's `replay/<id>` arms replay."""
        return {arm.model.id.split("/", 1)[1] for arm in self.spec.arms if arm.model.id.startswith("replay/")}

    def _replay_scope(self) -> contextlib.AbstractContextManager[None]:
        """While the run goes on, its `replay/<id>` models read the store it records into (the previous
        source comes back when it ends, even by an exception). UserError for a benchmark not in the store."""
        replayed = self._replayed()
        for benchmark_id in sorted(replayed):
            if self.repository is not None and self.repository.get_benchmark(benchmark_id) is None:
                raise UserError(f"model replay/{benchmark_id} replays a benchmark that is not in the store.",
                                file=self.spec.source, where="model",
                                fix="pick a benchmark id from `corral-tui history` (with the same --db).")
        if not replayed or self.repository is None:
            return contextlib.nullcontext()
        from corral_core.llm import replay_scope
        from corral_core.store import StoreReplaySource

        return replay_scope(replayed, StoreReplaySource(self.repository.engine))

    def _check_api_keys(self) -> None:
        """An arm whose API key variable is unset would fail every trial: refuse before anything runs."""
        for arm in self.spec.arms:
            variable = arm.model.api_key_env
            if variable and not os.environ.get(variable):
                raise UserError(f"model {arm.model.id} (arm {arm.name!r}) reads its API key from the environment "
                                f"variable {variable}, which is not set.", file=self.spec.source,
                                where="model.api_key_env",
                                fix=f"set it (`export {variable}=...`) before the run, or change `api_key_env`.")

    def _finished_trials(self, benchmark_id: str) -> dict[TrialKey, TrialResult]:
        """Trials of an earlier session that count (running ones are deleted, cancelled re-run)."""
        repo = self.repository
        assert repo is not None  # resuming needs the store (lineage.open_benchmark says so first)
        deleted = repo.delete_unfinished_trials(benchmark_id)
        if deleted:
            log.info("resume: removed %d trials left running by an earlier process", deleted)
        stored = (r for r in repo.iter_trial_records(benchmark_id) if r.status not in RERUN_STATUSES)  # (retired too)
        return {(r.arm, r.task_id, r.trial_index): r for r in metrics_records(self.spec, stored)}

    def _retire_errored(self, benchmark_id: str) -> int:
        """Mark the errored trials (and the chain links skipped because of them) as history, so the
        resume that follows runs them again. Returns how many were retired."""
        errored: list[str] = []
        episodes: set[str] = set()
        skipped: list[tuple[str, str]] = []  # (trial id, episode) of skipped chain links
        assert self.repository is not None  # --retry-errors needs the store (run() says so first)
        for r in self.repository.iter_trial_records(benchmark_id):  # one streamed pass
            if r.trial_id is None:  # (a stored trial always has its id)
                continue
            if r.status == TrialStatus.ERROR:
                errored.append(r.trial_id)
                if r.episode_id:
                    episodes.add(r.episode_id)
            elif r.status == TrialStatus.SKIPPED and r.episode_id:
                skipped.append((r.trial_id, r.episode_id))
        retired = errored + [trial_id for trial_id, episode in skipped if episode in episodes]
        count = self.repository.retire_trials(benchmark_id, retired)
        log.info("retry-errors: %d errored trials of %s will run again", len(errored), benchmark_id)
        return count

    def _connect(self, bus: EventSink, servers: list[Any], routers: list[Any]) -> Any:
        """Routers to the environment servers; returns task id -> router."""
        from corral_core.client import CorralRouter

        spec = self.spec
        timeouts = spec.timeouts
        http_timeout = client_timeout(timeouts)
        if self.server_url is not None:
            router = CorralRouter(self.server_url, default_verbosity=None, token=self.token, timeout=http_timeout)
            routers.append(router)
            self._check_remote(router)
            return lambda task_id: router

        from corral_core.server import EmbeddedServer, PolicyGate, create_app

        gate = self.gate if self.gate is not None else (
            self._no_person if self._no_person is not None else PolicyGate(approve=spec.approval == "approve"))
        by_task: dict[str, Any] = {}
        for suite in spec.suites:
            app = create_app(suite, gate=gate, sink=bus, tool_timeout=timeouts.tool, grader_timeout=timeouts.grader,
                             telemetry=self.server_telemetry)
            server = EmbeddedServer(app)
            servers.append(server)
            router = CorralRouter(server.start(), default_verbosity=None, timeout=http_timeout)
            routers.append(router)
            for task_id in suite.task_ids:
                by_task[task_id] = router
        return by_task.__getitem__

    def _check_remote(self, router: Any) -> None:
        try:
            available = set(router.get_available_tasks())
        except Exception as exc:
            raise UserError(f"cannot use the environment server at {self.server_url}: {exc}", where="--server",
                            fix="start it with `corral-tui serve SUITE.yaml`, or check the URL and --token.") from None
        missing = [t for t in self.spec.task_ids if t not in available]
        if missing:
            raise UserError(f"the server at {self.server_url} does not have tasks {missing[:5]}.", where="--server",
                            fix="serve the spec's suite there, or drop --server to use an embedded server.")
        if not router.trial_routes():  # a Corral E2 server: the client falls back to its task routes
            from corral_core.client import NO_TRIAL_ROUTES

            self._notices.append(NO_TRIAL_ROUTES.format(url=self.server_url) + ".")
        self._check_remote_policy(router)

    def _check_remote_policy(self, router: Any) -> None:
        """The spec's approval policy must hold on the server: it can be made stricter per trial (the
        runner asks for it when opening each trial), never looser. Refuse to start otherwise."""
        asked, url = self.spec.approval, self.server_url
        try:
            policy = router.approval_policy()
        except Exception:  # no /approvals route: not a corral-tui server (Corral's own has no risk levels)
            policy = None
        if policy is None:
            confirm = self._confirm_tools()
            if confirm and asked != "approve":
                raise UserError(
                    f"the spec says `approval: {asked}`, but the server at {url} does not say how it decides "
                    f"confirm-level tools ({', '.join(confirm[:5])}), so the run cannot make sure they are "
                    f"{'rejected' if asked == 'reject' else 'asked about'}.", where="--server",
                    fix="serve the suite with `corral-tui serve`, or set `approval: approve` if that server may "
                        "run them.")
            return
        if is_stricter(policy, asked):
            own = {"reject": "rejects every confirm-level tool (--approve reject)",
                   "ask": "asks a person about each confirm-level tool (--approve ask)"}.get(policy, policy)
            raise UserError(
                f"the spec says `approval: {asked}`, but the server at {url} {own}; a run can make a server "
                "stricter for its trials, never looser.", where="--server",
                fix="restart the server with the matching --approve (auto for approve), or change the spec's "
                    "`approval`.")

    def _confirm_tools(self) -> list[str]:
        """Names of the confirm-level tools the spec's tasks can call, as the local suites declare them."""
        names = {tool.name for suite in self.spec.suites for task_id in suite.task_ids
                 if task_id in self.spec.task_ids for tool in suite.tools_for(task_id)
                 if tool.risk.value == "confirm"}
        return sorted(names)

    def _emit_started(self, bus: EventSink, opened: OpenedBenchmark, done: dict[TrialKey, TrialResult],
                      jobs: list[Job]) -> None:
        spec = self.spec
        per_arm = len(spec.task_ids) * spec.trials_per_task
        done_by_arm = Counter(key[0] for key in done)
        score_by_arm: dict[str, float] = {}
        for (arm, _task, _index), record in done.items():
            score_by_arm[arm] = score_by_arm.get(arm, 0.0) + (record.score or 0.0)
        emit_event(bus, EventKind.BENCHMARK_STARTED, benchmark_id=opened.benchmark_id, **BenchmarkStartedData(
            name=spec.name, spec_digest=spec.digest, resumed=opened.resumed, live_elsewhere=opened.live_summary(),
            notices=list(self._notices), parallel=spec.parallel, tasks=spec.task_ids,
            trials_per_task=spec.trials_per_task, total_trials=spec.total_trials,
            pending_trials=sum(job.size for job in jobs),
            arms=[{"name": a.name, "verbosity": a.verbosity, "model": a.model.id, "agent": a.agent.type,
                   "total": per_arm, "done": done_by_arm.get(a.name, 0),
                   "score_sum": score_by_arm.get(a.name, 0.0)} for a in spec.arms]))

    def _execute(self, ctx: RunContext, jobs: list[Job], cancel_event: threading.Event | None) -> bool:
        """Run the jobs; True when all ran, False when the run was stopped."""
        if self.executor != "local":
            return self._execute_on_dask(ctx, jobs, cancel_event)
        stop = self._stop
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.spec.parallel, thread_name_prefix="corral-trial")
        try:
            futures = [pool.submit(self._run_job, ctx, job) for job in jobs]
            all_done = _Countdown(len(futures))
            for future in futures:
                future.add_done_callback(all_done.tick)
            while True:
                if cancel_event is not None and cancel_event.is_set() and not stop.is_set():
                    self.stop()
                try:
                    if all_done.wait(WAIT_SLICE):
                        break
                except KeyboardInterrupt:
                    self.stop()
            if cancel_event is not None and cancel_event.is_set():  # set while the last trials were ending
                self.stop()
            for future in futures:
                if not future.cancelled() and future.exception() is not None:
                    log.error("a job failed: %r", future.exception())
        except KeyboardInterrupt:
            self.stop()
        finally:
            if stop.is_set():
                self.controls.cancel_all()
            pool.shutdown(wait=True, cancel_futures=True)
        return not stop.is_set()

    def _execute_on_dask(self, ctx: RunContext, jobs: list[Job], cancel_event: threading.Event | None) -> bool:
        """Run the jobs on Dask workers (runner/executors.py); their events reach the bus through the bridge."""
        from corral_core.runner.dask_worker import RemoteBatch
        from corral_core.runner.executors import EventBridge

        spec = self.spec
        remote = [self._remote_job(job) for job in jobs]
        template = RemoteBatch(spec.data, str(spec.base_dir), spec.source, spec.digest, ctx.benchmark_id,
                               self.controls.start_paused, ctx.approval, [], self.server_url, self.token,
                               hold_on_breakpoints=self.controls.hold_on_breakpoints,
                               breakpoints=[str(point) for point in self.breakpoints.points],
                               run=uuid.uuid4().hex)

        def stopped() -> bool:
            if cancel_event is not None and cancel_event.is_set() and not self._stop.is_set():
                self.stop()
            return self._stop.is_set()

        kept: set[tuple[str, str, int]] = set()

        def on_trial(index: int, trial: Any) -> None:
            job = jobs[index]
            kept.add((job.arm.name, trial.task_id, int(trial.data["trial_index"])))
            self._keep(trial.trial_id, trial.task_id, trial.data)
            if trial.chain_output and self.repository is not None and job.episode_id is not None \
                    and not self._ownership_lost.is_set():
                try:
                    self.repository.record_chain_output(ctx.benchmark_id, job.episode_id, trial.task_id,
                                                        trial.data["answer"], trial.data["score"], trial.trial_id,
                                                        token=self.ownership_token)
                except OwnershipLost:
                    self._lost_ownership()

        def on_failed(index: int, error: str) -> None:
            job = jobs[index]
            for task_id, trial_index in job.links:
                key = (job.arm.name, task_id, trial_index)
                if key not in kept and bridge.claim(key):  # its trial never finished on a worker
                    kept.add(key)
                    trial_id, data = fail_trial(ctx, job.arm, task_id, trial_index, job.episode_id, error)
                    self._keep(trial_id, task_id, data)

        if self.cluster is not None:  # the caller's, kept across runs
            dask = self.cluster
        else:  # this run's own, started when the run began and closed when it ends
            assert self._starting is not None
            dask = self._starting.get()
        send = functools.partial(dask.send_command, template.run)
        bridge = EventBridge(ctx.benchmark_id, ctx.sink, self.controls, send)
        self.controls.forward = send
        try:
            if self._stop.is_set():
                send("cancel_all")
            try:
                dask.run(template, remote, bridge, stopped=stopped, on_trial=on_trial, on_failed=on_failed,
                         parallel=spec.parallel)
            except ClusterLost as exc:  # infrastructure, not a result: what did not finish stays unrun
                log.info("%s; the run stops, its unfinished trials are left for a resume", exc)
                self._lost_cluster = str(exc)
                self.stop()
            if not self._stop.is_set():  # a worker that returned without running a trial loses nothing silently
                for index in range(len(jobs)):
                    on_failed(index, "the Dask worker returned without running this trial (it saw the run "
                                     "stopped); run it again with --retry-errors")
        finally:
            self.controls.forward = None
        return not self._stop.is_set()

    def _remote_job(self, job: Job) -> Any:
        """A job as plain data for a worker: a chain round carries how its earlier links ended."""
        from corral_core.runner.dask_worker import RemoteJob

        passed = {task_id: success(record, self.spec.pass_threshold) for task_id, record in job.finished.items()}
        inputs = self._stored_outputs(job) if job.finished else None
        return RemoteJob(job.kind, job.arm.name, list(job.links), job.episode_id, passed, inputs)

    # --- jobs (worker threads) ---------------------------------------------------------------------

    def _run_job(self, ctx: RunContext, job: Job) -> None:
        """Run one job (jobs.run_job); if it fails, its trials that had not finished are reported as errors."""
        steps = _PoolSteps(self, ctx, job)
        try:
            passed = {task_id: success(record, self.spec.pass_threshold) for task_id, record in job.finished.items()}
            run_job(ctx, job.arm, job.kind, job.links, steps, episode_id=job.episode_id, suite=job.suite,
                    passed=passed, inputs=lambda: self._stored_outputs(job) if job.finished else None)
        except Exception as exc:
            log.exception("a %s job of arm %s failed", job.kind, job.arm.name)
            error = f"the trial could not run: {type(exc).__name__}: {exc}"
            for task_id, index in job.links:
                if (task_id, index) not in steps.reported:
                    trial_id, data = fail_trial(ctx, job.arm, task_id, index, job.episode_id, error)
                    self._keep(trial_id, task_id, data)

    def _stored_outputs(self, job: Job) -> dict[str, str] | None:
        """Outputs of the round's links finished in an earlier session (resume of a cut round)."""
        if self.repository is None or self.benchmark_id is None:
            return None
        outputs = {o.task_id: o.output for o in self.repository.chain_outputs(self.benchmark_id, job.episode_id)
                   if o.output is not None and o.task_id in job.finished}
        return outputs or None

    def _keep(self, trial_id: str, task_id: str, data: TrialFinishedData) -> None:
        with self._rows_lock:
            self._trials_run += 1
            if self._first_trial_id is None:
                self._first_trial_id = trial_id
            if self.repository is None:  # no store to read the results back from: they are these
                self._rows.append((trial_id, task_id, data))

    # --- the end -------------------------------------------------------------------------------------

    def _results(self, benchmark_id: str, status: str, resumed: bool, duration: float) -> BenchmarkResult:
        spec, repo = self.spec, self.repository
        if repo is not None:
            assert self.writer is not None  # both or neither (__init__)
            if not self.writer.flush(30.0):
                log.warning("the store writer did not flush within 30 s; metrics may miss trials")
            # a writer that lagged behind the trials meets a refusal only in that flush, after the run
            # stopped listening (the listener is removed in run()'s finally): ask the writer itself
            late = self.writer.failure
            if late is not None and self._store_failure is None:
                self._store_failed(late)
            if self._store_failure is not None:
                self._raise_store_failure(benchmark_id, self._store_failure)
            if self._ownership_lost.is_set():
                return self._lost_result(benchmark_id, resumed, duration)
            stored = analyse_stored(spec, repo, benchmark_id)  # streamed from the store, never held whole
            arms, comparisons, chains, headline = stored.arms, stored.comparisons, stored.chains, stored.headline
            trend = stored.trend
            records: Trials[TrialResult] = stored.records
            rows: Trials[dict[str, Any]] = stored.rows
        else:
            records = [record_of(task_id, data) for _, task_id, data in self._rows]
            rows = [{"trial_id": tid, "task_id": task_id, **data} for tid, task_id, data in self._rows]
            for row in rows:
                row["success"] = success(record_of(row["task_id"], row), spec.pass_threshold)
            analysis = compute_analysis(spec, records)
            arms, comparisons, chains = analysis.arms, analysis.comparisons, analysis.chains
            headline, trend = analysis.headline, analysis.trend
        previous = attempt = None
        earlier: list[EarlierRun] = []
        if repo is not None:  # "earlier": finished before this benchmark started, not errored
            info = repo.get_benchmark(benchmark_id)
            before = info.created_at if info is not None else None
            previous = repo.best_previous_score(spec.digest, exclude_id=benchmark_id, direction=spec.direction,
                                                finished_before=before)
            earlier = [EarlierRun(run.id, float(run.headline_score),
                                  headline_units((run.metrics or {}).get("arms") or {}))
                       for run in repo.earlier_runs(spec.digest, exclude_id=benchmark_id, finished_before=before)
                       if run.headline_score is not None]
        classified = None
        if status == BenchmarkStatus.FINISHED:
            classified = classify_attempt(
                headline, headline_units({name: metrics_to_dict(m) for name, m in arms.items()}), earlier,
                spec.direction, n_unassisted=sum(m.assisted.n_unassisted for m in arms.values()),
                n_attempted=sum(n for m in arms.values() for s, n in m.status_counts.items()
                                if s in ATTEMPTED_STATUSES),
                n_errored=sum(m.status_counts.get(s, 0) for m in arms.values() for s in ("error", "timeout")))
            attempt = classified.status
            if classified.previous_best is not None:
                previous = classified.previous_best
        result = BenchmarkResult(benchmark_id, spec, status, arms, comparisons, chains, records, rows, headline,
                                 previous, attempt, resumed, self._trials_run, duration, attempt=classified,
                                 trend=trend, stopped_by=self._lost_cluster)
        if repo is not None:
            try:
                repo.finish_benchmark(benchmark_id, status=status, headline_score=headline, attempt_status=attempt,
                                      metrics_json=result.to_dict(include_trials=False), token=self.ownership_token)
            except OwnershipLost:  # claimed as the run ended: the results are the new owner's to give
                self._lost_ownership()
                return self._lost_result(benchmark_id, resumed, duration)
        return result

    def _lost_result(self, benchmark_id: str, resumed: bool, duration: float) -> BenchmarkResult:
        """The result of a run whose benchmark another process claimed: no metrics (the benchmark is not this
        run's to sum up any more), only how many trials it ran."""
        return BenchmarkResult(benchmark_id, self.spec, LOST_OWNERSHIP, {}, [], {}, [], [], None, None, None, resumed,
                               self._trials_run, duration)


class _Countdown:
    """Set once `count` futures are done. The driver waits on it in slices to look at its cancel event:
    `concurrent.futures.wait(pending)` in that loop locked and hooked every pending future at every
    slice (a thousand-trial run: a thousand futures, ten times a second)."""

    def __init__(self, count: int) -> None:
        self._left = count
        self._lock = threading.Lock()
        self._done = threading.Event()
        if count == 0:
            self._done.set()

    def tick(self, _future: object) -> None:
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self._done.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)


class _PoolSteps:
    """A job on the driver's worker pool (jobs.JobSteps): each finished trial is kept, a chain link's
    output goes to the store; a refused write or a lost benchmark ends the job."""

    def __init__(self, runner: BenchmarkRunner, ctx: RunContext, job: Job) -> None:
        self.runner, self.ctx, self.job = runner, ctx, job
        self.reported: set[tuple[str, int]] = set()

    def stopped(self) -> bool:
        return self.runner._stop.is_set() or not self.runner._still_owner()

    def finished(self, task_id: str, index: int, trial_id: str, data: TrialFinishedData, chain_output: bool) -> bool:
        runner, job = self.runner, self.job
        self.reported.add((task_id, index))
        runner._keep(trial_id, task_id, data)
        if not chain_output or runner.repository is None:
            return True
        assert job.episode_id is not None
        try:
            runner.repository.record_chain_output(self.ctx.benchmark_id, job.episode_id, task_id, data["answer"],
                                                  data["score"], trial_id, token=runner.ownership_token)
        except StoreError as exc:
            runner._store_failed(exc)
            return False
        except OwnershipLost:
            runner._lost_ownership()
            return False
        return True
