"""Verbosity levels and the `[TAG] ... [/TAG]` sections of tool docstrings (Corral's system).

A description is split into sections: the tagged ones (BRIEF, DETAILED, ...), the text after a
`Returns:` line (RETURNS) and the untagged rest (BASIC). Each level shows the sections of the level
below plus its own, so a higher level only ever adds text; that is what makes verbosity ablations fair.

- MINIMAL: one line, the BRIEF section if there is one, else the first paragraph of BASIC.
- BRIEF: BRIEF (or BASIC when there is no BRIEF) and RETURNS; each further level adds its tags.
- FULL: every section, the untagged text included even when a BRIEF exists, and unknown tags too.
  Unlike Corral (which returns the raw docstring, tags and all), FULL strips the tag markers and uses
  the same layout as the other levels, so the text of COMPREHENSIVE is contained in FULL's as well.

Tags are matched case-insensitively. Unknown tags nested inside a section are unwrapped (markers
removed, text kept); an unknown name counts as a tag only when its closing marker appears, so text
such as `list[str]` is left alone. Parsing is cached with bounded LRU caches.
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from enum import Enum
from functools import lru_cache


class ToolVerbosity(str, Enum):
    """How much of a tool's documentation the agent sees; each level adds sections to the previous."""

    MINIMAL = "minimal"
    BRIEF = "brief"
    DETAILED = "detailed"
    PROCEDURAL = "procedural"
    CONTEXTUAL = "contextual"
    WORKFLOW = "workflow"
    SYNTACTICAL = "syntactical"
    COMPREHENSIVE = "comprehensive"
    FULL = "full"


_RANK = {level: index for index, level in enumerate(ToolVerbosity)}
VALID_LEVELS = tuple(level.value for level in ToolVerbosity)


def parse_verbosity(value: str | ToolVerbosity | None) -> ToolVerbosity:
    """Turn a level name (any case) into a ToolVerbosity; None means FULL.

    Raises ValueError naming the valid levels, so a bad query parameter or spec key reads clearly.
    """
    if value is None:
        return ToolVerbosity.FULL
    if isinstance(value, ToolVerbosity):
        return value
    if isinstance(value, str):
        try:
            return ToolVerbosity(value.strip().lower())
        except ValueError:
            pass
    raise ValueError(f"Unknown verbosity {value!r}. Valid levels: {', '.join(VALID_LEVELS)}.")


# The docstring tags Corral knows; ARGS_/RETURNS_ variants come from Corral PR #191.
KNOWN_TAGS = frozenset(
    {
        "BRIEF",
        "DETAILED",
        "PROCEDURAL",
        "CONTEXTUAL",
        "WORKFLOW_INTEGRATION",
        "SYNTACTICAL",
        "RAISES",
        "LIMITATIONS",
        "EXAMPLES",
        "ARGS_BRIEF",
        "ARGS_DETAILED",
        "ARGS_SYNTACTICAL",
        "ARGS_EXAMPLES",
        "RETURNS_BRIEF",
        "RETURNS_DETAILED",
        "RETURNS_EXAMPLES",
    }
)

_V = ToolVerbosity
# The level at which each section first appears. Sections not listed appear at FULL only.
_FIRST_LEVEL = {
    "BASIC": _V.BRIEF,
    "BRIEF": _V.BRIEF,
    "RETURNS": _V.BRIEF,
    "RETURNS_BRIEF": _V.BRIEF,
    "DETAILED": _V.DETAILED,
    "RETURNS_DETAILED": _V.DETAILED,
    "PROCEDURAL": _V.PROCEDURAL,
    "CONTEXTUAL": _V.CONTEXTUAL,
    "WORKFLOW_INTEGRATION": _V.WORKFLOW,
    "SYNTACTICAL": _V.SYNTACTICAL,
    "EXAMPLES": _V.COMPREHENSIVE,
    "RAISES": _V.COMPREHENSIVE,
    "LIMITATIONS": _V.COMPREHENSIVE,
    "RETURNS_EXAMPLES": _V.COMPREHENSIVE,
}
# Corral's assembly order, then the returns parts; unknown sections follow in order of appearance.
_ORDER = (
    "BRIEF",
    "BASIC",
    "DETAILED",
    "PROCEDURAL",
    "CONTEXTUAL",
    "WORKFLOW_INTEGRATION",
    "SYNTACTICAL",
    "EXAMPLES",
    "RAISES",
    "LIMITATIONS",
    "RETURNS",
    "RETURNS_BRIEF",
    "RETURNS_DETAILED",
    "RETURNS_EXAMPLES",
)
_LABELS = {
    "PROCEDURAL": "When to use: ",
    "WORKFLOW_INTEGRATION": "Workflow: ",
    "RAISES": "Exceptions: ",
    "LIMITATIONS": "Limitations: ",
    "RETURNS": "Returns: ",
    "RETURNS_BRIEF": "Returns: ",
    "RETURNS_DETAILED": "Returns: ",
    "RETURNS_EXAMPLES": "Returns: ",
}
NO_DESCRIPTION = "No description available"

