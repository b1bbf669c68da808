"""`Workbench`: the one object the app asks for anything the engine does (elia's facade).

It owns the suites, the store (engine, writer thread, repository), the embedded environment
servers (one per suite, sharing one `WorkbenchGate`) or the remote server's router, the event
queue the UI drains, and the run in progress with its controls. Every method may block, so the
app calls them from thread workers; none of them touches Textual. Heavy modules (FastAPI,
uvicorn, SQLAlchemy, litellm) are imported here on first use, after the first frame.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral_core.env.approval import ApprovalRequest
from corral_core.errors import UserError
from corral_core.events import EventBus, EventKind, EventSink, QueueSink, combine, emit_event
from corral_tui.config import WorkbenchConfig
from corral_tui.run_request import RunRequest

log = logging.getLogger(__name__)

# Server-side telemetry the panes do not show: kept out of the UI queue so floods stay small.
UI_SKIPPED_KINDS = frozenset({EventKind.REQUEST_SERVED, EventKind.TOOL_CALL_REQUESTED, EventKind.TOOL_CALL_EXECUTED,
                              EventKind.TRIAL_OPENED, EventKind.TRIAL_CLOSED, EventKind.LLM_REQUEST})
CLOSE_TIMEOUT = 0.8  # seconds the run thread gets to end when the app quits
STOP_TIMEOUT = 2.0  # seconds the servers get to stop
START_TIMEOUT = 15.0
TOOL_TIMEOUT = 120.0  # seconds one tool call may take on the embedded servers


class UISink:
    """The UI's bounded queue, without the telemetry it never draws."""

    def __init__(self, queue: QueueSink) -> None:
        self.queue = queue

    def emit(self, event: Any) -> None:
        if event.kind not in UI_SKIPPED_KINDS:
            self.queue.emit(event)


@dataclass(frozen=True)
class TaskView:
    id: str
    prompt: str
    depends_on: tuple[str, ...]
    solvable: bool


@dataclass(frozen=True)
class SuiteView:
    """A suite as the task tree shows it: tasks in dependency order."""

    name: str
    description: str
    path: Path
    script: str | None
    chained: bool
    tasks: tuple[TaskView, ...]


@dataclass
class RunSummary:
    benchmark_id: str
    status: str
    headline_score: float | None
    attempt_status: str | None
    trials_run: int
    errored: int


@dataclass
class ActiveRun:
    request: RunRequest
    total: int
    controls: Any  # corral_core.runner.ControlRegistry
    cancel: threading.Event = field(default_factory=threading.Event)
    runner: Any = None
    thread: threading.Thread | None = None


