"""ServiceLifecycle, RunSession and StoreQueries together, as the app wires them, without a terminal."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.errors import UserError
from corral_core.events import Event, EventKind
from corral_tui.analysis import TrialFilter
from corral_tui.run_request import RunRequest
from corral_tui.services import WorkbenchServices
from corral_tui.services.lifecycle import ServiceLifecycle
from corral_tui.services.session import ActiveRun, RunSummary
from tests.tui.stable import test_config
from tests.workbench.conftest import SAMPLEMATH, TUITEST

WAIT = 30.0  # bound on waiting for a thread this test started


@pytest.fixture
def services(tmp_path: Path) -> Iterator[WorkbenchServices]:
    config = test_config([SAMPLEMATH, TUITEST], db_url=str(tmp_path / "corral.db"), work_dir=tmp_path / "work")
    built = WorkbenchServices.build(config)
    built.load_suites()
    built.start()
    yield built
    built.close()


def drain_until(services: WorkbenchServices, done) -> list[Event]:
    """Read the UI queue (as the app's timer does) until `done(events)` holds."""
    events: list[Event] = []
    queue = services.lifecycle.queue
    while not done(events):
        event = queue.get(timeout=WAIT)
        assert event is not None, f"no event within {WAIT} s; saw {[e.kind.value for e in events][-10:]}"
        events.append(event)
    return events


def test_the_lifecycle_serves_every_suite_and_opens_the_store(services: WorkbenchServices) -> None:
    lifecycle = services.lifecycle
    assert lifecycle.url_for("samplemath", ).startswith("http://127.0.0.1:")
    assert lifecycle.url_for("nope") is None
    assert lifecycle.store(1.0) is lifecycle.repository


def test_a_run_goes_through_the_session_into_the_store(services: WorkbenchServices) -> None:
    started: list[ActiveRun] = []
    summary = services.session.run(RunRequest(suite="samplemath", tasks=["add"], verbosities=["minimal", "full"]),
                                   on_started=started.append)
    assert isinstance(summary, RunSummary) and summary.status == "finished" and summary.trials_run == 2
    assert started[0].total == 2 and started[0].model == "scripted/samplemath"
    assert services.session.active is None
    page = services.queries.benchmarks(0)
    assert [b.id for b in page.items] == [summary.benchmark_id] and page.total == 1
    trials = services.queries.trials(summary.benchmark_id, TrialFilter(arm="full"), 0)
    assert [t.arm for t in trials.items] == ["full"] and trials.total == 1
    timeline = services.queries.timeline(trials.items[0].id)
    assert timeline.trial is not None and timeline.expected == "42"  # samplemath's add: 17 + 25
    assert {"trial_started", "message", "trial_finished"} <= {entry.kind for entry in timeline.entries}
    view = services.queries.compare(summary.benchmark_id)
    assert [arm.name for arm in view.arms] == ["minimal", "full"] and view.stored
    tasks, arms = services.queries.filter_choices(page.items[0])
    assert tasks == ["add"] and arms == ["minimal", "full"]


@pytest.mark.parametrize(("model", "expected"), [
    ("opnai/gpt-4o-mini", "'opnai' is not a provider litellm knows"),
    ("gpt-4o-mni", "litellm cannot tell which provider serves 'gpt-4o-mni'"),
])
def test_the_run_form_refuses_a_model_litellm_cannot_route_before_the_run(services: WorkbenchServices, model: str,
                                                                          expected: str) -> None:
    with pytest.raises(UserError) as info:
        services.session.run(RunRequest(suite="samplemath", tasks=["add"], model=model))
    assert str(info.value).startswith(f"run form (Model): {expected}")
    assert services.session.active is None and services.queries.benchmarks(0).total == 0


def test_stop_with_pending_approvals_cancels_them_and_interrupts_the_run(services: WorkbenchServices) -> None:
    session = services.session
    result: dict[str, RunSummary] = {}
    thread = threading.Thread(target=lambda: result.setdefault("summary", session.run(RunRequest(
        suite="tuitest", tasks=["mark"], trials=2, parallel=2, approval="ask"))))
    thread.start()
    drain_until(services, lambda events: len(services.approvals.pending()) == 2)
    assert session.stop()
    thread.join(WAIT)
    summary = result["summary"]
    assert summary.status == "interrupted"
    assert services.approvals.pending() == []
    services.lifecycle.writer.flush(WAIT)
    repository = services.lifecycle.repository
    decided = [entry.data for trial in repository.trials(summary.benchmark_id).items
               for entry in repository.timeline(trial.id) if entry.kind == "approval_decided"]
    assert [(d["approved"], d["decided_by"]) for d in decided] == [(False, "cancelled")] * 2
    assert repository.get_benchmark(summary.benchmark_id).status == "interrupted"


def test_one_run_at_a_time_and_controls_need_a_running_trial(services: WorkbenchServices) -> None:
    session = services.session
    assert not session.stop() and not session.control("pause", None) and not session.intervene("tr_x", "hi")
    thread = threading.Thread(target=session.run, args=(RunRequest(suite="tuitest", tasks=["count"],
                                                                   start_paused=True),))
    thread.start()
    events = drain_until(services, lambda seen: any(e.kind is EventKind.CONTROL_STATE for e in seen))
    trial_id = next(e.trial_id for e in events if e.kind is EventKind.TRIAL_STARTED)
    with pytest.raises(UserError, match="a run is already in progress"):
        session.run(RunRequest(suite="tuitest"))
    assert not session.control("step", "tr_unknown")
    assert session.intervene(trial_id, "Count faster.")
    assert session.control("resume", trial_id)
    thread.join(WAIT)
    assert session.active is None


def test_a_remote_server_that_does_not_answer_is_a_user_error(tmp_path: Path) -> None:
    lifecycle = ServiceLifecycle(db_url=str(tmp_path / "c.db"), server_url="http://127.0.0.1:9")
    try:
        with pytest.raises(UserError, match="cannot reach the environment server"):
            lifecycle.start({}, None)
        assert lifecycle.ready.is_set()
    finally:
        lifecycle.close()


def test_a_fork_runs_through_the_session_and_is_refused_where_its_suite_is_not_open(
        services: WorkbenchServices, tmp_path: Path) -> None:
    parent = services.session.run(RunRequest(suite="tuitest", tasks=["count"], approval="approve"))
    trial_id = services.queries.trials(parent.benchmark_id, TrialFilter(), 0).items[0].id
    started: list[ActiveRun] = []
    summary = services.session.fork(trial_id, 2, "Skip the remaining steps.", on_started=started.append)
    assert (summary.status, summary.fork_of, summary.trials_run) == ("finished", trial_id, 1)
    assert started[0].total == 1 and started[0].request is None and services.session.active is None
    view = services.queries.fork_view(services.queries.trials(summary.benchmark_id, TrialFilter(), 0).items[0].id)
    assert view is not None and view.parent is not None and view.parent.id == trial_id
    assert (view.iteration, view.intervention) == (2, "Skip the remaining steps.")
    assert services.queries.fork_view(trial_id) is None  # the parent is no fork

    config = test_config([SAMPLEMATH], db_url=str(tmp_path / "corral.db"), work_dir=tmp_path / "other")
    elsewhere = WorkbenchServices.build(config)  # a workbench on the same store without tuitest open
    elsewhere.load_suites()
    elsewhere.start()
    try:
        with pytest.raises(UserError, match="suite 'tuitest'"):
            elsewhere.session.fork(trial_id, 2, None)
    finally:
        elsewhere.close()
