"""The `scripted/<name>` model: deterministic turns read from a `<name>.script.yaml` file.

Format (docs/models.md has the user's summary):

    tasks:
      <task_id>:
        react: [<text turn>, ...]                 # role "agent", request without tools
        tool_calling: [{content?, tool_calls: [{name, arguments}]}, ...]   # role "agent" with tools
        planner: [...]   reflection: [...]   extractor: [...]   # any other role: list named by the role
        variants:                                 # optional; first entry whose `when` matches wins
          - when: {prompt_contains: "text", prompt_matches: "regex", trial_index: [0, 2]}
            react: [...]                          # overrides only the lists it names
    default: {react: [...], tool_calling: [...]}  # for unknown tasks and lists a task lacks

Turn N of a role is item N of its list (CallContext.turn); past the end the last item repeats.
This module is pure Python; the litellm provider around it lives in providers.py.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from corral_core.llm.types import CallContext, LLMError, LLMToolCall
from corral_core.samples import SCRIPT_SUFFIX
from corral_core.samples import sample_tasks_dir as sample_tasks_dir  # where the sample scripts are
from corral_core.yamlfile import safe_load

SCRIPTS_ENV = "CORRAL_TUI_SCRIPTS"
_TOP_KEYS = {"tasks", "default", "description"}
_WHEN_KEYS = {"prompt_contains", "prompt_matches", "trial_index"}


@dataclass(frozen=True)
class ScriptedTurn:
    """One reply of a scripted model: text and/or tool calls."""

    content: str | None
    tool_calls: tuple[LLMToolCall, ...] = ()


def script_dirs() -> list[Path]:
    """Where `scripted/<name>` looks: $CORRAL_TUI_SCRIPTS (os.pathsep list), then sample_tasks/."""
    dirs = [Path(p).expanduser() for p in os.environ.get(SCRIPTS_ENV, "").split(os.pathsep) if p.strip()]
    return [*dirs, sample_tasks_dir()]


def find_script(name: str) -> Path:
    """The script file for model `scripted/<name>`; `name` may also be a path to a .yaml file."""
    if name.endswith((".yaml", ".yml")) or "/" in name or os.sep in name:
        path = Path(name).expanduser()
        if path.is_file():
            return path
        raise LLMError("script", f"scripted model file not found: {path} (from model 'scripted/{name}'). "
                                 f"Fix: check the path, or use scripted/<name> with <name>{SCRIPT_SUFFIX} "
                                 f"in ${SCRIPTS_ENV} or sample_tasks/.")
    searched = script_dirs()
    for directory in searched:
        candidate = directory / f"{name}{SCRIPT_SUFFIX}"
        if candidate.is_file():
            return candidate
    where = ", ".join(str(d) for d in searched)
    raise LLMError("script", f"no script for model 'scripted/{name}': {name}{SCRIPT_SUFFIX} is not in {where}. "
                             f"Fix: create that file, or add its directory to ${SCRIPTS_ENV} "
                             f"(directories separated by '{os.pathsep}').")


_cache: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}
_cache_lock = threading.Lock()
_found: dict[tuple[str, str], Path] = {}  # (name, $CORRAL_TUI_SCRIPTS) -> the file find_script chose


def _located_script(name: str) -> tuple[Path, dict[str, Any]]:
    """find_script + load_script for a model call: the file found for a name is kept while it exists
    (load_script's stat says so), so a call costs one stat instead of one per folder searched and
    another to read; a script added later to an earlier folder is seen once the kept one is gone."""
    key = (name, os.environ.get(SCRIPTS_ENV, ""))
    path = _found.get(key)
    if path is not None:
        try:
            return path, load_script(path)
        except FileNotFoundError:
            _found.pop(key, None)
    path = find_script(name)
    _found[key] = path
    return path, load_script(path)


def load_script(path: Path) -> dict[str, Any]:
    """Parse and check a script file; cached until the file changes.

    A hit costs one stat: the cache is keyed by the path as given (resolving it walked every folder
    of it on every model call), and the path is resolved only to read the file and name it."""
    key = path
    stat = path.stat()
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _cache_lock:
        hit = _cache.get(key)
        if hit and hit[0] == stamp:
            return hit[1]
    path = path.resolve()
    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise LLMError("script", f"{path}:{line} is not valid YAML ({getattr(exc, 'problem', exc)}). "
                                 "Fix: correct the YAML syntax (quote strings containing ':' or '#').") from None
    _check_script(path, data)
    with _cache_lock:
        _cache[key] = (stamp, data)
    return cast("dict[str, Any]", data)


def _fail(path: Path, where: str, problem: str, fix: str) -> LLMError:
    return LLMError("script", f"{path} ({where}): {problem} Fix: {fix}")


def _check_script(path: Path, data: Any) -> None:
    if not isinstance(data, dict):
        raise _fail(path, "top level", "a script must be a mapping with `tasks:` and/or `default:`.",
                    "start the file with `tasks:`.")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise _fail(path, "top level", f"unknown keys {unknown}.", f"use only {sorted(_TOP_KEYS)}.")
    tasks = data.get("tasks") or {}
    if not isinstance(tasks, dict):
        raise _fail(path, "tasks", "`tasks` must map task ids to their turns.",
                    "write `tasks:\\n  add:\\n    react: [...]`.")
    for task_id, section in tasks.items():
        _check_section(path, f"tasks.{task_id}", section)
    if data.get("default") is not None:
        _check_section(path, "default", data["default"])


def _check_section(path: Path, where: str, section: Any, *, in_variant: bool = False) -> None:
    if not isinstance(section, dict):
        raise _fail(path, where, "expected a mapping of role lists (react, tool_calling, planner, ...).",
                    "indent the role lists under this key.")
    for key, value in section.items():
        if key == "variants" and not in_variant:
            _check_variants(path, f"{where}.variants", value)
        elif key == "when" and in_variant:
            _check_when(path, f"{where}.when", value)
        elif not isinstance(value, list) or not value:
            raise _fail(path, f"{where}.{key}", "a role list must be a non-empty list of turns.",
                        "write `- \"text\"` items, or `- {content: ..., tool_calls: [...]}`.")
        else:
            for index, item in enumerate(value):
                _check_turn(path, f"{where}.{key}[{index}]", item)


def _check_variants(path: Path, where: str, variants: Any) -> None:
    if not isinstance(variants, list):
        raise _fail(path, where, "`variants` must be a list.",
                    "write `variants:\\n  - when: {...}\\n    react: [...]`.")
    for index, variant in enumerate(variants):
        _check_section(path, f"{where}[{index}]", variant, in_variant=True)


def _check_when(path: Path, where: str, when: Any) -> None:
    if not isinstance(when, dict) or set(when) - _WHEN_KEYS:
        raise _fail(path, where, f"`when` must be a mapping using only {sorted(_WHEN_KEYS)}.",
                    "e.g. `when: {prompt_contains: \"**\"}` or `when: {trial_index: [0, 2]}`.")
    if "prompt_matches" in when:
        try:
            re.compile(str(when["prompt_matches"]))
        except re.error as exc:
            raise _fail(path, where, f"`prompt_matches` is not a valid regular expression ({exc}).",
                        "escape special characters such as `*` as `\\\\*`.") from None


def _check_turn(path: Path, where: str, item: Any) -> None:
    if isinstance(item, str):
        return
    if not isinstance(item, dict) or set(item) - {"content", "tool_calls"}:
        raise _fail(path, where, "a turn is a string or a mapping with `content` and/or `tool_calls`.",
                    "write `- \"text\"` or `- {tool_calls: [{name: calculator, arguments: {...}}]}`.")
    for index, call in enumerate(item.get("tool_calls") or []):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or set(call) - {"name", "arguments"}:
            raise _fail(path, f"{where}.tool_calls[{index}]", "a tool call needs `name` and optional `arguments`.",
                        "write `{name: calculator, arguments: {operation: \"+\", a: 1, b: 2}}`.")


def prompt_text(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """Text that `when.prompt_contains` sees: system+user messages, then tool descriptions.

    Tool descriptions count because a tool-calling request carries the tool documentation (whose
    length depends on the verbosity level) in `tools`, not in the messages. Enums are left out.
    """
    parts = [_content_text(m.get("content")) for m in messages if m.get("role") in ("system", "user")]
    for spec in tools or []:
        function = spec.get("function", spec) if isinstance(spec, dict) else {}
        parts.append(str(function.get("description") or ""))
        for prop in ((function.get("parameters") or {}).get("properties") or {}).values():
            if isinstance(prop, dict) and prop.get("description"):
                parts.append(str(prop["description"]))
    return "\n".join(p for p in parts if p)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _when_matches(when: dict[str, Any] | None, text: str, trial_index: int) -> bool:
    when = when or {}
    needles = when.get("prompt_contains")
    if needles is not None:
        needles = needles if isinstance(needles, list) else [needles]
        if not all(str(needle) in text for needle in needles):
            return False
    if "prompt_matches" in when and not re.search(str(when["prompt_matches"]), text):
        return False
    if "trial_index" in when:
        wanted = when["trial_index"] if isinstance(when["trial_index"], list) else [when["trial_index"]]
        if trial_index not in [int(i) for i in wanted]:
            return False
    return True


def _pick(section: dict[str, Any] | None, list_name: str, text: str, trial_index: int) -> list[Any] | None:
    if not section:
        return None
    for variant in section.get("variants") or []:
        if _when_matches(variant.get("when"), text, trial_index):
            if list_name in variant:
                return cast("list[Any] | None", variant[list_name])
            break  # first match wins; lists it does not name come from the task itself
    return section.get(list_name)


def list_name_for(role: str, has_tools: bool) -> str:
    """Which list a call reads: role "agent" -> tool_calling/react by tools; others by role name."""
    if role == "agent":
        return "tool_calling" if has_tools else "react"
    return role


def scripted_turn(name: str, context: CallContext, messages: list[dict[str, Any]],
                  tools: list[dict[str, Any]] | None) -> ScriptedTurn:
    """The turn `scripted/<name>` answers for this call (deterministic in its inputs)."""
    path, script = _located_script(name)
    list_name = list_name_for(context.role, bool(tools))
    text = prompt_text(messages, tools)
    task_section = (script.get("tasks") or {}).get(context.task_id)
    turns = _pick(task_section, list_name, text, context.trial_index)
    if turns is None:
        turns = _pick(script.get("default"), list_name, text, context.trial_index)
    if turns is None:
        task = f"task '{context.task_id}'" if task_section is not None else f"unknown task '{context.task_id}'"
        raise LLMError("script", f"{path}: no `{list_name}` turns for {task} (role '{context.role}') and no "
                                 f"`default.{list_name}`. Fix: add a `{list_name}:` list under "
                                 f"tasks.{context.task_id or '<task_id>'} or under default.")
    item = turns[min(max(context.turn, 0), len(turns) - 1)]
    return _to_turn(item, context)


def _to_turn(item: Any, context: CallContext) -> ScriptedTurn:
    if isinstance(item, str):
        return ScriptedTurn(content=item)
    calls = []
    for index, call in enumerate(item.get("tool_calls") or []):
        arguments = call.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        call_id = f"call_{context.role}_{context.turn}_{index}"
        calls.append(LLMToolCall(id=call_id, name=call["name"], arguments=text))
    content = item.get("content")
    return ScriptedTurn(content=None if content is None else str(content), tool_calls=tuple(calls))


def estimate_tokens(text: str) -> int:
    """A plausible token count for offline models: about four characters per token, at least 1."""
    return max(1, math.ceil(len(text) / 4))


def request_chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """All prompt text of a request (every message and the tool schemas), for token estimates."""
    parts = [_content_text(m.get("content")) for m in messages]
    if tools:
        parts.append(json.dumps(tools, sort_keys=True))
    return "\n".join(parts)
