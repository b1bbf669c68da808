"""External MCP tools are checked against their own input schema with a real JSON Schema validator:
a `$ref` model, minimum/maximum and a pattern refused as `invalid_args` before the call reaches the
server; the model's fields are shown in the guide at the levels that show arguments."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.env import load_suite
from corral_core.tools import tools_guide
from corral_core.tools.mcp_tools import _connections, close_all_connections

SERVER = Path(__file__).resolve().parent / "data" / "typed_mcp_server.py"


@pytest.fixture
def suite(tmp_path: Path) -> Iterator[object]:
    path = tmp_path / "typed.yaml"
    path.write_text(f"""\
name: typed
tools:
  - name: typed
    type: mcp
    command: [{sys.executable!r}, {str(SERVER)!r}]
tasks:
  - {{id: file, prompt: "File a note titled 'x'.", answer: done}}
""")
    yield load_suite(path)
    threads = [c._thread for c in _connections.values()]
    close_all_connections()
    assert not any(t is not None and t.is_alive() for t in threads)


@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("file_note", {"note": {"title": 5}}, "Invalid value for note.title: 5 is not of type 'string'"),
    ("file_note", {"note": {"body": "no title"}}, "Invalid value for note: 'title' is a required property"),
    ("rate", {"stars": 9}, "Invalid value for stars: 9 is greater than the maximum of 5"),
    ("tag", {"code": "ab"}, "Invalid value for code: 'ab' does not match '^[A-Z]{3}$'"),
])
def test_a_call_the_schema_refuses_is_invalid_args_and_never_sent(suite, tool: str, arguments: dict,
                                                                   message: str) -> None:
    env = suite.create_environment("file")
    refused = env.call_tool(tool, arguments)
    assert (refused.status.value, refused.error_message) == ("invalid_args", message)
    assert env.call_tool("calls", {}).result == "0"  # the server never saw it
    assert env.call_tool(tool, _good(tool)).status.value == "success"
    assert env.call_tool("calls", {}).result == "1"


def _good(tool: str) -> dict:
    return {"file_note": {"note": {"title": "x"}}, "rate": {"stars": 4}, "tag": {"code": "ABC"}}[tool]


def test_a_models_fields_show_in_the_guide_from_brief_up(suite) -> None:
    file_note = suite.tools["file_note"]
    assert file_note.to_dict("brief")["arguments"][0]["type"] == "dict"  # was "Any": the $ref was not followed
    brief = tools_guide([file_note], "brief")
    assert ("- note (dict, required): \n"
            "  - title (str, required): The note's title.\n"
            "  - body (str, optional): The text of the note.") in brief
    assert '{"tool_name": "file_note", "arguments": {"note": {}}}' in tools_guide([file_note], "comprehensive")
    assert "title" not in tools_guide([file_note], "minimal")
    parameters = file_note.to_openai("minimal")["function"]["parameters"]
    assert parameters["$defs"]["Note"]["properties"]["title"] == {"type": "string"}  # no text at minimal
    assert file_note.to_openai("brief")["function"]["parameters"]["$defs"]["Note"]["properties"]["title"][
        "description"] == "The note's title."
