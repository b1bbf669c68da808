"""Trials on a real Dask LocalCluster (2 worker processes) and on a `dask scheduler` started here: every
(arm, task, trial) exactly once in the store, the same metrics as a `local` run (chains too), the workers'
events reaching the driver's sinks, and pause / step / intervene / resume reaching a trial on a worker."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from corral_core.batch import open_store
from corral_core.errors import UserError
from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"
SAMPLEMATH = SAMPLES / "samplemath.yaml"
WAIT = 120.0  # seconds: only a failing test waits this long
FAKE_KEY = "CORRAL_T_DASK_KEY"  # the fake provider's API key variable (set for the workers the test starts)


def spec() -> Any:
    return spec_from_dict({"name": "dask", "suite": str(SAMPLEMATH), "tasks": ["add", "multiply", "divide"],
                           "arms": {"verbosity": ["minimal", "full"]}, "trials_per_task": 2, "parallel": 2},
                          SAMPLEMATH.parent)


def run(db: Path, the_spec: Any = None, **kwargs: Any) -> tuple[Any, ListSink]:
    engine, repository, writer = open_store(str(db))
    sink = ListSink()
    try:
        result = BenchmarkRunner(the_spec or spec(), repository=repository, writer_sink=writer, sink=sink,
                                 **kwargs).run()
    finally:
        writer.close()
        engine.dispose()
    return result, sink


def test_processes_executor_runs_every_trial_once_with_the_same_metrics_as_local(tmp_path: Path) -> None:
    local, _ = run(tmp_path / "local.db")
    remote, sink = run(tmp_path / "dask.db", executor="processes", workers=2)
    with sqlite3.connect(tmp_path / "dask.db") as conn:
        keys = conn.execute("select arm, task_id, trial_index, status from trial").fetchall()
    assert Counter((a, t, i) for a, t, i, _ in keys) == Counter(
        {(arm, task, index): 1 for arm in ("minimal", "full") for task in ("add", "multiply", "divide")
         for index in (0, 1)})
    assert {s for *_, s in keys} == {"completed"}
    assert remote.headline_score == local.headline_score
    for name in ("minimal", "full"):
        assert remote.arms[name].average_score.value == local.arms[name].average_score.value
    kinds = Counter(e.kind for e in sink.events)
    assert kinds[EventKind.TRIAL_FINISHED] == 12 and kinds[EventKind.LLM_RESPONSE] >= 12  # from the workers


def test_unknown_executor_is_a_user_error() -> None:
    with pytest.raises(UserError, match="executor"):
        BenchmarkRunner(spec(), executor="threads")
    with pytest.raises(UserError, match="unknown executor 'threads'"):
        spec_from_dict({"name": "x", "suite": str(SAMPLEMATH), "executor": "threads"}, SAMPLEMATH.parent)


def test_the_spec_chooses_the_executor_unless_the_caller_does() -> None:
    chosen = spec_from_dict({"name": "x", "suite": str(SAMPLEMATH), "executor": "dask://127.0.0.1:8786"},
                            SAMPLEMATH.parent)
    assert BenchmarkRunner(chosen).executor == "dask://127.0.0.1:8786"  # e.g. the workbench, which passes none
    assert BenchmarkRunner(chosen, executor="processes").executor == "processes"  # --executor wins
    assert BenchmarkRunner(spec()).executor == "local"


def test_constructing_a_processes_runner_starts_no_forkserver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forkserver is the executor's: it starts when a run on `processes` starts its cluster, so a runner
    built and never run (a refused spec, a workbench that only shows it) leaves no process behind."""
    import multiprocessing.forkserver

    started: list[str] = []
    monkeypatch.setattr(multiprocessing.forkserver, "ensure_running", lambda: started.append("forkserver"))
    runner = BenchmarkRunner(spec(), executor="processes", workers=2)
    assert runner.executor == "processes"
    assert started == []
    assert multiprocessing.active_children() == []


