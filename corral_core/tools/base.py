"""Tool: a named function with a JSON-schema signature, a risk level and a render hint.

A Tool is built either by the `@tool` decorator (from a docstring and type hints) or directly from a
JSON schema (tools declared in YAML), so every check here is driven by the schema alone.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any

from corral_core.tools.errors import ToolArgumentError, ToolDefinitionError, ToolExecutionError
from corral_core.tools.schema import parameters_problem, schema_choices, schema_type_name
from corral_core.tools.validation import validate_arguments
from corral_core.tools.verbosity import (
    ToolVerbosity,
    describe_argument_text,
    describe_text,
    parse_verbosity,
    tag_problem,
)

__all__ = [
    "RENDER_HINTS",
    "RiskLevel",
    "Tool",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolExecutionError",
    "result_text",
]

RENDER_HINTS = ("text", "table", "json", "code")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what OpenAI accepts as a function name


class RiskLevel(str, Enum):
    """What the server does before running a tool: run it, ask a person first, or refuse."""

    SAFE = "safe"
    CONFIRM = "confirm"
    BLOCKED = "blocked"


def result_text(result: Any) -> str:
    """A tool's return value as the text the agent sees: dicts and lists as JSON, the rest via str()."""
    if isinstance(result, str):
        return result
    if isinstance(result, (dict, list, tuple)):
        try:
            return json.dumps(result, ensure_ascii=False)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


class Tool:
    """A callable tool the environment offers to agents.

    `parameters` is a JSON-schema object; property descriptions may carry verbosity tags, as may
    `description` (the docstring without its Args block). `hidden_args` are names the environment
    supplies at call time; they are not in the schema the agent sees, but `execute` passes them on.
    """

    def __init__(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        function: Callable[..., Any],
        *,
        risk: RiskLevel | str = RiskLevel.SAFE,
        render: str = "text",
        hidden_args: Iterable[str] = (),
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ToolDefinitionError(
                f"Tool name {name!r} is not valid: use 1-64 letters, digits, '_' or '-' (e.g. 'get_weather')."
            )
        label = f"Tool '{name}'"
        if not callable(function):
            raise ToolDefinitionError(f"{label}: function must be callable, got {type(function).__name__}.")
        if not isinstance(description, str):
            raise ToolDefinitionError(f"{label}: description must be text, got {type(description).__name__}.")
        problem = parameters_problem(parameters)
        if problem:
            raise ToolDefinitionError(f"{label}: {problem}.")
        problem = tag_problem(description)
        if problem:
            raise ToolDefinitionError(f"{label}: its description has {problem}. Close each [TAG] with [/TAG].")
        schema = copy.deepcopy(dict(parameters))
        schema.setdefault("properties", {})
        schema.setdefault("required", [])
        for arg, prop in schema["properties"].items():
            problem = tag_problem(prop.get("description", ""))
            if problem:
                raise ToolDefinitionError(
                    f"{label}: the description of argument '{arg}' has {problem}. Close each [TAG] with [/TAG]."
                )
        self.name = name
        self.description = description
        self.parameters: dict[str, Any] = schema
        self.function = function
        self.risk = _risk_level(label, risk)
        self.render = _render_hint(label, render)
        self.hidden_args = _hidden_args(label, hidden_args, schema["properties"])

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, risk={self.risk.value!r}, arguments={list(self.parameters['properties'])})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation, raw result)."""
        return self.function(*args, **kwargs)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments coerced to the schema's types, or ToolArgumentError with the reason."""
        return validate_arguments(self.parameters, arguments, hidden_args=self.hidden_args)

    def execute(self, **arguments: Any) -> str:
        """Run the function and return its result as text (dict/list as JSON, else str())."""
        return result_text(self.function(**arguments))

    def describe(self, verbosity: str | ToolVerbosity | None = None) -> str:
        """The description filtered to a verbosity level (None means FULL)."""
        return describe_text(self.description, parse_verbosity(verbosity))

    def describe_argument(self, name: str, verbosity: str | ToolVerbosity | None = None) -> str:
        """One argument's description filtered to a verbosity level ("" when it has none)."""
        text = self.parameters["properties"][name].get("description", "")
        return describe_argument_text(text, parse_verbosity(verbosity))

    def input_schema(self, verbosity: str | ToolVerbosity | None = None) -> dict[str, Any]:
        """A copy of the parameters schema whose argument descriptions are filtered to the level."""
        level = parse_verbosity(verbosity)
        schema = copy.deepcopy(self.parameters)
        for prop in schema["properties"].values():
            if "description" in prop:
                text = describe_argument_text(prop["description"], level)
                if text:
                    prop["description"] = text
                else:
                    del prop["description"]
        return schema

    def to_openai(self, verbosity: str | ToolVerbosity | None = None) -> dict[str, Any]:
        """OpenAI function-calling format: {"type": "function", "function": {name, description, parameters}}."""
        function = {"name": self.name, "description": self.describe(verbosity),
                    "parameters": self.input_schema(verbosity)}
        return {"type": "function", "function": function}

    def to_mcp(self, verbosity: str | ToolVerbosity | None = None) -> dict[str, Any]:
        """MCP tool listing format: {name, description, inputSchema}."""
        return {"name": self.name, "description": self.describe(verbosity), "inputSchema": self.input_schema(verbosity)}

    def to_dict(self, verbosity: str | ToolVerbosity | None = None) -> dict[str, Any]:
        """Corral's structured shape: {name, description, arguments: [...], risk, render}.

        Each argument is {name, type, description, required, default, choices}; MINIMAL gives only
        {name, type, required}, as Corral does. Types are Python-style names (`float`, `list[str]`).
        """
        level = parse_verbosity(verbosity)
        required = set(self.parameters["required"])
        arguments = []
        for name, prop in self.parameters["properties"].items():
            entry: dict[str, Any] = {"name": name, "type": schema_type_name(prop), "required": name in required}
            if level is not ToolVerbosity.MINIMAL:
                entry["description"] = describe_argument_text(prop.get("description", ""), level)
                entry["default"] = prop.get("default")
                entry["choices"] = schema_choices(prop)
            arguments.append(entry)
        return {
            "name": self.name,
            "description": self.describe(level),
            "arguments": arguments,
            "risk": self.risk.value,
            "render": self.render,
        }


def _risk_level(label: str, risk: RiskLevel | str) -> RiskLevel:
    if isinstance(risk, RiskLevel):
        return risk
    try:
        return RiskLevel(str(risk).strip().lower())
    except ValueError:
        valid = ", ".join(level.value for level in RiskLevel)
        raise ToolDefinitionError(f"{label}: unknown risk level {risk!r}. Use one of: {valid}.") from None


def _render_hint(label: str, render: str) -> str:
    hint = str(render).strip().lower()
    if hint not in RENDER_HINTS:
        raise ToolDefinitionError(f"{label}: unknown render hint {render!r}. Use one of: {', '.join(RENDER_HINTS)}.")
    return hint


def _hidden_args(label: str, hidden_args: Iterable[str], properties: Mapping[str, Any]) -> tuple[str, ...]:
    if isinstance(hidden_args, str):
        hidden_args = (hidden_args,)
    names = tuple(hidden_args)
    if not all(isinstance(name, str) and name for name in names):
        raise ToolDefinitionError(f"{label}: hidden_args must be argument names, got {names!r}.")
    shown = [name for name in names if name in properties]
    if shown:
        raise ToolDefinitionError(
            f"{label}: hidden argument(s) {', '.join(shown)} are also in the schema the agent sees; "
            "remove them from parameters.properties."
        )
    return names
