"""The task tree puts its cursor where it is told even before it has drawn its lines.

Textual's `Tree.move_cursor(node)` uses the node's line number, which is -1 until the tree builds its
lines (on its next idle or paint). The workbench picks the first task once the suites arrive; on a loaded
machine that came before the tree's build, the cursor went to line -1, no node was highlighted and the
task's prompt and guide never loaded (CI: two snapshots waited 120 s for them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Tree

from corral_tui.services.catalogue import SuiteView, TaskView
from corral_tui.widgets.task_tree import TaskRef, TaskTree


def _suite(name: str, *task_ids: str) -> SuiteView:
    tasks = tuple(TaskView(task_id, f"do {task_id}", (), True) for task_id in task_ids)
    return SuiteView(name, "", Path(f"{name}.yaml"), None, False, tasks)


class _TreeApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[TaskRef] = []

    def compose(self) -> ComposeResult:
        yield TaskTree(id="tasks")

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[TaskRef]) -> None:
        self.highlighted.append(event.node.data)


@pytest.mark.anyio
async def test_first_task_is_highlighted_before_the_tree_is_drawn() -> None:
    app = _TreeApp()
    async with app.run_test() as pilot:
        tree = app.query_one(TaskTree)
        tree.show_suites([_suite("empty"), _suite("math", "add", "mul")])
        tree.select_first_task()  # in the same turn: the tree has not built its lines yet
        await pilot.pause()
        assert tree.cursor_node is not None and tree.cursor_node.data == TaskRef("math", "add")
        assert app.highlighted[-1] == TaskRef("math", "add")


@pytest.mark.anyio
async def test_a_suite_is_selected_before_the_tree_is_drawn() -> None:
    app = _TreeApp()
    async with app.run_test() as pilot:
        tree = app.query_one(TaskTree)
        tree.show_suites([_suite("math", "add"), _suite("words", "spell")])
        tree.select_suite("words")
        await pilot.pause()
        assert tree.cursor_node is not None and tree.cursor_node.data == TaskRef("words")
        assert app.highlighted[-1] == TaskRef("words")
