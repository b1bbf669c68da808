"""Paired statistics over independent units (tasks): sign-flip permutation test, cluster bootstrap CI,
Holm's correction and Cohen's d_z. Deterministic for a seed, linear in the number of units; the Monte Carlo
draws run on numpy (imported when sampling).

The input is one difference per unit (arm B's mean minus arm A's mean on that task). Under the null
hypothesis the two arms are exchangeable within a task, so every difference is equally likely to have
either sign: the permutation distribution of the mean difference is the set of all 2^n sign patterns.
"""

from __future__ import annotations

import math
import random
import statistics
import threading
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from .stats import t_quantile

# Up to this many non-zero differences every sign pattern is counted (2^24 ≈ 16.8 million patterns,
# enumerated as two halves of 2^12 partial sums each: milliseconds); above it, Monte Carlo.
EXACT_SIGN_FLIP_MAX = 24
MONTE_CARLO_DRAWS = 10_000
# Above this many non-zero differences the sign-flip distribution of the sum is normal to within far
# less than Monte Carlo's own error (its exact variance is sum(d^2); each |d| <= 1 is a vanishing share
# of it), so p comes from that normal distribution in linear time (method "normal"): 10,000 Monte Carlo
# draws over 100,000 tasks would cost ~25 s of CPU.
MONTE_CARLO_MAX_NONZERO = 5_000
BOOTSTRAP_DRAWS = 2_000
# Above this many tasks the bootstrap interval of a mean has converged to the t interval across
# tasks (the expanded percentile interval below is built to agree with it), so the t interval is
# used and named: this bounds the bootstrap's cost at BOOTSTRAP_DRAWS x BOOTSTRAP_MAX_UNITS draws.
BOOTSTRAP_MAX_UNITS = 2_000
ZERO_DIFFERENCE = 1e-12  # a task-level difference smaller than this is float noise: a tie
_NORMAL = statistics.NormalDist()


@dataclass(frozen=True)
class SignFlipTest:
    """Two-sided paired sign-flip permutation test of a mean difference of zero.

    p = share of sign patterns whose |mean| is at least the observed |mean|. Exact: all 2^k patterns
    of the k non-zero differences (`min_p` = 2 / 2^k). Monte Carlo: (b + 1) / (draws + 1) with b the
    draws at least as extreme (`min_p` = 1 / (draws + 1)). Normal (above MONTE_CARLO_MAX_NONZERO
    non-zero differences): 2 * (1 - Phi(|sum d| / sqrt(sum d^2))), the permutation distribution's own
    mean and variance, with a continuity correction of h when the differences lie on a lattice of
    step h. p never falls below `min_p`.
    """

    mean: float
    p_value: float
    method: str  # "exact" | "monte-carlo" | "normal" | "normal (continuity-corrected)"
    n: int  # units (tasks)
    n_nonzero: int
    draws: int | None  # Monte Carlo draws (None when exact)
    seed: int | None
    min_p: float


def _snap(differences: Sequence[float]) -> list[float]:
    return [0.0 if abs(d) < ZERO_DIFFERENCE else float(d) for d in differences]


def _tolerance(values: Sequence[float]) -> float:
    return 1e-9 * max(1.0, math.fsum(abs(v) for v in values))


def sign_flip_test(differences: Sequence[float], *, draws: int = MONTE_CARLO_DRAWS, seed: int = 0,
                   exact_max: int = EXACT_SIGN_FLIP_MAX,
                   monte_carlo_max: int = MONTE_CARLO_MAX_NONZERO) -> SignFlipTest:
    """Paired sign-flip permutation test (see SignFlipTest); exact up to `exact_max` non-zero
    differences, else `draws` seeded Monte Carlo sign patterns up to `monte_carlo_max`, else normal."""
    return sign_flip_tests([differences], draws=draws, seed=seed, exact_max=exact_max,
                           monte_carlo_max=monte_carlo_max)[0]


