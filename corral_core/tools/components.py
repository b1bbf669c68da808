"""A tool's documentation as named components, whoever wrote it, and what each level shows of them.

Components are named after Corral's tags, so the nine levels apply to them unchanged:

| component | Corral tag | first level | label |
|---|---|---|---|
| brief | BRIEF | minimal (one line), brief | |
| detailed | DETAILED | detailed | |
| returns | the `Returns:` text | detailed | "Returns: " |
| procedural | PROCEDURAL | procedural | "When to use: " |
| contextual | CONTEXTUAL | contextual | |
| workflow | WORKFLOW_INTEGRATION | workflow | "Workflow: " |
| syntactical | SYNTACTICAL | syntactical | |
| examples | EXAMPLES | comprehensive | |
| raises | RAISES | comprehensive | "Exceptions: " |
| limitations | LIMITATIONS | comprehensive | "Limitations: " |

An argument has brief, detailed, syntactical and examples (Corral's `ARGS_` sections), at the same
levels. Three origins give a tool its components (docs/documentation-levels.md, "Documentation of
any tool"): an overlay file (corral_core/tools/overlay.py), the derived rule for a tool without tags
(`derived_components`), or the tool's own tags (`tagged_components`, used when an overlay or a
component subset applies to a tagged tool). `Documentation` renders them: a level shows every
component whose first level it has reached (`full`: all of them), in the order of the table; a
component subset (an arm's `components:`) keeps exactly the components it names.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from corral_core.tools.verbosity import (
    CHOICES_FRAGMENT,
    NO_DESCRIPTION,
    ToolVerbosity,
    corral_sections,
    parse_sections,
    parse_verbosity,
    verbosity_rank,
)

if TYPE_CHECKING:
    from corral_core.tools.base import Tool

_V = ToolVerbosity
# component -> (the level it first shows at, its label), in the order a description shows them
TOOL_COMPONENTS: dict[str, tuple[ToolVerbosity, str]] = {
    "brief": (_V.BRIEF, ""),
    "detailed": (_V.DETAILED, ""),
    "returns": (_V.DETAILED, "Returns: "),
    "procedural": (_V.PROCEDURAL, "When to use: "),
    "contextual": (_V.CONTEXTUAL, ""),
    "workflow": (_V.WORKFLOW, "Workflow: "),
    "syntactical": (_V.SYNTACTICAL, ""),
    "examples": (_V.COMPREHENSIVE, ""),
    "raises": (_V.COMPREHENSIVE, "Exceptions: "),
    "limitations": (_V.COMPREHENSIVE, "Limitations: "),
}
ARGUMENT_COMPONENTS: dict[str, tuple[ToolVerbosity, str]] = {
    name: TOOL_COMPONENTS[name] for name in ("brief", "detailed", "syntactical", "examples")}
COMPONENT_NAMES = tuple(TOOL_COMPONENTS)
# Corral tag -> component (a tagged tool's sections; ARGS_ prefixes are stripped before)
TAG_COMPONENT = {"BRIEF": "brief", "DETAILED": "detailed", "PROCEDURAL": "procedural", "CONTEXTUAL": "contextual",
                 "WORKFLOW_INTEGRATION": "workflow", "SYNTACTICAL": "syntactical", "EXAMPLES": "examples",
                 "RAISES": "raises", "LIMITATIONS": "limitations", "RETURNS": "returns"}
# The six components of arXiv 2602.14878 ("MCP Tool Descriptions Are Smelly!") and the tags that carry them.
PAPER_COMPONENTS: dict[str, tuple[str, ...]] = {
    "purpose": ("brief", "detailed"),
    "inputs": ("argument sections", "syntactical"),
    "outputs": ("returns",),
    "constraints/usage": ("procedural", "contextual", "workflow", "limitations"),
    "examples": ("examples",),
    "error handling": ("raises",),
}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_GOOGLE_SECTION = re.compile(r"^(Returns?|Yields?|Raises?|Examples?|Notes?):[ \t]*(.*)$")
_GOOGLE_COMPONENT = {"return": "returns", "returns": "returns", "yield": "returns", "yields": "returns",
                     "raise": "raises", "raises": "raises", "example": "examples", "examples": "examples",
                     "note": "limitations", "notes": "limitations"}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _clean(parts: Mapping[str, str]) -> dict[str, str]:
    return {name: text.strip() for name, text in parts.items() if text and text.strip()}


@dataclass(frozen=True)
class Documentation:
    """The components of one tool and of each of its arguments, and where they came from
    (`origin`: overlay, derived or tagged; `variant`: the overlay variant's name, if any)."""

    tool: dict[str, str]
    arguments: dict[str, dict[str, str]] = field(default_factory=dict)
    origin: str = "derived"
    variant: str | None = None
    subset: tuple[str, ...] | None = None  # a component subset: exactly these show

    def only(self, components: Iterable[str] | None) -> Documentation:
        """The same documentation with exactly `components` (None: all of them)."""
        if components is None:
            return self
        kept = tuple(components)
        return Documentation({n: t for n, t in self.tool.items() if n in kept},
                             {a: {n: t for n, t in parts.items() if n in kept} for a, parts in self.arguments.items()},
                             self.origin, self.variant, kept)

    def describe(self, level: str | ToolVerbosity | None = None) -> str:
        """The tool's description at `level` (None: full)."""
        level = parse_verbosity(level)
        if level is ToolVerbosity.MINIMAL:
            return _one_line(self.tool["brief"]) if self.tool.get("brief") else NO_DESCRIPTION
        shown = [label + self.tool[name] for name, (first, label) in TOOL_COMPONENTS.items()
                 if name in self.tool and _reached(level, first)]
        return "\n\n".join(shown) or NO_DESCRIPTION

    def describe_argument(self, name: str, level: str | ToolVerbosity | None = None) -> str:
        """An argument's text at `level` ("" when nothing shows); parts joined by a space, as Corral joins them."""
        level = parse_verbosity(level)
        parts = self.arguments.get(name, {})
        if level is ToolVerbosity.MINIMAL:
            return _one_line(parts.get("brief", ""))
        return " ".join(label + parts[part] for part, (first, label) in ARGUMENT_COMPONENTS.items()
                        if part in parts and _reached(level, first))

    def to_dict(self) -> dict[str, Any]:
        return {"origin": self.origin, "variant": self.variant,
                "components": list(self.subset) if self.subset is not None else None,
                "tool": dict(self.tool), "arguments": {a: dict(p) for a, p in self.arguments.items()}}


def _reached(level: ToolVerbosity, first: ToolVerbosity) -> bool:
    return level is ToolVerbosity.FULL or verbosity_rank(level) >= verbosity_rank(first)


def content_hash(value: Any) -> str:
    """sha256 of `value`'s canonical JSON: what a run records of the documentation it showed."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# --- the tool's own tags -----------------------------------------------------------------------------

def has_tags(text: str) -> bool:
    """Whether `text` carries a Corral tag."""
    return any(name not in ("BASIC", "RETURNS") for name, _ in parse_sections(text or ""))


def is_tagged(tool: Tool) -> bool:
    """Whether the tool's description carries a Corral tag (its author wrote levels for it)."""
    return has_tags(tool.description)


def _tagged_parts(text: str, *, argument: bool) -> dict[str, str]:
    sections = {(name.removeprefix("ARGS_") if argument else name): content for name, content in corral_sections(text)}
    parts = {TAG_COMPONENT[name]: content for name, content in sections.items() if name in TAG_COMPONENT}
    basic = sections.get("BASIC", "")
    if basic:  # the untagged text: the brief when there is none, else the start of the detailed part
        if "brief" not in parts:
            parts["brief"] = basic
        else:
            parts["detailed"] = f"{basic}\n\n{parts['detailed']}" if parts.get("detailed") else basic
    if argument:
        parts = {name: text for name, text in parts.items() if name in ARGUMENT_COMPONENTS}
    return _clean(parts)


def tagged_components(tool: Tool) -> Documentation:
    """A tagged tool's components: its tags, its untagged text as the brief (or, with a BRIEF, the
    start of the detailed part), its `Returns:` text as returns."""
    arguments = {arg.name: _tagged_parts(CHOICES_FRAGMENT.sub("", arg.description or ""), argument=True)
                 for arg in tool.arguments}
    return Documentation(_tagged_parts(tool.description, argument=False), arguments, origin="tagged")


# --- the derived rule for a tool without tags ----------------------------------------------------------

def first_sentence(text: str) -> tuple[str, str]:
    """(the first sentence of `text`'s first paragraph, the rest of `text`)."""
    text = text.strip()
    paragraph, _, later = text.partition("\n\n")
    pieces = _SENTENCE_END.split(_one_line(paragraph), maxsplit=1)
    rest = pieces[1] if len(pieces) > 1 else ""
    return pieces[0], "\n\n".join(part for part in (rest, later.strip()) if part)


def _google_sections(text: str) -> tuple[str, dict[str, str]]:
    """(the prose, {component: text}) of a docstring's `Returns:`/`Raises:`/`Examples:`/`Notes:` blocks."""
    prose: list[str] = []
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _GOOGLE_SECTION.match(line.strip()) if not line.startswith((" ", "\t")) else None
        if match:
            current = found.setdefault(_GOOGLE_COMPONENT[match.group(1).lower()], [])
            current.append(match.group(2))
        elif current is not None and (line.startswith((" ", "\t")) or not line.strip()):
            current.append(line.strip())
        else:
            current = None
            prose.append(line)
    return "\n".join(prose).strip(), {name: "\n".join(t for t in lines if t).strip() for name, lines in found.items()}


def _quoted(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # a default only the tool understands
        return repr(value)


def schema_constraints(schema: Mapping[str, Any]) -> str:
    """What an argument's JSON schema says beyond its type, written out: enum, format, range, length,
    pattern, items and default ("" when it says nothing more)."""
    said: list[str] = []
    if schema.get("enum"):
        said.append("One of " + ", ".join(_quoted(v) for v in schema["enum"]) + ".")
    if "const" in schema:
        said.append(f"Always {_quoted(schema['const'])}.")
    if schema.get("format"):
        said.append(f"Format: {schema['format']}.")
    bounds = [(key, text) for key, text in (("minimum", "at least"), ("exclusiveMinimum", "more than"),
                                            ("maximum", "at most"), ("exclusiveMaximum", "less than"))
              if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool)]
    if bounds:
        said.append("Value " + " and ".join(f"{text} {schema[key]}" for key, text in bounds) + ".")
    for low, high, unit in (("minLength", "maxLength", "characters"), ("minItems", "maxItems", "items"),
                            ("minProperties", "maxProperties", "keys")):
        if low in schema and high in schema:
            said.append(f"{schema[low]} to {schema[high]} {unit}.")
        elif low in schema:
            said.append(f"At least {schema[low]} {unit}.")
        elif high in schema:
            said.append(f"At most {schema[high]} {unit}.")
    if schema.get("pattern"):
        said.append(f"Must match the pattern {schema['pattern']}.")
    items = schema.get("items")
    if isinstance(items, Mapping):
        inner = schema_constraints(items)
        kind = items.get("type")
        if kind or inner:
            said.append(f"Each item: {kind or 'a value'}{'; ' + inner if inner else '.'}")
    if schema.get("uniqueItems") is True:
        said.append("Items are unique.")
    if "default" in schema and schema["default"] is not None:
        said.append(f"Defaults to {_quoted(schema['default'])}.")
    return " ".join(said)


def _examples(schema: Mapping[str, Any]) -> str:
    values = schema.get("examples")
    if isinstance(values, list) and values:
        return "Examples: " + ", ".join(_quoted(v) for v in values) + "."
    return ""


def call_signature(tool: Tool) -> str:
    """`Call: name(a: type, b: type = default)`: the tool's arguments in call order, required first."""
    required = set(tool.parameters.get("required") or ())
    shown = []
    for argument in sorted(tool.arguments, key=lambda a: a.name not in required):
        text = f"{argument.name}: {argument.type}"
        if argument.name not in required:
            text += f" = {_quoted(argument.default)}" if argument.default is not None else " (optional)"
        shown.append(text)
    return f"Call: {tool.name}({', '.join(shown)})"


def derived_components(tool: Tool) -> Documentation:
    """The derived rule (docs/documentation-levels.md, "Derived levels"), deterministic:

    - brief: the first sentence of the description (an argument: of its text);
    - detailed: the rest of the description, a Python docstring's body paragraphs included (of the
      argument text: the rest);
    - returns / raises / examples / limitations: a docstring's `Returns:`, `Raises:`, `Examples:`,
      `Notes:` blocks;
    - syntactical: the call's signature (`Call: name(a: type, b: type = default)`); of an argument,
      the schema's enum, format, range, lengths, pattern, items and default written out;
    - examples (arguments, and the tool's root schema): the schema's `examples`.
    Nothing in an untagged tool says procedural, contextual or workflow: those levels show what the
    level below them shows. An argument whose text carries tags keeps them as its components.
    """
    prose, blocks = _google_sections(tool.doc or tool.description)
    brief, rest = first_sentence(prose)
    parts = {"brief": brief, "detailed": rest, **blocks}
    parts["syntactical"] = call_signature(tool)
    root_examples = _examples(tool.parameters)
    if root_examples:
        parts["examples"] = "\n\n".join(p for p in (parts.get("examples", ""), root_examples) if p)
    arguments: dict[str, dict[str, str]] = {}
    for name, schema in tool.parameters["properties"].items():
        text = CHOICES_FRAGMENT.sub("", str(schema.get("description") or "")).strip()
        if has_tags(text):  # an argument its author tagged keeps its tags
            arguments[name] = _tagged_parts(text, argument=True)
            continue
        arg_brief, arg_rest = first_sentence(text) if text else ("", "")
        arguments[name] = _clean({"brief": arg_brief, "detailed": arg_rest,
                                  "syntactical": schema_constraints(schema), "examples": _examples(schema)})
    return Documentation(_clean(parts), arguments, origin="derived")


def own_components(tool: Tool) -> Documentation:
    """The components a tool has without an overlay: its tags when it has any, else the derived rule."""
    return tagged_components(tool) if is_tagged(tool) else derived_components(tool)


def merged(base: Documentation, tool: Mapping[str, str], arguments: Mapping[str, Mapping[str, str]],
           variant: str | None) -> Documentation:
    """`base` with an overlay's components over it: a component the overlay gives replaces the same
    one ("" removes it); the others stay."""
    parts = {**base.tool, **tool}
    args = {name: {**base.arguments.get(name, {}), **arguments.get(name, {})}
            for name in {*base.arguments, *arguments}}
    return Documentation(_clean(parts), {name: _clean(p) for name, p in args.items()}, origin="overlay",
                         variant=variant)
