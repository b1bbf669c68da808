"""Breakpoints: stop a trial where a condition holds (the workbench), or note that it held (batch).

A breakpoint is written as a short text, the same in a spec's `hooks: {breakpoints: [...]}` and in
the workbench's run form (there, several are separated by `;`): `tool:calculator`, `fail`,
`tokens>2000`. Each kind is a `Condition` registered on BREAKPOINTS with its syntax and doc line (the
built-in ones below, others from plugins' `corral_tui.breakpoints` entry points); the parser, the
error messages, the workbench's hints and completion, and docs/kinds.md all read that registry.

The agent asks its trial's `BreakpointWatch` at those points. Every hit is a BREAKPOINT_HIT event;
with a `hold` (the trial controller's, in the workbench) the agent then waits where it is,
mid-iteration, until the operator continues or steps. Token and cost breakpoints hit once per trial.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from corral_core.events import BreakpointHitData, BreakpointHitEvent
from corral_core.registry import KindError, Registry, did_you_mean
from corral_core.tools.base import RiskLevel

RISK_ORDER = tuple(level.value for level in RiskLevel)  # safe < confirm < blocked
_WRITTEN = re.compile(r"(\w+)\s*(?:([:>])\s*(.*))?", re.DOTALL)

Hold = Callable[[Any, str], None]  # (agent, reason): returns when the operator lets the agent go on


class Condition:
    """What one breakpoint kind checks. Subclass it, register it on BREAKPOINTS with its `syntax`
    (`NAME`, `NAME:VALUE` or `NAME>VALUE`), and answer at the check points that matter to it: a text
    saying why it hit, or None. `once` kinds hit at most once per trial (thresholds)."""

    once = False

    def parse(self, value: str) -> Any:
        """The breakpoint's value from its text after `:` or `>`; ValueError says what is wrong."""
        return value

    def before_tool(self, watch: BreakpointWatch, agent: Any, value: Any, name: str,
                    arguments: dict[str, Any]) -> str | None:
        return None

    def after_tool(self, watch: BreakpointWatch, agent: Any, value: Any, name: str, ok: bool, status: str,
                   error: str | None) -> str | None:
        return None

    def after_llm(self, watch: BreakpointWatch, agent: Any, value: Any, reply: str, tokens: int,
                  cost: float | None) -> str | None:
        return None


BREAKPOINTS: Registry[type[Condition]] = Registry(
    "breakpoints", "breakpoint kind", title="Breakpoint kinds",
    where="a spec's `hooks: {breakpoints: [...]}` and the workbench's Breakpoints field (`;` between them)")


def breakpoint_syntax() -> str:
    """How breakpoints are written, every kind known (plugins included): 'tool:NAME, ... or reply:REGEX'."""
    written = [kind.written for kind in BREAKPOINTS.kinds()]
    return ", ".join(written[:-1]) + f" or {written[-1]}" if len(written) > 1 else "".join(written)


@dataclass(frozen=True)
class Breakpoint:
    """One condition to stop at. Build it with `Breakpoint.parse("tool:calculator")`."""

    kind: str  # a name in BREAKPOINTS
    value: Any = None

    @classmethod
    def parse(cls, text: str) -> Breakpoint:
        """A breakpoint from its text; ValueError says what is wrong and how to write it."""
        text = str(text).strip()
        written = _WRITTEN.fullmatch(text)
        name, sep, rest = (written.group(1).lower(), written.group(2) or "", (written.group(3) or "").strip()) \
            if written else ("", "", "")
        if name not in BREAKPOINTS:
            hint = did_you_mean(name, BREAKPOINTS.names()) if name else ""
            raise KindError(f"unknown breakpoint {text!r}{hint}; write {breakpoint_syntax()}")
        kind = BREAKPOINTS.get(name)
        wanted = kind.syntax[len(name):len(name) + 1] if kind.syntax.startswith(name) else ""
        if sep != wanted or (wanted and not rest):
            raise KindError(f"unknown breakpoint {text!r}; write {kind.written} ({breakpoint_syntax()})")
        if not wanted:
            return cls(name)
        try:
            return cls(name, kind.factory().parse(rest))
        except ValueError as exc:
            raise ValueError(f"breakpoint {text!r}: {exc}") from None

    def __str__(self) -> str:
        kind = BREAKPOINTS.get(self.kind)
        if self.value is None:
            return self.kind
        separator = kind.syntax[len(self.kind):len(self.kind) + 1] or ":"
        shown = f"{self.value:g}" if isinstance(self.value, float) else str(self.value)
        return f"{self.kind}{separator}{shown}"


@BREAKPOINTS.kind("tool", syntax="tool:NAME", doc="right before a tool named NAME runs")
class _Tool(Condition):
    def before_tool(self, watch: BreakpointWatch, agent: Any, value: Any, name: str,
                    arguments: dict[str, Any]) -> str | None:
        return f"about to call {name}" if value == name else None


