"""Tool guides in the opt-in `tidy` style and OpenAI lists, visibly different at each verbosity level.
(Corral's default rendering of the guide has its golden tests in test_verbosity_corral.py.)"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Literal

import pytest

from corral_core.tools import ToolVerbosity, tool, tools_guide, tools_openai


@tool
def convert(value: float, unit: Literal["m", "ft"], digits: int = 2) -> str:
    """Convert a length.

    [BRIEF] Length converter. [/BRIEF]
    [DETAILED] Converts between metres and feet. [/DETAILED]
    [PROCEDURAL] Use when units differ. [/PROCEDURAL]
    [CONTEXTUAL] Lengths come from survey data. [/CONTEXTUAL]
    [WORKFLOW_INTEGRATION] Convert before comparing. [/WORKFLOW_INTEGRATION]
    [SYNTACTICAL] unit is "m" or "ft". [/SYNTACTICAL]
    [EXAMPLES] value=1, unit="ft" gives 3.28 [/EXAMPLES]
    [LIMITATIONS] Lengths only. [/LIMITATIONS]

    Args:
        value: The length. [DETAILED] Any non-negative number. [/DETAILED]
        unit: Target unit.
        digits: Rounding digits.

    Returns:
        The converted length with its unit.
    """
    return f"{value}{unit}"


@tool
def ping() -> str:
    """Check that the service answers."""
    return "pong"


def test_guide_format_at_brief() -> None:
    guide = tools_guide([convert, ping], "brief", "tidy")
    assert guide.startswith(
        "Available Tools:\nTool: convert\nDescription: Length converter.\n\n"
        "Returns: The converted length with its unit.\nArguments:\n"
    )
    assert "- value (float, required): The length.\n" in guide
    assert '- unit (str, required): Target unit. (choices: ["m", "ft"])\n' in guide
    assert "- digits (int, optional, default: 2): Rounding digits.\n" in guide
    assert "\n\nTool: ping\nDescription: Check that the service answers.\nArguments: none\n\n" in guide
    assert "How to use tools:\n1. " in guide and "\n4. " in guide
    assert "Example:" not in guide  # a worked call is a usage example: comprehensive's


def test_the_worked_example_call_belongs_to_the_examples_level() -> None:
    shown = [level.value for level in ToolVerbosity if "\nExample:\n" in tools_guide([convert, ping], level)]
    assert shown == ["comprehensive", "full"]
    guide = tools_guide([convert, ping], "comprehensive", "tidy")
    example = json.loads(guide.rsplit("Example:\n", 1)[1])
    assert example == {"tool_name": "convert", "arguments": {"value": 1.5, "unit": "m"}}


def test_guide_minimal_is_compact_without_usage_notes() -> None:
    guide = tools_guide([convert, ping], ToolVerbosity.MINIMAL, "tidy")
    assert guide == (
        "Available Tools:\n**convert**: Length converter.\nArguments: value, unit, digits\n\n"
        "**ping**: Check that the service answers.\nArguments: none"
    )


def test_no_tools() -> None:
    assert tools_guide([], "full") == "No tools available."
    assert tools_openai([], "brief") == []


@pytest.mark.parametrize(("lower", "higher"), list(pairwise(ToolVerbosity)))
def test_guide_and_openai_list_differ_between_adjacent_levels(lower: ToolVerbosity, higher: ToolVerbosity) -> None:
    for style in ("corral", "tidy"):
        assert tools_guide([convert], lower, style) != tools_guide([convert], higher, style)
        assert tools_openai([convert], lower, style) != tools_openai([convert], higher, style)


def test_guide_argument_text_follows_the_level() -> None:
    assert "Any non-negative number." not in tools_guide([convert], "brief", "tidy")
    detailed = tools_guide([convert], "detailed", "tidy")
    assert "- value (float, required): The length.\n  Any non-negative number." in detailed


def test_tools_openai_accepts_any_level_name() -> None:
    listed = tools_openai([convert, ping], "Detailed", "tidy")
    assert [entry["function"]["name"] for entry in listed] == ["convert", "ping"]
    assert listed[0]["function"]["description"] == (
        "Length converter.\n\nConverts between metres and feet.\n\nReturns: The converted length with its unit."
    )
    assert listed[0]["function"]["parameters"]["properties"]["unit"]["enum"] == ["m", "ft"]
    with pytest.raises(ValueError, match="Valid levels"):
        tools_openai([convert], "verbose")
