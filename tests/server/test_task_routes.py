"""Corral's task routes over real HTTP: shapes, errors, and the one-current-trial semantics."""

from __future__ import annotations

import hashlib
import json
import time

import httpx
import pytest

from tests.timeouts import HTTP_TIMEOUT


@pytest.fixture
def http(served_factory):
    served = served_factory()
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as client:
        yield client


def test_suite_level_routes(http):
    assert http.get("/tasks").json() == ["add", "echo", "first", "second"]
    assert http.get("/dependency_chain").json() == {"dependency_chain": True}
    assert http.get("/dependency_graph").json() == {"add": [], "echo": [], "first": [], "second": ["first"]}
    health = http.get("/health").json()
    assert health["status"] == "ok" and health["tasks"] == 4 and health["requests_served"] >= 3


def test_prompt_guide_and_tool_listings(http):
    assert http.get("/tasks/add/prompt").json() == {"prompt": "What is 2 + 3?"}
    guide = http.get("/tasks/add/guide").json()["prompt"]
    assert guide.startswith("Task: What is 2 + 3?\n\n")
    tools_guide = http.get("/tasks/add/tools/guide").json()["prompt"]
    assert guide.endswith(tools_guide) and "add" in tools_guide

    tools = http.get("/tasks/add/tools").json()["tools"]
    names = [t["function"]["name"] for t in tools]
    assert names == ["add", "echo", "explode", "slow", "touch_confirm", "touch_blocked"]
    assert tools[0]["type"] == "function"
    assert tools[0]["function"]["parameters"]["required"] == ["a", "b"]

    mcp = http.get("/tasks/add/tools/mcp").json()
    assert [t["name"] for t in mcp["tools"]] == names
    assert "inputSchema" in mcp["tools"][0]
    digest = hashlib.sha256(json.dumps(mcp["tools"], sort_keys=True).encode()).hexdigest()
    assert mcp["mcp_schema_sha256"] == digest


def test_verbosity_is_case_insensitive_and_omitted_means_full(http):
    full = http.get("/tasks/add/tools/guide").json()
    assert http.get("/tasks/add/tools/guide", params={"verbosity": "FULL"}).json() == full
    assert http.get("/tasks/add/tools/guide", params={"verbosity": "Minimal"}).status_code == 200
    bad = http.get("/tasks/add/guide", params={"verbosity": "loud"})
    assert bad.status_code == 422
    assert "minimal" in bad.json()["detail"][0]["msg"] and "comprehensive" in bad.json()["detail"][0]["msg"]
    for path in ("/tasks/add/tools", "/tasks/add/tools/mcp", "/tasks/add/tools/guide"):
        assert http.get(path, params={"verbosity": "NONE"}).status_code == 422


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/tasks/nope/prompt"),
        ("GET", "/tasks/nope/guide"),
        ("GET", "/tasks/nope/tools"),
        ("GET", "/tasks/nope/tools/guide"),
        ("GET", "/tasks/nope/tools/mcp"),
        ("GET", "/tasks/nope/status"),
        ("GET", "/tasks/nope/state"),
        ("GET", "/tasks/nope/trials"),
        ("GET", "/tasks/nope/trials/0"),
        ("GET", "/tasks/nope/last_score"),
        ("POST", "/tasks/nope/surrender"),
        ("POST", "/tasks/nope/configure"),
        ("POST", "/tasks/nope/trials"),
    ],
)
def test_unknown_task_is_404_with_a_message(http, method, path):
    response = http.request(method, path)
    assert response.status_code == 404
    assert "Task not found: 'nope'" in response.json()["detail"]
    assert "add" in response.json()["detail"]  # names the available tasks


def test_unknown_task_on_body_routes_is_404(http):
    assert http.post("/tasks/nope/tools/execute", json={"tool_name": "add", "arguments": {}}).status_code == 404
    assert http.post("/tasks/nope/submit", json={"answer": "5"}).status_code == 404


def test_tool_execute_shape_and_status(http):
    body = http.post("/tasks/add/tools/execute", json={"tool_name": "add", "arguments": {"a": 2, "b": 3}}).json()
    call = body["result"]
    assert call["status"] == "success" and call["result"] == "5" and call["error_message"] is None
    assert set(call) >= {"tool_name", "arguments", "result", "status", "error_message", "duration", "timestamp"}
    status = http.get("/tasks/add/status").json()
    assert status["is_attempted"] is False and status["score"] is None and status["submitted_answer"] is None
    assert status["tool_statistics"]["total_calls"] == 1
    assert status["tool_statistics"]["tools_used"] == ["add"]
    assert status["trial_id"] == "0"
    state = http.get("/tasks/add/state").json()
    assert state["trial_id"] == "0" and state["status"] == "running"


