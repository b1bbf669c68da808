"""Tool: a named function with a JSON-schema signature, a risk level and a render hint.

A Tool is built by the `@tool` decorator (from a docstring and type hints), from a JSON schema
(tools declared in YAML), or the way Corral builds them: a subclass that passes a `ToolArgument`
list to `__init__` and overrides `execute(**kwargs)`. Every check here is driven by the schema.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from corral_core.tools.arguments import ToolArgument, arguments_schema, schema_arguments
from corral_core.tools.components import Documentation
from corral_core.tools.documentation import ToolDoc, document
from corral_core.tools.errors import ToolArgumentError, ToolDefinitionError, ToolExecutionError
from corral_core.tools.schema import parameters_problem
from corral_core.tools.validation import validate_arguments
from corral_core.tools.verbosity import (
    DocStyle,
    ToolVerbosity,
    corral_argument_text,
    corral_describe,
    corral_describe_argument,
    describe_argument_text,
    describe_text,
    parse_style,
    parse_verbosity,
    tag_problem,
)

__all__ = [
    "RENDER_HINTS",
    "RichResult",
    "RiskLevel",
    "Tool",
    "ToolArgument",
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


@dataclass(frozen=True)
class RichResult:
    """A result with more than text (an external MCP tool's image, audio or resource blocks, or its
    structured content): `text` is what text channels show, `content` the MCP blocks as dicts."""

    text: str
    content: list[dict[str, Any]] = field(default_factory=list)
    structured: Any = None


def result_text(result: Any) -> str:
    """A tool's return value as the text the agent sees: dicts and lists as JSON, the rest via str()."""
    if isinstance(result, str):
        return result
    if isinstance(result, RichResult):
        return result.text
    if isinstance(result, (dict, list, tuple)):
        try:
            return json.dumps(result, ensure_ascii=False)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


