"""Paired comparison of arms at the unit that is independent: the task.

Every pair of arms is compared on the tasks both ran. Each task contributes one difference per
outcome: arm B's mean minus arm A's mean over that task's analysed trials (a chain contributes its
mean workflow score and end-to-end success rate over episodes). Errored and timed-out trials whose
fault is outside the agent are *missing*, not failures: they enter no mean (a sensitivity line counts
them as failures). Over the task differences:

- primary, score: a paired sign-flip permutation test (exact up to 24 non-zero differences, else
  10,000 seeded Monte Carlo draws, above 5,000 the permutation distribution's normal limit), and the
  95% interval that inverts the same test (unadjusted for multiplicity): every difference the test
  would not reject. It excludes 0 exactly when the test's p is below 0.05;
- secondary, success rate: the same test and interval on per-task success rates;
- secondary, trial level: exact McNemar on trials paired by (task, trial index), which treats the
  trials of one task as independent and so overstates the evidence; it is labelled as such.

p-values of each outcome are Holm-adjusted over every pair of arms; the verdict follows the adjusted
score p at `alpha`, except that it is withheld (with the reason) when the design cannot reach `alpha`
(fewer than 6 tasks differ at 0.05) or when the arms' shares of errors outside the agent differ by
more than ERROR_GAP. Effect sizes: the mean difference with its interval, Cohen's d_z (never beside a
p forced to 1), and the minimum detectable effect (80% power) of the design at the level each pair is
actually tested at (alpha / pairs, Holm's first step), by stats.paired_mde; none where no verdict is
possible or the differences do not spread.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .arm import FAILED, SUCCEEDED, ArmTally, UnitTally
from .chain import ChainDef
from .paired import (
    ZERO_DIFFERENCE,
    SignFlipInterval,
    SignFlipTest,
    cohens_dz,
    format_p,
    holm,
    sign_flip_interval,
    sign_flip_tests,
)
from .records import TrialResult
from .stats import mcnemar_exact, paired_mde, t_quantile

ALPHA = 0.05
POWER = 0.8
# A verdict is withheld when the two arms' shares of trials lost to errors outside the agent differ by
# more than this (over the tasks both arms attempted): missing data that one-sided could decide it.
ERROR_GAP = 0.10
SECONDARY_NOTE = "secondary, trial level: treats the trials of a task as independent, so it overstates the evidence"
UNPAIRED_LISTED = 20  # unpaired task ids kept per arm (their count is always exact)
FOREST_TASKS = 12  # per-task differences a forest plot shows (the largest in size; the rest are counted)


def tasks_needed(alpha: float = ALPHA) -> int:
    """The fewest differing tasks whose exact sign-flip test can reach p < alpha (6 at 0.05)."""
    k = 1
    while 2.0 / 2**k >= alpha:
        k += 1
    return k


@dataclass(frozen=True)
class TaskLevelResult:
    """One outcome compared over paired tasks: differences are B minus A, one per task."""

    outcome: str  # "score" | "success_rate"
    mean_a: float | None  # mean over the paired tasks of A's per-task means
    mean_b: float | None
    mean_diff: float | None
    ci: tuple[float, float] | None  # 95%, unadjusted: the sign-flip test inverted; None with fewer than 2 tasks
    ci_method: str | None  # "sign-flip inversion (exact)" | "(monte-carlo)" | "(normal limit)"
    ci_draws: int | None
    p_value: float | None  # paired sign-flip permutation test
    p_method: str | None  # "exact" | "monte-carlo" | "normal" (above 5,000 non-zero differences)
    p_draws: int | None
    p_min: float | None  # the smallest p this design can produce (2 / 2^differing tasks when exact)
    p_adjusted: float | None  # Holm over every pair of arms, this outcome
    d_z: float | None  # Cohen's d_z of the per-task differences
    ci_note: str | None = None  # e.g. "every task's difference is the same", "the whole range"
    n_differing: int = 0  # tasks whose difference is not zero
    mde: float | None = None  # minimum detectable effect, 80% power, at the level the pair is tested at
    mde_note: str | None = None  # how the MDE was computed, or why there is none
    sd_diff: float | None = None  # sd of the task differences the MDE is sized by (the variance floor applied)


@dataclass(frozen=True)
class McNemarResult:
    """Secondary, trial level: trials paired by (task, trial index). b = pairs only A solved,
    c = pairs only B solved."""

    n_pairs: int
    b: int
    c: int
    p_value: float  # exact two-sided binomial test of b vs c
    odds_ratio: float  # c / b; 0.5 added to both when either is 0; > 1 favours B
    note: str = SECONDARY_NOTE


@dataclass(frozen=True)
class ErrorsApart:
    """Errored / timed-out trials whose fault is outside the agent, over the tasks both arms attempted."""

    missing_a: int
    missing_b: int
    attempted_a: int  # analysed + missing trials on those tasks
    attempted_b: int
    faults_a: dict[str, int]  # every such trial of the arm, by fault
    faults_b: dict[str, int]
    withheld: str | None  # why the verdict is withheld, when the shares differ by more than ERROR_GAP


@dataclass(frozen=True)
class Sensitivity:
    """The primary score comparison again with the missing trials counted as failures (score 0)."""

    n_tasks: int
    mean_diff: float
    p_value: float  # sign-flip, unadjusted
    p_method: str


@dataclass(frozen=True)
class ErrorExtreme:
    """The primary score test with every errored trial outside the agent given an extreme score: one arm's
    as passes (1), the other's as failures (0)."""

    passes: str  # the arm whose errored trials count as passes
    fails: str  # the arm whose errored trials count as failures
    n_tasks: int
    mean_diff: float  # B minus A over the tasks both attempted
    p_value: float  # sign-flip, unadjusted
    p_adjusted: float | None = None  # Holm over every pair of arms, at this extreme


