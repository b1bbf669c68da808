"""CORAL-style attempt status: a benchmark's headline score against the best earlier one."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

AttemptStatus = Literal["improved", "baseline", "regressed", "crashed"]
Direction = Literal["maximize", "minimize"]

_TOLERANCE = 1e-12


def _check_direction(direction: str) -> None:
    if direction not in ("maximize", "minimize"):
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}.")


def attempt_status(
    score: float | None, previous_best: float | None, direction: Direction = "maximize"
) -> AttemptStatus:
    """improved (no previous best, or strictly better), baseline (equal within 1e-12),
    regressed (worse) or crashed (no score: None or NaN), as CORAL classifies attempts."""
    _check_direction(direction)
    if score is None or math.isnan(score):
        return "crashed"
    if previous_best is None or math.isnan(previous_best):
        return "improved"
    if abs(score - previous_best) <= _TOLERANCE:
        return "baseline"
    better = score > previous_best if direction == "maximize" else score < previous_best
    return "improved" if better else "regressed"


def best_score(scores: Iterable[float | None], direction: Direction = "maximize") -> float | None:
    """The best of earlier headline scores (None and NaN skipped); None when there is none."""
    _check_direction(direction)
    valid = [s for s in scores if s is not None and not math.isnan(s)]
    if not valid:
        return None
    return max(valid) if direction == "maximize" else min(valid)
