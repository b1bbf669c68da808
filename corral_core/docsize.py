"""The manipulation check: what an agent receives of a suite's tool documentation at each verbosity
level, in each channel, and how big it is (characters, and tokens by litellm's counter for a model).

```
corral-tui docs SUITE [--task ID] [--tool NAME] [--level L | --diff L1 L2]
                      [--channel guide|tools|schema|mcp] [--model ID]
```

Channels: `guide` (the text guide a ReAct agent reads), `tools` (the E2 keys of `/tools`: name,
description, arguments), `schema` (the OpenAI tool list a ToolCalling agent sends to its model), `mcp`
(MCP `tools/list`). JSON channels are measured compact (`json.dumps` with `(",", ":")` separators),
the form that goes over the wire; they are printed indented.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral_core.errors import UserError
from corral_core.tools import Tool, ToolVerbosity, parse_verbosity, tools_guide

CHANNELS = ("guide", "tools", "schema", "mcp")
LEVELS = tuple(level.value for level in ToolVerbosity)
DEFAULT_MODEL = "gpt-4o"
# What each agent type reads: the text guide, or the tool list sent to the model.
AGENT_CHANNEL = {"react": "guide", "planner": "guide", "reflection": "guide", "tool_calling": "schema"}


def channel_payload(tools: Iterable[Tool], verbosity: str | ToolVerbosity, channel: str) -> str | list[Any]:
    """What `channel` carries of `tools` at `verbosity`: text for the guide, a JSON list otherwise."""
    level = parse_verbosity(verbosity)
    tools = list(tools)
    if channel == "guide":
        return tools_guide(tools, level)
    if channel == "tools":
        return [{key: entry[key] for key in ("name", "description", "arguments")}
                for entry in (tool.to_dict(level) for tool in tools)]
    if channel == "schema":
        return [tool.to_openai(level) for tool in tools]
    if channel == "mcp":
        return [tool.to_mcp(level) for tool in tools]
    raise ValueError(f"unknown channel {channel!r}; use one of {', '.join(CHANNELS)}")


def measured_text(payload: str | list[Any]) -> str:
    """The text whose size is measured: the guide as is, JSON compact."""
    return payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def shown_text(payload: str | list[Any]) -> str:
    return payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, indent=2)


@dataclass(frozen=True)
class DocSize:
    """The size of one level's documentation in one channel."""

    level: str
    channel: str
    chars: int
    tokens: int | None  # None when no model was given to count with

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "channel": self.channel, "chars": self.chars, "tokens": self.tokens}


def count_tokens(text: str, model: str) -> int | None:
    """Tokens of `text` by litellm's counter for `model` (imports litellm on first use); None when
    litellm cannot count for it here (a tokenizer it would have to download, offline)."""
    from corral_core.llm.client import token_count

    try:
        return token_count(text, model)
    except Exception:  # litellm raises many kinds for a tokenizer it cannot load
        return None


def documentation_size(tools: Sequence[Tool], verbosity: str | ToolVerbosity, channel: str,
                       model: str | None = None) -> DocSize:
    text = measured_text(channel_payload(tools, verbosity, channel))
    return DocSize(parse_verbosity(verbosity).value, channel, len(text),
                   count_tokens(text, model) if model else None)


def arm_documentation(suite: Any, task_ids: Sequence[str], verbosity: str, agent_type: str,
                      model: str | None) -> dict[str, Any]:
    """What one arm's agents are shown, averaged over its tasks (each task may offer other tools):
    {"channel", "level", "chars", "tokens"} with the mean per task (tokens by `model`'s counter)."""
    channel = AGENT_CHANNEL.get(agent_type, "guide")
    tool_sets: dict[tuple[str, ...], list[Tool]] = {}
    weights: dict[tuple[str, ...], int] = {}
    for task_id in task_ids:
        tools = suite.tools_for(task_id) if hasattr(suite, "tools_for") else list(suite.tools.values())
        key = tuple(tool.name for tool in tools)
        tool_sets[key] = tools
        weights[key] = weights.get(key, 0) + 1
    total = sum(weights.values()) or 1
    sizes = {key: documentation_size(tools, verbosity, channel, model) for key, tools in tool_sets.items()}
    chars = sum(sizes[key].chars * count for key, count in weights.items()) / total
    counted = [sizes[key].tokens for key in weights]
    tokens = (None if model is None or not sizes or None in counted
              else sum((sizes[key].tokens or 0) * count for key, count in weights.items()) / total)
    return {"channel": channel, "level": parse_verbosity(verbosity).value, "chars": round(chars, 1),
            "tokens": None if tokens is None else round(tokens, 1)}


