"""Tool guides at a verbosity level: the text guide (for ReAct prompts) and the tool listings.

Each tool block is Corral's: `Tool: <name>`, `Description: <filtered description>`, `Arguments:`
and one `- <arg> (<type>, required|optional, default: <d>): <filtered description>` line per
argument, rendered from the tool's `ToolDoc` at the level (corral_core/tools/documentation.py), so
the guide shows what `/tools` and MCP `tools/list` show: an argument's choices appear as a
`(choices: [...])` fragment wherever its text does not state them already (Corral's guide left them
out, so ReAct agents never saw what tool-calling agents got as `enum`). The framing around the blocks
is ours and belongs to levels like any other documentation: the usage rules from `brief` up, the
worked example call (a usage example) from `comprehensive` up, where a tool's EXAMPLES appear
(`EXAMPLE_CALL_LEVEL`). The `tidy` style indents multi-line argument texts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from corral_core.tools.base import Tool
from corral_core.tools.documentation import ToolDoc
from corral_core.tools.schema import resolve_ref, schema_choices
from corral_core.tools.verbosity import DocStyle, ToolVerbosity, parse_style, parse_verbosity, verbosity_rank

NO_TOOLS = "No tools available."
USAGE = """How to use tools:
1. Call one tool at a time, using its exact name.
2. Give the arguments as a JSON object whose keys are the argument names listed above.
3. Provide every required argument; an optional one may be left out and then takes its default.
4. Read the tool's result before deciding on the next step; do not guess results."""

# The level from which the guide ends with a worked call: the level of the tools' own EXAMPLES.
EXAMPLE_CALL_LEVEL = ToolVerbosity.COMPREHENSIVE

_PLACEHOLDERS: dict[str, Any] = {
    "string": "text",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


def tools_openai(tools: Iterable[Tool], verbosity: str | ToolVerbosity | None = None,
                 style: str | DocStyle | None = None) -> list[dict[str, Any]]:
    """The tools in OpenAI function-calling format, descriptions filtered to the level."""
    level = parse_verbosity(verbosity)
    return [t.to_openai(level, style) for t in tools]


def tools_listing(tools: Iterable[Tool], verbosity: str | ToolVerbosity | None = None,
                  style: str | DocStyle | None = None) -> list[dict[str, Any]]:
    """What `/tools` lists: OpenAI function format plus Corral E2's `name`/`description`/`arguments`."""
    level = parse_verbosity(verbosity)
    return [t.to_listing(level, style) for t in tools]


def tools_guide(tools: Iterable[Tool], verbosity: str | ToolVerbosity | None = None,
                style: str | DocStyle | None = None) -> str:
    """The text guide: "Available Tools:" blocks, then how to call them (and, from `comprehensive`
    up, a worked example call).

    MINIMAL is Corral's compact form (`**name**: summary` and the argument names, no usage notes).
    Every fact a block shows comes from the tool's `ToolDoc` at the level, as in the other channels.
    """
    level = parse_verbosity(verbosity)
    doc_style = parse_style(style)
    tools = list(tools)
    if not tools:
        return NO_TOOLS
    docs = [tool.document(level, doc_style) for tool in tools]
    if level is ToolVerbosity.MINIMAL:
        return "Available Tools:\n" + "\n\n".join(_minimal_block(doc) for doc in docs)
    blocks = "\n\n".join(_block(doc, indent=doc_style is DocStyle.TIDY) for doc in docs)
    guide = f"Available Tools:\n{blocks}\n\n{USAGE}"
    if verbosity_rank(level) >= verbosity_rank(EXAMPLE_CALL_LEVEL):
        guide += f"\n\nExample:\n{_example_call(tools[0])}"
    return guide


def _minimal_block(doc: ToolDoc) -> str:
    names = ", ".join(argument.name for argument in doc.arguments) or "none"
    return f"**{doc.name}**: {doc.description}\nArguments: {names}"


def _block(doc: ToolDoc, *, indent: bool) -> str:
    """Corral's block: `Tool:`, `Description:`, then `- name (type, required|optional, default: d): text`
    per argument; choices the text does not state already follow it as `(choices: [...])`."""
    lines = [f"Tool: {doc.name}", f"Description: {doc.description}"]
    if not doc.arguments:
        lines.append("Arguments: none")
        return "\n".join(lines)
    lines.append("Arguments:")
    for argument in doc.arguments:
        needed = "required" if argument.required else f"optional, default: {argument.default}"
        text = argument.description or ""
        if argument.choices and "(choices:" not in text:
            text = f"{text} (choices: {json.dumps(argument.choices, ensure_ascii=False)})".strip()
        line = f"- {argument.name} ({argument.type}, {needed}): {text}"
        lines.append(line.replace("\n", "\n  ") if indent else line)
        for name, type_name, required, field_text in argument.fields:
            lines.append(f"  - {name} ({type_name}, {'required' if required else 'optional'}): {field_text}".rstrip())
    return "\n".join(lines)


def _example_call(tool: Tool) -> str:
    """A call of `tool` with placeholder values for its required arguments (choices: the first one)."""
    arguments = {}
    for name in tool.parameters["required"]:
        prop = resolve_ref(tool.parameters["properties"][name], tool.parameters)
        choices = schema_choices(prop)
        if choices:
            arguments[name] = choices[0]
            continue
        json_type = prop.get("type") or next((m.get("type") for m in prop.get("anyOf", ()) if m.get("type")), None)
        if isinstance(json_type, list):
            json_type = next((t for t in json_type if t != "null"), json_type[0])
        arguments[name] = _PLACEHOLDERS.get(json_type, "value") if isinstance(json_type, str) else "value"
    return json.dumps({"tool_name": tool.name, "arguments": arguments}, ensure_ascii=False)
