"""`EnvironmentSuite`: serve environments a Python module built itself (Corral's `environments` dict).

Corral servers are made from `{task_id: Environment}` instances. The server answers the same
questions of this suite as of a YAML `Suite`:

- the task routes (`/tasks/{id}/...`) use the author's own instance, as Corral did;
- each trial runtime (`POST /tasks/{id}/trials`) gets `instance.for_trial(...)`: the class
  constructed again with the same arguments, in its own workspace, so parallel trials never share
  state;
- dependencies come from each environment's `dependencies()` (a `ChainedEnvironment`'s task, or a
  Corral `task_group` attribute).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from corral_core.env.chains import EpisodeStore
from corral_core.env.environment import Environment
from corral_core.env.suite import Suite, TaskSpec
from corral_core.tools import Tool
from corral_core.tools.overlay import documented

__all__ = ["EnvironmentSuite", "load_environments"]


class EnvironmentSuite(Suite):
    """A suite over ready-made environments, keyed by task id (insertion order is the task order).

    It is a `Suite`, so specs, the runner, the server and the workbench take it like a YAML suite;
    its tasks' prompts are the environments' prompts when the suite was made.
    """

    def __init__(self, environments: Mapping[str, Environment], *, name: str = "environments",
                 description: str = "", path: Path | None = None) -> None:
        if not isinstance(environments, Mapping) or not environments:
            raise TypeError("environments must be a non-empty dict of task id -> Environment instance")
        for task_id, env in environments.items():
            if not isinstance(task_id, str):
                raise TypeError(f"task ids must be text, got {task_id!r}")
            if not isinstance(env, Environment):
                raise TypeError(f"environments[{task_id!r}] is a {type(env).__name__}, not an Environment instance "
                                "(subclass corral_core.corral.Environment and construct it)")
        self.environments = dict(environments)
        tools: dict[str, Tool] = {}
        for env in self.environments.values():
            for tool_name, tool in env.tools.items():
                tools.setdefault(tool_name, tool)
        tasks = [TaskSpec(id=task_id, prompt=_prompt(env), depends_on=[d for d in env.dependencies()
                                                                      if d in self.environments],
                          scoring={"type": "python"}, scorer=_scored_by_the_environment)
                 for task_id, env in self.environments.items()]
        super().__init__(name, tasks, tools.values(), description=description, path=path)

    @property
    def chained(self) -> bool:
        if super().chained:
            return True
        return any(getattr(getattr(env, "task_group", None), "chained_tasks", False)
                   for env in self.environments.values())

    def tools_for(self, task_id: str, variant: str | None = None, components: Iterable[str] | None = None
                  ) -> list[Tool]:
        tools = list(self.environments[task_id].tools.values())
        if variant is None and components is None:
            return tools
        self.view(variant, components)  # checks the variant and the components
        kept = None if components is None else tuple(components)
        return [documented(tool, None, variant, derive=False, components=kept) for tool in tools]

    def create_environment(self, task_id: str, *, work_dir: str | Path | None = None,  # type: ignore[override]
                           episode: EpisodeStore | None = None, trial_id: str | None = None,
                           base_work_dir: str | Path | None = None, **options: Any) -> Environment:
        """The author's instance for the task routes (as Corral served it); a fresh copy built by
        `for_trial` for a trial runtime."""
        env = self.environments[task_id]
        if work_dir is None and trial_id is None:
            env.configure_runtime(episode=episode, **options)
            return env
        return env.for_trial(trial_id or env.state.trial_id, work_dir or env.get_current_work_dir() or ".",
                             episode=episode, **options)


def _prompt(env: Environment) -> str | list[dict[str, Any]]:
    try:
        prompt = env.get_task_prompt()
    except Exception as exc:  # e.g. a chain link whose inputs do not exist yet
        return f"(the prompt cannot be built yet: {exc})"
    return prompt if isinstance(prompt, (str, list)) else str(prompt)


def _scored_by_the_environment(answer: str | None, context: Any) -> float:
    raise RuntimeError("an EnvironmentSuite's environments score their own answers")


def load_environments(path: str | Path) -> EnvironmentSuite:
    """The suite of a Corral-style environment module: its `environments` dict of task id ->
    Environment, or the one behind a `create_benchmark_server(...)` app it defines."""
    from corral_core.errors import UserError
    from corral_core.pyfile import load_python_file

    file = Path(path)
    if not file.is_file():
        raise UserError(f"environment module {str(file)!r} not found.", fix="give the path of the .py file.")
    try:
        module = load_python_file(file)
    except Exception as exc:
        raise UserError(f"could not load the environment module: {type(exc).__name__}: {exc}.", file=str(file),
                        fix="fix the module so it imports cleanly.") from None
    environments = getattr(module, "environments", None)
    if isinstance(environments, Mapping):
        try:
            return EnvironmentSuite(environments, name=file.stem, path=file)
        except (TypeError, ValueError) as exc:
            raise UserError(f"`environments` cannot be served: {exc}.", file=str(file)) from None
    for value in vars(module).values():
        suite = getattr(getattr(getattr(value, "state", None), "runtime", None), "suite", None)
        if isinstance(suite, EnvironmentSuite):
            return suite
    raise UserError("the module defines no `environments` dict (task id -> Environment instance).", file=str(file),
                    fix="define `environments = {task_id: MyEnvironment(task_id, ...)}` at module level.")
