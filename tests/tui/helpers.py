"""Shared helpers for the pilot and snapshot tests: app factory, waiting, a recorded benchmark."""

from __future__ import annotations

import io
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import RichLog, TabbedContent

from corral_core.events import Event, EventKind, event_from
from corral_tui.app import WorkbenchApp, create_app
from tests.tui.stable import test_config

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"
TUITEST = DATA / "tuitest.yaml"
SIZE = (120, 40)


def make_app(tmp_path: Path, suites: Iterable[Path] | None = (SAMPLEMATH,), **overrides: Any) -> WorkbenchApp:
    """The real app through the one factory, on a fresh SQLite file, with the deterministic config.
    `suites=None` opens the repository's sample suites, as `corral-tui` without arguments does."""
    overrides.setdefault("db_url", str(tmp_path / "corral.db"))
    overrides.setdefault("work_dir", tmp_path / "work")
    return create_app(test_config(None if suites is None else list(suites), **overrides))


async def wait_for(pilot: Pilot, predicate: Callable[[], Any], what: str, timeout: float = 120.0) -> None:
    """Let the app run until `predicate()` is true; fail naming `what` after `timeout` seconds (a bound
    for a failing test only: a loaded machine may take long, a passing test returns as soon as it holds)."""
    from textual.pilot import WaitForScreenTimeout

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for: {what}\n{_state(pilot.app)}")
        try:
            await pilot.pause(0.05)
        except WaitForScreenTimeout:  # Textual's own 30 s bound on the screen's queue: ours is `timeout`
            continue


def footer_settled(app: Any) -> bool:
    """Whether every key footer on the active screen shows the bindings in force (Textual composes a
    footer empty and redraws it a refresh after its screen's bindings change)."""
    from textual.widgets import Footer

    from corral_tui.widgets.textual_adapter import FooterKey

    screen = app.screen
    footers = list(screen.query(Footer))
    if not footers:
        return True
    active = screen.active_bindings
    wanted = {(binding.action, enabled) for _, binding, enabled, _ in active.values() if binding.show}
    palette = active.get(app.COMMAND_PALETTE_BINDING) if app.ENABLE_COMMAND_PALETTE else None
    for footer in footers:
        shown = {(key.action, not key.disabled) for key in footer.query(FooterKey)}
        expected = wanted | ({(palette[1].action, palette[2])} if palette and footer.show_command_palette else set())
        if shown != expected:
            return False
    return True


async def settle(pilot: Pilot) -> None:
    """Wait until the screen is drawn for its current state (see `footer_settled`), with every text
    cursor held on (a blinking one draws either way, depending on when the picture is taken)."""
    from textual.widgets import Input, TextArea

    for field in pilot.app.screen.query("Input, TextArea"):
        if isinstance(field, Input | TextArea):
            field.cursor_blink = False
        if isinstance(field, TextArea):
            # its line cache keys a non-blinking cursor line like the blink's "off" half: drop what the
            # blink drew, or the picture may show the cursor line as drawn in its "off" half
            field.notify_style_update()
            field.refresh()
    await wait_for(pilot, lambda: footer_settled(pilot.app), "the key footer to show the bindings in force")
    await pilot.pause()
    await drawn(pilot)


# pending work a widget may still hold after its last message: Textual does each on a later refresh or idle
_PENDING = ("_layout_required", "_repaint_required", "_recompose_required", "_refresh_styles_required",
            "_scroll_required", "_require_update_dimensions")
# the app's short workers (the boot, a task's prompt and guide, a screen's store query): what they fetch is
# drawn when they finish, so a picture waits for them; a run's and the approvals' workers live long
SHORT_WORK = ("boot", "task-text", "query")
STABLE_FRAMES = 3  # the same picture this many times in a row, the app quiet before each
FRAME_TRIES = 200  # a screen that never stops changing is pictured as it is after this many (the test judges)


