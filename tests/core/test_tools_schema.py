"""Type hints become faithful JSON schemas; anything we cannot describe is refused, never guessed."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal, Optional, Union

import pytest

from corral_core.tools import ToolDefinitionError, tool
from corral_core.tools.schema import annotation_schema, parameters_problem, schema_type_name


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (Any, {}),
        (list[float], {"type": "array", "items": {"type": "number"}}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (list, {"type": "array"}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict[str, list[int]],
         {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}}),
        (dict, {"type": "object"}),
        (
            tuple[str, int],
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
        ),
        (tuple[float, ...], {"type": "array", "items": {"type": "number"}}),
        (Optional[int], {"type": ["integer", "null"]}),
        (int | None, {"type": ["integer", "null"]}),
        (Union[str, int], {"type": ["string", "integer"]}),
        (
            Optional[list[float]],
            {"anyOf": [{"type": "array", "items": {"type": "number"}}, {"type": "null"}]},
        ),
        (Literal["+", "-"], {"type": "string", "enum": ["+", "-"]}),
        (Literal[1, 2, 3], {"type": "integer", "enum": [1, 2, 3]}),
        (Literal["a", 1], {"enum": ["a", 1]}),
        (Optional[Literal["a", "b"]], {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]}),
        (Annotated[int, "meta"], {"type": "integer"}),
        (Optional[Any], {}),
    ],
)
def test_annotation_schema(annotation: Any, expected: dict[str, Any]) -> None:
    assert annotation_schema(annotation) == expected


def test_decorated_tool_has_openai_schema_with_defaults_and_required() -> None:
    @tool
    def search(query: str, limit: int = 5, tags: list[str] | None = None, exact: bool = False) -> list[str]:
        """Search the notes.

        Args:
            query: Words to look for.
            limit: How many hits to return.
            tags: Only notes with one of these tags.
            exact: Match whole words only.
        """
        return []

    params = search.to_openai()["function"]["parameters"]
    assert params["required"] == ["query"]
    assert params["properties"]["limit"] == {"type": "integer", "description": "How many hits to return.", "default": 5}
    assert "default" not in params["properties"]["tags"]  # a null default is not stated (as Corral converts E2 keys)
    assert params["properties"]["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert params["properties"]["exact"]["type"] == "boolean"


def test_tuple_default_is_stored_as_json_list() -> None:
    @tool
    def shift(point: tuple[int, int] = (0, 0)) -> str:
        """Shift a point.

        Args:
            point: The x and y.
        """
        return str(point)

    assert shift.parameters["properties"]["point"]["default"] == [0, 0]


@pytest.mark.parametrize(
    ("annotation", "fragment"),
    [
        (datetime.datetime, "datetime.datetime"),
        (list[datetime.date], "datetime.date is the part not supported"),
        (dict[int, str], "dict[int, str]"),
        (set[int], "set[int]"),
        (bytes, "bytes"),
    ],
)
def test_unsupported_annotation_is_a_definition_error_naming_tool_param_and_type(
    annotation: Any, fragment: str
) -> None:
    def when(moment) -> str:  # type: ignore[no-untyped-def]
        """Do something.

        Args:
            moment: The moment.
        """
        return ""

    when.__annotations__ = {"moment": annotation, "return": str}
    with pytest.raises(ToolDefinitionError) as info:
        tool(when)
    message = str(info.value)
    assert "'when" in message and "'moment'" in message and fragment in message
    assert "Supported:" in message


@pytest.mark.parametrize(
    ("schema", "name"),
    [
        ({"type": "string"}, "str"),
        ({"type": ["integer", "null"]}, "int | None"),
        ({"type": "array", "items": {"type": "number"}}, "list[float]"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, "tuple[str, int]"),
        ({"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}, "list[str] | None"),
        ({}, "Any"),
    ],
)
def test_schema_type_name_is_python_style(schema: dict[str, Any], name: str) -> None:
    assert schema_type_name(schema) == name


@pytest.mark.parametrize(
    ("parameters", "fragment"),
    [
        ([], "JSON-schema object"),
        ({"type": "object", "properties": {"a": {"type": "int"}}}, "unknown type 'int'"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "required names b"),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "float"}}}},
         "parameters.properties.a.items"),
        ({"type": "object", "properties": {"a": {"type": "string", "enum": []}}}, "enum must be a non-empty list"),
    ],
)
def test_declared_schema_problems_are_reported(parameters: Any, fragment: str) -> None:
    problem = parameters_problem(parameters)
    assert problem is not None and fragment in problem


def test_well_formed_declared_schema_passes() -> None:
    assert parameters_problem({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}) is None
