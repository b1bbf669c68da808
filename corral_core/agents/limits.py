"""Cost and token limits: per trial and per benchmark (spec `limits`).

Every LLM call of a trial is charged to its `UsageLimits` right after it returns. When the trial
(or the whole benchmark, shared by all its trials in this process) has spent more than its limit,
`LimitReached` ends the trial with status `limit`; it is scored on what it has (the agent's last
reply is submitted as its answer when there is one), as Inspect does. A benchmark over its limit
starts no more trials: the rest are reported as `limit` without running.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


class LimitReached(Exception):
    """A trial or its benchmark spent more tokens or dollars than its limit allows."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reply: str | None = None  # the model's reply that crossed the limit (set by the agent)


@dataclass
class BenchmarkBudget:
    """What every trial of one run has spent together, against the benchmark's limits (None: no limit)."""

    cost_limit: float | None = None
    token_limit: int | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.cost = 0.0
        self.tokens = 0

    def charge(self, tokens: int, cost: float | None) -> None:
        with self._lock:
            self.tokens += tokens
            self.cost += cost or 0.0

    def exceeded(self) -> str | None:
        """Why the benchmark may start no more trials, or None."""
        with self._lock:
            return _over("benchmark", self.tokens, self.cost, self.token_limit, self.cost_limit)


@dataclass
class UsageLimits:
    """One trial's limits, and the benchmark budget it shares with the others."""

    cost_limit: float | None = None
    token_limit: int | None = None
    benchmark: BenchmarkBudget | None = None

    def charge(self, tokens: int, cost: float | None, trial_tokens: int, trial_cost: float | None) -> None:
        """Charge one call (`tokens`, `cost`); raise LimitReached when the trial or the benchmark is over."""
        if self.benchmark is not None:
            self.benchmark.charge(tokens, cost)
        reason = _over("trial", trial_tokens, trial_cost or 0.0, self.token_limit, self.cost_limit)
        if reason is None and self.benchmark is not None:
            reason = self.benchmark.exceeded()
        if reason is not None:
            raise LimitReached(reason)


def _over(scope: str, tokens: int, cost: float, token_limit: int | None, cost_limit: float | None) -> str | None:
    if token_limit is not None and tokens > token_limit:
        return f"the {scope} used {tokens:,} tokens, over its limit of {token_limit:,} (limits.{scope}.tokens)"
    if cost_limit is not None and cost > cost_limit:
        return f"the {scope} cost ${cost:.4f}, over its limit of ${cost_limit:.4f} (limits.{scope}.cost)"
    return None
