"""Corral E2's value semantics on our server: what /submit accepts and scores, integers that stay
integers in the text an agent reads (REST and MCP), a body without `arguments`, a surrendered
trial's state, and 422 bodies in FastAPI's array shape. README "Coming from Corral" lists what
still differs, with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from corral_core.env import Suite, TaskSpec
from corral_core.server import EmbeddedServer, create_app
from corral_core.tools import tool
from tests.server.test_mcp_server import text_of, with_session
from tests.timeouts import HTTP_TIMEOUT


@tool
def total(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


TASKS = [
    TaskSpec(id="sum", prompt="What is 30 + 38?", answer=68, scoring={"type": "numeric"}),
    TaskSpec(id="yes", prompt="Is water wet? Answer true or false.", answer="true", scoring={"type": "exact"}),
    TaskSpec(id="nothing", prompt="Say nothing.", answer="", scoring={"type": "exact"}),
]


@pytest.fixture
def served() -> Iterator[tuple[str, httpx.Client]]:
    server = EmbeddedServer(create_app(Suite("values", TASKS, [total])))
    url = server.start()
    try:
        with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
            yield url, http
    finally:
        server.stop()


@pytest.mark.parametrize(("task", "answer", "score"), [
    ("sum", 68, 1.0), ("sum", 68.0, 1.0), ("sum", "68", 1.0), ("sum", 67, 0.0),
    ("yes", True, 1.0), ("yes", False, 0.0), ("nothing", None, 1.0),
])
def test_submit_takes_a_string_number_boolean_or_null_and_scores_it(
        served: tuple[str, httpx.Client], task: str, answer: Any, score: float) -> None:
    _, http = served
    done = http.post(f"/tasks/{task}/submit", json={"answer": answer})
    assert done.status_code == 200, done.text
    assert done.json()["score"] == score
    assert done.json()["state"]["submitted_answer"] == answer  # kept as sent, as Corral keeps it


@pytest.mark.parametrize("body", [{"answer": [68]}, {"answer": {"value": 68}}, {}, {"text": "68"}])
def test_a_list_or_object_answer_or_none_at_all_is_a_clear_422(served: tuple[str, httpx.Client],
                                                                body: dict[str, Any]) -> None:
    _, http = served
    refused = http.post("/tasks/sum/submit", json=body)
    assert refused.status_code == 422  # Corral: 500 (its scorer broke on a list; KeyError without answer)
    detail = refused.json()["detail"]
    assert isinstance(detail, list) and detail[0]["loc"][:2] == ["body", "answer"]
    assert http.get("/tasks/sum/status").json()["trial_id"] == "0"  # nothing was scored


def test_integer_arguments_stay_integers_in_the_result_over_rest_and_mcp(served: tuple[str, httpx.Client]) -> None:
    url, http = served
    call = http.post("/tasks/sum/tools/execute", json={"tool_name": "total", "arguments": {"a": 30, "b": 38}})
    assert call.json()["result"]["result"] == "68"  # "68.0" before: integers were made floats
    half = http.post("/tasks/sum/tools/execute", json={"tool_name": "total", "arguments": {"a": 30.5, "b": 38}})
    assert half.json()["result"]["result"] == "68.5"

    async def work(session: Any) -> Any:
        return await session.call_tool("total", {"a": 30, "b": 38})

    assert text_of(anyio.run(lambda: with_session(f"{url}/tasks/sum/mcp", work))) == "68"


def test_a_body_without_arguments_is_a_422_as_in_corral(served: tuple[str, httpx.Client]) -> None:
    _, http = served
    refused = http.post("/tasks/sum/tools/execute", json={"tool_name": "total"})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"] == ["body", "arguments"]
    assert http.get("/tasks/sum/status").json()["tool_statistics"]["total_calls"] == 0


def test_a_surrendered_trial_keeps_a_null_score_in_its_state(served: tuple[str, httpx.Client]) -> None:
    _, http = served
    done = http.post("/tasks/sum/surrender").json()
    assert done["score"] == 0.0 and done["surrendered"] is True
    assert done["state"]["score"] is None  # Corral's state: no score was set
    assert http.get("/tasks/sum/last_score").json()["score"] is None


@pytest.mark.parametrize("path", ["/tasks/sum/tools", "/tasks/sum/guide", "/tasks/sum/tools/guide",
                                  "/tasks/sum/tools/mcp"])
def test_an_unknown_verbosity_is_a_422_in_fastapis_array_shape(served: tuple[str, httpx.Client], path: str) -> None:
    _, http = served
    refused = http.get(path, params={"verbosity": "loud"})
    assert refused.status_code == 422
    [error] = refused.json()["detail"]
    assert error["loc"] == ["query", "verbosity"] and error["input"] == "loud"
    assert "minimal" in error["msg"] and "comprehensive" in error["msg"]


@pytest.mark.parametrize(("arguments", "status", "shown"), [
    # rows of README "Coming from Corral" (docs/documentation-levels.md) where we keep our outcome, with its reason
    ({"a": "30", "b": 38}, "success", "68"),  # Corral: the tool ran with the string -> execution_error
    ({"a": True, "b": 38}, "invalid_args", "Invalid type for argument a. Expected number"),  # Corral: passed on
    ({"a": 30, "b": 38, "c": 1}, "invalid_args", "Unknown argument: c. Valid arguments: a, b"),  # Corral: raised
    ({"a": 30}, "invalid_args", "Missing required argument: b"),  # as Corral
])
def test_validation_outcomes(served: tuple[str, httpx.Client], arguments: dict[str, Any], status: str,
                             shown: str) -> None:
    _, http = served
    call = http.post("/tasks/sum/tools/execute", json={"tool_name": "total", "arguments": arguments}).json()["result"]
    assert call["status"] == status
    assert (call["result"] if status == "success" else call["error_message"]) == shown
