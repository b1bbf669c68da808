"""The workbench's run as a state machine, driven with events and summaries, without a terminal."""

from __future__ import annotations

import subprocess
import sys

import pytest

from corral_core.domain import WorkbenchState
from corral_core.errors import UserError
from corral_core.events import EventKind, event_from
from corral_tui.config import Redactor
from corral_tui.live import LiveRun
from corral_tui.services.run_presenter import LIVE_STATES, RunPresenter
from corral_tui.services.session import RunSummary


def live_run(*trials: dict[str, object]) -> LiveRun:
    """A LiveRun fed the TRIAL_STARTED / TRIAL_FINISHED events of `trials` (trial_id, score, assisted, ...)."""
    live = LiveRun()
    events = [event_from(EventKind.BENCHMARK_STARTED, benchmark_id="bm_1", data={"total_trials": len(trials)})]
    for trial in trials:
        trial_id = str(trial["trial_id"])
        events.append(event_from(EventKind.TRIAL_STARTED, trial_id=trial_id, task_id="add", benchmark_id="bm_1",
                            data={"arm": "full", "trial_index": 0}))
        events.append(event_from(EventKind.TRIAL_FINISHED, trial_id=trial_id, task_id="add", benchmark_id="bm_1",
                            data={"status": "completed", "total_tokens": 100, **trial}))
    live.apply(events)
    return live


def summary(status: str = "finished", score: float | None = 0.5, *, attempt: str | None = "improved",
            previous: float | None = 0.25, errored: int = 0, fork_of: str | None = None) -> RunSummary:
    return RunSummary("bm_1", status, score, attempt, previous, 2, errored, fork_of=fork_of)


def test_a_run_goes_from_idle_through_starting_and_running_to_its_own_status() -> None:
    presenter = RunPresenter(Redactor())
    assert presenter.state is WorkbenchState.IDLE and presenter.refusal(ready=True) is None
    assert presenter.refusal(ready=False) == "The environment server is still starting; try again in a moment."
    presenter.begin()
    assert presenter.state is WorkbenchState.STARTING
    assert presenter.refusal(ready=True) == "A run is in progress: stop it with x first."
    presenter.started(paused=False, model="scripted/math")
    assert (presenter.state, presenter.model) == (WorkbenchState.RUNNING, "scripted/math")
    line = presenter.finished(summary("interrupted"), live_run({"trial_id": "tr_1", "score": 1.0}))
    assert presenter.state is WorkbenchState.INTERRUPTED and presenter.last_benchmark_id == "bm_1"
    assert line.text.startswith("Run interrupted: headline score 0.50 (interrupted: not compared with earlier runs)")
    assert presenter.model == "scripted/math", "the header names the model that ran until the next run"
    assert presenter.refusal(ready=True) is None


def test_pause_and_continue_for_every_trial_change_the_state_one_trial_does_not() -> None:
    presenter = RunPresenter(Redactor())
    presenter.begin()
    presenter.started(paused=True, model="m")
    assert presenter.state is WorkbenchState.PAUSED
    assert presenter.control("resume", None).text == "Continuing every trial."
    assert presenter.state is WorkbenchState.RUNNING
    assert presenter.control("pause", "tr_7").text == "Pausing trial tr_7."
    assert presenter.state is WorkbenchState.RUNNING
    presenter.control("step", None)
    assert presenter.state is WorkbenchState.RUNNING
    presenter.control("pause", None)
    assert presenter.state is WorkbenchState.PAUSED and presenter.state.live


def test_a_store_failure_is_a_state_of_the_run_and_is_said_at_once() -> None:
    presenter = RunPresenter(Redactor())
    presenter.begin()
    presenter.started(paused=False, model="m")
    said = presenter.events([event_from(EventKind.STORE_FAILED, benchmark_id="bm_1", data={"error": "disk full."})],
                            [], [])
    assert presenter.state is WorkbenchState.STORE_FAILED
    text = "The store refused writes, so the run was stopped: disk full. Its recorded trials are kept."
    assert [line.text for line in said.lines] == [text]
    assert [(alert.title, alert.severity, alert.timeout) for alert in said.alerts] == [("Store failed", "error", 30)]
    assert not presenter.state.live, "a run whose store failed is stopping: another may be asked for"
    presenter.failed(UserError("the database refused a write."))
    assert presenter.state is WorkbenchState.FAILED


