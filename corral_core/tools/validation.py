"""Check and coerce call arguments against a tool's JSON schema (so YAML-declared tools get it too).

Coercion is lax where an LLM's intent is plain: "5" -> 5 for an integer or a number (an integer stays
an integer, as Corral passes it on, so a tool's `str(result)` reads "68", not "68.0"),
JSON text -> list/dict for array/object parameters (as Corral's `_preprocess_arguments` does),
"true" -> True for a boolean, and null for an optional parameter means "use the default". In a union,
an exact match wins before any coercion is tried. Messages follow Corral's wording.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from corral_core.tools.errors import ToolArgumentError


class _Mismatch(Exception):
    """A value that does not fit at `path`; `specific` marks errors more telling than "wrong type"."""

    def __init__(self, message: str, path: str, *, specific: bool = False) -> None:
        super().__init__(message)
        self.path = path
        self.specific = specific


def validate_arguments(
    parameters: Mapping[str, Any], arguments: Any, *, hidden_args: Iterable[str] = ()
) -> dict[str, Any]:
    """Return the coerced arguments, or raise ToolArgumentError saying what is wrong.

    Names in `hidden_args` (supplied by the environment, not the agent) are passed through unchecked.
    """
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(f"Arguments must be a JSON object, got {_json_type_of(arguments)}")
    hidden = set(hidden_args)
    properties: Mapping[str, Any] = parameters.get("properties", {})
    required = [name for name in parameters.get("required", []) if name not in hidden]
    missing = [name for name in required if name not in arguments]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise ToolArgumentError(f"Missing required argument{plural}: {', '.join(missing)}")
    unknown = [name for name in arguments if name not in properties and name not in hidden]
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        valid = ", ".join(properties) or "none (call it with {})"
        raise ToolArgumentError(f"Unknown argument{plural}: {', '.join(map(str, unknown))}. Valid arguments: {valid}")
    coerced: dict[str, Any] = {}
    for name, value in arguments.items():
        if name in hidden:
            coerced[name] = value
            continue
        schema = properties[name]
        if value is None and name not in required and not _accepts_null(schema):
            continue  # an LLM's null for an optional argument: let the default apply
        try:
            coerced[name] = _coerce(value, schema, name, lax=True)
        except _Mismatch as exc:
            raise ToolArgumentError(str(exc)) from None
    return coerced


def _accepts_null(schema: Mapping[str, Any]) -> bool:
    json_type = schema.get("type")
    if json_type is None and "anyOf" not in schema:
        return "enum" not in schema or None in schema["enum"]
    if json_type == "null" or (isinstance(json_type, list) and "null" in json_type):
        return True
    return any(_accepts_null(member) for member in schema.get("anyOf", ()))


def _json_type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _type_text(schema: Mapping[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(dict.fromkeys(_type_text(member) for member in schema["anyOf"]))
    json_type = schema.get("type")
    if isinstance(json_type, list):
        return " or ".join(json_type)
    return json_type or "any value"


def _coerce(value: Any, schema: Mapping[str, Any], path: str, lax: bool) -> Any:
    if "anyOf" in schema or isinstance(schema.get("type"), list):
        options = schema.get("anyOf") or [{**schema, "type": t} for t in schema["type"]]
        value = _coerce_union(value, options, schema, path, lax)
    elif schema.get("type") is not None:
        value = _coerce_type(value, schema["type"], schema, path, lax)
    enum = schema.get("enum")
    if enum is not None and not any(_same(value, allowed) for allowed in enum):
        raise _Mismatch(
            f"Invalid value for {path}. Must be one of: {json.dumps(enum, ensure_ascii=False)}", path, specific=True
        )
    return value


def _same(value: Any, allowed: Any) -> bool:
    """Equality that keeps True apart from 1 (bool is an int in Python, not in JSON)."""
    return value == allowed and isinstance(value, bool) == isinstance(allowed, bool)


def _coerce_union(value: Any, options: list[Any], schema: Mapping[str, Any], path: str, lax: bool) -> Any:
    specific: list[_Mismatch] = []
    for lax_pass in (False, True) if lax else (False,):
        for option in options:
            try:
                return _coerce(value, option, path, lax_pass)
            except _Mismatch as exc:
                if exc.specific or exc.path != path:  # a bad enum value or a bad item inside
                    specific.append(exc)
    if specific:
        raise specific[0]
    raise _Mismatch(f"Invalid type for argument {path}. Expected {_type_text(schema)}", path)


def _coerce_type(value: Any, json_type: str, schema: Mapping[str, Any], path: str, lax: bool) -> Any:
    wrong = _Mismatch(f"Invalid type for argument {path}. Expected {json_type}", path)
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if json_type == "string":
        if isinstance(value, str):
            return value
        if lax and is_number:
            return str(value)
    elif json_type == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if lax:
            number = _parse_number(value.strip()) if isinstance(value, str) else value if is_number else None
            if isinstance(number, int) or (isinstance(number, float) and number.is_integer()):
                return int(number)
    elif json_type == "number":  # an integer stays an integer (JSON has one number type): 68 -> "68"
        if is_number:
            return value
        if lax and isinstance(value, str):
            number = _parse_number(value.strip())
            if number is not None:
                return number
    elif json_type == "boolean":
        if isinstance(value, bool):
            return value
        if lax and isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if lax and is_number and value in (0, 1):
            return bool(value)
    elif json_type == "null":
        if value is None:
            return None
    elif json_type == "array":
        return _coerce_array(_from_json_text(value, "[", path, json_type) if lax else value, schema, path, lax)
    elif json_type == "object":
        return _coerce_object(_from_json_text(value, "{", path, json_type) if lax else value, schema, path, lax)
    else:
        return value  # a type we do not check (schemas are vetted when the tool is built)
    raise wrong


def _parse_number(text: str) -> int | float | None:
    for parse in (int, float):
        try:
            number = parse(text)
        except ValueError:
            continue
        return number if isinstance(number, int) or math.isfinite(number) else None
    return None


def _from_json_text(value: Any, opener: str, path: str, json_type: str) -> Any:
    if not (isinstance(value, str) and value.lstrip().startswith(opener)):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise _Mismatch(
            f"Invalid type for argument {path}. Expected {json_type} (the text given is not valid JSON: {exc.msg})",
            path,
            specific=True,
        ) from None


def _coerce_array(value: Any, schema: Mapping[str, Any], path: str, lax: bool) -> list[Any]:
    if lax and isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise _Mismatch(f"Invalid type for argument {path}. Expected array", path)
    prefix = schema.get("prefixItems")
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    if len(value) < low or (high is not None and len(value) > high):
        count = f"{low}" if low == high else f"{low} to {high}" if high is not None else f"at least {low}"
        raise _Mismatch(f"Invalid value for {path}. Expected {count} items, got {len(value)}", path, specific=True)
    items = schema.get("items")
    result = []
    for index, item in enumerate(value):
        item_schema = prefix[index] if prefix and index < len(prefix) else items
        result.append(_coerce(item, item_schema, f"{path}[{index}]", lax) if item_schema else item)
    return result


def _coerce_object(value: Any, schema: Mapping[str, Any], path: str, lax: bool) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _Mismatch(f"Invalid type for argument {path}. Expected object", path)
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    missing = [name for name in schema.get("required", []) if name not in value]
    if missing:
        raise _Mismatch(f"Missing required key(s) in {path}: {', '.join(missing)}", path, specific=True)
    result = {}
    for key, item in value.items():
        if key in properties:
            result[key] = _coerce(item, properties[key], f"{path}.{key}", lax)
        elif extra is False:
            raise _Mismatch(f"Unknown key in {path}: {key}", path, specific=True)
        elif isinstance(extra, Mapping):
            result[key] = _coerce(item, extra, f"{path}[{json.dumps(key)}]", lax)
        else:
            result[key] = item
    return result
