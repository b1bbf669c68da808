"""CORAL-style attempt status: a benchmark's headline score against the best earlier one, with the
uncertainty of both runs taken into account.

CORAL compares an attempt with the agent's own previous best in the configured direction (maximize
by default, or minimize). Here "earlier" means a finished benchmark of the same spec that finished
before this one started and was not itself `errored`. The best earlier run is the one with the best
headline; since it was picked as the best of m noisy runs, the comparison with it is tested at
alpha / m (Bonferroni over the runs it was chosen from), so an unchanged agent is called regressed in at
most alpha of its runs however many came before. The comparison is paired by task (unit: a task, or a
chain; each task's value is its mean score over the arms that ran it), with the sign-flip test and its
inverted interval. Statuses:

- errored: more than ERRORED_SHARE of the attempted trials errored or timed out: the run measured the
  infrastructure; it is never first/baseline and never the best earlier run of a later one;
- first: no earlier run of the spec has a headline score;
- improved / regressed: the paired comparison with the best earlier run is significant (at alpha / m)
  in the better / worse direction;
- no_change: it is not: the text says "no detectable change" with the design's minimum detectable effect
  at that level (stats.paired_mde over the paired units, 80% power: the same formula as Compare's), or why
  it has none, and the interval of the difference;
- baseline: (older stores) the headline equals the best earlier one;
- no_unassisted: no headline because every attempted trial was assisted by a person (they are
  reported apart and never make a headline);
- crashed: no headline for any other reason (no trial was measured).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from corral_core.domain import AttemptStatus as AttemptStatus  # re-exported by corral_core.metrics

from .compare import tasks_needed
from .paired import ZERO_DIFFERENCE, format_p, sign_flip_interval, sign_flip_test
from .stats import paired_mde

ATTEMPT_STATUSES: tuple[str, ...] = tuple(status.value for status in AttemptStatus)
Direction = Literal["maximize", "minimize"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)
ERRORED_ATTEMPT = AttemptStatus.ERRORED
ERRORED_SHARE = 0.5  # a run whose errored / timed-out share of attempted trials is above this is `errored`
ALPHA = 0.05


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}.")


@dataclass(frozen=True)
class EarlierRun:
    """An earlier finished run of the spec: its headline and its per-unit headline values."""

    benchmark_id: str
    headline: float
    units: Mapping[str, float]


@dataclass(frozen=True)
class Attempt:
    """The attempt status and the comparison behind it (see the module docstring)."""

    status: AttemptStatus
    previous_id: str | None = None
    previous_best: float | None = None
    n_earlier: int = 0  # earlier runs the best was chosen from (the Bonferroni factor)
    n_tasks: int = 0  # units paired with the best earlier run
    diff: float | None = None  # mean over paired units of this run's value minus the earlier one's
    ci: tuple[float, float] | None = None  # at 1 - alpha / n_earlier, the inverted sign-flip test
    p_value: float | None = None  # sign-flip, unadjusted (compared with alpha / n_earlier)
    level: float | None = None  # alpha / n_earlier
    mde: float | None = None  # the design's minimum detectable effect at `level` (80% power); None: see text
    text: str = ""


def headline_units(arms: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Per unit (an independent task, or a chain), the mean over arms of the arm's mean score there:
    what a run's headline is made of. `arms` are per-arm metrics dicts (metrics_to_dict of ArmMetrics)."""
    values: dict[str, list[float]] = {}
    for arm in arms.values():
        chain_units = arm.get("chain_units") or {}
        links = {task for unit in chain_units.values() for task in unit.get("links") or []}
        for task, row in (arm.get("tasks") or {}).items():
            if task not in links and row.get("mean_score") is not None:
                values.setdefault(str(task), []).append(float(row["mean_score"]))
        for chain_id, unit in chain_units.items():
            if unit.get("mean_score") is not None:
                values.setdefault(str(chain_id), []).append(float(unit["mean_score"]))
    return {unit: math.fsum(v) / len(v) for unit, v in values.items()}


