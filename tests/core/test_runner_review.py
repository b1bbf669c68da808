"""Runner fixes from review: live runs are not taken over, failed jobs are reported, paused trials
do not time out, HTTP timeouts are finite, episodes are always closed."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from corral_core.batch import open_store
from corral_core.errors import UserError
from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner, ControlRegistry
from corral_core.spec import spec_from_dict
from corral_core.store import Repository
from tests.timeouts import HANG, wait_until

DATA = Path(__file__).resolve().parent / "data"


def make_spec(suite: str, **overrides: Any) -> Any:
    data = {"name": f"review-{suite}", "suite": str(DATA / f"{suite}.yaml"),
            "model": f"scripted/{DATA / f'{suite}.script.yaml'}", "trials_per_task": 1, "parallel": 1}
    data.update(overrides)
    return spec_from_dict(data, DATA)


def finished(sink: ListSink) -> dict[tuple[str, str, int], dict[str, Any]]:
    return {(e.data["arm"], e.task_id, e.data["trial_index"]): e.data for e in sink.of_kind(EventKind.TRIAL_FINISHED)}


@pytest.fixture
def store(tmp_path: Path) -> Any:
    engine, repository, writer = open_store(str(tmp_path / "runs.db"))
    yield repository, writer
    writer.close()
    engine.dispose()


class PausedRun:
    """A runner started paused on a worker thread: a live run of its spec in this process."""

    def __init__(self, spec: Any, repository: Any, writer: Any) -> None:
        self.controls = ControlRegistry(start_paused=True)
        self.runner = BenchmarkRunner(spec, repository=repository, writer_sink=writer, controls=self.controls)
        self.result: Any = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_until(self.controls.running, "the paused run to start a trial")

    def _run(self) -> None:
        self.result = self.runner.run()

    def finish(self) -> Any:
        self.controls.start_paused = False  # later trials of the run start running
        self.controls.resume_all()
        self.thread.join(HANG)
        assert not self.thread.is_alive()
        return self.result


# --- 1: a live run of another runner is never taken over ---------------------------------------------


def test_a_second_run_of_a_spec_that_is_live_starts_a_fresh_benchmark(store: Any) -> None:
    repository, writer = store
    spec = make_spec("slow", tasks=["t1", "t2"])
    live = PausedRun(spec, repository, writer)
    live_id = live.runner.benchmark_id
    (running,) = live.controls.running()
    sink = ListSink()
    second = BenchmarkRunner(spec, repository=repository, writer_sink=writer, sink=sink).run()
    assert second.benchmark_id != live_id and not second.resumed and second.status == "finished"
    (started,) = sink.of_kind(EventKind.BENCHMARK_STARTED)
    assert started.data["live_elsewhere"] == [{"benchmark_id": live_id, "pid": os.getpid(),
                                               "host": started.data["live_elsewhere"][0]["host"]}]
    first = live.finish()
    assert first.benchmark_id == live_id and first.status == "finished" and first.errored == 0
    # the live run's trial was not deleted from under it: it finished under its own id
    assert repository.trial(running.trial_id).status == "completed"
    assert repository.count_trials(live_id) == 2 and repository.count_trials(second.benchmark_id) == 2


def test_resuming_a_benchmark_that_is_live_elsewhere_is_refused_with_its_pid(store: Any) -> None:
    repository, writer = store
    spec = make_spec("slow", tasks=["t1"])
    live = PausedRun(spec, repository, writer)
    try:
        with pytest.raises(UserError) as info:
            BenchmarkRunner(spec, repository=repository, writer_sink=writer).run(resume_id=live.runner.benchmark_id)
        assert f"process {os.getpid()}" in str(info.value) and "--resume" in str(info.value)
    finally:
        result = live.finish()
    assert result.status == "finished" and repository.count_trials(result.benchmark_id) == 1


def test_a_running_benchmark_whose_process_died_is_resumed(store: Any) -> None:
    from corral_core.store.ownership import Owner

    repository, writer = store
    spec = make_spec("slow", tasks=["t1", "t2"])
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owner = Owner(int(dead.stdout), Owner.current().host)
    info = repository.create_benchmark(spec_name=spec.name, spec_digest=spec.digest, owner=owner)
    result = BenchmarkRunner(spec, repository=repository, writer_sink=writer).run()
    assert result.benchmark_id == info.id and result.resumed and result.status == "finished"


# --- 2: a job that fails is reported, never silently dropped --------------------------------------------


def test_a_job_that_fails_marks_its_trials_as_errors(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from corral_core.runner import trial

    def exploding(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("agent exploded")

    monkeypatch.setattr(trial, "build_agent", exploding)  # the job loop (runner/jobs.py) builds it
    repository, writer = store
    spec = make_spec("slow", tasks=["t1", "t2"], trials_per_task=2, agent={"type": "reflection"})
    sink = ListSink()
    result = BenchmarkRunner(spec, repository=repository, writer_sink=writer, sink=sink).run()
    trials = finished(sink)
    assert sorted(trials) == [("default", t, i) for t in ("t1", "t2") for i in (0, 1)]
    for data in trials.values():
        assert data["status"] == "error" and "agent exploded" in data["error"]
    assert result.status == "finished" and result.errored == 4
    assert repository.count_trials(result.benchmark_id, status="error") == 4


# --- 3: a paused trial does not use up its time limit -----------------------------------------------------


def test_a_trial_paused_longer_than_its_time_limit_completes_after_resume() -> None:
    # the trial runs well under a second once resumed: a limit of 3 s leaves room for a busy machine
    spec = make_spec("slow", tasks=["t1"], timeouts={"trial": 3})
    controls = ControlRegistry(start_paused=True)
    sink = ListSink()
    runner = BenchmarkRunner(spec, sink=sink, controls=controls)
    worker = threading.Thread(target=runner.run, daemon=True)
    worker.start()
    wait_until(controls.running, "the trial to start")
    (live,) = controls.running()
    assert controls.controller(live.trial_id).wait_blocked(HANG)
    time.sleep(3.5)  # longer than the limit, all of it paused (the time that passes is what is tested)
    assert controls.running(), "the paused trial was cancelled"
    controls.resume_all()
    worker.join(HANG)
    assert not worker.is_alive()
    (trial,) = finished(sink).values()
    assert trial["status"] == "completed" and trial["score"] == 1.0


# --- 7 and 8: finite HTTP timeouts, episodes always closed -----------------------------------------------


def test_the_environment_client_timeout_is_finite_when_spec_timeouts_are_unlimited(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import corral_core.client as client

    seen: list[Any] = []

    class Recording(client.CorralRouter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            seen.append(kwargs.get("timeout"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(client, "CorralRouter", Recording)
    spec = make_spec("slow", tasks=["t1"], timeouts={"trial": None, "tool": None, "grader": None, "approval": None})
    result = BenchmarkRunner(spec).run()
    assert result.status == "finished"
    assert seen and all(isinstance(t, float) and math.isfinite(t) and t > 0 for t in seen)


def test_a_stopped_run_still_closes_its_chain_episode(monkeypatch: pytest.MonkeyPatch) -> None:
    import corral_core.client as client

    closed: list[str] = []
    original = client.CorralRouter.close_episode

    def recording(self: Any, episode_id: str) -> Any:
        closed.append(episode_id)
        return original(self, episode_id)

    monkeypatch.setattr(client.CorralRouter, "close_episode", recording)
    spec = make_spec("chain", tasks=["seed", "double", "report"])

    class StopAfterFirst:
        runner: BenchmarkRunner

        def emit(self, event: Any) -> None:
            if event.kind is EventKind.TRIAL_FINISHED:
                self.runner.stop()

    stopper = StopAfterFirst()
    sink = ListSink()
    runner = BenchmarkRunner(spec, sink=[sink, stopper])
    stopper.runner = runner
    result = runner.run()
    assert result.status == "interrupted" and len(finished(sink)) == 1
    assert closed == [f"{result.benchmark_id}:default:0"]


# --- 12: the runner uses the repository's public engine -----------------------------------------------------


def test_repository_exposes_its_engine(tmp_path: Path) -> None:
    from corral_core.store import make_engine

    engine = make_engine(tmp_path / "e.db")
    try:
        assert Repository(engine).engine is engine
    finally:
        engine.dispose()
