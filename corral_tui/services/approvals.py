"""The approvals inbox: the one owner of the workbench's pending confirm-level tool calls.

Inspect AI's approval manager is the model: whoever shows approvals subscribes for changes
("add" / "remove"), reads `pending()`, and answers with `decide()`; nothing else keeps a list.
`LocalApprovals` is the gate of the embedded servers (the run's policy in front of a `QueueGate`,
which holds the requests); `RemoteApprovals` mirrors a `corral-tui serve --approve ask` server's
`GET /approvals` from a polling thread and answers with `POST /approvals/{id}`. Listeners are
called from engine or polling threads: they must only post a message.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, Protocol

from corral_core.constants import APPROVAL_POLICIES
from corral_core.domain import Decider
from corral_core.events import (
    ApprovalAskedData,
    ApprovalAskedEvent,
    ApprovalDecidedData,
    ApprovalDecidedEvent,
    EventSink,
    emit_event,
)

if TYPE_CHECKING:
    from corral_core.env.approval import ApprovalDecision, ApprovalRequest
    from corral_core.server.approvals import QueueGate

log = logging.getLogger(__name__)

ChangeKind = Literal["add", "remove"]  # as corral_core.server.approvals.QueueGate reports it
Listener = Callable[[ChangeKind], None]
FOR_THE_RUN = "tool approved for the rest of this run"


class Verdict(str, Enum):
    """What a person can answer in the approval dialog."""

    APPROVE = "approve"
    REJECT = "reject"
    APPROVE_TOOL = "approve_tool"  # approve this tool for the rest of the run (the waiting calls too)
    TERMINATE = "terminate"  # reject, and end the asking trial (the run session cancels it)

    @property
    def approves(self) -> bool:
        return self in (Verdict.APPROVE, Verdict.APPROVE_TOOL)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""


class ApprovalInbox(Protocol):
    """Pending approvals, their change notifications, and the answers."""

    def start(self) -> None:
        """Begin serving (called once the store is open; may block briefly)."""
        ...

    def pending(self) -> list[ApprovalRequest]:
        """Requests waiting for a person, oldest first."""
        ...

    def decide(self, request: ApprovalRequest, decision: Decision) -> bool:
        """Answer one request; False when it was gone (decided elsewhere, timed out)."""
        ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener("add" | "remove")` on every change; returns the unsubscribe function."""
        ...

    def begin_run(self, policy: str) -> None:
        """A run starts under `policy` (ask | approve | reject); "for the run" approvals are forgotten."""
        ...

    def cancel_all(self, reason: str, trial_id: str | None = None) -> int:
        """Decide every pending request (of one trial, if given) as `cancelled` (stop, quit, a
        cancelled trial); returns how many there were."""
        ...

    def close(self) -> None:
        """Reject what waits and stop (bounded)."""
        ...


class _Listeners:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: tuple[Listener, ...] = ()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = tuple(other for other in self._listeners if other is not listener)

        return unsubscribe

    def notify(self, change: ChangeKind) -> None:
        for listener in self._listeners:
            try:
                listener(change)
            except Exception:
                log.exception("approvals listener failed")