def test_a_run_that_asks_a_person_is_refused_on_dask_before_any_cluster_starts() -> None:
    """Each worker's own embedded server has nobody to ask; a shared server (the workbench's, or one served with
    --approve ask) holds the gate, so a run whose workers use it may ask (tests/tui/test_distributed.py)."""
    asking = spec_from_dict({"name": "x", "suite": str(SAMPLEMATH), "approval": "ask"}, SAMPLEMATH.parent)
    with pytest.raises(UserError, match="cannot ask a person"):
        BenchmarkRunner(asking, executor="dask://127.0.0.1:9")
    with pytest.raises(UserError, match="cannot ask a person"):
        BenchmarkRunner(spec(), executor="processes", gate=object())
    shared = BenchmarkRunner(asking, executor="dask://127.0.0.1:9", server_url="http://127.0.0.1:9")
    assert shared.executor == "dask://127.0.0.1:9" and shared.server_url == "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real `dask scheduler` and one `dask worker` (2 processes) on 127.0.0.1, free ports, no dashboard.

    One per module (per xdist worker): starting a cluster costs ~15 CPU-seconds (each worker process imports
    litellm), and the tests on it need no fresh one: each run has its own benchmark id and store, and a finished
    run leaves nothing running on the workers."""
    import re
    import subprocess
    import sys

    tmp_path = tmp_path_factory.mktemp("dask-scheduler")
    dask = str(Path(sys.executable).with_name("dask"))
    # the scheduler unpickles task graphs too: both must import this checkout's corral_core
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), FAKE_KEY: "sk-fake"}
    started: list[subprocess.Popen[str]] = []
    try:
        sched = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  "--dashboard-address", "127.0.0.1:0"],
                                 stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
        started.append(sched)
        address = None
        assert sched.stderr is not None
        for line in sched.stderr:  # the scheduler prints its address once it listens
            found = re.search(r"Scheduler at:\s+(tcp://\S+)", line)
            if found:
                address = found.group(1)
                break
        assert address, "the dask scheduler did not start"
        import threading  # keep draining its log so the pipe never fills

        threading.Thread(target=lambda: sum(1 for _ in sched.stderr or ()), daemon=True).start()
        worker = subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard",
                                   "--host", "127.0.0.1"], stderr=subprocess.DEVNULL, cwd=tmp_path, env=env)
        started.append(worker)
        from distributed import Client

        with Client(address) as client:
            client.wait_for_workers(2, timeout=120)
        yield address.replace("tcp://", "dask://", 1)
    finally:
        for process in reversed(started):
            process.terminate()
        for process in reversed(started):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def test_an_existing_dask_scheduler_runs_every_trial_once(tmp_path: Path, scheduler: str) -> None:
    local, _ = run(tmp_path / "local.db")
    remote, sink = run(tmp_path / "dask.db", executor=scheduler)
    with sqlite3.connect(tmp_path / "dask.db") as conn:
        keys = conn.execute("select arm, task_id, trial_index, status from trial").fetchall()
    assert len(keys) == len({(a, t, i) for a, t, i, _ in keys}) == 12
    assert {s for *_, s in keys} == {"completed"} and remote.errored == 0
    assert len(sink.of_kind(EventKind.TRIAL_FINISHED)) == 12
    assert remote.headline_score == local.headline_score
    assert {n: a.average_score.value for n, a in remote.arms.items()} == \
        {n: a.average_score.value for n, a in local.arms.items()}


def test_max_connections_holds_across_workers(tmp_path: Path, scheduler: str, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    """Two trials on two workers, `max_connections: 1`: while the fake provider holds one request, the other
    worker's request waits for the cluster-wide lease (seen at the scheduler), never at the provider."""
    from distributed import Client

    from tests.fakes.fake_openai import FakeOpenAI, FakeReply

    monkeypatch.setenv(FAKE_KEY, "sk-fake")
    with FakeOpenAI([FakeReply.text("Final Answer: 3")], repeat_last=True, hold=True) as fake:
        limited = spec_from_dict({"name": "limit", "suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 2,
                                  "model": {"id": "openai/fake-model", "api_base": fake.base_url,
                                            "api_key_env": FAKE_KEY, "max_connections": 1}}, SAMPLEMATH.parent)
        results: list[Any] = []
        thread = threading.Thread(target=lambda: results.append(run(tmp_path / "l.db", limited, executor=scheduler)))
        thread.start()
        try:
            assert fake.wait_until(lambda f: f.in_flight == 1, WAIT)
            with Client(scheduler.replace("dask://", "tcp://", 1)) as client:
                assert wait_for_pending_lease(client), "the second trial never waited for a lease"
            assert fake.in_flight == 1  # the other worker's request is held back by the lease, not at the fake
        finally:
            fake.release(100)
            thread.join(WAIT)
        peak = fake.max_in_flight
    result, _ = results[0]
    assert [row["status"] for row in result.rows] == ["completed", "completed"]
    assert peak == 1


