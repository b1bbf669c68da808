"""Breakpoints from the workbench: a hit pauses the trial where it happened, is shown and recorded;
a batch spec's breakpoints only record (the workbench shows them in the stored timeline)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import RichLog

from corral_core.events import EventKind
from corral_tui.messages import TimelineRequested
from corral_tui.screens.timeline import TimelineScreen
from tests.timeouts import HANG
from tests.tui.helpers import (
    SAMPLEMATH,
    SIZE,
    make_app,
    only_trial,
    pane_text,
    run_done,
    start_run,
    trial_events,
    wait_for,
    wait_ready,
)

pytestmark = pytest.mark.anyio


def _recording_notes(app) -> list[str]:
    """Every notification the app shows from now on, kept (a shown one expires, on a loaded machine
    maybe before the test reads it)."""
    notes: list[str] = []
    notify = app.notify
    app.notify = lambda message, *args, title="", **kwargs: (notes.append(f"{title}: {message}"),
                                                              notify(message, *args, title=title, **kwargs))[1]
    return notes


def _status(app) -> str:
    return str(app.workbench_screen.query_one("#status").render())


def _held(app, trial_id: str) -> bool:
    """The trial's agent waits at its controller (a paused trial, not merely a drawn row)."""
    active = app.services.session.active
    controller = active.controls.controller(trial_id) if active is not None else None
    return controller is not None and controller.blocked


def _stored_kinds(app, trial_id: str) -> list[tuple[str, str]]:
    lifecycle = app.services.lifecycle
    assert lifecycle.writer.flush(HANG)
    return [(entry.kind, entry.summary) for entry in lifecycle.repository.timeline(trial_id)
            if entry.kind in ("breakpoint_hit", "control_state")]


