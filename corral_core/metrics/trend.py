"""Dose-response across ordered arms (verbosity levels): one test of "more helps", not L(L-1)/2 pairs.

Over the tasks measured at every level (complete blocks; the others are listed), each task's mean
scores y_1..y_L at the ordered levels give a slope b_t = sum_j c_j y_j / sum_j c_j^2 with the centred
level positions c_j = j - (L - 1) / 2. The test is a permutation test of the monotone contrast
T = sum_t sum_j c_j y_tj: under "the level changes nothing" the levels are exchangeable within a task,
so the L! orders of each task's scores are equally likely (every order counted when that is at most
EXACT_MAX patterns, else seeded Monte Carlo draws; two-sided). The slope (score per level step) is the
mean of the task slopes with a t interval over tasks (task-clustered: one slope per task). The curve
is each level's mean over the same tasks, t interval over tasks.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from .intervals import task_mean_interval
from .paired import format_p
from .stats import Estimate, t_quantile

EXACT_MAX = 50_000  # (L!)^tasks orders counted exactly up to this many
TREND_DRAWS = 5_000
_CHUNK_VALUES = 1 << 20  # Monte Carlo draws are made in chunks of about this many level positions


@dataclass(frozen=True)
class TrendResult:
    levels: list[str]  # the arms, in level order
    n_tasks: int  # tasks measured at every level
    tasks_left_out: list[str]  # measured at some levels only (first 20)
    slope: float | None  # mean change of score per level step
    slope_ci: tuple[float, float] | None  # 95%, t over tasks
    p_value: float | None  # permutation test of the monotone contrast, two-sided
    p_method: str  # "exact" | "monte-carlo"
    draws: int | None
    curve: list[Estimate]  # per level: mean over the complete tasks, t interval over tasks
    unit: str = "task"
    test: str = "permutation test of a monotone (linear) contrast over levels, levels permuted within each task"
    summary: str = ""


def trend_test(levels: Sequence[str], task_means: Mapping[str, Mapping[str, float]],
               trials: Mapping[str, Mapping[str, int]] | None = None, *, seed: int = 0,
               draws: int = TREND_DRAWS, confidence: float = 0.95) -> TrendResult | None:
    """Trend across `levels` (arm names in order) from arm -> task -> mean score. None for fewer than 3 levels."""
    if len(levels) < 3:
        return None
    every = set.intersection(*(set(task_means.get(level, {})) for level in levels))
    some = set().union(*(set(task_means.get(level, {})) for level in levels))
    tasks = sorted(every)
    left_out = sorted(some - every)
    count = len(levels)
    c = [j - (count - 1) / 2.0 for j in range(count)]
    css = math.fsum(x * x for x in c)
    rows = [[task_means[level][t] for level in levels] for t in tasks]
    curve = [task_mean_interval([row[j] for row in rows], confidence,
                                trials=[trials[level][t] for t in tasks] if trials else None)
             for j, level in enumerate(levels)]
    if not rows:
        return TrendResult(list(levels), 0, left_out[:20], None, None, None, "exact", None, curve,
                           summary="trend across levels: no task was measured at every level")
    slopes = [math.fsum(cj * y for cj, y in zip(c, row, strict=True)) / css for row in rows]
    slope = math.fsum(slopes) / len(slopes)
    ci = None
    if len(slopes) >= 2:
        half = t_quantile((1 + confidence) / 2, len(slopes) - 1) * statistics.stdev(slopes) / math.sqrt(len(slopes))
        ci = (slope - half, slope + half)
    observed = abs(math.fsum(math.fsum(cj * y for cj, y in zip(c, row, strict=True)) for row in rows))
    tolerance = 1e-9 * max(1.0, observed)
    if math.factorial(count) ** len(rows) <= EXACT_MAX:
        orders = list(itertools.permutations(c))
        sums = [0.0]
        for row in rows:
            task_values = [math.fsum(o * y for o, y in zip(order, row, strict=True)) for order in orders]
            sums = [s + v for s in sums for v in task_values]
        extreme = sum(1 for s in sums if abs(s) >= observed - tolerance)
        p, method, used = extreme / len(sums), "exact", None
    else:
        extreme = _monte_carlo_extreme(c, rows, observed - tolerance, draws, seed)
        p, method, used = (extreme + 1) / (draws + 1), "monte-carlo", draws
    shown = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "[-]"
    curve_text = ", ".join(f"{level} {e.value:.2f}" for level, e in zip(levels, curve, strict=True)
                           if e.value is not None)
    summary = (f"trend across {count} ordered levels ({len(rows)} tasks at every level, unit: task; permutation "
               f"test of a linear contrast, levels permuted within tasks): slope {slope:+.3f} per level, "
               f"{confidence:.0%} CI {shown} (t over tasks), p={format_p(p)} "
               f"({method if used is None else f'{used} draws'})"
               f"; score by level: {curve_text}"
               + (f"; {len(left_out)} task(s) not measured at every level left out" if left_out else ""))
    return TrendResult(list(levels), len(rows), left_out[:20], slope, ci, p, method, used, curve, summary=summary)


def levels_in_order(arms: Sequence[tuple[str, str | None, Hashable]]) -> list[str]:
    """The arm names in verbosity order when the arms are levels of one thing: three or more arms given as
    (name, verbosity, everything else the arm sets), each its own level, the rest alike (else [], and no
    trend test). A spec's arms (runner.results.ordered_levels), a stored benchmark's (a running benchmark's
    Compare tests the trend its finish will) and Inspect logs' task_args all go through here."""
    from corral_core.tools.verbosity import verbosity_rank  # the level scale (lazy: tools is not a metrics need)

    if len(arms) < 3 or len({verbosity for _name, verbosity, _rest in arms}) != len(arms):
        return []
    if len({rest for _name, _verbosity, rest in arms}) != 1:
        return []
    try:
        ranks = {name: verbosity_rank(verbosity or "") for name, verbosity, _rest in arms}
    except ValueError:
        return []
    return sorted(ranks, key=ranks.__getitem__)


def _monte_carlo_extreme(c: Sequence[float], rows: Sequence[Sequence[float]], threshold: float, draws: int,
                         seed: int) -> int:
    """Draws whose |contrast| reaches `threshold`, each draw one random order of the level positions per
    task (numpy's generator seeded with `seed`; earlier versions drew with `random.Random`,
    so a seed's p moved once, within Monte Carlo error; see docs/statistics.md)."""
    import numpy as np

    values = np.array(rows, dtype=np.float64)  # tasks x levels
    positions = np.array(c, dtype=np.float64)
    generator = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_VALUES // values.size)
    buffer = np.empty((min(chunk, draws), *values.shape))  # one buffer refilled per chunk: no fresh pages
    extreme = 0
    for start in range(0, draws, chunk):
        orders = buffer[:min(chunk, draws - start)]
        orders[...] = positions
        generator.permuted(orders, axis=2, out=orders)
        contrasts = np.einsum("dtl,tl->d", orders, values)
        extreme += int((np.abs(contrasts) >= threshold).sum())
    return extreme
