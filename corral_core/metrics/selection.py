"""Tool selection per arm: how often each tool was the agent's first call, and how often it was called at
all, as rates over tasks.

Unit: the task. Per arm, tool and task: the share of the task's analysed trials (attempted, unassisted,
not missing) whose first tool call was that tool, and the share that called it at least once. The arm's
rate is the mean of those shares over the tasks it ran, with the arms' interval for a rate over tasks
(intervals.task_mean_interval: 95% t over tasks, floored by the trials' pass/fail variance, Wilson over
tasks when every task is at 0 or 1; none with one task). A trial that called no tool counts towards no
tool's first-call rate (its
share is reported as `no_call`). The tools are those any analysed trial called, so a tool an arm never
called shows 0 there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .intervals import task_mean_interval
from .records import TrialResult, in_primary_analysis

NO_CALL = "(no tool call)"


@dataclass(frozen=True)
class Rate:
    value: float | None
    ci: tuple[float, float] | None  # 95%, t over tasks, clipped to [0, 1]
    n_tasks: int


@dataclass(frozen=True)
class ToolSelection:
    tool: str
    first: Rate  # share of trials whose first call was this tool, mean over tasks
    called: Rate  # share of trials that called it at all, mean over tasks


@dataclass(frozen=True)
class ArmSelection:
    arm: str
    tools: list[ToolSelection]  # by tool name, NO_CALL last under `first` only
    no_call: Rate  # share of trials with no tool call


@dataclass(frozen=True)
class SelectionStudy:
    arms: list[ArmSelection]
    unit: str = "task"
    interval: str = "95% t interval over tasks of the per-task shares (intervals.task_mean_interval)"
    summary: list[str] = field(default_factory=list)


class SelectionTally:
    """Per arm and task: trials, first calls by tool, trials calling each tool (bounded by arms x tasks x tools)."""

    def __init__(self, include_assisted: bool = False) -> None:
        self.include_assisted = include_assisted
        self.arms: dict[str, dict[str, tuple[list[int], dict[str, int], dict[str, int]]]] = {}
        self.tools: set[str] = set()

    def add(self, record: TrialResult) -> None:
        if not in_primary_analysis(record, self.include_assisted):
            return
        tasks = self.arms.setdefault(record.arm, {})
        count, first, called = tasks.setdefault(record.task_id, ([0], {}, {}))
        count[0] += 1
        names = [str(call.get("tool_name")) for call in record.tool_calls if call.get("tool_name")]
        head = names[0] if names else NO_CALL
        first[head] = first.get(head, 0) + 1
        for name in set(names):
            called[name] = called.get(name, 0) + 1
        self.tools.update(names)

    def study(self, arm_order: Sequence[str]) -> SelectionStudy | None:
        """None when no analysed trial called a tool."""
        if not self.tools:
            return None
        names = [a for a in arm_order if a in self.arms] + sorted(a for a in self.arms if a not in arm_order)
        arms = []
        for name in names:
            tasks = list(self.arms[name].values())
            trials = [n[0] for n, _, _ in tasks]
            tools = [ToolSelection(tool, _rate([f.get(tool, 0) / n[0] for n, f, _ in tasks], trials),
                                   _rate([c.get(tool, 0) / n[0] for n, _, c in tasks], trials))
                     for tool in sorted(self.tools)]
            arms.append(ArmSelection(name, tools, _rate([f.get(NO_CALL, 0) / n[0] for n, f, _ in tasks], trials)))
        study = SelectionStudy(arms)
        return SelectionStudy(arms, summary=summary_lines(study))


def _rate(shares: list[float], trials: list[int]) -> Rate:
    """The arms' interval rule for a rate over tasks (intervals.task_mean_interval: t over tasks, the spread
    floored by the pass/fail variance of the trials, Wilson over tasks when every task is at 0 or 1)."""
    if not shares:
        return Rate(None, None, 0)
    estimate = task_mean_interval(shares, trials=trials)
    return Rate(estimate.value, estimate.ci, len(shares))


def _shown(rate: Rate) -> str:
    if rate.value is None:
        return "-"
    ci = f" [{rate.ci[0]:.2f}, {rate.ci[1]:.2f}]" if rate.ci is not None else ""
    return f"{rate.value:.2f}{ci}"


def summary_lines(study: SelectionStudy) -> list[str]:
    """One line per arm: each tool's first-call and any-call rate with its interval over tasks."""
    lines = []
    for arm in study.arms:
        tools = "; ".join(f"{t.tool} first {_shown(t.first)}, called {_shown(t.called)}" for t in arm.tools)
        n = arm.no_call.n_tasks
        lines.append(f"tool selection, {arm.arm} (share of trials, mean over {n} task{'s' if n != 1 else ''}, "
                     f"95% t interval over tasks): {tools}; no tool call {_shown(arm.no_call)}")
    return lines