_TAG = re.compile(r"\[(/?)([A-Za-z][A-Za-z0-9_]*)\]")
_RETURNS_LINE = re.compile(r"^[ \t]*Returns?:[ \t]*", re.MULTILINE)
CHOICES_FRAGMENT = re.compile(r"\(choices:\s*(\[.*?\])\s*\)", re.IGNORECASE | re.DOTALL)


def included_sections(level: str | ToolVerbosity | None) -> frozenset[str]:
    """Names of the known sections a level shows (FULL shows these and any unknown tag too)."""
    rank = _RANK[parse_verbosity(level)]
    return frozenset(name for name, first in _FIRST_LEVEL.items() if _RANK[first] <= rank)


def _tags(text: str) -> list[tuple[int, int, bool, str]]:
    """(start, end, is_closing, NAME) of each tag marker; unknown names only when they get closed."""
    matches = list(_TAG.finditer(text))
    closed = {m.group(2).upper() for m in matches if m.group(1)}
    names = KNOWN_TAGS | closed
    return [
        (m.start(), m.end(), bool(m.group(1)), m.group(2).upper())
        for m in matches
        if m.group(2).upper() in names
    ]


def tag_problem(text: str) -> str | None:
    """Describe what is wrong with the tags of `text` (unclosed, stray or crossed), or None if fine."""
    tokens = _tags(text)
    opened = Counter(name for _, _, closing, name in tokens if not closing)
    closed = Counter(name for _, _, closing, name in tokens if closing)

    def unclosed(names: list[str]) -> str | None:
        names = [n for n in dict.fromkeys(names) if opened[n] > closed[n]]
        details = ", ".join(f"{n} (opened {opened[n]} times, closed {closed[n]} times)" for n in names)
        return f"unclosed tags: {details}" if names else None

    stack: list[str] = []
    for _, _, closing, name in tokens:
        if not closing:
            stack.append(name)
        elif stack and stack[-1] == name:
            stack.pop()
        elif name in stack:
            inner = stack[len(stack) - stack[::-1].index(name) :]
            return unclosed(inner) or f"crossed tags: [{inner[-1]}] must be closed before [/{name}]"
        else:
            return f"a closing tag [/{name}] without a matching [{name}] before it"
    return unclosed(stack)


