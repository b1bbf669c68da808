"""`type: mcp` tools: an external MCP server's tools become environment tools with YAML risk levels.

The stdio server (data/notes_mcp_server.py, official SDK) is started by the test through the suite;
the HTTP case points at another corral-tui server's own MCP endpoint.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.client import CorralRouter
from corral_core.env import load_suite
from corral_core.errors import UserError
from corral_core.server import EmbeddedServer, PolicyGate, create_app
from corral_core.tools import RiskLevel
from corral_core.tools.mcp_tools import _connections, close_all_connections
from tests.server.conftest import make_suite

DATA = Path(__file__).resolve().parent / "data"
NOTES_SERVER = DATA / "notes_mcp_server.py"


@pytest.fixture(autouse=True)
def _close_connections() -> Iterator[None]:
    yield
    threads = [c._thread for c in _connections.values()]
    close_all_connections()
    assert not any(t is not None and t.is_alive() for t in threads)


def write_suite(folder: Path, tools: str) -> Path:
    path = folder / "notes.yaml"
    path.write_text(f"""\
name: notes
tools:
{tools}
tasks:
  - {{id: remember, prompt: "Store the note 'greeting' with the text 'hello', then read it back.", answer: hello}}
""")
    return path


def stdio_declaration(extra: str = "") -> str:
    return f"""\
  - name: notes
    type: mcp
    command: [{sys.executable!r}, {str(NOTES_SERVER)!r}]
    risks: {{add_note: confirm, delete_note: blocked}}
{extra}"""


def test_stdio_server_tools_with_yaml_risk_levels(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, stdio_declaration()))
    tools = suite.tools
    assert sorted(tools) == ["add_note", "count_notes", "delete_note", "read_note"]
    assert tools["add_note"].risk is RiskLevel.CONFIRM and tools["delete_note"].risk is RiskLevel.BLOCKED
    assert tools["read_note"].risk is RiskLevel.SAFE
    assert tools["read_note"].describe("brief") == "Read the note stored under a title."
    assert tools["add_note"].parameters["required"] == ["title", "text"]

    server = EmbeddedServer(create_app(suite, gate=PolicyGate(approve=True)))
    try:
        with CorralRouter(server.start(), default_verbosity=None) as router:
            listed = router.get_available_tools_for_task("remember")["tools"]
            assert {t["name"] for t in listed} == set(tools)
            trial = router.open_trial("remember")
            stored = trial.execute_tool("remember", "add_note", {"title": "greeting", "text": "hello"})
            assert stored.success and stored.tool_call["approval"] == "approved"
            assert trial.execute_tool("remember", "read_note", {"title": "greeting"}).result == "hello"
            missing = trial.execute_tool("remember", "read_note", {"title": "nope"})
            assert not missing.success and missing.tool_call["status"] == "execution_error"
            assert "no note titled 'nope'" in (missing.error or "")
            refused = trial.execute_tool("remember", "delete_note", {"title": "greeting"})
            assert refused.tool_call["status"] == "blocked"
            assert trial.execute_tool("remember", "read_note", {"title": "greeting"}).result == "hello"  # not run
            bad = trial.execute_tool("remember", "add_note", {"title": "x"})
            assert bad.tool_call["status"] == "invalid_args"  # our validation, from the server's schema
            assert trial.submit_answer("remember", "hello").score == 1.0
            trial.close()
    finally:
        server.stop()


def test_a_rejected_confirm_tool_never_reaches_the_mcp_server(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, stdio_declaration("    tools: [add_note, count_notes]\n")))
    assert sorted(suite.tools) == ["add_note", "count_notes"]
    env = suite.create_environment("remember")  # the default gate rejects confirm-level tools
    rejected = env.call_tool("add_note", {"title": "a", "text": "b"})
    assert rejected.status.value == "rejected"
    assert env.call_tool("count_notes", {}).result == "0"


def test_http_url_tools_from_another_servers_mcp_endpoint(tmp_path: Path) -> None:
    remote = EmbeddedServer(create_app(make_suite()))
    url = remote.start()
    try:
        suite = load_suite(write_suite(tmp_path, f"""\
  - name: remote
    type: mcp
    url: {url}/tasks/add/mcp
    tools: [add, echo]
    prefix: remote_
    risk: confirm
    risks: {{echo: safe}}
"""))
        assert sorted(suite.tools) == ["remote_add", "remote_echo"]
        assert suite.tools["remote_add"].risk is RiskLevel.CONFIRM
        env = suite.create_environment("remember", approval_gate=PolicyGate(approve=True))
        assert env.call_tool("remote_add", {"a": 2, "b": 3}).result == "5"
        assert env.call_tool("remote_echo", {"text": "hi"}).result == "hi"
        failed = env.call_tool("remote_add", {"a": 2, "b": "x"})
        assert failed.status.value == "invalid_args"
    finally:
        close_all_connections()
        remote.stop()


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        (stdio_declaration("    tools: [add_note, shout]\n"), "the server has no tool 'shout'"),
        (stdio_declaration("    risks: {read_note: loud}\n").replace(
            "    risks: {add_note: confirm, delete_note: blocked}\n", ""), "unknown risk level 'loud'"),
        ("  - {name: broken, type: mcp, command: ['" + sys.executable + "', '-c', 'import sys; "
         "sys.stderr.write(\"boom at startup\"); sys.exit(3)']}\n", "boom at startup"),
        (stdio_declaration("    tools: [read_note]\n"), None),  # risks may name tools left out, not typos
        (stdio_declaration().replace("delete_note: blocked", "delet_note: blocked"),
         "risks names 'delet_note', which the server does not have"),
        ("  - {name: neither, type: mcp}\n", "needs either command"),
    ],
)
def test_declaration_mistakes_are_user_errors(tmp_path: Path, declaration: str, message: str | None) -> None:
    if message is None:
        assert sorted(load_suite(write_suite(tmp_path, declaration)).tools) == ["read_note"]
        return
    with pytest.raises(UserError) as info:
        load_suite(write_suite(tmp_path, declaration))
    assert message in str(info.value)
