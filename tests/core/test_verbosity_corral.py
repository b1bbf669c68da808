"""Golden tests: the default documentation style renders what Corral's verbosity filter renders.

Every expected text below was worked out by hand from corral-facts §3.2-§3.4 (how Corral's `@tool`
turns a docstring into a description and argument texts, then `filter_tool_description` and
`filter_argument_description` at each of the nine levels), never by running our code:

- a docstring with a known tag keeps everything but its Args block (Returns stays) as the
  description; an untagged one keeps only its first paragraph;
- MINIMAL is BRIEF, else the first paragraph of the untagged text joined with spaces;
- other levels join the included sections with a blank line in the order BRIEF, BASIC (skipped
  after a BRIEF), DETAILED, PROCEDURAL, CONTEXTUAL, WORKFLOW_INTEGRATION, SYNTACTICAL, EXAMPLES,
  RAISES, LIMITATIONS, prefixing "When to use: ", "Workflow: ", "Exceptions: ", "Limitations: ";
- nested unknown tags are unwrapped (markers removed, surrounding spaces kept, then stripped);
- FULL is the description unchanged, tags included; the Returns text is never shown below FULL;
- an argument: MINIMAL is the text before the first "[" and before "(choices:"; BRIEF to
  COMPREHENSIVE the untagged text (unless there is a BRIEF), then BRIEF/DETAILED/SYNTACTICAL/EXAMPLES
  (ARGS_ prefixes stripped) as the level allows, then the choices fragment, joined by a space as
  Corral E2 joins them. Ours (README, "Coming from Corral"): the fragment is shown once, FULL is the
  text as written (tags included), and a level with nothing to show gives "".
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral_core.tools import Tool, ToolArgument, ToolVerbosity, tool, tools_guide
from corral_core.tools.verbosity import corral_describe, corral_describe_argument

V = ToolVerbosity
LEVELS = list(ToolVerbosity)


@tool
def convert_units(value: float, from_unit: str, to_unit: str, digits: int = 3) -> str:
    """Convert a quantity between units of length.

    Works on plain floats.

    [BRIEF] Unit converter for lengths. [/BRIEF]
    [DETAILED] Converts through metres, so every pair of units is supported. [/DETAILED]
    [PROCEDURAL] Use it whenever two quantities are in different units.
    [PREREQUISITE] Know the unit of the input. [/PREREQUISITE] [/PROCEDURAL]
    [CONTEXTUAL] Lengths in this suite come from lab notebooks. [/CONTEXTUAL]
    [WORKFLOW_INTEGRATION] Convert first, then compare.
    [FOLLOW_UP] Submit the converted value. [/FOLLOW_UP] [/WORKFLOW_INTEGRATION]
    [SYNTACTICAL] Units are lowercase symbols such as "km". [/SYNTACTICAL]
    [RAISES] [ERROR_WHEN] an unknown unit is given [/ERROR_WHEN] it fails. [/RAISES]
    [LIMITATIONS] Lengths only; no temperatures. [/LIMITATIONS]
    [EXAMPLES] value=1, from_unit="km", to_unit="m" gives "1000.0 m" [/EXAMPLES]

    Args:
        value: The quantity. [ARGS_DETAILED] Any finite number. [/ARGS_DETAILED]
        from_unit: Unit of the value (choices: ["mm", "m", "km"])
        to_unit: Unit wanted. [ARGS_BRIEF] Target unit. [/ARGS_BRIEF]
            [ARGS_SYNTACTICAL] A symbol. [/ARGS_SYNTACTICAL] [ARGS_EXAMPLES] "m" [/ARGS_EXAMPLES]
        digits: Digits to round to.

    Returns:
        The converted value with its unit. [RETURNS_DETAILED] Rounded to `digits`. [/RETURNS_DETAILED]
    """
    factors = {"mm": 0.001, "m": 1.0, "km": 1000.0}
    return f"{round(value * factors[from_unit] / factors[to_unit], digits)} {to_unit}"


BRIEF = "Unit converter for lengths."
DETAILED = "Converts through metres, so every pair of units is supported."
PROCEDURAL = "When to use: Use it whenever two quantities are in different units.\n Know the unit of the input."
CONTEXTUAL = "Lengths in this suite come from lab notebooks."
WORKFLOW = "Workflow: Convert first, then compare.\n Submit the converted value."
SYNTACTICAL = 'Units are lowercase symbols such as "km".'
EXAMPLES = 'value=1, from_unit="km", to_unit="m" gives "1000.0 m"'
RAISES = "Exceptions: an unknown unit is given  it fails."
LIMITATIONS = "Limitations: Lengths only; no temperatures."
FULL = """Convert a quantity between units of length.