@dataclass(frozen=True)
class Robustness:
    """Whether the verdict survives errors that are not random: it is recomputed at both extremes (each
    arm's errored trials as passes and the other's as failures) and holds when both give it too."""

    against_b: ErrorExtreme  # A's errored trials as passes, B's as failures
    for_b: ErrorExtreme  # A's as failures, B's as passes
    holds: bool | None = None  # None until the verdict is known (compare_tallies)


@dataclass(frozen=True)
class TaskSpread:
    """How the per-task score differences spread: the heterogeneity behind the mean."""

    wins_b: int  # tasks where B's mean score is higher
    ties: int
    wins_a: int
    sd_diff: float | None  # sd of the per-task differences (task x arm spread)
    correlation: float | None  # Pearson correlation of A's and B's task means over paired tasks
    unpaired_a: list[str]  # tasks only A has analysed trials for (first UNPAIRED_LISTED)
    unpaired_b: list[str]


@dataclass(frozen=True)
class Equivalence:
    """TOST against a margin: equivalent when the 90% (1 - 2 alpha) inverted interval lies inside it."""

    margin: float
    ci: tuple[float, float] | None
    equivalent: bool


@dataclass(frozen=True)
class PairedComparison:
    """Arm B against arm A over the tasks both ran (see the module docstring)."""

    arm_a: str
    arm_b: str
    unit: str  # "task": the unit of analysis
    n_tasks: int  # paired tasks behind every task-level figure
    n_unpaired_a: int  # tasks only A has analysed trials for
    n_unpaired_b: int
    score: TaskLevelResult  # primary
    success: TaskLevelResult  # secondary
    mcnemar: McNemarResult  # secondary, trial level
    alpha: float
    seed: int
    verdict: str
    summary: str
    test: str = "paired sign-flip permutation test over tasks"
    correction: str = "Holm over every pair of arms"
    n_pairs: int = 1  # the family Holm adjusts over
    errors: ErrorsApart | None = None
    sensitivity: Sensitivity | None = None  # None when no trial was left out as missing
    spread: TaskSpread | None = None
    equivalence: Equivalence | None = None
    robustness: Robustness | None = None  # None when no trial of the paired tasks was left out as missing


