"""Python type hints to JSON schema (OpenAI function format), and checks of declared schemas.

Supported: str, int, float, bool, None, Any, list[X], tuple[X, Y] / tuple[X, ...], dict[str, X],
Literal[...] (-> enum), Optional[X] / X | None and other unions (-> a type array when every member is
a plain type, else anyOf), Annotated[X, ...] (-> X). Anything else is refused rather than guessed:
Corral silently turned unknown types into "string", which misleads function-calling models.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Union

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
SUPPORTED_TYPES_TEXT = (
    "str, int, float, bool, None, Any, list[X], tuple[X, ...], dict[str, X], Literal[...], "
    "Optional[X] or X | Y unions of these"
)
_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
_PY_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


class UnsupportedAnnotation(TypeError):
    """A type hint with no faithful JSON-schema form; `annotation` is the offending (inner) type."""

    def __init__(self, annotation: Any) -> None:
        self.annotation = annotation
        super().__init__(type_repr(annotation))


def type_repr(annotation: Any) -> str:
    """A readable name for a type hint: `int`, `list[float]`, `datetime.datetime`."""
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        module = annotation.__module__
        return annotation.__qualname__ if module == "builtins" else f"{module}.{annotation.__qualname__}"
    return repr(annotation).replace("typing.", "")


def annotation_schema(annotation: Any) -> dict[str, Any]:
    """The JSON schema for one parameter's type hint; raises UnsupportedAnnotation."""
    if annotation is Any:
        return {}
    if isinstance(annotation, type) and annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return annotation_schema(args[0])
    if origin is Literal:
        return _literal_schema(annotation, args)
    if origin is Union or origin is types.UnionType:
        return _union_schema([annotation_schema(arg) for arg in args])
    if annotation is list or origin is list:
        return {"type": "array", "items": annotation_schema(args[0])} if args else {"type": "array"}
    if annotation is tuple or origin is tuple:
        return _tuple_schema(args)
    if annotation is dict or origin is dict:
        if not args:
            return {"type": "object"}
        if args[0] not in (str, Any):
            raise UnsupportedAnnotation(annotation)  # JSON object keys are always strings
        return {"type": "object", "additionalProperties": annotation_schema(args[1])}
    raise UnsupportedAnnotation(annotation)


def _literal_schema(annotation: Any, values: tuple[Any, ...]) -> dict[str, Any]:
    if not values or not all(type(v) in _SIMPLE for v in values):
        raise UnsupportedAnnotation(annotation)  # e.g. Literal[SomeEnum.X]: not a JSON value
    json_types = list(dict.fromkeys(_SIMPLE[type(v)] for v in values))
    if json_types == ["integer", "number"] or json_types == ["number", "integer"]:
        json_types = ["number"]
    schema: dict[str, Any] = {"enum": list(values)}
    if len(json_types) == 1:
        schema = {"type": json_types[0], **schema}
    return schema


def _union_schema(members: list[dict[str, Any]]) -> dict[str, Any]:
    if any(member == {} for member in members):
        return {}  # Any absorbs every other member
    if all(set(member) == {"type"} and isinstance(member["type"], str) for member in members):
        return {"type": list(dict.fromkeys(member["type"] for member in members))}
    return {"anyOf": members}


def _tuple_schema(args: tuple[Any, ...]) -> dict[str, Any]:
    if not args:
        return {"type": "array"}
    if len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": annotation_schema(args[0])}
    if args == ((),):  # tuple[()]: the empty tuple
        return {"type": "array", "maxItems": 0}
    items = [annotation_schema(arg) for arg in args]
    return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}


def resolve_ref(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema` with a local `$ref` (`#/$defs/X`, `#/definitions/X`) replaced by what it points to
    in `root` (its own keys, e.g. a description, kept over the target's); other schemas as they are."""
    seen: set[str] = set()
    while isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#/") and schema["$ref"] not in seen:
        ref = schema["$ref"]
        seen.add(ref)
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping):
            return schema
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def schema_type_name(schema: Mapping[str, Any]) -> str:
    """A Python-style type name for a schema (Corral shows these): `float`, `list[str]`, `int | None`."""
    if "anyOf" in schema:
        return " | ".join(schema_type_name(member) for member in schema["anyOf"])
    json_type = schema.get("type")
    if isinstance(json_type, list):
        return " | ".join(schema_type_name({**schema, "type": t}) for t in json_type)
    if json_type == "array":
        if schema.get("prefixItems"):
            return f"tuple[{', '.join(schema_type_name(s) for s in schema['prefixItems'])}]"
        items = schema.get("items")
        return f"list[{schema_type_name(items)}]" if isinstance(items, Mapping) else "list"
    if json_type == "object":
        extra = schema.get("additionalProperties")
        return f"dict[str, {schema_type_name(extra)}]" if isinstance(extra, Mapping) else "dict"
    if json_type is None:
        return "Any"
    return _PY_NAMES.get(json_type, str(json_type))


def schema_choices(schema: Mapping[str, Any]) -> list[Any] | None:
    """The allowed values of a parameter (its enum, or the enum of a union member), if any."""
    if "enum" in schema:
        return list(schema["enum"])
    for member in schema.get("anyOf", ()):
        if isinstance(member, Mapping) and "enum" in member:
            return list(member["enum"])
    return None


def schema_problem(schema: Any, where: str) -> str | None:
    """What is wrong with a (property) schema, in words naming `where`, or None if we can handle it."""
    if not isinstance(schema, Mapping):
        return f"{where} must be a JSON-schema object, got {type(schema).__name__}"
    json_type = schema.get("type")
    listed = json_type if isinstance(json_type, list) else [json_type] if json_type is not None else []
    unknown = [t for t in listed if t not in JSON_TYPES]
    if unknown:
        return f"{where} has unknown type {unknown[0]!r} (valid types: {', '.join(JSON_TYPES)})"
    if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
        return f"{where}.enum must be a non-empty list"
    if "description" in schema and not isinstance(schema["description"], str):
        return f"{where}.description must be text"
    children: list[tuple[Any, str]] = []
    if "items" in schema:
        children.append((schema["items"], f"{where}.items"))
    for key in ("prefixItems", "anyOf"):
        if key in schema:
            if not isinstance(schema[key], list):
                return f"{where}.{key} must be a list of schemas"
            children += [(member, f"{where}.{key}[{i}]") for i, member in enumerate(schema[key])]
    if isinstance(schema.get("additionalProperties"), Mapping):
        children.append((schema["additionalProperties"], f"{where}.additionalProperties"))
    if "properties" in schema:
        if not isinstance(schema["properties"], Mapping):
            return f"{where}.properties must be a mapping of name to schema"
        children += [(member, f"{where}.properties.{name}") for name, member in schema["properties"].items()]
    for child, child_where in children:
        problem = schema_problem(child, child_where)
        if problem:
            return problem
    return None


def parameters_problem(parameters: Any) -> str | None:
    """What is wrong with a tool's parameters schema (an object of named properties), or None."""
    if not isinstance(parameters, Mapping) or parameters.get("type") != "object":
        return 'parameters must be a JSON-schema object: {"type": "object", "properties": {...}, "required": [...]}'
    properties = parameters.get("properties", {})
    if not isinstance(properties, Mapping):
        return "parameters.properties must be a mapping of argument name to schema"
    required = parameters.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return "parameters.required must be a list of argument names"
    missing = [name for name in required if name not in properties]
    if missing:
        return f"parameters.required names {', '.join(missing)}, which are not in parameters.properties"
    return schema_problem(parameters, "parameters")