async def test_a_tool_breakpoint_pauses_the_trial_right_before_the_tool_runs(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    notes = _recording_notes(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", tasks="add", breakpoints="tool:calculator")
        await wait_for(pilot, lambda: app.live.trials and any(t.held_by for t in app.live.trials.values()),
                       "the trial to stop at its breakpoint")
        trial_id = only_trial(app)
        await wait_for(pilot, lambda: _held(app, trial_id), "the agent to wait at the breakpoint")
        trial = app.live.trials[trial_id]
        assert (trial.control, trial.held_by) == ("paused", "tool:calculator: about to call calculator")
        assert trial_events(app, trial_id, EventKind.TOOL_CALL) == [], "the tool ran before the operator went on"

        # shown: status line, notification, the trial's panes and its row
        await wait_for(pilot, lambda: "at breakpoint tool:calculator" in _status(app), "the status line")
        assert "paused at breakpoint tool:calculator: about to call calculator — c continues" in _status(app)
        assert any(note.startswith("Breakpoint tool:calculator: Trial") and "about to call calculator; paused"
                   in note for note in notes), notes
        hooks = " ".join((await pane_text(pilot, "pane-hooks")).split())  # the pane wraps long lines
        assert "breakpoint tool:calculator hit at iteration 1: about to call calculator (paused" in hooks
        assert "control: paused at iteration 1 (breakpoint tool:calculator: about to call calculator)" in hooks
        assert trial.last_action == "breakpoint tool:calculator"
        # recorded in the trial's timeline
        assert _stored_kinds(app, trial_id)[-2:] == [
            ("breakpoint_hit", "breakpoint tool:calculator hit: about to call calculator (paused)"),
            ("control_state", "control: paused (breakpoint tool:calculator: about to call calculator)")]

        await pilot.press("c")  # the existing continue key lets it go on: the tool runs, the trial ends
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        (call,) = trial_events(app, trial_id, EventKind.TOOL_CALL)
        assert (call.data["tool_name"], call.data["status"]) == ("calculator", "success")
        assert (trial.result, trial.score) == ("completed", 1.0)


async def test_a_token_threshold_pauses_the_trial_once_its_tokens_pass_it(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        # compound: two calculator turns then the answer; its first reply alone stays under 1,000 tokens
        await start_run(pilot, "samplemath", tasks="compound", breakpoints="tokens>1000")
        await wait_for(pilot, lambda: app.live.trials and any(t.held_by for t in app.live.trials.values()),
                       "the trial to stop at its token threshold")
        trial_id = only_trial(app)
        await wait_for(pilot, lambda: _held(app, trial_id), "the agent to wait at the threshold")
        spent = [e.data["usage"]["total_tokens"] for e in trial_events(app, trial_id, EventKind.LLM_RESPONSE)]
        assert len(spent) == 2 and spent[0] <= 1000 < sum(spent), f"it stopped after the replies {spent}"
        trial = app.live.trials[trial_id]
        assert trial.tokens == sum(spent) and trial.control == "paused"
        (hit,) = trial_events(app, trial_id, EventKind.BREAKPOINT_HIT)
        assert hit.data["reason"] == f"the trial has used {sum(spent):,} tokens, over tokens>1000"
        await wait_for(pilot, lambda: "at breakpoint tokens>1000" in _status(app), "the status line")
        assert [kind for kind, _ in _stored_kinds(app, trial_id)].count("breakpoint_hit") == 1

        await pilot.press("c")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        assert len(trial_events(app, trial_id, EventKind.BREAKPOINT_HIT)) == 1, "a threshold stops a trial once"
        assert (trial.result, trial.score) == ("completed", 1.0)


async def test_a_wrong_breakpoint_is_refused_before_the_run(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", tasks="add", breakpoints="tool:calculator; risk:dangerous")
        await wait_for(pilot, lambda: "Cannot start" in _status(app), "the form's error")
        assert "unknown risk level 'dangerous'" in _status(app)
        assert app.live.trials == {} and app.services.session.active is None


async def test_b_goes_to_the_breakpoints_field(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        app.workbench_screen.query_one("#tasks").focus()
        await pilot.press("b")  # on the suites tree a letter only says where it works
        assert app.focused is app.workbench_screen.query_one("#tasks")
        app.workbench_screen.query_one("#form-start").focus()
        await pilot.press("b")
        assert app.focused is app.workbench_screen.query_one("#form-breakpoints")
        await pilot.press(*"tool:calculator")
        assert app.workbench_screen.query_one("#run-form").request().breakpoints == ["tool:calculator"]


def _record_batch(db: Path) -> tuple[str, list[str]]:
    """A batch run (no person: nothing pauses) of a spec with breakpoints, straight into `db`."""
    from corral_core.runner import BenchmarkRunner
    from corral_core.spec import spec_from_dict
    from corral_core.store import Repository, StoreWriter, init_db, make_engine

    engine = make_engine(db)
    init_db(engine)
    data = {"name": "batch-breakpoints", "suite": str(SAMPLEMATH), "tasks": ["add", "compound"],
            "hooks": {"breakpoints": ["tool:calculator", "tokens>1000"]}}
    with StoreWriter(engine) as writer:
        result = BenchmarkRunner(spec_from_dict(data, SAMPLEMATH.parent), repository=Repository(engine),
                                 writer_sink=writer).run()
    trials = [t.id for t in Repository(engine).trials(result.benchmark_id).items]
    engine.dispose()
    assert result.status == "finished" and result.trials_run == 2
    return result.benchmark_id, trials


async def test_a_batch_specs_breakpoints_are_recorded_without_pausing(tmp_path: Path) -> None:
    _benchmark, trial_ids = _record_batch(tmp_path / "corral.db")
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        repository = app.services.lifecycle.repository
        by_task = {repository.trial(t).task_id: t for t in trial_ids}
        hits = {task: [e.summary for e in repository.timeline(t) if e.kind == "breakpoint_hit"]
                for task, t in by_task.items()}
        assert hits == {  # the counts: the prompt tokens at full (derived levels: untagged YAML tools)
            "add": ["breakpoint tool:calculator hit: about to call calculator",
                    "breakpoint tokens>1000 hit: the trial has used 1,684 tokens, over tokens>1000"],
            "compound": ["breakpoint tool:calculator hit: about to call calculator",
                         "breakpoint tokens>1000 hit: the trial has used 1,691 tokens, over tokens>1000",
                         "breakpoint tool:calculator hit: about to call calculator"]}
        for trial_id in trial_ids:
            assert repository.trial(trial_id).status == "completed"
            assert not [e for e in repository.timeline(trial_id) if e.kind == "control_state"
                        and e.data.get("state") == "paused"], "a batch run paused at a breakpoint"

        app.post_message(TimelineRequested(by_task["add"]))
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.query_one(RichLog).lines,
                       "the trial's timeline")
        text = " ".join(" ".join(strip.text for strip in app.screen.query_one(RichLog).lines).split())
        assert "breakpoint tool:calculator hit at iteration 1: about to call calculator (recorded, not paused)" \
            in text


async def test_breakpoints_set_during_a_run_reach_its_running_trial(tmp_path: Path) -> None:
    from corral_core.agents.breakpoints import Breakpoint
    from corral_tui.screens.dialogs import BreakpointsScreen
    from tests.tui.helpers import TUITEST

    app = make_app(tmp_path, suites=[TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="count", paused=True)  # five tally calls, then the answer
        await wait_for(pilot, lambda: len(app.live.trials) == 1 and _held(app, only_trial(app)),
                       "the trial to wait, paused before its first iteration")
        trial_id = only_trial(app)

        await pilot.press("b")  # the form is locked during a run: b opens the run's breakpoints
        await wait_for(pilot, lambda: isinstance(app.screen, BreakpointsScreen), "the breakpoints dialog")
        await pilot.press(*"tool:tally", "enter")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen, "the dialog to close")
        assert app.services.session.breakpoints() == (Breakpoint("tool", "tally"),)

        await pilot.press("c")
        await wait_for(pilot, lambda: app.live.trials[trial_id].held_by, "the trial to stop at the new breakpoint")
        await wait_for(pilot, lambda: _held(app, trial_id), "the agent to wait at the breakpoint")
        assert trial_events(app, trial_id, EventKind.TOOL_CALL) == []
        (hit,) = trial_events(app, trial_id, EventKind.BREAKPOINT_HIT)
        assert (hit.data["breakpoint"], hit.data["arguments"]) == ("tool:tally", {"step": 1})

        await pilot.press("b")  # clear them: the trial runs to its end without stopping again
        await wait_for(pilot, lambda: isinstance(app.screen, BreakpointsScreen), "the breakpoints dialog")
        field = app.screen.query_one("#breakpoints-text")
        assert field.value == "tool:tally"
        field.value = ""
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen, "the dialog to close")
        await pilot.press("c")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        assert len(trial_events(app, trial_id, EventKind.TOOL_CALL)) == 5
        assert len(trial_events(app, trial_id, EventKind.BREAKPOINT_HIT)) == 1
        assert app.live.trials[trial_id].result == "completed"