def _floored_sd(n: int, variance: float | None, floor_variance: float) -> float | None:
    """The sd of the n task differences (their `variance`) floored as for the arms' intervals."""
    if n < 2 or variance is None:
        return None
    return math.sqrt(max(variance, floor_variance))


def _with_mde(result: TaskLevelResult, n: int, alpha: float, pairs: int, can_decide: bool) -> TaskLevelResult:
    """The MDE at the level the family actually tests each pair at: alpha / pairs, Holm's first step (the
    strictest of its steps, so it holds for every pair of the family), by paired_mde. None, with the
    reason, where no verdict is possible or where the differences do not spread (an MDE of 0 would claim
    any effect is detectable)."""
    if not can_decide or result.mean_diff is None:
        return replace(result, mde=None, mde_note="no verdict possible")
    if result.sd_diff is None or result.sd_diff <= ZERO_DIFFERENCE:
        return replace(result, mde=None, mde_note="every task's difference is the same: no spread to size it by")
    level = alpha / pairs
    mde = paired_mde(result.sd_diff, n, level, POWER)
    where = f"at {alpha:g}/{pairs}, Holm's first step" if pairs > 1 else f"at {alpha:g}"
    return replace(result, mde=mde, mde_note=f"{POWER:.0%} power {where}; t approximation over {n} tasks")


def _no_spread(unit: UnitTally) -> bool:
    """Every trial of the unit scored the same (and so succeeded alike)."""
    sums = unit.sums
    return sums.c in (0, sums.n) and abs(sums.score_sq - sums.score_sum * sums.score_sum / sums.n) <= 1e-12 * sums.n


def _bernoulli_floor(units: list[UnitTally]) -> float:
    """m(1 - m) * mean(1 / trials): the least a task mean of pass/fail trials at rate m spreads by."""
    if not units:
        return 0.0
    m = sum(u.mean_score for u in units) / len(units)
    return max(0.0, m * (1.0 - m)) * sum(1.0 / u.n for u in units) / len(units)


def _never_zero_width(interval: SignFlipInterval, test: SignFlipTest, floor: float, identical: bool,
                      alpha: float) -> SignFlipInterval:
    """Every task's difference alike gives the test nothing to spread over: the interval would have no
    width. That is the truth only when every trial of each arm scored the same on each task (said so);
    otherwise it gets the width of the variance floor (a t interval over tasks), never crossing 0 when
    the test rejects 0."""
    if interval.ci is None or interval.ci[0] != interval.ci[1]:
        return interval
    if identical or floor <= 0.0:
        return replace(interval, note="no variation: every trial of each arm scored the same on each task")
    n = test.n
    half = t_quantile(1.0 - alpha / 2.0, n - 1) * math.sqrt(floor / n)
    low, high = max(-1.0, test.mean - half), min(1.0, test.mean + half)
    if test.p_value < alpha:
        low, high = (max(low, 0.0), high) if test.mean > 0 else (low, min(high, 0.0))
    return replace(interval, ci=(low, high), method="t over tasks, variance floor",
                   note="every task's difference is the same: width from the variance floor")


def _task_level(outcomes: list[tuple[str, list[float], list[float]]], seed: int, floor: float,
                alpha: float, identical: bool = False) -> list[TaskLevelResult]:
    """Each outcome's paired analysis; the outcomes share sign patterns."""
    n = len(outcomes[0][1])
    if n == 0:
        return [TaskLevelResult(name, None, None, None, None, None, None, None, None, None, None, None, None)
                for name, _, _ in outcomes]
    columns = [[y - x for x, y in zip(a, b, strict=True)] for _, a, b in outcomes]
    tests = sign_flip_tests(columns, seed=seed)
    intervals: list[SignFlipInterval] = []
    for k, (diffs, test) in enumerate(zip(columns, tests, strict=True)):
        # pass/fail scores: the success rates are the scores (equal lists; the interval snaps zeros alike)
        if k and diffs == columns[0] and test == tests[0]:
            intervals.append(intervals[0])
            continue
        intervals.append(_never_zero_width(sign_flip_interval(diffs, seed=seed, confidence=1.0 - alpha,
                                                              test_p=test.p_value), test, floor, identical, alpha))
    moments: list[tuple[float | None, float | None]] = []  # per column: d_z, the variance of the differences
    for k, diffs in enumerate(columns):
        if k and diffs == columns[0]:
            moments.append(moments[0])
            continue
        moments.append((cohens_dz(diffs), statistics.variance(diffs) if n >= 2 else None))
    return [_result(name, a, b, test, interval, floor, alpha, d_z, variance)
            for (name, a, b), test, interval, (d_z, variance) in zip(outcomes, tests, intervals, moments, strict=True)]


