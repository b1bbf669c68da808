"""calculator and datetime builtins: exact answers, refusals in words, an injectable clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from corral_core.tools.builtin import calculator_tool, datetime_tool, evaluate_expression
from corral_core.tools.builtin.calculator import format_number
from corral_core.tools.errors import ToolExecutionError


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("(3 + 4) * 5", "35"),
        ("17 + 25", "42"),
        ("7 / 2", "3.5"),
        ("7 // 2", "3"),
        ("10 % 3", "1"),
        ("-2 ** 2", "-4"),
        ("2 ** 10", "1024"),
        ("2 ** -1", "0.5"),
        ("+5 - -3", "8"),
        ("0.1 + 0.2", "0.3"),
        ("1_000 * 3", "3000"),
    ],
)
def test_arithmetic(expression: str, expected: str) -> None:
    assert format_number(evaluate_expression(expression)) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("sqrt(16)", "4"),
        ("log(8, 2)", "3"),
        ("log(e)", "1"),
        ("log10(1000)", "3"),
        ("sin(pi / 2)", "1"),
        ("factorial(5)", "120"),
        ("max(1, 5, 3) + min(4, 2)", "7"),
        ("abs(-3) + round(2.6) + floor(1.9) + ceil(1.1)", "9"),
        ("hypot(3, 4)", "5"),
        ("pow(2, 8)", "256"),
        ("tau / pi", "2"),
    ],
)
def test_functions_and_constants(expression: str, expected: str) -> None:
    assert format_number(evaluate_expression(expression)) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('true')", "not allowed"),
        ("(1).__class__", "Attribute is not allowed"),
        ("open('/etc/passwd')", "Function 'open' is not allowed"),
        ("x + 1", "Unknown name 'x'"),
        ("'a' * 3", "Only numbers"),
        ("True + 1", "Only numbers"),
        ("lambda: 1", "Lambda is not allowed"),
        ("[1, 2]", "List is not allowed"),
        ("1 < 2", "Compare is not allowed"),
        ("sqrt(x=4)", "positional arguments only"),
        ("2 ^ 3", r"use \*\*"),
        ("1 / 0", "Division by zero"),
        ("5 % 0", "Division by zero"),
        ("sqrt(-1)", "Math error"),
        ("(-8) ** 0.5", "complex"),
        ("1e308 * 10", "not a finite number"),
        ("2 +", "Invalid expression"),
        ("", "empty"),
    ],
)
def test_refusals_are_clear(expression: str, message: str) -> None:
    with pytest.raises(ToolExecutionError, match=message):
        evaluate_expression(expression)


@pytest.mark.parametrize(
    "expression",
    ["2 ** 100000", "pow(10, 5000)", "9 ** 9 ** 9", "10 ** 999 * 10 ** 999", "factorial(100000)", "99 ** 999"],
)
def test_huge_results_are_refused(expression: str) -> None:
    with pytest.raises(ToolExecutionError, match="too large|digits"):
        evaluate_expression(expression)


def test_long_and_deep_expressions_are_refused() -> None:
    with pytest.raises(ToolExecutionError, match="limit is 500"):
        evaluate_expression("1 + " * 200 + "1")
    with pytest.raises(ToolExecutionError):
        evaluate_expression("(" * 240 + "1" + ")" * 240)


def test_calculator_tool_executes_and_declares_its_schema() -> None:
    calculator = calculator_tool()
    assert calculator.name == "calculator"
    assert calculator.risk.value == "safe"
    assert calculator.parameters["required"] == ["expression"]
    assert calculator.execute(expression="(3 + 4) * 5") == "35"
    with pytest.raises(ToolExecutionError, match="Unknown name"):
        calculator.execute(expression="os")


def test_datetime_uses_the_injected_clock_in_utc() -> None:
    fixed = datetime(2025, 3, 14, 15, 9, 26, 535_000, tzinfo=UTC)
    assert datetime_tool(clock=lambda: fixed).execute() == "2025-03-14T15:09:26+00:00"
    paris = timezone(timedelta(hours=1))
    local = datetime(2025, 3, 14, 16, 9, 26, tzinfo=paris)
    assert datetime_tool(clock=lambda: local).execute() == "2025-03-14T15:09:26+00:00"
    naive = datetime(2025, 1, 2, 3, 4, 5)
    assert datetime_tool(clock=lambda: naive).execute() == "2025-01-02T03:04:05+00:00"


def test_datetime_default_clock_is_now() -> None:
    reported = datetime.fromisoformat(datetime_tool().execute())
    assert reported.utcoffset() == timedelta(0)
    assert abs(reported - datetime.now(UTC)) < timedelta(minutes=1)
