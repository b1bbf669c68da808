"""Serve the seed's Python chaining API: a `TaskGroup` of `TaskDefinition`s becomes a `Suite`.

```python
group = TaskGroup("materials", {
    "lookup": TaskDefinition("lookup", "Retrieve the structure of GaAs.", tools=["lookup_material"],
                             scoring_fn=check_structure),
    "volume": TaskDefinition("volume", "Compute its cell volume.", input_from_tasks=["lookup"],
                             scoring_fn=check_volume, scoring_inputs={"expected": 180.65}),
})
app = create_app(suite_from_task_group(group, tools=[lookup_material, cell_volume]))
```

Or, as the seed's "Task Chaining" shows, one `ChainedEnvironment` per task of the group, served
with `create_benchmark_server(environments)` (corral_core.corral):

```python
environments = {task_id: ChainedEnvironment(task_id, group, tools=[lookup_material, cell_volume])
                for task_id in group.tasks}
```

Scoring functions are called as Corral calls them: `scoring_fn(answer)`, or with the task's
`scoring_inputs` as the ground truth when the function takes a parameter named ground_truth,
target, expected or reference (or two required positional parameters).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

from corral_core.env.chains import TaskDefinition, TaskGroup
from corral_core.env.environment import Environment, ScoreResult
from corral_core.env.scoring import Scorer, ScoringContext
from corral_core.env.suite import Suite, TaskSpec
from corral_core.tools import Tool

GROUND_TRUTH_NAMES = ("ground_truth", "target", "expected", "reference")


def suite_from_task_group(group: TaskGroup, tools: Iterable[Tool], *, name: str | None = None) -> Suite:
    """A suite whose tasks are the group's, in its dependency order, with the given tools."""
    specs = [_task_spec(task_id, group.tasks[task_id], group) for task_id in group.get_ordered_tasks()]
    return Suite(name or group.group_id, specs, tools, description=f"TaskGroup {group.group_id}")


def _task_spec(task_id: str, task: TaskDefinition, group: TaskGroup) -> TaskSpec:
    lines = [task.description]
    if task.submission_format:
        lines += ["", "Required submission format:"] + [f"- {k}: {v}" for k, v in task.submission_format.items()]
    if task.initial_input:
        lines += ["", "Available input data:"] + [f"- {k}: {v}" for k, v in task.initial_input.items()]
    if task.scoring_fn is None:
        raise ValueError(f"task {task_id!r} of group {group.group_id!r} has no scoring_fn")
    return TaskSpec(id=task_id, prompt="\n".join(lines), depends_on=list(task.input_from_tasks),
                    tools=list(task.tools) or None, scoring={"type": "python"},
                    scorer=_group_scorer(task_id, task.scoring_fn, task.scoring_inputs, group))


def _group_scorer(task_id: str, scoring_fn: Callable[..., Any], ground_truth: dict[str, Any],
                  group: TaskGroup) -> Scorer:
    call = _scoring_call(scoring_fn, ground_truth)

    def score(answer: str | None, context: ScoringContext) -> Any:
        value = call(answer)
        numeric = value[0] if isinstance(value, tuple) else value
        group.store_result(task_id, {"answer": answer}, float(numeric))  # the seed's TaskGroup API
        return value

    return score


def _scoring_call(function: Callable[..., Any], ground_truth: dict[str, Any]) -> Callable[[Any], Any]:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature: the one-argument form
        return function
    for parameter in parameters:
        if parameter.name in GROUND_TRUTH_NAMES:
            return lambda answer: function(answer, **{parameter.name: ground_truth})
    required = [p for p in parameters if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) >= 2:
        return lambda answer: function(answer, ground_truth)
    return function


class ChainedEnvironment(Environment):
    """One task of a `TaskGroup`, as the seed's chaining example builds it.

    The prompt is the task's description, its submission format and "Previous results:" (the
    group's `get_task_input`: `initial_input` plus `result_from_<dependency>`); scoring calls the
    task's `scoring_fn` as Corral does and stores the result in the group. `tools` are Tool objects;
    the task gets those its definition names in `tools`.

    Served with trial routes, each chain round is an episode: upstream outputs then come from the
    round's own links, never from another round (Corral's shared `results` leaked across rounds).
    """

    def __init__(self, task_id: str, task_group: TaskGroup, tools: Iterable[Tool] | None = None,
                 base_work_dir: str | Path | None = None, **kwargs: Any) -> None:
        if task_id not in task_group.tasks:
            known = ", ".join(task_group.tasks) or "none"
            raise ValueError(f"task {task_id!r} is not in task group {task_group.group_id!r} (tasks: {known})")
        self.task_group = task_group
        self.current_task = task_group.tasks[task_id]
        if self.current_task.scoring_fn is None:
            raise ValueError(f"task {task_id!r} of group {task_group.group_id!r} has no scoring_fn")
        self._score_call = _scoring_call(self.current_task.scoring_fn, self.current_task.scoring_inputs)
        super().__init__(task_id, base_work_dir, **kwargs)
        offered = {tool.name: tool for tool in tools or ()}
        wanted = list(self.current_task.tools)
        missing = [name for name in wanted if name not in offered]
        if missing:
            raise ValueError(f"task {task_id!r} names tools {missing} that were not passed in tools=")
        for name in wanted:
            self.add_tool(offered[name])

    def get_task_input(self) -> dict[str, Any]:
        """`initial_input` plus `result_from_<dependency>` for each upstream output available."""
        if self.episode is None:
            return self.task_group.get_task_input(self.task_id)
        inputs = dict(self.current_task.initial_input)
        for dependency in self.current_task.input_from_tasks:
            output = self.episode.output(dependency)
            if output is not None:
                inputs[f"result_from_{dependency}"] = output.answer
        return inputs

    def get_task_prompt(self) -> str:
        task = self.current_task
        lines = [task.description]
        if task.submission_format:
            lines += ["", "Required submission format:"] + [f"- {k}: {v}" for k, v in task.submission_format.items()]
        inputs = self.get_task_input()
        if inputs or task.has_dependencies():
            lines += ["", f"Previous results: {inputs}"]
        return "\n".join(lines)

    def dependencies(self) -> list[str]:
        return list(self.current_task.input_from_tasks)

    def score(self) -> ScoreResult:
        value = self._score_call(self.state.submitted_answer)
        numeric = value[0] if isinstance(value, tuple) else value
        self.task_group.store_result(self.task_id, {"answer": self.state.submitted_answer}, float(numeric))
        return cast("float | tuple[float, str]", value)

    def on_scored(self, answer: str, score: float) -> None:
        if self.episode is not None:
            self.episode.record(self.task_id, answer, score, self.state.trial_id)

    def on_unscored(self) -> None:
        if self.episode is not None:
            self.episode.discard(self.task_id)
