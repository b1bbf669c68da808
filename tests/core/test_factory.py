"""build_tool from YAML-shaped declarations: every type, risk overrides, custom types, bad declarations."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from corral_core.errors import UserError
from corral_core.tools.base import RiskLevel, Tool
from corral_core.tools.errors import ToolExecutionError
from corral_core.tools.factory import ToolDeclarationError, build_tool, register_tool_type
from corral_core.tools.verbosity import ToolVerbosity

SUITE_TOOLS = """
- {name: calculator, type: builtin}
- {name: clock, type: builtin, builtin: datetime, risk: confirm, description: "What time is it?"}
- {name: search, type: builtin, builtin: web_search, backend: wikipedia, timeout: 4, max_results: 3}
- {name: fetch_url, type: builtin, max_chars: 2000, max_bytes: 100000, render: code}
- name: weather
  type: http
  description: Current weather for a city.
  url: https://api.example.org/v1/{city}
  method: GET
  headers: {Authorization: "Bearer ${WEATHER_KEY}"}
  timeout: 5
  parameters:
    - {name: city, type: string, description: City name}
    - {name: units, type: string, enum: [metric, imperial], default: metric}
- name: greet
  type: cli
  binary: echo
  allowed_commands: [hello, bye]
  risk: blocked
  parameters:
    - {name: loud, type: boolean, required: false}
