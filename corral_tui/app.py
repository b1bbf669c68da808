"""The workbench app: `create_app(config)` builds it for the CLI and the tests alike (posting's pattern).

The app owns the live state and the thread workers; screens ask it for things, it asks the engine
(`Workbench`). Workers are thin (harlequin's pattern): call the engine, post a message; the `@on`
handlers here make every UI change, and one `Worker.StateChanged` handler turns worker errors into
an error dialog. Engine events arrive through a bounded queue drained on a timer, a batch per tick.
"""

from __future__ import annotations

import threading
import traceback
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.message_pump import MessagePump
from textual.worker import Worker, WorkerState

from corral_core.env.approval import ApprovalRequest
from corral_core.errors import UserError
from corral_tui import analysis
from corral_tui.commands import ActionsProvider, all_binding_owners, binding_rows
from corral_tui.config import WorkbenchConfig, config_from_args
from corral_tui.facade import Workbench
from corral_tui.live import LiveRun
from corral_tui.messages import (
    ApprovalRequested,
    DataLoaded,
    RemoteApprovals,
    RunFinished,
    RunStarted,
    ServicesReady,
    SuitesLoaded,
    TaskTextLoaded,
)
from corral_tui.run_request import RunRequest
from corral_tui.screens.approval import ApprovalScreen, Verdict
from corral_tui.screens.dialogs import ErrorScreen, HelpScreen, InterventionScreen
from corral_tui.screens.workbench import WorkbenchScreen
from corral_tui.widgets.status import Info

SERVICES_WAIT = 30.0  # seconds a history query waits for the store to open at start-up


