"""`ToolArgument`: Corral's argument record, and its conversion to and from our JSON schemas.

Corral tools list their arguments as `ToolArgument(name, type, description, required, default,
choices)`, with Python-style type names (`float`, `list[str]`, `str | None`). A Tool built from such
a list gets the equivalent JSON schema, so validation, OpenAI/MCP listings and guides work the same
as for `@tool` functions; a type name we cannot map (e.g. `np.ndarray`) leaves the argument
unconstrained instead of guessing (Corral's converters turned those into `string`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from corral_core.tools.errors import ToolDefinitionError
from corral_core.tools.schema import resolve_ref, schema_choices, schema_type_name

__all__ = ["ToolArgument", "arguments_schema", "schema_arguments", "type_name_schema"]

_SIMPLE = {"str": "string", "string": "string", "int": "integer", "integer": "integer", "float": "number",
           "number": "number", "bool": "boolean", "boolean": "boolean", "none": "null", "nonetype": "null",
           "null": "null"}
_GENERIC = re.compile(r"^([A-Za-z_.]+)\s*\[(.*)\]$", re.DOTALL)


@dataclass
class ToolArgument:
    """Specification of one tool argument (Corral's `corral.backend.schema.ToolArgument`)."""

    name: str
    type: str
    description: str
    required: bool = True
    default: Any = None
    choices: list[Any] | None = None


def _split_top(text: str, separator: str) -> list[str]:
    """Split at `separator` outside brackets: "dict[str, int], str" -> ["dict[str, int]", " str"]."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += char == "["
        depth -= char == "]"
        if char == separator and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def type_name_schema(type_name: str) -> dict[str, Any]:
    """The JSON schema of a Python-style type name; {} (any value) for a name we cannot map."""
    text = str(type_name or "").strip()
    members = [part.strip() for part in _split_top(text, "|")]
    if len(members) > 1:
        schemas = [type_name_schema(member) for member in members]
        if any(schema == {} for schema in schemas):
            return {}
        if all(set(schema) == {"type"} and isinstance(schema["type"], str) for schema in schemas):
            return {"type": list(dict.fromkeys(schema["type"] for schema in schemas))}
        return {"anyOf": schemas}
    lowered = text.lower().removeprefix("typing.")
    if lowered in _SIMPLE:
        return {"type": _SIMPLE[lowered]}
    if lowered in ("list", "array", "tuple", "sequence"):
        return {"type": "array"}
    if lowered in ("dict", "object", "mapping"):
        return {"type": "object"}
    generic = _GENERIC.match(text)
    if generic:
        origin, inner = generic.group(1).lower().removeprefix("typing."), generic.group(2)
        if origin in ("optional",):
            return type_name_schema(f"{inner} | None")
        if origin in ("list", "sequence", "set"):
            return {"type": "array", "items": type_name_schema(inner)}
        if origin == "tuple":
            return {"type": "array"}
        if origin in ("dict", "mapping"):
            parts = _split_top(inner, ",")
            value = type_name_schema(parts[1]) if len(parts) == 2 else {}
            return {"type": "object", "additionalProperties": value} if value else {"type": "object"}
    return {}


def arguments_schema(arguments: Iterable[ToolArgument], owner: str) -> dict[str, Any]:
    """The JSON-schema parameters object of a ToolArgument list (choices -> enum)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for argument in arguments:
        if not isinstance(argument, ToolArgument):
            raise ToolDefinitionError(f"{owner}: arguments must be ToolArgument records, got {argument!r}.")
        if argument.name in properties:
            raise ToolDefinitionError(f"{owner}: argument '{argument.name}' is listed twice.")
        schema = type_name_schema(argument.type)
        if argument.choices is not None:
            if not isinstance(argument.choices, (list, tuple)) or not argument.choices:
                raise ToolDefinitionError(f"{owner}: choices of argument '{argument.name}' must be a non-empty list.")
            schema["enum"] = list(argument.choices)
        if argument.description:
            schema["description"] = str(argument.description)
        if not argument.required and argument.default is not None:
            with contextlib.suppress(TypeError, ValueError):  # a default only the tool understands stays out
                schema["default"] = json.loads(json.dumps(argument.default))
        properties[argument.name] = schema
        if argument.required:
            required.append(argument.name)
    return {"type": "object", "properties": properties, "required": required}


def schema_arguments(parameters: Mapping[str, Any], descriptions: Mapping[str, str] | None = None
                     ) -> list[ToolArgument]:
    """Corral's ToolArgument list of a JSON-schema parameters object (`descriptions` overrides)."""
    required = set(parameters.get("required", []))
    listed = []
    for name, declared in parameters.get("properties", {}).items():
        prop = resolve_ref(declared, parameters)
        text = (descriptions or {}).get(name, prop.get("description", ""))
        listed.append(ToolArgument(name=name, type=schema_type_name(prop), description=text,
                                   required=name in required, default=prop.get("default"),
                                   choices=schema_choices(prop)))
    return listed
