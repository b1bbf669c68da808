"""The run form follows the selected suite, and the model's API base comes from the form or the
command line (issue 12 item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from corral_tui.cli import parse_options
from corral_tui.config import config_from_args
from corral_tui.screens.dialogs import ErrorScreen
from corral_tui.widgets.run_form import RunForm
from corral_tui.widgets.task_tree import TaskTree
from tests.tui.helpers import SAMPLEMATH, SIZE, TUITEST, make_app, run_done, start_run, wait_for, wait_ready

pytestmark = pytest.mark.anyio


def _suite_node(tree: TaskTree, name: str):
    return next(branch for branch in tree.root.children if branch.data is not None and branch.data.suite == name)


async def test_the_form_follows_the_selected_suite(tmp_path: Path) -> None:
    """Moving to another suite names its tasks in the placeholder and clears task ids it does not have
    (they would be refused at Start); ids both suites have are kept."""
    app = make_app(tmp_path, suites=[SAMPLEMATH, TUITEST])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = app.workbench_screen
        form, tree = screen.query_one(RunForm), screen.query_one(TaskTree)
        tasks = screen.query_one("#form-tasks", Input)
        tree.move_cursor(_suite_node(tree, "samplemath"))
        await wait_for(pilot, lambda: form.suite == "samplemath", "the form to follow samplemath")
        assert tasks.placeholder == "all: add, multiply, divide, power, …"
        tasks.value = "add, power"
        tree.move_cursor(_suite_node(tree, "tuitest"))
        await wait_for(pilot, lambda: form.suite == "tuitest", "the form to follow tuitest")
        assert str(screen.query_one("#form-suite").render()) == "tuitest"
        assert tasks.placeholder == "all: mark, count" and tasks.value == ""
        tasks.value = "count"
        tree.move_cursor(_suite_node(tree, "tuitest").children[0])  # a task of the same suite keeps the value
        await wait_for(pilot, lambda: screen.selected is not None and screen.selected.task_id == "mark",
                       "the task to be highlighted")
        assert tasks.value == "count"
        assert form.request().tasks == ["count"]


async def test_the_api_base_comes_from_the_form_and_the_command_line(tmp_path: Path) -> None:
    """--model and --model-base-url fill the form; the API base field reaches the spec's model."""
    args = parse_options(["--suite", str(SAMPLEMATH), "--model", "openai/local-model",
                                      "--model-base-url", "http://127.0.0.1:8000/v1"])
    config = config_from_args(args)
    assert (config.model, config.model_base_url) == ("openai/local-model", "http://127.0.0.1:8000/v1")
    app = make_app(tmp_path, model=config.model, model_base_url=config.model_base_url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        form = app.workbench_screen.query_one(RunForm)
        assert form.query_one("#form-api_base", Input).value == "http://127.0.0.1:8000/v1"
        request = form.request()
        assert (request.model, request.api_base) == ("openai/local-model", "http://127.0.0.1:8000/v1")
        form.set_values(api_base="http://10.0.0.5:9000/v1")
        spec = app.services.catalogue.build_spec(form.request(), 30.0)
        assert {(arm.model.id, arm.model.api_base) for arm in spec.arms} == {("openai/local-model",
                                                                              "http://10.0.0.5:9000/v1")}


async def test_a_task_text_that_arrives_after_quitting_is_dropped(tmp_path: Path) -> None:
    """The prompt and guide load on a worker; quitting right after start-up must not fail when they
    arrive after the workbench's widgets are gone (NoMatches for #task-text, seen once in this file)."""
    from corral_tui.messages import TaskTextLoaded

    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        selected = app.workbench_screen.selected
    assert selected is not None and not app.workbench_screen.live
    app._task_text(TaskTextLoaded(selected.suite, selected.task_id or "", "full", "prompt", "guide"))


async def test_a_refused_model_leaves_the_form_open_to_correct_it(tmp_path: Path) -> None:
    """A model litellm cannot route is refused before anything runs; the form, locked for the run, is
    unlocked again so the model can be corrected and the run started (it stayed locked, 'Starting ...')."""
    app = make_app(tmp_path, suites=[SAMPLEMATH])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", tasks="add", model="opnai/gpt-4o")
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen), "the refusal")
        assert "'opnai' is not a provider litellm knows" in app.screen.message
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ErrorScreen), "the message to close")
        model = app.workbench_screen.query_one("#form-model", Input)
        assert app.run_state == "failed" and not model.disabled
        assert "correct the form" in str(app.workbench_screen.query_one("#status").render())
        model.value = ""  # back to the suite's scripted model
        await pilot.press("ctrl+r")  # runs the form from anywhere
        await wait_for(pilot, lambda: run_done(app), "the corrected run")
        assert app.run_state == "finished"