def _result(outcome: str, a: list[float], b: list[float], test: SignFlipTest, interval: SignFlipInterval,
            floor: float, alpha: float, d_z: float | None, variance: float | None) -> TaskLevelResult:
    n = len(a)
    draws = None if interval.method.endswith("(exact)") or interval.method.endswith("limit)") else 2_000
    return TaskLevelResult(
        outcome=outcome, mean_a=sum(a) / n, mean_b=sum(b) / n, mean_diff=test.mean,
        ci=interval.ci, ci_method=interval.method, ci_draws=draws,
        p_value=test.p_value, p_method=test.method, p_draws=test.draws, p_min=test.min_p, p_adjusted=test.p_value,
        d_z=d_z, ci_note=interval.note, n_differing=test.n_nonzero,
        sd_diff=_floored_sd(n, variance, floor if outcome == "score" else 0.0),
    )


def _errors_apart(tally_a: ArmTally, tally_b: ArmTally, name_a: str, name_b: str) -> ErrorsApart:
    both = tally_a.attempted_units() & tally_b.attempted_units()
    miss_a = sum(tally_a.missing_in(k) for k in both) if tally_a.n_missing else 0  # none missing: 0 per task
    miss_b = sum(tally_b.missing_in(k) for k in both) if tally_b.n_missing else 0
    tried_a = miss_a + sum(tally_a.units[k].n for k in both if k in tally_a.units)
    tried_b = miss_b + sum(tally_b.units[k].n for k in both if k in tally_b.units)
    share_a = miss_a / tried_a if tried_a else 0.0
    share_b = miss_b / tried_b if tried_b else 0.0
    withheld = None
    if abs(share_a - share_b) > ERROR_GAP:
        withheld = (f"errors outside the agent differ ({name_a} {miss_a} of {tried_a} trials, {name_b} {miss_b} of "
                    f"{tried_b}; more than {ERROR_GAP:.0%} apart): re-run them (--retry-errors) before comparing")
    return ErrorsApart(miss_a, miss_b, tried_a, tried_b, tally_a.missing_faults, tally_b.missing_faults, withheld)


def _sensitivity(tally_a: ArmTally, tally_b: ArmTally, seed: int) -> Sensitivity | None:
    """Missing trials as failures: each task's mean over analysed + missing trials (missing score 0)."""
    if not (tally_a.n_missing or tally_b.n_missing):
        return None
    keys = sorted(tally_a.attempted_units() & tally_b.attempted_units())
    if not keys or not any(tally_a.missing_in(k) or tally_b.missing_in(k) for k in keys):
        return None

    def mean(tally: ArmTally, key: str) -> float:
        unit = tally.units.get(key)
        total, n = (unit.sums.score_sum, unit.n) if unit is not None else (0.0, 0)
        return total / (n + tally.missing_in(key))

    diffs = [mean(tally_b, k) - mean(tally_a, k) for k in keys]
    test = sign_flip_tests([diffs], seed=seed)[0]
    return Sensitivity(len(keys), test.mean, test.p_value, test.method)