def quiet(app: Any) -> bool:
    """Nothing left to draw: no short worker still fetching (`SHORT_WORK`), no message waiting in the app or
    any node of the active screen, and no widget holding a layout, repaint, recompose, style refresh,
    scroll or a DataTable's column sizing (done on its next idle) for later."""
    screen = app.screen
    if getattr(screen, "_dirty_widgets", None) or not app._message_queue.empty():
        return False
    if any(worker.group in SHORT_WORK and not worker.is_finished for worker in app.workers):
        return False
    for node in screen.walk_children(with_self=True):
        if not node._message_queue.empty() or any(getattr(node, flag, False) for flag in _PENDING):
            return False
    return True


async def drawn(pilot: Pilot) -> None:
    """Wait until the screen is drawn for its state: the app `quiet` and its picture unchanged over
    `STABLE_FRAMES` pauses. On a loaded machine a widget's last redraw (a DataTable sized to rows that
    just arrived, a footer, a dialog's layout) can come a refresh after the test's own steps are done."""
    last, same = None, 0
    for _ in range(FRAME_TRIES):
        await pilot.pause()
        if not quiet(pilot.app):
            same = 0
            continue
        frame = pilot.app.export_screenshot()
        same = same + 1 if frame == last else 1
        last = frame
        if same >= STABLE_FRAMES:
            return


def _state(app: Any) -> str:
    """What a timed-out wait saw: the app's run state and status line, and every thread's stack (a
    test that fails only in a loaded full run can then be diagnosed from its log)."""
    lines = [f"run_state={getattr(app, 'run_state', '?')} ready={getattr(app, 'ready', '?')} "
             f"screen={type(app.screen).__name__}"]
    try:
        from corral_tui.widgets.status import StatusLine
        lines.append(f"status line: {app.workbench_screen.query_one(StatusLine).render()}")
        writer = app.services.lifecycle.writer
        lines.append(f"store writer: written={getattr(writer, 'written', '?')} failed={getattr(writer, 'failed', '?')} "
                     f"failure={getattr(writer, 'failure', '?')!r}")
    except Exception as exc:  # the screen may be gone
        lines.append(f"status line: ({exc!r})")
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        lines.append(f"--- thread {names.get(ident, ident)}")
        lines.extend(line.rstrip() for line in traceback.format_stack(frame)[-12:])
    return "\n".join(lines)


async def wait_ready(pilot: Pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.ready, "the embedded servers and the store")
    await wait_for(pilot, lambda: app.workbench_screen.selected is not None, "the task tree")


async def start_run(pilot: Pilot, suite: str, **form: Any) -> None:
    """Fill the run form for `suite` and press r (focus on the form's Start button: r acts in the form)."""
    screen = pilot.app.workbench_screen
    run_form = screen.query_one("#run-form")
    run_form.set_suite(suite, [task.id for task in screen.suites[suite].tasks])
    run_form.set_values(**form)
    screen.query_one("#form-start").focus()
    await pilot.pause()
    await pilot.press("r")


def run_done(app: WorkbenchApp) -> bool:
    """The run ended and its last events are drawn."""
    return (app.run_state in ("finished", "interrupted", "failed") and app.live.total > 0
            and app.live.done >= app.live.total and len(app.services.lifecycle.queue) == 0)


async def pane_text(pilot: Pilot, pane_id: str) -> str:
    """Show a live pane (pane-iterations, pane-tools, pane-hooks) as a person would, and return its text."""
    screen = pilot.app.workbench_screen
    screen.query_one("#pane-tabs", TabbedContent).active = pane_id
    log = screen.query_one(f"#{pane_id}-log", RichLog)
    # a RichLog keeps what it is given until it knows its size (once its tab is shown), then draws it all
    await wait_for(pilot, lambda: log._size_known and not log._deferred_renders, f"{pane_id} to be drawn")
    return "\n".join(strip.text for strip in log.lines)


def static_text(widget: Any, width: int = 120) -> str:
    """The plain text of a Static's content (a rich renderable or a string)."""
    from rich.console import Console

    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(widget.content)
    return console.export_text()


def trial_events(app: WorkbenchApp, trial_id: str, *kinds: EventKind) -> list[Event]:
    events = list(app.live.trials[trial_id].events)
    return [e for e in events if e.kind in kinds] if kinds else events


def only_trial(app: WorkbenchApp) -> str:
    assert len(app.live.trials) == 1, f"expected one trial, got {list(app.live.trials)}"
    return next(iter(app.live.trials))


