"""Chained tasks (seed "Task Chaining"): dependency order, and the outputs one round shares.

Each round of a chain is an *episode*: its links run in dependency order and every link sees the
outputs its upstream links produced in the same episode, never those of another round (Corral's
shared `TaskGroup.results` leaked stale answers across rounds; an `EpisodeStore` cannot).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class DependencyError(ValueError):
    """An unknown dependency or a cycle among tasks."""


def topological_order(graph: Mapping[str, list[str]]) -> list[str]:
    """Tasks ordered so that each comes after its dependencies; authoring order breaks ties."""
    for task, deps in graph.items():
        for dep in deps:
            if dep not in graph:
                raise DependencyError(f"task {task!r} depends on unknown task {dep!r}")
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(task: str, trail: list[str]) -> None:
        mark = state.get(task)
        if mark == "done":
            return
        if mark == "visiting":
            cycle = " -> ".join([*trail[trail.index(task):], task])
            raise DependencyError(f"cycle detected among tasks: {cycle}")
        state[task] = "visiting"
        for dep in graph[task]:
            visit(dep, [*trail, task])
        state[task] = "done"
        order.append(task)

    for task in graph:
        visit(task, [])
    return order


@dataclass(slots=True)
class LinkOutput:
    answer: str
    score: float | None
    trial_id: str | None = None


class EpisodeStore:
    """The outputs of one chain round, shared by that round's trials (thread-safe)."""

    def __init__(self, episode_id: str = "") -> None:
        self.episode_id = episode_id
        self._outputs: dict[str, LinkOutput] = {}
        self._lock = threading.Lock()

    def record(self, task_id: str, answer: str, score: float | None, trial_id: str | None = None) -> None:
        with self._lock:
            self._outputs[task_id] = LinkOutput(answer, score, trial_id)

    def discard(self, task_id: str) -> None:
        """Forget a task's output (its latest trial produced none)."""
        with self._lock:
            self._outputs.pop(task_id, None)

    def output(self, task_id: str) -> LinkOutput | None:
        with self._lock:
            return self._outputs.get(task_id)

    def outputs(self) -> dict[str, LinkOutput]:
        with self._lock:
            return dict(self._outputs)


# --- the seed's Python API -------------------------------------------------------------------


@dataclass
class TaskDefinition:
    """A task within a TaskGroup (seed fields)."""

    name: str
    description: str
    tools: list[str] = field(default_factory=list)
    scoring_fn: Callable[..., Any] | None = None
    submission_format: dict[str, str] = field(default_factory=dict)
    scoring_inputs: dict[str, Any] = field(default_factory=dict)
    input_from_tasks: list[str] = field(default_factory=list)
    initial_input: dict[str, Any] = field(default_factory=dict)

    def has_dependencies(self) -> bool:
        return bool(self.input_from_tasks)


@dataclass
class TaskGroup:
    """Related tasks (seed fields); `chained_tasks` turns on when any task has dependencies."""

    group_id: str = "task_group"
    tasks: dict[str, TaskDefinition] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    chained_tasks: bool = False

    def __post_init__(self) -> None:
        if any(t.has_dependencies() for t in self.tasks.values()):
            self.chained_tasks = True
        self.get_ordered_tasks()  # fail early on unknown dependencies and cycles

    def get_task_input(self, task_id: str) -> dict[str, Any]:
        task = self.tasks[task_id]
        inputs = copy.deepcopy(task.initial_input)
        for dep in task.input_from_tasks:
            if dep in self.results:
                result = self.results[dep]
                inputs[f"result_from_{dep}"] = result.get("answer", result) if isinstance(result, dict) else result
        return inputs

    def store_result(self, task_id: str, result: Any, score: float) -> None:
        self.results[task_id] = result
        self.scores[task_id] = score

    def get_ordered_tasks(self) -> list[str]:
        return topological_order({tid: list(t.input_from_tasks) for tid, t in self.tasks.items()})

    def check_dependencies_satisfied(self, task_id: str) -> bool:
        return all(self.results.get(dep) is not None for dep in self.tasks[task_id].input_from_tasks)
