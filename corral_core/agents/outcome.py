"""Records an agent run leaves behind, and the per-trial ledger shared by nested agents."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from corral_core.domain import AgentStatus as AgentStatus  # re-exported: its home is corral_core.domain
from corral_core.llm.types import Usage

AGENT_STATUSES: tuple[str, ...] = tuple(AgentStatus)

SURRENDER_SENTINEL = "GIVE UP"
"""What `run()` returns when the agent surrendered deliberately (Corral's sentinel)."""

FINAL_ANSWER = re.compile(r"Final Answer:\s*(.*)", re.IGNORECASE | re.DOTALL)
"""A text reply's final answer (tool-calling and planner agents): everything after "Final Answer:"."""

# Surrender is a deliberate act: the whole reply, or the whole final answer, is the sentinel;
# prose that merely mentions giving up never counts.
_BARE_SURRENDER = re.compile(r"\s*GIVE UP\s*\.?\s*", re.IGNORECASE)
_SURRENDER_ANSWER = re.compile(r"(?:GIVE UP|SURRENDER)\s*\.?", re.IGNORECASE)


def final_answer(text: str) -> str | None:
    """The non-empty answer after "Final Answer:" in a text reply, or None when there is none."""
    match = FINAL_ANSWER.search(text or "")
    answer = match.group(1).strip() if match else ""
    return answer or None


def is_surrender_reply(text: str) -> bool:
    """True when a text reply surrenders deliberately: the reply is exactly "GIVE UP", or its final
    answer is exactly "GIVE UP" (or "SURRENDER"), as in a plan followed by "Final Answer: GIVE UP"."""
    if _BARE_SURRENDER.fullmatch(text or ""):
        return True
    answer = final_answer(text)
    return answer is not None and _SURRENDER_ANSWER.fullmatch(answer) is not None


@dataclass
class AgentOutcome:
    """How one `run()` ended. `answer` is set only for "answered"; `error` only for "error"."""

    status: AgentStatus
    answer: str | None = None
    error: str | None = None
    iterations: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    assisted: bool = False  # a person intervened (live inbox message)
    fault: str | None = None  # with an error: "provider", "environment" or "agent" (metrics.records.FAULTS)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "answer": self.answer, "error": self.error, "iterations": self.iterations,
                "usage": self.usage.to_dict(), "cost": self.cost, "assisted": self.assisted, "fault": self.fault}


@dataclass
class StepResult:
    """What one iteration produced. `status=None` means "keep going"; otherwise the run ends."""

    status: AgentStatus | None = None
    answer: str | None = None
    error: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    fault: str | None = None  # with status "error": whose fault (a nested agent's own); None means the agent's


class TrialLedger:
    """Per-trial accounting shared by an agent and the agents it runs inside itself.

    Token usage and cost add up over every LLM call (extractor, planner, executor, reflection);
    turns count calls per role so scripted and replay models find their turn; message indexes are
    unique over the trial; hook metadata persists across hook points.
    """

    def __init__(self) -> None:
        self.usage = Usage()
        self.cost: float | None = None
        self.turns: dict[str, int] = {}
        self.message_seq = 0
        self.metadata: dict[str, Any] = {}
        self.wait_seconds = 0.0  # time spent paused by a controller; excluded from durations
        self.assisted = False
        self.llm_retries = 0  # transient provider failures retried (not the agent's failures)
        self.llm_retry_wait = 0.0  # seconds waited before those retries
        self.rate_limit_wait = 0.0  # seconds waited for the model's requests/tokens-per-minute budget
        self.limits: Any = None  # the trial's UsageLimits (agents/limits.py), charged after every LLM call
        self.breakpoints: Any = None  # the trial's BreakpointWatch (agents/breakpoints.py) (tool and LLM checks)

    def next_turn(self, role: str) -> int:
        turn = self.turns.get(role, 0)
        self.turns[role] = turn + 1
        return turn

    def add(self, usage: Usage, cost: float | None) -> None:
        self.usage = self.usage + usage
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def count_waits(self, retries: int, retry_wait: float, rate_limit_wait: float) -> None:
        """One LLM call's retries and waits (before retries, for the per-minute budgets)."""
        self.llm_retries += retries
        self.llm_retry_wait += retry_wait
        self.rate_limit_wait += rate_limit_wait

    def next_message_index(self) -> int:
        index = self.message_seq
        self.message_seq += 1
        return index