def record_benchmark(db_path: Path, work_dir: Path, name: str = "history-demo") -> str:
    """Run a small two-arm samplemath benchmark straight through the engine into `db_path`."""
    from corral_core.runner import BenchmarkRunner
    from corral_core.spec import spec_from_dict
    from corral_core.store import Repository, StoreWriter, init_db, make_engine

    engine = make_engine(db_path)
    init_db(engine)
    data = {"name": name, "suite": str(SAMPLEMATH), "agent": {"type": "react", "max_iterations": 4},
            "arms": [{"name": "minimal", "verbosity": "minimal"}, {"name": "full", "verbosity": "full"}],
            "tasks": ["add", "power"], "trials_per_task": 2, "parallel": 1}
    spec = spec_from_dict(data, SAMPLEMATH.parent)
    with StoreWriter(engine) as writer:
        result = BenchmarkRunner(spec, repository=Repository(engine), writer_sink=writer).run()
    engine.dispose()
    return result.benchmark_id


def record_fork(db_path: Path, intervention: str) -> str:
    """Run tuitest's `count` (six iterations) through the engine into `db_path`, then fork it at the third
    iteration with `intervention`; returns the fork's trial id. Needs CORRAL_TUI_SCRIPTS=DATA."""
    from corral_core.batch import open_store
    from corral_core.runner import BenchmarkRunner
    from corral_core.runner.fork import ForkRunner
    from corral_core.spec import spec_from_dict

    engine, repository, writer = open_store(str(db_path))
    try:
        spec = spec_from_dict({"name": "fork-demo", "suite": str(TUITEST), "tasks": ["count"],
                               "agent": {"type": "react", "max_iterations": 8}}, DATA)
        parent = next(iter(BenchmarkRunner(spec, repository=repository, writer_sink=writer).run().rows))["trial_id"]
        fork = ForkRunner(repository, writer, parent, 2, intervention)
        fork.run()
        assert fork.fork_trial_id is not None
        return fork.fork_trial_id
    finally:
        writer.close()
        engine.dispose()


def fake_trial_events(trial_id: str = "tr_demo0001", task_id: str = "count") -> list[Event]:
    """Events of a trial that started and is paused at its first iteration (for dialogs' snapshots)."""
    return [
        event_from(EventKind.TRIAL_STARTED, trial_id, task_id, {"arm": "full", "trial_index": 0}, ts=0.0),
        event_from(EventKind.CONTROL_STATE, trial_id, task_id, {"state": "paused", "iteration": 0}, ts=0.0),
    ]


def asking_trial_events(trial_id: str, task_id: str) -> list[Event]:
    """Events of a trial at its third iteration whose model just thought before a confirm-level call."""
    thought = ("<thought>The scratch file is left over from the build; deleting it frees the workspace "
               "before I report.</thought><action>delete_file</action><action_input>{\"path\": "
               "\"scratch.tmp\"}</action_input>")
    return [
        event_from(EventKind.TRIAL_STARTED, trial_id, task_id, {"arm": "full", "trial_index": 0}, ts=0.0),
        *(event_from(EventKind.ITERATION_STARTED, trial_id, task_id, {"iteration": i}, ts=0.0) for i in range(3)),
        event_from(EventKind.MESSAGE, trial_id, task_id, {"role": "assistant", "content": thought, "index": 5}, ts=0.0),
        event_from(EventKind.APPROVAL_ASKED, trial_id, task_id, {"tool_name": "delete_file", "risk": "confirm"},
                   ts=0.0),
    ]


