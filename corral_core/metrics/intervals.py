"""Intervals that respect clustering: trials of one task are not independent, so every interval of a
per-arm rate or score counts tasks, not trials, as the independent units.

- `task_mean_interval`: the mean over tasks of per-task means, t interval across tasks
  (df = tasks - 1), clipped to [0, 1]  -> method "t-over-tasks".
- `clustered_proportion`: successes / trials pooled over tasks, Wilson interval on the effective
  sample size n / deff, where deff = (cluster-robust variance, CR1, as Inspect AI's
  `stderr(cluster=...)` and statsmodels' cluster covariance) / (binomial variance), never below 1
  -> method "wilson-deff-by-task".
- `clustered_mean`: a pooled mean over trials with the same cluster-robust (CR1) standard error and
  a t quantile with tasks - 1 df, clipped to [0, 1] -> method "cluster-se-by-task".

With a single task there is no between-task spread to measure; the interval is then over that
task's trials and its method says so ("... (one task: over trials)").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .stats import UNIT, Estimate, t_quantile, wilson_from_rate


@dataclass(frozen=True)
class Cluster:
    """One task's trials, as sums: n trials, their total and total of squares (or successes)."""

    n: int
    total: float
    total_sq: float = 0.0


def _clip(low: float, high: float) -> tuple[float, float]:
    return max(low, UNIT[0]), min(high, UNIT[1])


def task_mean_interval(task_means: Sequence[float], confidence: float = 0.95,
                       trials: Sequence[int] | None = None) -> Estimate:
    """Mean over tasks of per-task means, with a t interval across tasks (see the module docstring).

    When every task has the same mean at 0 or 1 the t interval would have no width; the Wilson
    interval with the number of tasks as n is given instead ("wilson-over-tasks").

    With `trials` (each task's trial count), the spread of the task means is floored at
    m(1 - m) * mean(1 / trials): what pass/fail trials at the arm's mean rate m would spread by if every
    task were alike, a lower bound of the true spread for 0/1 scores. A few tasks that happen to agree
    then never give a narrow interval ("t-over-tasks, variance floor" when the floor was used).
    """
    n = len(task_means)
    if n == 0:
        return Estimate(None, None, 0, "t-over-tasks", 0)
    mean = math.fsum(task_means) / n
    if n == 1:
        return Estimate(mean, None, 1, "t-over-tasks", 1)
    sd = statistics.stdev(task_means)
    if sd == 0.0 and mean in UNIT:
        return Estimate(mean, wilson_from_rate(mean, n, confidence), n, "wilson-over-tasks", n)
    method = "t-over-tasks"
    if trials is not None and trials:
        floor = max(0.0, mean * (1.0 - mean)) * math.fsum(1.0 / max(1, r) for r in trials) / len(trials)
        if sd * sd < floor:
            sd, method = math.sqrt(floor), "t-over-tasks, variance floor"
    half = t_quantile((1.0 + confidence) / 2.0, n - 1) * sd / math.sqrt(n)
    return Estimate(mean, _clip(mean - half, mean + half), n, method, n)


def cluster_variance(clusters: Sequence[Cluster], mean: float) -> float:
    """CR1 cluster-robust variance of a pooled mean: G/(G-1) * sum_g (total_g - mean*n_g)^2 / N^2."""
    g = len(clusters)
    n = sum(c.n for c in clusters)
    residuals = math.fsum((c.total - mean * c.n) ** 2 for c in clusters)
    return g / (g - 1) * residuals / (n * n)


def clustered_proportion(clusters: Iterable[Cluster], confidence: float = 0.95) -> Estimate:
    """successes / trials over every task (Cluster.total = successes), with the Wilson interval on the
    design-effect adjusted sample size (see the module docstring). Tasks with no trials are ignored."""
    groups = [c for c in clusters if c.n > 0]
    n = sum(c.n for c in groups)
    if n == 0:
        return Estimate(None, None, 0, "wilson-deff-by-task", 0)
    successes = math.fsum(c.total for c in groups)
    p = successes / n
    if len(groups) == 1:
        return Estimate(p, wilson_from_rate(p, n, confidence), n, "wilson (one task: over trials)", 1)
    binomial = p * (1.0 - p) / n
    if binomial == 0.0:  # every trial alike: no spread to measure, so count each task once
        n_eff = float(len(groups))
    else:
        deff = max(1.0, cluster_variance(groups, p) / binomial)
        n_eff = n / deff
    return Estimate(p, wilson_from_rate(p, n_eff, confidence), n, "wilson-deff-by-task", len(groups))


def clustered_mean(clusters: Iterable[Cluster], confidence: float = 0.95) -> Estimate:
    """A pooled mean over trials (Cluster.total = sum of values, total_sq = sum of squares) with a
    cluster-robust (CR1) standard error and t(tasks - 1), clipped to [0, 1]."""
    groups = [c for c in clusters if c.n > 0]
    n = sum(c.n for c in groups)
    if n == 0:
        return Estimate(None, None, 0, "cluster-se-by-task", 0)
    mean = math.fsum(c.total for c in groups) / n
    if len(groups) == 1:
        if n < 2:
            return Estimate(mean, None, n, "t (one task: over trials)", 1)
        variance = max(0.0, (groups[0].total_sq - n * mean * mean) / (n - 1))
        half = t_quantile((1.0 + confidence) / 2.0, n - 1) * math.sqrt(variance / n)
        return Estimate(mean, _clip(mean - half, mean + half), n, "t (one task: over trials)", 1)
    se = math.sqrt(cluster_variance(groups, mean))
    half = t_quantile((1.0 + confidence) / 2.0, len(groups) - 1) * se
    return Estimate(mean, _clip(mean - half, mean + half), n, "cluster-se-by-task", len(groups))
