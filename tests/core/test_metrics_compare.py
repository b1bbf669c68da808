"""Paired arm comparison and CORAL attempt status."""

from __future__ import annotations

import json

import pytest

from corral_core.metrics import (
    TrialRecord,
    attempt_status,
    best_score,
    compare_arms,
    mcnemar_exact,
    metrics_to_dict,
)


def trials(arm: str, scores: list[float]) -> list[TrialRecord]:
    """Trials over tasks t0..t3, trial index counting up every four scores."""
    return [
        TrialRecord(task_id=f"t{i % 4}", arm=arm, trial_index=i // 4, score=s)
        for i, s in enumerate(scores)
    ]


def test_discordant_pairs_feed_an_exact_mcnemar_test() -> None:
    a = trials("brief", [1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0])
    b = trials("full", [1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1])
    result = compare_arms(a, b, n_boot=200)
    assert (result.arm_a, result.arm_b, result.n_pairs) == ("brief", "full", 12)
    assert (result.b, result.c) == (1, 7)  # only A solved 1 pair; only B solved 7
    assert result.p_mcnemar == pytest.approx(2 * (1 + 8) / 2**8)
    assert result.p_mcnemar == mcnemar_exact(1, 7)
    assert result.odds_ratio == pytest.approx(7.0)
    assert result.success_rate_a == pytest.approx(4 / 12)
    assert result.success_rate_b == pytest.approx(10 / 12)
    assert result.mean_diff == pytest.approx(6 / 12)


def test_score_difference_bootstrap_and_effect_size() -> None:
    a = trials("A1", [0.2, 0.4, 0.1, 0.5, 0.3, 0.2, 0.4, 0.1])
    b = trials("B1", [0.5, 0.6, 0.4, 0.7, 0.5, 0.6, 0.5, 0.4])
    result = compare_arms(a, b, n_boot=1000, seed=3)
    assert result.mean_diff == pytest.approx(0.25)
    assert result.ci is not None and 0.0 < result.ci[0] < result.mean_diff < result.ci[1]
    assert result.p_bootstrap is not None and result.p_bootstrap < 0.01
    assert result.d_z is not None and result.d_z > 2
    assert result.summary.startswith("arm B1 better on score: +0.25 (95% CI ")
    assert "McNemar p=1" in result.summary
    assert compare_arms(a, b, n_boot=1000, seed=3) == result
    reverse = compare_arms(b, a, n_boot=1000, seed=3)
    assert reverse.mean_diff == pytest.approx(-0.25)
    assert reverse.summary.startswith("arm B1 better on score: -0.25")


def test_no_clear_difference_and_haldane_odds_ratio() -> None:
    a = trials("a", [1.0, 0.0, 1.0, 0.0])
    b = trials("b", [1.0, 0.0, 1.0, 0.0])
    result = compare_arms(a, b, n_boot=100)
    assert (result.b, result.c, result.p_mcnemar) == (0, 0, 1.0)
    assert result.odds_ratio == 1.0
    assert result.mean_diff == 0.0 and result.p_bootstrap == 1.0 and result.d_z is None
    assert result.summary.startswith("no clear difference on score")
    one_sided = compare_arms(trials("a", [0.0, 0.0]), trials("b", [1.0, 1.0]), n_boot=100)
    assert one_sided.odds_ratio == pytest.approx(2.5 / 0.5)


def test_pairing_skips_unmatched_unattempted_and_assisted_trials() -> None:
    a = trials("a", [1.0, 0.0, 1.0, 0.0, 1.0])  # t0 trial 1 has no partner
    b = trials("b", [1.0, 1.0, 1.0, 1.0])
    b[1].status, b[1].score = "skipped", None
    b[2].assisted = True
    result = compare_arms(a, b, n_boot=100)
    assert (result.n_pairs, result.n_unpaired_a, result.n_unpaired_b) == (2, 3, 0)
    assert compare_arms(a, b, n_boot=100, include_assisted=True).n_pairs == 3


def test_degenerate_comparisons_do_not_invent_numbers() -> None:
    empty = compare_arms([], trials("b", [1.0]))
    assert empty.n_pairs == 0 and empty.mean_diff is None and empty.ci is None
    assert empty.summary == "no paired trials to compare"
    single = compare_arms(trials("a", [0.0]), trials("b", [1.0]))
    assert single.mean_diff == 1.0 and single.ci is None and single.p_bootstrap is None
    assert "1 pair only" in single.summary
    duplicate = trials("a", [1.0]) + trials("a", [0.0])
    with pytest.raises(ValueError, match="two analysed trials"):
        compare_arms(duplicate, trials("b", [1.0]))
    json.dumps(metrics_to_dict(single), allow_nan=False)


@pytest.mark.parametrize(
    ("score", "previous", "direction", "expected"),
    [
        (0.5, None, "maximize", "improved"),
        (None, 0.5, "maximize", "crashed"),
        (float("nan"), 0.5, "maximize", "crashed"),
        (0.7, 0.5, "maximize", "improved"),
        (0.5, 0.5 + 1e-13, "maximize", "baseline"),
        (0.4, 0.5, "maximize", "regressed"),
        (0.4, 0.5, "minimize", "improved"),
        (0.6, 0.5, "minimize", "regressed"),
    ],
)
def test_attempt_status(
    score: float | None, previous: float | None, direction: str, expected: str
) -> None:
    assert attempt_status(score, previous, direction) == expected  # type: ignore[arg-type]


def test_best_score_and_bad_direction() -> None:
    assert best_score([0.2, None, 0.9, float("nan")]) == 0.9
    assert best_score([0.2, 0.9], "minimize") == 0.2
    assert best_score([None]) is None
    with pytest.raises(ValueError, match="direction"):
        attempt_status(0.5, 0.4, "up")  # type: ignore[arg-type]