Works on plain floats.

[BRIEF] Unit converter for lengths. [/BRIEF]
[DETAILED] Converts through metres, so every pair of units is supported. [/DETAILED]
[PROCEDURAL] Use it whenever two quantities are in different units.
[PREREQUISITE] Know the unit of the input. [/PREREQUISITE] [/PROCEDURAL]
[CONTEXTUAL] Lengths in this suite come from lab notebooks. [/CONTEXTUAL]
[WORKFLOW_INTEGRATION] Convert first, then compare.
[FOLLOW_UP] Submit the converted value. [/FOLLOW_UP] [/WORKFLOW_INTEGRATION]
[SYNTACTICAL] Units are lowercase symbols such as "km". [/SYNTACTICAL]
[RAISES] [ERROR_WHEN] an unknown unit is given [/ERROR_WHEN] it fails. [/RAISES]
[LIMITATIONS] Lengths only; no temperatures. [/LIMITATIONS]
[EXAMPLES] value=1, from_unit="km", to_unit="m" gives "1000.0 m" [/EXAMPLES]

Returns:
    The converted value with its unit. [RETURNS_DETAILED] Rounded to `digits`. [/RETURNS_DETAILED]"""

TAGGED_DESCRIPTION = {
    V.MINIMAL: BRIEF,
    V.BRIEF: BRIEF,
    V.DETAILED: "\n\n".join([BRIEF, DETAILED]),
    V.PROCEDURAL: "\n\n".join([BRIEF, DETAILED, PROCEDURAL]),
    V.CONTEXTUAL: "\n\n".join([BRIEF, DETAILED, PROCEDURAL, CONTEXTUAL]),
    V.WORKFLOW: "\n\n".join([BRIEF, DETAILED, PROCEDURAL, CONTEXTUAL, WORKFLOW]),
    V.SYNTACTICAL: "\n\n".join([BRIEF, DETAILED, PROCEDURAL, CONTEXTUAL, WORKFLOW, SYNTACTICAL]),
    V.COMPREHENSIVE: "\n\n".join([BRIEF, DETAILED, PROCEDURAL, CONTEXTUAL, WORKFLOW, SYNTACTICAL, EXAMPLES,
                                  RAISES, LIMITATIONS]),
    V.FULL: FULL,
}

TO_UNIT_RAW = ('Unit wanted. [ARGS_BRIEF] Target unit. [/ARGS_BRIEF] [ARGS_SYNTACTICAL] A symbol. '
               '[/ARGS_SYNTACTICAL] [ARGS_EXAMPLES] "m" [/ARGS_EXAMPLES]')
VALUE_RAW = "The quantity. [ARGS_DETAILED] Any finite number. [/ARGS_DETAILED]"
TAGGED_ARGUMENTS = {
    # level: (value, from_unit, to_unit, digits)
    V.MINIMAL: ("The quantity.", "Unit of the value", "Unit wanted.", "Digits to round to."),
    # BRIEF: the untagged text, or the BRIEF (Corral since PR #191; E2's own branch, the text before the
    # first "[", showed nothing for an argument tagged only [ARGS_BRIEF])
    V.BRIEF: ("The quantity.", "Unit of the value", "Target unit.", "Digits to round to."),
    V.DETAILED: ("The quantity. Any finite number.", "Unit of the value", "Target unit.", "Digits to round to."),
    V.PROCEDURAL: ("The quantity. Any finite number.", "Unit of the value", "Target unit.", "Digits to round to."),
    V.CONTEXTUAL: ("The quantity. Any finite number.", "Unit of the value", "Target unit.", "Digits to round to."),
    V.WORKFLOW: ("The quantity. Any finite number.", "Unit of the value", "Target unit.", "Digits to round to."),
    V.SYNTACTICAL: ("The quantity. Any finite number.", "Unit of the value", "Target unit. A symbol.",
                    "Digits to round to."),
    V.COMPREHENSIVE: ("The quantity. Any finite number.", "Unit of the value", 'Target unit. A symbol. "m"',
                      "Digits to round to."),
    # FULL: the text as written, tags included (ours; Corral showed only the untagged text here)
    V.FULL: (VALUE_RAW, "Unit of the value", TO_UNIT_RAW, "Digits to round to."),
}


@pytest.mark.parametrize("level", LEVELS)
def test_tagged_docstring_description_at_each_level(level: ToolVerbosity) -> None:
    assert convert_units.describe(level) == TAGGED_DESCRIPTION[level]


@pytest.mark.parametrize("level", LEVELS)
def test_tagged_docstring_arguments_at_each_level(level: ToolVerbosity) -> None:
    shown = tuple(convert_units.describe_argument(name, level) for name in ("value", "from_unit", "to_unit", "digits"))
    assert shown == TAGGED_ARGUMENTS[level]


def test_the_description_is_what_corral_tool_keeps_and_choices_are_parsed() -> None:
    assert convert_units.description == FULL
    arguments = {a.name: a for a in convert_units.arguments}
    assert arguments["from_unit"].description == "Unit of the value"
    assert arguments["from_unit"].choices == ["mm", "m", "km"]
    assert arguments["digits"].required is False and arguments["digits"].default == 3
    assert arguments["value"].type == "float" and arguments["from_unit"].type == "str"


def test_returns_text_never_shows_below_full() -> None:
    for level in LEVELS[:-1]:
        assert "converted value with its unit" not in convert_units.describe(level)
        assert "Rounded to" not in convert_units.describe(level)


@tool
def round_number(value: float, digits: int = 0) -> float:
    """Round a number
    to some digits.

    Uses round-half-even, like Python.

    Args:
        value: The number.
        digits: Digits after the point.

    Returns:
        The rounded number.
    """
    return round(value, digits)


@pytest.mark.parametrize("level", LEVELS)
def test_untagged_docstring_is_its_first_paragraph_at_every_level(level: ToolVerbosity) -> None:
    expected = "Round a number to some digits." if level is V.MINIMAL else "Round a number\nto some digits."
    assert round_number.describe(level) == expected
    assert round_number.describe_argument("value", level) == "The number."
    assert round_number.describe_argument("digits", level) == "Digits after the point."


def test_single_line_untagged_and_empty_descriptions() -> None:
    ping = Tool("ping", "Check the server answers.", {"type": "object", "properties": {}}, lambda: "pong")
    assert {ping.describe(level) for level in LEVELS} == {"Check the server answers."}
    blank = Tool("blank", "", {"type": "object", "properties": {}}, lambda: "")
    assert {blank.describe(level) for level in LEVELS} == {"No description available"}


class UnitPicker(Tool):
    """A Corral-style Tool subclass whose argument text carries its own choices fragment."""

    def __init__(self) -> None:
        super().__init__(
            name="pick_unit",
            description="Pick an output unit. [DETAILED] Only SI units. [/DETAILED]",
            arguments=[ToolArgument(name="unit", type="str", choices=["m", "km"],
                                    description="Output unit (choices: ['m', 'km']) [DETAILED] SI. [/DETAILED]")],
        )

    def execute(self, **kwargs: object) -> str:
        return str(kwargs["unit"])


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        (V.MINIMAL, "Output unit"),
        (V.BRIEF, "Output unit (choices: ['m', 'km'])"),
        (V.DETAILED, "Output unit SI. (choices: ['m', 'km'])"),
        (V.FULL, "Output unit (choices: ['m', 'km']) [DETAILED] SI. [/DETAILED]"),
    ],
)
def test_a_written_choices_fragment_is_shown_once_after_the_sections(level: ToolVerbosity, expected: str) -> None:
    assert UnitPicker().describe_argument("unit", level) == expected


def test_tool_block_of_the_guide_is_corrals() -> None:
    guide = tools_guide([convert_units], "detailed")
    block = (
        "Tool: convert_units\n"
        f"Description: {TAGGED_DESCRIPTION[V.DETAILED]}\n"
        "Arguments:\n"
        "- value (float, required): The quantity. Any finite number.\n"
        '- from_unit (str, required): Unit of the value (choices: ["mm", "m", "km"])\n'
        "- to_unit (str, required): Target unit.\n"
        "- digits (int, optional, default: 3): Digits to round to."
    )
    assert guide.startswith("Available Tools:\n" + block + "\n\n")
    assert guide.count("(choices:") == 1 and "Returns" not in guide
    minimal = tools_guide([convert_units], "minimal")
    assert minimal == "Available Tools:\n**convert_units**: Unit converter for lengths.\n" \
                      "Arguments: value, from_unit, to_unit, digits"


def test_the_richer_rendering_is_opt_in() -> None:
    tidy = convert_units.describe("brief", "tidy")
    assert "Returns: The converted value with its unit." in tidy
    assert "[BRIEF]" not in convert_units.describe("full", "tidy")
    assert convert_units.describe("brief") == BRIEF  # the default never changes silently


# --- monotone levels: every tag visible at a level is visible at every level above it -------------

TOOL_TAG_NAMES = ("BRIEF", "DETAILED", "PROCEDURAL", "CONTEXTUAL", "WORKFLOW_INTEGRATION", "SYNTACTICAL", "RAISES",
                  "LIMITATIONS", "EXAMPLES", "RETURNS_BRIEF", "PREREQUISITE")
ARGUMENT_TAG_NAMES = ("BRIEF", "DETAILED", "SYNTACTICAL", "EXAMPLES", "ARGS_BRIEF", "ARGS_DETAILED",
                      "ARGS_SYNTACTICAL", "ARGS_EXAMPLES", "PROCEDURAL", "CONTEXTUAL", "RAISES", "LIMITATIONS")


def _levels_showing(render: Callable[[ToolVerbosity], str], marker: str) -> list[int]:
    return [index for index, level in enumerate(LEVELS) if marker in render(level)]


def _upward_closed(indices: list[int]) -> bool:
    return not indices or indices == list(range(indices[0], len(LEVELS)))


@settings(max_examples=150, deadline=None)
@given(tags=st.lists(st.sampled_from(TOOL_TAG_NAMES), unique=True), untagged=st.booleans())
def test_tool_description_levels_are_monotone_for_every_tag(tags: list[str], untagged: bool) -> None:
    text = ("Does a thing. mkbasic\n\n" if untagged else "") + "\n".join(
        f"[{name}] Text mk{name.lower()} here. [/{name}]" for name in tags)
    if not text:
        return
    for name in tags:
        shown = _levels_showing(lambda level: corral_describe(text, level), f"mk{name.lower()}")
        assert _upward_closed(shown), (name, shown)
        assert shown and shown[-1] == len(LEVELS) - 1  # full shows every tag


@settings(max_examples=150, deadline=None)
@given(tags=st.lists(st.sampled_from(ARGUMENT_TAG_NAMES), unique=True), untagged=st.booleans(),
       choices=st.booleans())
def test_argument_levels_are_monotone_for_every_tag(tags: list[str], untagged: bool, choices: bool) -> None:
    text = ("The value. mkbasic " if untagged else "") + ("(choices: ['a', 'b']) " if choices else "") + " ".join(
        f"[{name}] Text mk{name.lower()} here. [/{name}]" for name in tags)
    for name in tags:
        shown = _levels_showing(lambda level: corral_describe_argument(text, level), f"mk{name.lower()}")
        assert _upward_closed(shown), (name, shown)
        assert shown and shown[-1] == len(LEVELS) - 1
    if choices:
        assert _levels_showing(lambda level: corral_describe_argument(text, level), "(choices:") == list(
            range(1, len(LEVELS)))
        assert all(corral_describe_argument(text, level).count("(choices:") == 1 for level in LEVELS[1:])


# Corral's own test (tests/router/test_verbosity.py, TestFilterArgumentDescription.test_brief_verbosity_args),
# its argument text copied: E2's BRIEF branch gave "" for it
CORRAL_ARG_SCRIPT_PATH = """[BRIEF] Path to the Python script file to execute. [/BRIEF]
[DETAILED] Complete file path to the Python script that should be executed.
The script must exist and be readable. [/DETAILED]
[EXAMPLES] "scripts/analysis.py", "/home/user/simulations/run_sim.py" [/EXAMPLES]
"""


def test_an_argument_tagged_only_brief_shows_its_brief_at_brief() -> None:
    from corral_core.tools.verbosity import corral_describe_argument

    shown = corral_describe_argument(CORRAL_ARG_SCRIPT_PATH, V.BRIEF)
    assert shown == "Path to the Python script file to execute."
    assert corral_describe_argument("[ARGS_BRIEF] Target unit. [/ARGS_BRIEF]", V.BRIEF) == "Target unit."