"""


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, Tool]:
    declarations = yaml.safe_load(SUITE_TOOLS)
    built = [build_tool(decl, base_dir=tmp_path) for decl in declarations]
    return {tool.name: tool for tool in built}


def test_yaml_declarations_of_every_type_build_tools(tools: dict[str, Tool], tmp_path: Path) -> None:
    assert list(tools) == ["calculator", "clock", "search", "fetch_url", "weather", "greet"]
    assert tools["calculator"].execute(expression="6 * 7") == "42"
    assert tools["clock"].describe() == "What time is it?"
    assert tools["search"].parameters["properties"]["max_results"]["default"] == 3
    assert tools["fetch_url"].parameters["properties"]["max_chars"]["default"] == 2000
    weather = tools["weather"].parameters
    assert weather["required"] == ["city"]
    assert weather["properties"]["units"] == {"type": "string", "enum": ["metric", "imperial"], "default": "metric"}
    assert tools["weather"].describe() == "Current weather for a city."
    greet = tools["greet"]
    assert greet.parameters["properties"]["command"]["enum"] == ["hello", "bye"]
    assert greet.execute(command="hello", loud=True, work_dir=str(tmp_path)) == "hello --loud\n"


def test_risk_and_render_come_from_the_declaration(tools: dict[str, Tool]) -> None:
    assert tools["calculator"].risk is RiskLevel.SAFE
    assert tools["clock"].risk is RiskLevel.CONFIRM
    assert tools["greet"].risk is RiskLevel.BLOCKED
    assert tools["fetch_url"].render == "code"
    assert tools["calculator"].render == "text"
    assert build_tool({"name": "calculator", "risk": "BLOCKED"}).risk is RiskLevel.BLOCKED


def test_builtin_guides_differ_by_verbosity(tools: dict[str, Tool]) -> None:
    for name in ("calculator", "search", "fetch_url"):
        tool = tools[name]
        minimal, brief = tool.describe(ToolVerbosity.MINIMAL), tool.describe(ToolVerbosity.BRIEF)
        detailed = tool.describe(ToolVerbosity.DETAILED)
        comprehensive, full = tool.describe(ToolVerbosity.COMPREHENSIVE), tool.describe(ToolVerbosity.FULL)
        assert full == tool.description and "[" + "BRIEF]" in full  # Corral's full: the description as is
        assert len(minimal) <= len(brief) < len(detailed) < len(comprehensive), name
        assert "Limitations:" in comprehensive and "Limitations:" not in detailed
        tidy_full = tool.describe(ToolVerbosity.FULL, "tidy")
        assert "[" + "BRIEF]" not in tidy_full and "Limitations:" in tidy_full


def test_allow_private_reaches_fetch_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    with pytest.raises(ToolExecutionError, match="private, loopback"):
        build_tool({"name": "fetch_url", "type": "builtin"}).execute(url=url)
    with pytest.raises(ToolExecutionError, match="Could not fetch"):  # allowed, so it really tried
        build_tool({"name": "fetch_url", "type": "builtin"}, allow_private=True).execute(url=url)


def test_python_tools_import_a_tool_or_a_documented_function(tmp_path: Path) -> None:
    (tmp_path / "mytools.py").write_text(
        "from corral_core.tools.decorator import tool\n"
        "def shout(text: str) -> str:\n"
        '    """Upper-case some text.\n\n    Args:\n        text: The text.\n    """\n'
        "    return text.upper()\n"
        "@tool(risk='confirm')\n"
        "def whisper(text: str) -> str:\n"
        '    """Lower-case some text.\n\n    Args:\n        text: The text.\n    """\n'
        "    return text.lower()\n"
    )
    shout = build_tool({"name": "shout", "type": "python", "import": "mytools.py:shout", "risk": "blocked"},
                       base_dir=tmp_path)
    assert (shout.execute(text="hi"), shout.risk) == ("HI", RiskLevel.BLOCKED)
    whisper = build_tool({"name": "quiet", "type": "python", "import": "mytools.py:whisper"}, base_dir=tmp_path)
    assert (whisper.name, whisper.execute(text="HI"), whisper.risk) == ("quiet", "hi", RiskLevel.CONFIRM)
    with pytest.raises(ToolDeclarationError, match="no 'Args:' section.*Fix: document the function as a @tool"):
        build_tool({"name": "calc", "type": "python",
                    "import": "corral_core.tools.builtin.calculator:evaluate_expression"})


def test_registered_types_build_by_name(tmp_path: Path) -> None:
    seen: list[tuple[dict, Path]] = []

    def build_echo(decl: dict, base_dir: Path) -> Tool:
        seen.append((decl, base_dir))
        schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
        return Tool(decl["name"], "Echo text back.", schema, lambda text: text * decl.get("times", 1))

    register_tool_type("echo", build_echo)
    echo = build_tool({"name": "echo2", "type": "echo", "times": 2, "risk": "confirm"}, base_dir=tmp_path)
    assert (echo.execute(text="ab"), echo.risk) == ("abab", RiskLevel.CONFIRM)
    assert seen[0][1] == tmp_path
    register_tool_type("broken", lambda decl, base_dir: "not a tool")
    with pytest.raises(ToolDeclarationError, match="returned str, not a Tool"):
        build_tool({"name": "b", "type": "broken"})
    with pytest.raises(ValueError, match="built in"):
        register_tool_type("http", build_echo)


@pytest.mark.parametrize(
    ("decl", "key", "message"),
    [
        ({"name": "w", "type": "http", "url": "https://x/", "urll": "y"}, "urll", "unknown key 'urll' for a http tool"),
        ({"name": "w", "type": "grpc"}, "type", "unknown tool type 'grpc'"),
        ({"name": "w", "type": "builtin", "builtin": "calculator", "risk": "dangerous"}, "risk", "unknown risk level"),
        ({"name": "w", "type": "builtin", "builtin": "calculator", "render": "chart"}, "render", "unknown render hint"),
        ({"name": "w", "type": "builtin", "builtin": "shell"}, "builtin", "unknown builtin 'shell'"),
        ({"name": "w", "type": "builtin", "builtin": "calculator", "timeout": 3}, "timeout", "unknown key 'timeout'"),
        ({"name": "w", "type": "builtin", "builtin": "web_search", "backend": "auto"},
         "backend", "picks engines at random"),
        ({"name": "w", "type": "builtin", "builtin": "web_search", "max_results": 0},
         "max_results", "positive integer"),
        ({"name": "w", "type": "builtin", "builtin": "fetch_url", "max_chars": 10**6}, "max_chars", "at most 20000"),
        ({"name": "w"}, "type", "has no type"),
        ({"name": "w", "type": "http"}, "url", "needs a url"),
        ({"name": "w", "type": "http", "url": "https://x/", "method": "PATCH"}, "method", "unsupported method"),
        ({"name": "w", "type": "http", "url": "https://x/", "parameters": [{"name": "a", "type": "float"}]},
         "parameters.a.type", "unknown parameter type"),
        ({"name": "w", "type": "cli"}, "binary", "needs a binary"),
        ({"name": "w", "type": "cli", "binary": "ls", "cwd": "nowhere"}, "cwd", "is not a directory"),
        ({"name": "w", "type": "cli", "binary": "ls", "allowed_commands": "list"},
         "allowed_commands", "must be a list"),
        ({"name": "w", "type": "cli", "binary": "no-such-binary-corral"}, "binary", "was not found on PATH"),
        ({"name": "w", "type": "cli", "binary": "./bin/missing"}, "binary", "is not an executable file"),
        ({"name": "w", "type": "cli", "binary": "ls", "end_of_options": "yes"}, "end_of_options", "true or false"),
        ({"name": "w", "type": "python"}, "import", "needs import"),
        ({"name": "w", "type": "python", "import": "no_such_module_xyz:f"}, "import", "could not import"),
        ({"name": "w", "type": "python", "import": "json"}, "import", "not of the form"),
        ({"name": "w", "type": "python", "import": "json:nothing"}, "import", "has no attribute"),
        ({"name": "bad name!", "type": "builtin", "builtin": "calculator"}, None, "is not valid"),
    ],
)
def test_bad_declarations_say_tool_key_and_fix(decl: dict, key: str | None, message: str, tmp_path: Path) -> None:
    with pytest.raises(ToolDeclarationError, match=message) as caught:
        build_tool(decl, base_dir=tmp_path)
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, UserError)
    assert error.tool == decl["name"]
    assert error.key == key
    assert f"tool '{decl['name']}'" in str(error) and "Fix:" in str(error)


def test_non_mapping_and_nameless_declarations() -> None:
    with pytest.raises(ToolDeclarationError, match="must be a mapping"):
        build_tool(["calculator"])  # type: ignore[arg-type]
    with pytest.raises(ToolDeclarationError, match="has no name"):
        build_tool({"type": "builtin", "builtin": "calculator"})
