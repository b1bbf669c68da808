"""MCP as a first-class channel: risk levels as tool annotations, the documentation level a trial was
opened with, an absolute `mcp_url`, the task's prompt as an MCP prompt, and an external MCP tool's
image content passed through to an MCP client."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx

from corral_core.env import load_suite
from corral_core.server import EmbeddedServer, create_app
from corral_core.tools.mcp_tools import _connections, close_all_connections
from tests.server.test_mcp_server import run, text_of, with_session
from tests.timeouts import HTTP_TIMEOUT

TYPED_SERVER = Path(__file__).resolve().parents[1] / "compat" / "data" / "typed_mcp_server.py"


def test_tools_list_carries_risk_annotations_and_the_level(served_factory: Any) -> None:
    served = served_factory()

    async def work(session: Any) -> Any:
        return await session.list_tools()

    listed = run(lambda: with_session(f"{served.url}/tasks/add/mcp?verbosity=brief", work))
    tools = {tool.name: tool for tool in listed.tools}
    assert tools["add"].annotations.destructive_hint is False and tools["add"].annotations.read_only_hint is None
    for risky in ("touch_confirm", "touch_blocked"):
        assert tools[risky].annotations.destructive_hint is True and tools[risky].annotations.read_only_hint is False
    assert {name: tool.meta["corral-tui/risk"] for name, tool in tools.items() if name.startswith("touch")} == {
        "touch_confirm": "confirm", "touch_blocked": "blocked"}
    assert all(tool.meta["corral-tui/verbosity"] == "brief" for tool in listed.tools)
    assert listed.meta["corral-tui/verbosity"] == "brief"


def test_a_trial_opened_at_a_level_lists_its_tools_at_that_level_from_an_absolute_mcp_url(
        served_factory: Any) -> None:
    served = served_factory()
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        created = http.post("/tasks/add/trials", json={"verbosity": "MINIMAL"}).json()
        plain = http.post("/tasks/add/trials", json={}).json()
        assert http.post("/tasks/add/trials", json={"verbosity": "loud"}).status_code == 422
    trial_id = created["trial_id"]
    assert created["mcp_url"] == f"{served.url}/trials/{trial_id}/mcp?verbosity=minimal"  # absolute
    assert plain["mcp_url"] == f"{served.url}/trials/{plain['trial_id']}/mcp"

    async def work(session: Any) -> Any:
        return await session.list_tools()

    for url in (created["mcp_url"], f"{served.url}/trials/{trial_id}/mcp"):  # the trial's own level either way
        listed = run(lambda url=url: with_session(url, work))
        add = next(tool for tool in listed.tools if tool.name == "add")
        assert add.input_schema["properties"]["a"] == {"type": "integer"}  # minimal: names and types only
        assert listed.meta["corral-tui/verbosity"] == "minimal"
    full = run(lambda: with_session(f"{served.url}/trials/{plain['trial_id']}/mcp", work))
    assert next(t for t in full.tools if t.name == "add").input_schema["properties"]["a"]["description"]
    assert served.client.open_trial("add").mcp_url.startswith(f"{served.url}/trials/tr_")  # our client reads it


def test_the_task_prompt_is_an_mcp_prompt(served_factory: Any) -> None:
    served = served_factory()

    async def work(session: Any) -> Any:
        return await session.list_prompts(), await session.get_prompt("task")

    prompts, prompt = run(lambda: with_session(f"{served.url}/tasks/add/mcp", work))
    assert [p.name for p in prompts.prompts] == ["task"]
    assert [(m.role, m.content.text) for m in prompt.messages] == [("user", "What is 2 + 3?")]


def test_an_external_tools_image_reaches_an_mcp_client_as_an_image(tmp_path: Path) -> None:
    path = tmp_path / "typed.yaml"
    path.write_text(f"""\
name: typed
tools:
  - {{name: typed, type: mcp, command: [{sys.executable!r}, {str(TYPED_SERVER)!r}], tools: [picture]}}
tasks:
  - {{id: look, prompt: "Look at the picture.", answer: "a pixel"}}
""")
    server = EmbeddedServer(create_app(load_suite(path)))
    url = server.start()
    try:
        async def work(session: Any) -> Any:
            return await session.call_tool("picture", {})

        result = run(lambda: with_session(f"{url}/tasks/look/mcp", work))
        with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
            rest = http.post("/tasks/look/tools/execute", json={"tool_name": "picture", "arguments": {}}).json()
    finally:
        server.stop()
        threads = [c._thread for c in _connections.values()]
        close_all_connections()
        assert not any(t is not None and t.is_alive() for t in threads)
    assert result.is_error is False
    [block] = result.content
    assert block.type == "image" and block.mime_type == "image/png" and len(block.data) == 88  # not a placeholder
    assert text_of(result) == ""
    assert rest["result"]["content"][0]["type"] == "image"  # REST carries the blocks too
    assert rest["result"]["result"].startswith("[image: image/png")  # the text a text-only agent reads
