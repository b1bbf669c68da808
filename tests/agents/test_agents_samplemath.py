"""Every agent solves the samplemath suite with the scripted model, over real HTTP."""

from __future__ import annotations

import pytest

from corral_core.agents import LLMPlanner, ReActAgent, ReflectionAgent, ToolCallingAgent, run_trial
from corral_core.events import EventKind, ListSink

from .conftest import requests_of, usage_sum

TASKS = ["add", "multiply", "divide", "power", "compound"]
AGENTS = [ReActAgent, ToolCallingAgent, LLMPlanner, ReflectionAgent]


@pytest.mark.parametrize("agent_class", AGENTS, ids=lambda c: c.__name__)
def test_agent_solves_every_samplemath_task(agent_class, open_trial) -> None:
    for task_id in TASKS:
        sink = ListSink()
        agent = agent_class(model="scripted/samplemath", sink=sink)
        trial = open_trial(task_id)
        outcome = run_trial(agent, trial, task_id, verbosity="full")
        assert (task_id, outcome.status, outcome.score, outcome.error) == (task_id, "completed", 1.0, None)
        assert outcome.usage.total_tokens > 0
        assert agent.get_total_token_usage() == usage_sum(sink) == outcome.usage.to_dict()
        finished = sink.of_kind(EventKind.AGENT_FINISHED)
        assert len(finished) == 1 and finished[0].data["status"] == "answered"
        assert all(e.trial_id == trial.trial_id for e in sink.events)


def test_power_needs_full_verbosity(open_trial) -> None:
    """At brief verbosity the '**' operator is not documented: the scripted model multiplies."""
    trial = open_trial("power")
    outcome = run_trial(ReActAgent(model="scripted/samplemath"), trial, "power", verbosity="brief")
    assert outcome.status == "completed" and outcome.answer == "20" and outcome.score == 0.0


def test_tool_calls_are_reported_with_iteration(open_trial) -> None:
    sink = ListSink()
    trial = open_trial("compound")
    run_trial(ReActAgent(model="scripted/samplemath", sink=sink), trial, "compound")
    calls = sink.of_kind(EventKind.TOOL_CALL)
    assert [(c.data["tool_name"], c.data["arguments"], c.data["status"], c.data["iteration"]) for c in calls] == [
        ("calculator", {"operation": "+", "a": 3, "b": 4}, "success", 0),
        ("calculator", {"operation": "*", "a": 7, "b": 5}, "success", 1),
    ]
    assert [e.data["iteration"] for e in sink.of_kind(EventKind.ITERATION_STARTED)] == [0, 1, 2]


def test_events_carry_trial_identity_and_llm_details(open_trial) -> None:
    sink = ListSink()
    trial = open_trial("add")
    agent = ReActAgent(model="scripted/samplemath", sink=sink)
    agent.run(trial, "add", trial_index=3, arm="baseline", benchmark_id="bm_1")
    responses = sink.of_kind(EventKind.LLM_RESPONSE)
    assert [(r.data["role"], r.data["turn"], r.data["arm"], r.data["trial_index"]) for r in responses] == [
        ("agent", 0, "baseline", 3), ("agent", 1, "baseline", 3)]
    requests = requests_of(sink)
    assert [r.data["digest"] for r in requests] == [r.data["digest"] for r in responses]
    assert {e.benchmark_id for e in sink.events} == {"bm_1"}
    messages = sink.of_kind(EventKind.MESSAGE)
    assert [m.data["index"] for m in messages] == list(range(len(agent.messages)))
    assert [m.data["role"] for m in messages] == [m["role"] for m in agent.messages]


def test_planner_executor_share_accounting_and_turns(open_trial) -> None:
    sink = ListSink()
    trial = open_trial("add")
    agent = LLMPlanner(planner_model="scripted/samplemath", executor_model="scripted/samplemath", sink=sink)
    outcome = run_trial(agent, trial, "add")
    assert outcome.status == "completed" and outcome.score == 1.0
    roles = [(e.data["role"], e.data["turn"]) for e in requests_of(sink)]
    assert roles == [("planner", 0), ("agent", 0), ("agent", 1), ("planner", 1)]
    assert any("Answer submitted by the executor: 42" in str(m.get("content")) for m in agent.messages)
    assert outcome.usage.to_dict() == usage_sum(sink)
    assert len(sink.of_kind(EventKind.AGENT_FINISHED)) == 1  # the executor's end is not the trial's


def test_extractor_is_opt_in_and_counted(open_trial) -> None:
    sink = ListSink()
    trial = open_trial("add")
    agent = ReActAgent(model="scripted/samplemath", sink=sink, extract_answer=True)
    outcome = run_trial(agent, trial, "add")
    assert outcome.answer == "42" and outcome.score == 1.0
    assert [e.data["role"] for e in requests_of(sink)] == ["agent", "agent", "extractor"]
    assert outcome.usage.to_dict() == usage_sum(sink)