def test_submit_body_must_hold_an_answer_that_is_not_a_list_or_object(http):
    for body in ({}, {"answer": [5]}, {"answer": {"a": 5}}, {"text": "5"}, [1, 2]):
        response = http.post("/tasks/add/submit", json=body)
        assert response.status_code == 422, body
    assert http.post("/tasks/add/submit", content=b"not json",
                     headers={"content-type": "application/json"}).status_code == 422
    # nothing was scored by the bad requests
    assert http.get("/tasks/add/status").json()["trial_id"] == "0"


def test_submit_answers_with_the_finished_trial_and_resets(http):
    http.post("/tasks/add/tools/execute", json={"tool_name": "add", "arguments": {"a": 2, "b": 3}})
    done = http.post("/tasks/add/submit", json={"answer": "The answer is 5"}).json()
    assert set(done) == {"score", "state", "trial_id", "surrendered", "explanation"}
    assert done["score"] == 1.0 and done["surrendered"] is False
    assert done["trial_id"] == "0" == done["state"]["trial_id"]  # Corral answered "1" here
    assert done["state"]["tool_statistics"]["total_calls"] == 1
    assert done["explanation"]

    # Corral semantics: the task moved on to a fresh trial "1"
    status = http.get("/tasks/add/status").json()
    assert status["trial_id"] == "1" and status["is_attempted"] is False
    assert status["tool_statistics"]["total_calls"] == 0

    # a second submit scores the new trial, and answers with its id
    again = http.post("/tasks/add/submit", json={"answer": "7"}).json()
    assert again["trial_id"] == "1" and again["score"] == 0.0

    assert http.get("/tasks/add/last_score").json() == {"task_id": "add", "trial_id": "1", "score": 0.0}
    trials = http.get("/tasks/add/trials").json()["trials"]
    assert list(trials) == ["0", "1"]
    assert trials["0"]["submitted_answer"] == "The answer is 5"
    assert http.get("/tasks/add/trials/0").json()["trial_state"]["score"] == 1.0
    assert http.get("/tasks/add/trials/2").json()["trial_state"]["status"] == "running"  # current
    missing = http.get("/tasks/add/trials/99")
    assert missing.status_code == 404 and "99" in missing.json()["detail"]


def test_surrender_shape_and_reset(http):
    done = http.post("/tasks/echo/surrender").json()
    assert done["surrendered"] is True and done["score"] == 0.0 and done["trial_id"] == "0"
    assert done["state"]["status"] == "surrendered"
    assert http.get("/tasks/echo/status").json()["trial_id"] == "1"


def test_last_score_before_any_trial_is_404(http):
    response = http.get("/tasks/echo/last_score")
    assert response.status_code == 404 and "No trials completed yet" in response.json()["detail"]


def test_configure_shape(http):
    body = http.post("/tasks/add/configure").json()
    assert body == {"status": "No external app/service configuration needed for this trial.",
                    "task_id": "add", "trial_id": "0"}


def test_chained_task_routes_share_upstream_outputs(http):
    assert "(not available)" in http.get("/tasks/second/prompt").json()["prompt"]
    http.post("/tasks/first/submit", json={"answer": "red"})
    assert "Output of first: red" in http.get("/tasks/second/prompt").json()["prompt"]


def test_openapi_lists_every_route(http):
    paths = set(http.get("/openapi.json").json()["paths"])
    for suffix in ("prompt", "guide", "tools", "tools/guide", "tools/mcp", "status", "state",
                   "tools/execute", "submit", "surrender", "configure"):
        assert f"/tasks/{{task_id}}/{suffix}" in paths
        assert f"/trials/{{trial_id}}/{suffix}" in paths
    assert {"/tasks", "/dependency_chain", "/dependency_graph", "/health", "/approvals",
            "/approvals/{approval_id}", "/tasks/{task_id}/trials", "/tasks/{task_id}/trials/{trial_id}",
            "/tasks/{task_id}/last_score", "/trials/{trial_id}", "/episodes/{episode_id}"} <= paths


def test_nan_arguments_never_cause_a_500(http):
    body = b'{"tool_name": "add", "arguments": {"a": NaN, "b": Infinity}}'
    response = http.post("/tasks/add/tools/execute", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200
    assert response.json()["result"]["status"] == "invalid_args"


def test_request_served_events_are_emitted(served_factory):
    from corral_core.events import EventKind

    served = served_factory()
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as client:
        client.get("/tasks/nope/prompt")
    # The event is emitted once the response has left: wait for it (bounded), do not assume it.
    deadline = time.monotonic() + HTTP_TIMEOUT
    while not (events := served.sink.of_kind(EventKind.REQUEST_SERVED)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert events and events[-1].data["path"] == "/tasks/nope/prompt"
    assert events[-1].data["status"] == 404 and events[-1].data["method"] == "GET"
    assert events[-1].data["latency_ms"] >= 0
