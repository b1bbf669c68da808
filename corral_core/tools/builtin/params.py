"""Declared tool parameters (the YAML list form) turned into JSON schema, with errors in words."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from corral_core.errors import UserError

PARAM_TYPES = ("string", "integer", "number", "boolean", "array", "object")
PARAM_KEYS = ("name", "type", "description", "required", "default", "enum", "items", "positional")
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


class ToolDeclarationError(UserError, ValueError):
    """A tool declaration (suite YAML or constructor call) is wrong; the message names tool, key and fix."""

    def __init__(
        self,
        problem: str,
        *,
        tool: str | None = None,
        key: str | None = None,
        fix: str | None = None,
        file: str | Path | None = None,
    ) -> None:
        self.tool = tool
        self.key = key
        where_parts = []
        if tool:
            where_parts.append(f"tool '{tool}'")
        if key:
            where_parts.append(f"key '{key}'")
        super().__init__(problem, file=file, where=", ".join(where_parts) or None, fix=fix)


def _type_ok(value: Any, json_type: str) -> bool:
    if json_type in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _PY_TYPES[json_type])


def schema_from_parameters(
    params: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None, *, tool: str
) -> dict[str, Any]:
    """Build a JSON-schema object from a list of `{name, type, description, required, default, enum}`.

    A mapping that already is a JSON-schema object (`{"type": "object", ...}`) is returned as a copy,
    so Python callers can pass either form. `required` defaults to true unless a `default` is given.
    """
    if params is None:
        return {"type": "object", "properties": {}, "required": []}
    if isinstance(params, Mapping):
        if params.get("type") == "object":
            schema = dict(params)
            schema.setdefault("properties", {})
            schema.setdefault("required", [])
            return schema
        raise ToolDeclarationError(
            "parameters must be a list of {name, type, description, ...} entries.",
            tool=tool,
            key="parameters",
            fix="write parameters as a YAML list, e.g. '- {name: city, type: string, description: City name}'.",
        )
    if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
        raise ToolDeclarationError(
            f"parameters must be a list, got {type(params).__name__}.",
            tool=tool,
            key="parameters",
            fix="write parameters as a YAML list of {name, type, description} entries.",
        )
    properties: dict[str, Any] = {}
    required: list[str] = []
    for index, param in enumerate(params):
        where = f"parameters[{index}]"
        if not isinstance(param, Mapping):
            raise ToolDeclarationError(
                f"each parameter must be a mapping, got {type(param).__name__}.",
                tool=tool,
                key=where,
                fix="give each parameter as {name, type, description}.",
            )
        unknown = sorted(set(param) - set(PARAM_KEYS))
        if unknown:
            raise ToolDeclarationError(
                f"unknown parameter key(s): {', '.join(map(str, unknown))}.",
                tool=tool,
                key=where,
                fix=f"use only: {', '.join(PARAM_KEYS)}.",
            )
        name = param.get("name")
        if not isinstance(name, str) or not name.isidentifier():
            raise ToolDeclarationError(
                f"parameter name {name!r} is missing or not an identifier.",
                tool=tool,
                key=f"{where}.name",
                fix="use letters, digits and underscores, e.g. 'city' or 'max_items'.",
            )
        where = f"parameters.{name}"
        if name in properties:
            raise ToolDeclarationError(
                f"parameter '{name}' is declared twice.", tool=tool, key=where, fix="remove the duplicate."
            )
        json_type = param.get("type", "string")
        if json_type not in PARAM_TYPES:
            raise ToolDeclarationError(
                f"unknown parameter type {json_type!r}.",
                tool=tool,
                key=f"{where}.type",
                fix=f"use one of: {', '.join(PARAM_TYPES)}.",
            )
        prop: dict[str, Any] = {"type": json_type}
        description = param.get("description")
        if description is not None:
            prop["description"] = str(description)
        if "enum" in param:
            enum = param["enum"]
            if not isinstance(enum, list) or not enum or not all(_type_ok(v, json_type) for v in enum):
                raise ToolDeclarationError(
                    f"enum must be a non-empty list of {json_type} values.",
                    tool=tool,
                    key=f"{where}.enum",
                    fix="list the allowed values, e.g. enum: [get, describe].",
                )
            prop["enum"] = list(enum)
        if "items" in param:
            items = param["items"]
            if items not in PARAM_TYPES or json_type != "array":
                raise ToolDeclarationError(
                    "items is only for array parameters and must name a type.",
                    tool=tool,
                    key=f"{where}.items",
                    fix=f"use items: one of {', '.join(PARAM_TYPES)} on a type: array parameter.",
                )
            prop["items"] = {"type": items}
        has_default = "default" in param and param["default"] is not None
        if has_default:
            if not _type_ok(param["default"], json_type):
                raise ToolDeclarationError(
                    f"default {param['default']!r} is not a {json_type}.",
                    tool=tool,
                    key=f"{where}.default",
                    fix=f"give a {json_type} default or remove it.",
                )
            prop["default"] = param["default"]
        is_required = param.get("required", not has_default)
        if not isinstance(is_required, bool):
            raise ToolDeclarationError(
                f"required must be true or false, got {is_required!r}.",
                tool=tool,
                key=f"{where}.required",
                fix="write required: true or required: false.",
            )
        if is_required:
            required.append(name)
        properties[name] = prop
    return {"type": "object", "properties": properties, "required": required}


def positional_names(params: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None) -> tuple[str, ...]:
    """Names of declared parameters marked `positional: true` (cli tools), in declaration order."""
    if not params or isinstance(params, Mapping):
        return ()
    return tuple(str(p["name"]) for p in params if isinstance(p, Mapping) and p.get("positional"))


def unwrap(text: str) -> str:
    """Join hard-wrapped lines of a tagged description, so each [TAG] section reads as one line."""
    return re.sub(r"\s*\n(?!\[)\s*", " ", text.strip())


def truncate(text: str, limit: int) -> str:
    """Cut `text` to `limit` characters, marking the cut with ' …' so the reader knows."""
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + " …"
