"""A `.bench.yaml` into the run form and the form out as one, and several agents and models as arms
of one run from the form (issue 24, Build 4). Used as a person does: ctrl+o / ctrl+s, a path typed
into the dialog, values typed into the form's fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from textual.widgets import Checkbox, Input, Label, Select, Static

from corral_core.spec import load_spec
from corral_tui.cli import main
from corral_tui.screens.dialogs import SpecFileScreen
from corral_tui.spec_file import plan
from corral_tui.widgets.run_form import RunForm
from tests.tui.helpers import ROOT, SAMPLEMATH, SIZE, TUITEST, make_app, run_done, wait_for, wait_ready
from tests.tui.typing import type_text

pytestmark = pytest.mark.anyio

COMPARE_SPEC = f"""\
name: my-compare
description: two agents at two documentation levels
suite: {SAMPLEMATH}
model: scripted/samplemath
agent: {{type: react, max_iterations: 6}}
arms:
  - {{verbosity: brief, agent: {{type: react, max_iterations: 6}}}}
  - {{verbosity: full, agent: {{type: react, max_iterations: 6}}}}
  - {{verbosity: brief, agent: {{type: planner, max_iterations: 6}}}}
  - {{verbosity: full, agent: {{type: planner, max_iterations: 6}}}}
tasks: [add, power]
trials_per_task: 2
k_values: [1, 2]
parallel: 3
surrender: true
approval: reject
hooks: {{breakpoints: ["tool:calculator"]}}
timeouts: {{trial: 90, approval: 45}}
limits: {{trial: {{tokens: 5000}}}}
"""


def _value(form: RunForm, name: str) -> object:
    widget = form.query_one(f"#form-{name}")
    assert isinstance(widget, (Input, Select, Checkbox))
    return widget.value


def _label(form: RunForm) -> str:
    return str(form.query_one("#form-file", Label).render())


async def _through_dialog(pilot, key: str, path: Path | str) -> SpecFileScreen:
    """Press `key` (ctrl+o or ctrl+s), type the path into the dialog's field (it has the focus) and Enter."""
    app = pilot.app
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, SpecFileScreen), f"the dialog of {key}")
    dialog = app.screen
    assert isinstance(app.focused, Input) and app.focused.id == "specfile-path"
    type_text(app, str(path), "enter")
    return dialog


async def _closed_or_problem(pilot, dialog: SpecFileScreen) -> str:
    """The dialog's problem text once it shows one, or '' once the dialog has closed."""
    problem = dialog.query_one("#specfile-problem", Static)
    await wait_for(pilot, lambda: pilot.app.screen is not dialog or str(problem.render()),
                   "the dialog to close or to say what is wrong")
    return "" if pilot.app.screen is not dialog else str(problem.render())


async def test_a_spec_file_opens_into_every_field_of_the_form(tmp_path: Path) -> None:
    """ctrl+o and a path: every field the form has comes from the file, the keys it has no field for
    are named as kept, and the form then runs exactly the file's plan."""
    spec_path = tmp_path / "compare.bench.yaml"
    spec_path.write_text(COMPARE_SPEC, encoding="utf-8")
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        form = app.workbench_screen.query_one(RunForm)
        assert await _closed_or_problem(pilot, await _through_dialog(pilot, "ctrl+o", spec_path)) == ""
        values = {name: _value(form, name) for name in ("tasks", "agent", "agents", "iterations", "model", "api_base",
                                                        "api_key_env", "arms", "trials", "parallel", "approval",
                                                        "breakpoints", "surrender", "paused")}
        assert values == {"tasks": "add, power", "agent": "react", "agents": "planner", "iterations": "6",
                          "model": "scripted/samplemath", "api_base": "", "api_key_env": "", "arms": "brief, full",
                          "trials": "2", "parallel": "3", "approval": "reject", "breakpoints": "tool:calculator",
                          "surrender": True, "paused": False}
        label = _label(form)
        assert "From compare.bench.yaml" in label and "NOT SHOWN" not in label
        assert "kept as written: description, k_values, limits, name, timeouts" in label
        ran = app.services.catalogue.build_spec(form.request(), app.config.approval_timeout)
        assert plan(ran) == plan(load_spec(spec_path))
        assert [arm.name for arm in ran.arms] == ["brief-react", "full-react", "brief-planner", "full-planner"]


