"""Anytime-valid sequential comparisons: e-processes and confidence sequences over paired task differences.

Unit of analysis: the task. Each paired task gives one difference d in [-1, 1] (arm B's mean score on it
minus arm A's), added in the order the tasks were run (a seeded random order, runner/sequential.py).
The test is the betting martingale of Waudby-Smith & Ramdas ("Estimating means of bounded random
variables by betting", JRSS-B 2024), on x = (d + 1) / 2 in [0, 1]: the wealth of a bettor against
H0: E[x] = m is

    K_t(m) = prod_{i <= t} (1 + lambda_i (x_i - m)),

lambda_i predictable (it reads only x_1 .. x_{i-1}): their aGRAPA bet,
lambda_i = clip((mu_{i-1} - m) / (s2_{i-1} + (mu_{i-1} - m)^2), -c / (1 - m), c / m), c = 1/2, with the
running mean mu and variance s2 started at 1/2 and 1/4. Under H0 each factor has mean 1, so K is a
nonnegative martingale and by Ville's inequality P(sup_t K_t(m) >= 1/a) <= a: the test may be read
after every task, and stopped at any time, at level a.

- The e-value of a comparison is K_t(0) (in d), its verdict: K_t(0) >= 1/a.
- The confidence sequence is {m : K_s(m) < 1/a at every look s <= t} (the running intersection), on a
  grid of m; each bound is widened by one grid step, so it is conservative.
- Futility: the one-sided bets against "mean >= +effect" (lambda <= 0) and "mean <= -effect"
  (lambda >= 0) both reach 1/a, i.e. the (one-sided) confidence sequences exclude +effect and
  -effect. Each has level a, so a study whose true |difference| is at least `effect` is called
  futile with probability at most a.
- Several comparisons: e-value Bonferroni, every comparison is tested at a / k over the k pairs of arms
  (thresholds k / a), so the family-wise error under monitoring at every look stays <= a.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

BET_SHRINK = 0.5  # c of aGRAPA: at most half the wealth is ever bet (the paper's default range)
GRID_STEP = 0.01  # the confidence sequence's grid in d
METHOD = ("betting martingale with aGRAPA bets (Waudby-Smith & Ramdas 2024), over paired task differences; "
          "e-value Bonferroni over the pairs")
REASONS = ("decided", "futile", "max_tasks")


class BettingWealth:
    """The wealth K_t(m) of the aGRAPA bettor against H0: mean of d = `null` (d in [-1, 1]).

    `side` +1 bets only that the mean is above the null, -1 only below, 0 either way (two-sided)."""

    def __init__(self, null: float, side: int = 0) -> None:
        if not -1.0 < null < 1.0:
            raise ValueError(f"the null mean must be inside (-1, 1), not {null}")
        self.m = (null + 1.0) / 2.0
        self.side = side
        self.log_wealth = 0.0
        self.n = 0
        self._sum = 0.0
        self._squares = 0.0  # sum of (x_i - mu_i)^2, mu_i the running mean after x_i

    def bet(self) -> float:
        """lambda for the next observation, from the observations so far only."""
        mu = (0.5 + self._sum) / (self.n + 1)
        s2 = (0.25 + self._squares) / (self.n + 1)
        gap = mu - self.m
        raw = gap / (s2 + gap * gap)
        low = -BET_SHRINK / (1.0 - self.m) if self.side <= 0 else 0.0
        high = BET_SHRINK / self.m if self.side >= 0 else 0.0
        return min(high, max(low, raw))

    def add(self, difference: float) -> None:
        x = (min(1.0, max(-1.0, difference)) + 1.0) / 2.0
        self.log_wealth += math.log1p(self.bet() * (x - self.m))
        self.n += 1
        self._sum += x
        mu = (0.5 + self._sum) / (self.n + 1)
        self._squares += (x - mu) ** 2

    @property
    def wealth(self) -> float:
        return math.exp(min(self.log_wealth, 700.0))


def wealth_of(differences: Sequence[float], null: float, side: int = 0) -> float:
    """K_t(null) after `differences` (in their order)."""
    process = BettingWealth(null, side)
    for d in differences:
        process.add(d)
    return process.wealth


@dataclass(frozen=True)
class Look:
    """One comparison at one look (after a round)."""

    round: int
    tasks: int  # paired tasks behind it
    mean: float | None
    e_value: float
    cs: tuple[float, float]  # the confidence sequence at a / comparisons, the running intersection
    decided: bool  # the e-value reached comparisons / alpha at this look or an earlier one
    futile: bool  # both one-sided bets against +-effect reached it

    def to_dict(self) -> dict[str, object]:
        return {"round": self.round, "tasks": self.tasks, "mean": self.mean, "e_value": self.e_value,
                "cs": list(self.cs), "decided": self.decided, "futile": self.futile}


@dataclass
class SequentialComparison:
    """One pair of arms followed over the looks (a and b: arm names; differences are b - a)."""

    a: str
    b: str
    looks: list[Look] = field(default_factory=list)

    @property
    def last(self) -> Look | None:
        return self.looks[-1] if self.looks else None

    @property
    def settled(self) -> bool:
        last = self.last
        return last is not None and (last.decided or last.futile)

    def to_dict(self) -> dict[str, object]:
        last = self.last
        return {"a": self.a, "b": self.b, "e_value": last.e_value if last else None,
                "cs": list(last.cs) if last else None, "decided": bool(last and last.decided),
                "futile": bool(last and last.futile and not last.decided),
                "looks": [look.to_dict() for look in self.looks]}


def comparison_looks(differences: Sequence[float], look_ends: Sequence[int], *, alpha: float, effect: float,
                     comparisons: int, grid_step: float = GRID_STEP) -> list[Look]:
    """The comparison at each look: `look_ends[r]` is how many of `differences` were in by look r + 1.

    Thresholds are comparisons / alpha (e-value Bonferroni). The confidence sequence is the running
    intersection over the looks of the grid points not rejected, widened by one step."""
    threshold = comparisons / alpha
    steps = max(2, round(2.0 / grid_step))
    grid = [-1.0 + 2.0 * i / steps for i in range(1, steps)]  # the open interval's points
    processes = [BettingWealth(m) for m in grid]
    zero = BettingWealth(0.0)
    upper = BettingWealth(effect, side=-1)  # against mean >= +effect
    lower = BettingWealth(-effect, side=+1)  # against mean <= -effect
    alive = [True] * len(grid)
    looks: list[Look] = []
    decided = futile = False
    done = 0
    for round_no, end in enumerate(look_ends, start=1):
        for d in differences[done:end]:
            for process in (*processes, zero, upper, lower):
                process.add(d)
        done = max(done, end)
        for i, process in enumerate(processes):
            if alive[i] and process.log_wealth >= math.log(threshold):
                alive[i] = False
        kept = [grid[i] for i in range(len(grid)) if alive[i]]
        step = 2.0 / steps
        cs = (max(-1.0, kept[0] - step), min(1.0, kept[-1] + step)) if kept else (0.0, 0.0)
        decided = decided or zero.log_wealth >= math.log(threshold)
        futile = futile or (upper.log_wealth >= math.log(threshold) and lower.log_wealth >= math.log(threshold))
        mean = math.fsum(differences[:done]) / done if done else None
        looks.append(Look(round_no, done, mean, zero.wealth, cs, decided, futile))
    return looks


@dataclass(frozen=True)
class StoppingDecision:
    """Whether the study stops after a look, and why (one of REASONS, or None: go on)."""

    reason: str | None

    @staticmethod
    def of(comparisons: Sequence[SequentialComparison], tasks_run: int, max_tasks: int) -> StoppingDecision:
        if comparisons and all(c.settled for c in comparisons):
            any_decided = any(c.last is not None and c.last.decided for c in comparisons)
            return StoppingDecision("decided" if any_decided else "futile")
        if tasks_run >= max_tasks:
            return StoppingDecision("max_tasks")
        return StoppingDecision(None)


# --- simulation (the benchmark script and the tests) -------------------------------------------------


def simulate_task(rng: random.Random, arms: int, effects: Sequence[float], trials: int, base_rate: float = 0.5,
                  task_sd: float = 0.2, interaction_sd: float = 0.1) -> list[float]:
    """One task's mean score per arm: power.py's model (a base rate per task, a task x arm interaction,
    pass/fail trials); arm j adds effects[j]."""
    base = rng.gauss(base_rate, task_sd)
    means = []
    for j in range(arms):
        rate = min(1.0, max(0.0, base + effects[j] + rng.gauss(0.0, interaction_sd) / 2.0))
        means.append(sum(rng.random() < rate for _ in range(trials)) / trials)
    return means


@dataclass(frozen=True)
class SimulatedStudy:
    rejected: bool  # some comparison decided (the zero null rejected)
    futile: bool
    tasks_used: int
    reason: str


def simulate_study(rng: random.Random, *, arms: int, effects: Sequence[float], max_tasks: int, look_every: int,
                   alpha: float, effect: float, trials: int = 1) -> SimulatedStudy:
    """One monitored study: tasks in rounds of `look_every`, every pair of arms tested after each round
    against k / alpha, stopped when every pair is settled. Only the e-processes are run (no grid)."""
    pairs = [(i, j) for i in range(arms) for j in range(i + 1, arms)]
    threshold = math.log(len(pairs) / alpha)
    zero = [BettingWealth(0.0) for _ in pairs]
    upper = [BettingWealth(effect, side=-1) for _ in pairs]
    lower = [BettingWealth(-effect, side=+1) for _ in pairs]
    decided = [False] * len(pairs)
    futile = [False] * len(pairs)
    used = 0
    while used < max_tasks:
        for _ in range(min(look_every, max_tasks - used)):
            means = simulate_task(rng, arms, effects, trials)
            for p, (i, j) in enumerate(pairs):
                d = means[j] - means[i]
                zero[p].add(d)
                upper[p].add(d)
                lower[p].add(d)
            used += 1
        for p in range(len(pairs)):
            decided[p] = decided[p] or zero[p].log_wealth >= threshold
            futile[p] = futile[p] or (upper[p].log_wealth >= threshold and lower[p].log_wealth >= threshold)
        if all(d or f for d, f in zip(decided, futile, strict=True)):
            return SimulatedStudy(any(decided), not any(decided), used, "decided" if any(decided) else "futile")
    return SimulatedStudy(any(decided), False, used, "max_tasks")
