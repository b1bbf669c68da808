"""The cost of better documentation: what each arm's score costs in steps, tokens and money.

Per arm and per outcome (score, success, iterations, tool calls, prompt tokens, completion tokens,
cost) the mean over tasks of each task's mean over its analysed trials (attempted, unassisted, not
missing: the trials the score is computed over), with a t interval over tasks (unit: the task; lower
bound clipped at 0 for the counts). Every other arm is compared with the reference arm (the first) by
the score's own test family: the paired sign-flip test over the tasks both ran, its 95% interval the
same test inverted (none when too few tasks can reject anything), Holm over the arms compared with
the reference, per outcome. The frontier: the arms no other arm beats on both mean score (higher) and
mean tokens per trial (fewer), ties kept.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from .paired import format_p, holm, sign_flip_interval, sign_flip_tests
from .records import TrialResult, in_primary_analysis, passes
from .stats import t_quantile

COST_OUTCOMES = ("score", "success", "iterations", "tool_calls", "prompt_tokens", "completion_tokens", "cost")
_WORDS = {"score": "score", "success": "success", "iterations": "iterations", "tool_calls": "tool calls",
          "prompt_tokens": "prompt tokens", "completion_tokens": "completion tokens", "cost": "cost"}
_RATES = ("score", "success")  # in [0, 1]; the others are counts (or USD) from 0 up


@dataclass(frozen=True)
class MeanOverTasks:
    value: float | None
    ci: tuple[float, float] | None  # 95%, t over tasks
    n_tasks: int


@dataclass(frozen=True)
class PairedDifference:
    """One outcome of `arm` minus the reference arm's, over the tasks both ran."""

    outcome: str
    n_tasks: int
    mean_diff: float | None
    ci: tuple[float, float] | None  # 95%, the sign-flip test inverted (unadjusted)
    ci_note: str | None
    p_value: float | None  # paired sign-flip
    p_method: str | None
    p_adjusted: float | None = None  # Holm over the arms compared with the reference, this outcome


@dataclass(frozen=True)
class ArmCosts:
    arm: str
    means: dict[str, MeanOverTasks]  # outcome -> mean over tasks
    differences: dict[str, PairedDifference] = field(default_factory=dict)  # outcome -> vs the reference


@dataclass(frozen=True)
class CostStudy:
    reference: str
    arms: list[ArmCosts]  # the reference first
    frontier: list[str]  # arms not beaten on both score and tokens, in arm order
    unit: str = "task"
    test: str = "paired sign-flip test over tasks against the reference arm, its interval the test inverted"
    correction: str = "Holm over the arms compared with the reference, per outcome"
    summary: list[str] = field(default_factory=list)


class _TaskSums:
    __slots__ = ("cost_n", "n", "sums")

    def __init__(self) -> None:
        self.n = 0
        self.cost_n = 0
        self.sums = dict.fromkeys(COST_OUTCOMES, 0.0)

    def mean(self, outcome: str) -> float | None:
        count = self.cost_n if outcome == "cost" else self.n
        return self.sums[outcome] / count if count else None


class CostTally:
    """Per arm and task, the sums the cost study needs (bounded by arms x tasks, never the records)."""

    def __init__(self, pass_threshold: float = 0.0, include_assisted: bool = False) -> None:
        self.pass_threshold = pass_threshold
        self.include_assisted = include_assisted
        self.arms: dict[str, dict[str, _TaskSums]] = {}

    def add(self, record: TrialResult) -> None:
        if not in_primary_analysis(record, self.include_assisted):
            return
        tasks = self.arms.setdefault(record.arm, {})
        sums = tasks.get(record.task_id)
        if sums is None:
            sums = tasks[record.task_id] = _TaskSums()
        sums.n += 1
        values = sums.sums
        values["score"] += 0.0 if record.score is None else float(record.score)
        values["success"] += float(passes(record.status, record.score, record.error, record.surrendered,
                                          self.pass_threshold))
        values["iterations"] += record.iterations
        values["tool_calls"] += len(record.tool_calls)
        values["prompt_tokens"] += record.prompt_tokens
        values["completion_tokens"] += record.completion_tokens
        if record.cost is not None:
            sums.cost_n += 1
            values["cost"] += record.cost

    def study(self, arm_order: Sequence[str], *, seed: int = 0, alpha: float = 0.05) -> CostStudy | None:
        """The study over the arms in `arm_order` that have analysed trials (the first is the reference);
        None with fewer than two such arms."""
        names = [a for a in arm_order if self.arms.get(a)] + sorted(a for a in self.arms if a not in arm_order
                                                                   and self.arms[a])
        if len(names) < 2:
            return None
        reference = names[0]
        arms = [ArmCosts(name, {o: _mean_over_tasks(self.arms[name], o) for o in COST_OUTCOMES}) for name in names]
        raw = {name: _differences(self.arms[reference], self.arms[name], seed, alpha) for name in names[1:]}
        for outcome in COST_OUTCOMES:
            tested = [(name, d[outcome].p_value) for name, d in raw.items() if d[outcome].p_value is not None]
            for (name, _), adjusted in zip(tested, holm([p for _, p in tested if p is not None]), strict=True):
                d = raw[name][outcome]
                raw[name][outcome] = PairedDifference(d.outcome, d.n_tasks, d.mean_diff, d.ci, d.ci_note, d.p_value,
                                                      d.p_method, adjusted)
        arms = [arms[0]] + [ArmCosts(a.arm, a.means, raw[a.arm]) for a in arms[1:]]
        frontier = _frontier(arms)
        study = CostStudy(reference, arms, frontier)
        return CostStudy(reference, arms, frontier, summary=summary_lines(study))