class LocalApprovals:
    """The embedded servers' approval gate: the run's policy, else a person through the queue."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout  # EventingGate stamps requests with it
        self.policy = "ask"
        self._listeners = _Listeners()
        self._queue: QueueGate | None = None

    def start(self) -> None:
        from corral_core.server.approvals import QueueGate  # imports FastAPI: not before the first frame

        queue = QueueGate(timeout=self.timeout)
        queue.subscribe(self._listeners.notify)
        self._queue = queue

    @property
    def queue(self) -> QueueGate:
        if self._queue is None:
            raise RuntimeError("LocalApprovals.start() was not called")
        return self._queue

    # --- the gate (server threads) ----------------------------------------------------------------

    def request(self, request: ApprovalRequest) -> ApprovalDecision:
        from corral_core.env.approval import ApprovalDecision  # the env package: after the first frame

        if self.policy == "approve":
            return ApprovalDecision(True, Decider.POLICY, "approved by the run's policy (approval: approve)")
        if self.policy == "reject":
            return ApprovalDecision(False, Decider.POLICY, "rejected by the run's policy (approval: reject)")
        return self.queue.request(request)

    # --- the inbox (UI thread, workers) -------------------------------------------------------------

    def pending(self) -> list[ApprovalRequest]:
        return self._queue.pending() if self._queue is not None else []

    def decide(self, request: ApprovalRequest, decision: Decision) -> bool:
        if decision.verdict is Verdict.APPROVE_TOOL:
            self.queue.approve_tool_for_run(request.tool_name)
            return True
        return self.queue.decide(request.id, decision.verdict.approves, Decider.USER, decision.reason)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    def begin_run(self, policy: str) -> None:
        if policy not in APPROVAL_POLICIES:
            raise ValueError(f"approval policy must be one of {APPROVAL_POLICIES}, not {policy!r}")
        self.policy = policy
        self.queue.forget_tool_approvals()

    def cancel_all(self, reason: str, trial_id: str | None = None) -> int:
        return self._queue.cancel_all(reason, trial_id) if self._queue is not None else 0

    def close(self) -> None:
        if self._queue is not None:
            self._queue.close("the workbench is closing")


class RemoteApprovals:
    """A remote server's pending approvals, polled every `interval` seconds on a thread of its own.

    The remote server records its own events; this side records the questions and answers in the
    local store too (APPROVAL_ASKED / APPROVAL_DECIDED on `sink`), so a trial's timeline is whole.
    """

    def __init__(self, url: str, sink: EventSink, *, token: str | None = None, interval: float = 0.5) -> None:
        self.url = url
        self.token = token
        self.sink = sink
        self.router: Any = None  # corral_core.client.CorralRouter, made by start()
        self.interval = interval
        self._listeners = _Listeners()
        self._lock = threading.Lock()
        self._pending: dict[str, ApprovalRequest] = {}
        self._seen: set[str] = set()  # asked events already recorded
        self._decided: set[str] = set()  # answered here: a late poll must not bring them back
        self._tools_for_run: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        from corral_core.client import CorralRouter

        self.router = CorralRouter(self.url, token=self.token, timeout=10.0)
        self._thread = threading.Thread(target=self._loop, name="corral-tui-approvals", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self.interval)

    def poll(self) -> None:
        """Read the server's pending list once; approve the tools approved for the run."""
        try:
            items = self.router.list_approvals()
        except Exception as exc:
            log.info("polling approvals failed: %s", exc)
            return
        polled = [_request_of(item) for item in items]
        for request in polled:
            if request.id not in self._seen:
                self._seen.add(request.id)
                emit_event(self.sink, ApprovalAskedEvent(
                    trial_id=request.trial_id, task_id=request.task_id,
                    data=ApprovalAskedData(approval_id=request.id, tool_name=request.tool_name,
                                           arguments=request.arguments, risk=request.risk, timeout=request.timeout)))
        with self._lock:
            auto = [r for r in polled if r.tool_name in self._tools_for_run and r.id not in self._decided]
        for request in auto:
            self._answer(request, True, FOR_THE_RUN, Decider.USER)
        with self._lock:
            now = {r.id: r for r in polled if r.id not in self._decided}
            added = bool(now.keys() - self._pending.keys())
            removed = bool(self._pending.keys() - now.keys())
            self._pending = now
        if added:
            self._listeners.notify("add")
        elif removed:
            self._listeners.notify("remove")

    def pending(self) -> list[ApprovalRequest]:
        with self._lock:
            return sorted(self._pending.values(), key=lambda r: r.created_at)

    def decide(self, request: ApprovalRequest, decision: Decision) -> bool:
        if decision.verdict is Verdict.APPROVE_TOOL:
            with self._lock:
                self._tools_for_run.add(request.tool_name)
                same = [r for r in self._pending.values() if r.tool_name == request.tool_name]
            return all([self._answer(r, True, FOR_THE_RUN, Decider.USER) for r in same]) if same else False
        return self._answer(request, decision.verdict.approves, decision.reason, Decider.USER)

    def _answer(self, request: ApprovalRequest, approved: bool, reason: str, decided_by: str) -> bool:
        with self._lock:
            if request.id in self._decided:
                return False
            self._decided.add(request.id)
            self._pending.pop(request.id, None)
        self._listeners.notify("remove")
        try:
            self.router.decide_approval(request.id, approved, reason)
        except Exception as exc:  # gone on the server (timed out, decided by another client)
            log.info("remote approval %s not decided: %s", request.id, exc)
            return False
        emit_event(self.sink, ApprovalDecidedEvent(
            trial_id=request.trial_id, task_id=request.task_id,
            data=ApprovalDecidedData(approval_id=request.id, tool_name=request.tool_name, approved=approved,
                                     decided_by=decided_by, reason=reason)))
        return True

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    def begin_run(self, policy: str) -> None:
        # The remote server decides by its --approve policy, made stricter per trial by the run's (the runner
        # refuses a run looser than the server); only "for the run" approvals are ours.
        with self._lock:
            self._tools_for_run.clear()

    def cancel_all(self, reason: str, trial_id: str | None = None) -> int:
        return sum(self._answer(request, False, reason, Decider.CANCELLED) for request in self.pending()
                   if trial_id is None or request.trial_id == trial_id)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(2.0)
        if self.router is not None:
            self.router.close()


def _request_of(item: dict[str, Any]) -> ApprovalRequest:
    from corral_core.env.approval import ApprovalRequest

    return ApprovalRequest(task_id=str(item.get("task_id") or ""), trial_id=item.get("trial_id"),
                           tool_name=str(item.get("tool_name") or "?"), arguments=item.get("arguments") or {},
                           risk=str(item.get("risk") or "confirm"), timeout=float(item.get("timeout") or 0),
                           id=str(item["id"]), created_at=float(item.get("created_at") or 0))
