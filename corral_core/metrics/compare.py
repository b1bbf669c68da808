"""Paired comparison of arms at the unit that is independent: the task.

Every pair of arms is compared on the tasks both ran. Each task contributes one difference per
outcome: arm B's mean minus arm A's mean over that task's analysed trials (a chain contributes its
mean workflow score and end-to-end success rate over episodes). Over those differences:

- primary, score: a paired sign-flip permutation test (exact up to 24 non-zero differences, else
  10,000 seeded Monte Carlo draws, above 5,000 the permutation distribution's normal limit) and a
  task-cluster bootstrap CI of the mean difference (the t interval above 2,000 tasks);
- secondary, success rate: the same test and interval on per-task success rates;
- secondary, trial level: exact McNemar on trials paired by (task, trial index), which treats the
  trials of one task as independent and so overstates the evidence; it is labelled as such.

p-values of each outcome are Holm-adjusted over every pair of arms; the verdict follows the adjusted
score p at `alpha`. Effect sizes: the mean difference with its CI, and Cohen's d_z when the spread of
the differences is not numerically zero.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .arm import FAILED, SUCCEEDED, ArmTally, UnitTally
from .chain import ChainDef
from .paired import BootstrapCI, SignFlipTest, bootstrap_mean_cis, cohens_dz, format_p, holm, sign_flip_tests
from .records import TrialRecord
from .stats import mcnemar_exact

ALPHA = 0.05
SECONDARY_NOTE = "secondary, trial level: treats the trials of a task as independent, so it overstates the evidence"


@dataclass(frozen=True)
class TaskLevelResult:
    """One outcome compared over paired tasks: differences are B minus A, one per task."""

    outcome: str  # "score" | "success_rate"
    mean_a: float | None  # mean over the paired tasks of A's per-task means
    mean_b: float | None
    mean_diff: float | None
    ci: tuple[float, float] | None  # 95%, not adjusted for multiplicity; None with fewer than 2 tasks
    ci_method: str | None  # "cluster-bootstrap" (expanded percentile) | "t" (above 2,000 tasks)
    ci_draws: int | None
    p_value: float | None  # paired sign-flip permutation test
    p_method: str | None  # "exact" | "monte-carlo" | "normal" (above 5,000 non-zero differences)
    p_draws: int | None
    p_min: float | None  # the smallest p this design can produce
    p_adjusted: float | None  # Holm over every pair of arms, this outcome
    d_z: float | None  # Cohen's d_z of the per-task differences


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


def _task_level(outcomes: list[tuple[str, list[float], list[float]]], seed: int) -> list[TaskLevelResult]:
    """Each outcome's paired analysis; the outcomes share sign patterns and bootstrap resamples."""
    n = len(outcomes[0][1])
    if n == 0:
        return [TaskLevelResult(name, None, None, None, None, None, None, None, None, None, None, None, None)
                for name, _, _ in outcomes]
    columns = [[y - x for x, y in zip(a, b, strict=True)] for _, a, b in outcomes]
    tests = sign_flip_tests(columns, seed=seed)
    boots = bootstrap_mean_cis(columns, seed=seed)
    return [_result(name, a, b, diffs, test, boot)
            for (name, a, b), diffs, test, boot in zip(outcomes, columns, tests, boots, strict=True)]


def _result(outcome: str, a: list[float], b: list[float], diffs: list[float], test: SignFlipTest,
            boot: BootstrapCI | None) -> TaskLevelResult:
    n = len(a)
    return TaskLevelResult(
        outcome=outcome, mean_a=sum(a) / n, mean_b=sum(b) / n, mean_diff=test.mean,
        ci=boot.ci if boot else None, ci_method=boot.method if boot else None, ci_draws=boot.draws if boot else None,
        p_value=test.p_value, p_method=test.method, p_draws=test.draws, p_min=test.min_p, p_adjusted=test.p_value,
        d_z=cohens_dz(diffs),
    )


def _mcnemar(a: UnitTally, b: UnitTally, counts: Counter[tuple[int, int]]) -> None:
    counts.update(zip(a.outcomes, b.outcomes, strict=False))


