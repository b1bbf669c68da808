"""calculator: arithmetic by walking the AST of an expression, never by eval()."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any, cast

from corral_core.tools.base import Tool, ToolExecutionError
from corral_core.tools.builtin.params import unwrap

MAX_EXPRESSION_CHARS = 500
MAX_EXPONENT = 1000
MAX_INT_DIGITS = 1000  # results with more digits are refused: they only burn CPU and context
MAX_FACTORIAL = 1000

CALCULATOR_DESCRIPTION = unwrap(
    """\
[BRIEF] Evaluate an arithmetic expression and return the number. [/BRIEF]
[DETAILED] Supports + - * / // % ** with parentheses and unary minus, the constants pi, e and tau,
and the functions sqrt, exp, log (natural, or log(x, base)), log10, log2, sin, cos, tan, asin, acos,
atan, atan2, sinh, cosh, tanh, degrees, radians, hypot, abs, round, floor, ceil, factorial, min,
max and pow. Angles are in radians. [/DETAILED]
[PROCEDURAL] Use it for any calculation whose exact value matters instead of computing in your head. [/PROCEDURAL]
[WORKFLOW_INTEGRATION] Pass the number it returns on to later steps or to your final answer
unchanged. [/WORKFLOW_INTEGRATION]
[SYNTACTICAL] Python-style syntax: ** is power (^ is refused), / is true division, // floor division. [/SYNTACTICAL]
[LIMITATIONS] At most 500 characters; exponents beyond +/-1000 and results over 1000 digits are
refused; no variables, strings, comparisons or attribute access. [/LIMITATIONS]
[EXAMPLES] "(3 + 4) * 5" -> 35; "sqrt(2) * pi" -> 4.44288293815837; "log(8, 2)" -> 3 [/EXAMPLES]"""
)

_BINARY_OPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY_OPS: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _bounded_power(base: Any, exponent: Any) -> Any:
    if abs(exponent) > MAX_EXPONENT:
        raise ToolExecutionError(f"Exponent {exponent} is too large (limit is {MAX_EXPONENT} in magnitude).")
    # Estimate an integer result's digit count before computing, so 10**1000**... never runs.
    if (isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1
            and math.log10(abs(base)) * exponent > MAX_INT_DIGITS):
        raise ToolExecutionError(f"Result would have more than {MAX_INT_DIGITS} digits.")
    if base == 0 and exponent < 0:
        raise ZeroDivisionError
    return operator.pow(base, exponent)


def _factorial(n: Any) -> int:
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if not isinstance(n, int) or n < 0:
        raise ToolExecutionError("factorial() needs a non-negative integer.")
    if n > MAX_FACTORIAL:
        raise ToolExecutionError(f"factorial() argument {n} is too large (limit is {MAX_FACTORIAL}).")
    return math.factorial(n)


def _log(x: Any, base: Any = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "exp": math.exp, "log": _log, "log10": math.log10, "log2": math.log2,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "degrees": math.degrees, "radians": math.radians, "hypot": math.hypot, "abs": abs, "round": round,
    "floor": math.floor, "ceil": math.ceil, "factorial": _factorial, "min": min, "max": max,
    "pow": _bounded_power,
}  # fmt: skip


_INT_LIMIT = 10**MAX_INT_DIGITS


def _check_magnitude(value: Any) -> Any:
    if isinstance(value, complex):
        raise ToolExecutionError("Result is a complex number (e.g. a fractional power of a negative number).")
    if isinstance(value, int) and abs(value) >= _INT_LIMIT:
        raise ToolExecutionError(f"Result has more than {MAX_INT_DIGITS} digits.")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolExecutionError("Result is not a finite number (overflow or an infinite input).")
    return value


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ToolExecutionError(f"Only numbers are allowed, not {node.value!r}.")
        return _check_magnitude(node.value)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.BitXor):
            raise ToolExecutionError("'^' is not a power operator here; use ** (e.g. 2 ** 10).")
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _check_magnitude(_bounded_power(left, right))
        op = _BINARY_OPS.get(type(node.op))
        if op is None:
            raise ToolExecutionError(f"Operator {type(node.op).__name__} is not allowed.")
        return _check_magnitude(op(left, right))
    if isinstance(node, ast.UnaryOp):
        unary = _UNARY_OPS.get(type(node.op))
        if unary is None:
            raise ToolExecutionError(f"Operator {type(node.op).__name__} is not allowed.")
        return unary(_evaluate(node.operand))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise ToolExecutionError(f"Unknown name '{node.id}'. Known constants: {', '.join(_CONSTANTS)}.")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            shown = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ToolExecutionError(
                f"Function '{shown}' is not allowed. Allowed: {', '.join(sorted(_FUNCTIONS))}."
            )
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            raise ToolExecutionError(f"{node.func.id}() takes plain positional arguments only.")
        args = [_evaluate(arg) for arg in node.args]
        try:
            return _check_magnitude(_FUNCTIONS[node.func.id](*args))
        except TypeError as exc:
            raise ToolExecutionError(f"{node.func.id}(): {exc}") from None
    raise ToolExecutionError(f"{type(node).__name__} is not allowed in a calculator expression.")


def format_number(value: Any) -> str:
    """Render a result: ints exactly, floats to 15 significant digits (0.1 + 0.2 -> 0.3)."""
    if isinstance(value, float):
        return f"{value:.15g}"
    return str(value)


def evaluate_expression(expression: str) -> int | float:
    """Evaluate `expression` safely or raise ToolExecutionError saying what is wrong."""
    if not isinstance(expression, str) or not expression.strip():
        raise ToolExecutionError("Expression is empty; give an arithmetic expression such as '2 + 2'.")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolExecutionError(
            f"Expression is {len(expression)} characters long; the limit is {MAX_EXPRESSION_CHARS}."
        )
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolExecutionError(f"Invalid expression: {exc.msg}.") from None
    except (RecursionError, MemoryError):
        raise ToolExecutionError("Expression is nested too deeply.") from None
    try:
        return cast("int | float", _evaluate(tree))
    except ZeroDivisionError:
        raise ToolExecutionError("Division by zero.") from None
    except OverflowError:
        raise ToolExecutionError("Result is too large (overflow).") from None
    except ValueError as exc:
        raise ToolExecutionError(f"Math error: {exc} (check the arguments' range).") from None
    except RecursionError:
        raise ToolExecutionError("Expression is nested too deeply.") from None


def calculator_tool(*, name: str = "calculator", risk: str = "safe") -> Tool:
    """The calculator builtin as a Tool taking one `expression` string."""

    def calculator(expression: str) -> str:
        return format_number(evaluate_expression(expression))

    parameters = {
        "type": "object",
        "properties": {
            "expression": {
                "type": "string",
                "description": "[BRIEF] The arithmetic expression to evaluate. [/BRIEF]"
                "[EXAMPLES] (3 + 4) * 5; sqrt(16) + 2 ** 3 [/EXAMPLES]",
            }
        },
        "required": ["expression"],
    }
    return Tool(name, CALCULATOR_DESCRIPTION, parameters, calculator, risk=risk)