def test_parallel_holds_across_a_cluster_with_fewer_dask_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    """`parallel: 6` on one worker with 2 Dask threads: 6 provider requests are in flight at once (trials
    that wait on a provider are not limited to the cluster's threads), then every trial is stored once."""
    from tests.fakes.fake_openai import FakeOpenAI, FakeReply

    monkeypatch.setenv(FAKE_KEY, "sk-fake")
    with FakeOpenAI([FakeReply.text("Final Answer: 3")], repeat_last=True, hold=True) as fake:
        wide = spec_from_dict({"name": "wide", "suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 6,
                               "parallel": 6, "agent": {"type": "tool_calling"},
                               "model": {"id": "openai/fake-model", "api_base": fake.base_url,
                                         "api_key_env": FAKE_KEY}}, SAMPLEMATH.parent)
        results: list[Any] = []
        thread = threading.Thread(target=lambda: results.append(
            run(tmp_path / "wide.db", wide, executor="processes", workers=1)))
        thread.start()
        try:
            all_in_flight = fake.wait_until(lambda f: f.in_flight == 6, WAIT)
        finally:
            fake.release(100)
            thread.join(WAIT)
        peak = fake.max_in_flight
    assert all_in_flight, f"at most {peak} requests were in flight at once"
    result, _ = results[0]
    assert sorted(row["trial_index"] for row in result.rows) == list(range(6))
    assert {row["status"] for row in result.rows} == {"completed"}


def wait_for_pending_lease(client: Any) -> bool:
    """Until some corral max_connections semaphore has a waiting acquire (bounded: a failing test's limit)."""
    from corral_core.runner.dask_worker import LIMIT_PREFIX

    def pending(dask_scheduler: Any) -> int:
        counts = dask_scheduler.extensions["semaphores"].metrics["pending"]
        return sum(n for name, n in counts.items() if str(name).startswith(LIMIT_PREFIX))

    gate = threading.Event()
    for _ in range(int(WAIT / 0.05)):  # a state on the scheduler has no event to wait on: look, bounded
        if client.run_on_scheduler(pending) > 0:
            return True
        gate.wait(0.05)
    return False


def test_chain_rounds_run_on_workers_link_by_link_with_the_same_outcomes_as_local(tmp_path: Path, scheduler: str
                                                                                  ) -> None:
    """materials_chain: three rounds per arm; round 3's first link fails, so its two dependents are skipped."""
    from corral_core.spec import load_spec

    chain = load_spec(SAMPLES / "materials_chain.bench.yaml")
    local, _ = run(tmp_path / "local.db", chain)
    remote, _ = run(tmp_path / "dask.db", chain, executor=scheduler)

    def outcomes(db: Path) -> Counter[tuple[Any, ...]]:
        with sqlite3.connect(db) as conn:
            return Counter(conn.execute("select arm, task_id, trial_index, status, score from trial").fetchall())

    assert outcomes(tmp_path / "dask.db") == outcomes(tmp_path / "local.db")
    assert max(outcomes(tmp_path / "dask.db").values()) == 1
    assert "skipped" in {key[3] for key in outcomes(tmp_path / "dask.db")}
    assert remote.headline_score == local.headline_score
    def chains(result: Any) -> str:  # the same metrics; only the benchmark id in episode ids differs
        return json.dumps(result.to_dict(include_trials=False)["chains"], sort_keys=True).replace(
            result.benchmark_id, "BENCHMARK")

    assert chains(remote) == chains(local)
    with sqlite3.connect(tmp_path / "dask.db") as conn:  # the outputs resume would hand to a cut round
        stored = conn.execute("select count(*) from chain_output where output is not null").fetchone()[0]
    with sqlite3.connect(tmp_path / "local.db") as conn:
        assert stored == conn.execute("select count(*) from chain_output where output is not null").fetchone()[0] > 0