def classify_attempt(headline: float | None, units: Mapping[str, float], earlier: Sequence[EarlierRun],
                     direction: str = "maximize", *, n_unassisted: int | None = None, n_attempted: int = 0,
                     n_errored: int = 0, alpha: float = ALPHA, seed: int = 0) -> Attempt:
    """Classify a run (see the module docstring). `earlier` holds every eligible earlier run."""
    _check_direction(direction)
    if n_attempted and n_errored / n_attempted > ERRORED_SHARE:
        return Attempt(AttemptStatus.ERRORED,
                       text=f"{n_errored} of {n_attempted} attempted trials errored or timed out "
                            f"(more than {ERRORED_SHARE:.0%}): this run measured the infrastructure")
    if headline is None or math.isnan(headline):
        return Attempt(AttemptStatus.NO_UNASSISTED if n_unassisted == 0 else AttemptStatus.CRASHED)
    runs = [run for run in earlier if run.headline is not None and not math.isnan(run.headline)]
    if not runs:
        return Attempt(AttemptStatus.FIRST, text="no earlier run of this spec")
    pick = max if direction == "maximize" else min
    best = pick(runs, key=lambda run: run.headline)
    m = len(runs)
    level = alpha / m
    keys = sorted(set(units) & set(best.units))
    base = Attempt(AttemptStatus.NO_CHANGE, best.benchmark_id, best.headline, m, len(keys), level=level)
    if not keys:
        return _with(base, text=f"no detectable change: no task in common with the best earlier run "
                                f"{best.benchmark_id}")
    diffs = [units[k] - best.units[k] for k in keys]
    test = sign_flip_test(diffs, seed=seed)
    interval = sign_flip_interval(diffs, confidence=1.0 - level, seed=seed, test_p=test.p_value)
    status = AttemptStatus.NO_CHANGE
    if test.p_value < level and abs(test.mean) > 0:
        better = test.mean > 0 if direction == "maximize" else test.mean < 0
        status = AttemptStatus.IMPROVED if better else AttemptStatus.REGRESSED
    ci = interval.ci
    shown = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci is not None else "[-]"
    mde, why = _mde(diffs, level)
    sized = f"MDE ±{mde:.3f} at 80% power: " if mde is not None else f"MDE none, {why}: "
    where = (f"against the best earlier run {best.benchmark_id} ({best.headline:.3f}, best of {m}) over "
             f"{len(keys)} paired task{'s' if len(keys) != 1 else ''}")
    figures = (f"{test.mean:+.3f} {shown} ({1 - level:.1%} interval, sign-flip p={format_p(test.p_value)} "
               f"against {level:.3g} = {alpha:g}/{m})")
    lead = f"no detectable change ({sized}" if status == AttemptStatus.NO_CHANGE else f"{status} ("
    text = f"{lead}{figures}) {where}"
    return _with(base, status=status, diff=test.mean, ci=ci, p_value=test.p_value, mde=mde, text=text)


def _mde(diffs: Sequence[float], level: float) -> tuple[float | None, str]:
    """The paired design's MDE at `level` (stats.paired_mde over the units' differences), or why none."""
    n = len(diffs)
    if n < max(2, tasks_needed(level)):
        return None, f"{n} paired task{'s' if n != 1 else ''} cannot reach p < {level:.3g}"
    sd = statistics.stdev(diffs)
    if sd <= ZERO_DIFFERENCE:
        return None, "every task's difference is the same"
    return paired_mde(sd, n, level), ""


def _with(attempt: Attempt, **changes: Any) -> Attempt:
    return replace(attempt, **changes)


def best_score(scores: Iterable[float | None], direction: str = "maximize") -> float | None:
    """The best of earlier headline scores (None and NaN skipped); None when there is none."""
    _check_direction(direction)
    valid = [s for s in scores if s is not None and not math.isnan(s)]
    if not valid:
        return None
    return max(valid) if direction == "maximize" else min(valid)
