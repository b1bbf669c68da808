"""Stdlib-only statistics: pass@k / pass^k, t and Wilson intervals, exact McNemar.

Everything here works on plain numbers, so each piece can be checked against a textbook value.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

_NORMAL = statistics.NormalDist()
# Beyond this many degrees of freedom the t and normal quantiles agree to ~1e-7.
_NORMAL_DF = 1e7


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval over `n` observations.

    `value` is None when n == 0; `ci` is None when it cannot be estimated (n < 2 for a mean,
    n == 0 for a proportion). `method` names how the interval was computed (see docs/benchmarks.md,
    "What the metrics mean"); `n_tasks` is the number of tasks (clusters) behind it, when known.
    """

    value: float | None
    ci: tuple[float, float] | None
    n: int
    method: str = ""
    n_tasks: int | None = None


@dataclass(frozen=True)
class PassK:
    """pass@k and pass^k for one k, averaged over the tasks that have at least k trials.

    `tasks_excluded` lists the tasks left out because they have fewer than k trials.
    """

    k: int
    pass_at_k: float | None
    pass_hat_k: float | None
    n_tasks: int  # tasks that entered the mean
    n_tasks_excluded: int  # tasks with fewer than k trials
    tasks_excluded: tuple[str, ...] = ()


def _check_counts(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must lie between 0 and the trial count n={n}.")
    if k < 1 or k > n:
        raise ValueError(f"k={k} must lie between 1 and the trial count n={n}.")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): chance that k of n trials, drawn without replacement,
    include at least one success: 1 - C(n-c, k)/C(n, k), computed as a stable product."""
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k (tau-bench reliability): chance that k of n trials, drawn without replacement,
    all succeed: C(c, k)/C(n, k)."""
    _check_counts(n, c, k)
    if c < k:
        return 0.0
    product = 1.0
    for i in range(k):
        product *= (c - i) / (n - i)
    return product