class WaitingSink(ListSink):
    """A ListSink a test can wait on (for an event, never for the clock)."""

    def __init__(self) -> None:
        super().__init__()
        self._arrived = threading.Condition()

    def emit(self, event: Any) -> None:
        super().emit(event)
        with self._arrived:
            self._arrived.notify_all()

    def wait_for(self, match: Any) -> Any:
        def found() -> Any:
            return next((e for e in list(self.events) if match(e)), None)

        with self._arrived:
            assert self._arrived.wait_for(found, WAIT), "the event never arrived"
        return found()


@pytest.mark.parametrize("where", ["processes", "dask scheduler"])
def test_pause_step_intervene_and_resume_reach_a_trial_on_a_worker(where: str, request: pytest.FixtureRequest
                                                                   ) -> None:
    from corral_core.runner import ControlRegistry

    executor = "processes" if where == "processes" else request.getfixturevalue("scheduler")

    one = spec_from_dict({"name": "controls", "suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 1,
                          "agent": {"type": "tool_calling"}}, SAMPLEMATH.parent)
    controls = ControlRegistry(start_paused=True)
    sink = WaitingSink()
    runner = BenchmarkRunner(one, sink=sink, controls=controls, executor=executor, workers=2)
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(runner.run()))
    thread.start()
    try:
        paused = sink.wait_for(lambda e: e.kind is EventKind.CONTROL_STATE and e.data["state"] == "paused")
        trial_id = paused.trial_id
        assert [t.trial_id for t in controls.running()] == [trial_id]  # the worker's trial, seen on the driver
        assert not sink.of_kind(EventKind.ITERATION_STARTED)  # started paused, on the worker

        controls.controller(trial_id).step()  # exactly one iteration, then paused again before the next
        sink.wait_for(lambda e: e.kind is EventKind.CONTROL_STATE and e.data["state"] == "paused"
                      and e.data["iteration"] == 1)
        assert len(sink.of_kind(EventKind.ITERATION_STARTED)) == 1

        assert controls.send(trial_id, "Use the calculator, then answer.")
        controls.resume_all()
        applied = sink.wait_for(lambda e: e.kind is EventKind.INTERVENTION_APPLIED)
        assert applied.trial_id == trial_id and applied.data["text"] == "Use the calculator, then answer."
        finished = sink.wait_for(lambda e: e.kind is EventKind.TRIAL_FINISHED)
    finally:
        if thread.is_alive() and not sink.of_kind(EventKind.TRIAL_FINISHED):
            runner.stop()
        thread.join(WAIT)
    assert finished.data["status"] == "completed" and finished.data["assisted"] is True
    assert results[0].trials_run == 1 and len(controls) == 0


