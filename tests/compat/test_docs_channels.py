"""The manipulation is exact: at each of the 9 levels, the 4 channels an agent can read show the same
documentation of a tag-rich environment (tag_rich.py), levels are monotone, and `minimal` carries
no argument text, enum or default anywhere.

Channels: the text guide (`/tools/guide`, ReAct), the E2 keys of `/tools`, the OpenAI `parameters`
of `/tools` (ToolCalling), MCP `tools/list` (any MCP client). Then the same ToolCallingAgent with the
same scripted model runs against our server and a Corral-shaped server serving the same environment
(corral_e2_docs.py): the request bodies the model receives are identical at every level.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from corral_core.agents import ToolCallingAgent, run_trial
from corral_core.client import CorralRouter
from corral_core.env.prebuilt import EnvironmentSuite
from corral_core.server import EmbeddedServer, create_app
from tests.compat import tag_rich
from tests.compat.corral_e2_docs import LEVELS, create_corral_docs_app
from tests.compat.tag_rich import environments
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HTTP_TIMEOUT

TASK = "km_to_m"
MARKER = re.compile(r"MK_[A-Z_]+_[a-z]+")
DOC_KEYS = ("description", "enum", "default", "examples")
RECORDED = json.loads((Path(__file__).parent / "data" / "tag_rich_request_tools.json").read_text())
REPLACED_BY_BRIEF = {"MK_BASIC_to"}  # untagged text of an argument that has an [ARGS_BRIEF]: not a tag


@pytest.fixture(scope="module")
def channels() -> Iterator[dict[str, dict[str, Any]]]:
    """level -> {"guide": text, "tools": /tools entries, "mcp": tools/list entries}."""
    server = EmbeddedServer(create_app(EnvironmentSuite(environments(), name="tag_rich")))
    url = server.start()
    try:
        seen: dict[str, dict[str, Any]] = {}
        with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
            for level in LEVELS:
                guide = http.get(f"/tasks/{TASK}/tools/guide", params={"verbosity": level}).json()["prompt"]
                tools = http.get(f"/tasks/{TASK}/tools", params={"verbosity": level}).json()["tools"]
                seen[level] = {"guide": guide, "tools": tools}

        async def list_all() -> None:
            for level in LEVELS:
                async with httpx2.AsyncClient(timeout=httpx2.Timeout(60)) as client, \
                        streamable_http_client(f"{url}/tasks/{TASK}/mcp?verbosity={level}", http_client=client) \
                        as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
                    seen[level]["mcp"] = [tool.model_dump(by_alias=True, exclude_none=True) for tool in listed.tools]

        anyio.run(list_all)
        yield seen
    finally:
        server.stop()


def _doc_keys_anywhere(schema: Any) -> list[str]:
    """Documenting keywords anywhere in a schema (property names excepted)."""
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in DOC_KEYS:
                found.append(key)
            if key == "properties" and isinstance(value, dict):
                for member in value.values():
                    found += _doc_keys_anywhere(member)
            else:
                found += _doc_keys_anywhere(value)
    elif isinstance(schema, list):
        for member in schema:
            found += _doc_keys_anywhere(member)
    return found


def _guide_block(entry: dict[str, Any]) -> str:
    """The guide block the E2 keys of one tool call for (Corral's format, choices stated once)."""
    lines = [f"Tool: {entry['name']}", f"Description: {entry['description']}", "Arguments:"]
    for argument in entry["arguments"]:
        needed = "required" if argument["required"] else f"optional, default: {argument['default']}"
        text = argument["description"]
        if argument["choices"] and "(choices:" not in text:
            text = f"{text} (choices: {json.dumps(argument['choices'])})".strip()
        lines.append(f"- {argument['name']} ({argument['type']}, {needed}): {text}")
    return "\n".join(lines)


@pytest.mark.parametrize("level", LEVELS)
def test_the_four_channels_show_the_same_documentation(channels: dict[str, dict[str, Any]], level: str) -> None:
    seen = channels[level]
    mcp = {tool["name"]: tool for tool in seen["mcp"]}
    assert [entry["name"] for entry in seen["tools"]] == list(mcp) == ["convert_units", "tag_samples", "pick_unit"]
    for entry in seen["tools"]:
        function = entry["function"]
        # the description: the same text in E2 keys, the OpenAI function, MCP and the guide
        assert function["description"] == entry["description"] == mcp[entry["name"]]["description"]
        # the schema: MCP's inputSchema is the OpenAI parameters, and both say what the E2 keys say
        assert mcp[entry["name"]]["inputSchema"] == function["parameters"]
        properties = function["parameters"]["properties"]
        assert list(properties) == [a["name"] for a in entry["arguments"]]
        assert function["parameters"]["required"] == [a["name"] for a in entry["arguments"] if a["required"]]
        for argument in entry["arguments"]:
            prop = properties[argument["name"]]
            if level == "minimal":
                assert set(argument) == {"name", "type", "required"}
                assert _doc_keys_anywhere(prop) == []
                continue
            assert prop.get("description", "") == argument["description"]
            assert prop.get("enum") == argument["choices"]
            assert prop.get("default") == argument["default"]
        if level == "minimal":
            names = ", ".join(a["name"] for a in entry["arguments"])
            assert f"**{entry['name']}**: {entry['description']}\nArguments: {names}" in seen["guide"]
        else:
            assert _guide_block(entry) in seen["guide"]
    if level == "minimal":
        assert "(choices:" not in seen["guide"]
        assert not {m for m in MARKER.findall(seen["guide"]) if not m.endswith(("_convert", "_tag", "_pick"))}


def _visible(seen: dict[str, Any], channel: str) -> set[str]:
    if channel == "guide":
        return set(MARKER.findall(seen["guide"]))
    if channel == "e2":
        return set(MARKER.findall(json.dumps([{k: e[k] for k in ("description", "arguments")} for e in seen["tools"]])))
    if channel == "schema":
        return set(MARKER.findall(json.dumps([e["function"] for e in seen["tools"]])))
    return set(MARKER.findall(json.dumps(seen["mcp"])))


@pytest.mark.parametrize("channel", ["guide", "e2", "schema", "mcp"])
def test_levels_are_monotone_and_every_channel_shows_the_same_tags(channels: dict[str, dict[str, Any]],
                                                                   channel: str) -> None:
    shown = [_visible(channels[level], channel) for level in LEVELS]
    for lower, higher, name in zip(shown, shown[1:], LEVELS[1:], strict=False):
        tags_lower = lower - REPLACED_BY_BRIEF
        assert tags_lower <= higher, f"{channel}: {sorted(tags_lower - higher)} visible below {name} but not at it"
    # Corral's rule, kept: an argument's [BRIEF] replaces its untagged text from brief to comprehensive
    assert [level for level, seen in zip(LEVELS, shown, strict=True) if seen >= REPLACED_BY_BRIEF] == ["full"]
    assert shown == [_visible(channels[level], "e2") for level in LEVELS]
    every = set(MARKER.findall(inspect.getsource(tag_rich)))
    assert shown[-1] == every  # full shows every tag of every tool and argument
    assert "MK_ARGS_EXAMPLES_value" not in shown[LEVELS.index("syntactical")]
    assert "MK_ARGS_EXAMPLES_value" in shown[LEVELS.index("comprehensive")]
    assert "MK_PROCEDURAL_digits" in shown[-1] and "MK_PROCEDURAL_digits" not in shown[-2]


SCRIPT = [
    FakeReply.tool_call("convert_units", {"value": 1, "from_unit": "km", "to_unit": "m"}, call_id="call_1"),
    FakeReply.text("Final Answer: 1000.0 m"),
]


def _bodies(url: str, level: str, key_env: str) -> tuple[list[dict[str, Any]], float | None]:
    with FakeOpenAI(list(SCRIPT)) as fake, CorralRouter(url) as router:
        agent = ToolCallingAgent(model="openai/fake-model", api_endpoint=fake.base_url, api_key_env=key_env,
                                 timeout=HTTP_TIMEOUT, max_retries=0)
        outcome = run_trial(agent, router, TASK, verbosity=level)
        return fake.requests, outcome.score


@pytest.mark.parametrize("level", LEVELS)
def test_the_model_gets_the_same_request_from_our_server_and_a_corral_shaped_one(
        level: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_TEST_DOCS_KEY", "sk-test-docs")
    ours = EmbeddedServer(create_app(EnvironmentSuite(environments(), name="tag_rich")))
    corral = EmbeddedServer(create_corral_docs_app(environments()))
    try:
        our_bodies, our_score = _bodies(ours.start(), level, "CORRAL_TEST_DOCS_KEY")
        corral_bodies, corral_score = _bodies(corral.start(), level, "CORRAL_TEST_DOCS_KEY")
    finally:
        ours.stop()
        corral.stop()
    assert len(our_bodies) == len(corral_bodies) == 2
    assert json.dumps(our_bodies, sort_keys=False) == json.dumps(corral_bodies, sort_keys=False)
    assert our_score == corral_score == 1.0
    # the recording: what the model is sent as `tools` at each level (data/tag_rich_request_tools.json)
    assert our_bodies[0]["tools"] == RECORDED[level]
    tools = {tool["function"]["name"]: tool["function"] for tool in our_bodies[0]["tools"]}
    to_unit = tools["convert_units"]["parameters"]["properties"]["to_unit"]
    assert ("enum" in to_unit) == (level != "minimal")