async def test_what_the_form_cannot_show_is_named(tmp_path: Path) -> None:
    """The sample spec names its arms itself and gives the planner an option: the form shows the rest
    and names what it would run differently, in the form and on the status line."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        form = app.workbench_screen.query_one(RunForm)
        sample = ROOT / "sample_tasks" / "samplemath.bench.yaml"
        assert await _closed_or_problem(pilot, await _through_dialog(pilot, "ctrl+o", sample)) == ""
        assert _value(form, "agents") == "tool_calling, planner, reflection"
        label = _label(form)
        assert "NOT SHOWN" in label and "arm_names" in label
        assert "arms[2].agent.options.executor_max_iterations" in label


async def test_a_bad_spec_file_is_answered_in_the_dialog_without_a_traceback(tmp_path: Path) -> None:
    """A mistake in the file is the paragraph --batch prints (file, key, fix), shown in the dialog, which
    stays open for another path; a missing file, several suites and a suite not open are refused in words."""
    bad = tmp_path / "bad.bench.yaml"
    bad.write_text(f"suite: {SAMPLEMATH}\nmodle: scripted/samplemath\ntrials_per_task: zero\n", encoding="utf-8")
    two = tmp_path / "two.bench.yaml"
    two.write_text(f"suites: [{SAMPLEMATH}, {TUITEST}]\nmodel: scripted/samplemath\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere.bench.yaml"
    elsewhere.write_text(f"suite: {TUITEST}\n", encoding="utf-8")
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        form = app.workbench_screen.query_one(RunForm)
        before = form.request()
        dialog = await _through_dialog(pilot, "ctrl+o", bad)
        problem = await _closed_or_problem(pilot, dialog)
        assert "bad.bench.yaml" in problem and "modle" in problem and "trials_per_task" in problem
        assert "Traceback" not in problem and app.screen is dialog
        for path, words in ((tmp_path / "nowhere.bench.yaml", "nowhere.bench.yaml"),
                            (two, "runs 2 suites; the run form runs one"),
                            (elsewhere, "is not open in this workbench")):
            await pilot.press("ctrl+a", "ctrl+k")  # empty the field, as a person would
            type_text(app, str(path), "enter")
            await wait_for(pilot, lambda w=words: w in str(dialog.query_one("#specfile-problem", Static).render()),
                           f"the dialog to say {words!r}")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.workbench_screen, "the dialog to close")
        assert form.request() == before


async def test_the_form_saved_as_a_spec_runs_the_same_plan_headless(tmp_path: Path) -> None:
    """Two models and two agents typed into the form are the arms of one run: saved with ctrl+s, the
    file loads (as --batch reads it) to the form's plan, `corral-tui --batch` runs those arms, and the
    workbench's own run of the form is the same benchmark (same spec digest)."""
    saved = tmp_path / "specs" / "saved.bench.yaml"
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = app.workbench_screen
        form = screen.query_one(RunForm)
        for name, text in (("tasks", "add"), ("model", "scripted/samplemath, scripted/tuitest"),
                           ("agents", "tool_calling"), ("arms", "brief, full")):
            screen.query_one(f"#form-{name}", Input).focus()
            await pilot.pause()
            type_text(app, text)
            await wait_for(pilot, lambda n=name, t=text: _value(form, n) == t, f"{name} to read {text!r}")
        request = form.request()
        assert request.models == ["scripted/samplemath", "scripted/tuitest"] and request.agents == ["react",
                                                                                                    "tool_calling"]
        assert await _closed_or_problem(pilot, await _through_dialog(pilot, "ctrl+s", saved)) == ""
        assert "Saved as saved.bench.yaml" in _label(form)
        written = yaml.safe_load(saved.read_text(encoding="utf-8"))
        assert not Path(written["suite"]).is_absolute()  # relative to the file, as a spec gives it
        assert (saved.parent / written["suite"]).resolve() == SAMPLEMATH.resolve()
        ran = app.services.catalogue.build_spec(form.request(), app.config.approval_timeout)
        batch = load_spec(saved)
        assert plan(batch) == plan(ran) and batch.digest == ran.digest
        assert [arm.name for arm in ran.arms] == ["brief-samplemath-react", "full-samplemath-react",
                                                 "brief-samplemath-tool_calling", "full-samplemath-tool_calling",
                                                 "brief-tuitest-react", "full-tuitest-react",
                                                 "brief-tuitest-tool_calling", "full-tuitest-tool_calling"]
        screen.query_one("#form-start").focus()
        await pilot.press("r")  # the workbench runs the same form
        await wait_for(pilot, lambda: run_done(app), "the workbench run to end")
        stored = app.services.queries.benchmarks(0).items
    out = tmp_path / "batch.json"
    assert main(["--batch", str(saved), "--db", str(tmp_path / "batch.db"), "--json", str(out), "--quiet"]) in (0, 1)
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["spec_digest"] == ran.digest == stored[0].spec_digest
    assert list(result["arms"]) == [arm.name for arm in ran.arms]
    assert result["trials_run"] == result["trials_total"] == 8 and result["spec"]["parallel"] == ran.parallel
