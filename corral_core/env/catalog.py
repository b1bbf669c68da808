"""Several suites served as one, so one server (and one TUI) can hold all of them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from corral_core.env.chains import EpisodeStore
from corral_core.env.suite import Suite, SuiteEnvironment, TaskSpec
from corral_core.tools import Tool


class SuiteCatalog:
    """Suites side by side under one set of task ids (ids must be unique across the suites).

    It answers the same questions as a `Suite`, so the server and the runner take either.
    """

    def __init__(self, suites: Iterable[Suite]) -> None:
        self.suites = list(suites)
        if not self.suites:
            raise ValueError("a catalog needs at least one suite")
        self._owner: dict[str, Suite] = {}
        for suite in self.suites:
            for task_id in suite.task_ids:
                if task_id in self._owner:
                    other = self._owner[task_id]
                    raise ValueError(f"task id {task_id!r} is in both suite {other.name!r} and suite {suite.name!r}; "
                                     "task ids must be unique among the suites served together")
                self._owner[task_id] = suite
        self.name = "+".join(s.name for s in self.suites)
        self.description = "; ".join(s.description for s in self.suites if s.description)
        self.path: Path | None = self.suites[0].path if len(self.suites) == 1 else None
        self.script = self.suites[0].script

    @property
    def tasks(self) -> dict[str, TaskSpec]:
        return {tid: suite.tasks[tid] for tid, suite in self._owner.items()}

    @property
    def tools(self) -> dict[str, Tool]:
        merged: dict[str, Tool] = {}
        for suite in self.suites:
            for name, tool in suite.tools.items():
                merged.setdefault(name, tool)
        return merged

    @property
    def task_ids(self) -> list[str]:
        return list(self._owner)

    @property
    def chained(self) -> bool:
        return any(s.chained for s in self.suites)

    def suite_of(self, task_id: str) -> Suite:
        return self._owner[task_id]

    def dependency_graph(self) -> dict[str, list[str]]:
        graph: dict[str, list[str]] = {}
        for suite in self.suites:
            graph.update(suite.dependency_graph())
        return graph

    def ordered_task_ids(self) -> list[str]:
        return [tid for suite in self.suites for tid in suite.ordered_task_ids()]

    def tools_for(self, task_id: str, variant: str | None = None, components: Iterable[str] | None = None
                  ) -> list[Tool]:
        return self._owner[task_id].tools_for(task_id, variant, components)

    def create_environment(self, task_id: str, *, work_dir: str | Path | None = None,
                           episode: EpisodeStore | None = None, **options: Any) -> SuiteEnvironment:
        return self._owner[task_id].create_environment(task_id, work_dir=work_dir, episode=episode, **options)


def combine_suites(suites: Iterable[Suite]) -> Suite | SuiteCatalog:
    """One suite as is; several as a `SuiteCatalog`."""
    suites = list(suites)
    return suites[0] if len(suites) == 1 else SuiteCatalog(suites)
