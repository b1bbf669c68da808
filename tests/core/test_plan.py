"""`corral-tui plan`: power by simulation with the verdict's own test, Miller's formula as the check."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.metrics.power import (
    Assumptions,
    assumptions_from_pilot,
    miller_tasks,
    minimum_detectable_effect,
    simulated_power,
)
from corral_tui.cli import main

QUICKSTART = Path(__file__).resolve().parents[2] / "sample_tasks" / "quickstart.bench.yaml"


def test_the_quickstart_design_can_never_give_a_verdict_and_plan_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(QUICKSTART), "--effect", "0.10", "--simulations", "20"]) == 0
    out = capsys.readouterr().out
    assert "current design: 5 tasks x 3 trials: no verdict is possible with 5 tasks" in out
    assert "3 pairs of arms: each tested at 0.05/3 = 0.0167" in out and "Miller tasks" in out


def test_plan_refuses_a_meaningless_effect(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(QUICKSTART), "--effect", "0"]) == 2
    assert "--effect must be a score difference" in capsys.readouterr().err


def test_simulated_power_holds_the_level_without_an_effect_and_grows_with_tasks() -> None:
    a = Assumptions()
    assert simulated_power(a, 0.0001, 5, 3) is None  # 5 tasks can never reach 0.05
    null = simulated_power(a, 0.0, 30, 3, simulations=300, seed=1)
    assert null is not None and null <= 0.05  # a null effect is "detected" in no direction more than alpha
    small = simulated_power(a, 0.10, 20, 3, simulations=200, seed=2)
    large = simulated_power(a, 0.10, 150, 3, simulations=200, seed=2)
    assert small is not None and large is not None and small < 0.3 < 0.6 < large


def test_miller_formula_and_the_mde_agree_with_each_other() -> None:
    a = Assumptions(base_rate=0.5, task_sd=0.2, interaction_sd=0.1)
    n = miller_tasks(a, 0.10, 3, 0.8, 0.05)
    mde = minimum_detectable_effect(a, n, 3)
    assert mde is not None and mde == pytest.approx(0.10, abs=0.002)
    assert minimum_detectable_effect(a, 5, 3) is None


def test_a_pilot_gives_the_variance_components() -> None:
    # two arms on 4 tasks, 4 trials each: B is A + 0.25 on every task, so the task x arm spread is ~0
    a = {f"t{i}": [1.0, 0.0, 1.0, 0.0] if i % 2 else [1.0, 1.0, 1.0, 0.0] for i in range(4)}
    b = {task: [1.0] * 4 if sum(s) == 3 else [1.0, 1.0, 1.0, 0.0] for task, s in a.items()}
    estimated = assumptions_from_pilot({"a": a, "b": b})
    assert estimated.source.startswith("pilot: 8 arm x task cells, 32 trials")
    assert 0.6 < estimated.base_rate < 0.9 and estimated.interaction_sd == 0.0
    single = assumptions_from_pilot({"a": a})
    assert single.interaction_sd == 0.1 and "one arm" in single.source
