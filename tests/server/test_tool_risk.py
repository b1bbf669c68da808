"""Tool failures keep Corral's 200 shape; risk levels are enforced at the server's tool boundary."""

from __future__ import annotations

import threading

import httpx
import pytest

from corral_core.events import EventKind
from corral_core.server import PolicyGate, QueueGate
from tests.timeouts import HANG, HTTP_TIMEOUT, wait_until


def execute(http, trial_path, tool_name, **arguments):
    response = http.post(f"{trial_path}/tools/execute", json={"tool_name": tool_name, "arguments": arguments})
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.fixture
def served(served_factory):
    return served_factory()


@pytest.fixture
def http(served):
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as client:
        yield client


@pytest.fixture
def trial(http):
    return "/trials/" + http.post("/tasks/add/trials").json()["trial_id"]


def test_unknown_tool_bad_args_and_exceptions_are_200_with_a_status(http, trial):
    unknown = execute(http, trial, "nope")
    assert unknown["status"] == "invalid_tool" and "nope" in unknown["error_message"]
    missing = execute(http, trial, "add", a=1)
    assert missing["status"] == "invalid_args" and "b" in missing["error_message"]
    wrong_type = execute(http, trial, "add", a="one", b=2)
    assert wrong_type["status"] == "invalid_args"
    boom = execute(http, trial, "explode", message="kaboom")
    assert boom["status"] == "execution_error" and boom["error_message"] == "kaboom"
    assert boom["result"] is None
    stats = http.get(f"{trial}/status").json()["tool_statistics"]
    assert stats["failed_calls"] == 4 and stats["successful_calls"] == 0


def test_malformed_execute_bodies_are_422(http, trial):
    for body in ({}, {"arguments": {}}, {"tool_name": 3}, {"tool_name": "add", "arguments": [1]}):
        assert http.post(f"{trial}/tools/execute", json=body).status_code == 422, body


def test_blocked_tool_never_runs(http, trial, tmp_path):
    target = tmp_path / "blocked.txt"
    call = execute(http, trial, "touch_blocked", path=str(target))
    assert call["status"] == "blocked" and call["risk"] == "blocked"
    assert not target.exists()


def test_confirm_tool_is_rejected_by_the_default_policy(http, trial, tmp_path, served):
    target = tmp_path / "confirm.txt"
    call = execute(http, trial, "touch_confirm", path=str(target))
    assert call["status"] == "rejected" and call["approval"] == "rejected"
    assert "--approve" in call["error_message"]
    assert not target.exists()
    decided = served.sink.of_kind(EventKind.APPROVAL_DECIDED)[-1]
    assert decided.data["approved"] is False and decided.data["decided_by"] == "policy"


def test_policy_gate_can_approve(served_factory, tmp_path):
    served = served_factory(gate=PolicyGate(approve=True))
    target = tmp_path / "confirm.txt"
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        trial = "/trials/" + http.post("/tasks/add/trials").json()["trial_id"]
        call = execute(http, trial, "touch_confirm", path=str(target))
    assert call["status"] == "success" and call["approval"] == "approved"
    assert target.read_text() == "touched"


