"""Any string survives the server: a lone UTF-16 surrogate in an answer, a tool argument or a tool
name is answered (never a 5xx) and cannot poison later reads of its task or trial.

Policy (corral_core.safetext): lone surrogates become U+FFFD where text enters our records. Before
the fix each of these requests was a 500, and the task's and trial's read routes stayed broken.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from corral_core.env import Suite, TaskSpec
from corral_core.server import EmbeddedServer, create_app
from corral_core.tools import tool
from tests.server.conftest import Served
from tests.timeouts import HTTP_TIMEOUT

LONE = "\ud800"
FFFD = "\ufffd"


def post_json(http: httpx.Client, path: str, body: object) -> httpx.Response:
    """Send `body` as ASCII JSON, so a lone surrogate travels as the escape "\\ud800"."""
    return http.post(path, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


@pytest.fixture
def http(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as client:
        yield client


def reads_of(task_id: str, trial_id: str) -> list[str]:
    return [f"/tasks/{task_id}/trials", f"/tasks/{task_id}/trials/{trial_id}", f"/tasks/{task_id}/last_score",
            f"/tasks/{task_id}/status", f"/tasks/{task_id}/state", f"/trials/{trial_id}/status",
            f"/trials/{trial_id}/state"]


def assert_all_readable(http: httpx.Client, paths: list[str]) -> list[dict]:
    bodies = []
    for path in paths:
        response = http.get(path)
        assert response.status_code < 500, (path, response.status_code, response.text[:300])
        assert LONE not in response.text
        bodies.append(response.json())
    return bodies


def test_a_surrogate_in_an_answer_on_a_trial_route_is_scored_and_stays_readable(served, http) -> None:
    trial_id = post_json(http, "/tasks/echo/trials", {}).json()["trial_id"]
    response = post_json(http, f"/trials/{trial_id}/submit", {"answer": f"hi{LONE}"})
    assert response.status_code == 200, response.text
    assert response.json()["state"]["submitted_answer"] == f"hi{FFFD}"
    trial_reads = [f"/trials/{trial_id}/status", f"/trials/{trial_id}/state", f"/tasks/echo/trials/{trial_id}"]
    status, _, snapshot = assert_all_readable(http, trial_reads)
    assert status["submitted_answer"] == snapshot["trial_state"]["submitted_answer"] == f"hi{FFFD}"


def test_surrogates_in_answers_arguments_and_tool_names_never_poison_the_task_routes(served, http) -> None:
    trial_id = post_json(http, "/tasks/echo/trials", {}).json()["trial_id"]
    hostile = [
        ("/tasks/echo/tools/execute", {"tool_name": "echo", "arguments": {"text": f"x{LONE}"}}),
        ("/tasks/echo/tools/execute", {"tool_name": f"echo{LONE}", "arguments": {"text": "x"}}),
        ("/tasks/echo/tools/execute", {"tool_name": "echo", "arguments": {f"text{LONE}": LONE}}),
        (f"/trials/{trial_id}/tools/execute", {"tool_name": "echo", "arguments": {"text": [LONE, {"k": LONE}]}}),
        (f"/trials/{trial_id}/tools/execute", {"tool_name": LONE, "arguments": {}}),
        ("/tasks/echo/submit", {"answer": LONE}),
    ]
    statuses = []
    for path, body in hostile:
        response = post_json(http, path, body)
        assert response.status_code < 500, (path, response.text[:300])
        statuses.append(response.json().get("result", {}).get("status"))
    assert statuses == ["success", "invalid_tool", "invalid_args", "invalid_args", "invalid_tool", None]

    first, _, last_score, *_ = assert_all_readable(http, reads_of("echo", trial_id))
    finished = list(first["trials"].values())[-1]  # the task route's trial, just ended
    assert finished["submitted_answer"] == FFFD
    calls = finished["tool_statistics"]["tool_calls"]
    assert calls[0]["arguments"] == {"text": f"x{FFFD}"} and calls[0]["result"] == f"x{FFFD}"
    assert calls[1]["tool_name"] == f"echo{FFFD}"
    assert last_score["score"] == 0.0
    # and the task keeps working
    response = post_json(http, "/tasks/echo/tools/execute", {"tool_name": "echo", "arguments": {"text": "ok"}})
    assert response.json()["result"]["result"] == "ok"


def test_the_client_sends_an_llms_lone_surrogate_instead_of_crashing(served) -> None:
    trial = served.client.open_trial("echo")
    response = trial.execute_tool("echo", "echo", {"text": f"a{LONE}"})
    assert response.success and response.result == f"a{FFFD}"
    assert trial.submit_answer("echo", f"hi{LONE}").state["submitted_answer"] == f"hi{FFFD}"
    trial.close()


@tool
def odd_file_name() -> str:
    """A file name as os.listdir gives it for undecodable bytes (surrogateescape)."""
    return b"report-\xff.txt".decode("utf-8", "surrogateescape")


def test_a_tool_result_holding_a_lone_surrogate_is_answered_with_the_replacement() -> None:
    suite = Suite("odd", [TaskSpec(id="odd", prompt="List.", answer="x", scoring={"type": "exact"})], [odd_file_name])
    with EmbeddedServer(create_app(suite)) as server, httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as http:
        response = post_json(http, "/tasks/odd/tools/execute", {"tool_name": "odd_file_name", "arguments": {}})
        assert response.status_code == 200, response.text
        assert response.json()["result"]["result"] == f"report-{FFFD}.txt"
        assert http.get("/tasks/odd/status").status_code == 200
