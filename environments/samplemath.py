"""samplemath: arithmetic tasks with a calculator tool.

The calculator's docstring uses every verbosity tag, so the same task shows a different tool guide
at each verbosity level. The power operator `**` is only spelled out in its [SYNTACTICAL] section:
an agent given less documentation has to guess how to ask for a power.
"""

from corral_core.tools import ToolExecutionError, tool

OPERATIONS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**": lambda a, b: a**b,
}


@tool
def calculator(operation: str, a: float, b: float) -> float:
    """Apply one arithmetic operation to two numbers.

    [BRIEF] Compute `a <operation> b` for two numbers and return the result. [/BRIEF]

    [DETAILED] Both operands are floating-point numbers; the result is a float (12 * 12 returns
    144.0). Division by zero is reported as an error instead of returning infinity. [/DETAILED]

    [PROCEDURAL] Use this tool for every arithmetic step instead of computing in your head; call it
    once per operation. [/PROCEDURAL]

    [CONTEXTUAL] The tasks in this suite are exact arithmetic questions whose answers are checked
    numerically, so the calculator's output can be submitted as it is. [/CONTEXTUAL]

    [WORKFLOW_INTEGRATION] For expressions with several operations, evaluate the innermost
    parentheses first and feed each result into the next call; use round_number last if the task
    asks for a rounded answer. [/WORKFLOW_INTEGRATION]

    [SYNTACTICAL] `operation` is one symbol: "+", "-", "*", "/" or "**" (power: a ** b raises a to
    the power b; "^" is not supported). [/SYNTACTICAL]

    [RAISES] An unknown operation or a division by zero fails the call with a message. [/RAISES]

    [LIMITATIONS] Results beyond about 1e308 overflow; only two operands per call. [/LIMITATIONS]

    [EXAMPLES] {"operation": "+", "a": 17, "b": 25} returns 42.0;
    {"operation": "**", "a": 3, "b": 4} returns 81.0. [/EXAMPLES]

    Args:
        operation: The operation to apply. [SYNTACTICAL] One of "+", "-", "*", "/", "**". [/SYNTACTICAL]
        a: The left operand.
        b: The right operand.

    Returns:
        The result as a float.
    """
    apply = OPERATIONS.get(operation.strip())
    if apply is None:
        raise ToolExecutionError(f"Unknown operation {operation!r}.")
    if operation.strip() == "/" and b == 0:
        raise ToolExecutionError("Division by zero.")
    try:
        result = apply(a, b)
    except OverflowError:
        raise ToolExecutionError("The result is too large.") from None
    if isinstance(result, complex):
        raise ToolExecutionError(f"{a:g} ** {b:g} has no real value.")
    return float(result)


@tool
def round_number(value: float, digits: int = 0) -> float:
    """Round a number to a given count of decimal digits.

    Args:
        value: The number to round.
        digits: How many digits to keep after the decimal point.

    Returns:
        The rounded number.
    """
    return round(value, digits)
