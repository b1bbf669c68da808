"""Dose-response across ordered arms (verbosity levels): one test of "more helps", not L(L-1)/2 pairs.

Over the tasks measured at every level (complete blocks; the others are listed), each task's mean
scores y_1..y_L at the ordered levels give a slope b_t = sum_j c_j y_j / sum_j c_j^2 with the centred
level positions c_j = j - (L - 1) / 2. The test is a permutation test of the monotone contrast
T = sum_t sum_j c_j y_tj: under "the level changes nothing" the levels are exchangeable within a task,
so the L! orders of each task's scores are equally likely (every order counted when that is at most
EXACT_MAX patterns, else seeded Monte Carlo draws; two-sided). Its null is that exchangeability, not
"no trend": level effects with no linear part but unequal levels are rejected somewhat more often
than alpha (docs/statistics.md gives the simulated level). The slope (score per level step) is the
mean of the task slopes; its interval inverts the same test with the same orders (every delta for
which the scores less a trend of delta per level pass it), so 0 lies outside the interval exactly
when p < 0.05. The curve is each level's mean over the same tasks, t interval over tasks.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .intervals import task_mean_interval
from .paired import format_p
from .stats import Estimate

EXACT_MAX = 50_000  # (L!)^tasks orders counted exactly up to this many
TREND_DRAWS = 5_000
_CHUNK_VALUES = 1 << 20  # Monte Carlo draws are made in chunks of about this many level positions


@dataclass(frozen=True)
class TrendResult:
    levels: list[str]  # the arms, in level order
    n_tasks: int  # tasks measured at every level
    tasks_left_out: list[str]  # measured at some levels only (first 20)
    slope: float | None  # mean change of score per level step
    slope_ci: tuple[float, float] | None  # 95%, the permutation test inverted (0 outside it exactly when p < 0.05)
    p_value: float | None  # permutation test of the monotone contrast, two-sided
    p_method: str  # "exact" | "monte-carlo"
    draws: int | None
    curve: list[Estimate]  # per level: mean over the complete tasks, t interval over tasks
    unit: str = "task"
    test: str = "permutation test of a monotone (linear) contrast over levels, levels permuted within each task"
    null: str = "the levels are exchangeable within each task (no level effect at all, not only no trend)"
    slope_ci_method: str = "the permutation test inverted: every slope whose removal it would not reject"
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
    contrast = math.fsum(math.fsum(cj * y for cj, y in zip(c, row, strict=True)) for row in rows)
    null = _null_contrasts(c, rows, draws, seed)
    p = null.p_at(0.0, contrast)
    method, used = ("exact", None) if null.exact else ("monte-carlo", draws)
    ci, ci_note = null.interval(contrast, slope, p, 1.0 - confidence, _slope_bound(c))
    shown = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "[-]"
    curve_text = ", ".join(f"{level} {e.value:.2f}" for level, e in zip(levels, curve, strict=True)
                           if e.value is not None)
    summary = (f"trend across {count} ordered levels ({len(rows)} tasks at every level, unit: task; null: the "
               f"levels are exchangeable within each task; permutation test of a linear contrast, levels permuted "
               f"within tasks): slope {slope:+.3f} per level, {confidence:.0%} CI {shown} (the same test inverted"
               f"{f'; {ci_note}' if ci_note else ''}), p={format_p(p)} "
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


def _slope_bound(c: Sequence[float]) -> float:
    """The largest |slope| a task's scores in [0, 1] can have: 0 at the lower positions, 1 at the upper."""
    return math.fsum(x for x in c if x > 0) / math.fsum(x * x for x in c)


