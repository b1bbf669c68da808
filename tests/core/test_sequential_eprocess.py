"""The sequential comparison's e-process (corral_core/metrics/sequential.py): a martingale under its null,
anytime-valid under monitoring at every look, and deciding a large effect early."""

from __future__ import annotations

import itertools
import math
import random

from corral_core.metrics.sequential import BettingWealth, simulate_study


def test_the_wealth_is_a_martingale_under_the_null_by_exact_enumeration() -> None:
    # paired differences -1, 0, +1 with probabilities 1/4, 1/2, 1/4 (mean 0): E[K_t(0)] = 1 at every t,
    # which holds only when each bet reads the earlier differences alone
    values, weights = (-1.0, 0.0, 1.0), (0.25, 0.5, 0.25)
    for length in (1, 3, 5):
        expected = 0.0
        for outcome in itertools.product(range(3), repeat=length):
            wealth = BettingWealth(0.0)
            for index in outcome:
                wealth.add(values[index])
            expected += math.prod(weights[i] for i in outcome) * wealth.wealth
        assert math.isclose(expected, 1.0, rel_tol=1e-12), (length, expected)


def test_monitoring_every_look_keeps_the_level_and_a_large_effect_stops_early() -> None:
    rng = random.Random(7)
    studies = 200
    for arms in (2, 4):
        null = [simulate_study(rng, arms=arms, effects=[0.0] * arms, max_tasks=60, look_every=5,
                               alpha=0.05, effect=0.10) for _ in range(studies)]
        # Ville's inequality: at most alpha; 0.05 + 3 standard errors of 200 studies allows for the draw
        assert sum(s.rejected for s in null) / studies <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / studies)
    large = [simulate_study(rng, arms=2, effects=[0.0, 0.4], max_tasks=100, look_every=5, alpha=0.05,
                            effect=0.10) for _ in range(100)]
    assert sum(s.reason == "decided" for s in large) >= 95
    assert sum(s.tasks_used for s in large) / len(large) <= 60  # under 60% of the fixed design's 100 tasks
