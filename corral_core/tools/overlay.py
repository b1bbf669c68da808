"""Documentation overlays: per tool and per argument text for each component, for tools whose source
is not yours (an MCP server, an HTTP or CLI tool, a builtin, a Python tool).

```yaml
description: the rewritten variant       # optional
tools:
  search_flights:
    brief: Search direct and one-stop flights between two airports on one date.
    returns: A JSON list of flights, each with its number, times and prices per cabin.
    raises: An unknown airport code gives an error naming it.
    arguments:
      origin:
        brief: IATA code of the departure airport.
        examples: '"JFK", "SFO"'
```

Component names are those of corral_core/tools/components.py (Corral's tags). A component the
overlay gives replaces the tool's own one; `""` removes it; the others stay. Every mistake (an
unknown tool, argument or component, a key written twice, a value that is not text) is a UserError
naming the overlay file, the line and the fix, raised when the suite loads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral_core.registry import closest
from corral_core.tools.components import (
    ARGUMENT_COMPONENTS,
    TOOL_COMPONENTS,
    Documentation,
    merged,
    own_components,
)
from corral_core.yamlfile import YamlDocument, load_yaml_document

if TYPE_CHECKING:
    from corral_core.tools.base import Tool

OVERLAY_KEYS = ("description", "tools")
ORIGINAL = "original"  # the variant name that means "the tools' own documentation, no overlay"


@dataclass(frozen=True)
class Overlay:
    """One overlay file: {tool: {component: text}} and {tool: {argument: {component: text}}}."""

    path: Path
    text: str
    tools: dict[str, dict[str, str]] = field(default_factory=dict)
    arguments: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    description: str = ""

    @property
    def sha256(self) -> str:
        """sha256 of the file's text (UTF-8)."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def record(self, variant: str) -> dict[str, Any]:
        """What a run records of it: the variant, the file, its content hash and its text."""
        return {"variant": variant, "file": str(self.path), "sha256": self.sha256, "text": self.text}


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    """The start of a fix: "did you mean X? " for the closest known name (registry.closest), or ""."""
    near = closest(name, known)
    return f"did you mean {near!r}? " if near else ""


def load_overlay(path: str | Path, tools: Mapping[str, Tool]) -> Overlay:
    """Read and check an overlay against the suite's `tools` (name -> Tool)."""
    doc = load_yaml_document(path, "documentation overlay", unique_keys=True)
    data = doc.data
    for key in data:
        if key not in OVERLAY_KEYS:
            raise doc.error((key,), f"unknown key {key!r} in a documentation overlay.",
                            f"{_did_you_mean(str(key), OVERLAY_KEYS)}use one of: {', '.join(OVERLAY_KEYS)}.")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise doc.error(("description",), "`description` must be text.")
    entries = data.get("tools")
    if not isinstance(entries, Mapping) or not entries:
        raise doc.error(("tools",), "an overlay needs `tools:`, a mapping of tool name to its components.",
                        "write `tools:` then `  TOOL_NAME:` and `    brief: ...` under it.")
    overlay_tools: dict[str, dict[str, str]] = {}
    overlay_arguments: dict[str, dict[str, dict[str, str]]] = {}
    for name, entry in entries.items():
        at = ("tools", name)
        if name not in tools:
            raise doc.error(at, f"the overlay documents tool {name!r}, which the suite does not have.",
                            f"{_did_you_mean(str(name), tools)}use one of: {', '.join(sorted(tools))}.")
        if not isinstance(entry, Mapping):
            raise doc.error(at, f"tool {name!r} must be a mapping of component: text.",
                            f"write components under it, e.g. `brief: ...` ({', '.join(TOOL_COMPONENTS)}).")
        parts = _components(doc, at, entry, TOOL_COMPONENTS, extra=("arguments",), what=f"tool {name!r}")
        overlay_tools[str(name)] = parts
        arguments = entry.get("arguments")
        if arguments is not None:
            overlay_arguments[str(name)] = _arguments(doc, (*at, "arguments"), arguments, tools[name])
    return Overlay(doc.path, doc.path.read_text(encoding="utf-8"), overlay_tools, overlay_arguments, description)


def _arguments(doc: YamlDocument, at: tuple[Any, ...], value: Any, tool: Tool) -> dict[str, dict[str, str]]:
    known = list(tool.parameters["properties"])
    if not isinstance(value, Mapping):
        raise doc.error(at, "`arguments` must be a mapping of argument name to its components.")
    found: dict[str, dict[str, str]] = {}
    for name, entry in value.items():
        where = (*at, name)
        if name not in known:
            raise doc.error(where, f"tool {tool.name!r} has no argument {name!r}.",
                            f"{_did_you_mean(str(name), known)}use one of: {', '.join(known) or '(it takes none)'}.")
        if not isinstance(entry, Mapping):
            raise doc.error(where, f"argument {name!r} must be a mapping of component: text.",
                            f"write components under it, e.g. `brief: ...` ({', '.join(ARGUMENT_COMPONENTS)}).")
        found[str(name)] = _components(doc, where, entry, ARGUMENT_COMPONENTS, extra=(),
                                       what=f"argument {name!r} of tool {tool.name!r}")
    return found


def _components(doc: YamlDocument, at: tuple[Any, ...], entry: Mapping[str, Any], allowed: Mapping[str, Any],
                *, extra: tuple[str, ...], what: str) -> dict[str, str]:
    parts: dict[str, str] = {}
    for key, text in entry.items():
        if key in extra:
            continue
        if key not in allowed:
            raise doc.error((*at, key), f"unknown component {key!r} for {what}.",
                            f"{_did_you_mean(str(key), allowed)}use one of: {', '.join((*allowed, *extra))}.")
        if not isinstance(text, str):
            raise doc.error((*at, key), f"component {key!r} of {what} must be text, not {type(text).__name__}.",
                            "quote it, or write it as a block: `|` then the text indented on the next lines.")
        parts[str(key)] = text.strip()
    return parts


def documented(tool: Tool, overlay: Overlay | None, variant: str | None, *, derive: bool,
               components: Iterable[str] | None = None) -> Tool:
    """`tool` as a variant shows it: the overlay's components over its own, else (with `derive`, for a
    tool without tags) the derived ones, else its texts as written; `components` keeps exactly those."""
    kept = tuple(components) if components is not None else None
    doc: Documentation | None = None
    if overlay is not None and tool.name in overlay.tools:
        doc = merged(own_components(tool), overlay.tools[tool.name], overlay.arguments.get(tool.name, {}), variant)
    elif kept is not None or (derive and own_components(tool).origin == "derived"):
        doc = own_components(tool)
    if doc is None:
        return tool
    return tool.with_documentation(doc.only(kept))


def check_components(names: Any) -> tuple[str, ...]:
    """`names` as a component subset; ValueError naming the valid components otherwise."""
    if isinstance(names, str) or not isinstance(names, (list, tuple)) or not names:
        raise ValueError(f"a component subset is a list of component names ({', '.join(TOOL_COMPONENTS)})")
    unknown = [str(name) for name in names if name not in TOOL_COMPONENTS]
    if unknown:
        hint = _did_you_mean(unknown[0], TOOL_COMPONENTS)
        valid = ", ".join(TOOL_COMPONENTS)
        raise ValueError(f"unknown component(s) {', '.join(map(repr, unknown))}; {hint}use: {valid}")
    if len(set(names)) != len(names):
        raise ValueError("a component is named twice in the subset")
    return tuple(str(name) for name in names)

