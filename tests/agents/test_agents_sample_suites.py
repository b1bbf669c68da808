"""The planner and the reflection agent run every sample suite on its scripted model without errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"
SUITES = ["samplemath", "materials_chain", "impossible", "web_research", "shell_ops"]
CHAINED = {"materials_chain"}  # chain links get a fresh agent per round: nothing to reflect on


def _spec(suite: str) -> Any:
    """The suite's own bench spec (surrender, approval, timeouts), with a planner and a reflection arm."""
    bench = yaml.safe_load((SAMPLES / f"{suite}.bench.yaml").read_text(encoding="utf-8"))
    arms = bench.get("arms") or {}
    verbosity = arms["verbosity"][0] if isinstance(arms, dict) and arms.get("verbosity") else "brief"
    bench.update(
        name=f"{suite}-planner-reflection", model=f"scripted/{suite}", trials_per_task=2, parallel=2,
        agent={"type": "react", "max_iterations": 4},
        arms=[{"name": "planner", "verbosity": verbosity, "agent": {"type": "planner"}},
              {"name": "reflection", "verbosity": verbosity, "agent": {"type": "reflection"}}],
    )
    return spec_from_dict(bench, SAMPLES, source=f"{suite} (test)")


@pytest.mark.parametrize("suite", SUITES)
def test_planner_and_reflection_run_every_sample_suite_without_errors(suite: str) -> None:
    sink = ListSink()
    result = BenchmarkRunner(_spec(suite), sink=sink).run()
    assert result.status == "finished"
    errors = [(r.arm, r.task_id, r.trial_index, r.error) for r in result.records if r.status in ("error", "timeout")]
    assert errors == []
    ran = {(r.arm, r.status) for r in result.records if r.status != "skipped"}
    assert {arm for arm, _ in ran} == {"planner", "reflection"}
    roles = {(e.data["arm"], e.data["role"]) for e in sink.of_kind(EventKind.LLM_RESPONSE)}
    assert ("planner", "planner") in roles
    if suite not in CHAINED:  # the second trial of each task reflected on the first
        reflections = [e for e in sink.of_kind(EventKind.LLM_RESPONSE) if e.data["role"] == "reflection"]
        assert {e.task_id for e in reflections} == {r.task_id for r in result.records}
        assert all(e.data["trial_index"] == 1 for e in reflections)


def test_planner_surrenders_deliberately_on_the_impossible_tasks() -> None:
    result = BenchmarkRunner(_spec("impossible")).run()
    planner = {(r.task_id, r.trial_index): (r.status, r.surrendered, r.score)
               for r in result.records if r.arm == "planner"}
    for index in (0, 1):
        assert planner[("imp_unobtanium", index)][:2] == ("surrendered", True)
        assert planner[("imp_mithril", index)][:2] == ("surrendered", True)
        assert planner[("imp_silicon", index)] == ("completed", False, 1.0)