def test_breakpoints_set_during_a_run_hold_a_trial_on_a_worker(scheduler: str) -> None:
    """The workbench's `b` on a Dask run: breakpoints set while the run goes on reach the worker, and
    a hit pauses the trial there (a person is watching), until it is resumed."""
    from corral_core.agents.breakpoints import Breakpoint
    from corral_core.runner import ControlRegistry

    one = spec_from_dict({"name": "breakpoints", "suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 1,
                          "agent": {"type": "tool_calling"}}, SAMPLEMATH.parent)
    controls = ControlRegistry(start_paused=True, hold_on_breakpoints=True)
    sink = WaitingSink()
    runner = BenchmarkRunner(one, sink=sink, controls=controls, executor=scheduler)
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(runner.run()))
    thread.start()
    try:
        paused = sink.wait_for(lambda e: e.kind is EventKind.CONTROL_STATE and e.data["state"] == "paused")
        runner.set_breakpoints([Breakpoint.parse("tool:calculator")])  # the spec had none
        controls.resume_all()
        hit = sink.wait_for(lambda e: e.kind is EventKind.BREAKPOINT_HIT)
        assert hit.trial_id == paused.trial_id and hit.data["breakpoint"] == "tool:calculator"
        assert hit.data["paused"] is True
        held = sink.wait_for(lambda e: e.kind is EventKind.CONTROL_STATE and e.data["state"] == "paused"
                             and "breakpoint" in str(e.data.get("reason")))
        assert held.trial_id == paused.trial_id
        assert not sink.of_kind(EventKind.TOOL_CALL)  # held before the call
        controls.resume_all()
        finished = sink.wait_for(lambda e: e.kind is EventKind.TRIAL_FINISHED)
    finally:
        if thread.is_alive() and not sink.of_kind(EventKind.TRIAL_FINISHED):
            runner.stop()
        thread.join(WAIT)
    assert finished.data["status"] == "completed" and results[0].trials_run == 1


def test_workers_use_a_shared_environment_server_given_with_server(tmp_path: Path, scheduler: str) -> None:
    from corral_core.env import load_suite
    from corral_core.server import EmbeddedServer, create_app

    sink = ListSink()
    server = EmbeddedServer(create_app(load_suite(SAMPLEMATH), sink=sink, telemetry=True))
    try:
        remote, _ = run(tmp_path / "dask.db", executor=scheduler, server_url=server.start())
    finally:
        server.stop()
    assert remote.errored == 0 and len(remote.rows) == 12
    served = {e.trial_id for e in sink.of_kind(EventKind.TRIAL_OPENED)}  # opened on this server, by the workers
    assert {row["trial_id"] for row in remote.rows} <= served


def _worker_sees() -> tuple[bool, str | None]:
    import sys

    return "litellm" in sys.modules, os.environ.get("CORRAL_T_LATE")


def test_processes_starts_one_worker_per_core_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """One worker per core, forked with litellm already imported (no worker imports it), and with the
    driver's environment of when the cluster starts, not of when the forkserver started."""
    from corral_core.runner.executors import THREADS_PER_WORKER, DaskExecutor, start_forkserver

    start_forkserver()  # as in a workbench whose first run started it: the variable below came later
    monkeypatch.setenv("CORRAL_T_LATE", "set after the forkserver started")
    with DaskExecutor("processes") as dask:
        workers = dask.client.scheduler_info()["workers"].values()
        assert len(workers) == (os.cpu_count() or 1)
        assert {w["nthreads"] for w in workers} == {THREADS_PER_WORKER}
        assert all(w["host"] == "127.0.0.1" for w in workers)
        seen = dask.client.run(_worker_sees)  # before any task
    assert set(seen.values()) == {(True, "set after the forkserver started")}


def test_the_bridge_keeps_one_trial_per_key_when_a_dead_workers_batch_runs_again() -> None:
    """tr_1 starts on a worker that dies; Dask runs its batch again: tr_2 finishes, a further repeat tr_3 is
    dropped whole, and tr_1's late events are ignored. Nothing reaches the sinks twice."""
    from corral_core.runner import ControlRegistry
    from corral_core.runner.executors import EventBridge

    sink, controls = ListSink(), ControlRegistry()
    bridge = EventBridge("bm_x", sink, controls, lambda op, **fields: None)

    def message(kind: EventKind, trial_id: str, benchmark_id: str = "bm_x", **data: Any) -> dict[str, Any]:
        return {"kind": kind.value, "trial_id": trial_id, "task_id": "add", "benchmark_id": benchmark_id, "ts": 1.0,
                "data": {"arm": "a", "trial_index": 0, **data}}

    bridge.on_message((0.0, json.dumps([message(EventKind.TRIAL_STARTED, "tr_1")])))
    assert controls.controller("tr_1") is not None
    bridge.on_message((0.0, json.dumps([message(EventKind.TRIAL_STARTED, "tr_2"),
                                        message(EventKind.ITERATION_STARTED, "tr_1"),
                                        message(EventKind.TRIAL_FINISHED, "tr_2", status="completed")])))
    bridge.on_message((0.0, json.dumps([message(EventKind.TRIAL_STARTED, "tr_3"),
                                        message(EventKind.TRIAL_FINISHED, "tr_3"),
                                        message(EventKind.TRIAL_STARTED, "tr_9", benchmark_id="bm_other")])))
    assert [(e.kind, e.trial_id) for e in sink.events] == [
        (EventKind.TRIAL_STARTED, "tr_1"), (EventKind.TRIAL_STARTED, "tr_2"), (EventKind.TRIAL_FINISHED, "tr_2")]
    assert bridge.finished_ids == {"tr_2"} and bridge.rejected == {"tr_3"} and len(controls) == 0
    assert bridge.wait_for({"tr_2", "tr_3"}, timeout=0)
    assert not bridge.claim(("a", "add", 0)) and bridge.claim(("a", "add", 1))  # a failed batch reports only the rest


