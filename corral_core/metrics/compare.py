"""Paired comparison of two arms, trial by trial: exact McNemar on success, bootstrap on score."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .records import TrialRecord, effective_score, is_attempted, single_arm, success
from .stats import cohens_dz, mcnemar_exact, paired_bootstrap


@dataclass(frozen=True)
class PairedComparison:
    """Arm B against arm A over trials paired by (task_id, trial_index).

    Differences are B minus A. b = pairs only A solved, c = pairs only B solved.
    """

    arm_a: str
    arm_b: str
    n_pairs: int
    n_unpaired_a: int  # analysed trials of A with no partner in B
    n_unpaired_b: int
    b: int
    c: int
    p_mcnemar: float  # exact two-sided binomial test on b vs c; 1.0 when b + c == 0
    odds_ratio: float  # c / b (B over A); 0.5 added to both when either is 0; > 1 favours B
    success_rate_a: float | None  # over the pairs
    success_rate_b: float | None
    mean_score_a: float | None  # over the pairs
    mean_score_b: float | None
    mean_diff: float | None  # mean of (score B - score A)
    ci: tuple[float, float] | None  # bootstrap percentile CI of mean_diff (needs >= 2 pairs)
    p_bootstrap: float | None  # bootstrap p-value for mean_diff != 0 (needs >= 2 pairs)
    d_z: float | None  # Cohen's d_z of the paired score differences
    summary: str


def _analysed_by_key(
    records: Sequence[TrialRecord], include_assisted: bool, side: str
) -> dict[tuple[str, int], TrialRecord]:
    keyed: dict[tuple[str, int], TrialRecord] = {}
    for record in records:
        if not is_attempted(record) or (record.assisted and not include_assisted):
            continue
        key = (record.task_id, record.trial_index)
        if key in keyed:
            raise ValueError(
                f"arm {side} has two analysed trials for task {key[0]!r}, trial index {key[1]}; "
                "pairing needs one trial per (task, trial index)."
            )
        keyed[key] = record
    return keyed


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def _summary(
    name_a: str,
    name_b: str,
    n_pairs: int,
    mean_diff: float | None,
    ci: tuple[float, float] | None,
    p_boot: float | None,
    b: int,
    c: int,
    p_mcnemar: float,
) -> str:
    """One line a person reads first: which arm is better on score, then the success test."""
    if n_pairs == 0 or mean_diff is None:
        return "no paired trials to compare"
    success_part = f"success: {name_b} alone {c}, {name_a} alone {b}, McNemar p={p_mcnemar:.2g}"
    if ci is None or p_boot is None:
        return f"1 pair only, score {name_b} - {name_a}: {mean_diff:+.3g}; {success_part}"
    if ci[0] > 0:
        verdict = f"arm {name_b} better on score"
    elif ci[1] < 0:
        verdict = f"arm {name_a} better on score"
    else:
        verdict = "no clear difference on score"
    return (
        f"{verdict}: {mean_diff:+.3g} (95% CI {_fmt(ci[0])}..{_fmt(ci[1])}), p={p_boot:.2g}; "
        f"{success_part}"
    )


def compare_arms(
    records_a: Sequence[TrialRecord],
    records_b: Sequence[TrialRecord],
    pass_threshold: float = 0.0,
    n_boot: int = 2000,
    seed: int = 0,
    *,
    include_assisted: bool = False,
) -> PairedComparison:
    """Compare arm B with arm A on the trials both ran: same task, same trial index, both
    attempted and (unless include_assisted) unassisted. Deterministic for a given seed."""
    name_a = single_arm(list(records_a), "compare_arms (arm A)") or "A"
    name_b = single_arm(list(records_b), "compare_arms (arm B)") or "B"
    if name_a == name_b:
        name_a, name_b = "A", "B"
    keyed_a = _analysed_by_key(records_a, include_assisted, "A")
    keyed_b = _analysed_by_key(records_b, include_assisted, "B")
    keys = sorted(keyed_a.keys() & keyed_b.keys())
    pairs = [(keyed_a[key], keyed_b[key]) for key in keys]

    wins_a = [success(a, pass_threshold) for a, _ in pairs]
    wins_b = [success(b, pass_threshold) for _, b in pairs]
    only_a = sum(x and not y for x, y in zip(wins_a, wins_b, strict=True))
    only_b = sum(y and not x for x, y in zip(wins_a, wins_b, strict=True))
    # Haldane's correction keeps the ratio finite when either discordant count is zero.
    odds_ratio = (only_b + 0.5) / (only_a + 0.5) if only_a == 0 or only_b == 0 else only_b / only_a
    p_mcnemar = mcnemar_exact(only_a, only_b)

    scores_a = [effective_score(a) for a, _ in pairs]
    scores_b = [effective_score(b) for _, b in pairs]
    diffs = [y - x for x, y in zip(scores_a, scores_b, strict=True)]
    n = len(pairs)
    mean_diff = math.fsum(diffs) / n if n else None
    ci: tuple[float, float] | None = None
    p_boot: float | None = None
    if n >= 2:
        boot = paired_bootstrap(diffs, n_boot=n_boot, seed=seed)
        ci, p_boot = boot.ci, boot.p_value
    elif n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}.")

    return PairedComparison(
        arm_a=name_a,
        arm_b=name_b,
        n_pairs=n,
        n_unpaired_a=len(keyed_a) - n,
        n_unpaired_b=len(keyed_b) - n,
        b=only_a,
        c=only_b,
        p_mcnemar=p_mcnemar,
        odds_ratio=odds_ratio,
        success_rate_a=sum(wins_a) / n if n else None,
        success_rate_b=sum(wins_b) / n if n else None,
        mean_score_a=math.fsum(scores_a) / n if n else None,
        mean_score_b=math.fsum(scores_b) / n if n else None,
        mean_diff=mean_diff,
        ci=ci,
        p_bootstrap=p_boot,
        d_z=cohens_dz(diffs),
        summary=_summary(name_a, name_b, n, mean_diff, ci, p_boot, only_a, only_b, p_mcnemar),
    )