@BREAKPOINTS.kind("risk", syntax="risk:LEVEL",
                  doc="right before a tool of risk LEVEL or higher runs (safe < confirm < blocked)")
class _Risk(Condition):
    def parse(self, value: str) -> Any:
        if value.lower() not in RISK_ORDER:
            raise ValueError(f"unknown risk level {value!r}; use one of: {', '.join(RISK_ORDER)}")
        return value.lower()

    def before_tool(self, watch: BreakpointWatch, agent: Any, value: Any, name: str,
                    arguments: dict[str, Any]) -> str | None:
        risk = watch.risk_of(agent, name)
        return f"about to call {name} (risk {risk})" if _rank(risk) >= _rank(str(value)) else None


@BREAKPOINTS.kind("fail", doc="right after a tool call that failed (any status but success)")
class _Fail(Condition):
    def after_tool(self, watch: BreakpointWatch, agent: Any, value: Any, name: str, ok: bool, status: str,
                   error: str | None) -> str | None:
        return None if ok else f"{name} failed ({status}{': ' + error if error else ''})"


class _Threshold(Condition):
    once = True
    label = "tokens"

    def parse(self, value: str) -> Any:
        try:
            number = int(value) if self.label == "tokens" else float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a {'whole number' if self.label == 'tokens' else 'number'}") from None
        if number < 0:
            raise ValueError("the threshold cannot be negative")
        return number

    def after_llm(self, watch: BreakpointWatch, agent: Any, value: Any, reply: str, tokens: int,
                  cost: float | None) -> str | None:
        spent: float = tokens if self.label == "tokens" else (cost or 0.0)
        if spent <= float(value or 0):
            return None
        used = f"{tokens:,} tokens" if self.label == "tokens" else f"${spent:.4f}"
        return f"the trial has used {used}, over {Breakpoint(self.label, value)}"


@BREAKPOINTS.kind("tokens", syntax="tokens>N",
                  doc="once the trial has used more than N tokens (checked after each LLM call; once per trial)")
class _Tokens(_Threshold):
    label = "tokens"


@BREAKPOINTS.kind("cost", syntax="cost>X", doc="once the trial has cost more than X dollars (once per trial)")
class _Cost(_Threshold):
    label = "cost"


@BREAKPOINTS.kind("reply", syntax="reply:REGEX",
                  doc="right after a model reply that REGEX matches (Python `re.search`)")
class _Reply(Condition):
    def parse(self, value: str) -> Any:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"the regex does not compile ({exc})") from None
        return value

    def after_llm(self, watch: BreakpointWatch, agent: Any, value: Any, reply: str, tokens: int,
                  cost: float | None) -> str | None:
        return f"the reply matched /{value}/" if re.search(str(value), reply or "") else None


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
        self._conditions: dict[str, Condition] = {}  # one per kind in use, made on first check

    @property
    def breakpoints(self) -> tuple[Breakpoint, ...]:
        return self._set.points

    def before_tool(self, agent: Any, name: str, arguments: dict[str, Any]) -> None:
        hits = self._hits(lambda c, p: c.before_tool(self, agent, p.value, name, arguments))
        self._report(agent, "before_tool", hits, BreakpointHitData(tool_name=name, arguments=arguments))

    def after_tool(self, agent: Any, name: str, ok: bool, status: str, error: str | None) -> None:
        hits = self._hits(lambda c, p: c.after_tool(self, agent, p.value, name, ok, status, error))
        self._report(agent, "after_tool", hits, BreakpointHitData(tool_name=name, status=status))

    def after_llm(self, agent: Any, reply: str, tokens: int, cost: float | None) -> None:
        hits = self._hits(lambda c, p: c.after_llm(self, agent, p.value, reply, tokens, cost))
        self._report(agent, "after_llm", hits, BreakpointHitData(tokens=tokens, cost=cost))

    def _hits(self, check: Callable[[Condition, Breakpoint], str | None]) -> list[tuple[Breakpoint, str]]:
        hits = []
        for point in self.breakpoints:
            condition = self._conditions.get(point.kind)
            if condition is None:
                condition = self._conditions[point.kind] = BREAKPOINTS.get(point.kind).factory()
            if condition.once and point in self._crossed:
                continue
            reason = check(condition, point)
            if reason is not None:
                if condition.once:
                    self._crossed.add(point)
                hits.append((point, reason))
        return hits

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

    def risk_of(self, agent: Any, name: str) -> str:
        """The tool's risk level from the trial's tool listing (read once, when a breakpoint asks)."""
        if self._risks is None:
            listing = agent.tool_listing()
            self._risks = {str(t.get("name") or t.get("function", {}).get("name")): str(t.get("risk") or "safe")
                           for t in listing}
        return self._risks.get(name, RiskLevel.SAFE.value)


def _rank(risk: str) -> int:
    return RISK_ORDER.index(risk) if risk in RISK_ORDER else 0
