"""CorralRouter and TrialClient against a real server: Corral's method names and return types."""

from __future__ import annotations

import socket

import pytest

from corral_core.client import (
    Conflict,
    ConnectionFailed,
    CorralHTTPError,
    CorralRouter,
    NotFound,
    TaskTrialResult,
    ToolResponse,
    TrialClient,
    ValidationFailed,
)
from corral_core.server import QueueGate
from tests.timeouts import HTTP_TIMEOUT


@pytest.fixture
def router(served_factory):
    return served_factory().client


def test_task_methods(router):
    assert router.get_available_tasks() == ["add", "echo", "first", "second"]
    assert router.supports_dependency_chain() is True
    assert router.get_dependency_graph()["second"] == ["first"]
    assert router.get_task_prompt("add") == "What is 2 + 3?"
    assert router.get_task_guide("add").startswith("Task: What is 2 + 3?")
    assert "Tool: add" in router.get_tools_guide("add", "DETAILED")
    tools = router.get_available_tools_for_task("add", "minimal")
    assert set(tools) == {"tools"} and tools["tools"][0]["function"]["name"] == "add"
    assert router.configure_additional_apps("add", timeout=HTTP_TIMEOUT)["trial_id"] == "0"
    assert router.get_task_status("add")["is_attempted"] is False
    assert router.health()["status"] == "ok"


def test_execute_tool_reports_tool_failures_as_unsuccessful(router):
    ok = router.execute_tool("add", "add", {"a": 2, "b": 3})
    assert isinstance(ok, ToolResponse)
    assert ok.success is True and ok.result == "5" and ok.error is None
    assert ok.tool_call["status"] == "success"
    bad = router.execute_tool("add", "add", {"a": 2})
    assert bad.success is False and bad.result is None and "b" in bad.error
    assert bad.tool_call["status"] == "invalid_args"
    missing_task = router.execute_tool("nope", "add", {})
    assert missing_task.success is False and missing_task.tool_call is None and "404" in missing_task.error


def test_submit_and_surrender_results(router):
    router.execute_tool("add", "add", {"a": 2, "b": 3})
    result = router.submit_answer("add", "5")
    assert isinstance(result, TaskTrialResult)
    assert result.trial_id == "0" and result.score == 1.0 and result.success is True
    assert result.tool_statistics["total_calls"] == 1 and result.tool_execution_duration >= 0
    assert result.explanation and result.state["submitted_answer"] == "5"
    assert router.get_last_score("add") == {"task_id": "add", "trial_id": "0", "score": 1.0}
    assert router.get_trial_state("add", "0")["score"] == 1.0
    assert list(router.get_trials("add")) == ["0"]
    gave_up = router.surrender_task("add")
    assert gave_up.surrendered is True and gave_up.success is False and gave_up.trial_id == "1"


def test_typed_errors(router):
    with pytest.raises(NotFound) as caught:
        router.get_task_prompt("nope")
    assert caught.value.status_code == 404 and "nope" in str(caught.value)
    with pytest.raises(ValidationFailed):
        router.get_task_guide("add", "loud")
    with pytest.raises(NotFound):
        router.get_last_score("echo")
    with pytest.raises(Conflict):
        router.decide_approval("ap_1", True)  # the default server decides by policy
    assert issubclass(NotFound, CorralHTTPError)


def test_default_verbosity_and_set_verbosity(served_factory):
    served = served_factory()
    router = CorralRouter(served.url)  # default "brief"
    try:
        brief = router.get_tools_guide("add")
        assert brief == router.get_tools_guide("add", "brief")
        router.set_verbosity("minimal")
        assert router.get_tools_guide("add") == router.get_tools_guide("add", "minimal")
        router.set_verbosity(None)  # the server's default, full
        assert router.get_tools_guide("add") == router.get_tools_guide("add", "full")
    finally:
        router.close()