def test_confirm_tool_runs_only_after_a_remote_approval(served_factory, tmp_path):
    served = served_factory(gate=QueueGate(timeout=HANG))
    target = tmp_path / "confirm.txt"
    seen_pending: list[dict] = []

    def approver() -> None:
        with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as client:
            wait_until(lambda: seen_pending.extend(client.get("/approvals").json()["approvals"]) or seen_pending,
                       "the call to wait for approval")
            assert not target.exists()  # still waiting: the tool has not run
            client.post(f"/approvals/{seen_pending[0]['id']}", json={"approved": True, "reason": "ok"})

    thread = threading.Thread(target=approver)
    thread.start()
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        created = http.post("/tasks/add/trials").json()
        call = execute(http, f"/trials/{created['trial_id']}", "touch_confirm", path=str(target))
    thread.join(HANG)
    assert call["status"] == "success" and call["approval"] == "approved"
    assert target.exists()
    assert seen_pending[0]["tool_name"] == "touch_confirm"
    assert seen_pending[0]["trial_id"] == created["trial_id"]
    assert seen_pending[0]["arguments"] == {"path": str(target)}

    asked = served.sink.of_kind(EventKind.APPROVAL_ASKED)[-1]
    decided = served.sink.of_kind(EventKind.APPROVAL_DECIDED)[-1]
    assert asked.data["approval_id"] == decided.data["approval_id"] == seen_pending[0]["id"]
    assert asked.data["timeout"] == HANG and asked.trial_id == created["trial_id"]
    assert decided.data == {"approval_id": seen_pending[0]["id"], "tool_name": "touch_confirm",
                            "approved": True, "decided_by": "remote", "reason": "ok"}


def test_remote_rejection(served_factory, tmp_path):
    gate = QueueGate(timeout=HANG)
    gate.on_request = lambda request: threading.Thread(
        target=lambda: httpx.post(f"{served.url}/approvals/{request.id}", json={"approved": False},
                                  timeout=HTTP_TIMEOUT)
    ).start()
    served = served_factory(gate=gate)
    target = tmp_path / "confirm.txt"
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        call = execute(http, "/tasks/add", "touch_confirm", path=str(target))
    assert call["status"] == "rejected" and call["approval"] == "rejected"
    assert not target.exists()


def test_confirm_tool_is_rejected_on_timeout(served_factory, tmp_path):
    served = served_factory(gate=QueueGate(timeout=0.2))
    target = tmp_path / "confirm.txt"
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        call = execute(http, "/tasks/add", "touch_confirm", path=str(target))
        assert http.get("/approvals").json() == {"policy": "ask", "approvals": []}
    assert call["status"] == "rejected" and call["approval"] == "timeout"
    assert "timeout" in call["error_message"]
    assert not target.exists()
    decided = served.sink.of_kind(EventKind.APPROVAL_DECIDED)[-1]
    assert decided.data["decided_by"] == "timeout" and decided.data["approved"] is False


def test_approval_routes_errors(served_factory, http):
    assert http.get("/approvals").json() == {"policy": "reject", "approvals": []}  # policy gate: nothing waits
    conflict = http.post("/approvals/ap_1", json={"approved": True})
    assert conflict.status_code == 409 and "--approve ask" in conflict.json()["detail"]
    queued = served_factory(gate=QueueGate(timeout=5))
    with httpx.Client(base_url=queued.url, timeout=HTTP_TIMEOUT) as client:
        missing = client.post("/approvals/ap_unknown", json={"approved": True})
        assert missing.status_code == 404 and "ap_unknown" in missing.json()["detail"]
        assert client.post("/approvals/ap_unknown", json={"approved": "yes"}).status_code == 422
        assert client.post("/approvals/ap_unknown", json={}).status_code == 422


def test_tool_timeout(served_factory, release_slow):
    served = served_factory(tool_timeout=0.2)
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        call = execute(http, "/tasks/add", "slow", seconds=HANG * 10)  # runs until the test ends
    assert call["status"] == "timeout"


def test_stop_does_not_wait_for_a_pending_approval(served_factory):
    served = served_factory(gate=QueueGate(timeout=HANG * 10))
    results: list[dict] = []

    def call() -> None:
        with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as client:
            results.append(execute(client, "/tasks/add", "touch_confirm", path="/nonexistent/x"))

    worker = threading.Thread(target=call)
    worker.start()
    wait_until(lambda: served.app.state.gate.pending(), "the call to wait for approval")
    served.close()  # the gate would wait 10 x HANG: the call is back in time only if closing rejects it
    worker.join(HANG)
    assert not worker.is_alive() and results and results[0]["status"] == "rejected"