class WorkbenchApp(App[int]):
    """corral-tui's terminal workbench."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere keep the style
    TITLE = "corral-tui"
    COMMANDS = App.COMMANDS | {ActionsProvider}
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit_now"),
        Binding("f1,question_mark", "help", "Help", key_display="F1 / ?", id="app.help"),
        Binding("h", "history", "History", id="app.history"),
    ]

    def __init__(self, config: WorkbenchConfig) -> None:
        super().__init__()
        self.config = config
        self.title = config.title
        self.workbench = Workbench(config, on_approval=self._approval_from_server)
        self.live = LiveRun(buffer=config.trial_buffer)
        self.approvals: OrderedDict[str, ApprovalRequest] = OrderedDict()
        self.approval_screen: ApprovalScreen | None = None
        self._decided: set[str] = set()  # approval ids answered here (a late poll must not revive them)
        self.services_ready = threading.Event()
        self.ready = False  # the servers answer and the store is open
        self.run_state = "idle"  # idle | starting | running | paused | finished | interrupted | failed
        self.last_benchmark_id: str | None = None
        self.urls: dict[str, str] = {}
        self._workbench_screen = WorkbenchScreen()
        self._polling = False

    # --- life cycle ---------------------------------------------------------------------------

    def get_default_screen(self) -> WorkbenchScreen:
        return self._workbench_screen

    @property
    def workbench_screen(self) -> WorkbenchScreen:
        return self._workbench_screen

    def on_mount(self) -> None:
        if self.config.keymap:
            self.set_keymap(self.config.keymap)
        self.set_interval(self.config.drain_interval, self.drain_events)
        self.set_interval(0.5, self.refresh_info)
        if self.config.server_url:
            self.set_interval(self.config.approval_poll, self._poll_tick)
        self.refresh_info()
        self._boot()

    def action_quit(self) -> None:
        """Stop the run and the servers, then exit (the engine closes in on_unmount, bounded)."""
        self.workbench.begin_close()
        self.exit(0)

    def on_unmount(self) -> None:
        self.workbench.close()

    # --- thin workers -------------------------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="boot")
    def _boot(self) -> None:
        try:
            self.post_message(SuitesLoaded(self.workbench.load_suites()))
            self.post_message(ServicesReady(self.workbench.start_services()))
        finally:
            self.services_ready.set()
        if not self.workbench.closing:
            self.workbench.warm_up()

    @work(thread=True, exit_on_error=False, group="run")
    def _run(self, request: RunRequest) -> None:
        started = partial(self._post_started, request)
        self.post_message(RunFinished(self.workbench.run(request, on_started=started)))

    def _post_started(self, request: RunRequest, active: Any) -> None:
        self.post_message(RunStarted(active.total, request.start_paused))

    @work(thread=True, exit_on_error=False, group="approvals")
    def _decide(self, request: ApprovalRequest, verdict: Verdict) -> None:
        self.workbench.decide(request, verdict is not Verdict.REJECT, whole_run=verdict is Verdict.APPROVE_TOOL)

    @work(thread=True, exit_on_error=False, group="poll")
    def _poll(self) -> None:
        try:
            self.post_message(RemoteApprovals(self.workbench.poll_remote_approvals()))
        finally:
            self._polling = False

    @work(thread=True, exit_on_error=False, group="query")
    def _fetch(self, target: MessagePump, key: str, query: Callable[..., Any], *args: Any) -> None:
        self.services_ready.wait(SERVICES_WAIT)
        if self.workbench.repository is None:
            raise UserError("the store is not open (the start-up failed; see the earlier message).")
        target.post_message(DataLoaded(key, query(self.workbench.repository, *args)))

    @work(thread=True, exit_on_error=False, group="task-text", exclusive=True)
    def load_task_text(self, suite: str, task_id: str, verbosity: str) -> None:
        prompt, guide = self.workbench.task_text(suite, task_id, verbosity)
        self.post_message(TaskTextLoaded(suite, task_id, verbosity, prompt, guide))

    # --- what the workers report --------------------------------------------------------------

    @on(SuitesLoaded)
    def _suites_loaded(self, message: SuitesLoaded) -> None:
        self.workbench_screen.show_suites(message.suites)

    @on(ServicesReady)
    def _services_ready(self, message: ServicesReady) -> None:
        self.ready = True
        self.urls = message.urls
        self.workbench_screen.say("Ready. Pick a suite or task, fill in the run form, press r to run.")
        self.refresh_info()

    @on(TaskTextLoaded)
    def _task_text(self, message: TaskTextLoaded) -> None:
        self.workbench_screen.show_task_text(message.suite, message.task_id, message.verbosity, message.prompt,
                                             message.guide)

    @on(RunStarted)
    def _run_started(self, message: RunStarted) -> None:
        self.live.total = message.total
        self.run_state = "paused" if message.start_paused else "running"
        self.refresh_info()

    @on(RunFinished)
    def _run_finished(self, message: RunFinished) -> None:
        summary = message.summary
        self.drain_events()
        self.run_state = summary.status
        self.last_benchmark_id = summary.benchmark_id
        score = "-" if summary.headline_score is None else f"{summary.headline_score:.2f}"
        self.workbench_screen.say(f"Run {summary.status}: headline score {score} ({summary.attempt_status or '-'}); "
                                  f"{summary.trials_run} trials, {summary.errored} errored. m compares the arms.")
        self.refresh_info()

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.ERROR:
            return
        if event.worker.group == "run":
            self.run_state = "failed"
            self.refresh_info()
        error = event.worker.error
        if isinstance(error, UserError):
            self.push_screen(ErrorScreen("Cannot do that", str(error)))
        else:
            details = "".join(traceback.format_exception(error))[-4000:] if error else "unknown error"
            self.push_screen(ErrorScreen("Unexpected error (a bug in corral-tui; please report it)", details))

    # --- the event stream ---------------------------------------------------------------------

    def drain_events(self) -> None:
        """Apply one batch of queued engine events to the live state and redraw what changed."""
        if not self.workbench_screen.live:
            return
        events = self.workbench.queue.drain(self.config.drain_batch)
        if not events:
            return
        changes = self.live.apply(events)
        if changes.decided:
            self._forget_approvals(changes.decided)
        if changes:
            self.workbench_screen.apply_changes(self.live, changes)

    def refresh_info(self) -> None:
        redact = self.config.redact
        screen = self.workbench_screen
        suite = screen.selected.suite if screen.selected else None
        url = self.urls.get(suite or "") or next(iter(self.urls.values()), None)
        active = self.workbench.active
        model = active.runner.spec.model.id if active is not None and active.runner is not None else \
            self._form_model(suite)
        info = Info(server=redact.url(url) if url else "starting…",
                    requests=redact.count(self.workbench.requests_served()), model=model, done=self.live.done,
                    total=self.live.total, run_state=self.run_state, approvals=len(self.approvals))
        if screen.live:
            screen.show_info(info)

    def _form_model(self, suite: str | None) -> str:
        if self.config.model:
            return self.config.model
        view = self.workbench_screen.suites.get(suite or "")
        return f"scripted/{view.script}" if view is not None and view.script else "-"

    # --- runs and controls (screens call these) -------------------------------------------------

    def start_run(self, request: RunRequest) -> None:
        if not self.ready:
            self.notify("The environment server is still starting; try again in a moment.", severity="warning")
            return
        if self.run_state in ("starting", "running", "paused"):
            self.notify("A run is in progress: stop it with x first.", severity="warning")
            return
        self.live.reset()
        self._decided.clear()
        self.workbench_screen.reset_run()
        self.run_state = "starting"
        self.workbench_screen.say(f"Starting {request.suite}: arms {', '.join(request.verbosities)}, "
                                  f"{request.trials} trial(s) per task…")
        self._run(request)

    def stop_run(self) -> None:
        if self.workbench.stop_run():
            self.workbench_screen.say("Stopping the run: running trials are cancelled.", "bold yellow")
        else:
            self.notify("No run in progress.", severity="warning")

    def control(self, command: str, trial_id: str | None) -> None:
        """pause / step / resume one trial or (trial_id None) every trial of the run."""
        if not self.workbench.control(command, trial_id):
            self.notify("That trial is not running (any more).", severity="warning")
            return
        if trial_id is None:
            self.run_state = {"pause": "paused", "resume": "running"}.get(command, self.run_state)
            self.refresh_info()
        who = "every trial" if trial_id is None else f"trial {self.config.redact.ident(trial_id)}"
        verb = {"pause": "Pausing", "step": "Stepping one iteration of", "resume": "Continuing"}[command]
        self.workbench_screen.say(f"{verb} {who}.", "bold")

    def ask_intervention(self, trial_id: str) -> None:
        trial = self.live.trials.get(trial_id)
        label = f"{self.config.redact.ident(trial_id)} ({trial.task_id if trial else '?'})"
        self.push_screen(InterventionScreen(label), callback=partial(self._intervention_written, trial_id))

    def _intervention_written(self, trial_id: str, text: str | None) -> None:
        if text is None:
            return
        if self.workbench.intervene(trial_id, text):
            self.workbench_screen.say("Intervention queued: the agent reads it before its next LLM call.", "bold")
        else:
            self.notify("That trial is not running (any more); nothing was sent.", severity="warning")

    # --- approvals ----------------------------------------------------------------------------

    def _approval_from_server(self, request: ApprovalRequest) -> None:
        """QueueGate's on_request: runs on a server thread, so it only posts a message."""
        self.post_message(ApprovalRequested(request))

    @on(ApprovalRequested)
    def _approval_requested(self, message: ApprovalRequested) -> None:
        self.approvals[message.request.id] = message.request
        self.refresh_info()
        self.show_next_approval(quiet=True)

    @on(RemoteApprovals)
    def _remote_approvals(self, message: RemoteApprovals) -> None:
        pending = {request.id: request for request in message.pending if request.id not in self._decided}
        self._forget_approvals(set(self.approvals) - set(pending))
        for approval_id, request in pending.items():
            self.approvals.setdefault(approval_id, request)
        self.refresh_info()
        if pending:
            self.show_next_approval(quiet=True)

    def show_next_approval(self, quiet: bool = False) -> None:
        """Open the dialog for the oldest pending approval (or refresh the open one's count)."""
        if self.approval_screen is not None:
            self.approval_screen.refresh_pending()
            return
        if not self.approvals:
            if not quiet:
                self.notify("No approvals pending.")
            return
        request = next(iter(self.approvals.values()))
        screen = ApprovalScreen(request, clock=self.config.clock, redact=self.config.redact,
                                pending=lambda: len(self.approvals))
        self.approval_screen = screen
        self.push_screen(screen, callback=partial(self._approval_decided, request))

    def _approval_decided(self, request: ApprovalRequest, verdict: Verdict | None) -> None:
        self.approval_screen = None
        if verdict is not None and self.approvals.pop(request.id, None) is not None:
            self._decided.add(request.id)
            if verdict is Verdict.APPROVE_TOOL:  # the gate approves the waiting calls of this tool too
                self._forget_approvals({i for i, r in self.approvals.items() if r.tool_name == request.tool_name})
            self._decide(request, verdict)
            self.workbench_screen.say(f"{request.tool_name}: {verdict.value.replace('_', ' ')}.", "bold")
        self.refresh_info()
        if verdict is not None and self.approvals:
            self.call_later(self.show_next_approval, True)

    def _forget_approvals(self, approval_ids: set[str]) -> None:
        """Drop approvals decided elsewhere (timeout, another client); close the dialog showing one."""
        for approval_id in approval_ids:
            self.approvals.pop(approval_id, None)
        screen = self.approval_screen
        if screen is not None and screen.request.id in approval_ids:
            self.approval_screen = None
            screen.dismiss(None)
            if self.approvals:
                self.call_later(self.show_next_approval, True)
        self.refresh_info()

    def _poll_tick(self) -> None:
        if not self._polling and self.ready:
            self._polling = True
            self._poll()

    # --- other screens ------------------------------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(binding_rows(all_binding_owners())))

    def action_history(self) -> None:
        from corral_tui.screens.history import HistoryScreen

        if not any(isinstance(screen, HistoryScreen) for screen in self.screen_stack):
            self.push_screen(HistoryScreen())

    def open_compare(self, benchmark_id: str) -> None:
        from corral_tui.screens.compare import CompareScreen

        self.push_screen(CompareScreen(benchmark_id))

    def request_benchmarks(self, target: MessagePump, offset: int) -> None:
        self._fetch(target, "benchmarks", analysis.benchmark_page, offset, self.config.page_size)

    def request_trials(self, target: MessagePump, benchmark_id: str, filters: analysis.TrialFilter,
                       offset: int) -> None:
        self._fetch(target, "trials", analysis.trial_page, benchmark_id, filters, offset, self.config.page_size)

    def request_timeline(self, target: MessagePump, trial_id: str) -> None:
        self._fetch(target, "timeline", lambda repository, tid: repository.timeline(tid), trial_id)

    def request_compare(self, target: MessagePump, benchmark_id: str) -> None:
        self._fetch(target, "compare", analysis.compare_view, benchmark_id)

    def filter_choices(self, benchmark: Any) -> tuple[list[str], list[str]]:
        paths = {str(p) for p in benchmark.suites}
        known = [t for s in self.workbench.suites.values() if str(s.path) in paths for t in s.task_ids]
        return analysis.filter_choices(benchmark, known)


def create_app(config: WorkbenchConfig) -> WorkbenchApp:
    """The one factory the CLI and the tests use."""
    return WorkbenchApp(config)


def run_app(args: Any) -> int:
    """`corral-tui` without --batch: open the workbench (argparse namespace from corral_tui.cli)."""
    app = create_app(config_from_args(args))
    app.run()
    return int(app.return_code or 0)