def _extremes(tally_a: ArmTally, tally_b: ArmTally, name_a: str, name_b: str, seed: int) -> Robustness | None:
    """The score test at the two extremes of the errored trials outside the agent (see Robustness), over
    the tasks both arms attempted; None when none of them has such a trial."""
    if not (tally_a.n_missing or tally_b.n_missing):
        return None
    keys = sorted(tally_a.attempted_units() & tally_b.attempted_units())
    if not keys or not any(tally_a.missing_in(k) or tally_b.missing_in(k) for k in keys):
        return None

    def mean(tally: ArmTally, key: str, fill: float) -> float:
        unit = tally.units.get(key)
        total, n = (unit.sums.score_sum, unit.n) if unit is not None else (0.0, 0)
        missing = tally.missing_in(key)
        return (total + fill * missing) / (n + missing)

    columns = [[mean(tally_b, k, 0.0) - mean(tally_a, k, 1.0) for k in keys],
               [mean(tally_b, k, 1.0) - mean(tally_a, k, 0.0) for k in keys]]
    against, for_b = sign_flip_tests(columns, seed=seed)
    return Robustness(ErrorExtreme(name_a, name_b, len(keys), against.mean, against.p_value),
                      ErrorExtreme(name_b, name_a, len(keys), for_b.mean, for_b.p_value))


def _decision(p_adjusted: float | None, mean: float | None, alpha: float) -> int:
    """+1: B better, -1: A better, 0: no rejection."""
    if p_adjusted is None or mean is None or p_adjusted >= alpha:
        return 0
    return 1 if mean > 0 else -1 if mean < 0 else 0


def _spread_out(values: list[float]) -> bool:
    """statistics.pstdev(values) > 1e-12, read from the range when it settles it: n values spanning R have a
    population sd of at least R / sqrt(2n) (two at the ends, the rest in the middle); the test asks for
    twice the threshold, well past any rounding."""
    span = max(values) - min(values)
    if span * span > 8e-24 * len(values):
        return True
    return statistics.pstdev(values) > 1e-12


def _spread(units_a: list[UnitTally], units_b: list[UnitTally], unpaired_a: list[str],
            unpaired_b: list[str]) -> TaskSpread:
    a = [u.mean_score for u in units_a]
    b = [u.mean_score for u in units_b]
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    wins_b = sum(1 for d in diffs if d > 1e-12)
    wins_a = sum(1 for d in diffs if d < -1e-12)
    correlation = None
    if len(a) >= 3 and _spread_out(a) and _spread_out(b):
        correlation = statistics.correlation(a, b)
    return TaskSpread(wins_b, len(diffs) - wins_a - wins_b, wins_a,
                      statistics.stdev(diffs) if len(diffs) >= 2 else None, correlation,
                      unpaired_a[:UNPAIRED_LISTED], unpaired_b[:UNPAIRED_LISTED])


def _raw_comparison(tally_a: ArmTally, tally_b: ArmTally, seed: int, alpha: float,
                    margin: float | None) -> PairedComparison:
    name_a, name_b = tally_a.arm or "A", tally_b.arm or "B"
    if name_a == name_b:
        name_a, name_b = "A", "B"
    keys = sorted(tally_a.units.keys() & tally_b.units.keys())
    units_a = [tally_a.units[k] for k in keys]
    units_b = [tally_b.units[k] for k in keys]
    pairs = Counter(itertools.chain.from_iterable(zip(ua.outcomes, ub.outcomes, strict=False)
                                                  for ua, ub in zip(units_a, units_b, strict=True)))
    only_a, only_b = pairs[(SUCCEEDED, FAILED)], pairs[(FAILED, SUCCEEDED)]
    n_pairs = sum(count for (x, y), count in pairs.items() if x and y)
    odds = (only_b + 0.5) / (only_a + 0.5) if only_a == 0 or only_b == 0 else only_b / only_a
    floor = _bernoulli_floor(units_a) + _bernoulli_floor(units_b)
    identical = all(_no_spread(u) for u in units_a + units_b)
    score, rate = _task_level([("score", [u.mean_score for u in units_a], [u.mean_score for u in units_b]),
                               ("success_rate", [u.success_rate for u in units_a], [u.success_rate for u in units_b])],
                              seed, floor, alpha, identical)
    equivalence = None
    if margin is not None and keys:
        diffs = [ub.mean_score - ua.mean_score for ua, ub in zip(units_a, units_b, strict=True)]
        ci90 = sign_flip_interval(diffs, seed=seed, confidence=1.0 - 2.0 * alpha).ci
        equivalence = Equivalence(margin, ci90, ci90 is not None and -margin < ci90[0] and ci90[1] < margin)
    unpaired_a = sorted(tally_a.units.keys() - tally_b.units.keys())
    unpaired_b = sorted(tally_b.units.keys() - tally_a.units.keys())
    return PairedComparison(
        arm_a=name_a, arm_b=name_b, unit="task", n_tasks=len(keys),
        n_unpaired_a=len(unpaired_a), n_unpaired_b=len(unpaired_b),
        score=score,
        success=rate,
        mcnemar=McNemarResult(n_pairs, only_a, only_b, mcnemar_exact(only_a, only_b), odds),
        alpha=alpha, seed=seed, verdict="", summary="",
        errors=_errors_apart(tally_a, tally_b, name_a, name_b),
        sensitivity=_sensitivity(tally_a, tally_b, seed),
        robustness=_extremes(tally_a, tally_b, name_a, name_b, seed),
        spread=_spread(units_a, units_b, unpaired_a, unpaired_b) if keys else None,
        equivalence=equivalence,
    )


