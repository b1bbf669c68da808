"""The engine behind the workbench, as small typed services (none of them imports Textual).

    catalogue.py   SuiteCatalogue   the suites: task tree, prompts and guides, specs from the run form
    lifecycle.py   ServiceLifecycle the store, the embedded servers or the remote one, the UI queue
    approvals.py   LocalApprovals / RemoteApprovals   the one inbox of pending approvals
    session.py     RunSession       the run in progress: start, stop, pause/step/resume, interventions
    queries.py     StoreQueries     paged reads for the history, timeline and compare screens

`WorkbenchServices.build(config)` wires them; the app calls `boot()` from a thread worker and
`close()` when it quits.
"""

from __future__ import annotations

from dataclasses import dataclass

from corral_tui.config import WorkbenchConfig
from corral_tui.services.approvals import ApprovalInbox, LocalApprovals, RemoteApprovals
from corral_tui.services.catalogue import SuiteCatalogue, SuiteView
from corral_tui.services.lifecycle import ServiceLifecycle, warm_up
from corral_tui.services.queries import StoreQueries
from corral_tui.services.session import RunSession


@dataclass
class Booted:
    suites: list[SuiteView]
    urls: dict[str, str]


@dataclass
class WorkbenchServices:
    catalogue: SuiteCatalogue
    lifecycle: ServiceLifecycle
    approvals: ApprovalInbox
    session: RunSession
    queries: StoreQueries

    @classmethod
    def build(cls, config: WorkbenchConfig) -> WorkbenchServices:
        catalogue = SuiteCatalogue(config.suite_paths)
        lifecycle = ServiceLifecycle(db_url=config.db_url, server_url=config.server_url, token=config.token,
                                     work_dir=config.work_dir, queue_size=config.queue_size)
        approvals: ApprovalInbox
        if config.server_url:
            approvals = RemoteApprovals(config.server_url, lifecycle.sink, token=config.token,
                                        interval=config.approval_poll)
        else:
            approvals = LocalApprovals(config.approval_timeout)
        session = RunSession(catalogue, lifecycle, approvals, approval_timeout=config.approval_timeout,
                             max_connections=config.max_connections, executor=config.executor,
                             workers=config.workers)
        return cls(catalogue, lifecycle, approvals, session, StoreQueries(lifecycle.store, catalogue,
                                                                          config.page_size))

    def load_suites(self) -> list[SuiteView]:
        """Blocking: read the suite files (UserError for a mistake in one)."""
        try:
            return self.catalogue.load()
        except BaseException:
            self.lifecycle.ready.set()  # nothing will start: queries waiting for the store give up at once
            raise

    def open_store(self) -> None:
        """Blocking: open the store (StoreError if it is damaged, newer or unreachable)."""
        try:
            self.lifecycle.open_store()
        except BaseException:
            self.lifecycle.ready.set()  # nothing will start: queries waiting for the store give up at once
            raise

    def start(self) -> dict[str, str]:
        """Blocking: open the store (unless open_store did), start the servers and the approvals inbox;
        suite -> server URL. (`warm_up` loads litellm afterwards.)"""
        gate = self.approvals if isinstance(self.approvals, LocalApprovals) else None
        if gate is not None:
            gate.start()
        urls = self.lifecycle.start(self.catalogue.suites, gate)
        if gate is None:
            self.approvals.start()
        return urls

    def warm_up(self) -> None:
        """Build the embedded servers' apps, then load litellm, in the background (not while closing):
        after "Ready." is on screen, since both hold the GIL and the UI thread needs it to paint."""
        if not self.session.closing:
            warm_up(self.lifecycle.build_apps)

    def begin_close(self) -> None:
        """Start stopping without waiting: the run is cancelled, pending approvals decided `cancelled`."""
        self.session.close(wait=False)
        self.approvals.cancel_all("the workbench is closing")

    def close(self) -> None:
        """Stop the run, the approvals inbox, the servers and the writer (bounded; safe twice)."""
        self.begin_close()
        self.approvals.close()  # first: later questions are rejected at once, nobody waits on a person
        self.session.close()
        self.lifecycle.close()
