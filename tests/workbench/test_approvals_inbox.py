"""The approvals inbox: one owner of pending approvals, change notifications, decisions of every kind.

LocalApprovals is the embedded servers' gate; RemoteApprovals mirrors a real server's
GET /approvals (an EmbeddedServer on loopback with a QueueGate, as `serve --approve ask` runs it).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import pytest

from corral_core.env.approval import ApprovalDecision, ApprovalRequest
from corral_core.events import EventKind, ListSink
from corral_tui.services.approvals import Decision, LocalApprovals, RemoteApprovals, Verdict

WAIT = 10.0  # seconds a test waits for a thread it started (a bound, not a timing assumption)


class Asker:
    """A tool call on a server thread, waiting at the gate for its decision."""

    def __init__(self, gate, tool: str = "write_marker", trial: str = "tr_1") -> None:
        self.request = ApprovalRequest("mark", trial, tool, {"name": "m.txt"})
        self.decision: queue.Queue[ApprovalDecision] = queue.Queue()
        threading.Thread(target=lambda: self.decision.put(gate.request(self.request)), daemon=True).start()

    def answer(self) -> ApprovalDecision:
        return self.decision.get(timeout=WAIT)


class Changes:
    """Collects the inbox's notifications; `wait(n)` blocks until n have come."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._cond = threading.Condition()

    def __call__(self, change: str) -> None:
        with self._cond:
            self.seen.append(change)
            self._cond.notify_all()

    def wait(self, count: int) -> list[str]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.seen) >= count, WAIT), f"only {self.seen}"
            return list(self.seen)


@pytest.fixture
def local() -> Iterator[LocalApprovals]:
    inbox = LocalApprovals(timeout=60.0)
    inbox.start()
    yield inbox
    inbox.close()


def test_policies_answer_at_once_and_ask_waits_for_a_person(local: LocalApprovals) -> None:
    local.begin_run("approve")
    assert local.request(ApprovalRequest("mark", "tr_1", "write_marker", {})).approved
    local.begin_run("reject")
    assert not local.request(ApprovalRequest("mark", "tr_1", "write_marker", {})).approved
    with pytest.raises(ValueError, match="approval policy"):
        local.begin_run("auto")
    local.begin_run("ask")
    changes = Changes()
    unsubscribe = local.subscribe(changes)
    asker = Asker(local)
    assert changes.wait(1) == ["add"]
    assert [r.id for r in local.pending()] == [asker.request.id]
    assert local.decide(asker.request, Decision(Verdict.REJECT, "not in production"))
    decision = asker.answer()
    assert (decision.approved, decision.decided_by, decision.reason) == (False, "user", "not in production")
    assert changes.wait(2) == ["add", "remove"] and local.pending() == []
    assert not local.decide(asker.request, Decision(Verdict.APPROVE))  # gone
    unsubscribe()
    Asker(local)
    assert _wait_pending(local, 1) and changes.seen == ["add", "remove"]  # no longer told


def _wait_pending(inbox, count: int) -> bool:
    changes = Changes()
    unsubscribe = inbox.subscribe(changes)
    try:
        while len(inbox.pending()) < count:
            changes.wait(len(changes.seen) + 1)
        return True
    finally:
        unsubscribe()


def test_approving_a_tool_for_the_run_releases_its_waiting_calls_only(local: LocalApprovals) -> None:
    first, second, other = Asker(local), Asker(local, trial="tr_2"), Asker(local, tool="tally")
    _wait_pending(local, 3)
    assert local.decide(first.request, Decision(Verdict.APPROVE_TOOL))
    assert first.answer().approved and second.answer().approved
    assert [r.tool_name for r in local.pending()] == ["tally"]
    assert local.request(ApprovalRequest("mark", "tr_3", "write_marker", {})).approved  # later calls too
    local.begin_run("ask")  # a new run forgets it
    again = Asker(local)
    _wait_pending(local, 2)
    assert local.cancel_all("the operator stopped the run") == 2
    for asker in (other, again):
        decision = asker.answer()
        assert (decision.approved, decision.decided_by) == (False, "cancelled")
    assert local.pending() == []


def test_closing_rejects_what_waits_and_what_comes(local: LocalApprovals) -> None:
    asker = Asker(local)
    _wait_pending(local, 1)
    local.close()
    assert not asker.answer().approved
    assert not local.request(ApprovalRequest("mark", "tr_9", "write_marker", {})).approved


@pytest.fixture
def remote_server() -> Iterator[tuple[str, object]]:
    from corral_core.env import load_suite
    from corral_core.server import EmbeddedServer, QueueGate, create_app
    from tests.workbench.conftest import TUITEST

    gate = QueueGate(timeout=60.0)
    server = EmbeddedServer(create_app(load_suite(TUITEST), gate=gate))
    url = server.start()
    yield url, gate
    gate.close()
    server.stop()


def test_a_remote_servers_approvals_are_mirrored_decided_and_recorded(remote_server) -> None:
    url, gate = remote_server
    sink = ListSink()
    inbox = RemoteApprovals(url, sink, interval=0.05)
    changes = Changes()
    inbox.subscribe(changes)
    inbox.start()
    try:
        first, second = Asker(gate), Asker(gate, tool="tally", trial="tr_2")
        while len(inbox.pending()) < 2:
            changes.wait(len(changes.seen) + 1)
        assert {r.id for r in inbox.pending()} == {first.request.id, second.request.id}
        assert inbox.decide(first.request, Decision(Verdict.APPROVE, "looks fine"))
        decision = first.answer()
        assert (decision.approved, decision.decided_by, decision.reason) == (True, "remote", "looks fine")
        assert [r.id for r in inbox.pending()] == [second.request.id]  # at once, before the next poll
        assert inbox.cancel_all("the workbench is closing") == 1
        assert (second.answer().approved, inbox.pending()) == (False, [])
        asked = sink.of_kind(EventKind.APPROVAL_ASKED)
        decided = [(e.data["approval_id"], e.data["approved"], e.data["decided_by"])
                   for e in sink.of_kind(EventKind.APPROVAL_DECIDED)]
        assert {e.data["approval_id"] for e in asked} == {first.request.id, second.request.id}
        assert decided == [(first.request.id, True, "user"), (second.request.id, False, "cancelled")]
    finally:
        inbox.close()


def test_a_remote_tool_approved_for_the_run_is_approved_when_it_asks_again(remote_server) -> None:
    url, gate = remote_server
    inbox = RemoteApprovals(url, ListSink(), interval=0.05)
    inbox.start()
    try:
        first = Asker(gate)
        while not inbox.pending():
            _wait_pending(inbox, 1)
        assert inbox.decide(inbox.pending()[0], Decision(Verdict.APPROVE_TOOL))
        assert first.answer().approved
        later = Asker(gate, trial="tr_2")  # the next poll approves it, nobody is asked
        decision = later.answer()
        assert (decision.approved, decision.reason) == (True, "tool approved for the rest of this run")
    finally:
        inbox.close()
