"""Isolated trial runtimes over real HTTP: open, act, finish in place, 409, close, episodes."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from corral_core.events import EventKind
from tests.timeouts import HTTP_TIMEOUT


@pytest.fixture
def served(served_factory):
    return served_factory()


@pytest.fixture
def http(served):
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as client:
        yield client


def open_trial(http, task_id="add", **body):
    response = http.post(f"/tasks/{task_id}/trials", json=body or None)
    assert response.status_code == 200, response.text
    return response.json()


def test_open_trial_shape_and_workspace(http):
    created = open_trial(http)
    assert re.fullmatch(r"tr_[0-9a-f]{16}", created["trial_id"])
    assert created["task_id"] == "add"
    assert Path(created["workspace"]).is_dir()
    assert open_trial(http)["trial_id"] != created["trial_id"]


def test_open_trial_without_body(http):
    response = http.post("/tasks/add/trials")
    assert response.status_code == 200 and response.json()["task_id"] == "add"


def test_open_trial_rejects_bad_body(http):
    assert http.post("/tasks/add/trials", json={"episode_id": 5}).status_code == 422
    assert http.post("/tasks/add/trials", json={"trial_index": "x"}).status_code == 422


def test_every_read_and_act_route_under_trials(http):
    trial = open_trial(http)["trial_id"]
    base = f"/trials/{trial}"
    assert http.get(f"{base}/prompt").json() == {"prompt": "What is 2 + 3?"}
    assert http.get(f"{base}/guide", params={"verbosity": "Brief"}).json()["prompt"].startswith("Task: ")
    assert "add" in http.get(f"{base}/tools/guide").json()["prompt"]
    assert http.get(f"{base}/tools").json()["tools"][0]["function"]["name"] == "add"
    assert "mcp_schema_sha256" in http.get(f"{base}/tools/mcp").json()
    assert http.get(f"{base}/guide", params={"verbosity": "nope"}).status_code == 422
    configured = http.post(f"{base}/configure").json()
    assert configured["trial_id"] == trial and configured["task_id"] == "add"

    call = http.post(f"{base}/tools/execute", json={"tool_name": "add", "arguments": {"a": 1, "b": 4}}).json()
    assert call["result"]["result"] == "5"
    status = http.get(f"{base}/status").json()
    assert status["trial_id"] == trial and status["tool_statistics"]["total_calls"] == 1
    assert http.get(f"{base}/state").json()["trial_id"] == trial

    done = http.post(f"{base}/submit", json={"answer": "5"}).json()
    assert done["trial_id"] == trial and done["score"] == 1.0 and done["state"]["status"] == "scored"
    # finalised in place and still queryable
    assert http.get(f"{base}/state").json()["status"] == "scored"
    assert http.get(f"{base}/status").json()["score"] == 1.0
    # the task-level views know it too
    assert http.get("/tasks/add/last_score").json() == {"task_id": "add", "trial_id": trial, "score": 1.0}
    assert http.get(f"/tasks/add/trials/{trial}").json()["trial_state"]["score"] == 1.0
    assert trial in http.get("/tasks/add/trials").json()["trials"]


def test_finished_trial_rejects_second_submit_surrender_and_tools(http):
    trial = open_trial(http)["trial_id"]
    assert http.post(f"/trials/{trial}/surrender").json()["surrendered"] is True
    for method, path, body in [
        ("POST", "submit", {"answer": "5"}),
        ("POST", "surrender", None),
        ("POST", "tools/execute", {"tool_name": "add", "arguments": {"a": 1, "b": 1}}),
    ]:
        response = http.request(method, f"/trials/{trial}/{path}", json=body)
        assert response.status_code == 409, path
        assert "already ended" in response.json()["detail"]


def test_submit_needs_a_string_answer_on_trial_routes(http):
    trial = open_trial(http)["trial_id"]
    assert http.post(f"/trials/{trial}/submit", json={}).status_code == 422
    assert http.post(f"/trials/{trial}/submit", json={"answer": ["5"]}).status_code == 422
    assert http.get(f"/trials/{trial}/status").json()["is_attempted"] is False


def test_unknown_trial_is_404_everywhere(http):
    for method, path in [("GET", "prompt"), ("GET", "guide"), ("GET", "tools"), ("GET", "tools/guide"),
                         ("GET", "tools/mcp"), ("GET", "status"), ("GET", "state"), ("POST", "surrender"),
                         ("POST", "configure")]:
        response = http.request(method, f"/trials/tr_0000000000000000/{path}")
        assert response.status_code == 404, path
        assert "Trial not found" in response.json()["detail"]
    assert http.post("/trials/tr_x/tools/execute", json={"tool_name": "add"}).status_code == 404
    assert http.post("/trials/tr_x/submit", json={"answer": "1"}).status_code == 404
    assert http.delete("/trials/tr_x").status_code == 404


def test_close_trial_then_404(http, served):
    created = open_trial(http, benchmark_id="b1", arm="a", trial_index=3)
    trial = created["trial_id"]
    assert http.delete(f"/trials/{trial}").json() == {"status": "closed", "trial_id": trial, "trial_runtime_id": trial}
    assert http.get(f"/trials/{trial}/prompt").status_code == 404
    assert http.delete(f"/trials/{trial}").status_code == 404
    assert not Path(created["workspace"]).exists()  # the server's own temp workspaces are removed

    opened = served.sink.of_kind(EventKind.TRIAL_OPENED)[-1]
    assert opened.trial_id == trial and opened.task_id == "add" and opened.benchmark_id == "b1"
    assert opened.data["meta"] == {"benchmark_id": "b1", "arm": "a", "trial_index": 3}
    assert opened.data["workspace"] == created["workspace"] and opened.data["episode_id"] is None
    closed = served.sink.of_kind(EventKind.TRIAL_CLOSED)[-1]
    assert closed.trial_id == trial and closed.data == {}


def test_trials_are_isolated(http):
    one, two = open_trial(http)["trial_id"], open_trial(http)["trial_id"]
    http.post(f"/trials/{one}/tools/execute", json={"tool_name": "echo", "arguments": {"text": "x"}})
    assert http.get(f"/trials/{two}/status").json()["tool_statistics"]["total_calls"] == 0
    assert http.post(f"/trials/{one}/submit", json={"answer": "5"}).json()["score"] == 1.0
    assert http.post(f"/trials/{two}/submit", json={"answer": "4"}).json()["score"] == 0.0
    # the task route's own trial is untouched
    assert http.get("/tasks/add/status").json()["tool_statistics"]["total_calls"] == 0


def test_episodes_share_upstream_outputs_and_stay_apart(http):
    first = open_trial(http, "first", episode_id="round-1")["trial_id"]
    second = open_trial(http, "second", episode_id="round-1")["trial_id"]
    other_round = open_trial(http, "second", episode_id="round-2")["trial_id"]
    assert http.post(f"/trials/{first}/submit", json={"answer": "red"}).json()["score"] == 1.0
    assert "Output of first: red" in http.get(f"/trials/{second}/prompt").json()["prompt"]
    assert "(not available)" in http.get(f"/trials/{other_round}/prompt").json()["prompt"]
    assert http.delete("/episodes/round-1").json() == {"status": "closed", "episode_id": "round-1"}
    assert http.delete("/episodes/round-1").status_code == 404
    missing = http.delete("/episodes/never")
    assert missing.status_code == 404 and "Episode not found" in missing.json()["detail"]


def test_tool_events_carry_the_trial_id(http, served):
    trial = open_trial(http, benchmark_id="bench-7")["trial_id"]
    http.post(f"/trials/{trial}/tools/execute", json={"tool_name": "add", "arguments": {"a": 1, "b": 2}})
    requested = served.sink.of_kind(EventKind.TOOL_CALL_REQUESTED)[-1]
    executed = served.sink.of_kind(EventKind.TOOL_CALL_EXECUTED)[-1]
    assert requested.trial_id == executed.trial_id == trial
    assert requested.benchmark_id == executed.benchmark_id == "bench-7"
    assert requested.data == {"tool_name": "add", "arguments": {"a": 1, "b": 2}, "risk": "safe"}
    assert executed.data["status"] == "success" and executed.data["result"] == "3"


def test_server_stop_closes_open_trials_and_removes_temp_dir(served_factory):
    served = served_factory()
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as client:
        workspace = Path(open_trial(client)["workspace"])
    base = served.app.state.runtime.base_work_dir_if_created
    served.close()
    assert not workspace.exists() and not base.exists()
    closed = served.sink.of_kind(EventKind.TRIAL_CLOSED)
    assert len(closed) == 1


def test_given_base_work_dir_is_kept(served_factory, tmp_path):
    served = served_factory(base_work_dir=tmp_path / "work")
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as client:
        created = open_trial(client)
        client.delete(f"/trials/{created['trial_id']}")
    assert Path(created["workspace"]).is_dir()
    assert Path(created["workspace"]).is_relative_to(tmp_path / "work")


def test_inputs_seed_an_episode_without_overwriting(http):
    resumed = open_trial(http, "second", episode_id="resume-1", inputs={"first": "red"})["trial_id"]
    assert "Output of first: red" in http.get(f"/trials/{resumed}/prompt").json()["prompt"]
    again = open_trial(http, "second", episode_id="resume-1", inputs={"first": "blue"})["trial_id"]
    assert "Output of first: red" in http.get(f"/trials/{again}/prompt").json()["prompt"]
    assert http.post("/tasks/second/trials", json={"episode_id": "e", "inputs": {"first": 1}}).status_code == 422


def test_a_submission_with_close_closes_the_trial(http, served):
    created = open_trial(http)
    trial = created["trial_id"]
    answer = http.post(f"/trials/{trial}/submit", params={"close": "true"}, json={"answer": "5"}).json()
    assert answer["score"] == 1.0 and answer["trial_id"] == trial and answer["closed"] is True
    assert http.get(f"/trials/{trial}/prompt").status_code == 404
    assert not Path(created["workspace"]).exists()
    assert http.delete(f"/trials/{trial}").status_code == 404  # a DELETE after it finds nothing to close
    assert [e.trial_id for e in served.sink.of_kind(EventKind.TRIAL_CLOSED)].count(trial) == 1


def test_a_surrender_with_close_closes_the_trial(http):
    trial = open_trial(http)["trial_id"]
    answer = http.post(f"/trials/{trial}/surrender", params={"close": "true"}).json()
    assert answer["surrendered"] is True and answer["closed"] is True
    assert http.get(f"/trials/{trial}/prompt").status_code == 404


def test_without_close_a_finished_trial_stays_open_until_deleted(http):
    trial = open_trial(http)["trial_id"]
    answer = http.post(f"/trials/{trial}/submit", json={"answer": "5"}).json()
    assert "closed" not in answer
    assert http.get(f"/trials/{trial}/prompt").status_code == 200
    assert http.post(f"/trials/{trial}/submit", json={"answer": "5"}).status_code == 409
    assert http.delete(f"/trials/{trial}").status_code == 200


def test_the_task_routes_ignore_close(http):
    answer = http.post("/tasks/add/submit", params={"close": "true"}, json={"answer": "5"}).json()
    assert "closed" not in answer
    assert http.get("/tasks/add/prompt").status_code == 200
