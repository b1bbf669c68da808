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

Scoring functions are called as Corral calls them: `scoring_fn(answer)`, or with the task's
`scoring_inputs` as the ground truth when the function takes a parameter named ground_truth,
target, expected or reference (or two required positional parameters).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from corral_core.env.chains import TaskDefinition, TaskGroup
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