class Workbench:
    """The engine behind the workbench. `on_approval(request)` is called from server threads."""

    def __init__(self, config: WorkbenchConfig, on_approval: Callable[[ApprovalRequest], None] | None = None) -> None:
        self.config = config
        self.on_approval = on_approval
        self.queue = QueueSink(config.queue_size)
        self.ui_sink = UISink(self.queue)
        self.suites: dict[str, Any] = {}  # name -> corral_core Suite
        self.repository: Any = None
        self.writer: Any = None
        self.gate: Any = None
        self.servers: dict[str, Any] = {}  # suite name -> EmbeddedServer
        self.remote: Any = None  # CorralRouter for --server
        self.remote_served = 0
        self.active: ActiveRun | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._auto_tools: set[str] = set()  # remote: tools approved for the rest of the run
        self._seen_remote: set[str] = set()

    # --- start-up ------------------------------------------------------------------------------

    def load_suites(self) -> list[SuiteView]:
        """Load every configured suite (UserError names the file and line of a mistake)."""
        from corral_core.env import load_suite

        views = []
        for path in self.config.suite_paths:
            suite = load_suite(path)
            if suite.name in self.suites:
                raise UserError(f"two suites are named {suite.name!r}.", file=path, fix="rename one of them.")
            self.suites[suite.name] = suite
            tasks = tuple(TaskView(tid, _prompt_text(suite.tasks[tid].prompt), tuple(suite.tasks[tid].depends_on),
                                   suite.tasks[tid].solvable) for tid in suite.ordered_task_ids())
            views.append(SuiteView(suite.name, suite.description, Path(path), suite.script, suite.chained, tasks))
        return views

    def start_services(self) -> dict[str, str]:
        """Open the store and start the servers (or reach the remote one). Returns suite -> URL."""
        from corral_core.store import Repository, StoreWriter, init_db, make_engine

        engine = make_engine(self.config.db_url)
        init_db(engine)
        self.repository = Repository(engine)
        self.writer = StoreWriter(engine).start()
        if self.config.server_url:
            return self._connect_remote()
        from corral_core.server import EmbeddedServer, create_app
        from corral_tui.gate import WorkbenchGate

        self.gate = WorkbenchGate(self.config.approval_timeout, on_request=self.on_approval)
        bus = EventBus(self.writer, self.ui_sink)
        for name, suite in self.suites.items():
            app = create_app(suite, gate=self.gate, sink=bus, base_work_dir=self.config.work_dir,
                             tool_timeout=TOOL_TIMEOUT)
            self.servers[name] = EmbeddedServer(app)
        errors: list[BaseException] = []
        self._in_parallel([server.start for server in self.servers.values()], errors, START_TIMEOUT)
        if errors:
            raise UserError(f"an embedded environment server did not start: {errors[0]}", where="workbench",
                            fix="check that 127.0.0.1 accepts local connections.")
        return {name: self.server_url(name) or "-" for name in self.servers}

    @staticmethod
    def _in_parallel(calls: list[Callable[[], Any]], errors: list[BaseException], timeout: float) -> None:
        """Run blocking calls on threads at once (servers start and stop in ~0.2 s each)."""
        def guarded(call: Callable[[], Any]) -> None:
            try:
                call()
            except BaseException as exc:  # reported to the caller through `errors`
                errors.append(exc)

        threads = [threading.Thread(target=guarded, args=(call,), name="corral-tui-server", daemon=True)
                   for call in calls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout)

    def _connect_remote(self) -> dict[str, str]:
        from corral_core.client import CorralRouter

        url = str(self.config.server_url)
        self.remote = CorralRouter(url, token=self.config.token, timeout=10.0)
        try:
            self.remote_served = int(self.remote.health().get("requests_served") or 0)
        except Exception as exc:
            raise UserError(f"cannot reach the environment server at {url}: {exc}", where="--server",
                            fix="start it with `corral-tui serve SUITE.yaml`, or check the URL and --token.") from None
        return {name: url for name in self.suites}

    def warm_up(self) -> None:
        """Load litellm (about 2.5 s) on a daemon thread, so the first run does not wait for it and
        quitting never does either (an import cannot be interrupted)."""
        import sys

        if "litellm" in sys.modules:
            return

        def load() -> None:
            from corral_core.llm import preload

            try:
                preload()
            except Exception as exc:  # the first LLM call reports it in words
                log.info("litellm warm-up failed: %s", exc)

        threading.Thread(target=load, name="corral-tui-warmup", daemon=True).start()

    @property
    def closing(self) -> bool:
        return self._closed

    def server_url(self, suite: str) -> str | None:
        if self.config.server_url:
            return self.config.server_url
        server = self.servers.get(suite)
        try:
            return server.url if server is not None else None
        except RuntimeError:  # not started yet
            return None

    def requests_served(self) -> int:
        """Requests the environment server(s) answered so far."""
        if self.remote is not None:
            return self.remote_served
        return sum(int(getattr(s.app.state, "requests_served", 0) or 0) for s in self.servers.values())

    # --- the task view -------------------------------------------------------------------------

    def task_text(self, suite: str, task_id: str, verbosity: str) -> tuple[str, str]:
        """(prompt, tools guide at `verbosity`) of one task."""
        from corral_core.tools import parse_verbosity, tools_guide

        spec = self.suites[suite]
        return _prompt_text(spec.tasks[task_id].prompt), tools_guide(spec.tools_for(task_id), parse_verbosity(verbosity))

    # --- runs ----------------------------------------------------------------------------------

    def build_spec(self, request: RunRequest) -> Any:
        from corral_core.spec import spec_from_dict

        suite = self.suites.get(request.suite)
        if suite is None:
            raise UserError(f"unknown suite {request.suite!r}.", where="run form", fix="pick a suite in the tree.")
        data = request.spec_data(Path(suite.path), self.config.approval_timeout)
        return spec_from_dict(data, Path(suite.path).parent, source="<run form>")

    def run(self, request: RunRequest, on_started: Callable[[ActiveRun], None] | None = None) -> RunSummary:
        """Run a benchmark to its end (blocking). Only one run at a time."""
        from corral_core.runner import BenchmarkRunner, ControlRegistry

        spec = self.build_spec(request)
        url = self.server_url(request.suite)
        if url is None:
            raise UserError("the environment server is not running.", where="workbench",
                            fix="wait until the header shows its URL, then start the run again.")
        with self._lock:
            if self.active is not None:
                raise UserError("a run is already in progress.", where="run form",
                                fix="wait for it to finish, or stop it with x.")
            if self._closed:
                raise UserError("the workbench is closing.")
            active = ActiveRun(request, spec.total_trials, ControlRegistry(start_paused=request.start_paused))
            active.thread = threading.current_thread()
            self.active = active
        if self.gate is not None:
            self.gate.set_policy(request.approval)
        self._auto_tools.clear()
        try:
            active.runner = BenchmarkRunner(spec, repository=self.repository, writer_sink=self.writer,
                                            sink=self.ui_sink, server_url=url, token=self.config.token,
                                            controls=active.controls, auto_resume=False)
            if on_started is not None:
                on_started(active)
            result = active.runner.run(cancel_event=active.cancel)
        finally:
            with self._lock:
                self.active = None
        return RunSummary(result.benchmark_id, result.status, result.headline_score, result.attempt_status,
                          result.trials_run, result.errored)

    def stop_run(self) -> bool:
        """Ask the run in progress to stop (running trials are cancelled). False if none runs."""
        active = self.active
        if active is None:
            return False
        active.cancel.set()
        active.controls.cancel_all()
        return True

    def control(self, command: str, trial_id: str | None) -> bool:
        """pause / step / resume one trial (`trial_id`) or all of them (None)."""
        active = self.active
        if active is None:
            return False
        registry = active.controls
        if trial_id is None:
            {"pause": registry.pause_all, "step": registry.step_all, "resume": registry.resume_all}[command]()
            return True
        controller = registry.controller(trial_id)
        if controller is None:
            return False
        {"pause": controller.pause, "step": controller.step, "resume": controller.resume}[command]()
        return True

    def intervene(self, trial_id: str, text: str) -> bool:
        """Send a message to a running trial; it reaches the model before its next LLM call."""
        active = self.active
        return bool(active is not None and active.controls.send(trial_id, text))

    # --- approvals -----------------------------------------------------------------------------

    def decide(self, request: ApprovalRequest, approved: bool, *, whole_run: bool = False) -> bool:
        """Answer a pending approval (embedded gate or remote server). False if it was gone."""
        if self.remote is not None:
            return self._decide_remote(request, approved, whole_run)
        if self.gate is None:
            return False
        if whole_run and approved:
            return self.gate.queue.approve_tool_for_run(request.tool_name) > 0
        return self.gate.queue.decide(request.id, approved, decided_by="user")

    def _decide_remote(self, request: ApprovalRequest, approved: bool, whole_run: bool) -> bool:
        if whole_run and approved:
            self._auto_tools.add(request.tool_name)
        try:
            self.remote.decide_approval(request.id, approved)
        except Exception as exc:
            log.info("remote approval %s not decided: %s", request.id, exc)
            return False
        reason = "tool approved for the rest of this run" if whole_run else ""
        emit_event(self._store_and_ui(), EventKind.APPROVAL_DECIDED, trial_id=request.trial_id,
                   task_id=request.task_id, approval_id=request.id, tool_name=request.tool_name,
                   approved=approved, decided_by="user", reason=reason)
        return True

    def poll_remote_approvals(self) -> list[ApprovalRequest]:
        """The remote server's pending approvals (those for tools approved for the run are approved)."""
        if self.remote is None:
            return []
        try:
            health = self.remote.health()
            self.remote_served = int(health.get("requests_served") or self.remote_served)
            items = self.remote.list_approvals()
        except Exception as exc:
            log.info("polling approvals failed: %s", exc)
            return []
        pending = []
        for item in items:
            request = ApprovalRequest(task_id=item.get("task_id", ""), trial_id=item.get("trial_id"),
                                      tool_name=item.get("tool_name", "?"), arguments=item.get("arguments") or {},
                                      risk=item.get("risk", "confirm"), timeout=float(item.get("timeout") or 0),
                                      id=item["id"], created_at=float(item.get("created_at") or 0))
            if request.id not in self._seen_remote:
                self._seen_remote.add(request.id)
                emit_event(self._store_and_ui(), EventKind.APPROVAL_ASKED, trial_id=request.trial_id,
                           task_id=request.task_id, approval_id=request.id, tool_name=request.tool_name,
                           arguments=request.arguments, risk=request.risk, timeout=request.timeout)
            if request.tool_name in self._auto_tools:
                self._decide_remote(request, True, True)
                continue
            pending.append(request)
        return pending

    def _store_and_ui(self) -> EventSink:
        return combine([self.writer, self.ui_sink])

    # --- shutdown ------------------------------------------------------------------------------

    def begin_close(self) -> None:
        """Start stopping everything without waiting: cancel the run, reject pending approvals."""
        self._closed = True
        self.stop_run()
        if self.gate is not None:
            self.gate.close()

    def close(self) -> None:
        """Stop the run, the servers and the writer; bounded, safe to call twice."""
        self.begin_close()
        active = self.active
        if active is not None and active.thread is not None and active.thread is not threading.current_thread():
            active.thread.join(CLOSE_TIMEOUT)
        self._in_parallel([server.stop for server in self.servers.values()], [], STOP_TIMEOUT)
        if self.remote is not None:
            self.remote.close()
        if self.writer is not None:
            self.writer.close(timeout=2.0)


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(str(part.get("text", part)) if isinstance(part, dict) else str(part) for part in prompt)
