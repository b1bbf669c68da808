"""The services the workbench starts and stops: the store, the embedded servers or the remote one.

`ServiceLifecycle.start()` opens the store (engine, writer thread, repository) and starts one
embedded environment server per suite, all behind the same approval gate, or reaches the remote
server given with --server. Engine events reach the UI through `queue`, a bounded queue the app
drains on a timer; the store's writer and the UI share `sink`. Heavy modules (FastAPI, uvicorn,
SQLAlchemy) are imported in `start`, which the app calls from a thread worker after the first frame.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral_core.errors import UserError
from corral_core.events import TELEMETRY_KINDS, Event, EventBus, EventKind, QueueSink

if TYPE_CHECKING:
    from corral_core.env import Suite
    from corral_core.env.approval import ApprovalGate
    from corral_core.store import Repository, StoreWriter

log = logging.getLogger(__name__)

# What the panes do not show, kept out of the UI queue so floods stay small: the server's telemetry, and
# the LLM requests (their responses say what the panes show).
UI_SKIPPED_KINDS = TELEMETRY_KINDS | {EventKind.LLM_REQUEST}
STOP_TIMEOUT = 2.0  # seconds the servers get to stop
START_TIMEOUT = 15.0
TOOL_TIMEOUT = 120.0  # seconds one tool call may take on the embedded servers
HEALTH_INTERVAL = 1.0  # seconds between two reads of a remote server's request count


class UISink:
    """The UI's bounded queue, without the telemetry it never draws."""

    def __init__(self, queue: QueueSink) -> None:
        self.queue = queue

    def emit(self, event: Event) -> None:
        if event.kind not in UI_SKIPPED_KINDS:
            self.queue.emit(event)


class ServiceLifecycle:
    """Store, servers and the UI queue, from `start()` to `close()` (bounded, safe to call twice)."""

    def __init__(self, *, db_url: str, server_url: str | None = None, token: str | None = None,
                 work_dir: Path | None = None, queue_size: int = 20_000) -> None:
        self.db_url = db_url
        self.server_url = server_url
        self.token = token
        self.work_dir = work_dir
        self.queue = QueueSink(queue_size)
        self.ui_sink = UISink(self.queue)
        self.sink = EventBus(self.ui_sink)  # the store's writer joins once it runs
        self.repository: Repository | None = None
        self.writer: StoreWriter | None = None
        self.ready = threading.Event()  # set when start() has returned or failed
        self._servers: dict[str, Any] = {}  # suite name -> EmbeddedServer
        self._remote: Any = None  # CorralRouter for --server (health only)
        self._remote_served = 0
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None

    @property
    def remote(self) -> bool:
        return self.server_url is not None

    def start(self, suites: Mapping[str, Suite], gate: ApprovalGate | None) -> dict[str, str]:
        """Open the store and start the servers (or reach the remote one). Returns suite -> URL."""
        try:
            if self.repository is None:
                self.open_store()
            if self.server_url is not None:
                return self._connect_remote(list(suites))
            return self._start_servers(suites, gate)
        finally:
            self.ready.set()

    def open_store(self) -> None:
        """Open (create, migrate) the store and start its writer; a StoreError if it cannot be used."""
        from corral_core.store import Repository, StoreWriter, init_db, make_engine

        engine = make_engine(self.db_url)
        init_db(engine)
        self.repository = Repository(engine)
        self.writer = StoreWriter(engine).start()
        self.sink.add(self.writer)

    def _start_servers(self, suites: Mapping[str, Suite], gate: ApprovalGate | None) -> dict[str, str]:
        from corral_core.server.embedded import EmbeddedServer
        from corral_core.server.lazy import LazyApp

        for name, suite in suites.items():  # each app is built on its first request, or by build_apps
            app = LazyApp(suite, gate=gate, sink=self.sink, base_work_dir=self.work_dir, tool_timeout=TOOL_TIMEOUT,
                          telemetry=False)
            self._servers[name] = EmbeddedServer(app)
        errors = in_parallel([server.start for server in self._servers.values()], START_TIMEOUT)
        if errors:
            raise UserError(f"an embedded environment server did not start: {errors[0]}", where="workbench",
                            fix="check that 127.0.0.1 accepts local connections.")
        return {name: self.url_for(name) or "-" for name in self._servers}

    def _connect_remote(self, suites: list[str]) -> dict[str, str]:
        from corral_core.client import CorralRouter

        url = str(self.server_url)
        self._remote = CorralRouter(url, token=self.token, timeout=10.0)
        try:
            self._remote_served = int(self._remote.health().get("requests_served") or 0)
        except Exception as exc:
            raise UserError(f"cannot reach the environment server at {url}: {exc}", where="--server",
                            fix="start it with `corral-tui serve SUITE.yaml`, or check the URL and --token.") from None
        self._monitor = threading.Thread(target=self._watch_remote, name="corral-tui-health", daemon=True)
        self._monitor.start()
        return dict.fromkeys(suites, url)

    def _watch_remote(self) -> None:
        while not self._stop.wait(HEALTH_INTERVAL):
            try:
                self._remote_served = int(self._remote.health().get("requests_served") or self._remote_served)
            except Exception as exc:
                log.info("reading the remote server's health failed: %s", exc)

    def build_apps(self) -> None:
        """Build the embedded servers' apps now (each is otherwise built on its first request)."""
        for server in list(self._servers.values()):
            if self._stop.is_set():
                return
            server.app.build()

    def url_for(self, suite: str) -> str | None:
        """The environment server of `suite` (None until it runs)."""
        if self.server_url is not None:
            return self.server_url
        server = self._servers.get(suite)
        try:
            return server.url if server is not None else None
        except RuntimeError:  # not started yet
            return None

    def requests_served(self) -> int:
        """Requests the environment server(s) answered so far."""
        if self.server_url is not None:
            return self._remote_served
        return sum(int(getattr(s.app.state, "requests_served", 0) or 0) for s in self._servers.values())

    def store(self, timeout: float) -> Repository:
        """The store's repository, once open (waits up to `timeout` s for the start-up)."""
        self.ready.wait(timeout)
        if self.repository is None:
            raise UserError("the store is not open (the start-up failed; see the earlier message).")
        return self.repository

    def close(self) -> None:
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(STOP_TIMEOUT)
        in_parallel([server.stop for server in self._servers.values()], STOP_TIMEOUT)
        if self._remote is not None:
            self._remote.close()
        if self.writer is not None:
            self.writer.close(timeout=2.0)