def test_trial_client(router):
    trial = router.open_trial("add", benchmark_id="b", arm="x", trial_index=0)
    assert isinstance(trial, TrialClient) and trial.trial_id.startswith("tr_") and trial.task_id == "add"
    assert trial.get_task_prompt("add") == "What is 2 + 3?"
    assert trial.get_available_tools_for_task("add")["tools"]
    assert trial.execute_tool("add", "add", {"a": 1, "b": 4}).result == "5"
    assert trial.get_task_status("add")["trial_id"] == trial.trial_id
    with pytest.raises(ValueError, match="belongs to task 'add'"):
        trial.get_task_prompt("echo")
    result = trial.submit_answer("add", "5")
    assert result.trial_id == trial.trial_id and result.score == 1.0
    with pytest.raises(Conflict):
        trial.submit_answer("add", "5")
    assert trial.get_last_score("add")["trial_id"] == trial.trial_id
    assert trial.get_trial_state("add")["status"] == "scored"
    # the router's own task-route trial is untouched
    assert router.get_task_status("add")["tool_statistics"]["total_calls"] == 0
    trial.close()
    trial.close()  # idempotent
    with pytest.raises(NotFound):
        router.close_trial(trial.trial_id)


def test_trial_client_context_manager_and_episode(router):
    with router.open_trial("first", episode_id="e1") as first:
        first.submit_answer("first", "red")
    with router.open_trial("second", episode_id="e1") as second:
        assert "Output of first: red" in second.get_task_prompt("second")
    assert router.close_episode("e1")["status"] == "closed"
    with pytest.raises(NotFound):
        router.close_episode("e1")


def test_approvals_through_the_client(served_factory):
    served = served_factory(gate=QueueGate(timeout=5))
    assert served.client.list_approvals() == []
    with pytest.raises(NotFound):
        served.client.decide_approval("ap_missing", True)


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_server():
    with CorralRouter(f"http://127.0.0.1:{_dead_port()}", timeout=2) as router:
        response = router.execute_tool("add", "add", {})
        assert response.success is False and "cannot reach" in response.error
        assert router.supports_dependency_chain() is False
        with pytest.raises(ConnectionFailed) as caught:
            router.get_available_tasks()
        assert caught.value.status_code is None


def test_configure_passes_a_timeout_only_when_given(router, monkeypatch):
    seen: list[dict] = []
    original = router._transport.http.request

    def spy(method, url, **kwargs):
        seen.append(kwargs)
        return original(method, url, **kwargs)

    monkeypatch.setattr(router._transport.http, "request", spy)
    router.configure_additional_apps("add")
    router.configure_additional_apps("add", timeout=7.5)
    assert "timeout" not in seen[0]
    assert seen[1]["timeout"] == 7.5


def test_task_trial_result_success_rule():
    assert TaskTrialResult("t", "0", 0.5).success is True  # partial credit counts (score > 0)
    assert TaskTrialResult("t", "0", 0.0).success is False
    assert TaskTrialResult("t", "0", 1.0, surrendered=True).success is False
    assert TaskTrialResult("t", "0", 1.0, error_message="Agent Error").success is False


def test_trials_of_a_task_fetch_its_tools_once_per_verbosity_and_get_the_prompt_with_the_trial(router, monkeypatch):
    paths: list[tuple[str, str]] = []
    send = router._transport.request

    def counted(method, path, **kwargs):
        paths.append((method, path.rsplit("/", 1)[-1]))
        return send(method, path, **kwargs)

    monkeypatch.setattr(router._transport, "request", counted)
    first, second = router.open_trial("add"), router.open_trial("add")
    assert first.get_task_prompt("add") == second.get_task_prompt("add") == "What is 2 + 3?"
    assert ("GET", "prompt") not in paths  # the prompt came with each trial
    assert first.get_task_prompt("add") == "What is 2 + 3?" and paths[-1] == ("GET", "prompt")  # a later ask asks
    listing = first.get_available_tools_for_task("add", "minimal")
    listing["tools"][0]["function"]["name"] = "changed by the caller"
    again = second.get_available_tools_for_task("add", "MINIMAL")
    assert again["tools"][0]["function"]["name"] == "add"  # each trial gets its own copy
    assert paths.count(("GET", "tools")) == 1
    assert second.get_available_tools_for_task("add", "full") != again
    assert paths.count(("GET", "tools")) == 2  # another verbosity is another listing


def test_consecutive_requests_reuse_one_keep_alive_connection(router):
    from corral_core.http_lanes import LaneTransport

    lanes = router._transport.http._transport
    assert isinstance(lanes, LaneTransport)  # a connection per request in flight, not a pool scanned per request
    for _ in range(5):
        assert router.health()["status"] == "ok"
    router.execute_tool("add", "add", {"a": 2, "b": 3})
    assert lanes.lanes == 1