def test_a_failed_run_says_its_one_problem_or_points_at_the_message() -> None:
    presenter = RunPresenter(Redactor())
    presenter.begin()
    line = presenter.failed(UserError("no task 'nope' in suite samplemath.", where="run form"))
    assert presenter.state is WorkbenchState.FAILED
    assert line.text == ("The run did not go through (no task 'nope' in suite samplemath): correct the form and "
                         "press r.") and line.style == "bold red"
    assert "(see the message)" in presenter.failed(RuntimeError("a bug")).text


def test_a_batch_says_undelivered_interventions_breakpoints_and_lost_ownership_in_order() -> None:
    presenter = RunPresenter(Redactor())
    hit = event_from(EventKind.BREAKPOINT_HIT, trial_id="tr_2", task_id="add",
                data={"breakpoint": "tool:calc", "reason": "calls calc", "paused": True})
    lost = event_from(EventKind.OWNERSHIP_LOST, benchmark_id="bm_9")
    said = presenter.events([hit, lost], [("tr_1", "check the sign")], [hit])
    assert [line.text.split(":")[0] for line in said.lines] == ["Intervention NOT delivered to trial tr_1",
                                                                "Benchmark bm_9 was taken over by another process "
                                                                "(this run was silent past its heartbeat), so this "
                                                                "run stopped and wrote nothing more; the other "
                                                                "process finishes it."]
    assert [alert.title for alert in said.alerts] == ["Intervention not delivered", "Breakpoint tool:calc",
                                                      "Lost ownership"]
    assert said.alerts[1].text == ("Trial tr_2 (add): calls calc; paused: select it and press c to continue or s "
                                   "to step.")
    assert presenter.state is WorkbenchState.IDLE, "ownership lost is said; the run's own status comes when it returns"


@pytest.mark.parametrize(("run", "trials", "expected"), [
    (summary(), [{"trial_id": "tr_1", "score": 1.0}],
     "headline score 0.50 (improved against the best earlier run, 0.25)"),
    (summary(previous=None), [], "headline score 0.50 (the first finished run of this spec)"),
    (summary(score=None), [{"trial_id": "tr_1", "score": 1.0, "assisted": True}],
     "no headline score (every trial was assisted, and assisted trials are reported apart)"),
    (summary(score=None), [{"trial_id": "tr_1", "score": 1.0, "assisted": True}, {"trial_id": "tr_2", "score": None}],
     "no headline score (only assisted trials were scored, and assisted trials are reported apart)"),
    (summary(score=None), [{"trial_id": "tr_1", "score": None}], "no headline score (no trial was scored)"),
])
def test_the_finish_line_carries_the_headline(run: RunSummary, trials: list[dict[str, object]], expected: str) -> None:
    presenter = RunPresenter(Redactor())
    line = presenter.finished(run, live_run(*trials))
    assert presenter.state is WorkbenchState.FINISHED
    assert line.text.startswith(f"Run finished: {expected}; 2 trials, 0 errored; tokens ")
    assert line.text.endswith(" m compares the arms.") and line.style == ""


def test_errors_and_undelivered_interventions_make_the_finish_line_red_and_a_fork_names_its_parent() -> None:
    presenter = RunPresenter(Redactor())
    assert presenter.finished(summary(errored=1), live_run()).style == "bold red"
    live = live_run({"trial_id": "tr_1", "score": 1.0})
    live.apply([event_from(EventKind.INTERVENTION_UNDELIVERED, trial_id="tr_1", task_id="add", data={"text": "hi"})])
    fork = presenter.finished(summary(fork_of="tr_0"), live)
    assert fork.text == ("Fork of trial tr_0 finished. Enter opens its timeline; v there shows it beside its parent "
                         "from the fork point. 1 intervention(s) NOT delivered (their trials ended first; see the "
                         "timelines).") and fork.style == "bold red"


def test_every_state_is_named_and_only_starting_running_paused_are_live() -> None:
    assert {state.value for state in WorkbenchState} == {"idle", "starting", "running", "paused", "finished",
                                                         "interrupted", "lost_ownership", "store_failed", "failed"}
    live = {WorkbenchState.STARTING, WorkbenchState.RUNNING, WorkbenchState.PAUSED}
    assert {state for state in WorkbenchState if state.live} == LIVE_STATES == live


def test_the_presenter_imports_without_textual() -> None:
    code = ("import sys, corral_tui.services.run_presenter; "
            "sys.exit(1 if any(name.split('.')[0] == 'textual' for name in sys.modules) else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
