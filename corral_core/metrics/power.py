"""Power and planning: how many tasks and trials a paired comparison needs, before a run.

The model of one task's difference between two arms (the unit of analysis is the task):

- each task has a base pass rate p_t (tasks differ: sd `task_sd` around `base_rate`);
- arm B adds the effect and a task x arm interaction u_t (sd `interaction_sd`): p_A = p_t - u_t / 2,
  p_B = p_t + effect + u_t / 2 (clipped to [0, 1]);
- trials are pass/fail draws at those rates.

Power is estimated by simulation with the same test the verdict uses (the paired sign-flip test over
tasks, exact up to 24 differing tasks, Monte Carlo beyond), at alpha / pairs (Holm's first step, so
the estimate holds for every pair of a benchmark with several arms). Miller's formula ("Adding Error
Bars to Evals", 2024), with t quantiles (stats.paired_mde, the MDE Compare prints), is the quick check:
the fewest tasks n with (t_{1-a/2, n-1} + t_{power, n-1}) * sqrt(V / n) <= effect, where
V = interaction_sd^2 + within * (2 / trials), within = E[p(1 - p)] over tasks.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .compare import tasks_needed
from .paired import sign_flip_tests
from .stats import paired_mde

_NORMAL = statistics.NormalDist()
PLAN_DRAWS = 2_000  # Monte Carlo sign patterns per simulated test beyond 24 differing tasks


@dataclass(frozen=True)
class Assumptions:
    """What the plan assumes (stated, or estimated from a pilot: `source` says which)."""

    base_rate: float = 0.5
    task_sd: float = 0.2
    interaction_sd: float = 0.1
    source: str = "stated assumptions"

    @property
    def within(self) -> float:
        """E[p(1 - p)] over tasks: the pass/fail variance of one trial within a task."""
        return max(0.0, self.base_rate * (1.0 - self.base_rate) - self.task_sd ** 2)

    def variance(self, trials: int) -> float:
        """Variance of one task's difference of means between two arms with `trials` trials each."""
        return self.interaction_sd ** 2 + self.within * 2.0 / trials


@dataclass(frozen=True)
class DesignPower:
    tasks: int
    trials: int
    power: float | None  # share of simulated studies whose test rejects in the effect's direction; None: impossible
    miller_tasks: int  # Miller's formula: tasks needed at this many trials for the target power


def miller_tasks(assumptions: Assumptions, effect: float, trials: int, power: float, alpha: float) -> int:
    """The fewest tasks whose MDE (minimum_detectable_effect, the same formula) is at most |effect|."""
    z = _NORMAL.inv_cdf(1.0 - alpha / 2.0) + _NORMAL.inv_cdf(power)
    sd = math.sqrt(assumptions.variance(trials))
    n = max(2, tasks_needed(alpha), math.ceil(z * z * sd * sd / (effect * effect)))  # the normal limit: a lower bound
    while paired_mde(sd, n, alpha, power) > abs(effect):
        n += 1
    return n


def minimum_detectable_effect(assumptions: Assumptions, tasks: int, trials: int, power: float = 0.8,
                              alpha: float = 0.05) -> float | None:
    """The MDE Compare prints, from the assumed spread: stats.paired_mde with sd = sqrt(V) over `tasks`
    (Miller's formula with t quantiles, so it has its stated power at small n too); `alpha` is the level
    each pair is tested at. None when the design cannot reach alpha."""
    if tasks < max(2, tasks_needed(alpha)):
        return None
    return paired_mde(math.sqrt(assumptions.variance(trials)), tasks, alpha, power)


def simulated_power(assumptions: Assumptions, effect: float, tasks: int, trials: int, *, alpha: float = 0.05,
                    simulations: int = 400, seed: int = 0) -> float | None:
    """Share of `simulations` studies in which the sign-flip test rejects at `alpha` in the effect's direction."""
    if tasks < tasks_needed(alpha):
        return None
    rng = random.Random(seed)
    hits = 0
    for study in range(simulations):
        diffs = []
        for _ in range(tasks):
            base = rng.gauss(assumptions.base_rate, assumptions.task_sd)
            u = rng.gauss(0.0, assumptions.interaction_sd)
            rate_a = min(1.0, max(0.0, base - u / 2.0))
            rate_b = min(1.0, max(0.0, base + effect + u / 2.0))
            a = sum(rng.random() < rate_a for _ in range(trials))
            b = sum(rng.random() < rate_b for _ in range(trials))
            diffs.append((b - a) / trials)
        test = sign_flip_tests([diffs], draws=PLAN_DRAWS, seed=seed + study)[0]
        hits += test.p_value < alpha and test.mean * effect > 0
    return hits / simulations


def power_table(assumptions: Assumptions, effect: float, *, power: float = 0.8, alpha: float = 0.05,
                tasks: Sequence[int] = (5, 10, 20, 30, 50, 75, 100, 150), trials: Sequence[int] = (1, 3, 5),
                simulations: int = 400, seed: int = 0) -> list[DesignPower]:
    return [DesignPower(n, r, simulated_power(assumptions, effect, n, r, alpha=alpha, simulations=simulations,
                                              seed=seed),
                        miller_tasks(assumptions, effect, r, power, alpha))
            for r in trials for n in tasks]


def assumptions_from_pilot(task_scores: Mapping[str, Mapping[str, Sequence[float]]],
                           defaults: Assumptions = Assumptions()) -> Assumptions:
    """Estimate the model from a pilot: arm -> task -> its trial scores (analysed trials only).

    base_rate: mean of task means; task_sd: sd of task means (less the within-task share);
    interaction_sd: from the per-task differences of every pair of arms (their variance less the
    within-task share), or the default with a single arm.
    """
    means: list[float] = []
    within: list[float] = []
    for tasks in task_scores.values():
        for scores in tasks.values():
            if scores:
                means.append(math.fsum(scores) / len(scores))
            if len(scores) >= 2:
                within.append(statistics.variance(scores))
    if not means:
        raise ValueError("the pilot has no analysed trial to estimate from.")
    base = math.fsum(means) / len(means)
    per_trial = math.fsum(within) / len(within) if within else base * (1.0 - base)
    trials = [len(s) for tasks in task_scores.values() for s in tasks.values() if s]
    mean_inverse = math.fsum(1.0 / r for r in trials) / len(trials)
    task_var = statistics.variance(means) - per_trial * mean_inverse if len(means) >= 2 else defaults.task_sd ** 2
    arms = list(task_scores)
    interactions = []
    for i in range(len(arms)):
        for j in range(i + 1, len(arms)):
            shared = sorted(set(task_scores[arms[i]]) & set(task_scores[arms[j]]))
            diffs = [math.fsum(task_scores[arms[j]][t]) / len(task_scores[arms[j]][t])
                     - math.fsum(task_scores[arms[i]][t]) / len(task_scores[arms[i]][t])
                     for t in shared if task_scores[arms[i]][t] and task_scores[arms[j]][t]]
            if len(diffs) >= 2:
                interactions.append(statistics.variance(diffs) - 2.0 * per_trial * mean_inverse)
    interaction = (math.sqrt(max(0.0, statistics.fmean(interactions))) if interactions
                   else defaults.interaction_sd)
    source = (f"pilot: {len(means)} arm x task cells, {sum(trials)} trials"
              + ("" if interactions else f"; one arm, so the task x arm sd is assumed ({defaults.interaction_sd:g})"))
    return Assumptions(base, math.sqrt(max(0.0, task_var)), interaction, source)
