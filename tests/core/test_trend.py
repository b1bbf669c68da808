"""The study's own question, one test: does the score rise across ordered verbosity levels?"""

from __future__ import annotations

import random

import pytest

from corral_core.metrics import TrialResult, analyse
from corral_core.metrics.trend import trend_test

LEVELS = ["minimal", "brief", "detailed", "procedural", "contextual", "workflow", "syntactical", "comprehensive",
          "full"]


def means(rng: random.Random, slope: float, tasks: int = 30, levels: list[str] = LEVELS) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {level: {} for level in levels}
    for t in range(tasks):
        base = rng.uniform(0.2, 0.6)
        for j, level in enumerate(levels):
            out[level][f"t{t}"] = sum(rng.random() < base + slope * j for _ in range(3)) / 3
    return out


def test_no_level_effect_keeps_the_level_and_a_rising_curve_is_found() -> None:
    rng = random.Random(9)
    false = sum(result.p_value < 0.05 for _ in range(40)
                if (result := trend_test(LEVELS, means(rng, 0.0), draws=500)) is not None
                and result.p_value is not None)
    assert false <= 5  # 40 null studies at 0.05: about 2 expected
    rising = trend_test(LEVELS, means(rng, 0.03))
    assert rising is not None and rising.p_value is not None and rising.p_value < 0.01
    assert rising.slope_ci is not None and rising.slope_ci[0] > 0 and len(rising.curve) == 9
    assert rising.curve[-1].value > rising.curve[0].value and rising.curve[0].ci is not None


def test_few_tasks_are_counted_exactly_and_incomplete_tasks_are_listed() -> None:
    three = LEVELS[:3]
    data = {"minimal": {"a": 0.0, "b": 0.1, "x": 0.5}, "brief": {"a": 0.5, "b": 0.4}, "detailed": {"a": 1.0, "b": 0.9}}
    result = trend_test(three, data)
    assert result is not None and result.p_method == "exact" and result.tasks_left_out == ["x"]
    # two tasks, both strictly rising: only 2 of the 36 level orders are as extreme (both rising, both falling)
    assert result.p_value == pytest.approx(2 / 36) and result.slope == pytest.approx(0.45)
    assert trend_test(three[:2], data) is None


def test_analyse_reports_the_trend_for_ordered_levels() -> None:
    records = [TrialResult(f"t{t}", level, i, score=float((t + i + j) % 4 < j + 1))
               for t in range(8) for j, level in enumerate(LEVELS[:4]) for i in range(2)]
    result = analyse(records, LEVELS[:4], ordered_levels=LEVELS[:4])
    assert result.trend is not None and result.trend.n_tasks == 8 and result.trend.slope is not None
    assert "trend across 4 ordered levels (8 tasks at every level, unit: task" in result.trend.summary
    assert analyse(records, LEVELS[:4]).trend is None
