"""Every sample suite runs to completion in batch with its scripted model, showing its feature."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from corral_core.batch import open_store
from corral_core.runner import BenchmarkRunner
from corral_core.spec import load_spec

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


@pytest.fixture
def store(tmp_path: Path):
    path = tmp_path / "samples.db"
    engine, repository, writer = open_store(str(path))
    yield path, repository, writer
    writer.close()
    engine.dispose()


def run_spec(name: str, store) -> tuple[Any, list[tuple]]:
    path, repository, writer = store
    result = BenchmarkRunner(load_spec(SAMPLES / f"{name}.bench.yaml"), repository=repository,
                             writer_sink=writer).run()
    writer.flush()
    with sqlite3.connect(path) as conn:
        calls = conn.execute("SELECT t.task_id, c.tool_name, c.status, c.approval FROM tool_call c "
                             "JOIN trial t ON t.id = c.trial_id ORDER BY t.task_id, c.seq").fetchall()
    return result, calls


def test_every_sample_suite_has_a_spec_that_loads():
    suites = {p.name.removesuffix(".yaml") for p in SAMPLES.glob("*.yaml")
              if not p.name.endswith((".bench.yaml", ".script.yaml"))}
    specs = {p.name.removesuffix(".bench.yaml") for p in SAMPLES.glob("*.bench.yaml")}
    assert suites == {"samplemath", "materials_chain", "impossible", "web_research", "shell_ops"}
    assert suites <= specs
    for spec in SAMPLES.glob("*.bench.yaml"):
        assert load_spec(spec).total_trials > 0


def test_samplemath_every_agent_type_solves_every_task(store):
    result, _ = run_spec("samplemath", store)
    assert result.status == "finished" and result.errored == 0
    assert set(result.arms) == {"react", "tool_calling", "planner", "reflection"}
    for name, arm in result.arms.items():
        assert arm.success_rate.value == 1.0, name


def test_materials_chain_skips_dependents_of_a_failed_link(store):
    result, calls = run_spec("materials_chain", store)
    assert result.status == "finished" and result.errored == 0
    for arm, chains in result.chains.items():
        chain = chains[0]
        assert chain.end_to_end.value == pytest.approx(2 / 3), arm
        # rounds complete 3/3, 3/3 and 0/3 links in order (round 3 fails its first link)
        assert chain.partial_completion.value == pytest.approx(2 / 3), arm
    skipped = [r for r in result.records if r.status == "skipped"]
    assert {(r.task_id, r.trial_index) for r in skipped} == {("mc_volume", 2), ("mc_modify", 2)}
    assert ("mc_volume", "cell_volume", "success", None) in calls


def test_impossible_surrender_is_calibrated(store):
    result, _ = run_spec("impossible", store)
    calibration = result.arms["brief"].surrender_calibration
    assert calibration.precision == 1.0 and calibration.recall == 1.0
    solved = [r for r in result.records if r.task_id == "imp_silicon"]
    assert all(r.score == 1.0 and not r.surrendered for r in solved)


def test_web_research_surrenders_when_search_fails(store):
    result, calls = run_spec("web_research", store)
    assert result.status == "finished"
    assert all(r.surrendered for r in result.records)
    searches = [c for c in calls if c[1] == "web_search"]
    assert searches and all(status == "execution_error" for _, _, status, _ in searches)


def test_shell_ops_rejects_confirm_and_never_runs_blocked(store):
    result, calls = run_spec("shell_ops", store)
    assert result.status == "finished" and result.errored == 0
    assert ("sh_cleanup", "delete_file", "rejected", "rejected") in calls
    assert ("sh_wipe", "wipe_workspace", "blocked", None) in calls
    by_task = {r.task_id: r for r in result.records}
    assert by_task["sh_count"].score == 1.0 and by_task["sh_find_csv"].score == 1.0
    assert by_task["sh_cleanup"].score == 0.0  # the scorer saw scratch.tmp still in the workspace
    rows = {row["task_id"]: row for row in result.rows}
    assert "still in the workspace" in (rows["sh_cleanup"].get("explanation") or "")
    assert by_task["sh_wipe"].surrendered
