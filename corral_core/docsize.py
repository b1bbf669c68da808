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
from collections.abc import Callable, Iterable, Sequence
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
                      model: str | None, variant: str | None = None,
                      components: Sequence[str] | None = None) -> dict[str, Any]:
    """What one arm's agents are shown, averaged over its tasks (each task may offer other tools):
    {"channel", "level", "chars", "tokens"} with the mean per task (tokens by `model`'s counter), the
    tools shown in the arm's documentation `variant` with exactly its `components`."""
    channel = AGENT_CHANNEL.get(agent_type, "guide")
    tool_sets: dict[tuple[str, ...], list[Tool]] = {}
    weights: dict[tuple[str, ...], int] = {}
    for task_id in task_ids:
        tools = suite.tools_for(task_id, variant, components)
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


@dataclass(frozen=True)
class View:
    """One documentation an agent can be shown: a level, a variant, a component subset (an arm, or the
    flags), named for the output."""

    name: str
    level: str
    variant: str | None = None
    components: tuple[str, ...] | None = None

    def label(self) -> str:
        parts = [self.level, *( [f"variant {self.variant}"] if self.variant else []),
                 *([f"components {'+'.join(self.components)}"] if self.components is not None else [])]
        return self.name if self.name == self.level else f"{self.name} ({', '.join(parts)})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="corral-tui docs",
        description="Print what an agent receives of a suite's tool documentation, and its size per level "
                    "(characters, and tokens by litellm's counter for --model); with a benchmark spec, per arm.")
    parser.add_argument("suite", help="a suite (YAML), a Corral-style environment module (.py), or a benchmark "
                                      "spec (YAML with `suite:` and `arms:`: --arm and --diff take its arm names)")
    parser.add_argument("--task", help="the task whose tools to show (default: the suite's first task)")
    parser.add_argument("--tool", help="only this tool")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--level", help=f"print what this level shows ({', '.join(LEVELS)})")
    shown.add_argument("--arm", help="print what this arm of the spec shows (its level, variant and components)")
    shown.add_argument("--diff", nargs=2, metavar=("A", "B"),
                       help="print what changes from A to B: two levels, or two arms of the spec")
    parser.add_argument("--variant", help="the suite's documentation variant to show (original, or one of its "
                                          "documentation.variants)")
    parser.add_argument("--components", help="exactly these components, comma-separated (e.g. brief,syntactical)")
    parser.add_argument("--channel", choices=CHANNELS, default="guide",
                        help="guide (ReAct), tools (E2 keys), schema (ToolCalling's request), mcp (tools/list)")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"count tokens as this model's tokenizer does (default: {DEFAULT_MODEL})")
    return parser


def docs_main(argv: Sequence[str], load_spec: Callable[[Path], Any] | None = None) -> int:
    """The command; `load_spec` reads a benchmark spec (corral_core.spec.load_spec: the layer above
    this one passes it), for --arm and arm names in --diff."""
    args = build_parser().parse_args(list(argv))
    suite, task, arms = _source(args, load_spec)
    base = _flag_view(args)
    shown: list[View] = []
    if args.diff:
        first, second = (_view(value, "--diff", arms, base) for value in args.diff)
        before = shown_text(_payload(suite, task, args, first)).splitlines()
        after = shown_text(_payload(suite, task, args, second)).splitlines()
        sys.stdout.write("\n".join(difflib.unified_diff(before, after, first.label(), second.label(),
                                                       lineterm="")) + "\n\n")
        shown = [first, second]
    elif args.level or args.arm:
        view = _view(args.arm, "--arm", arms, base) if args.arm else _view(args.level, "--level", {}, base)
        sys.stdout.write(shown_text(_payload(suite, task, args, view)) + "\n\n")
        shown = [view]
    views = [View(level, level, base.variant, base.components) for level in LEVELS]
    sys.stdout.write(_size_table(suite, task, args, views, shown, "level"))
    if arms:
        sys.stdout.write("\n" + _size_table(suite, task, args, list(arms.values()), shown, "arm"))
    return 0


