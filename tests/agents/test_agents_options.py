"""Agent constructor options are checked: a wrong value is refused in words, never bent silently."""

from __future__ import annotations

import pytest

from corral_core.agents import LLMPlanner, ReActAgent, ReflectionAgent, ToolCallingAgent


@pytest.mark.parametrize("agent_class", [ReActAgent, ToolCallingAgent, LLMPlanner, ReflectionAgent])
@pytest.mark.parametrize("value", [0, -1, 2.5, "3", True, None])
def test_max_iterations_must_be_a_whole_number_of_at_least_one(agent_class, value) -> None:
    with pytest.raises(ValueError, match=r"max_iterations must be .*at least 1, got"):
        agent_class(model="scripted/samplemath", max_iterations=value)


@pytest.mark.parametrize("option", ["extract_answer", "enable_surrender"])
@pytest.mark.parametrize("value", ["maybe", "yes", 1, None])
def test_flags_must_be_true_or_false(option, value) -> None:
    with pytest.raises(ValueError, match=rf"{option} must be true or false, got {value!r}"):
        ReActAgent(model="scripted/samplemath", **{option: value})


@pytest.mark.parametrize("value", [0, -2, 1.5, "4"])
def test_planner_refuses_a_bad_executor_max_iterations(value) -> None:
    with pytest.raises(ValueError, match="executor_max_iterations must be"):
        LLMPlanner(model="scripted/samplemath", executor_max_iterations=value)


def test_planner_executor_iterations_default_to_the_planners() -> None:
    assert LLMPlanner(model="scripted/samplemath", max_iterations=5).executor.max_iterations == 5
    planner = LLMPlanner(model="scripted/samplemath", max_iterations=5, executor_max_iterations=2)
    assert planner.executor.max_iterations == 2


@pytest.mark.parametrize("value", [0, -1, 1.5, "2", True])
def test_reflection_refuses_a_bad_max_reflections(value) -> None:
    with pytest.raises(ValueError, match="max_reflections must be"):
        ReflectionAgent(model="scripted/samplemath", max_reflections=value)


def test_reflection_refuses_a_prompt_with_an_unknown_placeholder() -> None:
    with pytest.raises(ValueError, match=r"unknown variable\(s\) scoer.*score, task_id, trajectory, trial\. "):
        ReflectionAgent(model="scripted/samplemath", reflection_prompt="Attempt scored {{scoer}}.")


def test_reflection_refuses_a_non_numeric_temperature() -> None:
    with pytest.raises(ValueError, match="reflection_temperature must be a number"):
        ReflectionAgent(model="scripted/samplemath", reflection_temperature="cold")


def test_valid_options_are_kept() -> None:
    agent = ReflectionAgent(model="scripted/samplemath", max_iterations=4, max_reflections=2, extract_answer=True,
                            enable_surrender=True, reflection_prompt="{{task_id}} {{score}}: {{trajectory}}")
    assert (agent.max_iterations, agent.max_reflections, agent.extract_answer, agent.enable_surrender) == \
        (4, 2, True, True)
    assert agent.actor.max_iterations == 4
