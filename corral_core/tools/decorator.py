"""`@tool`: build a Tool from a function's Google-style docstring and type hints.

Mistakes are caught when the function is defined, never later when an agent calls it: a missing
docstring, missing type hints or return annotation, an undocumented parameter, a documented name that
is not a parameter, an unsupported type and an unclosed verbosity tag are ToolDefinitionErrors that
name the function.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import typing
from collections.abc import Callable, Iterable
from typing import Any, overload

from corral_core.tools.base import RiskLevel, Tool
from corral_core.tools.docstring import ParsedDocstring, parse_docstring
from corral_core.tools.errors import ToolDefinitionError
from corral_core.tools.schema import SUPPORTED_TYPES_TEXT, UnsupportedAnnotation, annotation_schema, type_repr
from corral_core.tools.verbosity import (
    CHOICES_FRAGMENT,
    corral_docstring_description,
    parse_sections,
    tag_problem,
)

_UNUSABLE_KINDS = {
    inspect.Parameter.VAR_POSITIONAL: "*args",
    inspect.Parameter.VAR_KEYWORD: "**kwargs",
    inspect.Parameter.POSITIONAL_ONLY: "a positional-only parameter",
}


@overload
def tool(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    risk: RiskLevel | str = "safe",
    render: str = "text",
    hidden_args: Iterable[str] = (),
) -> Tool: ...


@overload
def tool(
    func: None = None,
    *,
    name: str | None = None,
    risk: RiskLevel | str = "safe",
    render: str = "text",
    hidden_args: Iterable[str] | None = (),
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    risk: RiskLevel | str = "safe",
    render: str = "text",
    hidden_args: Iterable[str] | None = (),
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a FunctionTool of a function; use as `@tool` or `@tool(risk="confirm", hidden_args=[...])`.

    `name` defaults to the function's name; `hidden_args` are parameters the environment supplies
    (they need no documentation and are left out of the agent's schema).
    """

    def build(function: Callable[..., Any]) -> Tool:
        return tool_from_function(function, name=name, risk=risk, render=render, hidden_args=hidden_args)

    if func is None:
        return build
    if not callable(func):
        raise ToolDefinitionError(
            f"@tool got {func!r} instead of a function; pass options by keyword: @tool(name=...).")
    return build(func)


