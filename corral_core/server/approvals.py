"""Approval gates: who decides whether a `confirm`-risk tool call may run.

The environment asks its gate and blocks until it answers. `PolicyGate` answers at once (batch runs
and the standalone server); `QueueGate` holds requests until a person (the TUI) or a remote client
(`GET /approvals`, `POST /approvals/{id}`) decides, and rejects them when its timeout passes.
`EventingGate` is what the server installs in front of either: it reports every question and answer
as APPROVAL_ASKED / APPROVAL_DECIDED events, so the store and the UI see every decision.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from corral_core.domain import Decider
from corral_core.env.approval import CANCELLED, ApprovalDecision, ApprovalGate, ApprovalRequest
from corral_core.events import (
    ApprovalAskedData,
    ApprovalAskedEvent,
    ApprovalDecidedData,
    ApprovalDecidedEvent,
    EventSink,
)

log = logging.getLogger(__name__)

__all__ = ["ChangeKind", "EventingGate", "PolicyGate", "QueueGate"]

ChangeKind = Literal["add", "remove"]  # what happened to the pending list (a request came or went)


class PolicyGate:
    """Decides every request the same way, at once: `approve=False` (the default) rejects."""

    def __init__(self, approve: bool = False) -> None:
        self.approve = approve

    @property
    def policy(self) -> str:
        return "approve" if self.approve else "reject"

    def request(self, request: ApprovalRequest) -> ApprovalDecision:
        if self.approve:
            return ApprovalDecision(True, Decider.POLICY, "approved by policy (--approve approve)")
        return ApprovalDecision(
            False,
            Decider.POLICY,
            "confirm-level tools are rejected by policy; start the server with --approve approve or "
            "--approve ask to allow them",
        )


@dataclass(slots=True)
class _Pending:
    request: ApprovalRequest
    done: threading.Event = field(default_factory=threading.Event)
    decision: ApprovalDecision | None = None


class QueueGate:
    """Holds requests until someone decides, or rejects them after `timeout` seconds.

    The one owner of pending approvals (Inspect AI's approval manager is the model): `request`
    blocks the calling (tool) thread; `decide`, `approve_tool_for_run`, `cancel_all` and `close` may
    be called from any thread. `on_request(request)` is called once per new pending request, and
    every `subscribe`d listener whenever the pending list changes (added, decided, timed out); both
    run on the thread that made the change, so keep them cheap (post a message, set an event).
    """

    policy = "ask"

    def __init__(
        self,
        timeout: float = 120.0,
        on_request: Callable[[ApprovalRequest], None] | None = None,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"approval timeout must be positive, got {timeout!r}")
        self.timeout = float(timeout)
        self.on_request = on_request
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._approved_tools: set[str] = set()
        self._closed = False
        self._listeners: tuple[Callable[[ChangeKind], None], ...] = ()

    def subscribe(self, listener: Callable[[ChangeKind], None]) -> Callable[[], None]:
        """Call `listener("add" | "remove")` whenever the pending list changes; returns the
        unsubscribe function."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = tuple(other for other in self._listeners if other is not listener)

        return unsubscribe

    def _changed(self, change: ChangeKind) -> None:
        for listener in self._listeners:  # replaced, never mutated: safe to read without the lock
            try:
                listener(change)
            except Exception:  # a broken listener must not break the gate
                log.exception("approval listener failed")

    def request(self, request: ApprovalRequest) -> ApprovalDecision:
        request.timeout = self.timeout  # the gate owns the timeout
        with self._lock:
            if self._closed:
                return ApprovalDecision(False, Decider.POLICY, "the server is shutting down")
            if request.tool_name in self._approved_tools:
                return ApprovalDecision(True, Decider.USER, "tool approved for the rest of this run")
            entry = _Pending(request)
            self._pending[request.id] = entry
        if self.on_request is not None:
            try:
                self.on_request(request)
            except Exception:  # a broken listener must not leave the tool call hanging
                log.exception("approval listener failed for %s", request.id)
        self._changed("add")
        entry.done.wait(self.timeout)
        with self._lock:
            self._pending.pop(request.id, None)
            decision = entry.decision
            if decision is None:
                decision = entry.decision = ApprovalDecision(
                    False, Decider.TIMEOUT, f"no decision within {self.timeout:g} s"
                )
                timed_out = True
            else:
                timed_out = False
        if timed_out:
            self._changed("remove")
        return decision

    def pending(self) -> list[ApprovalRequest]:
        """Requests still waiting for a decision, oldest first."""
        with self._lock:
            waiting = [p.request for p in self._pending.values() if p.decision is None]
        return sorted(waiting, key=lambda r: r.created_at)

    def decide(
        self, approval_id: str, approved: bool, decided_by: str = Decider.USER, reason: str = ""
    ) -> bool:
        """Answer one pending request. False if it is unknown or already decided (or timed out)."""
        with self._lock:
            entry = self._pending.get(approval_id)
            if entry is None or entry.decision is not None:
                return False
            entry.decision = ApprovalDecision(bool(approved), decided_by, reason)
        entry.done.set()
        self._changed("remove")
        return True

    def approve_tool_for_run(self, tool_name: str, decided_by: str = Decider.USER) -> int:
        """Approve `tool_name` from now on, and every request for it already waiting.

        Returns how many waiting requests this approved.
        """
        with self._lock:
            self._approved_tools.add(tool_name)
            waiting = [
                p.request.id
                for p in self._pending.values()
                if p.request.tool_name == tool_name and p.decision is None
            ]
        reason = "tool approved for the rest of this run"
        return sum(self.decide(i, True, decided_by, reason) for i in waiting)

    def approved_tools(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._approved_tools)

    def forget_tool_approvals(self) -> None:
        """Start a new run: tools approved "for the rest of this run" need approval again."""
        with self._lock:
            self._approved_tools.clear()

    def cancel_all(self, reason: str = "the run was stopped", trial_id: str | None = None) -> int:
        """Decide every waiting request (of one trial, if given) at once as rejected by `cancelled`
        (a stopped run, a cancelled trial, a quit); later requests still wait. Returns how many."""
        with self._lock:
            waiting = [i for i, p in self._pending.items()
                       if p.decision is None and (trial_id is None or p.request.trial_id == trial_id)]
        return sum(self.decide(approval_id, False, CANCELLED, reason) for approval_id in waiting)

    def close(self, reason: str = "the server is shutting down") -> None:
        """Reject everything waiting and every later request, so shutdown never waits on a person."""
        with self._lock:
            self._closed = True
            waiting = [i for i, p in self._pending.items() if p.decision is None]
        for approval_id in waiting:
            self.decide(approval_id, False, Decider.POLICY, reason)


class EventingGate:
    """Wraps the server's gate and reports each question and answer as events."""

    def __init__(
        self, inner: ApprovalGate, sink: EventSink, benchmark_id: str | None = None
    ) -> None:
        self.inner = inner
        self.sink = sink
        self.benchmark_id = benchmark_id

    def request(self, request: ApprovalRequest) -> ApprovalDecision:
        own_timeout = getattr(self.inner, "timeout", None)
        if isinstance(own_timeout, (int, float)):
            request.timeout = float(own_timeout)
        self.sink.emit(ApprovalAskedEvent(
            trial_id=request.trial_id, task_id=request.task_id, benchmark_id=self.benchmark_id,
            data=ApprovalAskedData(approval_id=request.id, tool_name=request.tool_name, arguments=request.arguments,
                                   risk=request.risk, timeout=request.timeout)))
        try:
            decision = self.inner.request(request)
        except Exception as exc:  # a gate bug must reject, not run the tool
            log.exception("approval gate failed for %s", request.id)
            decision = ApprovalDecision(False, Decider.POLICY, f"approval gate failed: {exc}")
        self.sink.emit(ApprovalDecidedEvent(
            trial_id=request.trial_id, task_id=request.task_id, benchmark_id=self.benchmark_id,
            data=ApprovalDecidedData(approval_id=request.id, tool_name=request.tool_name, approved=decision.approved,
                                     decided_by=decision.decided_by, reason=decision.reason)))
        return decision
