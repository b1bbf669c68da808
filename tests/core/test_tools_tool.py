"""The Tool class: construction from a schema, risk and render, execution, and export shapes."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest

from corral_core.tools import RiskLevel, Tool, ToolDefinitionError, ToolVerbosity, tool

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name. [DETAILED] Any spelling. [/DETAILED]"},
        "days": {"type": "integer", "description": "Days ahead.", "default": 1},
    },
    "required": ["city"],
}


def forecast(city: str, days: int = 1) -> dict[str, Any]:
    return {"city": city, "days": days, "temps": [1.5, 2.0]}


def make(**options: Any) -> Tool:
    return Tool("forecast", "[BRIEF] Weather forecast. [/BRIEF] Looks up a forecast.", SCHEMA, forecast, **options)


@pytest.mark.parametrize(
    ("risk", "expected"),
    [("safe", RiskLevel.SAFE), ("CONFIRM", RiskLevel.CONFIRM), (RiskLevel.BLOCKED, RiskLevel.BLOCKED)],
)
def test_risk_levels(risk: Any, expected: RiskLevel) -> None:
    assert make(risk=risk).risk is expected


def test_defaults_are_safe_and_text() -> None:
    t = make()
    assert t.risk is RiskLevel.SAFE and t.render == "text" and t.hidden_args == ()


@pytest.mark.parametrize("render", ["text", "table", "json", "code"])
def test_render_hints(render: str) -> None:
    assert make(render=render).render == render


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"risk": "dangerous"}, "unknown risk level 'dangerous'. Use one of: safe, confirm, blocked"),
        ({"render": "html"}, "unknown render hint 'html'"),
        ({"hidden_args": ("city",)}, "hidden argument(s) city are also in the schema"),
    ],
)
def test_bad_options_are_definition_errors(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        make(**kwargs)
    assert "Tool 'forecast'" in str(info.value) and fragment in str(info.value)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("", "d", SCHEMA, forecast), "is not valid"),
        (("x", "d", SCHEMA, "not callable"), "must be callable"),
        (("x", "d", {"type": "array"}, forecast), "JSON-schema object"),
        (("x", "Do [DETAILED] it", SCHEMA, forecast), "unclosed tags: DETAILED"),
        (("x", "Do it [/BRIEF]", SCHEMA, forecast), "closing tag [/BRIEF] without"),
        (
            ("x", "d", {"type": "object", "properties": {"a": {"type": "string", "description": "[EXAMPLES] a"}}},
             forecast),
            "argument 'a' has unclosed tags: EXAMPLES",
        ),
    ],
)
def test_constructor_rejects_bad_definitions(args: tuple[Any, ...], fragment: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Tool(*args)
    assert fragment in str(info.value)


def test_constructor_fills_missing_required_list_and_copies_the_schema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    t = Tool("x", "d", schema, forecast)
    assert t.parameters["required"] == []
    t.parameters["properties"]["a"]["type"] = "integer"
    assert schema["properties"]["a"]["type"] == "string"


def test_execute_returns_text() -> None:
    assert json.loads(make().execute(city="Oslo")) == {"city": "Oslo", "days": 1, "temps": [1.5, 2.0]}

    @tool
    def half(x: float) -> float:
        """Halve a number.

        Args:
            x: The number.
        """
        return x / 2

    assert half.execute(x=84.0) == "42.0"
    listing = Tool("ls", "List.", {"type": "object", "properties": {}}, lambda: ["a", "b"])
    assert listing.execute() == '["a", "b"]'


def test_execute_lets_tool_errors_through_for_the_environment_to_record() -> None:
    def boom() -> str:
        raise ZeroDivisionError("division by zero")

    with pytest.raises(ZeroDivisionError):
        Tool("boom", "Explode.", {"type": "object", "properties": {}}, boom).execute()


def test_to_mcp_shape_and_verbosity() -> None:
    t = make()
    full = t.to_mcp()
    assert set(full) == {"name", "description", "inputSchema"}
    assert full["name"] == "forecast"
    assert full["inputSchema"]["type"] == "object"
    assert full["inputSchema"]["required"] == ["city"]
    # full: the description and an argument's text as written, tags included
    assert full["description"] == "[BRIEF] Weather forecast. [/BRIEF] Looks up a forecast."
    assert full["inputSchema"]["properties"]["city"]["description"] == "City name. [DETAILED] Any spelling. [/DETAILED]"
    tidy = t.to_mcp("full", "tidy")
    assert tidy["inputSchema"]["properties"]["city"]["description"] == "City name.\nAny spelling."
    assert tidy["description"] == "Weather forecast.\n\nLooks up a forecast."
    brief = t.to_mcp("brief")
    assert brief["description"] == "Weather forecast."
    assert brief["inputSchema"]["properties"]["city"]["description"] == "City name."
    assert t.parameters["properties"]["city"]["description"].startswith("City name. [DETAILED]")  # untouched


def test_to_openai_shape() -> None:
    exported = make().to_openai(ToolVerbosity.MINIMAL)
    assert exported["type"] == "function"
    assert set(exported["function"]) == {"name", "description", "parameters"}
    assert exported["function"]["description"] == "Weather forecast."
    # minimal: names and types only, in every documentation style (as Corral's minimal)
    assert exported["function"]["parameters"]["properties"]["days"] == {"type": "integer"}
    tidy = make().to_openai(ToolVerbosity.MINIMAL, "tidy")
    assert tidy["function"]["parameters"]["properties"]["days"] == {"type": "integer"}
    brief = make().to_openai(ToolVerbosity.BRIEF)
    assert brief["function"]["parameters"]["properties"]["days"] == {"type": "integer", "description": "Days ahead.",
                                                                     "default": 1}


def test_to_dict_is_corral_argument_list_shape() -> None:
    @tool(risk="confirm", render="json")
    def book(room: Literal["a", "b"], hours: int = 1) -> str:
        """Book a room.

        Args:
            room: Which room.
            hours: How long.
        """
        return room

    full = book.to_dict("full")
    assert full["risk"] == "confirm" and full["render"] == "json"
    assert full["arguments"] == [
        {"name": "room", "type": "str", "required": True, "description": "Which room.", "default": None,
         "choices": ["a", "b"]},
        {"name": "hours", "type": "int", "required": False, "description": "How long.", "default": 1, "choices": None},
    ]
    minimal = book.to_dict("minimal")
    assert minimal["arguments"][1] == {"name": "hours", "type": "int", "required": False}
    assert set(minimal) == {"name", "description", "arguments", "risk", "render"}
