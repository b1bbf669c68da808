"""Trials on a real Dask LocalCluster (2 worker processes): every (arm, task, trial) exactly once in the
store, the same metrics as a `local` run, and the workers' events reaching the driver's sinks."""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from corral_core.batch import open_store
from corral_core.errors import UserError
from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"


def spec() -> Any:
    return spec_from_dict({"name": "dask", "suite": str(SAMPLEMATH), "tasks": ["add", "multiply", "divide"],
                           "arms": {"verbosity": ["minimal", "full"]}, "trials_per_task": 2, "parallel": 2},
                          SAMPLEMATH.parent)


def run(db: Path, **kwargs: Any) -> tuple[Any, ListSink]:
    engine, repository, writer = open_store(str(db))
    sink = ListSink()
    try:
        result = BenchmarkRunner(spec(), repository=repository, writer_sink=writer, sink=sink, **kwargs).run()
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


@pytest.fixture
def scheduler(tmp_path: Path) -> Any:
    """A real `dask scheduler` and one `dask worker` (2 processes) on 127.0.0.1, free ports, no dashboard."""
    import re
    import subprocess
    import sys

    dask = str(Path(sys.executable).with_name("dask"))
    # the scheduler unpickles task graphs too: both must import this checkout's corral_core
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    started: list[subprocess.Popen[str]] = []
    try:
        sched = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"],
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
    remote, sink = run(tmp_path / "dask.db", executor=scheduler)
    with sqlite3.connect(tmp_path / "dask.db") as conn:
        keys = conn.execute("select arm, task_id, trial_index, status from trial").fetchall()
    assert len(keys) == len({(a, t, i) for a, t, i, _ in keys}) == 12
    assert {s for *_, s in keys} == {"completed"} and remote.errored == 0
    assert len(sink.of_kind(EventKind.TRIAL_FINISHED)) == 12