def _flag_view(args: argparse.Namespace) -> View:
    components = None
    if args.components is not None:
        from corral_core.tools.overlay import check_components

        try:
            components = check_components([part.strip() for part in args.components.split(",") if part.strip()])
        except ValueError as exc:
            raise UserError(f"{exc}.", where="--components", fix="e.g. --components brief,syntactical") from None
    return View("flags", "full", args.variant, components)


def _view(value: str, flag: str, arms: dict[str, View], base: View) -> View:
    if value in arms:
        return arms[value]
    try:
        level = parse_verbosity(value).value
    except ValueError as exc:
        names = f"; or an arm of the spec: {', '.join(arms)}" if arms else ""
        raise UserError(str(exc), where=flag, fix=f"use one of {', '.join(LEVELS)}{names}.") from None
    return View(level, level, base.variant, base.components)


def _payload(suite: Any, task: str, args: argparse.Namespace, view: View) -> str | list[Any]:
    return channel_payload(_tools(suite, task, args, view), view.level, args.channel)


def _source(args: argparse.Namespace, load_spec: Callable[[Path], Any] | None
            ) -> tuple[Any, str, dict[str, View]]:
    """(the suite or catalog, the task, the spec's arms by name) of the positional argument."""
    from corral_core.env import combine_suites, load_suite

    path = Path(args.suite)
    arms: dict[str, View] = {}
    try:
        if load_spec is not None and path.suffix in (".yaml", ".yml") and _is_spec(path):
            spec = load_spec(path)
            suite = combine_suites(spec.suites)
            arms = {arm.name: View(arm.name, arm.verbosity, arm.variant, arm.components) for arm in spec.arms}
        else:
            suite = load_suite(path)
    except UserError:
        raise
    except OSError as exc:
        raise UserError(f"cannot read the suite: {exc.strerror or exc}.", file=str(path)) from None
    task = args.task or (suite.task_ids[0] if suite.task_ids else None)
    if task not in suite.task_ids:
        raise UserError(f"the suite has no task {task!r}.", file=str(path),
                        fix=f"use --task with one of: {', '.join(suite.task_ids)}.")
    if args.tool and args.tool not in {tool.name for tool in suite.tools_for(task)}:
        known = ", ".join(tool.name for tool in suite.tools_for(task))
        raise UserError(f"task {task!r} has no tool {args.tool!r}.", file=str(path), fix=f"use one of: {known}.")
    return suite, task, arms


def _is_spec(path: Path) -> bool:
    from corral_core.yamlfile import load_yaml_document

    data = load_yaml_document(path, "suite or spec file").data
    return "arms" in data or "suite" in data or "suites" in data


def _tools(suite: Any, task: str, args: argparse.Namespace, view: View) -> list[Tool]:
    try:
        tools = suite.tools_for(task, view.variant, view.components)
    except ValueError as exc:
        raise UserError(f"{exc}.", where="--variant", fix="name a variant the suite has.") from None
    return [tool for tool in tools if tool.name == args.tool] if args.tool else tools


def _size_table(suite: Any, task: str, args: argparse.Namespace, views: Sequence[View], marked: Sequence[View],
                what: str) -> str:
    subject = f"tool {args.tool!r}" if args.tool else "all tools"
    lines = [f"{args.channel} channel, {subject}, tokens by {args.model}'s tokenizer (litellm.token_counter):",
             f"  {what:<14}{'chars':>8}{'tokens':>8}" + ("  level, variant, components" if what == "arm" else "")]
    for view in views:
        size = documentation_size(_tools(suite, task, args, view), view.level, args.channel, args.model)
        mark = " <" if any(view == other for other in marked) else ""
        extra = (f"  {view.level}, {view.variant or 'default'}, "
                 f"{'+'.join(view.components) if view.components is not None else 'all'}") if what == "arm" else ""
        tokens = size.tokens if size.tokens is not None else "-"
        lines.append(f"  {view.name:<14}{size.chars:>8}{tokens:>8}{extra}{mark}")
    return "\n".join(lines) + "\n"
