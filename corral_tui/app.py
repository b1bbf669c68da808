"""The workbench app: `create_app(config)` builds it for the CLI and the tests alike (posting's pattern).

The app wires the services (corral_tui/services) to the screens. Workers are thin (harlequin's
pattern): call a service, post a typed message; the `@on` handlers here make every UI change, and
one `Worker.StateChanged` handler turns worker errors into an error dialog. Screens ask for things
with typed messages (corral_tui/messages.py) and get what they need in their constructor; the app
builds them. Engine events arrive through a bounded queue drained on a timer, a batch per tick;
a tick that comes too soon after a costly one is skipped, so a flood of events never keeps the UI
from answering keys (the batch only grows: a row is redrawn once per batch however many events).
Pending approvals live in the services' approvals inbox only: the app subscribes to its changes.
"""

from __future__ import annotations

import gc
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rich.text import Text
from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.command import CommandPalette
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.widgets import Label
from textual.worker import Worker, WorkerState

from corral_core.domain import WorkbenchState
from corral_core.errors import StoreError, UserError
from corral_core.events import Event
from corral_core.safetext import clean
from corral_tui.commands import ActionsProvider, all_binding_owners, binding_rows
from corral_tui.config import WorkbenchConfig, config_from_args
from corral_tui.live import LiveRun

if TYPE_CHECKING:
    from corral_core.env.approval import ApprovalRequest
    from corral_tui.options import CliOptions
    from corral_tui.screens.approval import ApprovalScreen
    from corral_tui.screens.fork import ForkChoice
from corral_tui.messages import (
    ApprovalsChanged,
    BreakpointsRequested,
    CompareRequested,
    ControlRequested,
    ForkRequested,
    ForkViewRequested,
    InterventionRequested,
    ResumeRequested,
    RunFinished,
    RunRequested,
    RunStarted,
    ServicesReady,
    SpecFileRequested,
    StopRequested,
    SuitesLoaded,
    TaskTextLoaded,
    TaskTextRequested,
    TimelineRequested,
    TrialCancelRequested,
    TrialsRequested,
    WorkerFailed,
)
from corral_tui.run_request import RunRequest, remember, remembered
from corral_tui.screens.dialogs import (
    BreakpointsScreen,
    ConfirmScreen,
    ErrorScreen,
    HelpScreen,
    InterventionScreen,
    SpecFileScreen,
)
from corral_tui.screens.workbench import WorkbenchScreen
from corral_tui.services import WorkbenchServices
from corral_tui.services.approvals import Decision, Verdict
from corral_tui.services.run_presenter import Line, RunPresenter, Said
from corral_tui.services.session import ActiveRun
from corral_tui.widgets.run_form import RunForm
from corral_tui.widgets.status import Info

WORKBENCH_KEYS = frozenset({"approvals", "compare_last"})  # app actions the workbench binds to its letters
DRAIN_BACKOFF = 2.0  # after a drain that took t seconds, the next waits at least this many t