@dataclass(frozen=True)
class _NullContrasts:
    """The permutation distribution of the contrast, kept as two parts per order (or draw): with the
    observed scores shifted by a trend of delta per level (y_tj - delta c_j), an order pi gives
    A - delta * B, A = sum c_pi(j) y_tj and B = sum c_pi(j) c_j. So one set of orders gives p at every
    delta: the interval is the test inverted with the very orders that gave its p."""

    a: Any  # numpy arrays, one entry per order or draw
    b: Any
    n_css: float  # B of the observed (identity) order
    exact: bool

    def p_at(self, delta: float, contrast: float) -> float:
        import numpy as np

        observed = abs(contrast - delta * self.n_css)
        tolerance = 1e-9 * max(1.0, abs(contrast), abs(delta * self.n_css))
        extreme = int((np.abs(self.a - delta * self.b) >= observed - tolerance).sum())
        return extreme / len(self.a) if self.exact else (extreme + 1) / (len(self.a) + 1)

    def interval(self, contrast: float, slope: float, p: float, alpha: float, bound: float
                 ) -> tuple[tuple[float, float] | None, str | None]:
        """Every slope delta whose shifted test the orders do not reject at alpha (bisection from the
        estimate, where p is 1, outwards; clipped to the slopes scores in [0, 1] can take), its bound
        nearest 0 placed on 0 should the bisection and the test's own p disagree about 0."""
        bounds = []
        for outward in (-1.0, 1.0):
            far = slope + outward * 2.0 * bound
            if self.p_at(far, contrast) >= alpha:
                bounds.append(outward * bound)
                continue
            inside = slope
            for _ in range(50):
                middle = (inside + far) / 2.0
                if self.p_at(middle, contrast) >= alpha:
                    inside = middle
                else:
                    far = middle
            bounds.append(max(-bound, min(bound, inside)))
        low, high = (0.0 if abs(x) < 1e-9 else x for x in bounds)  # a bound on 0, not a float's hair off it
        note = None
        if low <= -bound and high >= bound:
            note = "the whole range: too few tasks to reject any slope"
        if (p < alpha) == (low <= 0.0 <= high):  # a non-monotone p between the estimate and 0
            low, high = (0.0, high) if low > 0.0 or (p < alpha and abs(low) < abs(high)) else (low, 0.0)
            note = "a bound moved to 0 to agree with the test's own p"
        return (low, high), note


def _null_contrasts(c: Sequence[float], rows: Sequence[Sequence[float]], draws: int, seed: int) -> _NullContrasts:
    """Every order of each task's level positions when (L!)^tasks <= EXACT_MAX, else `draws` seeded
    random orders per task (numpy's generator seeded with `seed`; earlier versions drew with
    `random.Random`, so a seed's p moved once, within Monte Carlo error; see docs/statistics.md)."""
    import numpy as np

    n_css = len(rows) * math.fsum(x * x for x in c)
    if math.factorial(len(c)) ** len(rows) <= EXACT_MAX:
        every_order = list(itertools.permutations(c))
        a_sums, b_sums = [0.0], [0.0]
        b_values = [math.fsum(o * x for o, x in zip(order, c, strict=True)) for order in every_order]
        for row in rows:
            a_values = [math.fsum(o * y for o, y in zip(order, row, strict=True)) for order in every_order]
            a_sums = [s + v for s in a_sums for v in a_values]
            b_sums = [s + v for s in b_sums for v in b_values]
        return _NullContrasts(np.array(a_sums), np.array(b_sums), n_css, True)
    values = np.array(rows, dtype=np.float64)  # tasks x levels
    positions = np.array(c, dtype=np.float64)
    generator = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_VALUES // values.size)
    buffer = np.empty((min(chunk, draws), *values.shape))  # one buffer refilled per chunk: no fresh pages
    a_parts, b_parts = [], []
    for start in range(0, draws, chunk):
        orders = buffer[:min(chunk, draws - start)]
        orders[...] = positions
        generator.permuted(orders, axis=2, out=orders)
        a_parts.append(np.einsum("dtl,tl->d", orders, values))
        b_parts.append(np.einsum("dtl,l->d", orders, positions))
    return _NullContrasts(np.concatenate(a_parts), np.concatenate(b_parts), n_css, False)
