"""Google-style docstrings split into a description and one text per argument.

The `Args:` (or `Arguments:`) block is taken out of the docstring; everything else, `Returns:` and
the verbosity tags included, stays in the description. Inside the block each argument starts with a
`name:` or `name (type):` line at the block's indentation; deeper-indented lines continue it and are
joined with spaces. The `(type)` text is ignored: the type hints are what count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from corral_core.tools.errors import ToolDefinitionError

_ARGS_HEADER = re.compile(r"^([ \t]*)(?:Args|Arguments):[ \t]*$")
_ARG_LINE = re.compile(r"^\*{0,2}([A-Za-z_]\w*)[ \t]*(?:\((.*?)\))?[ \t]*:(.*)$")


@dataclass(frozen=True)
class ParsedDocstring:
    """A docstring without its Args block, and the text documenting each argument."""

    description: str
    arguments: dict[str, str] = field(default_factory=dict)
    has_args_section: bool = False


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def parse_docstring(doc: str, *, owner: str) -> ParsedDocstring:
    """Split a cleaned docstring (inspect.getdoc) into description and argument texts.

    `owner` names the function in error messages, e.g. "Tool function 'add'". Raises
    ToolDefinitionError for a line in the Args block that is not `name: text`, a name documented
    twice, or an argument whose text is empty.
    """
    lines = doc.expandtabs(4).splitlines()
    header = next((i for i, line in enumerate(lines) if _ARGS_HEADER.match(line)), None)
    if header is None:
        return ParsedDocstring(_tidy(doc))
    base_indent = _indent(lines[header])
    end = header + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > base_indent):
        end += 1
    block = lines[header + 1 : end]
    description = _tidy("\n".join(lines[:header] + lines[end:]))
    return ParsedDocstring(description, _parse_args_block(block, owner), True)


def _parse_args_block(block: list[str], owner: str) -> dict[str, str]:
    filled = [line for line in block if line.strip()]
    if not filled:
        return {}
    arg_indent = _indent(filled[0])
    texts: dict[str, list[str]] = {}
    current: str | None = None
    for line in filled:
        indent, content = _indent(line), line.strip()
        if indent > arg_indent and current is not None:
            texts[current].append(content)
            continue
        match = _ARG_LINE.match(content) if indent == arg_indent else None
        if match is None:
            raise ToolDefinitionError(
                f"{owner}: the line {content!r} in the docstring's Args: section is not "
                "'name: description' or 'name (type): description'. Put one argument per line at the "
                "same indentation and indent continuation lines further."
            )
        current = match.group(1)
        if current in texts:
            raise ToolDefinitionError(f"{owner}: argument '{current}' is documented twice in Args:.")
        texts[current] = [match.group(3).strip()]
    arguments = {name: " ".join(part for part in parts if part) for name, parts in texts.items()}
    empty = [name for name, text in arguments.items() if not text]
    if empty:
        raise ToolDefinitionError(
            f"{owner}: argument(s) {', '.join(empty)} have an empty description in Args:. "
            "Say what each argument means after 'name:'."
        )
    return arguments
