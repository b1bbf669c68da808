"""A tag-rich environment: Corral's tagged docstrings (every tag of corral-facts §3, nested unknown tags,
ARGS_ tags, a choices fragment), as `@tool` functions and as a Corral-style `ToolArgument` Tool.

Every tag's content carries a marker word (`MK_<TAG>_<where>`), so a test can tell at which levels
and in which channels each tag is visible. The argument types all have a faithful Python-style name
(`float`, `list[str]`, `int | None`, ...), which is all a Corral E2 server can say about a type.
"""

from __future__ import annotations

from typing import Any, Literal

from corral_core.corral import Environment, Tool, ToolArgument, tool

TOOL_TAGS = ("BRIEF", "DETAILED", "PROCEDURAL", "CONTEXTUAL", "WORKFLOW_INTEGRATION", "SYNTACTICAL", "RAISES",
             "LIMITATIONS", "EXAMPLES")
ARGUMENT_TAGS = ("ARGS_BRIEF", "ARGS_DETAILED", "ARGS_SYNTACTICAL", "ARGS_EXAMPLES", "DETAILED", "PROCEDURAL",
                 "CONTEXTUAL")


@tool
def convert_units(value: float, from_unit: str, to_unit: Literal["mm", "m", "km"], digits: int = 3) -> str:
    """Convert a quantity between units of length. MK_BASIC_convert

    Works on plain floats.

    [BRIEF] Unit converter for lengths. MK_BRIEF_convert [/BRIEF]
    [DETAILED] Converts through metres, so every pair of units is supported. MK_DETAILED_convert [/DETAILED]
    [PROCEDURAL] Use it whenever two quantities are in different units. MK_PROCEDURAL_convert
    [PREREQUISITE] Know the unit of the input. [/PREREQUISITE] [/PROCEDURAL]
    [CONTEXTUAL] Lengths in this suite come from lab notebooks. MK_CONTEXTUAL_convert [/CONTEXTUAL]
    [WORKFLOW_INTEGRATION] Convert first, then compare. MK_WORKFLOW_INTEGRATION_convert
    [CURRENT] You are converting. [/CURRENT] [FOLLOW_UP] Submit the converted value. [/FOLLOW_UP]
    [/WORKFLOW_INTEGRATION]
    [SYNTACTICAL] Units are lowercase symbols such as "km". MK_SYNTACTICAL_convert [/SYNTACTICAL]
    [RAISES] [ERROR_WHEN] an unknown unit is given [/ERROR_WHEN] it fails. MK_RAISES_convert [/RAISES]
    [LIMITATIONS] Lengths only; no temperatures. MK_LIMITATIONS_convert [/LIMITATIONS]
    [EXAMPLES] value=1, from_unit="km", to_unit="m" gives "1000.0 m" MK_EXAMPLES_convert [/EXAMPLES]

    Args:
        value: The quantity. MK_BASIC_value [ARGS_DETAILED] Any finite number. MK_ARGS_DETAILED_value
            [/ARGS_DETAILED] [ARGS_EXAMPLES] 2.5 MK_ARGS_EXAMPLES_value [/ARGS_EXAMPLES]
        from_unit: Unit of the value MK_BASIC_from (choices: ["mm", "m", "km"])
        to_unit: Unit wanted. MK_BASIC_to [ARGS_BRIEF] Target unit. MK_ARGS_BRIEF_to [/ARGS_BRIEF]
            [ARGS_SYNTACTICAL] A symbol. MK_ARGS_SYNTACTICAL_to [/ARGS_SYNTACTICAL]
        digits: Digits to round to. MK_BASIC_digits [PROCEDURAL] Lower it for rough work.
            MK_PROCEDURAL_digits [/PROCEDURAL]

    Returns:
        The converted value with its unit. [RETURNS_DETAILED] Rounded to `digits`. [/RETURNS_DETAILED]
    """
    factors = {"mm": 0.001, "m": 1.0, "km": 1000.0}
    return f"{round(value * factors[from_unit] / factors[to_unit], digits)} {to_unit}"


@tool
def tag_samples(names: list[str], strict: bool = False, limit: int | None = None) -> str:
    """Tag samples by name.

    [BRIEF] Sample tagger. MK_BRIEF_tag [/BRIEF]
    [CONTEXTUAL] Sample names come from the lab's register. MK_CONTEXTUAL_tag [/CONTEXTUAL]

    Args:
        names: Sample names. MK_BASIC_names [ARGS_SYNTACTICAL] Plain text. MK_ARGS_SYNTACTICAL_names
            [/ARGS_SYNTACTICAL]
        strict: Refuse unknown names. MK_BASIC_strict [DETAILED] Off by default. MK_DETAILED_strict [/DETAILED]
        limit: How many to tag. MK_BASIC_limit

    Returns:
        The tags.
    """
    chosen = names if limit is None else names[:limit]
    return ",".join(f"{name}:{'strict' if strict else 'loose'}" for name in chosen)


class PickUnit(Tool):
    """A Corral-style Tool subclass: ToolArguments whose texts carry inline tags and a choices fragment."""

    def __init__(self) -> None:
        super().__init__(
            name="pick_unit",
            description="Pick an output unit. MK_BASIC_pick [DETAILED] Only SI units. MK_DETAILED_pick [/DETAILED]"
                        " [LIMITATIONS] No imperial units. MK_LIMITATIONS_pick [/LIMITATIONS]",
            arguments=[
                ToolArgument(name="unit", type="str", choices=["m", "km"],
                             description="Output unit MK_BASIC_unit (choices: ['m', 'km']) [DETAILED] SI. "
                                         "MK_DETAILED_unit [/DETAILED] [EXAMPLES] km MK_EXAMPLES_unit [/EXAMPLES]"),
                ToolArgument(name="note", type="str", required=False, default="none",
                             description="[CONTEXTUAL] Free text. MK_CONTEXTUAL_note [/CONTEXTUAL]"),
            ],
        )

    def execute(self, **kwargs: Any) -> str:
        return str(kwargs["unit"])


class TagRichEnvironment(Environment):
    """One task: convert 1 km to metres."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        for item in (convert_units, tag_samples, PickUnit()):
            self.add_tool(item)

    def get_task_prompt(self) -> str:
        return "Convert 1 km to metres and answer with the tool's text."

    def score(self) -> float:
        return 1.0 if (self.state.submitted_answer or "").strip() == "1000.0 m" else 0.0


def environments() -> dict[str, Environment]:
    return {"km_to_m": TagRichEnvironment("km_to_m")}