def pass_k_over_tasks(task_counts: Mapping[str, tuple[int, int]], k: int) -> PassK:
    """Mean over tasks of pass@k and pass^k from {task: (n trials, c successes)}.

    Tasks with fewer than k trials are left out of the mean and counted in n_tasks_excluded.
    """
    if k < 1:
        raise ValueError(f"k={k} must be at least 1.")
    usable = [(n, c) for n, c in task_counts.values() if n >= k]
    excluded = tuple(sorted(task for task, (n, _c) in task_counts.items() if n < k))
    if not usable:
        return PassK(k, None, None, 0, len(excluded), excluded)
    at_k = math.fsum(pass_at_k(n, c, k) for n, c in usable) / len(usable)
    hat_k = math.fsum(pass_hat_k(n, c, k) for n, c in usable) / len(usable)
    return PassK(k, at_k, hat_k, len(usable), len(excluded), excluded)


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) by Lentz's continued fraction (Numerical Recipes 6.4), using the symmetry
    I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges slowly."""
    if a <= 0 or b <= 0:
        raise ValueError(f"incomplete beta needs a > 0 and b > 0, got a={a}, b={b}.")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            return h
    return h  # pragma: no cover - converges long before for every df we meet


def t_cdf(t: float, df: float) -> float:
    """Student's t cumulative distribution function with df degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}.")
    if df > _NORMAL_DF:
        return _NORMAL.cdf(t)
    tail = 0.5 * regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """Inverse of t_cdf (bisection to ~1e-12): e.g. t_quantile(0.975, 4) = 2.776."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"a quantile needs 0 < p < 1, got {p}.")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}.")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if df > _NORMAL_DF:
        return _NORMAL.inv_cdf(p)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


MDE_FORMULA = "t approximation: (t_{1-a/2, n-1} + t_{power, n-1}) * sd / sqrt(n)"


def paired_mde(sd: float, n: int, alpha: float, power: float = 0.8) -> float:
    """The smallest true mean difference a two-sided paired test at level `alpha` over `n` units (tasks)
    detects with `power`, when the units' differences spread by `sd`: Miller's formula ("Adding Error Bars
    to Evals", 2024) with t quantiles on n - 1 degrees of freedom (MDE_FORMULA). Its power for the paired
    t test is 79-80% at 80% (checked against scipy's noncentral t in the tests); for the sign-flip test, by
    simulation in the tests. `alpha` is the level the pair is actually tested at (after a correction)."""
    if n < 2:
        raise ValueError(f"an MDE needs at least 2 units, got {n}.")
    return (t_quantile(1.0 - alpha / 2.0, n - 1) + t_quantile(power, n - 1)) * sd / math.sqrt(n)


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}.")


UNIT = (0.0, 1.0)  # the range of scores and of completion fractions


def mean_ci(values: Sequence[float], confidence: float = 0.95,
            bounds: tuple[float, float] | None = None) -> Estimate:
    """Sample mean with a two-sided t interval (sample sd, df = n - 1); CI None when n < 2.

    With `bounds`, the interval is clipped to the range the values can take (scores live in
    [0, 1]: an interval reaching past it would claim impossible values).
    """
    _check_confidence(confidence)
    n = len(values)
    if n == 0:
        return Estimate(None, None, 0)
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(mean, None, 1)
    half = t_quantile((1.0 + confidence) / 2.0, n - 1) * statistics.stdev(values) / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Estimate(mean, (low, high), n)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for a proportion: stays inside [0, 1] and is not degenerate at
    0% or 100%, unlike a t interval on 0/1 values. None when n == 0."""
    _check_confidence(confidence)
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} must lie between 0 and n={n}.")
    if n == 0:
        return None
    return wilson_from_rate(successes / n, n, confidence)


def wilson_from_rate(p: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson interval of a rate `p` observed over `n` observations; n may be an effective
    (design-effect adjusted) sample size, so it need not be whole."""
    _check_confidence(confidence)
    if n <= 0:
        raise ValueError(f"a Wilson interval needs n > 0, got {n}.")
    z = _NORMAL.inv_cdf((1.0 + confidence) / 2.0)
    denominator = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(max(0.0, p * (1.0 - p)) / n + z * z / (4 * n * n)) / denominator
    # At 0% or 100% the matching bound is exactly 0 or 1; say so instead of rounding noise.
    low = 0.0 if p <= 0.0 else max(0.0, center - half)
    high = 1.0 if p >= 1.0 else min(1.0, center + half)
    return (low, high)


def proportion(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """successes / n with its Wilson interval."""
    ci = wilson_interval(successes, n, confidence)
    return Estimate(successes / n if n else None, ci, n)


# Up to this many discordant pairs McNemar sums exact integers; above, the same exact binomial tail comes
# from the regularised incomplete beta function in floating point (relative error ~1e-12), so 100,000
# trials cost microseconds instead of big-integer sums.
EXACT_MCNEMAR_INTEGER_MAX = 1_000


def binomial_tail_half(n: int, k: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2): exact integers up to EXACT_MCNEMAR_INTEGER_MAX trials, else
    I_{1/2}(n - k, k + 1) (the same tail through the regularised incomplete beta function)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= EXACT_MCNEMAR_INTEGER_MAX:
        term = total = 1  # C(n, 0); C(n, i + 1) = C(n, i) * (n - i) / (i + 1), exactly, in integers
        for i in range(k):
            term = term * (n - i) // (i + 1)
            total += term
        return cast("float", total / 2**n)  # exact integers; one rounding
    return regularized_incomplete_beta(n - k, k + 1, 0.5)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar test: two-sided binomial test of b vs c discordant pairs at p = 1/2.
    p = min(1, 2 * P(X <= min(b, c))), X ~ Binomial(b + c, 1/2); 1.0 when b + c == 0."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}.")
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * binomial_tail_half(n, min(b, c)))


class StreamSum:
    """`math.fsum` over a stream without keeping it: values are held in chunks, and each full chunk is
    replaced by the few floats whose exact sum is the exact sum so far, so `total()` is exactly
    `math.fsum` of every value added, in memory that does not grow with the stream."""

    __slots__ = ("_chunk", "_compacted", "_limit", "_partials", "_special")
    CHUNK = 4096

    def __init__(self) -> None:
        self._partials: list[float] = []  # exact: their sum is the exact sum of the compacted finite values
        self._chunk: list[float] = []
        self._special: list[float] = []  # inf, -inf, nan: one of each kind met decides fsum's answer
        self._compacted = 0
        self._limit = self.CHUNK

    @property
    def count(self) -> int:
        return self._compacted + len(self._chunk)

    def add(self, value: float) -> None:
        chunk = self._chunk
        chunk.append(value)
        if len(chunk) >= self._limit:
            self._compact()

    def _compact(self) -> None:
        chunk = self._chunk
        try:
            plain = math.isfinite(math.fsum(chunk))
        except (OverflowError, ValueError):  # an overflow, or inf and -inf
            plain = False
        if not plain:  # set an inf or nan apart
            for value in chunk:
                if not math.isfinite(value) and not any(_same_special(value, seen) for seen in self._special):
                    self._special.append(value)
            chunk = [value for value in chunk if math.isfinite(value)]
        values = self._partials + chunk
        rest: list[float] = []
        try:
            while (part := math.fsum(values + [-p for p in rest])) != 0.0:  # the exact remainder, 53 bits a step
                rest.append(part)
        except OverflowError:  # past the float range: keep every value, so total() fails as fsum would
            self._limit = 2 * len(self._chunk)
            return
        self._compacted += len(self._chunk)
        self._partials = rest
        self._chunk = []

    def total(self) -> float:
        return math.fsum(self._partials + self._chunk + self._special)


def _same_special(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b
