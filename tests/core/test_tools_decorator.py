"""@tool reads the docstring and type hints; every authoring mistake fails at definition time."""

from __future__ import annotations

from typing import Literal

import pytest

from corral_core.tools import RiskLevel, Tool, ToolDefinitionError, tool


def test_bare_decorator_builds_tool_from_docstring_and_hints() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two integers.

        Second paragraph with more detail.

        Args:
            a: The first number.
            b (int): The second number,
                continued on a second line.

        Returns:
            The sum.
        """
        return a + b

    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two integers."  # Corral's @tool keeps an untagged docstring's first paragraph
    assert "Args:" not in add.doc and "The first number" not in add.doc
    assert "Second paragraph" in add.doc and "Returns:" in add.doc
    props = add.parameters["properties"]
    assert props["b"]["description"] == "The second number, continued on a second line."
    assert add.parameters["required"] == ["a"]
    assert add(1) == 3  # still callable as the plain function
    assert add.risk is RiskLevel.SAFE and add.render == "text"


def test_decorator_with_options() -> None:
    @tool(name="remove_file", risk="confirm", render="table")
    def rm(path: str) -> str:
        """Delete a file.

        Args:
            path: File to delete.
        """
        return path

    assert rm.name == "remove_file"
    assert rm.risk is RiskLevel.CONFIRM
    assert rm.render == "table"


def test_hidden_args_are_left_out_of_the_schema_but_reach_the_function() -> None:
    @tool(hidden_args=("secret",))
    def check(answer: str, secret: str) -> bool:
        """Check an answer against the environment's secret.

        Args:
            answer: The guess.
        """
        return answer == secret

    assert list(check.parameters["properties"]) == ["answer"]
    assert check.hidden_args == ("secret",)
    assert check.validate({"answer": "x", "secret": "x"}) == {"answer": "x", "secret": "x"}
    assert check.execute(answer="x", secret="x") == "True"


def test_literal_and_choices_fragment_become_enum_without_eval() -> None:
    @tool
    def pick(color: Literal["red", "blue"], size: str) -> str:
        """Pick a shirt.

        Args:
            color: Shirt color.
            size: Shirt size (choices: ["S", "M", "L"])
        """
        return color + size

    props = pick.parameters["properties"]
    assert props["color"]["enum"] == ["red", "blue"]
    assert props["size"]["enum"] == ["S", "M", "L"]


def test_zero_argument_tool_needs_no_args_section() -> None:
    @tool
    def now() -> str:
        """Tell the time."""
        return "noon"

    assert now.parameters == {"type": "object", "properties": {}, "required": []}


def _define(source: str) -> None:
    """Run a tool definition; annotations are real objects (no __future__ import in exec)."""
    exec(source, {"tool": tool, "Literal": Literal})


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("@tool\ndef f(a: int) -> int:\n    return a\n", "has no docstring"),
        ("@tool\ndef f(a: int) -> int:\n    '''   '''\n    return a\n", "has no docstring"),
        ("@tool\ndef f(a) -> int:\n    '''Do.\n\n    Args:\n        a: x.\n    '''\n", "no type hints for: a"),
        ("@tool\ndef f(a: int):\n    '''Do.\n\n    Args:\n        a: x.\n    '''\n", "no return type annotation"),
        ("@tool\ndef f(a: int) -> int:\n    '''Do it.'''\n", "no 'Args:' section"),
        (
            "@tool\ndef f(a: int, b: int) -> int:\n    '''Do.\n\n    Args:\n        a: x.\n    '''\n",
            "missing documentation for parameters: b",
        ),
        (
            "@tool\ndef f(a: int) -> int:\n    '''Do.\n\n    Args:\n        a: x.\n        c: y.\n    '''\n",
            "documents c, which are not parameters",
        ),
        (
            "@tool\ndef f(a: int) -> int:\n    '''Do.\n\n    Args:\n        a: x.\n        a: y.\n    '''\n",
            "documented twice",
        ),
        (
            "@tool\ndef f(a: int) -> int:\n    '''Do.\n\n    Args:\n        a:\n    '''\n",
            "empty description",
        ),
        (
            "@tool\ndef f(a: int) -> int:\n    '''Do.\n\n    Args:\n        a: x.\n      what is this\n    '''\n",
            "is not 'name: description'",
        ),
        (
            "@tool\ndef f(a: int) -> int:\n    '''Do. [DETAILED] more\n\n    Args:\n        a: x.\n    '''\n",
            "unclosed tags: DETAILED (opened 1 times, closed 0 times)",
        ),
        (
            "@tool\ndef f(a: int) -> int:\n    '''Do.\n\n    Args:\n        a: x [BRIEF] y.\n    '''\n",
            "unclosed tags: BRIEF",
        ),
        ("@tool\ndef f(*a: int) -> int:\n    '''Do.\n\n    Args:\n        a: x.\n    '''\n", "*args"),
        ("@tool\ndef f(**a: int) -> int:\n    '''Do.\n\n    Args:\n        a: x.\n    '''\n", "**kwargs"),
        (
            "@tool(hidden_args=['ghost'])\ndef f(a: int) -> int:\n    '''Do.\n\n    Args:\n        a: x.\n    '''\n",
            "hidden_args ghost",
        ),
        (
            "@tool\ndef f(a: int) -> int:\n"
            "    '''[DETAILED] only details [/DETAILED]\n\n    Args:\n        a: x.\n    '''\n",
            "no summary",
        ),
        (
            "@tool\ndef f(a: int = object()) -> int:\n    '''Do.\n\n    Args:\n        a: x.\n    '''\n",
            "not a JSON value",
        ),
        (
            "@tool\ndef f(a: 'Nope') -> int:\n    '''Do.\n\n    Args:\n        a: x.\n    '''\n",
            "cannot be resolved",
        ),
        (
            "@tool\ndef f(a: Literal['x']) -> int:\n    '''Do.\n\n    Args:\n        a: x (choices: ['y']).\n    '''\n",
            "differs from its Literal type",
        ),
        (
            "@tool\ndef f(a: str) -> int:\n"
            "    '''Do.\n\n    Args:\n        a: x (choices: [__import__('os')]).\n    '''\n",
            "must hold a list of values",
        ),
        ("@tool(risk='maybe')\ndef f() -> int:\n    '''Do.'''\n", "unknown risk level 'maybe'"),
        ("@tool(render='html')\ndef f() -> int:\n    '''Do.'''\n", "unknown render hint 'html'"),
        ("@tool(name='bad name')\ndef f() -> int:\n    '''Do.'''\n", "is not valid"),
    ],
)
def test_definition_errors_name_the_function_and_the_problem(source: str, fragment: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        _define(source)
    message = str(info.value)
    assert fragment in message
    assert "'f'" in message or "Tool 'f'" in message or "'bad name'" in message


def test_positional_option_is_refused_with_a_hint() -> None:
    with pytest.raises(ToolDefinitionError, match="by keyword"):
        tool("calculator")  # type: ignore[call-overload]


def test_undocumented_hidden_arg_is_fine_but_documented_one_is_allowed_too() -> None:
    @tool(hidden_args=["token"])
    def call(url: str, token: str) -> str:
        """Call a URL.

        Args:
            url: Where to go.
            token: Supplied by the environment.
        """
        return url

    assert "token" not in call.parameters["properties"]
