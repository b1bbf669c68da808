"""Tool guides at a verbosity level: the text guide (for ReAct prompts) and the tool listings.

In Corral's documentation style (the default) each tool block is Corral's: `Tool: <name>`,
`Description: <filtered description>`, `Arguments:` and one `- <arg> (<type>, required|optional,
default: <d>): <filtered description>` line per argument, with the texts Corral's filter produces.
The framing around the blocks (the usage notes and the example call) is ours. The `tidy` style
also lists each argument's choices and indents multi-line argument texts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from corral_core.tools.base import Tool
from corral_core.tools.schema import schema_choices, schema_type_name
from corral_core.tools.verbosity import DocStyle, ToolVerbosity, parse_style, parse_verbosity

NO_TOOLS = "No tools available."
USAGE = """How to use tools:
1. Call one tool at a time, using its exact name.
2. Give the arguments as a JSON object whose keys are the argument names listed above.
3. Provide every required argument; an optional one may be left out and then takes its default.
4. Read the tool's result before deciding on the next step; do not guess results."""

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
    """The text guide: "Available Tools:" blocks, then how to call them with an example.

    MINIMAL is compact (`**name**: summary` and the argument names, no usage notes).
    """
    level = parse_verbosity(verbosity)
    doc_style = parse_style(style)
    tools = list(tools)
    if not tools:
        return NO_TOOLS
    if level is ToolVerbosity.MINIMAL:
        return "Available Tools:\n" + "\n\n".join(_minimal_block(t, doc_style) for t in tools)
    block = _tidy_block if doc_style is DocStyle.TIDY else _corral_block
    blocks = "\n\n".join(block(t, level) for t in tools)
    return f"Available Tools:\n{blocks}\n\n{USAGE}\n\nExample:\n{_example_call(tools[0])}"


def _minimal_block(tool: Tool, style: DocStyle) -> str:
    names = ", ".join(tool.parameters["properties"]) or "none"
    return f"**{tool.name}**: {tool.describe(ToolVerbosity.MINIMAL, style)}\nArguments: {names}"


def _corral_block(tool: Tool, level: ToolVerbosity) -> str:
    lines = [f"Tool: {tool.name}", f"Description: {tool.describe(level)}"]
    arguments = tool.arguments
    if not arguments:
        lines.append("Arguments: none")
        return "\n".join(lines)
    lines.append("Arguments:")
    for argument in arguments:
        prop = tool.parameters["properties"].get(argument.name, {})
        type_name = schema_type_name(prop) if prop else argument.type
        needed = "required" if argument.required else f"optional, default: {argument.default}"
        lines.append(f"- {argument.name} ({type_name}, {needed}): {tool.describe_argument(argument.name, level)}")
    return "\n".join(lines)


def _tidy_block(tool: Tool, level: ToolVerbosity) -> str:
    lines = [f"Tool: {tool.name}", f"Description: {tool.describe(level, DocStyle.TIDY)}"]
    properties = tool.parameters["properties"]
    if not properties:
        lines.append("Arguments: none")
        return "\n".join(lines)
    lines.append("Arguments:")
    required = set(tool.parameters["required"])
    for name, prop in properties.items():
        facts = [schema_type_name(prop), "required" if name in required else "optional"]
        if name not in required and "default" in prop:
            facts.append(f"default: {json.dumps(prop['default'], ensure_ascii=False)}")
        text = tool.describe_argument(name, level, DocStyle.TIDY)
        choices = schema_choices(prop)
        if choices is not None and "(choices:" not in text:
            text = f"{text} (choices: {json.dumps(choices, ensure_ascii=False)})".strip()
        line = f"- {name} ({', '.join(facts)})" + (f": {text}" if text else "")
        lines.append(line.replace("\n", "\n  "))  # keep multi-line descriptions under their argument
    return "\n".join(lines)


def _example_call(tool: Tool) -> str:
    """A call of `tool` with placeholder values for its required arguments (choices: the first one)."""
    arguments = {}
    for name in tool.parameters["required"]:
        prop = tool.parameters["properties"][name]
        choices = schema_choices(prop)
        if choices:
            arguments[name] = choices[0]
            continue
        json_type = prop.get("type") or next((m.get("type") for m in prop.get("anyOf", ()) if m.get("type")), None)
        if isinstance(json_type, list):
            json_type = next((t for t in json_type if t != "null"), json_type[0])
        arguments[name] = _PLACEHOLDERS.get(json_type, "value") if isinstance(json_type, str) else "value"
    return json.dumps({"tool_name": tool.name, "arguments": arguments}, ensure_ascii=False)