def telemetry_events() -> list[Event]:
    """A run of 8 trials over two arms, half finished, half still running, with tokens and costs."""
    events = [event_from(EventKind.BENCHMARK_STARTED, None, None, {"total_trials": 8, "pending_trials": 8},
                    benchmark_id="bm_demo", ts=0.0)]
    plan = [(task, arm) for arm in ("brief", "full") for task in ("add", "power", "divide", "solve")]
    for number, (task, arm) in enumerate(plan):
        trial_id = f"tr_tele{number:04d}"
        events.append(event_from(EventKind.TRIAL_STARTED, trial_id, task, {"arm": arm, "trial_index": 0}, ts=0.0))
        for iteration in range(1 + number % 3):
            events.append(event_from(EventKind.ITERATION_STARTED, trial_id, task, {"iteration": iteration}, ts=0.0))
            events.append(event_from(EventKind.LLM_RESPONSE, trial_id, task, {
                "role": "agent", "turn": iteration, "usage": {"total_tokens": 700 + 450 * number}, "cost": 0.0021,
                "tool_calls": [{"name": "calculator"}]}, ts=0.0))
            events.append(event_from(EventKind.TOOL_CALL, trial_id, task, {
                "tool_name": "calculator", "status": "success" if iteration != 1 else "execution_error",
                "arguments": {}, "iteration": iteration}, ts=0.0))
        if task in ("add", "power"):
            score = {"add": 1.0, "power": 0.0 if arm == "brief" else 1.0}[task]
            events.append(event_from(EventKind.TRIAL_FINISHED, trial_id, task, {
                "status": "completed", "score": score, "iterations": 1 + number % 3, "duration": 2.5,
                "total_tokens": (700 + 450 * number) * (1 + number % 3), "cost": 0.0021 * (1 + number % 3),
                "assisted": False}, ts=0.0))
    return events


def record_progress_store(db_path: Path) -> tuple[str, str]:
    """A store holding an interrupted run (5 of 8 planned trials, one errored by the provider, priced) and
    a running one (3 of 8 done, one still running), as the engine records them; returns (interrupted,
    running) ids. The plan is kept at the start, as the runner keeps it."""
    from corral_core.spec import spec_from_dict
    from corral_core.store import Repository, StoreWriter, init_db, make_engine

    engine = make_engine(db_path)
    init_db(engine)
    repository = Repository(engine)
    data = {"name": "progress-demo", "suite": str(SAMPLEMATH), "model": "scripted/samplemath",
            "arms": [{"name": "minimal", "verbosity": "minimal"}, {"name": "full", "verbosity": "full"}],
            "tasks": ["add", "power"], "trials_per_task": 2}
    spec = spec_from_dict(data, SAMPLEMATH.parent)
    ids = []
    with StoreWriter(engine) as writer:
        for status, finished in (("interrupted", 5), ("running", 3)):
            info = repository.create_benchmark(
                spec_name=spec.name, spec_digest=spec.digest, spec_yaml=spec.text, suites=[str(SAMPLEMATH)],
                agent="react", model="scripted/samplemath", trials_per_task=2, plan=spec.normalized(),
                arms=[{"name": a.name, "verbosity": a.verbosity, "model": a.model.id, "agent": "react"}
                      for a in spec.arms])
            plan = [(arm, task, index) for arm in ("minimal", "full") for task in ("add", "power") for index in (0, 1)]
            for number, (arm, task, index) in enumerate(plan[:finished + (status == "running")]):
                trial_id = f"tr_{status[:4]}{number:04d}"
                writer.emit(event_from(EventKind.TRIAL_STARTED, trial_id, task, {"arm": arm, "trial_index": index},
                                  benchmark_id=info.id, ts=1_700_000_000.0 + number))
                if number == finished:
                    continue  # still running
                errored = (arm, task, index) == ("minimal", "power", 0)
                result = {"status": "error", "score": None, "error": "litellm.AuthenticationError: Missing "
                          "credentials", "fault": "provider", "total_tokens": 0, "cost": None} if errored else \
                    {"status": "completed", "score": 1.0 if task == "add" else 0.0, "answer": "42",
                     "total_tokens": 1_150, "prompt_tokens": 1_000, "completion_tokens": 150, "cost": 0.00013695}
                writer.emit(event_from(EventKind.TRIAL_FINISHED, trial_id, task,
                                  {"arm": arm, "trial_index": index, "duration": 1.5, "iterations": 1, **result},
                                  benchmark_id=info.id, ts=1_700_000_000.5 + number))
            if status == "interrupted":
                assert writer.flush(60)
                repository.finish_benchmark(info.id, status="interrupted")
            ids.append(info.id)
        assert writer.flush(60)
    engine.dispose()
    return ids[0], ids[1]
