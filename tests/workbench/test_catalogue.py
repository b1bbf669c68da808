"""SuiteCatalogue: suites as the tree shows them, prompts and guides, specs from the run form."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from corral_core.errors import UserError
from corral_tui.run_request import RunRequest
from corral_tui.services.catalogue import SuiteCatalogue
from tests.workbench.conftest import ROOT, SAMPLEMATH, TUITEST


def test_suites_load_in_dependency_order_with_their_task_facts() -> None:
    catalogue = SuiteCatalogue([SAMPLEMATH, ROOT / "sample_tasks" / "materials_chain.yaml", TUITEST])
    views = {view.name: view for view in catalogue.load()}
    chain = views["materials_chain"]
    assert chain.chained and chain.script
    ids = [task.id for task in chain.tasks]
    for task in chain.tasks:  # every link comes after the links it depends on
        assert all(ids.index(upstream) < ids.index(task.id) for upstream in task.depends_on)
    assert [task.id for task in views["tuitest"].tasks] == ["mark", "count"]
    assert set(catalogue.suites) == {"samplemath", "materials_chain", "tuitest"}


def test_task_text_expected_answers_and_task_ids() -> None:
    catalogue = SuiteCatalogue([TUITEST])
    catalogue.load()
    prompt, guide = catalogue.task_text("tuitest", "mark", "minimal")
    assert "marker.txt" in prompt and "write_marker" in guide
    assert catalogue.expected_answer([str(TUITEST)], "count") == "5"
    assert catalogue.expected_answer(["/elsewhere.yaml"], "count") is None
    assert catalogue.task_ids([str(TUITEST)]) == ["mark", "count"]


def test_a_run_form_request_becomes_a_valid_spec() -> None:
    catalogue = SuiteCatalogue([TUITEST])
    catalogue.load()
    spec = catalogue.build_spec(RunRequest(suite="tuitest", tasks=["count"], verbosities=["minimal", "full"],
                                           trials=2, approval="reject"), approval_timeout=30.0)
    assert (spec.task_ids, spec.total_trials, spec.approval, spec.timeouts.approval) == (["count"], 4, "reject", 30.0)
    assert spec.model.id == "scripted/tuitest"


def test_mistakes_are_user_errors(tmp_path: Path) -> None:
    twin = tmp_path / "twin.yaml"
    shutil.copy(TUITEST, twin)
    shutil.copy(TUITEST.with_name("tuitest_env.py"), tmp_path / "tuitest_env.py")
    with pytest.raises(UserError, match="two suites are named 'tuitest'"):
        SuiteCatalogue([TUITEST, twin]).load()
    catalogue = SuiteCatalogue([TUITEST])
    catalogue.load()
    with pytest.raises(UserError, match="unknown suite 'nope'"):
        catalogue.build_spec(RunRequest(suite="nope"), approval_timeout=1.0)


def test_the_services_import_without_textual() -> None:
    import subprocess
    import sys

    code = ("import sys, corral_tui.services, corral_tui.services.queries; "
            "print(sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
