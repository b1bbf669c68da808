"""Verbosity levels in the opt-in `tidy` style: each level only adds text, tags parse case-insensitively,
bad tags fail early. (Corral's default rendering has its golden tests in test_verbosity_corral.py.)"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Literal

import pytest

from corral_core.tools import DocStyle, Tool, ToolDefinitionError, ToolVerbosity, parse_verbosity, tool
from corral_core.tools.verbosity import (
    describe_argument_text,
    describe_text,
    included_sections,
    parse_sections,
    tag_problem,
)

LEVELS = list(ToolVerbosity)
TIDY = DocStyle.TIDY


@tool
def calculator(operation: Literal["+", "-", "*", "/"], a: float, b: float = 1.0) -> float:
    """Perform one arithmetic operation on two numbers.

    It is the only way to compute in this suite.

    [BRIEF] Calculator for two numbers. [/BRIEF]
    [DETAILED] Uses binary floating point; results may carry rounding error. [/DETAILED]
    [PROCEDURAL] Use it for every calculation.
    [PREREQUISITE] Know both operands first. [/PREREQUISITE] [/PROCEDURAL]
    [CONTEXTUAL] Part of the samplemath environment. [/CONTEXTUAL]
    [WORKFLOW_INTEGRATION] Feed one result into the next call. [FOLLOW_UP] Then submit. [/FOLLOW_UP]
    [/WORKFLOW_INTEGRATION]
    [SYNTACTICAL] operation is a single symbol string. [/SYNTACTICAL]
    [RAISES] [ERROR_WHEN] b is zero for "/" [/ERROR_WHEN] it fails. [/RAISES]
    [LIMITATIONS] No more than two operands. [/LIMITATIONS]
    [EXAMPLES] {"operation": "+", "a": 17, "b": 25} gives 42.0 [/EXAMPLES]
    [NOTES] An author's note, shown only in full. [/NOTES]

    Args:
        operation: Which operation. [ARGS_DETAILED] "/" is true division. [/ARGS_DETAILED]
            [SYNTACTICAL] One character. [/SYNTACTICAL] [EXAMPLES] "+" [/EXAMPLES]
        a: First operand. [BRIEF] The left number. [/BRIEF]
        b: Second operand. [LIMITATIONS] Not zero for division. [/LIMITATIONS]

    Returns:
        The result of the operation.
    """
    return {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[operation]


# A phrase from each section and the first level that shows it.
FIRST_SHOWN = [
    ("Calculator for two numbers.", ToolVerbosity.MINIMAL),
    ("Returns: The result of the operation.", ToolVerbosity.BRIEF),
    ("rounding error", ToolVerbosity.DETAILED),
    ("When to use: Use it for every calculation.", ToolVerbosity.PROCEDURAL),
    ("Know both operands first.", ToolVerbosity.PROCEDURAL),
    ("samplemath environment", ToolVerbosity.CONTEXTUAL),
    ("Workflow: Feed one result", ToolVerbosity.WORKFLOW),
    ("Then submit.", ToolVerbosity.WORKFLOW),
    ("single symbol string", ToolVerbosity.SYNTACTICAL),
    ("Exceptions: b is zero", ToolVerbosity.COMPREHENSIVE),
    ("Limitations: No more than two operands.", ToolVerbosity.COMPREHENSIVE),
    ("gives 42.0", ToolVerbosity.COMPREHENSIVE),
    ("Perform one arithmetic operation", ToolVerbosity.FULL),
    ("only way to compute", ToolVerbosity.FULL),
    ("An author's note", ToolVerbosity.FULL),
]


@pytest.mark.parametrize(("phrase", "first"), FIRST_SHOWN)
def test_each_section_appears_from_its_level_on(phrase: str, first: ToolVerbosity) -> None:
    for level in LEVELS:
        shown = phrase in calculator.describe(level, TIDY)
        assert shown == (LEVELS.index(level) >= LEVELS.index(first)), (phrase, level)


def _norm(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(("lower", "higher"), list(pairwise(LEVELS)))
def test_higher_level_only_adds_text(lower: ToolVerbosity, higher: ToolVerbosity) -> None:
    low, high = calculator.describe(lower, TIDY), calculator.describe(higher, TIDY)
    assert len(high) > len(low)
    for part in low.split("\n\n"):
        assert _norm(part) in _norm(high), (lower, higher, part)
    assert included_sections(lower) <= included_sections(higher)
    for name in calculator.parameters["properties"]:
        low_arg = calculator.describe_argument(name, lower, TIDY)
        high_arg = calculator.describe_argument(name, higher, TIDY)
        assert all(_norm(line) in _norm(high_arg) for line in low_arg.splitlines()), (name, lower, higher)


def test_every_tag_is_used_and_full_has_no_tag_markers() -> None:
    full = calculator.describe("full", TIDY)
    assert not re.search(r"\[/?[A-Za-z_]+\]", full), full
    names = {name for name, _ in parse_sections(calculator.doc)}
    assert {"BASIC", "BRIEF", "DETAILED", "PROCEDURAL", "CONTEXTUAL", "WORKFLOW_INTEGRATION"} <= names
    assert {"SYNTACTICAL", "RAISES", "LIMITATIONS", "EXAMPLES", "RETURNS", "NOTES"} <= names


def test_argument_descriptions_follow_the_level() -> None:
    assert calculator.describe_argument("operation", "minimal", TIDY) == "Which operation."
    assert calculator.describe_argument("operation", "brief", TIDY) == "Which operation."
    assert calculator.describe_argument("operation", "detailed", TIDY) == 'Which operation.\n"/" is true division.'
    assert "One character." in calculator.describe_argument("operation", "syntactical", TIDY)
    assert '"+"' not in calculator.describe_argument("operation", "syntactical", TIDY)
    assert '"+"' in calculator.describe_argument("operation", "comprehensive", TIDY)
    assert calculator.describe_argument("a", "minimal", TIDY) == "First operand."
    assert calculator.describe_argument("a", "brief", TIDY) == "First operand.\nThe left number."
    assert "Not zero" not in calculator.describe_argument("b", "syntactical", TIDY)
    assert "Limitations: Not zero for division." in calculator.describe_argument("b", "comprehensive", TIDY)


def test_argument_minimal_cuts_before_choices_and_falls_back_to_brief() -> None:
    text = "The unit (choices: ['m', 'ft']) [DETAILED] SI preferred [/DETAILED]"
    assert describe_argument_text(text, ToolVerbosity.MINIMAL) == "The unit"
    assert describe_argument_text(text, ToolVerbosity.BRIEF) == "The unit\n(choices: ['m', 'ft'])"
    assert describe_argument_text("[BRIEF] Only brief. [/BRIEF]", ToolVerbosity.MINIMAL) == "Only brief."


@pytest.mark.parametrize("name", ["brief", "BRIEF", "Brief", " brief ", ToolVerbosity.BRIEF])
def test_parse_verbosity_is_case_insensitive(name: str) -> None:
    assert parse_verbosity(name) is ToolVerbosity.BRIEF


def test_parse_verbosity_none_is_full_and_bad_names_list_the_levels() -> None:
    assert parse_verbosity(None) is ToolVerbosity.FULL
    with pytest.raises(ValueError) as info:
        parse_verbosity("NONE")
    levels = "minimal, brief, detailed, procedural, contextual, workflow, syntactical, comprehensive, full"
    assert levels in str(info.value)
    with pytest.raises(ValueError):
        parse_verbosity(3)  # type: ignore[arg-type]
    assert calculator.describe("Detailed", TIDY) == calculator.describe(ToolVerbosity.DETAILED, TIDY)


def test_values_are_lowercase_strings() -> None:
    assert [level.value for level in LEVELS] == [level.name.lower() for level in LEVELS]
    assert ToolVerbosity.WORKFLOW == "workflow"


def test_tags_match_case_insensitively() -> None:
    text = "Base text. [brief] Short. [/BRIEF] [Detailed] Long. [/detailed]"
    assert describe_text(text, ToolVerbosity.MINIMAL) == "Short."
    assert describe_text(text, ToolVerbosity.DETAILED) == "Short.\n\nLong."


def test_untagged_docstring_is_the_same_at_every_level_but_minimal() -> None:
    @tool
    def round_number(value: float, digits: int = 0) -> float:
        """Round a number to some digits.

        Uses round-half-even, like Python.

        Args:
            value: The number.
            digits: Digits after the point.

        Returns:
            The rounded number.
        """
        return round(value, digits)

    texts = {level: round_number.describe(level, TIDY) for level in LEVELS}
    assert texts[ToolVerbosity.MINIMAL] == "Round a number to some digits."
    assert len({texts[level] for level in LEVELS[1:]}) == 1
    assert "Uses round-half-even" in texts[ToolVerbosity.BRIEF]


def test_single_line_untagged_description_is_identical_at_all_levels() -> None:
    t = Tool("ping", "Check the server answers.", {"type": "object", "properties": {}}, lambda: "pong")
    assert {t.describe(level, TIDY) for level in LEVELS} == {"Check the server answers."}


def test_empty_description_reads_no_description_available() -> None:
    t = Tool("blank", "", {"type": "object", "properties": {}}, lambda: "")
    assert t.describe("brief", TIDY) == "No description available"
    assert t.describe("minimal", TIDY) == "No description available"


def test_brackets_that_are_not_tags_are_left_alone() -> None:
    text = "Sum a list[float] like values[0] + values[1]. [DETAILED] Exact. [/DETAILED]"
    assert tag_problem(text) is None
    assert describe_text(text, ToolVerbosity.BRIEF) == "Sum a list[float] like values[0] + values[1]."


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[DETAILED] a", "unclosed tags: DETAILED (opened 1 times, closed 0 times)"),
        ("[BRIEF] a [/BRIEF] [BRIEF] b", "unclosed tags: BRIEF (opened 2 times, closed 1 times)"),
        ("a [/EXAMPLES]", "closing tag [/EXAMPLES] without a matching [EXAMPLES]"),
        ("[RAISES] [NOTE] x [/RAISES] [/NOTE]", "crossed tags: [NOTE] must be closed before [/RAISES]"),
        ("[PROCEDURAL] [DETAILED] x [/PROCEDURAL]", "unclosed tags: DETAILED"),
    ],
)
def test_tag_problems_are_described(text: str, problem: str) -> None:
    found = tag_problem(text)
    assert found is not None and problem in found


def test_unclosed_tag_in_tool_docstring_fails_at_definition() -> None:
    with pytest.raises(ToolDefinitionError, match=r"'broken'.*unclosed tags: EXAMPLES"):

        @tool
        def broken(x: int) -> int:
            """Do it.

            [EXAMPLES] x=1

            Args:
                x: A number.
            """
            return x


def test_parsing_caches_are_bounded() -> None:
    for cached in (describe_text, describe_argument_text, parse_sections):
        assert cached.cache_info().maxsize is not None