def sign_flip_tests(columns: Sequence[Sequence[float]], *, draws: int = MONTE_CARLO_DRAWS, seed: int = 0,
                    exact_max: int = EXACT_SIGN_FLIP_MAX,
                    monte_carlo_max: int = MONTE_CARLO_MAX_NONZERO) -> list[SignFlipTest]:
    """`sign_flip_test` of several outcomes measured on the same tasks (equal-length columns);
    the Monte Carlo ones share their sign patterns, so a second outcome costs little."""
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}.")
    n = len(columns[0]) if columns else 0
    if n == 0 or any(len(column) != n for column in columns):
        raise ValueError("a sign-flip test needs at least one difference per task, the same tasks per outcome.")
    results: list[SignFlipTest | None] = []
    sampled: list[tuple[int, list[float], float]] = []
    for position, column in enumerate(columns):
        values = _snap(column)
        mean = math.fsum(values) / n
        nonzero = [d for d in values if d != 0.0]
        k = len(nonzero)
        threshold = abs(math.fsum(nonzero)) - _tolerance(nonzero)
        if k == 0 or threshold <= 0.0:
            floor = 1.0 if k == 0 else math.ldexp(1.0, 1 - k)  # 2 / 2^k, underflowing to 0 (no overflow)
            results.append(SignFlipTest(mean, 1.0, "exact", n, k, None, None, floor))
        elif k <= exact_max:
            count = _count_at_least(nonzero, threshold)  # patterns with sum >= threshold; the mirror doubles it
            results.append(SignFlipTest(mean, min(1.0, 2 * count / 2**k), "exact", n, k, None, None, 2.0 / 2**k))
        elif k > monte_carlo_max:
            # on a lattice (every |d| a multiple of the smallest, h: one trial per task, or the same trial
            # count everywhere) the sum moves in steps of 2h, so the tail starts half a step lower: the
            # plain normal tail was anti-conservative there by up to 0.005
            step = _lattice_step(nonzero)
            z = max(0.0, threshold - step) / math.sqrt(math.fsum(d * d for d in nonzero))
            min_p = 2.0 ** (1 - k)  # underflows to 0.0 beyond k = 1075: any p is then above it
            p = max(min(1.0, 2.0 * _NORMAL.cdf(-z)), min_p)
            results.append(SignFlipTest(mean, p, "normal" if step == 0.0 else "normal (continuity-corrected)", n,
                                        k, None, None, min_p))
        else:
            results.append(None)
            sampled.append((position, values, threshold))
    if sampled:
        counts = _monte_carlo_extremes([values for _, values, _ in sampled], [t for _, _, t in sampled], draws, seed)
        for (position, values, _), extreme in zip(sampled, counts, strict=True):
            k = sum(1 for v in values if v != 0.0)
            results[position] = SignFlipTest(math.fsum(values) / n, (extreme + 1) / (draws + 1), "monte-carlo", n, k,
                                             draws, seed, 1.0 / (draws + 1))
    return [r for r in results if r is not None]


def _lattice_step(values: Sequence[float]) -> float:
    """h when every |value| is a whole multiple of the smallest |value| h (a lattice), else 0."""
    h = min(abs(v) for v in values)
    for v in values:
        ratio = abs(v) / h
        if abs(ratio - round(ratio)) > 1e-6 * max(1.0, ratio):
            return 0.0
    return h


def _subset_sums(values: Sequence[float]) -> list[float]:
    """Sums of every sign pattern of `values` (2^len entries)."""
    sums = [0.0]
    for v in values:
        sums = [s + v for s in sums] + [s - v for s in sums]
    return sums


def _count_at_least(values: Sequence[float], threshold: float) -> int:
    """How many of the 2^k sign patterns sum to at least `threshold` (meet in the middle)."""
    half = len(values) // 2
    left = _subset_sums(values[:half])
    right = sorted(_subset_sums(values[half:]))
    size = len(right)
    return sum(size - bisect_left(right, threshold - s) for s in left)


_CHUNK = 2048  # Monte Carlo draws per step (bounded memory: chunk x tasks / 8 bytes)
_BLOCK = 8  # Monte Carlo sign flips are summed 8 units at a time from 256-entry tables


