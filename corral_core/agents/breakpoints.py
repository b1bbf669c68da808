"""Breakpoints: stop a trial where a condition holds (the workbench), or note that it held (batch).

A breakpoint is written as a short text, the same in a spec's `hooks: {breakpoints: [...]}` and in
the workbench's run form (there, several are separated by `;`):

    tool:NAME      right before a tool named NAME runs
    risk:LEVEL     right before a tool of risk LEVEL or higher runs (safe < confirm < blocked)
    fail           right after a tool call that failed (any status but success)
    tokens>N       once the trial has used more than N tokens (checked after each LLM call)
    cost>X         once the trial has cost more than X dollars
    reply:REGEX    right after a model reply that REGEX matches (Python `re.search`)

The agent asks its trial's `BreakpointWatch` at those points. Every hit is a BREAKPOINT_HIT event;
with a `hold` (the trial controller's, in the workbench) the agent then waits where it is,
mid-iteration, until the operator continues or steps. Token and cost breakpoints hit once per trial.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from corral_core.events import (
    BreakpointHitData,
    BreakpointHitEvent,
)
from corral_core.tools.base import RiskLevel

BreakpointKind = Literal["tool", "risk", "fail", "tokens", "cost", "reply"]
RISK_ORDER = tuple(level.value for level in RiskLevel)  # safe < confirm < blocked
SYNTAX = "tool:NAME, risk:LEVEL, fail, tokens>N, cost>X or reply:REGEX"
_THRESHOLD = re.compile(r"(tokens|cost)\s*>\s*(\S+)", re.IGNORECASE)

Hold = Callable[[Any, str], None]  # (agent, reason): returns when the operator lets the agent go on


@dataclass(frozen=True)
class Breakpoint:
    """One condition to stop at. Build it with `Breakpoint.parse("tool:calculator")`."""

    kind: BreakpointKind
    value: str | float | None = None

    @classmethod
    def parse(cls, text: str) -> Breakpoint:
        """A breakpoint from its text; ValueError says what is wrong and how to write it."""
        text = str(text).strip()
        threshold = _THRESHOLD.fullmatch(text)
        if threshold:
            kind, number = threshold.group(1).lower(), threshold.group(2)
            try:
                value = int(number) if kind == "tokens" else float(number)
            except ValueError:
                raise ValueError(f"breakpoint {text!r}: {number!r} is not a "
                                 f"{'whole number' if kind == 'tokens' else 'number'}") from None
            if value < 0:
                raise ValueError(f"breakpoint {text!r}: the threshold cannot be negative")
            return cls("tokens" if kind == "tokens" else "cost", value)
        if text.lower() == "fail":
            return cls("fail")
        prefix, sep, rest = text.partition(":")
        prefix, rest = prefix.strip().lower(), rest.strip()
        if sep and prefix in ("tool", "risk", "reply") and rest:
            if prefix == "risk" and rest.lower() not in RISK_ORDER:
                raise ValueError(f"breakpoint {text!r}: unknown risk level {rest!r}; use one of: "
                                 f"{', '.join(RISK_ORDER)}")
            if prefix == "reply":
                try:
                    re.compile(rest)
                except re.error as exc:
                    raise ValueError(f"breakpoint {text!r}: the regex does not compile ({exc})") from None
            return cls(prefix, rest.lower() if prefix == "risk" else rest)  # type: ignore[arg-type]
        raise ValueError(f"unknown breakpoint {text!r}; write {SYNTAX}")

    def __str__(self) -> str:
        if self.kind == "fail":
            return "fail"
        if self.kind in ("tokens", "cost"):
            return f"{self.kind}>{self.value:g}" if isinstance(self.value, float) else f"{self.kind}>{self.value}"
        return f"{self.kind}:{self.value}"


def parse_breakpoints(text: str) -> list[Breakpoint]:
    """Breakpoints separated by `;` (the run form's field); empty text: none."""
    return [Breakpoint.parse(part) for part in text.split(";") if part.strip()]


class BreakpointSet:
    """The breakpoints of one run, which the workbench may replace while it runs: every trial's
    watch reads the current ones at each check point (a tuple swapped whole: no lock needed)."""

    def __init__(self, breakpoints: Iterable[Breakpoint] = ()) -> None:
        self.points: tuple[Breakpoint, ...] = tuple(breakpoints)

    def replace(self, breakpoints: Iterable[Breakpoint]) -> None:
        self.points = tuple(breakpoints)


class BreakpointWatch:
    """One trial's breakpoints: the agent reports its progress, the watch reports hits and holds.

    Without `hold` (batch) a hit is only recorded; with it, the agent waits in `hold` after the
    hits of one check point have been reported (one wait, however many breakpoints hit there).
    """

    def __init__(self, breakpoints: BreakpointSet | Iterable[Breakpoint], hold: Hold | None = None) -> None:
        self._set = breakpoints if isinstance(breakpoints, BreakpointSet) else BreakpointSet(breakpoints)
        self.hold = hold
        self._crossed: set[Breakpoint] = set()  # thresholds already reported in this trial
        self._risks: dict[str, str] | None = None

    @property
    def breakpoints(self) -> tuple[Breakpoint, ...]:
        return self._set.points

    def before_tool(self, agent: Any, name: str, arguments: dict[str, Any]) -> None:
        hits = []
        for point in self.breakpoints:
            if point.kind == "tool" and point.value == name:
                hits.append((point, f"about to call {name}"))
            elif point.kind == "risk":
                risk = self._risk_of(agent, name)
                if _rank(risk) >= _rank(str(point.value)):
                    hits.append((point, f"about to call {name} (risk {risk})"))
        self._report(agent, "before_tool", hits, BreakpointHitData(tool_name=name, arguments=arguments))

    def after_tool(self, agent: Any, name: str, ok: bool, status: str, error: str | None) -> None:
        hits = [(point, f"{name} failed ({status}{': ' + error if error else ''})")
                for point in self.breakpoints if point.kind == "fail" and not ok]
        self._report(agent, "after_tool", hits, BreakpointHitData(tool_name=name, status=status))

    def after_llm(self, agent: Any, reply: str, tokens: int, cost: float | None) -> None:
        hits = []
        for point in self.breakpoints:
            if point.kind == "reply" and re.search(str(point.value), reply or ""):
                hits.append((point, f"the reply matched /{point.value}/"))
            elif point.kind in ("tokens", "cost") and point not in self._crossed:
                spent: float = tokens if point.kind == "tokens" else (cost or 0.0)
                if spent > float(point.value or 0):
                    self._crossed.add(point)
                    used = f"{tokens:,} tokens" if point.kind == "tokens" else f"${spent:.4f}"
                    hits.append((point, f"the trial has used {used}, over {point}"))
        self._report(agent, "after_llm", hits, BreakpointHitData(tokens=tokens, cost=cost))

    def _report(self, agent: Any, point: str, hits: list[tuple[Breakpoint, str]], data: BreakpointHitData) -> None:
        if not hits:
            return
        holding = self.hold is not None
        for breakpoint_, reason in hits:
            agent.emit(BreakpointHitEvent(data=BreakpointHitData(
                breakpoint=str(breakpoint_), point=point, reason=reason, iteration=agent.current_iteration,
                paused=holding, **data)))
        if self.hold is not None:
            self.hold(agent, "; ".join(f"breakpoint {b}: {reason}" for b, reason in hits))

    def _risk_of(self, agent: Any, name: str) -> str:
        """The tool's risk level from the trial's tool listing (read once, when a risk breakpoint asks)."""
        if self._risks is None:
            listing = agent.tool_listing()
            self._risks = {str(t.get("name") or t.get("function", {}).get("name")): str(t.get("risk") or "safe")
                           for t in listing}
        return self._risks.get(name, RiskLevel.SAFE.value)


def _rank(risk: str) -> int:
    return RISK_ORDER.index(risk) if risk in RISK_ORDER else 0
