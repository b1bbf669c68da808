"""Completion of registered kinds in the workbench's text fields (Textual's inline suggestion).

`BreakpointSuggester` offers the breakpoint kinds of corral_core's BREAKPOINTS registry, plugins'
included, for the part of a `;`-separated field being typed: `to` suggests `tool:`, `fa` `fail`;
`AgentSuggester` the agent types of AGENTS in the run form's `+ agents` (comma-separated).
Right arrow (or End) takes the suggestion, as in any Textual Input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from textual.suggester import Suggester


def complete_last(value: str, words: Iterable[str], separator: str = ";") -> str | None:
    """`value` with its last `separator`-part completed to the first word it begins, or None."""
    part = value.rpartition(separator)[2]
    typed = part.lstrip()
    if not typed:
        return None
    for word in words:
        if word.lower().startswith(typed.lower()) and len(word) > len(typed):
            return value[: len(value) - len(typed)] + word
    return None


def breakpoint_heads() -> list[str]:
    """What each breakpoint kind starts with: `tool:`, `tokens>`, `fail` (its syntax up to the value)."""
    from corral_core.agents.breakpoints import BREAKPOINTS  # the engine: when typed, not before the first frame

    heads = []
    for kind in BREAKPOINTS.kinds():
        written = kind.written
        heads.append(written[: len(kind.name) + 1] if len(written) > len(kind.name) else written)
    return heads


def agent_names() -> tuple[str, ...]:
    from corral_core.agents import AGENTS  # the engine: when typed, not before the first frame

    return AGENTS.names()


class KindSuggester(Suggester):
    """Suggests one of `words()` for the last `separator`-separated part of the field."""

    def __init__(self, words: Callable[[], Iterable[str]], separator: str = ";") -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.words = words
        self.separator = separator

    async def get_suggestion(self, value: str) -> str | None:
        return complete_last(value, self.words(), self.separator)


class BreakpointSuggester(KindSuggester):
    def __init__(self) -> None:
        super().__init__(breakpoint_heads)


class AgentSuggester(KindSuggester):
    def __init__(self) -> None:
        super().__init__(agent_names, separator=",")