def _raw_comparison(tally_a: ArmTally, tally_b: ArmTally, seed: int) -> PairedComparison:
    name_a, name_b = tally_a.arm or "A", tally_b.arm or "B"
    if name_a == name_b:
        name_a, name_b = "A", "B"
    keys = sorted(tally_a.units.keys() & tally_b.units.keys())
    units_a = [tally_a.units[k] for k in keys]
    units_b = [tally_b.units[k] for k in keys]
    pairs: Counter[tuple[int, int]] = Counter()
    for ua, ub in zip(units_a, units_b, strict=True):
        _mcnemar(ua, ub, pairs)
    only_a, only_b = pairs[(SUCCEEDED, FAILED)], pairs[(FAILED, SUCCEEDED)]
    n_pairs = sum(count for (x, y), count in pairs.items() if x and y)
    odds = (only_b + 0.5) / (only_a + 0.5) if only_a == 0 or only_b == 0 else only_b / only_a
    score, rate = _task_level([("score", [u.mean_score for u in units_a], [u.mean_score for u in units_b]),
                               ("success_rate", [u.success_rate for u in units_a], [u.success_rate for u in units_b])],
                              seed)
    return PairedComparison(
        arm_a=name_a, arm_b=name_b, unit="task", n_tasks=len(keys),
        n_unpaired_a=len(tally_a.units) - len(keys), n_unpaired_b=len(tally_b.units) - len(keys),
        score=score,
        success=rate,
        mcnemar=McNemarResult(n_pairs, only_a, only_b, mcnemar_exact(only_a, only_b), odds),
        alpha=ALPHA, seed=seed, verdict="", summary="",
    )


def _verdict(c: PairedComparison, alpha: float) -> str:
    score = c.score
    if c.n_tasks == 0 or score.mean_diff is None or score.p_adjusted is None:
        return "no paired tasks"
    if score.p_adjusted < alpha and score.mean_diff > 0:
        return f"{c.arm_b} better on score"
    if score.p_adjusted < alpha and score.mean_diff < 0:
        return f"{c.arm_a} better on score"
    return "no clear difference on score"


def _interval(ci: tuple[float, float] | None) -> str:
    return "[-]" if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _summary(c: PairedComparison) -> str:
    """The line a person reads: verdict, the primary figures, then the secondary ones."""
    if c.n_tasks == 0:
        return "no paired tasks to compare"
    s, r, m = c.score, c.success, c.mcnemar
    tasks = f"{c.n_tasks} task{'s' if c.n_tasks != 1 else ''}"
    method = {"exact": "exact", "normal": "normal approximation"}.get(s.p_method or "", f"{s.p_draws} draws")
    d_z = f", d_z {s.d_z:+.2f}" if s.d_z is not None else ""
    assert s.mean_diff is not None and r.mean_diff is not None
    return (f"{c.verdict} ({tasks}): score {s.mean_diff:+.3f} {_interval(s.ci)}, sign-flip p={format_p(s.p_value)} "
            f"({method}), Holm p={format_p(s.p_adjusted)}{d_z}; success rate {r.mean_diff:+.3f} {_interval(r.ci)}, "
            f"Holm p={format_p(r.p_adjusted)}; secondary, trial level: McNemar p={format_p(m.p_value)} "
            f"({c.arm_b} alone {m.c}, {c.arm_a} alone {m.b})")


def compare_tallies(tallies: Sequence[ArmTally], *, seed: int = 0, alpha: float = ALPHA) -> list[PairedComparison]:
    """Every pair of arms (A before B in the given order), Holm-adjusted per outcome over the pairs.

    The tallies must be finished (ArmTally.finish) so chain units are in place.
    """
    raw = [_raw_comparison(tallies[i], tallies[j], seed)
           for i in range(len(tallies)) for j in range(i + 1, len(tallies))]
    adjusted: dict[tuple[int, str], float] = {}
    for outcome in ("score", "success"):
        tested = [(k, p) for k, c in enumerate(raw) if (p := getattr(c, outcome).p_value) is not None]
        for (k, _), p in zip(tested, holm([p for _, p in tested]), strict=True):
            adjusted[(k, outcome)] = p
    result = []
    for k, c in enumerate(raw):
        c = replace(c, alpha=alpha,
                    score=replace(c.score, p_adjusted=adjusted.get((k, "score"))),
                    success=replace(c.success, p_adjusted=adjusted.get((k, "success"))))
        c = replace(c, verdict=_verdict(c, alpha))
        result.append(replace(c, summary=_summary(c)))
    return result


def compare_arms(
    records_a: Sequence[TrialRecord],
    records_b: Sequence[TrialRecord],
    pass_threshold: float = 0.0,
    seed: int = 0,
    *,
    chains: Sequence[ChainDef] = (),
    include_assisted: bool = False,
) -> PairedComparison:
    """Compare arm B with arm A over the tasks both ran (one pair: Holm changes nothing)."""
    tallies = []
    for records in (records_a, records_b):
        tally = ArmTally(None, pass_threshold, chains=chains, include_assisted=include_assisted).add_all(records)
        tally.finish()
        tallies.append(tally)
    return compare_tallies(tallies, seed=seed)[0]
