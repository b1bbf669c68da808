"""Parsing of ReAct replies in Corral's XML format, forgiving where it can be and precise where not.

Fixes over Corral: a missing or broken <action_input> only affects its own action; arguments are
read with json.loads first, then Python-literal and YAML fallbacks (no blind True->true rewrite that
corrupts string values); every problem is named so the corrective message can say what was wrong.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from corral_core.yamlfile import safe_load

_FLAGS = re.DOTALL | re.IGNORECASE
_THOUGHT = re.compile(r"<thought>(.*?)</thought>", _FLAGS)
_ACTION_OPEN = re.compile(r"<action>", re.IGNORECASE)
_ACTION = re.compile(r"<action>(.*?)</action>", _FLAGS)
_INPUT = re.compile(r"^\s*<action_input>(.*?)</action_input>", _FLAGS)
_INPUT_OPEN = re.compile(r"^\s*<action_input>", re.IGNORECASE)
_FINAL = re.compile(r"<final_answer>(.*?)</final_answer>", _FLAGS)
_FINAL_OPEN = re.compile(r"<final_answer>(.*)$", _FLAGS)
_FINAL_TEXT = re.compile(r"^\s*Final Answer:\s*(.+)", re.IGNORECASE | re.MULTILINE | re.DOTALL)
_SURRENDER = re.compile(r"<surrender>(.*?)</surrender>", _FLAGS)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)
_TRIPLE = re.compile(r'"""(.*?)"""', re.DOTALL)


@dataclass
class ParsedAction:
    """One <action>; `arguments` is None when `error` says why it cannot run."""

    name: str
    arguments: dict[str, Any] | None
    error: str | None = None


@dataclass
class ParsedReply:
    thoughts: list[str] = field(default_factory=list)
    actions: list[ParsedAction] = field(default_factory=list)
    final_answer: str | None = None
    surrender: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def runnable(self) -> list[ParsedAction]:
        return [a for a in self.actions if a.error is None]


def parse_arguments(text: str) -> dict[str, Any]:
    """Read tool arguments written as JSON, a Python literal or YAML; raise ValueError with the reason."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        return {}
    errors = []
    candidates = [body]
    if '"""' in body:  # Corral's prompts allow """multi-line""" values: make them JSON strings
        candidates.append(_TRIPLE.sub(lambda m: json.dumps(m.group(1)), body))
    for candidate in candidates:
        try:
            value = json.loads(candidate)
            break
        except json.JSONDecodeError as exc:
            errors.append(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
        try:
            value = ast.literal_eval(candidate)
            break
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
        try:
            value = safe_load(candidate)  # bounded: an LLM can write an alias bomb too
            if isinstance(value, dict):
                break
        except yaml.YAMLError:
            pass
    else:
        raise ValueError(errors[0] if errors else "not a JSON object")
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object like {{\"name\": value}}, got {type(value).__name__}")
    return {str(k): v for k, v in value.items()}


def parse_react(content: str) -> ParsedReply:
    """Split a reply into thoughts, actions (each with its own parse result), final answer, surrender."""
    reply = ParsedReply()
    text = content or ""
    reply.thoughts = [t.strip() for t in _THOUGHT.findall(text) if t.strip()]
    surrender = _SURRENDER.search(text)
    if surrender:
        reply.surrender = surrender.group(1).strip() or "no reason given"
    final = _FINAL.search(text)
    if final:
        reply.final_answer = final.group(1).strip()
    elif _FINAL_OPEN.search(text):
        reply.problems.append("<final_answer> has no closing </final_answer> tag")
    elif "<action>" not in text.lower():
        plain = _FINAL_TEXT.search(text)
        if plain:
            reply.final_answer = plain.group(1).strip()
    if reply.final_answer == "":
        reply.final_answer = None
        reply.problems.append("<final_answer> is empty")

    opens = list(_ACTION_OPEN.finditer(text))
    for index, opening in enumerate(opens):
        segment_end = opens[index + 1].start() if index + 1 < len(opens) else len(text)
        segment = text[opening.start():segment_end]
        match = _ACTION.match(segment)
        if not match:
            reply.problems.append("an <action> tag has no closing </action> tag")
            continue
        name = match.group(1).strip()
        rest = segment[match.end():]
        if not name:
            reply.actions.append(ParsedAction("", None, "the <action> tag is empty; put the tool name in it"))
            continue
        input_match = _INPUT.match(rest)
        if input_match is None:
            why = ("its <action_input> has no closing </action_input> tag" if _INPUT_OPEN.match(rest)
                   else "it is not followed by <action_input>...</action_input> "
                        "(use <action_input>{}</action_input> for no arguments)")
            reply.actions.append(ParsedAction(name, None, f"action '{name}' was not run: {why}"))
            continue
        try:
            arguments = parse_arguments(input_match.group(1))
        except ValueError as exc:
            reply.actions.append(ParsedAction(
                name, None, f"action '{name}' was not run: its <action_input> could not be read: {exc}"))
            continue
        reply.actions.append(ParsedAction(name, arguments))
    return reply


def strip_actions(text: str) -> str:
    """Remove <action>/<action_input> blocks (for interventions that must not act)."""
    text = re.sub(r"<action>.*?</action>\s*(?:<action_input>.*?</action_input>)?", "", text, flags=_FLAGS)
    return text.strip()