class Tool:
    """A callable tool the environment offers to agents.

    `parameters` is a JSON-schema object, or Corral's list of `ToolArgument`s (also accepted as
    `arguments=`); property descriptions may carry verbosity tags, as may `description`. `function`
    runs the tool; a subclass may instead override `execute(**kwargs)`, as Corral tools do.
    `hidden_args` are names the environment supplies at call time (a list, or Corral's mapping of
    name to default); they are not in the schema the agent sees, but `execute` receives them.
    `doc` is the fuller text the opt-in `tidy` documentation style renders (default: `description`).
    """

    def __init__(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any] | list[ToolArgument] | None = None,
        function: Callable[..., Any] | None = None,
        *,
        arguments: list[ToolArgument] | None = None,
        risk: RiskLevel | str = RiskLevel.SAFE,
        render: str = "text",
        hidden_args: Iterable[str] | Mapping[str, Any] | None = (),
        doc: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ToolDefinitionError(
                f"Tool name {name!r} is not valid: use 1-64 letters, digits, '_' or '-' (e.g. 'get_weather')."
            )
        label = f"Tool '{name}'"
        if isinstance(parameters, list) and arguments is None:
            parameters, arguments = None, parameters
        self._arguments: list[ToolArgument] | None = None
        declared: Mapping[str, Any]
        if arguments is not None:
            if parameters is not None:
                raise ToolDefinitionError(f"{label}: pass either parameters (a JSON schema) or arguments, not both.")
            self._arguments = list(arguments)
            declared = arguments_schema(self._arguments, label)
        elif parameters is None:
            declared = {"type": "object", "properties": {}, "required": []}
        elif isinstance(parameters, Mapping):
            declared = parameters
        else:
            raise ToolDefinitionError(f"{label}: parameters must be a JSON schema or a list of ToolArguments.")
        if function is None:
            if type(self).execute is Tool.execute:
                raise ToolDefinitionError(f"{label}: pass a function, or subclass Tool and override execute(**kwargs).")
            function = self.execute
        if not callable(function):
            raise ToolDefinitionError(f"{label}: function must be callable, got {type(function).__name__}.")
        if not isinstance(description, str):
            raise ToolDefinitionError(f"{label}: description must be text, got {type(description).__name__}.")
        problem = parameters_problem(declared)
        if problem:
            raise ToolDefinitionError(f"{label}: {problem}.")
        for text in (description, doc or ""):
            problem = tag_problem(text)
            if problem:
                raise ToolDefinitionError(f"{label}: its description has {problem}. Close each [TAG] with [/TAG].")
        schema = copy.deepcopy(dict(declared))
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
        self.doc = doc if doc is not None else description
        self.parameters: dict[str, Any] = schema
        self.function = function
        self.risk = _risk_level(label, risk)
        self.render = _render_hint(label, render)
        self.hidden_defaults: dict[str, Any] = dict(hidden_args) if isinstance(hidden_args, Mapping) else {}
        self.hidden_args = _hidden_args(label, hidden_args or (), schema["properties"])
        # components that replace the rendering of the texts above (an overlay, the derived rule, a
        # component subset: corral_core/tools/components.py); None: the texts as written, by `style`
        self.documentation: Documentation | None = None

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, risk={self.risk.value!r}, arguments={list(self.parameters['properties'])})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation, raw result)."""
        return self.function(*args, **kwargs)

    @property
    def arguments(self) -> list[ToolArgument]:
        """Corral's view of the arguments: `ToolArgument(name, type, description, required, default, choices)`."""
        if self._arguments is not None:
            return list(self._arguments)
        texts = {name: corral_argument_text(prop.get("description", ""))
                 for name, prop in self.parameters["properties"].items()}
        return schema_arguments(self.parameters, texts)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments coerced to the schema's types, or ToolArgumentError with the reason."""
        return validate_arguments(self.parameters, arguments, hidden_args=self.hidden_args)

    def validate_arguments(self, provided_args: Mapping[str, Any]) -> tuple[bool, str | None]:
        """Corral's form of `validate`: (True, None), or (False, the reason)."""
        try:
            self.validate(provided_args)
        except ToolArgumentError as exc:
            return False, str(exc)
        return True, None

    def execute(self, **arguments: Any) -> str | RichResult:
        """Run the function and return its result as text (dict/list as JSON, else str()); a
        RichResult (more than text) is returned as it is."""
        value = self.function(**arguments)
        return value if isinstance(value, RichResult) else result_text(value)

    # --- documentation at a verbosity level --------------------------------------------------

    def with_documentation(self, documentation: Documentation | None) -> Tool:
        """A copy of this tool (same function, schema and risk) shown with `documentation`'s components."""
        documented = copy.copy(self)
        documented.documentation = documentation
        return documented

    def describe(self, verbosity: str | ToolVerbosity | None = None, style: str | DocStyle | None = None) -> str:
        """The description filtered to a verbosity level (None means FULL), in Corral's style by default
        (a tool with components renders them whatever the style)."""
        level = parse_verbosity(verbosity)
        if self.documentation is not None:
            return self.documentation.describe(level)
        if parse_style(style) is DocStyle.TIDY:
            return describe_text(self.doc, level)
        return corral_describe(self.description, level)

    def describe_argument(self, name: str, verbosity: str | ToolVerbosity | None = None,
                          style: str | DocStyle | None = None) -> str:
        """One argument's description filtered to a verbosity level ("" when it has none)."""
        level = parse_verbosity(verbosity)
        if self.documentation is not None:
            return self.documentation.describe_argument(name, level)
        if parse_style(style) is DocStyle.TIDY:
            return describe_argument_text(self.parameters["properties"][name].get("description", ""), level)
        return corral_describe_argument(self._corral_argument_texts().get(name, ""), level)

    def _corral_argument_texts(self) -> dict[str, str]:
        return {argument.name: argument.description or "" for argument in self.arguments}

    def document(self, verbosity: str | ToolVerbosity | None = None,
                 style: str | DocStyle | None = None) -> ToolDoc:
        """What `verbosity` (None: FULL) shows of this tool: the one record every channel renders."""
        return document(self, verbosity, style)

    def input_schema(self, verbosity: str | ToolVerbosity | None = None,
                     style: str | DocStyle | None = None) -> dict[str, Any]:
        """The parameters schema as the level shows it: types always; argument texts, `enum` and
        `default` from `brief` up (`minimal` shows names and types only, as Corral does)."""
        return self.document(verbosity, style).parameters()

    def to_openai(self, verbosity: str | ToolVerbosity | None = None,
                  style: str | DocStyle | None = None) -> dict[str, Any]:
        """OpenAI function-calling format: {"type": "function", "function": {name, description, parameters}}."""
        doc = self.document(verbosity, style)
        return {"type": "function", "function": {"name": doc.name, "description": doc.description,
                                                 "parameters": doc.parameters()}}

    def to_mcp(self, verbosity: str | ToolVerbosity | None = None,
               style: str | DocStyle | None = None) -> dict[str, Any]:
        """MCP tool listing format: {name, description, inputSchema}."""
        doc = self.document(verbosity, style)
        return {"name": doc.name, "description": doc.description, "inputSchema": doc.parameters()}

    def to_dict(self, verbosity: str | ToolVerbosity | None = None,
                style: str | DocStyle | None = None) -> dict[str, Any]:
        """Corral E2's structured shape: {name, description, arguments: [...], risk, render}.

        Each argument is {name, type, description, required, default, choices}; MINIMAL gives only
        {name, type, required}, as Corral does. Types are Python-style names (`float`, `list[str]`).
        """
        doc = self.document(verbosity, style)
        return {"name": doc.name, "description": doc.description, "arguments": doc.e2_arguments(),
                "risk": self.risk.value, "render": self.render}

    def to_listing(self, verbosity: str | ToolVerbosity | None = None,
                   style: str | DocStyle | None = None) -> dict[str, Any]:
        """One `/tools` entry: OpenAI function format that also carries Corral E2's keys
        (`name`, `description`, `arguments`), so clients of either shape read it."""
        doc = self.document(verbosity, style)
        return {"type": "function",
                "function": {"name": doc.name, "description": doc.description, "parameters": doc.parameters()},
                "name": doc.name, "description": doc.description, "arguments": doc.e2_arguments(),
                "risk": self.risk.value, "render": self.render}


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


def _hidden_args(label: str, hidden_args: Iterable[str] | Mapping[str, Any],
                 properties: Mapping[str, Any]) -> tuple[str, ...]:
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
