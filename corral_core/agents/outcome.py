"""Records an agent run leaves behind, and the per-trial ledger shared by nested agents."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from corral_core.llm.types import Usage

AgentStatus = Literal["answered", "surrendered", "iteration_limit", "stopped", "cancelled", "error"]
AGENT_STATUSES: tuple[str, ...] = ("answered", "surrendered", "iteration_limit", "stopped", "cancelled", "error")

SURRENDER_SENTINEL = "GIVE UP"
"""What `run()` returns when the agent surrendered deliberately (Corral's sentinel)."""


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

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "answer": self.answer, "error": self.error, "iterations": self.iterations,
                "usage": self.usage.to_dict(), "cost": self.cost, "assisted": self.assisted}


@dataclass
class StepResult:
    """What one iteration produced. `status=None` means "keep going"; otherwise the run ends."""

    status: AgentStatus | None = None
    answer: str | None = None
    error: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


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

    def next_turn(self, role: str) -> int:
        turn = self.turns.get(role, 0)
        self.turns[role] = turn + 1
        return turn

    def add(self, usage: Usage, cost: float | None) -> None:
        self.usage = self.usage + usage
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def next_message_index(self) -> int:
        index = self.message_seq
        self.message_seq += 1
        return index
