"""Argument validation is driven by the JSON schema, coerces what is plainly meant, and says what is wrong."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from corral_core.tools import Tool, ToolArgumentError, tool


@tool
def calc(
    operation: Literal["+", "-"],
    a: float,
    b: int,
    values: list[float] | None = None,
    weights: dict[str, int] | None = None,
    pair: tuple[str, int] | None = None,
    flag: bool = False,
    label: str = "",
    anything: Any = None,
    mode: Literal["fast", "slow"] | None = None,
) -> str:
    """Exercise every schema construct.

    Args:
        operation: Which operation.
        a: A number.
        b: An integer.
        values: Some numbers.
        weights: Name to weight.
        pair: A name and a count.
        flag: A switch.
        label: A label.
        anything: Whatever.
        mode: Speed.
    """
    return "ok"


BASE = {"operation": "+", "a": 1.5, "b": 2}


def check(**overrides: Any) -> dict[str, Any]:
    return calc.validate({**BASE, **overrides})


@pytest.mark.parametrize(
    ("overrides", "key", "expected"),
    [
        ({"b": "5"}, "b", 5),
        ({"b": " 7 "}, "b", 7),
        ({"b": 4.0}, "b", 4),
        ({"a": 5}, "a", 5),
        ({"a": "2.5"}, "a", 2.5),
        ({"a": "2"}, "a", 2),
        ({"values": "[1, 2.5]"}, "values", [1, 2.5]),
        ({"values": [1, 2]}, "values", [1, 2]),
        ({"weights": '{"x": "3"}'}, "weights", {"x": 3}),
        ({"pair": ["n", "4"]}, "pair", ["n", 4]),
        ({"flag": "true"}, "flag", True),
        ({"flag": "False"}, "flag", False),
        ({"label": 12}, "label", "12"),
        ({"anything": {"deep": [1]}}, "anything", {"deep": [1]}),
        ({"mode": "fast"}, "mode", "fast"),
        ({"mode": None}, "mode", None),
    ],
)
def test_lax_coercion(overrides: dict[str, Any], key: str, expected: Any) -> None:
    result = check(**overrides)
    assert result[key] == expected
    assert type(result[key]) is type(expected)


def test_an_integer_stays_an_integer_for_a_number_parameter() -> None:
    # JSON has one number type and Corral passes an integer on as it came: a tool's str(a + b) is "68"
    result = check(a=3, b=3)
    assert result["a"] == 3 and isinstance(result["a"], int)
    assert result["b"] == 3 and isinstance(result["b"], int)
    assert check(a=2.5)["a"] == 2.5


def test_null_for_optional_non_nullable_argument_means_default() -> None:
    assert "flag" not in check(flag=None)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"a": 1, "b": 2}, "Missing required argument: operation"),
        ({"b": 2}, "Missing required arguments: operation, a"),
        ({**BASE, "c": 1}, "Unknown argument: c. Valid arguments: operation, a, b,"),
        ({**BASE, "operation": "*"}, 'Invalid value for operation. Must be one of: ["+", "-"]'),
        ({**BASE, "b": "five"}, "Invalid type for argument b. Expected integer"),
        ({**BASE, "b": 2.5}, "Invalid type for argument b. Expected integer"),
        ({**BASE, "b": True}, "Invalid type for argument b. Expected integer"),
        ({**BASE, "a": "nan"}, "Invalid type for argument a. Expected number"),
        ({**BASE, "a": [1]}, "Invalid type for argument a. Expected number"),
        ({**BASE, "flag": "maybe"}, "Invalid type for argument flag. Expected boolean"),
        ({**BASE, "values": [1, "x"]}, "Invalid type for argument values[1]. Expected number"),
        ({**BASE, "values": "[1, 2"},
         "Invalid type for argument values. Expected array (the text given is not valid JSON"),
        ({**BASE, "values": 3}, "Invalid type for argument values. Expected array or null"),
        ({**BASE, "weights": {"x": "heavy"}}, 'Invalid type for argument weights["x"]. Expected integer'),
        ({**BASE, "pair": ["n"]}, "Invalid value for pair. Expected 2 items, got 1"),
        ({**BASE, "mode": "medium"}, 'Invalid value for mode. Must be one of: ["fast", "slow"]'),
        ([1, 2], "Arguments must be a JSON object, got array"),
    ],
)
def test_invalid_arguments_have_corral_like_messages(arguments: Any, message: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        calc.validate(arguments)
    assert str(info.value).startswith(message)


def test_union_prefers_exact_match_before_coercion() -> None:
    @tool
    def echo(value: int | str) -> str:
        """Echo a value.

        Args:
            value: Anything textual or numeric.
        """
        return str(value)

    assert echo.validate({"value": "5"}) == {"value": "5"}
    assert echo.validate({"value": 5}) == {"value": 5}


def test_yaml_declared_tool_gets_the_same_validation() -> None:
    weather = Tool(
        "weather",
        "Get the weather.",
        {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "default": 1},
                "units": {"type": "string", "enum": ["metric", "imperial"]},
                "point": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
            },
            "required": ["city"],
        },
        lambda **kw: kw,
    )
    assert weather.validate({"city": "Oslo", "days": "3"}) == {"city": "Oslo", "days": 3}
    assert weather.validate({"city": "Oslo", "point": '{"lat": "59.9"}'})["point"] == {"lat": 59.9}
    with pytest.raises(ToolArgumentError, match="Missing required argument: city"):
        weather.validate({})
    with pytest.raises(ToolArgumentError, match=r"Must be one of: \["):
        weather.validate({"city": "Oslo", "units": "kelvin"})
    with pytest.raises(ToolArgumentError, match="Missing required key"):
        weather.validate({"city": "Oslo", "point": {}})


def test_validate_returns_a_new_dict_and_leaves_the_input_alone() -> None:
    arguments = {**BASE, "b": "5"}
    result = calc.validate(arguments)
    assert arguments["b"] == "5" and result["b"] == 5