def in_parallel(calls: list[Callable[[], Any]], timeout: float) -> list[BaseException]:
    """Run blocking calls on threads at once (servers start and stop in ~0.2 s each); their errors."""
    errors: list[BaseException] = []

    def guarded(call: Callable[[], Any]) -> None:
        try:
            call()
        except BaseException as exc:  # reported to the caller
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(call,), name="corral-tui-server", daemon=True) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    return errors


def warm_up(first: Callable[[], None] | None = None) -> None:
    """Load litellm (about 2.5 s) on a daemon thread, so the first run does not wait for it and
    quitting never does either (an import cannot be interrupted); `first` runs on that thread before.

    Then freeze the start-up heap (`freeze_startup_heap`, once per process): litellm and the app are
    ~600,000 long-lived objects, and every full collection walked them all, stalling the UI 0.2-1 s at a
    time under a flood of events (benchmarks/tui_load.py). Frozen, they are never collected, and never
    needed to be. `corral-tui` collects nothing until then (`gc.disable` in corral_tui/cli.py): each
    collection during the start walked that heap again as it grew, ~0.3 s of CPU before "Ready." here.
    One collection before litellm's import takes the start's cyclic leftovers (~15,000 objects) so
    they are not frozen, and the collector runs again after the freeze."""
    import sys

    def load() -> None:
        if first is not None:
            try:
                first()
            except Exception as exc:  # the request that needs it reports it
                log.info("warm-up failed: %s", exc)
        if "litellm" not in sys.modules:  # else loaded already, by this process's first workbench or a callback
            from corral_core.llm import preload
            from corral_core.llm.client import freeze_startup_heap

            gc.collect()
            try:
                preload()
            except Exception as exc:  # the first LLM call reports it in words
                log.info("litellm warm-up failed: %s", exc)
            freeze_startup_heap()  # preload's last step, unless it failed before
        gc.enable()

    threading.Thread(target=load, name="corral-tui-warmup", daemon=True).start()