class FunctionTool(Tool):
    """A Tool made from a documented, type-hinted function (what `@tool` returns, as in Corral).

    `description` is what Corral's `@tool` keeps of the docstring (the whole docstring without its
    Args block when it has verbosity tags, else its first paragraph), so Corral's documentation
    style renders the same text as Corral; `doc` keeps everything but the Args block, for the
    opt-in `tidy` style. Calling it returns the function's raw result; `execute` returns text.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        risk: RiskLevel | str = "safe",
        render: str = "text",
        hidden_args: Iterable[str] | None = (),
    ) -> None:
        owner = _owner(func)
        doc = inspect.getdoc(func)
        if not doc or not doc.strip():
            raise ToolDefinitionError(
                f"{owner} has no docstring. Write one with a description and an 'Args:' section "
                "with one 'name: description' line per parameter."
            )
        problem = tag_problem(doc)
        if problem:
            raise ToolDefinitionError(f"{owner}: its docstring has {problem}. Close each [TAG] with [/TAG].")
        hidden_args = hidden_args or ()
        hidden = (hidden_args,) if isinstance(hidden_args, str) else tuple(hidden_args)
        parameters, parsed, defaults = _function_schema(func, owner, doc, hidden)
        super().__init__(
            name or func.__name__,
            corral_docstring_description(doc),
            parameters,
            func,
            risk=risk,
            render=render,
            hidden_args={h: defaults.get(h) for h in hidden},
            doc=parsed.description,
        )
        self._func = func
        self.__wrapped__ = func  # lets inspect find the function
        self.__doc__ = func.__doc__


def tool_from_function(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    risk: RiskLevel | str = "safe",
    render: str = "text",
    hidden_args: Iterable[str] | None = (),
) -> Tool:
    """The work behind `@tool`; see the module docstring for what is checked."""
    return FunctionTool(function, name=name, risk=risk, render=render, hidden_args=hidden_args)


def _function_schema(function: Callable[..., Any], owner: str, doc: str, hidden: tuple[str, ...]
                     ) -> tuple[dict[str, Any], ParsedDocstring, dict[str, Any]]:
    """(parameters schema, parsed docstring, hidden parameters' defaults) of a tool function."""
    signature = inspect.signature(function)
    params = list(signature.parameters.values())
    for param in params:
        if param.kind in _UNUSABLE_KINDS:
            raise ToolDefinitionError(
                f"{owner} takes {_UNUSABLE_KINDS[param.kind]} ('{param.name}'), which a JSON schema cannot "
                "describe. Use named parameters."
            )
    unknown_hidden = [h for h in hidden if h not in signature.parameters]
    if unknown_hidden:
        raise ToolDefinitionError(f"{owner}: hidden_args {', '.join(unknown_hidden)} are not parameters of it.")
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as exc:  # NameError, TypeError: a hint that cannot be evaluated
        raise ToolDefinitionError(f"{owner}: its type hints cannot be resolved ({exc}).") from None
    visible = [p for p in params if p.name not in hidden]
    unhinted = [p.name for p in visible if p.name not in hints]
    if unhinted:
        raise ToolDefinitionError(
            f"{owner} has no type hints for: {', '.join(unhinted)}. Annotate every parameter, e.g. 'x: int'."
        )
    if "return" not in hints:
        raise ToolDefinitionError(f"{owner} has no return type annotation. Add one, e.g. '-> str'.")

    parsed = parse_docstring(doc, owner=owner)
    if visible and not parsed.has_args_section:
        raise ToolDefinitionError(
            f"{owner}: its docstring has no 'Args:' section. Document each parameter "
            f"({', '.join(p.name for p in visible)}) under 'Args:' as 'name: description'."
        )
    undocumented = [p.name for p in visible if p.name not in parsed.arguments]
    if undocumented:
        hint = "" if parsed.arguments else " Indent each 'name: description' line under 'Args:'."
        raise ToolDefinitionError(f"{owner}: missing documentation for parameters: {', '.join(undocumented)}.{hint}")
    strangers = [n for n in parsed.arguments if n not in signature.parameters]
    if strangers:
        raise ToolDefinitionError(
            f"{owner}: its docstring documents {', '.join(strangers)}, which are not parameters of it "
            "(a typo, or a parameter that was renamed?)."
        )
    sections = dict(parse_sections(parsed.description))
    if "BASIC" not in sections and "BRIEF" not in sections:
        raise ToolDefinitionError(
            f"{owner}: its docstring has no summary. Start it with a sentence saying what the tool does "
            "(or a [BRIEF] ... [/BRIEF] section); it is what minimal and brief verbosity show."
        )

    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in visible:
        properties[param.name] = _property_schema(owner, param, hints[param.name], parsed.arguments[param.name])
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    return {"type": "object", "properties": properties, "required": required}, parsed, defaults


def _owner(function: Callable[..., Any]) -> str:
    """How errors name the function: `Tool function 'add' (tools.py, line 12)`."""
    owner = f"Tool function '{getattr(function, '__name__', function)}'"
    code = getattr(function, "__code__", None)
    if code is not None:
        owner += f" ({os.path.basename(code.co_filename)}, line {code.co_firstlineno})"
    return owner


def _property_schema(owner: str, param: inspect.Parameter, hint: Any, description: str) -> dict[str, Any]:
    where = f"{owner}: parameter '{param.name}'"
    try:
        schema = annotation_schema(hint)
    except UnsupportedAnnotation as exc:
        inner = "" if exc.annotation is hint else f" ({type_repr(exc.annotation)} is the part not supported)"
        raise ToolDefinitionError(
            f"{where} has unsupported type {type_repr(hint)}{inner}. Supported: {SUPPORTED_TYPES_TEXT}."
        ) from None
    choices = _choices_from_text(where, description)
    if choices is not None:
        existing = schema.get("enum")
        if existing is not None and sorted(map(repr, existing)) != sorted(map(repr, choices)):
            raise ToolDefinitionError(f"{where}: '(choices: ...)' in its docstring differs from its Literal type.")
        schema["enum"] = choices
    schema["description"] = description
    if param.default is not inspect.Parameter.empty:
        default = param.default
        try:
            schema["default"] = json.loads(json.dumps(default))  # tuples become lists, like JSON
        except (TypeError, ValueError):
            raise ToolDefinitionError(f"{where} has default {default!r}, which is not a JSON value.") from None
    return schema


def _choices_from_text(where: str, description: str) -> list[Any] | None:
    """Values of a Corral-style `(choices: [...])` fragment, read as a literal (never eval())."""
    match = CHOICES_FRAGMENT.search(description)
    if not match:
        return None
    try:
        values = ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError):
        values = None
    if not isinstance(values, (list, tuple)) or not values:
        raise ToolDefinitionError(f"{where}: '(choices: ...)' must hold a list of values, e.g. (choices: ['a', 'b']).")
    if not all(v is None or isinstance(v, (str, int, float, bool)) for v in values):
        raise ToolDefinitionError(f"{where}: '(choices: ...)' may only hold strings, numbers, booleans or None.")
    return list(values)