def possible(c: PairedComparison) -> bool:
    """Whether this design can reach the comparison's alpha at all (after Holm over its family)."""
    p_min = c.score.p_min
    return p_min is not None and p_min * c.n_pairs < c.alpha


def _verdict(c: PairedComparison) -> str:
    score, alpha = c.score, c.alpha
    if c.n_tasks == 0 or score.mean_diff is None or score.p_adjusted is None:
        return "no paired tasks"
    if c.errors is not None and c.errors.withheld:
        return "no verdict: " + c.errors.withheld
    if not possible(c):
        needed = tasks_needed(alpha / c.n_pairs)
        if c.n_tasks < needed:
            return f"no verdict is possible with {c.n_tasks} task{'s' if c.n_tasks != 1 else ''} " \
                   f"(p < {alpha:g}{' after Holm' if c.n_pairs > 1 else ''} needs at least {needed} differing tasks)"
        differ = (f"the arms tie on all {c.n_tasks} tasks" if score.n_differing == 0 else
                  f"the arms tie on {c.n_tasks - score.n_differing} of {c.n_tasks} tasks, {score.n_differing} differ")
        return f"no verdict is possible: {differ} " \
               f"(p < {alpha:g}{' after Holm' if c.n_pairs > 1 else ''} needs at least {needed} differing tasks)"
    depends = " (depends on the errored trials)" if c.robustness is not None and c.robustness.holds is False else ""
    if score.p_adjusted < alpha and score.mean_diff > 0:
        return f"{c.arm_b} better on score{depends}"
    if score.p_adjusted < alpha and score.mean_diff < 0:
        return f"{c.arm_a} better on score{depends}"
    if c.equivalence is not None and c.equivalence.equivalent:
        return f"equivalent on score within ±{c.equivalence.margin:g}"
    return f"no clear difference on score{depends}"


def _interval(ci: tuple[float, float] | None, note: str | None = None) -> str:
    if ci is None:
        return "[-]"
    text = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
    return f"{text} ({note})" if note else text


def _names(names: list[str], count: int, shown: int = 5) -> str:
    if not names:
        return ""
    more = " …" if count > shown else ""
    return f" ({', '.join(names[:shown])}{more})"


def _faults(faults: dict[str, int]) -> str:
    return ", ".join(f"{fault} {n}" for fault, n in faults.items())


