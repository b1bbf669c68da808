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

Where tasks declare `correct_tools` (the tools that count as a correct choice), two more rates per arm,
over those tasks only: the share of trials whose first call named a correct tool, and the share that
called one at all (a trial with no call is wrong on both), with the same interval.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
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
    # over the tasks that declare `correct_tools` (None when none of the arm's tasks does): the share of
    # trials whose first call was a correct tool, and the share that called a correct tool at all
    correct_first: Rate | None = None
    correct_any: Rate | None = None


@dataclass(frozen=True)
class SelectionStudy:
    arms: list[ArmSelection]
    unit: str = "task"
    interval: str = "95% t interval over tasks of the per-task shares (intervals.task_mean_interval)"
    summary: list[str] = field(default_factory=list)
    correct_tools: dict[str, list[str]] = field(default_factory=dict)  # task -> its correct tools, as declared


class _TaskCalls:
    __slots__ = ("called", "correct_any", "correct_first", "first", "n")

    def __init__(self) -> None:
        self.n = 0  # analysed trials
        self.first: dict[str, int] = {}  # tool (or NO_CALL) -> trials whose first call it was
        self.called: dict[str, int] = {}  # tool -> trials that called it at least once
        self.correct_first = 0  # trials whose first call was a correct tool (tasks with `correct_tools`)
        self.correct_any = 0  # trials that called a correct tool at all


class SelectionTally:
    """Per arm and task: trials, first calls by tool, trials calling each tool, and correct choices where
    the task declares its `correct_tools` (bounded by arms x tasks x tools)."""

    def __init__(self, include_assisted: bool = False,
                 correct_tools: Mapping[str, Collection[str]] | None = None) -> None:
        self.include_assisted = include_assisted
        self.correct_tools = {task: frozenset(tools) for task, tools in (correct_tools or {}).items() if tools}
        self.arms: dict[str, dict[str, _TaskCalls]] = {}
        self.tools: set[str] = set()

    def add(self, record: TrialResult) -> None:
        if not in_primary_analysis(record, self.include_assisted):
            return
        tasks = self.arms.setdefault(record.arm, {})
        calls = tasks.get(record.task_id)
        if calls is None:
            calls = tasks[record.task_id] = _TaskCalls()
        calls.n += 1
        names = [str(call.get("tool_name")) for call in record.tool_calls if call.get("tool_name")]
        head = names[0] if names else NO_CALL
        calls.first[head] = calls.first.get(head, 0) + 1
        for name in set(names):
            calls.called[name] = calls.called.get(name, 0) + 1
        correct = self.correct_tools.get(record.task_id)
        if correct is not None:
            calls.correct_first += head in correct
            calls.correct_any += any(name in correct for name in names)
        self.tools.update(names)

    def study(self, arm_order: Sequence[str]) -> SelectionStudy | None:
        """None when no analysed trial called a tool and no analysed task declares its correct tools."""
        declared = {task: sorted(self.correct_tools[task]) for tasks in self.arms.values() for task in tasks
                    if task in self.correct_tools}
        if not self.tools and not declared:
            return None
        names = [a for a in arm_order if a in self.arms] + sorted(a for a in self.arms if a not in arm_order)
        arms = []
        for name in names:
            tasks = list(self.arms[name].values())
            trials = [t.n for t in tasks]
            tools = [ToolSelection(tool, _rate([t.first.get(tool, 0) / t.n for t in tasks], trials),
                                   _rate([t.called.get(tool, 0) / t.n for t in tasks], trials))
                     for tool in sorted(self.tools)]
            judged = [t for task, t in self.arms[name].items() if task in self.correct_tools]
            judged_trials = [t.n for t in judged]
            correct_first = _rate([t.correct_first / t.n for t in judged], judged_trials) if judged else None
            correct_any = _rate([t.correct_any / t.n for t in judged], judged_trials) if judged else None
            arms.append(ArmSelection(name, tools, _rate([t.first.get(NO_CALL, 0) / t.n for t in tasks], trials),
                                     correct_first, correct_any))
        study = SelectionStudy(arms, correct_tools=dict(sorted(declared.items())))
        return SelectionStudy(arms, summary=summary_lines(study), correct_tools=study.correct_tools)


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
        correct = ""
        if arm.correct_first is not None and arm.correct_any is not None:
            k = arm.correct_first.n_tasks
            correct = (f"; correct tool first {_shown(arm.correct_first)}, called at all {_shown(arm.correct_any)} "
                       f"(over the {k} task{'s' if k != 1 else ''} declaring correct_tools)")
        lines.append(f"tool selection, {arm.arm} (share of trials, mean over {n} task{'s' if n != 1 else ''}, "
                     f"95% t interval over tasks): {tools or 'no tool called'}; no tool call "
                     f"{_shown(arm.no_call)}{correct}")
    return lines
