"""MCP Streamable HTTP at /tasks/{id}/mcp and /trials/{id}/mcp, driven by the official SDK's clients.

`ClientSession` over `streamable_http_client` does the initialize handshake, as Claude Code and
other 2025-era clients do; `Client(url)` negotiates the newest protocol. Risk levels and auth are
the REST API's: a blocked tool never runs, a confirm tool waits for the server's ApprovalGate, and
a server with a token refuses MCP requests without it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from corral_core.events import EventKind
from corral_core.server import QueueGate


def run(coroutine: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(coroutine)


async def with_session(url: str, work: Callable[[ClientSession], Awaitable[Any]], token: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60)) as http, \
            streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await work(session)


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def test_list_and_call_tools_on_a_task(served_factory: Any) -> None:
    served = served_factory()

    async def work(session: ClientSession) -> tuple[Any, Any, Any]:
        listed = await session.list_tools()
        added = await session.call_tool("add", {"a": 2, "b": 3})
        bad = await session.call_tool("add", {"a": 2})
        return listed, added, bad

    assert served.client.mcp_endpoint("add") == f"{served.url}/tasks/add/mcp"
    listed, added, bad = run(lambda: with_session(served.client.mcp_endpoint("add"), work))
    names = [t.name for t in listed.tools]
    assert names == ["add", "echo", "explode", "slow", "touch_confirm", "touch_blocked"]
    add_tool = listed.tools[0]
    assert add_tool.description == "Add two integers."
    assert add_tool.input_schema["required"] == ["a", "b"]
    assert add_tool.input_schema["properties"]["a"]["type"] == "integer"
    assert added.is_error is False and text_of(added) == "5"
    assert bad.is_error is True and "Missing required argument" in text_of(bad)
    # the calls are the task's: recorded in its current trial and reported as events
    status = served.client.get_task_status("add")
    assert status["tool_statistics"]["total_calls"] == 2
    executed = served.sink.of_kind(EventKind.TOOL_CALL_EXECUTED)
    assert [e.data["status"] for e in executed][-2:] == ["success", "invalid_args"]


def test_a_blocked_tool_is_refused_and_never_runs(served_factory: Any, tmp_path: Path) -> None:
    served = served_factory()
    target = tmp_path / "blocked.txt"
    trial = served.client.open_trial("echo")

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("touch_blocked", {"path": str(target)})

    assert trial.mcp_url == f"{served.url}/trials/{trial.trial_id}/mcp"  # from the creation's mcp_url
    result = run(lambda: with_session(trial.mcp_url, work))
    assert result.is_error is True and "blocked" in text_of(result)
    assert not target.exists()
    calls = trial.get_task_status("echo")["tool_statistics"]["tool_calls"]
    assert [(c["tool_name"], c["status"]) for c in calls] == [("touch_blocked", "blocked")]
    trial.close()


def test_a_confirm_tool_waits_for_the_approval_gate(served_factory: Any, tmp_path: Path) -> None:
    asked = threading.Event()
    gate = QueueGate(timeout=60, on_request=lambda request: asked.set())
    served = served_factory(gate=gate)
    target = tmp_path / "confirm.txt"
    seen: dict[str, Any] = {}

    def approve() -> None:
        assert asked.wait(60)
        seen["ran_before_approval"] = target.exists()
        with httpx.Client(base_url=served.url) as http:
            pending = http.get("/approvals").json()["approvals"]
            seen["pending"] = pending
            http.post(f"/approvals/{pending[0]['id']}", json={"approved": True, "reason": "looks fine"})

    approver = threading.Thread(target=approve)
    approver.start()

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("touch_confirm", {"path": str(target)})

    result = run(lambda: with_session(f"{served.url}/tasks/echo/mcp", work))
    approver.join(60)
    assert seen["ran_before_approval"] is False
    assert seen["pending"][0]["tool_name"] == "touch_confirm" and seen["pending"][0]["task_id"] == "echo"
    assert result.is_error is False and text_of(result) == "created"
    assert target.read_text() == "touched"
    decided = served.sink.of_kind(EventKind.APPROVAL_DECIDED)[-1]
    assert decided.data["approved"] is True and decided.data["decided_by"] == "remote"


def test_a_rejected_confirm_tool_does_not_run(served_factory: Any, tmp_path: Path) -> None:
    gate = QueueGate(timeout=60)
    gate.on_request = lambda request: threading.Thread(
        target=gate.decide, args=(request.id, False, "user", "not now")).start()
    served = served_factory(gate=gate)
    target = tmp_path / "confirm.txt"

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("touch_confirm", {"path": str(target)})

    result = run(lambda: with_session(f"{served.url}/tasks/echo/mcp", work))
    assert result.is_error is True and "rejected" in text_of(result) and "not now" in text_of(result)
    assert not target.exists()


def test_the_token_guards_mcp_as_it_guards_rest(served_factory: Any) -> None:
    served = served_factory(token="s3cret")
    with httpx.Client(base_url=served.url) as http:
        refused = http.post("/tasks/add/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("echo", {"text": "hi"})

    result = run(lambda: with_session(f"{served.url}/tasks/add/mcp", work, token="s3cret"))
    assert text_of(result) == "hi"


def test_unknown_targets_and_levels(served_factory: Any) -> None:
    served = served_factory()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=served.url, headers=headers) as http:
        assert http.post("/tasks/nope/mcp", json=body).status_code == 404
        assert http.post("/trials/tr_0000000000000000/mcp", json=body).status_code == 404
        assert http.post("/tasks/add/mcp", params={"verbosity": "loud"}, json=body).status_code == 422


def test_verbosity_applies_and_the_newest_protocol_works_too(served_factory: Any) -> None:
    served = served_factory()

    async def newest() -> tuple[Any, Any]:
        async with Client(f"{served.url}/tasks/add/mcp?verbosity=minimal") as client:
            assert client.session.discover_result is not None  # negotiated by discovery, not the handshake
            return await client.list_tools(), await client.call_tool("echo", {"text": "modern"})

    listed, echoed = run(newest)
    add_tool = next(t for t in listed.tools if t.name == "add")
    assert "description" not in add_tool.input_schema["properties"]["a"]  # minimal: no argument texts
    assert text_of(echoed) == "modern"


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Any:
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    assert not leaked, leaked


def test_finish_tools_end_the_trial_on_request(served_factory: Any) -> None:
    served = served_factory()
    plain, finishing = served.client.open_trial("add"), served.client.open_trial("add")
    loser = served.client.open_trial("add")

    async def listed(session: ClientSession) -> list[str]:
        return [t.name for t in (await session.list_tools()).tools]

    async def solve(session: ClientSession) -> tuple[list[str], Any, Any, Any]:
        names = await listed(session)
        wrong = await session.call_tool("submit_answer", {})
        done = await session.call_tool("submit_answer", {"answer": "5"})
        again = await session.call_tool("submit_answer", {"answer": "5"})
        return names, wrong, done, again

    async def give_up(session: ClientSession) -> Any:
        return await session.call_tool("surrender_task", {})

    assert "submit_answer" not in run(lambda: with_session(plain.mcp_url, listed))  # opt-in only
    names, wrong, done, again = run(lambda: with_session(finishing.mcp_url + "?finish=true", solve))
    assert names[-2:] == ["submit_answer", "surrender_task"]
    assert wrong.is_error is True and "answer" in text_of(wrong)
    assert done.is_error is False
    assert json.loads(text_of(done)) == {"score": 1.0, "trial_id": finishing.trial_id, "surrendered": False,
                                         "explanation": json.loads(text_of(done))["explanation"]}
    assert again.is_error is True and "already ended" in text_of(again)
    assert finishing.get_task_status("add")["score"] == 1.0
    surrendered = run(lambda: with_session(loser.mcp_url + "?finish=1", give_up))
    assert json.loads(text_of(surrendered))["surrendered"] is True
    assert loser.get_task_status("add")["is_attempted"] is True
    for trial in (plain, finishing, loser):
        trial.close()