def test_a_stopped_dask_run_resumes_with_every_trial_once(tmp_path: Path, scheduler: str) -> None:
    """Stop a run whose trials wait paused on the workers: it ends `interrupted`; a resume on the same
    long-lived scheduler runs what is missing, and the store then holds one counted trial per (arm, task,
    index). (The scheduler's control log still holds the first run's stop: it must not stop the resume.)"""
    from corral_core.runner import ControlRegistry

    db = tmp_path / "stop.db"
    sink = WaitingSink()
    engine, repository, writer = open_store(str(db))
    try:
        runner = BenchmarkRunner(spec(), repository=repository, writer_sink=writer, sink=sink,
                                 controls=ControlRegistry(start_paused=True), executor=scheduler)
        results: list[Any] = []
        thread = threading.Thread(target=lambda: results.append(runner.run()))
        thread.start()
        sink.wait_for(lambda e: e.kind is EventKind.CONTROL_STATE and e.data["state"] == "paused")
        runner.stop()
        thread.join(WAIT)
        assert results[0].status == "interrupted"
        assert {e.data["status"] for e in sink.of_kind(EventKind.TRIAL_FINISHED)} == {"cancelled"}
    finally:
        writer.close()
        engine.dispose()
    resumed, _ = run(db, executor=scheduler)
    assert resumed.benchmark_id == results[0].benchmark_id and resumed.status == "finished"
    assert sorted((r["arm"], r["task_id"], r["trial_index"]) for r in resumed.rows) == sorted(
        (arm, task, index) for arm in ("minimal", "full") for task in ("add", "multiply", "divide")
        for index in (0, 1))
    assert {r["status"] for r in resumed.rows} == {"completed"}


def test_a_scheduler_lost_while_a_finished_batch_is_fetched_interrupts_the_run(
        tmp_path: Path, scheduler: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A batch can finish on its worker just before the scheduler dies; fetching its trials then fails with
    Dask's CommClosedError (seen in a whole-suite run: the batch exited 1 with that traceback, not 2 with
    one line). It is the same lost scheduler as a cancelled future: the run ends `interrupted` and nothing
    is stored as an error (the trials whose events arrived are kept; the rest stay for a resume)."""
    from distributed import Client, Future
    from distributed.comm.core import CommClosedError

    def lost(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise CommClosedError("in <TCP (closed) ConnectionPool.gather>: Stream is closed")

    monkeypatch.setattr(Future, "result", lost)
    monkeypatch.setattr(Client, "log_event", lost)  # the scheduler is gone for the run's stop too
    with caplog.at_level(logging.WARNING, logger="corral_core"):
        result, _ = run(tmp_path / "lost.db", executor=scheduler)
    # the run's stop is not sent to a scheduler known lost (the client may not know yet: a traceback)
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    assert result.status == "interrupted" and "Dask scheduler" in (result.stopped_by or "")
    with sqlite3.connect(tmp_path / "lost.db") as conn:
        assert "error" not in {s for (s,) in conn.execute("select status from trial")}