# --- the command ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="corral-tui docs",
        description="Print what an agent receives of a suite's tool documentation, and its size per level "
                    "(characters, and tokens by litellm's counter for --model).")
    parser.add_argument("suite", help="a suite (YAML) or a Corral-style environment module (.py)")
    parser.add_argument("--task", help="the task whose tools to show (default: the suite's first task)")
    parser.add_argument("--tool", help="only this tool")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--level", help=f"print what this level shows ({', '.join(LEVELS)})")
    shown.add_argument("--diff", nargs=2, metavar=("L1", "L2"), help="print what changes from level L1 to L2")
    parser.add_argument("--channel", choices=CHANNELS, default="guide",
                        help="guide (ReAct), tools (E2 keys), schema (ToolCalling's request), mcp (tools/list)")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"count tokens as this model's tokenizer does (default: {DEFAULT_MODEL})")
    return parser


def docs_main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    tools = _tools(args)
    levels = [_level(value, "--level") for value in ([args.level] if args.level else [])]
    if args.diff:
        first, second = (_level(value, "--diff") for value in args.diff)
        before = shown_text(channel_payload(tools, first, args.channel)).splitlines()
        after = shown_text(channel_payload(tools, second, args.channel)).splitlines()
        sys.stdout.write("\n".join(difflib.unified_diff(before, after, first, second, lineterm="")) + "\n\n")
        levels = [first, second]
    elif levels:
        sys.stdout.write(shown_text(channel_payload(tools, levels[0], args.channel)) + "\n\n")
    sizes = [documentation_size(tools, level, args.channel, args.model) for level in LEVELS]
    sys.stdout.write(_size_table(sizes, args, set(levels)))
    return 0


def _level(value: str, flag: str) -> str:
    try:
        return parse_verbosity(value).value
    except ValueError as exc:
        raise UserError(str(exc), where=flag, fix=f"use one of {', '.join(LEVELS)}.") from None


def _tools(args: argparse.Namespace) -> list[Tool]:
    from corral_core.env import load_suite

    path = Path(args.suite)
    try:
        suite = load_suite(path)
    except UserError:
        raise
    except OSError as exc:
        raise UserError(f"cannot read the suite: {exc.strerror or exc}.", file=str(path)) from None
    task = args.task or (suite.task_ids[0] if suite.task_ids else None)
    if task not in suite.tasks:
        raise UserError(f"the suite has no task {task!r}.", file=str(path),
                        fix=f"use --task with one of: {', '.join(suite.task_ids)}.")
    tools = suite.tools_for(task)
    if args.tool:
        tools = [tool for tool in tools if tool.name == args.tool]
        if not tools:
            known = ", ".join(tool.name for tool in suite.tools_for(task))
            raise UserError(f"task {task!r} has no tool {args.tool!r}.", file=str(path), fix=f"use one of: {known}.")
    return tools


def _size_table(sizes: Sequence[DocSize], args: argparse.Namespace, marked: set[str]) -> str:
    what = f"tool {args.tool!r}" if args.tool else "all tools"
    lines = [f"{args.channel} channel, {what}, tokens by {args.model}'s tokenizer (litellm.token_counter):",
             f"  {'level':<14}{'chars':>8}{'tokens':>8}"]
    for size in sizes:
        mark = " <" if size.level in marked else ""
        lines.append(f"  {size.level:<14}{size.chars:>8}{size.tokens if size.tokens is not None else '-':>8}{mark}")
    return "\n".join(lines) + "\n"
