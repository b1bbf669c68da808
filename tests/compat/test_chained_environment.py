"""The seed's chaining example: a TaskGroup of TaskDefinitions, one ChainedEnvironment per task."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from corral_core.client import CorralRouter
from corral_core.corral import ChainedEnvironment, TaskDefinition, TaskGroup, create_benchmark_server, tool
from corral_core.server import EmbeddedServer


@tool
def lookup_structure(material: str) -> str:
    """Retrieve the structure of a material.

    Args:
        material: The material's formula.
    """
    return {"GaAs": "zincblende a=5.653"}.get(material, "unknown")


def check_structure(answer: str) -> float:
    return 1.0 if "5.653" in answer else 0.0


def check_volume(answer: str, expected: dict) -> float:
    return 1.0 if abs(float(answer) - expected["volume"]) < 0.1 else 0.0


@pytest.fixture
def served() -> Iterator[tuple[CorralRouter, TaskGroup]]:
    task_group = TaskGroup(tasks={
        "task_1": TaskDefinition(name="structure", description="Retrieve the structure of GaAs.",
                                 tools=["lookup_structure"], scoring_fn=check_structure),
        "task_2": TaskDefinition(name="volume", description="Compute the cell volume from the structure.",
                                 scoring_fn=check_volume, scoring_inputs={"volume": 180.65},
                                 input_from_tasks=["task_1"]),
    })
    environments = {task_id: ChainedEnvironment(task_id, task_group, tools=[lookup_structure])
                    for task_id in task_group.tasks}
    server = EmbeddedServer(create_benchmark_server(environments))
    router = CorralRouter(server.start(), default_verbosity=None)
    try:
        yield router, task_group
    finally:
        router.close()
        server.stop()


def test_task_routes_pass_results_down_the_chain(served: tuple[CorralRouter, TaskGroup]) -> None:
    router, group = served
    assert group.chained_tasks and router.supports_dependency_chain()
    assert router.get_dependency_graph() == {"task_1": [], "task_2": ["task_1"]}
    tools = router.get_available_tools_for_task("task_1")["tools"]
    assert [t["name"] for t in tools] == ["lookup_structure"]
    assert router.get_available_tools_for_task("task_2")["tools"] == []
    assert "Previous results: {}" in router.get_task_prompt("task_2")
    found = router.execute_tool("task_1", "lookup_structure", {"material": "GaAs"})
    assert router.submit_answer("task_1", found.result).score == 1.0
    assert group.results["task_1"] == {"answer": "zincblende a=5.653"}  # the seed's TaskGroup API
    assert "'result_from_task_1': 'zincblende a=5.653'" in router.get_task_prompt("task_2")
    assert router.submit_answer("task_2", "180.6").score == 1.0


def test_trial_runtimes_share_outputs_within_an_episode_only(served: tuple[CorralRouter, TaskGroup]) -> None:
    router, _ = served
    with router.open_trial("task_1", "round-1") as first:
        assert first.submit_answer("task_1", "zincblende a=5.653").score == 1.0
    with router.open_trial("task_2", "round-1") as second:
        assert "'result_from_task_1': 'zincblende a=5.653'" in second.get_task_prompt("task_2")
    with router.open_trial("task_2", "round-2") as other:
        assert "result_from_task_1" not in other.get_task_prompt("task_2")
