"""The suites and their tasks; chained tasks in dependency order, with arrows from their inputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widgets import Tree

from corral_tui.services.catalogue import SuiteView


@dataclass(frozen=True)
class TaskRef:
    """What a tree node stands for: a suite (task_id None) or one of its tasks."""

    suite: str
    task_id: str | None = None


class TaskTree(Tree[TaskRef]):
    """Suites as branches, tasks as leaves. Highlighting a node posts Tree.NodeHighlighted."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("suites", **kwargs)
        self.show_root = False
        self.guide_depth = 2

    def show_suites(self, suites: list[SuiteView]) -> None:
        self.clear()
        for suite in suites:
            label = Text.assemble((suite.name, "bold"), (f"  {len(suite.tasks)} tasks", "dim"))
            if suite.chained:
                label.append("  chain", style="magenta")
            branch = self.root.add(label, data=TaskRef(suite.name), expand=True)
            for task in suite.tasks:
                branch.add_leaf(self._task_label(task.id, task.depends_on, task.solvable),
                                data=TaskRef(suite.name, task.id))

    @staticmethod
    def _task_label(task_id: str, depends_on: tuple[str, ...], solvable: bool) -> Text:
        """`task` alone, `→ task ← inputs` for a chain link, with ⊘ when declared unsolvable."""
        label = Text.assemble(("→ ", "magenta"), task_id) if depends_on else Text(task_id)
        if not solvable:
            label.append(" ⊘", style="yellow")
        if depends_on:
            label.append(f" ← {', '.join(depends_on)}", style="dim")
        return label

    def select_first_task(self) -> None:
        """Put the cursor on the first task (start-up)."""
        self._move_to(lambda ref: ref.task_id is not None)

    def select_suite(self, name: str) -> None:
        """Put the cursor on suite `name` (an opened spec file's suite)."""
        self._move_to(lambda ref: ref.task_id is None and ref.suite == name)

    def _move_to(self, wanted: Callable[[TaskRef], bool]) -> None:
        """Move the cursor to the first node whose ref is `wanted`, by line. Not `move_cursor(node)`: it
        reads the node's line, -1 until the tree builds its lines on its next idle or paint (the suites
        arrive just before), which put the cursor nowhere and highlighted no task."""
        for line in range(self.last_line + 1):  # reading the lines builds them
            node = self.get_node_at_line(line)
            if node is not None and node.data is not None and wanted(node.data):
                self.move_cursor_to_line(line)
                return
