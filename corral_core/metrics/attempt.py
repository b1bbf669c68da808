"""CORAL-style attempt status: a benchmark's headline score against the best earlier one.

CORAL compares an attempt with the agent's own previous best in the configured direction (maximize
by default, or minimize). Here "earlier" means a finished benchmark of the same spec that finished
before this one started. Statuses:

- first: no earlier finished benchmark of the spec has a headline score;
- improved / baseline / regressed: strictly better / equal (within 1e-12) / worse than the best earlier;
- no_unassisted: no headline because every attempted trial was assisted by a person (they are
  reported apart and never make a headline);
- crashed: no headline for any other reason (no trial was measured).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal, get_args

AttemptStatus = Literal["first", "improved", "baseline", "regressed", "no_unassisted", "crashed"]
ATTEMPT_STATUSES: tuple[str, ...] = get_args(AttemptStatus)
Direction = Literal["maximize", "minimize"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)

_TOLERANCE = 1e-12


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}.")


def attempt_status(score: float | None, previous_best: float | None, direction: str = "maximize", *,
                   n_unassisted: int | None = None) -> AttemptStatus:
    """Classify a headline score (see the module docstring). `n_unassisted`, the attempted trials no
    person touched, tells `no_unassisted` from `crashed` when there is no score."""
    _check_direction(direction)
    if score is None or math.isnan(score):
        return "no_unassisted" if n_unassisted == 0 else "crashed"
    if previous_best is None or math.isnan(previous_best):
        return "first"
    if abs(score - previous_best) <= _TOLERANCE:
        return "baseline"
    better = score > previous_best if direction == "maximize" else score < previous_best
    return "improved" if better else "regressed"


def best_score(scores: Iterable[float | None], direction: str = "maximize") -> float | None:
    """The best of earlier headline scores (None and NaN skipped); None when there is none."""
    _check_direction(direction)
    valid = [s for s in scores if s is not None and not math.isnan(s)]
    if not valid:
        return None
    return max(valid) if direction == "maximize" else min(valid)
