"""The approval gates on their own: decisions, timeouts, per-run approvals, shutdown, events."""

from __future__ import annotations

import threading

import pytest

from corral_core.env.approval import ApprovalRequest
from corral_core.events import EventKind, ListSink
from corral_core.server import EventingGate, PolicyGate, QueueGate
from tests.timeouts import HANG, wait_until


def ask(gate, tool_name="touch_confirm"):
    """Run `gate.request` in a thread; returns (request, holder list, thread)."""
    request = ApprovalRequest("add", "tr_1", tool_name, {"path": "x"})
    holder: list = []
    thread = threading.Thread(target=lambda: holder.append(gate.request(request)))
    thread.start()
    return request, holder, thread


def wait_pending(gate, count=1):
    wait_until(lambda: len(gate.pending()) >= count, f"{count} pending request(s)")


def join(thread):
    thread.join(HANG)
    assert not thread.is_alive(), "the request did not return"


def test_policy_gate():
    request = ApprovalRequest("add", None, "t", {})
    assert PolicyGate(approve=True).request(request).approved is True
    rejected = PolicyGate().request(request)
    assert rejected.approved is False and rejected.decided_by == "policy" and rejected.reason


def test_queue_gate_decide():
    gate = QueueGate(timeout=HANG)
    request, holder, thread = ask(gate)
    wait_pending(gate)
    assert gate.pending()[0].id == request.id and request.timeout == HANG
    assert gate.decide("ap_other", True) is False
    assert gate.decide(request.id, True, reason="fine") is True
    join(thread)
    assert holder[0].approved is True and holder[0].decided_by == "user" and holder[0].reason == "fine"
    assert gate.decide(request.id, False) is False  # already decided
    assert gate.pending() == []


def test_queue_gate_timeout():
    gate = QueueGate(timeout=0.05)
    decision = gate.request(ApprovalRequest("add", None, "t", {}))
    assert decision.approved is False and decision.decided_by == "timeout"
    assert gate.pending() == []


def test_approve_tool_for_run_releases_waiting_and_later_requests():
    gate = QueueGate(timeout=HANG)
    _, first, thread_one = ask(gate)
    _, other, thread_other = ask(gate, "another_tool")
    wait_pending(gate, 2)
    assert gate.approve_tool_for_run("touch_confirm") == 1
    join(thread_one)
    assert first[0].approved is True
    assert [r.tool_name for r in gate.pending()] == ["another_tool"]  # other tools still wait
    later = gate.request(ApprovalRequest("add", None, "touch_confirm", {}))
    assert later.approved is True and "rest of this run" in later.reason
    assert gate.approved_tools() == {"touch_confirm"}
    gate.forget_tool_approvals()
    assert gate.approved_tools() == frozenset()
    gate.close()
    join(thread_other)
    assert other[0].approved is False


def test_close_rejects_waiting_and_new_requests():
    gate = QueueGate(timeout=HANG)
    _, holder, thread = ask(gate)
    wait_pending(gate)
    gate.close()
    join(thread)
    assert not thread.is_alive() and holder[0].approved is False
    assert gate.request(ApprovalRequest("add", None, "t", {})).approved is False


def test_a_failing_listener_does_not_hang_the_request():
    def listener(request):
        raise RuntimeError("broken UI")

    gate = QueueGate(timeout=0.05, on_request=listener)
    assert gate.request(ApprovalRequest("add", None, "t", {})).decided_by == "timeout"


def test_queue_gate_rejects_a_bad_timeout():
    with pytest.raises(ValueError, match="positive"):
        QueueGate(timeout=0)


def test_eventing_gate_reports_question_and_answer():
    sink = ListSink()
    gate = EventingGate(QueueGate(timeout=0.05), sink, benchmark_id="b")
    decision = gate.request(ApprovalRequest("add", "tr_9", "t", {"x": 1}))
    asked, decided = sink.events
    assert asked.kind is EventKind.APPROVAL_ASKED and decided.kind is EventKind.APPROVAL_DECIDED
    assert asked.data == {"approval_id": decided.data["approval_id"], "tool_name": "t", "arguments": {"x": 1},
                          "risk": "confirm", "timeout": 0.05}
    assert decided.data["approved"] is decision.approved is False
    assert asked.trial_id == "tr_9" and asked.benchmark_id == "b"


def test_eventing_gate_rejects_when_the_inner_gate_fails():
    class Broken:
        def request(self, request):
            raise RuntimeError("bug")

    decision = EventingGate(Broken(), ListSink()).request(ApprovalRequest("add", None, "t", {}))
    assert decision.approved is False and "bug" in decision.reason