def _tables(values: Sequence[float]) -> Any:
    """tables[j, m] = sum of the values of block j (8 values) whose bit is set in the byte m (a short last
    block is padded with zeros, so the bits past the last value change nothing)."""
    import numpy as np

    blocks = np.zeros(((len(values) + _BLOCK - 1) // _BLOCK) * _BLOCK)
    blocks[:len(values)] = values
    bits = (np.arange(256)[:, None] >> np.arange(_BLOCK)) & 1  # 256 x 8: the bits of each byte
    return blocks.reshape(-1, _BLOCK) @ bits.T.astype(np.float64)  # blocks x 256


# The seeded sign patterns of the last few (tasks, seed) shapes, kept across calls: every pair of a sweep's
# arms over the same tasks draws the same patterns (the test's and both intervals': their draws are a prefix of
# one stream), so they are drawn once. A few MB at most (draws x tasks / 8 bytes per shape).
_PATTERNS_KEPT = 4
_patterns: dict[tuple[int, int], tuple[random.Random, Any]] = {}
_patterns_lock = threading.Lock()


def _sign_patterns(n_bytes: int, draws: int, seed: int) -> Any:
    """The first `draws` seeded sign patterns as bytes (draws x n_bytes, read-only): bit i of draw b's random
    integer (Python's `random.Random(seed).getrandbits`, one integer per draw, as before numpy) says whether
    value i keeps its sign, so every seed gives the same patterns it always gave."""
    import numpy as np

    key = (n_bytes, seed)
    with _patterns_lock:
        stream, drawn = _patterns.pop(key, None) or (random.Random(seed), np.zeros((0, n_bytes), dtype=np.uint8))
        if drawn.shape[0] < draws:
            bits = stream.getrandbits
            raw = b"".join([bits(8 * n_bytes).to_bytes(n_bytes, "little") for _ in range(draws - drawn.shape[0])])
            drawn = np.concatenate([drawn, np.frombuffer(raw, dtype=np.uint8).reshape(-1, n_bytes)])
            drawn.flags.writeable = False
        _patterns[key] = (stream, drawn)  # the most recently used last
        while len(_patterns) > _PATTERNS_KEPT:
            del _patterns[next(iter(_patterns))]
    return drawn[:draws]


def _signed_sum_chunks(columns: Sequence[Sequence[float]], draws: int, seed: int) -> Iterator[Any]:
    """Per chunk of `_CHUNK` draws, the signed sums (columns x draws), read from the tables 8 values at a time:
    sum(+v) - sum(-v) = 2 * sum(+v) - sum(v). No matrix product: BLAS threads would spin on a busy machine."""
    import numpy as np

    # a column equal to an earlier one (the success rates of pass/fail scores are the scores) is summed once
    first = [next(i for i in range(k + 1) if _same(columns[i], columns[k])) for k in range(len(columns))]
    tables = {i: _tables(columns[i]).ravel() for i in sorted(set(first))}
    totals = np.array([math.fsum(values) for values in columns])
    n_bytes = (len(columns[0]) + 7) // 8
    offsets = np.arange(n_bytes, dtype=np.intp) * 256  # block j's entry m sits at j * 256 + m of a flat table
    patterns = _sign_patterns(n_bytes, draws, seed)
    for start in range(0, draws, _CHUNK):
        index = patterns[start:start + _CHUNK] + offsets
        kept = {i: np.take(table, index).sum(axis=1) for i, table in tables.items()}
        yield 2.0 * np.stack([kept[i] for i in first]) - totals[:, None]


def _same(a: Sequence[float], b: Sequence[float]) -> bool:
    """Equal values, zeros of the same sign: columns whose signed sums are the same floats."""
    return a is b or (list(a) == list(b) and all(math.copysign(1.0, x) == math.copysign(1.0, y)
                                                 for x, y in zip(a, b, strict=True) if x == 0.0))


def _monte_carlo_extremes(columns: list[list[float]], thresholds: list[float], draws: int, seed: int) -> list[int]:
    """Per column, the draws whose |sum of randomly signed values| reaches its threshold (the sign
    patterns shared by the columns)."""
    import numpy as np

    limits = np.array(thresholds)[:, None]
    extreme = np.zeros(len(columns), dtype=np.int64)
    for sums in _signed_sum_chunks(columns, draws, seed):
        extreme += (np.abs(sums) >= limits).sum(axis=1)
    return [int(e) for e in extreme]


@dataclass(frozen=True)
class BootstrapCI:
    """Task-cluster bootstrap interval of a mean: tasks resampled with replacement."""

    ci: tuple[float, float]
    method: str  # "cluster-bootstrap" | "t" (above BOOTSTRAP_MAX_UNITS tasks)
    draws: int | None
    seed: int | None


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default) of an already sorted sequence."""
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    position = q * (len(sorted_values) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    fraction = position - lower
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * fraction


def expanded_alpha(n: int, confidence: float = 0.95) -> float:
    """The tail share the expanded percentile interval uses (Hesterberg 2015): the plain percentile
    interval of a mean is too narrow for few units (it acts like z and divisor n instead of t and
    n - 1), so its percentiles are taken at Phi(-sqrt(n / (n - 1)) * t_{1-alpha/2, n-1})."""
    alpha = 1.0 - confidence
    t = t_quantile(1.0 - alpha / 2.0, n - 1)
    return statistics.NormalDist().cdf(-math.sqrt(n / (n - 1)) * t)


def bootstrap_mean_ci(values: Sequence[float], *, draws: int = BOOTSTRAP_DRAWS, seed: int = 0,
                      confidence: float = 0.95, max_units: int = BOOTSTRAP_MAX_UNITS) -> BootstrapCI | None:
    """Expanded percentile bootstrap interval of the mean of per-task values (None for < 2 tasks).

    Above `max_units` tasks the t interval across tasks is returned (method "t"): the bootstrap has
    converged to it there, and this keeps the cost bounded.
    """
    return bootstrap_mean_cis([values], draws=draws, seed=seed, confidence=confidence, max_units=max_units)[0]


def bootstrap_mean_cis(columns: Sequence[Sequence[float]], *, draws: int = BOOTSTRAP_DRAWS, seed: int = 0,
                       confidence: float = 0.95, max_units: int = BOOTSTRAP_MAX_UNITS) -> list[BootstrapCI | None]:
    """`bootstrap_mean_ci` of several outcomes on the same tasks, from the same resampled tasks."""
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}.")
    n = len(columns[0]) if columns else 0
    if any(len(column) != n for column in columns):
        raise ValueError("every outcome needs one value per task, for the same tasks.")
    if n < 2:
        return [None for _ in columns]
    data = [[float(v) for v in column] for column in columns]
    means = [math.fsum(column) / n for column in data]
    if n > max_units:
        factor = t_quantile((1.0 + confidence) / 2.0, n - 1) / math.sqrt(n)
        return [BootstrapCI((m - factor * statistics.stdev(c), m + factor * statistics.stdev(c)), "t", None, None)
                for m, c in zip(means, data, strict=True)]
    resampled = _bootstrap_means(data, draws, seed)
    tail = expanded_alpha(n, confidence)
    results: list[BootstrapCI | None] = []
    for mean, out in zip(means, resampled, strict=True):
        out.sort()
        low, high = percentile(out, tail), percentile(out, 1.0 - tail)
        results.append(BootstrapCI((min(low, mean), max(high, mean)), "cluster-bootstrap", draws, seed))
    return results


def _python_stream(seed: int) -> Any:
    """numpy's legacy Mersenne Twister in the exact state of `random.Random(seed)`: the same uniforms."""
    import numpy as np

    state = random.Random(seed).getstate()[1]
    stream = np.random.RandomState()
    stream.set_state(("MT19937", np.array(state[:-1], dtype=np.uint32), state[-1], 0, 0.0))
    return stream


def _bootstrap_means(data: list[list[float]], draws: int, seed: int) -> list[list[float]]:
    """Per column, the mean of each resample of the tasks (one resample shared by every column): task
    int(u * n) for the seed's uniforms u, as the pure-Python loop drew them, each mean an exact `fsum`."""
    import numpy as np

    n = len(data[0])
    stream = _python_stream(seed)
    columns = [np.array(column) for column in data]
    resampled: list[list[float]] = [[] for _ in data]
    rows = max(1, (1 << 20) // n)  # resamples per step: bounded memory
    for start in range(0, draws, rows):
        chosen = (stream.random_sample((min(rows, draws - start), n)) * n).astype(np.intp)
        for column, out in zip(columns, resampled, strict=True):
            out.extend(total / n for total in map(math.fsum, column[chosen].tolist()))
    return resampled


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error control), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def cohens_dz(differences: Sequence[float]) -> float | None:
    """Cohen's d_z: mean of paired differences / their sample sd.

    None for fewer than 2 differences, or when the spread is numerically zero: sd below
    max(1e-12, 1e-9 * the largest |difference|), where the ratio would only measure float noise.
    """
    if len(differences) < 2:
        return None
    values = [float(d) for d in differences]
    sd = statistics.stdev(values)
    if sd <= max(ZERO_DIFFERENCE, 1e-9 * max(abs(v) for v in values)):
        return None
    return (math.fsum(values) / len(values)) / sd


def format_p(p: float | None) -> str:
    """A p-value for people, rounded *up* to two significant digits so the printed value is never
    smaller than the computed one (nor than the smallest p the design allows)."""
    if p is None:
        return "-"
    if p >= 1.0:
        return "1"
    if p <= 0.0:  # a binomial tail below the float range
        return "<1e-300"
    exponent = math.floor(math.log10(p))
    scale = 10.0 ** (exponent - 1)
    rounded = math.ceil(p / scale - 1e-9) * scale
    return f"{rounded:.2g}" if rounded >= 1e-3 else f"{rounded:.1e}"


# --- the interval that agrees with the test: the sign-flip test inverted -------------------------------

# Up to this many tasks the inverted interval counts every sign pattern (meet in the middle); above it the
# same seeded sign patterns as the Monte Carlo test are reused, so at a shift of 0 the interval and the
# test see the same draws.
EXACT_INVERSION_MAX = 16
INVERSION_DRAWS = 2_000
_BISECTIONS = 22  # a bound to within 2 * 2^-22 of a score point


@dataclass(frozen=True)
class SignFlipInterval:
    """The set of mean differences delta that the sign-flip test of (d - delta) does not reject at
    1 - confidence: the interval that agrees with the test by construction (0 is outside it exactly
    when the test rejects, up to Monte Carlo noise above EXACT_INVERSION_MAX tasks).

    `ci` is None with fewer than 2 tasks. With too few tasks for any rejection (2 / 2^n >= 1 - confidence)
    every difference is consistent and the interval is the whole range [-1, 1] (`note` says so). A
    zero-width interval only happens when every trial of each arm on each task scored the same; `note`
    says so too.
    """

    ci: tuple[float, float] | None
    confidence: float
    method: str  # "sign-flip inversion (exact)" | "(monte-carlo)" | "(normal limit)"
    note: str | None = None


def _signed_sums(columns: Sequence[Sequence[float]], draws: int, seed: int) -> list[list[float]]:
    """Per column, the signed sum of each Monte Carlo draw: the same patterns as `sign_flip_tests`."""
    import numpy as np

    return [list(row) for row in np.hstack(list(_signed_sum_chunks(columns, draws, seed))).tolist()]


def _exact_p_at(values: Sequence[float], delta: float) -> float:
    shifted = [v - delta for v in values]
    threshold = abs(math.fsum(shifted)) - _tolerance(shifted)
    if threshold <= 0.0:
        return 1.0
    return cast("float", min(1.0, 2 * _count_at_least(shifted, threshold) / 2 ** len(shifted)))


def sign_flip_interval(differences: Sequence[float], *, confidence: float = 0.95, draws: int = INVERSION_DRAWS,
                       seed: int = 0, exact_max: int = EXACT_INVERSION_MAX,
                       monte_carlo_max: int = MONTE_CARLO_MAX_NONZERO,
                       bounds: tuple[float, float] = (-1.0, 1.0), test_p: float | None = None) -> SignFlipInterval:
    """Invert the paired sign-flip test (see SignFlipInterval). `bounds` is the range a difference can
    take (scores in [0, 1]: [-1, 1]); the interval never reaches past it. `test_p`, the test's own p
    of a zero difference, settles the Monte Carlo and normal-limit intervals where they and the test
    disagree about 0 by sampling noise: the bound moves to 0 and the note says so.

    Every sign pattern is at least as extreme as the observed one over an interval of shifts that holds
    the mean (there the observed statistic is 0), so p(delta) falls monotonically on each side of the
    mean: each bound is found by bisection (exact) or read from the patterns' own intervals (Monte Carlo).
    """
    values = _snap(differences)
    n = len(values)
    alpha = 1.0 - confidence
    if n < 2:
        return SignFlipInterval(None, confidence, "sign-flip inversion (exact)", "one task: no interval over tasks")
    mean = math.fsum(values) / n
    if n < 64 and 2.0 / 2**n >= alpha:
        return SignFlipInterval(bounds, confidence, "sign-flip inversion (exact)",
                                f"the whole range: {n} tasks cannot reject any difference at {alpha:.2g}")
    if min(values) == max(values):
        return SignFlipInterval((mean, mean), confidence, "sign-flip inversion (exact)",
                                "every task's difference is the same")
    if n > monte_carlo_max:  # the permutation distribution's normal limit, solved in closed form
        z2 = _NORMAL.inv_cdf(1.0 - alpha / 2.0) ** 2
        sd = statistics.stdev(values)
        half = sd * math.sqrt(z2 * (n - 1) / (n * (n - z2)))
        return _agree(SignFlipInterval((max(bounds[0], mean - half), min(bounds[1], mean + half)), confidence,
                                       "sign-flip inversion (normal limit)"), test_p)
    if n <= exact_max:
        low = _bisect_bound(values, mean, min(values), alpha)
        high = _bisect_bound(values, mean, max(values), alpha)
        # a bound on a jump of p (a shift where a difference of 0 turns into a non-zero one) is closed:
        # bisection stops a hair inside it, so the test's own p at 0 places 0 exactly
        return _agree(SignFlipInterval((max(bounds[0], low), min(bounds[1], high)), confidence,
                                       "sign-flip inversion (exact)"), test_p, note=None)
    low, high = _monte_carlo_bounds(values, mean, alpha, draws, seed)
    return _agree(SignFlipInterval((max(bounds[0], low), min(bounds[1], high)), confidence,
                                   "sign-flip inversion (monte-carlo)"), test_p)


def _agree(interval: SignFlipInterval, test_p: float | None,
           note: str | None = "a bound moved to 0 to agree with the test's own p") -> SignFlipInterval:
    """Move the bound nearest 0 onto 0 when the interval and the test disagree about 0 (sampling noise)."""
    if test_p is None or interval.ci is None:
        return interval
    low, high = interval.ci
    rejected = test_p < 1.0 - interval.confidence
    if rejected == (low <= 0.0 <= high):
        moved = (0.0, high) if (low > 0.0 or (rejected and abs(low) < abs(high))) else (low, 0.0)
        return replace(interval, ci=moved, note=note)
    return interval


def _bisect_bound(values: Sequence[float], mean: float, extreme: float, alpha: float) -> float:
    """The farthest shift from `mean` towards `extreme` that the exact test does not reject (p >= alpha).
    Just past the most extreme difference only the two all-same-sign patterns remain (p = 2 / 2^n < alpha)."""
    inside, outside = mean, extreme
    if _exact_p_at(values, extreme) >= alpha:
        return extreme
    for _ in range(_BISECTIONS):
        middle = (inside + outside) / 2.0
        if _exact_p_at(values, middle) < alpha:
            outside = middle
        else:
            inside = middle
    return inside


def _monte_carlo_bounds(values: list[float], mean: float, alpha: float, draws: int, seed: int
                        ) -> tuple[float, float]:
    """Bounds from the test's own Monte Carlo patterns: pattern b (signed sum a, sum of signs s) is at
    least as extreme at shift delta when (a - delta*s)^2 >= (S - n*delta)^2, an interval [r1, r2] of delta
    around the mean; p(delta) = (1 + patterns whose interval holds delta) / (draws + 1)."""
    import numpy as np

    n = len(values)
    total = math.fsum(values)
    signed, signs = (np.array(row) for row in np.hstack(list(_signed_sum_chunks([values, [1.0] * n], draws, seed))))
    qa = signs * signs - n * n
    always = int((qa >= 0.0).sum())  # all signs alike: as extreme as the observed pattern at every shift
    a, s, qa = signed[qa < 0.0], signs[qa < 0.0], qa[qa < 0.0]
    qb = -2.0 * (a * s - total * n)
    qc = a * a - total * total
    root = np.sqrt(np.maximum(0.0, qb * qb - 4.0 * qa * qc))
    r1, r2 = (-qb + root) / (2.0 * qa), (-qb - root) / (2.0 * qa)
    lows = np.minimum(np.minimum(r1, r2), mean).tolist()
    highs = np.maximum(np.maximum(r1, r2), mean).tolist()
    # rejected where 1 + count < alpha * (draws + 1): the bound is where count falls to `kept` - 1
    kept = max(0, math.ceil(alpha * (draws + 1) - 1.0 - 1e-9) - always)
    if kept == 0 or kept > len(highs):
        return min(values), max(values)
    highs.sort(reverse=True)
    lows.sort()
    return lows[kept - 1], highs[kept - 1]
