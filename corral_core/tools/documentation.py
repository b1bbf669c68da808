"""What an agent is shown of a tool at a verbosity level: one definition, every channel rendered from it.

`document(tool, level)` gives a `ToolDoc`: the tool's description at the level and, per argument,
the facts the level shows. Every channel is a rendering of that record, so they cannot disagree:

- the E2 keys of `/tools` (`name`, `description`, `arguments: [{name, type, required, description,
  default, choices}]`),
- the OpenAI `parameters` JSON schema (`/tools`, what ToolCalling agents send to the model) and the
  MCP `inputSchema` (`tools/list`): the argument's type schema, then `description`, `enum` and
  `default` exactly when the E2 keys carry them, in that order, so a client converting the E2 keys
  gets the same schema,
- the text guide (`/guide`, `/tools/guide`, what ReAct agents read).

What each level shows (`minimal` as Corral E2 shows it: no argument text, choices or defaults):

| level | tool description | argument name, type, required | argument text, choices, default |
|---|---|---|---|
| minimal | the basic description | yes | no |
| brief ... comprehensive | the level's sections | yes | the level's sections of the text; yes |
| full | as written | yes | as written; yes |
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from corral_core.tools.schema import resolve_ref, schema_type_name
from corral_core.tools.verbosity import (
    DocStyle,
    ToolVerbosity,
    corral_describe_argument,
    describe_argument_text,
    parse_style,
    parse_verbosity,
)

if TYPE_CHECKING:
    from corral_core.tools.base import Tool

# Keywords that document a value rather than constrain its type: what `minimal` leaves out.
DOC_KEYWORDS = frozenset({"description", "enum", "default", "examples", "title"})
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")


def shows_argument_details(level: str | ToolVerbosity | None) -> bool:
    """Whether `level` shows argument texts, choices and defaults (every level but minimal)."""
    return parse_verbosity(level) is not ToolVerbosity.MINIMAL


@dataclass(frozen=True)
class ArgumentDoc:
    """One argument as a level shows it; `description`, `default` and `choices` are None when the
    level does not show them (and `description` is "" when it shows an empty text)."""

    name: str
    type: str
    required: bool
    type_schema: dict[str, Any]
    description: str | None = None
    default: Any = None
    choices: list[Any] | None = None
    detailed: bool = False  # the level shows texts, choices and defaults
    # an object argument's own fields (name, type, required, text), e.g. an MCP tool's model: the guide
    # lists them under the argument (the schema carries them as properties, E2 keys cannot say them)
    fields: tuple[tuple[str, str, bool, str], ...] = ()

    def e2(self) -> dict[str, Any]:
        """Corral E2's argument entry: {name, type, required} at minimal, else also description,
        default and choices."""
        entry: dict[str, Any] = {"name": self.name, "type": self.type, "required": self.required}
        if self.detailed:
            entry.update(description=self.description or "", default=self.default, choices=self.choices)
        return entry

    def schema(self) -> dict[str, Any]:
        """The argument's JSON schema: its type, then what the level documents."""
        schema = copy.deepcopy(self.type_schema)
        if self.description:
            schema["description"] = self.description
        if self.choices:
            schema["enum"] = list(self.choices)
        if self.default is not None:
            schema["default"] = self.default
        return schema


@dataclass(frozen=True)
class ToolDoc:
    """A tool as one level shows it."""

    name: str
    level: ToolVerbosity
    description: str
    arguments: tuple[ArgumentDoc, ...]
    definitions: tuple[tuple[str, dict[str, Any]], ...] = ()  # the schema's root `$defs`/`definitions`

    def parameters(self) -> dict[str, Any]:
        """The OpenAI `parameters` / MCP `inputSchema` object."""
        schema: dict[str, Any] = {"type": "object", "properties": {a.name: a.schema() for a in self.arguments},
                                  "required": [a.name for a in self.arguments if a.required]}
        schema.update(copy.deepcopy(dict(self.definitions)))
        return schema

    def e2_arguments(self) -> list[dict[str, Any]]:
        return [argument.e2() for argument in self.arguments]


def document(tool: Tool, verbosity: str | ToolVerbosity | None = None, style: str | DocStyle | None = None
             ) -> ToolDoc:
    """What `verbosity` (None: full) shows of `tool`, in documentation `style` (None: Corral's)."""
    level = parse_verbosity(verbosity)
    doc_style = parse_style(style)
    detailed = shows_argument_details(level)
    properties = tool.parameters["properties"]
    arguments = []
    for argument in tool.arguments:
        prop = properties.get(argument.name, {})
        arguments.append(ArgumentDoc(
            name=argument.name,
            type=argument.type,
            required=argument.required,
            type_schema=type_schema(prop, nested_docs=detailed),
            description=tool.describe_argument(argument.name, level, doc_style) if detailed else None,
            default=json_safe(argument.default) if detailed else None,
            choices=list(argument.choices) if detailed and argument.choices else None,
            detailed=detailed,
            fields=_fields(prop, tool.parameters, level, doc_style) if detailed else (),
        ))
    definitions = tuple((key, {name: copy.deepcopy(member) if detailed else _strip_docs(member)
                               for name, member in value.items()})
                        for key, value in tool.parameters.items()
                        if key in ("$defs", "definitions") and isinstance(value, Mapping))
    return ToolDoc(tool.name, level, tool.describe(level, doc_style), tuple(arguments), definitions)


def _fields(prop: Mapping[str, Any], root: Mapping[str, Any], level: ToolVerbosity, style: DocStyle
            ) -> tuple[tuple[str, str, bool, str], ...]:
    """The fields of an object argument (through a `$ref`), their texts filtered to the level."""
    resolved = resolve_ref(prop, root)
    properties = resolved.get("properties")
    if resolved.get("type") != "object" or not isinstance(properties, Mapping):
        return ()
    required = set(resolved.get("required") or ())
    describe = describe_argument_text if style is DocStyle.TIDY else corral_describe_argument
    return tuple((name, schema_type_name(resolve_ref(field, root)), name in required,
                  describe(str(resolve_ref(field, root).get("description") or ""), level))
                 for name, field in properties.items() if isinstance(field, Mapping))


def type_schema(schema: Mapping[str, Any], *, nested_docs: bool = True) -> dict[str, Any]:
    """`schema` without its own documenting keywords; with `nested_docs=False` also without those of
    every schema inside it (object fields, items, union members), keeping property names."""
    if nested_docs:
        return {key: copy.deepcopy(value) for key, value in schema.items() if key not in DOC_KEYWORDS}
    return cast("dict[str, Any]", _strip_docs(schema))


def _strip_docs(schema: Any) -> Any:
    if not isinstance(schema, Mapping):
        return copy.deepcopy(schema)
    stripped: dict[str, Any] = {}
    for key, value in schema.items():
        if key in DOC_KEYWORDS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            stripped[key] = {name: _strip_docs(member) for name, member in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            stripped[key] = [_strip_docs(member) for member in value]
        elif key in _SCHEMA_ONE:
            stripped[key] = _strip_docs(value)
        else:
            stripped[key] = copy.deepcopy(value)
    return stripped


def json_safe(value: Any) -> Any:
    """`value` if it is JSON, else its repr (a default only the tool understands)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)
    return value