def _summary(c: PairedComparison) -> str:
    """The line a person reads: verdict, the primary figures, then the secondary ones."""
    if c.n_tasks == 0:
        return "no paired tasks to compare"
    s, r, m = c.score, c.success, c.mcnemar
    tasks = f"{c.n_tasks} task{'s' if c.n_tasks != 1 else ''}"
    method = {"exact": "exact", "normal": "normal approximation"}.get(s.p_method or "", f"{s.p_draws} draws")
    forced = not possible(c) or (s.p_value is not None and s.p_value >= 1.0)
    d_z = f", d_z {s.d_z:+.2f}" if s.d_z is not None and not forced else ""
    mde = f"MDE ±{s.mde:.3f} ({s.mde_note})" if s.mde is not None else f"MDE none ({s.mde_note})"
    assert s.mean_diff is not None and r.mean_diff is not None
    level = f"{1 - c.alpha:.0%}"
    text = (f"{c.verdict} — {tasks}, unit: task; sign-flip test, Holm over {c.n_pairs} pair"
            f"{'s' if c.n_pairs != 1 else ''}: score {s.mean_diff:+.3f}, {level} CI {_interval(s.ci, s.ci_note)} "
            f"(the test inverted, unadjusted), sign-flip p={format_p(s.p_value)} ({method}), "
            f"Holm p={format_p(s.p_adjusted)}{d_z}; {mde}, smallest attainable p {format_p(s.p_min)}")
    if c.equivalence is not None:
        eq = c.equivalence
        text += (f"; TOST within ±{eq.margin:g}: {'equivalent' if eq.equivalent else 'not shown equivalent'} "
                 f"(90% interval {_interval(eq.ci)})")
    text += f"; success rate {r.mean_diff:+.3f} {_interval(r.ci)}, Holm p={format_p(r.p_adjusted)}"
    if c.spread is not None:
        sp = c.spread
        spread = f", spread sd {sp.sd_diff:.3f}" if sp.sd_diff is not None else ""
        corr = f", correlation {sp.correlation:+.2f}" if sp.correlation is not None else ""
        text += f"; per task: {c.arm_b} higher {sp.wins_b}, ties {sp.ties}, {c.arm_a} higher {sp.wins_a}{spread}{corr}"
    if c.n_unpaired_a or c.n_unpaired_b:
        names_a = c.spread.unpaired_a if c.spread is not None else []
        names_b = c.spread.unpaired_b if c.spread is not None else []
        text += (f"; unpaired tasks: {c.arm_a} {c.n_unpaired_a}{_names(names_a, c.n_unpaired_a)}, "
                 f"{c.arm_b} {c.n_unpaired_b}{_names(names_b, c.n_unpaired_b)}")
    e = c.errors
    if e is not None and (e.missing_a or e.missing_b or e.faults_a or e.faults_b):
        text += (f"; errors outside the agent, left out: {c.arm_a} {e.missing_a} of {e.attempted_a}"
                 f"{f' ({_faults(e.faults_a)})' if e.faults_a else ''}, {c.arm_b} {e.missing_b} of {e.attempted_b}"
                 f"{f' ({_faults(e.faults_b)})' if e.faults_b else ''}")
    if c.sensitivity is not None:
        sens = c.sensitivity
        text += (f"; sensitivity, errors as failures: score {sens.mean_diff:+.3f} over {sens.n_tasks} tasks, "
                 f"sign-flip p={format_p(sens.p_value)} (unadjusted)")
    rob = c.robustness
    if rob is not None and rob.holds is not None:
        extremes = "; ".join(f"{x.passes}'s as passes, {x.fails}'s as failures: score {x.mean_diff:+.3f}, "
                             f"Holm p={format_p(x.p_adjusted)}" for x in (rob.against_b, rob.for_b))
        said = ("the verdict holds whatever the errored trials would have scored" if rob.holds
                else "the verdict depends on the errored trials")
        text += f"; errored trials at their extremes ({extremes}): {said}"
    return text + (f"; secondary, trial level: McNemar p={format_p(m.p_value)} "
                   f"({c.arm_b} alone {m.c}, {c.arm_a} alone {m.b}; treats the trials of a task as independent, "
                   "so it overstates the evidence)")


