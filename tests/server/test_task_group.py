"""The seed's TaskGroup/TaskDefinition API, served over HTTP as a chained suite."""

from __future__ import annotations

from corral_core.client import CorralRouter
from corral_core.env import TaskDefinition, TaskGroup, suite_from_task_group
from corral_core.server import EmbeddedServer, create_app
from corral_core.tools import tool


@tool
def lookup(formula: str) -> str:
    """Look up a lattice constant.

    Args:
        formula: Chemical formula.

    Returns:
        The lattice constant in angstrom.
    """
    return {"GaAs": "5.653"}.get(formula, "unknown")


def check_lookup(answer: str) -> float:  # the one-argument form
    return 1.0 if "5.653" in answer else 0.0


def check_volume(prediction: str, expected: dict) -> tuple[float, str]:  # the ground-truth form
    ok = abs(float(prediction) - expected["volume"]) < 0.1
    return (1.0, "right volume") if ok else (0.0, "wrong volume")


def make_group() -> TaskGroup:
    return TaskGroup("materials", {
        "volume": TaskDefinition("volume", "Compute the cubic cell volume.", input_from_tasks=["lookup"],
                                 scoring_fn=check_volume, scoring_inputs={"volume": 180.65},
                                 submission_format={"answer": "the volume in cubic angstrom"}),
        "lookup": TaskDefinition("lookup", "Find the lattice constant of GaAs.", tools=["lookup"],
                                 scoring_fn=check_lookup, initial_input={"material": "GaAs"}),
    })


def test_task_group_serves_as_a_chain_in_dependency_order(tmp_path):
    group = make_group()
    suite = suite_from_task_group(group, tools=[lookup])
    assert suite.task_ids == ["lookup", "volume"] and suite.chained
    with EmbeddedServer(create_app(suite, base_work_dir=tmp_path)) as server:
        router = CorralRouter(server.url)
        assert router.supports_dependency_chain()
        first = router.open_trial("lookup", episode_id="round-0")
        prompt = first.get_task_prompt("lookup")
        assert "Find the lattice constant of GaAs." in prompt and "- material: GaAs" in prompt
        assert first.execute_tool("lookup", "lookup", {"formula": "GaAs"}).result == "5.653"
        assert first.submit_answer("lookup", "a = 5.653").score == 1.0
        second = router.open_trial("volume", episode_id="round-0")
        prompt = second.get_task_prompt("volume")
        assert "Output of lookup: a = 5.653" in prompt and "Required submission format" in prompt
        result = second.submit_answer("volume", "180.6")
        assert (result.score, result.explanation) == (1.0, "right volume")
        assert router.open_trial("volume", episode_id="round-1").submit_answer("volume", "99").score == 0.0
        router.close()
    assert group.scores == {"lookup": 1.0, "volume": 0.0}  # the seed's TaskGroup bookkeeping
