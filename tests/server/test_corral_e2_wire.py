"""Our server driven exactly as Corral E2's client, tool-calling agent and runner drive a server.

`corral_e2.py` holds their behaviour, rewritten from corral-facts: the router's methods, the
agent's conversion of `/tools` (tools lacking `name`/`description`/`arguments` are dropped as
malformed), and the keys their code reads from completion states, snapshots and statuses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest

from corral_core.env import load_suite
from corral_core.server import EmbeddedServer, create_app
from corral_core.tools import ToolVerbosity
from tests.server.corral_e2 import CorralRouterE2, convert_to_openai_tool_format, report_entry
from tests.timeouts import HTTP_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
LEVELS = [level.value for level in ToolVerbosity]
# Keys Corral E2's code reads from a trial state (E2a TaskState and E2b CorralState snapshot).
STATE_KEYS = {"task_id", "task_prompt", "trial_id", "messages", "tool_calls", "is_attempted", "score",
              "submitted_answer", "feedback", "surrendered", "env_start_time", "env_end_time", "started_at",
              "ended_at", "duration", "status", "workspace", "artifacts", "trial_counter", "tool_statistics"}
STATS_KEYS = {"total_calls", "successful_calls", "failed_calls", "tools_used", "error_types", "tool_calls"}
CALL_KEYS = {"tool_name", "arguments", "result", "status", "error_message", "duration", "timestamp"}


@pytest.fixture
def url() -> Iterator[str]:
    suite = load_suite(ROOT / "sample_tasks" / "samplemath.yaml")
    server = EmbeddedServer(create_app(suite))
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def router(url: str) -> Iterator[CorralRouterE2]:
    client = CorralRouterE2(url)
    yield client
    client.close()


@pytest.mark.parametrize("level", LEVELS)
def test_the_tool_calling_agent_gets_every_tool_at_every_level(router: CorralRouterE2, level: str) -> None:
    listing = router.get_available_tools_for_task("power", level)
    skipped: list[Any] = []
    tools = convert_to_openai_tool_format(listing, skipped)
    assert skipped == []
    assert [t["function"]["name"] for t in tools] == ["calculator", "round_number"]
    calculator, round_number = (t["function"] for t in tools)
    assert calculator["parameters"]["required"] == ["operation", "a", "b"]
    assert calculator["parameters"]["properties"]["a"]["type"] == "number"
    assert round_number["parameters"]["required"] == ["value"]
    digits = {"type": "integer", "description": "How many digits to keep after the decimal point.", "default": 0}
    if level == "minimal":  # Corral's minimal arguments are {name, type, required}
        digits = {"type": "integer", "description": ""}
    elif level in ("syntactical", "comprehensive", "full"):  # untagged: the derived rule writes the default out
        digits["description"] += " Defaults to 0."
    assert round_number["parameters"]["properties"]["digits"] == digits
    # the same entries also carry the OpenAI format, with the same texts
    for entry, converted in zip(listing["tools"], tools, strict=True):
        assert entry["type"] == "function"
        assert entry["function"]["description"] == converted["function"]["description"] == entry["description"]
        assert entry["function"]["parameters"]["required"] == converted["function"]["parameters"]["required"]


def test_argument_lists_have_corrals_shape(router: CorralRouterE2) -> None:
    minimal = router.get_available_tools_for_task("add", "minimal")["tools"][1]["arguments"]
    assert minimal == [{"name": "value", "type": "float", "required": True},
                       {"name": "digits", "type": "int", "required": False}]
    brief = router.get_available_tools_for_task("add", "brief")["tools"][0]
    assert brief["description"] == "Compute `a <operation> b` for two numbers and return the result."
    assert brief["arguments"][0] == {"name": "operation", "type": "str", "description": "The operation to apply.",
                                     "required": True, "default": None, "choices": None}


def test_the_react_agent_reads_the_guide(router: CorralRouterE2) -> None:
    guide = router.get_task_guide("power")  # the router's default verbosity: brief
    assert guide.startswith("Task: What is 2 raised to the power of 10?\n\nAvailable Tools:\nTool: calculator\n")
    assert "Description: Compute `a <operation> b` for two numbers and return the result.\n" in guide
    assert "- operation (str, required): The operation to apply.\n" in guide
    assert "**" not in guide.split("How to use tools:")[0]  # the power syntax is a syntactical-level detail
    assert '"**"' in router.get_tools_guide("power", "syntactical")


def test_a_trial_as_corrals_runner_runs_it(router: CorralRouterE2) -> None:
    configured = router.configure_additional_apps("compound")
    assert configured["task_id"] == "compound" and configured["trial_id"] == "0" and configured["status"]
    first = router.execute_tool("compound", "calculator", {"operation": "+", "a": 3, "b": 4})
    assert first.success and first.result["status"] == "success" and first.result["result"] == "7.0"
    assert set(first.result) >= CALL_KEYS
    bad = router.execute_tool("compound", "calculator", {"operation": "*", "a": 7})
    assert bad.success  # HTTP 200: the failure is in the ToolCall, as Corral's agent expects
    assert bad.result["status"] == "invalid_args" and "Missing required argument" in bad.result["error_message"]
    unknown = router.execute_tool("compound", "abacus", {})
    assert unknown.result["status"] == "invalid_tool" and "abacus" in unknown.result["error_message"]
    router.execute_tool("compound", "calculator", {"operation": "*", "a": 7, "b": 5})

    result = router.submit_answer("compound", "35")
    assert result.trial_id == result.state["trial_id"] == "0"  # the finished trial (Corral said "1")
    assert result.score == pytest.approx(1.0) and result.success
    assert set(result.state) >= STATE_KEYS
    state = result.state
    assert state["task_prompt"] == "What is (3 + 4) * 5?"
    assert state["is_attempted"] and state["submitted_answer"] == "35" and not state["surrendered"]
    assert state["messages"] == [] and state["feedback"] == state["explanation"]
    assert [c["tool_name"] for c in state["tool_calls"]] == ["calculator", "calculator", "abacus", "calculator"]
    assert state["env_start_time"] == state["started_at"] and state["ended_at"] and state["duration"] >= 0
    entry = report_entry(result)
    assert entry["total_calls"] == 4 and entry["successful_calls"] == 2 and entry["failed_calls"] == 2
    assert entry["tools_used"] == ["abacus", "calculator"]
    assert {k: entry["error_types"][k] for k in ("invalid_tool", "invalid_args", "execution_error")} == {
        "invalid_tool": 1, "invalid_args": 1, "execution_error": 0}
    assert entry["tool_execution_duration"] >= 0

    archived = router.get_trial_state("compound", "0")
    assert set(archived) >= STATE_KEYS and archived["score"] == pytest.approx(1.0)
    assert router.get_last_score("compound") == {"task_id": "compound", "trial_id": "0", "score": pytest.approx(1.0)}
    status = router.get_task_status("compound")  # the next trial started implicitly
    assert status["is_attempted"] is False and status["score"] is None and status["submitted_answer"] is None
    assert set(status["tool_statistics"]) == STATS_KEYS
    assert status["tool_statistics"]["error_types"] == {
        "invalid_tool": 0, "invalid_args": 0, "execution_error": 0, "blocked": 0, "rejected": 0, "timeout": 0}


def test_surrender_is_attempted_with_score_zero_and_a_null_state_score(router: CorralRouterE2) -> None:
    result = router.surrender_task("add")
    assert result.surrendered and result.score == 0.0 and not result.success
    assert result.state["is_attempted"] is True and result.state["surrendered"] is True
    assert result.state["score"] is None and result.state["submitted_answer"] is None  # as Corral's state


def test_suite_routes_and_trial_list(router: CorralRouterE2, url: str) -> None:
    assert router.get_available_tasks() == ["add", "multiply", "divide", "power", "compound"]
    assert router.supports_dependency_chain() is False
    router.submit_answer("divide", "12")
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
        trials = http.get("/tasks/divide/trials").json()["trials"]
        assert list(trials) == ["0"] and set(trials["0"]) >= STATE_KEYS
        state = http.get("/tasks/divide/state").json()
        assert set(state) >= STATE_KEYS and state["trial_id"] == "1"
        assert state["task_prompt"] == "What is 144 divided by 12?"


def test_an_e2c_client_opens_and_closes_trial_runtimes(url: str) -> None:
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
        created = http.post("/tasks/add/trials", json={"benchmark_run_id": "b1", "episode_id": None}).json()
        rid = created["trial_runtime_id"]
        # absolute (Corral E2c: relative); urljoin(base, mcp_url), as a client joins them, gives the same URL
        assert created["mcp_url"] == f"{url}/trials/{rid}/mcp" and created["task_id"] == "add"
        assert urljoin(url + "/", created["mcp_url"]) == created["mcp_url"]
        tools = http.get(f"/trials/{rid}/tools", params={"verbosity": "brief"}).json()["tools"]
        assert [t["function"]["name"] for t in tools] == ["calculator", "round_number"]
        mcp = http.get(f"/trials/{rid}/tools/mcp").json()
        assert mcp["mcp_schema_sha256"] == hashlib.sha256(json.dumps(mcp["tools"], sort_keys=True).encode()).hexdigest()
        done = http.post(f"/trials/{rid}/submit", json={"answer": "42"}).json()
        assert done["trial_id"] == rid and done["state"]["trial_id"] == rid and done["score"] == 1.0
        assert http.delete(f"/trials/{rid}").json() == {"status": "closed", "trial_id": rid, "trial_runtime_id": rid}
        assert http.delete(f"/trials/{rid}").status_code == 404


def test_unknown_task_is_404_and_lowercase_verbosity_works(router: CorralRouterE2) -> None:
    with pytest.raises(httpx.HTTPStatusError) as info:
        router.get_task_prompt("nope")
    assert info.value.response.status_code == 404
    assert "Task not found" in info.value.response.json()["detail"]
    for level in LEVELS:
        assert router.get_tools_guide("add", level).startswith("Available Tools:\n")