def _mean_over_tasks(tasks: dict[str, _TaskSums], outcome: str) -> MeanOverTasks:
    means = [m for sums in tasks.values() if (m := sums.mean(outcome)) is not None]
    if not means:
        return MeanOverTasks(None, None, 0)
    mean = math.fsum(means) / len(means)
    if len(means) < 2:
        return MeanOverTasks(mean, None, len(means))
    half = t_quantile(0.975, len(means) - 1) * statistics.stdev(means) / math.sqrt(len(means))
    high = min(1.0, mean + half) if outcome in _RATES else mean + half
    return MeanOverTasks(mean, (max(0.0, mean - half), high), len(means))


def _differences(reference: dict[str, _TaskSums], other: dict[str, _TaskSums], seed: int,
                 alpha: float) -> dict[str, PairedDifference]:
    out: dict[str, PairedDifference] = {}
    for outcome in COST_OUTCOMES:
        pairs = [(r, o) for task in sorted(reference.keys() & other.keys())
                 if (r := reference[task].mean(outcome)) is not None and (o := other[task].mean(outcome)) is not None]
        diffs = [o - r for r, o in pairs]
        if not diffs:
            out[outcome] = PairedDifference(outcome, 0, None, None, None, None, None)
            continue
        test = sign_flip_tests([diffs], seed=seed)[0]
        ci, note = None, None
        if len(diffs) >= 2:
            span = max(abs(d) for d in diffs) or 1.0
            interval = sign_flip_interval(diffs, seed=seed, confidence=1.0 - alpha, bounds=(-span, span),
                                          test_p=test.p_value)
            if interval.note and interval.note.startswith("the whole range"):
                note = f"{len(diffs)} tasks cannot reject any difference at {alpha:g}"
            else:
                ci, note = interval.ci, interval.note
        out[outcome] = PairedDifference(outcome, len(diffs), test.mean, ci, note, test.p_value, test.method)
    return out


def _tokens(arm: ArmCosts) -> float | None:
    prompt, completion = arm.means["prompt_tokens"].value, arm.means["completion_tokens"].value
    return None if prompt is None or completion is None else prompt + completion


def _frontier(arms: list[ArmCosts]) -> list[str]:
    points = [(a.arm, a.means["score"].value, _tokens(a)) for a in arms]
    known = [(name, s, t) for name, s, t in points if s is not None and t is not None]
    return [name for name, s, t in known
            if not any(s2 >= s and t2 <= t and (s2 > s or t2 < t) for _, s2, t2 in known)]


def _figure(value: float | None, outcome: str) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if outcome in _RATES or outcome == "cost" else f"{value:+.1f}"


def summary_lines(study: CostStudy) -> list[str]:
    """One line per arm against the reference, then the frontier."""
    lines = []
    for arm in study.arms[1:]:
        parts = []
        for outcome in COST_OUTCOMES:
            d = arm.differences[outcome]
            if d.mean_diff is None:
                continue
            ci = f" [{_figure(d.ci[0], outcome)}, {_figure(d.ci[1], outcome)}]" if d.ci else ""
            parts.append(f"{_WORDS[outcome]} {_figure(d.mean_diff, outcome)}{ci} Holm p={format_p(d.p_adjusted)}")
        lines.append(f"cost of documentation, {arm.arm} vs {study.reference} (per trial, mean over "
                     f"{arm.differences['score'].n_tasks} paired tasks; sign-flip, 95% CI the test inverted, Holm "
                     f"over {len(study.arms) - 1} arm{'s' if len(study.arms) > 2 else ''}): " + "; ".join(parts))
    lines.append(f"frontier, score against tokens per trial: {', '.join(study.frontier) or 'none'} "
                 "(no other arm scores higher with fewer tokens)")
    return lines
