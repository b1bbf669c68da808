"""The suite catalogue: the suites the workbench opened, as the task tree and the run form see them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral_core.errors import UserError
from corral_tui.run_request import RunRequest

if TYPE_CHECKING:
    from corral_core.env import Suite
    from corral_core.spec import BenchmarkSpec


@dataclass(frozen=True)
class TaskView:
    id: str
    prompt: str
    depends_on: tuple[str, ...]
    solvable: bool


@dataclass(frozen=True)
class SuiteView:
    """A suite as the task tree shows it: tasks in dependency order."""

    name: str
    description: str
    path: Path
    script: str | None
    chained: bool
    tasks: tuple[TaskView, ...]


class SuiteCatalogue:
    """Loads the configured suite files once (`load`), then answers questions about them."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = list(paths)
        self._suites: dict[str, Suite] = {}
        self._read: dict[Path, Suite] = {}  # suites of stored benchmarks read from disk (not opened)

    def load(self) -> list[SuiteView]:
        """Load every suite (UserError names the file and line of a mistake)."""
        from corral_core.env import load_suite

        views = []
        for path in self.paths:
            suite = load_suite(path)
            if suite.name in self._suites:
                raise UserError(f"two suites are named {suite.name!r}.", file=path, fix="rename one of them.")
            self._suites[suite.name] = suite
            tasks = tuple(TaskView(tid, prompt_text(suite.tasks[tid].prompt), tuple(suite.tasks[tid].depends_on),
                                   suite.tasks[tid].solvable) for tid in suite.ordered_task_ids())
            views.append(SuiteView(suite.name, suite.description, Path(path), suite.script, suite.chained, tasks))
        return views

    @property
    def suites(self) -> dict[str, Suite]:
        """Suite name -> the loaded suite (empty before `load`)."""
        return dict(self._suites)

    def suite(self, name: str) -> Suite:
        suite = self._suites.get(name)
        if suite is None:
            raise UserError(f"unknown suite {name!r}.", where="run form", fix="pick a suite in the tree.")
        return suite

    def task_text(self, suite: str, task_id: str, verbosity: str) -> tuple[str, str]:
        """(prompt, tools guide at `verbosity`) of one task."""
        from corral_core.tools import parse_verbosity, tools_guide

        spec = self.suite(suite)
        return prompt_text(spec.tasks[task_id].prompt), tools_guide(spec.tools_for(task_id),
                                                                    parse_verbosity(verbosity))

    def expected_answer(self, suite_paths: list[str], task_id: str) -> str | None:
        """The expected answer of `task_id` in one of the given suite files (None: it has none, or no such
        task is known)."""
        suite = self.suite_of(suite_paths, task_id)
        answer = suite.tasks[task_id].answer if suite is not None else None
        return None if answer is None else str(answer)

    def suite_of(self, suite_paths: list[str], task_id: str) -> Suite | None:
        """The suite among `suite_paths` (a stored benchmark's) that has `task_id`: an open one (paths
        compared resolved, so `sample_tasks/x.yaml` is the same file as its absolute path), else the file
        read from disk when it still loads; None when neither."""
        from corral_core.env import load_suite

        wanted = [Path(path).resolve() for path in suite_paths]
        for suite in self._suites.values():
            if suite.path is not None and Path(suite.path).resolve() in wanted and task_id in suite.tasks:
                return suite
        for path in wanted:
            try:
                suite = self._read.get(path) or self._read.setdefault(path, load_suite(path))
            except (UserError, OSError):
                continue
            if task_id in suite.tasks:
                return suite
        return None

    def task_ids(self, suite_paths: list[str]) -> list[str]:
        """Task ids of the loaded suites among `suite_paths` (a stored benchmark's suites)."""
        wanted = {str(Path(path)) for path in suite_paths}
        return [task_id for suite in self._suites.values() if str(suite.path) in wanted for task_id in suite.task_ids]

    def build_spec(self, request: RunRequest, approval_timeout: float) -> BenchmarkSpec:
        """The benchmark spec a run-form request stands for (UserError when it is not valid)."""
        from corral_core.spec import spec_from_dict

        suite = self.suite(request.suite)
        path = Path(suite.path or "")
        return spec_from_dict(request.spec_data(path, approval_timeout), path.parent, source="<run form>")


def prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(str(part.get("text", part)) if isinstance(part, dict) else str(part) for part in prompt)