def _tidy(text: str) -> str:
    """Dedent, strip trailing spaces and squeeze runs of blank lines."""
    text = inspect.cleandoc(text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _unwrap(text: str) -> str:
    """Remove every tag marker, keeping the text between them (nested unknown tags)."""
    pieces, position = [], 0
    for start, end, _, _ in _tags(text):
        pieces.append(text[position:start])
        position = end
        if text[start - 1 : start] in (" ", "\t"):  # "a [X] b" -> "a b", not "a  b"
            while text[position : position + 1] in (" ", "\t") and position < len(text):
                position += 1
    pieces.append(text[position:])
    return "".join(pieces)


@lru_cache(maxsize=2048)
def parse_sections(text: str, split_returns: bool = True) -> tuple[tuple[str, str], ...]:
    """Split `text` into (SECTION, content) pairs in order of first appearance; BASIC is the rest.

    Repeated tags are joined with a blank line. With `split_returns`, the text after a line starting
    with `Returns:` becomes RETURNS. Text with broken tags is returned whole as BASIC, markers removed.
    """
    if tag_problem(text):
        return (("BASIC", _tidy(_unwrap(text))),)
    sections: dict[str, list[str]] = {}
    outside: list[str] = []
    depth, position, open_name, content_start = 0, 0, "", 0
    for start, end, closing, name in _tags(text):
        if depth == 0:
            outside.append(text[position:start])
            open_name, content_start, depth = name, end, 1
        elif not closing:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                content = _tidy(_unwrap(text[content_start:start]))
                sections.setdefault(open_name, []).append(content)
                position = end
    outside.append(text[position:])
    rest = "".join(outside)
    match = _RETURNS_LINE.search(rest) if split_returns else None
    if match:
        sections.setdefault("RETURNS", []).append(_tidy(rest[match.end() :]))
        rest = rest[: match.start()]
    pairs = [("BASIC", _tidy(rest))]
    pairs += [(name, "\n\n".join(c for c in contents if c)) for name, contents in sections.items()]
    return tuple((name, content) for name, content in pairs if content)


def _visible(name: str, level: ToolVerbosity) -> bool:
    if level is ToolVerbosity.FULL:
        return True
    first = _FIRST_LEVEL.get(name)
    return first is not None and _RANK[first] <= _RANK[level]


def _ordered(sections: dict[str, str]) -> list[str]:
    return [n for n in _ORDER if n in sections] + [n for n in sections if n not in _ORDER]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def basic_description(text: str) -> str:
    """The MINIMAL text: BRIEF if present, else the first paragraph of the untagged text, one line."""
    sections = dict(parse_sections(text or ""))
    if "BRIEF" in sections:
        return _one_line(sections["BRIEF"])
    if "BASIC" in sections:
        return _one_line(sections["BASIC"].split("\n\n")[0])
    return NO_DESCRIPTION


@lru_cache(maxsize=4096)
def describe_text(text: str, level: ToolVerbosity = ToolVerbosity.FULL) -> str:
    """The part of a tool description that `level` shows, sections separated by blank lines."""
    level = parse_verbosity(level)
    if level is ToolVerbosity.MINIMAL:
        return basic_description(text)
    sections = dict(parse_sections(text or ""))
    parts = []
    for name in _ordered(sections):
        if name == "BASIC" and "BRIEF" in sections and level is not ToolVerbosity.FULL:
            continue  # Corral: a BRIEF replaces the untagged text below FULL
        if _visible(name, level):
            parts.append(_LABELS.get(name, "") + sections[name])
    return "\n\n".join(parts) or NO_DESCRIPTION


@lru_cache(maxsize=4096)
def describe_argument_text(text: str, level: ToolVerbosity = ToolVerbosity.FULL) -> str:
    """The part of an argument description that `level` shows.

    MINIMAL: the text before the first tag (and without a `(choices: [...])` fragment), one line;
    the BRIEF section when there is no such text.
    Other levels: the untagged text, then the tagged sections the level allows (an `ARGS_` prefix
    is ignored, so `[ARGS_DETAILED]` counts as DETAILED), then the choices fragment; one per line.
    """
    level = parse_verbosity(level)
    fragment = CHOICES_FRAGMENT.search(text or "")
    text = CHOICES_FRAGMENT.sub("", text or "")
    sections: dict[str, str] = {}
    for name, content in parse_sections(text, split_returns=False):
        name = name.removeprefix("ARGS_")
        sections[name] = f"{sections[name]}\n{content}" if name in sections else content
    if level is ToolVerbosity.MINIMAL:
        tokens = _tags(text)
        before_tags = _one_line(text[: tokens[0][0]] if tokens else text)
        return before_tags or _one_line(sections.get("BRIEF", ""))
    names = sorted(_ordered(sections), key=lambda n: n != "BASIC")  # untagged text first
    parts = [_LABELS.get(n, "") + sections[n] for n in names if _visible(n, level)]
    if fragment:
        parts.append(_one_line(fragment.group(0)))
    return "\n".join(parts)