def compare_tallies(tallies: Sequence[ArmTally], *, seed: int = 0, alpha: float = ALPHA,
                    equivalence_margin: float | None = None) -> list[PairedComparison]:
    """Every pair of arms (A before B in the given order), Holm-adjusted per outcome over the pairs.

    The tallies must be finished (ArmTally.finish) so chain units are in place. This is the one path
    for every readout: the batch report, the stored metrics and the compare screen of a running run.
    """
    raw = [_raw_comparison(tallies[i], tallies[j], seed, alpha, equivalence_margin)
           for i in range(len(tallies)) for j in range(i + 1, len(tallies))]
    adjusted: dict[tuple[int, str], float] = {}
    for outcome in ("score", "success"):
        tested = [(k, p) for k, c in enumerate(raw) if (p := getattr(c, outcome).p_value) is not None]
        for (k, _), p in zip(tested, holm([p for _, p in tested]), strict=True):
            adjusted[(k, outcome)] = p
    for side in ("against_b", "for_b"):  # each extreme Holm-adjusted over the pairs that have one
        tested = [(k, getattr(c.robustness, side).p_value) for k, c in enumerate(raw) if c.robustness is not None]
        for (k, _), p in zip(tested, holm([p for _, p in tested]), strict=True):
            adjusted[(k, side)] = p
    result = []
    for k, c in enumerate(raw):
        c = replace(c, alpha=alpha, n_pairs=len(raw),
                    score=replace(c.score, p_adjusted=adjusted.get((k, "score"))),
                    success=replace(c.success, p_adjusted=adjusted.get((k, "success"))))
        decidable = possible(c)
        c = replace(c, score=_with_mde(c.score, c.n_tasks, alpha, len(raw), decidable),
                    success=_with_mde(c.success, c.n_tasks, alpha, len(raw), decidable))
        if c.robustness is not None:
            rob = c.robustness
            against = replace(rob.against_b, p_adjusted=adjusted.get((k, "against_b")))
            for_b = replace(rob.for_b, p_adjusted=adjusted.get((k, "for_b")))
            withheld = c.errors is not None and c.errors.withheld
            holds = None if withheld or not decidable else (
                _decision(c.score.p_adjusted, c.score.mean_diff, alpha)
                == _decision(against.p_adjusted, against.mean_diff, alpha)
                == _decision(for_b.p_adjusted, for_b.mean_diff, alpha))
            c = replace(c, robustness=Robustness(against, for_b, holds))
        c = replace(c, verdict=_verdict(c))
        result.append(replace(c, summary=_summary(c)))
    return result


def compare_arms(
    records_a: Sequence[TrialResult],
    records_b: Sequence[TrialResult],
    pass_threshold: float = 0.0,
    seed: int = 0,
    *,
    chains: Sequence[ChainDef] = (),
    include_assisted: bool = False,
    alpha: float = ALPHA,
    equivalence_margin: float | None = None,
) -> PairedComparison:
    """Compare arm B with arm A over the tasks both ran (one pair: Holm changes nothing)."""
    tallies = []
    for records in (records_a, records_b):
        tally = ArmTally(None, pass_threshold, chains=chains, include_assisted=include_assisted).add_all(records)
        tally.finish()
        tallies.append(tally)
    return compare_tallies(tallies, seed=seed, alpha=alpha, equivalence_margin=equivalence_margin)[0]


@dataclass(frozen=True)
class TaskDifferences:
    """Per-task differences of mean score, B minus A, over the tasks both arms scored: what a forest plot
    draws. `rows` are the `shown` largest in size, ordered from B's best to A's best; `hidden` counts the
    others (smaller differences, ties included)."""

    rows: list[tuple[str, float]]
    hidden: int
    n_tasks: int


def task_differences(means_a: Mapping[str, float | None], means_b: Mapping[str, float | None],
                     shown: int = FOREST_TASKS) -> TaskDifferences:
    """B - A per task over the tasks where both have a mean score; the `shown` largest |difference|."""
    diffs = [(task, float(b) - float(a)) for task in sorted(means_a)
             if (a := means_a[task]) is not None and (b := means_b.get(task)) is not None]
    largest = sorted(diffs, key=lambda row: -abs(row[1]))[:max(0, shown)]
    return TaskDifferences(sorted(largest, key=lambda row: (-row[1], row[0])), len(diffs) - len(largest), len(diffs))