class WorkbenchApp(App[int]):
    """corral-tui's terminal workbench."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere keep the style
    TITLE = "corral-tui"
    COMMANDS = App.COMMANDS | {ActionsProvider}
    # every screen gets a width and a height class (app.tcss lays the workbench and the dialogs out by them)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-normal"), (200, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+q", "quit_now", "Quit now (no question)", show=False, priority=True, id="app.quit_now"),
        Binding("f1,question_mark", "help", "Help", key_display="F1 / ?", id="app.help"),
        Binding("h", "history", "History", id="app.history"),
        # Tab moves the focus before the next key is handed out: as the screen's (non-priority) binding it
        # waited behind the focused field's queue, and keys typed right after it landed in that field
        Binding("tab", "app.focus_next", "Next field", show=False, priority=True, id="app.focus_next"),
        Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True,
                id="app.focus_previous"),
    ]

    def __init__(self, config: WorkbenchConfig, services: WorkbenchServices | None = None) -> None:
        super().__init__()
        self.config = config
        self.title = config.title
        self.services = services if services is not None else WorkbenchServices.build(config)
        self.live = LiveRun(buffer=config.trial_buffer)
        self.ready = False  # the servers answer and the store is open
        self._spec_path = ""  # the last spec file opened or saved (the dialogs start with it)
        self.presenter = RunPresenter(config.redact)  # the run's state machine and its wording
        self.urls: dict[str, str] = {}
        self._workbench_screen = WorkbenchScreen(self.live, config.redact, self.services.queries, clock=config.clock,
                                                 default_model=config.model,
                                                 default_api_base=config.model_base_url, pane_lines=config.pane_lines)
        self._unsubscribe: Callable[[], None] | None = None
        self._next_drain = 0.0  # perf_counter time before which a timer tick does not drain
        self._held_toasts: list[tuple[str, str, SeverityLevel, float | None, bool]] = []  # while a dialog is open
        self.refresh_info()  # the info bar's first frame (the app mounts, and first refreshes it, after that frame)

    # --- life cycle ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The app's letters (q, h, ?) never act behind a dialog: a dialog's keys are its own, so text
        typed at a dialog that takes none goes nowhere (ctrl+q and the command palette still work)."""
        if action in ("quit", "history", "help") and isinstance(self.screen, ModalScreen) \
                and not isinstance(self.screen, CommandPalette):
            return None
        if action in WORKBENCH_KEYS and self.screen is self._workbench_screen:
            return self._workbench_screen.check_action(action, parameters)  # its keys' rule: not in a text field
        return True

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Toasts stay off dialogs: while one is open, a notification is written on its note line (if it
        has one) and shown as a toast once the dialog closes (`refresh_info` lets them out)."""
        dialog = self.screen
        if isinstance(dialog, ModalScreen) and not isinstance(dialog, CommandPalette):
            notes = dialog.query(".dialog-note")
            if notes:
                note = notes.first(Label)
                note.update(Text(f"{title}: {message}" if title else message))
                note.add_class("-shown")
            self._held_toasts.append((message, title, severity, timeout, markup))
            return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def _let_out_toasts(self) -> None:
        if self._held_toasts and not isinstance(self.screen, ModalScreen):
            held, self._held_toasts = self._held_toasts, []
            for message, title, severity, timeout, markup in held:
                super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    @property
    def run_state(self) -> WorkbenchState:
        return self.presenter.state

    @property
    def last_benchmark_id(self) -> str | None:
        return self.presenter.last_benchmark_id

    def _say(self, line: Line) -> None:
        self.workbench_screen.say(line.text, line.style)

    def get_default_screen(self) -> WorkbenchScreen:
        return self._workbench_screen

    @property
    def workbench_screen(self) -> WorkbenchScreen:
        return self._workbench_screen

    def on_mount(self) -> None:
        if self.config.keymap:
            self.set_keymap(self.config.keymap)
        self._unsubscribe = self.services.approvals.subscribe(self._inbox_changed)
        self.set_interval(self.config.drain_interval, partial(self.drain_events, now=False))
        self.set_interval(0.5, self.refresh_info)
        self.set_interval(1.0, self._tick)
        self.refresh_info()
        # after the first frame: the boot worker's imports (SQLAlchemy, FastAPI, uvicorn) hold the GIL,
        # and started at mount they slowed composing and painting the first screen
        self.call_after_refresh(self._boot)

    async def action_quit(self) -> None:
        """Quit; during a run, ask first (the run is stopped and recorded interrupted)."""
        if not self.run_state.live:
            self.action_quit_now()
            return
        if any(isinstance(screen, ConfirmScreen) for screen in self.screen_stack):
            return
        self.push_screen(ConfirmScreen("Quit during a run?", "The run is stopped: running trials are cancelled, "
                                       "pending approvals decided `cancelled`, and the benchmark is recorded "
                                       f"interrupted; its finished trials are kept.{self._resume_hint()}",
                                       yes="Quit (y)", no="Stay (n)"),
                         callback=lambda yes: self.action_quit_now() if yes else None)

    def action_quit_now(self) -> None:
        """Stop the run and the servers, then exit (the services close in on_unmount, bounded)."""
        self.services.begin_close()
        self.exit(0)

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.services.close()

    # --- thin workers -------------------------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="boot")
    def _boot(self) -> None:
        try:
            suites = self.services.load_suites()
            self.services.open_store()  # first: a store it cannot use ends the start before the screen fills
            self.post_message(SuitesLoaded(suites))
            self.post_message(ServicesReady(self.services.start()))
        except BaseException:
            gc.enable()  # no warm-up follows to end the start's pause of the collector (corral_tui/cli.py)
            raise

    @work(thread=True, exit_on_error=False, group="run")
    def _run(self, request: RunRequest) -> None:
        def started(active: ActiveRun) -> None:
            self.post_message(RunStarted(active.total, request.start_paused, active.model))

        self.post_message(RunFinished(self.services.session.run(request, on_started=started)))

    @work(thread=True, exit_on_error=False, group="run")
    def _fork(self, trial_id: str, choice: ForkChoice) -> None:
        def started(active: ActiveRun) -> None:
            self.post_message(RunStarted(active.total, False, active.model))

        self.post_message(RunFinished(self.services.session.fork(trial_id, choice.iteration, choice.intervention,
                                                                 on_started=started)))

    @work(thread=True, exit_on_error=False, group="run")
    def _resume(self, benchmark_id: str) -> None:
        def started(active: ActiveRun) -> None:
            self.post_message(RunStarted(active.total, False, active.model))

        self.post_message(RunFinished(self.services.session.resume(benchmark_id, on_started=started)))

    @work(thread=True, exit_on_error=False, group="approvals")
    def _decide(self, request: ApprovalRequest, decision: Decision) -> None:
        if decision.verdict is Verdict.TERMINATE and request.trial_id:
            # end the trial before the rejection lets its agent go on (it stops at its next iteration)
            self.services.session.cancel_trial(request.trial_id, decision.reason, decide_pending=False)
        if not self.services.approvals.decide(request, decision):
            self.call_from_thread(self.notify, f"{request.tool_name}: that request was already decided "
                                  "(or timed out).", severity="warning")
        self.call_from_thread(self.show_next_approval, True)  # the next one waiting, if any

    @work(thread=True, exit_on_error=False, group="task-text", exclusive=True)
    def _load_task_text(self, suite: str, task_id: str, verbosity: str) -> None:
        prompt, guide = self.services.catalogue.task_text(suite, task_id, verbosity)
        self.post_message(TaskTextLoaded(suite, task_id, verbosity, prompt, guide))

    # --- what the workers report --------------------------------------------------------------

    @on(SuitesLoaded)
    def _suites_loaded(self, message: SuitesLoaded) -> None:
        self.workbench_screen.show_suites(message.suites)
        last = remembered(self.config.form_memory) if self.config.form_memory else None
        if last is not None:  # the form remembers its last values; --model / --model-base-url win
            form = self.workbench_screen.query_one(RunForm)
            form.fill(last)
            if self.config.model:
                form.set_values(model=self.config.model, api_base=self.config.model_base_url or "")

    @on(ServicesReady)
    def _services_ready(self, message: ServicesReady) -> None:
        self.ready = True
        self.urls = message.urls
        # litellm's import (seconds holding the GIL) starts once "Ready." is on screen, not before its frame
        self.workbench_screen.say("Ready. Pick a suite or task, fill in the run form, press r to run.",
                                  when_drawn=self.services.warm_up)
        self.refresh_info()

    @on(TaskTextLoaded)
    def _task_text(self, message: TaskTextLoaded) -> None:
        if not self.workbench_screen.live:  # loaded while the app was quitting: nothing left to draw on
            return
        self.workbench_screen.show_task_text(message.suite, message.task_id, message.verbosity, message.prompt,
                                             message.guide)

    @on(RunStarted)
    def _run_started(self, message: RunStarted) -> None:
        self.live.total = message.total
        self.presenter.started(message.start_paused, message.model)
        self.refresh_info()

    @on(RunFinished)
    def _run_finished(self, message: RunFinished) -> None:
        self.drain_events()
        line = self.presenter.finished(message.summary, self.live)
        self.workbench_screen.lock_form(False)
        self.workbench_screen.show_run_bar()
        self._say(line)
        self.refresh_info()

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.ERROR:
            return
        if event.worker.group == "boot" and isinstance(event.worker.error, StoreError):
            # A store that cannot be opened (damaged, newer, unreachable): one message, exit 2, like the CLI.
            self.services.begin_close()
            # After the screen's next refresh: exiting while its widgets still mount breaks them.
            self.call_after_refresh(self.exit, return_code=2, message=Text(f"corral-tui: {event.worker.error}"))
            return
        if event.worker.group == "run":
            line = self.presenter.failed(event.worker.error)
            if self.workbench_screen.live:  # the form, locked for the run, can be corrected and run again
                self.workbench_screen.lock_form(False)
                self._say(line)
            self.refresh_info()
        self._show_error(event.worker.error)

    @on(WorkerFailed)
    def _screen_worker_failed(self, message: WorkerFailed) -> None:
        self._show_error(message.error)

    def _show_error(self, error: BaseException | None) -> None:
        if isinstance(error, UserError):
            self.push_screen(ErrorScreen("Cannot do that", str(error)))
        else:
            details = "".join(traceback.format_exception(error))[-4000:] if error else "unknown error"
            self.push_screen(ErrorScreen("Unexpected error (a bug in corral-tui; please report it)", details))

    # --- the event stream ---------------------------------------------------------------------

    def drain_events(self, *, now: bool = True) -> None:
        """Apply one batch of queued engine events to the live state, redraw what changed, and say what
        the batch tells the operator (`RunPresenter.events`).

        The timer calls it with `now=False`: then, unless a full batch is waiting, it waits out a
        pause of `DRAIN_BACKOFF` times the last drain's cost first, so drawing the batches (and the
        frames they cause) takes about a third of the UI thread at most, and key presses are served
        between.
        """
        started = time.perf_counter()
        if not self._drain_due(started, now) or not self.workbench_screen.live:
            return
        events = self._take_events()
        if not events:
            return
        changes = self.live.apply(events)
        if changes:
            self.workbench_screen.apply_changes(self.live, changes)
        finished = time.perf_counter()
        self._next_drain = finished + DRAIN_BACKOFF * (finished - started)
        self._announce(self.presenter.events(events, changes.undelivered, changes.breakpoints))

    def _drain_due(self, started: float, now: bool) -> bool:
        """Whether this tick drains (a full batch waiting is drained at once: the queue drops the oldest
        when full)."""
        return now or started >= self._next_drain or len(self.services.lifecycle.queue) >= self.config.drain_batch

    def _take_events(self) -> list[Event]:
        """One batch off the UI queue, redacted as what is stored (corral_core.safetext)."""
        events = self.services.lifecycle.queue.drain(self.config.drain_batch)
        for event in events:
            event.data = clean(event.data)
        return events

    def _announce(self, said: Said) -> None:
        """Put what the presenter says on the status line and in notifications."""
        for line in said.lines:
            self._say(line)
        for alert in said.alerts:
            self.notify(alert.text, title=alert.title, severity=alert.severity, timeout=alert.timeout)

    def _tick(self) -> None:
        if self.workbench_screen.live:
            self.workbench_screen.tick()

    def refresh_info(self) -> None:
        self._let_out_toasts()
        redact = self.config.redact
        screen = self.workbench_screen
        suite = screen.selected.suite if screen.selected else None
        url = self.urls.get(suite or "") or next(iter(self.urls.values()), None)
        model = self.presenter.model or self._form_model(suite)
        info = Info(server=redact.url(url) if url else "starting…",
                    requests=redact.count(self.services.lifecycle.requests_served()), model=model,
                    done=self.live.done, total=self.live.total, run_state=self.run_state,
                    approvals=len(self.services.approvals.pending()), executor=self._executor_label())
        screen.show_info(info)

    def _executor_label(self) -> str:
        executor, workers = self.config.executor, self.config.workers
        return f"{executor} ({workers} workers)" if workers and executor == "processes" else executor

    def _form_model(self, suite: str | None) -> str:
        if self.config.model:
            return self.config.model
        view = self.workbench_screen.suites.get(suite or "")
        return f"scripted/{view.script}" if view is not None and view.script else "-"

    # --- what the workbench screen asks for ----------------------------------------------------

    @on(TaskTextRequested)
    def _task_text_requested(self, message: TaskTextRequested) -> None:
        self._load_task_text(message.suite, message.task_id, message.verbosity)

    @on(RunRequested)
    def _run_requested(self, message: RunRequested) -> None:
        request = message.request
        if not self._can_start():
            return
        if self.config.form_memory is not None:
            remember(request, self.config.form_memory)
        self._start(self.presenter.run_line(request.suite, request.verbosities, request.trials),
                    partial(self._run, request), from_workbench=True)

    @on(ForkRequested)
    def _fork_requested(self, message: ForkRequested) -> None:
        if not self._can_start():
            return
        from corral_tui.screens.fork import ForkScreen

        label = self.config.redact.ident(message.trial_id)
        self.push_screen(ForkScreen(label, message.iterations), callback=partial(self._fork_chosen, message.trial_id))

    def _fork_chosen(self, trial_id: str, choice: ForkChoice | None) -> None:
        if choice is None or not self._can_start():
            return
        self._start(self.presenter.fork_line(trial_id, choice.iteration, bool(choice.intervention)),
                    partial(self._fork, trial_id, choice))

    @on(ResumeRequested)
    def _resume_requested(self, message: ResumeRequested) -> None:
        if not self._can_start():
            return
        self._start(self.presenter.resume_line(message.benchmark_id), partial(self._resume, message.benchmark_id))

    def _can_start(self) -> bool:
        """Whether a run (or fork, or resume) may start now; says why not."""
        refusal = self.presenter.refusal(self.ready)
        if refusal is not None:
            self.notify(refusal, severity="warning")
        return refusal is None

    def _start(self, line: Line, worker: Callable[[], object], *, from_workbench: bool = False) -> None:
        """Start a run (new, fork or resume): on the workbench, live, like any run, with its trials table
        fresh and the form locked; say `line` and start its worker."""
        if not from_workbench:
            self.call_later(self._back_to_workbench)
        self.live.reset()
        self.live.requested = self.config.clock()  # the run's elapsed time counts from here
        self.workbench_screen.reset_run()
        self.workbench_screen.lock_form(True)
        self.presenter.begin()
        self._say(line)
        worker()

    def _back_to_workbench(self) -> None:
        while len(self.screen_stack) > 1:
            self.pop_screen()

    @on(SpecFileRequested)
    def _spec_file_requested(self, message: SpecFileRequested) -> None:
        request = message.request
        if request is None:
            self.push_screen(SpecFileScreen("Open", self._open_spec, self._spec_path))
        else:
            self.push_screen(SpecFileScreen("Save", partial(self._save_spec, request), self._spec_path))

    def _open_spec(self, path: str) -> str | None:
        """Fill the run form from a spec file; the problem in words when it cannot (as --batch says it)."""
        from corral_tui.spec_file import open_spec

        catalogue = self.services.catalogue
        names = {Path(suite.path).resolve(): name for name, suite in catalogue.suites.items() if suite.path}
        try:
            opened = open_spec(path, names, lambda request: catalogue.build_spec(request,
                                                                                 self.config.approval_timeout))
        except UserError as error:
            return str(error)
        form = self.workbench_screen.query_one(RunForm)
        self.workbench_screen.select_suite(opened.request.suite)
        form.fill(opened.request)
        self._spec_path = path
        kept = f"; kept as written: {', '.join(opened.kept)}" if opened.kept else ""
        lost = f"; NOT SHOWN, the form would run them differently: {', '.join(opened.not_shown)}" \
            if opened.not_shown else ""
        form.show_file(f"From {Path(path).name}{kept}{lost}")
        self.workbench_screen.say(f"Opened {path} into the run form{kept}{lost}.",
                                  "bold yellow" if lost else "")
        return None

    def _save_spec(self, request: RunRequest, path: str) -> str | None:
        """Write the form as a spec file; the problem in words when it cannot."""
        from corral_tui.spec_file import save_spec

        try:
            suite_path = Path(self.services.catalogue.suite(request.suite).path or "")
            target = save_spec(request, path, suite_path, self.config.approval_timeout)
        except UserError as error:
            return str(error)
        self._spec_path = path
        self.workbench_screen.query_one(RunForm).show_file(f"Saved as {target.name}")
        self.workbench_screen.say(f"Saved the run form as {target}: corral-tui --batch {path} runs the same plan.")
        return None

    @on(ForkViewRequested)
    def _fork_view_requested(self, message: ForkViewRequested) -> None:
        from corral_tui.screens.fork import ForkViewScreen

        self.push_screen(ForkViewScreen(message.trial_id, self.services.queries, self.config.redact))

    def _confirm(self, title: str, message: str, yes: str, then: Callable[[], None]) -> None:
        """Ask before a destructive action (unless --no-confirm), then do it."""
        if not self.config.confirm_destructive:
            then()
            return
        self.push_screen(ConfirmScreen(title, message, yes=yes, no="Back (n)"),
                         callback=lambda answer: then() if answer else None)

    @on(StopRequested)
    def _stop_requested(self) -> None:
        if self.services.session.active is None:
            self.notify("No run in progress.", severity="warning")
            return
        self._confirm("Stop the run?", f"Running trials are cancelled and pending approvals decided `cancelled`; "
                      f"the benchmark is recorded interrupted.{self._resume_hint()}", "Stop (y)", self._stop_now)

    def _stop_now(self) -> None:
        if self.services.session.stop():
            self.workbench_screen.say("Stopping the run: running trials are cancelled.", "bold yellow")
        else:
            self.notify("No run in progress.", severity="warning")

    def _resume_hint(self) -> str:
        return self.presenter.resume_hint(self.live.benchmark_id)

    @on(ControlRequested)
    def _control_requested(self, message: ControlRequested) -> None:
        command, trial_id = message.command, message.trial_id
        if not self.services.session.control(command, trial_id):
            self.notify("That trial is not running (any more).", severity="warning")
            return
        line = self.presenter.control(command, trial_id)
        if trial_id is None:
            self.refresh_info()
        self._say(line)

    @on(TrialCancelRequested)
    def _trial_cancel_requested(self, message: TrialCancelRequested) -> None:
        trial = self.live.trials.get(message.trial_id)
        who = self.config.redact.ident(message.trial_id)
        self._confirm(f"End trial {who}?", f"Trial {who} ({trial.task_id if trial else '?'}) stops now and is scored "
                      "cancelled; the other trials go on.", "End trial (y)",
                      partial(self._cancel_trial_now, message.trial_id))

    def _cancel_trial_now(self, trial_id: str) -> None:
        who = self.config.redact.ident(trial_id)
        if self.services.session.cancel_trial(trial_id):
            self.workbench_screen.say(f"Ending trial {who}: it is scored as cancelled.", "bold yellow")
        else:
            self.notify("That trial is not running (any more).", severity="warning")

    @on(InterventionRequested)
    def _intervention_requested(self, message: InterventionRequested) -> None:
        trial_id = message.trial_id
        trial = self.live.trials.get(trial_id)
        label = f"{self.config.redact.ident(trial_id)} ({trial.task_id if trial else '?'})"
        self.push_screen(InterventionScreen(label), callback=partial(self._intervention_written, trial_id))

    def _intervention_written(self, trial_id: str, text: str | None) -> None:
        if text is None:
            return
        if self.services.session.intervene(trial_id, text):
            self.workbench_screen.say("Intervention queued: the agent reads it before its next LLM call.", "bold")
        else:
            self.notify("That trial is not running (any more); nothing was sent.", severity="warning")

    @on(BreakpointsRequested)
    def _breakpoints_requested(self) -> None:
        points = self.services.session.breakpoints()
        if points is None:
            self.notify("No run is in progress: set breakpoints in the run form.", severity="warning")
            return
        self.push_screen(BreakpointsScreen("; ".join(str(point) for point in points)),
                         callback=self._breakpoints_written)

    def _breakpoints_written(self, text: str | None) -> None:
        if text is None:
            return
        from corral_core.agents.breakpoints import parse_breakpoints  # the agents package: not before the first frame

        if self.services.session.set_breakpoints(parse_breakpoints(text)):
            self.workbench_screen.say(f"Breakpoints of this run: {text or 'none'}.", "bold")
        else:
            self.notify("The run has ended; its breakpoints were not changed.", severity="warning")

    # --- approvals (the inbox owns them; the app shows the oldest) ------------------------------

    def _inbox_changed(self, change: Literal["add", "remove"]) -> None:
        """The inbox's listener: runs on an engine or polling thread, so it only posts a message."""
        self.post_message(ApprovalsChanged(change))

    def action_approvals(self) -> None:
        """a on the workbench, or "Open approval" in the palette from anywhere."""
        self.show_next_approval()

    @on(ApprovalsChanged)
    def _approvals_changed(self, message: ApprovalsChanged) -> None:
        pending = self.services.approvals.pending()
        dialog = self._approval_dialog()
        if dialog is not None:
            if any(request.id == dialog.request.id for request in pending):
                dialog.set_pending(len(pending))
            else:  # decided elsewhere (timeout, another client): show the next one
                dialog.dismiss(None)
                self.call_later(self.show_next_approval, True)
        elif message.change == "add" and pending:
            self.show_next_approval(quiet=True)
        self.refresh_info()

    def _approval_dialog(self) -> ApprovalScreen | None:
        from corral_tui.screens.approval import ApprovalScreen  # with the first approval, not before the first frame

        return next((s for s in self.screen_stack if isinstance(s, ApprovalScreen)), None)

    def show_next_approval(self, quiet: bool = False) -> None:
        """Open the dialog for the oldest pending approval (unless one is open)."""
        if self._approval_dialog() is not None:
            return
        pending = self.services.approvals.pending()
        if not pending:
            if not quiet:
                self.notify("No approvals pending.")
            return
        from corral_tui.screens.approval import ApprovalScreen, AskingTrial

        request = pending[0]
        self.drain_events()  # the asking trial's latest events (its thought) may still wait in the queue
        trial = self.live.trials.get(request.trial_id or "")
        asking = AskingTrial(trial.iteration or None, trial.last_thought) if trial is not None else None
        screen = ApprovalScreen(request, clock=self.config.clock, redact=self.config.redact, pending=len(pending),
                                asking=asking, grace=self.config.dialog_grace,
                                confirm_end=self.config.confirm_destructive)
        self.push_screen(screen, callback=partial(self._approval_answered, request))

    def _approval_answered(self, request: ApprovalRequest, decision: Decision | None) -> None:
        if decision is None:  # later (escape), or decided elsewhere
            return
        self._decide(request, decision)
        words = {Verdict.APPROVE: "approved", Verdict.REJECT: "rejected", Verdict.APPROVE_TOOL:
                 "approved for the rest of the run", Verdict.TERMINATE: "rejected, and the trial is ended"}
        reason = f" ({decision.reason})" if decision.reason and decision.verdict is Verdict.REJECT else ""
        self.workbench_screen.say(f"{request.tool_name}: {words[decision.verdict]}{reason}.", "bold")

    # --- other screens ------------------------------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(binding_rows(all_binding_owners(type(self)))))

    def action_history(self) -> None:
        from corral_tui.screens.history import HistoryScreen

        if not any(isinstance(screen, HistoryScreen) for screen in self.screen_stack):
            self.push_screen(HistoryScreen(self.services.queries, self.config.redact))

    def action_compare_last(self) -> None:
        """m on the workbench (a trial key: it acts with the focus on the trials), or "Open compare" in
        the palette from anywhere."""
        if self.screen is self._workbench_screen and not self._workbench_screen.at_trials("m"):
            return
        self.post_message(CompareRequested(None))

    @on(CompareRequested)
    def _compare_requested(self, message: CompareRequested) -> None:
        from corral_tui.screens.compare import CompareScreen

        benchmark_id = message.benchmark_id or self.last_benchmark_id
        if benchmark_id is None:
            self.notify("No finished run yet: the history screen (h) has the earlier ones.", severity="warning")
            return
        self.push_screen(CompareScreen(benchmark_id, self.services.queries, self.config.redact,
                                       other_id=message.other_id))

    @on(TrialsRequested)
    def _trials_requested(self, message: TrialsRequested) -> None:
        from corral_tui.screens.history import TrialsScreen

        self.push_screen(TrialsScreen(message.benchmark, self.services.queries, self.config.redact))

    @on(TimelineRequested)
    def _timeline_requested(self, message: TimelineRequested) -> None:
        from corral_tui.screens.timeline import TimelineScreen

        self.push_screen(TimelineScreen(message.trial_id, self.services.queries, self.config.redact))


def create_app(config: WorkbenchConfig) -> WorkbenchApp:
    """The one factory the CLI and the tests use."""
    return WorkbenchApp(config)


def run_app(options: CliOptions) -> int:
    """`corral-tui` without --batch: open the workbench (typed options from corral_tui.cli)."""
    app = create_app(config_from_args(options))
    app.run()
    return int(app.return_code or 0)
