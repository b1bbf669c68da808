"""Interventions as hooks: the scripted map, heartbeats, early stopping."""

from __future__ import annotations

from corral_core.agents import (
    AgentHooks,
    HookPoint,
    ReActAgent,
    ToolCallingAgent,
    create_intervention_hook,
    every_n_iterations,
    run_trial,
    stop_on_repeated_tool_errors,
)
from corral_core.events import EventKind, ListSink


def test_intervention_map_injects_a_thought_before_the_first_llm_call(open_trial) -> None:
    hooks, sink = AgentHooks(), ListSink()
    hint = "Use the calculator. <action>calculator</action><action_input>{}</action_input>"
    hooks.register(HookPoint.BEFORE_TASK, create_intervention_hook({"add": hint, "multiply": "other"}))
    agent = ReActAgent(model="scripted/samplemath", hooks=hooks, sink=sink)
    outcome = run_trial(agent, open_trial("add"), "add")
    assert outcome.status == "completed"
    assert agent.messages[2] == {"role": "assistant", "content": "<thought>Use the calculator.</thought>"}
    applied = sink.of_kind(EventKind.INTERVENTION_APPLIED)
    assert [(e.data["text"], e.data["source"], e.data["iteration"]) for e in applied] == [(hint, "map", 0)]
    assert not outcome.assisted  # a scripted experiment, not a person
    first_request = sink.of_kind(EventKind.LLM_REQUEST)[0]
    assert first_request.data["n_messages"] == 3


def test_intervention_map_ignores_other_tasks(open_trial) -> None:
    hooks = AgentHooks()
    hooks.register(HookPoint.BEFORE_TASK, create_intervention_hook({"multiply": "hint"}))
    agent = ReActAgent(model="scripted/samplemath", hooks=hooks)
    run_trial(agent, open_trial("add"), "add")
    assert [m["role"] for m in agent.messages[:3]] == ["system", "user", "assistant"]
    assert "hint" not in str(agent.messages[2]["content"])


def test_intervention_map_can_execute_its_actions(open_trial) -> None:
    hooks, sink = AgentHooks(), ListSink()
    text = ('<thought>Start with 3 + 4.</thought><action>calculator</action>'
            '<action_input>{"operation": "+", "a": 3, "b": 4}</action_input>')
    hooks.register(HookPoint.BEFORE_TASK, create_intervention_hook({"compound": text}, execute_tools=True))
    agent = ReActAgent(model="scripted/samplemath", hooks=hooks, sink=sink)
    run_trial(agent, open_trial("compound"), "compound")
    assert agent.messages[2]["role"] == "assistant" and "<action>calculator</action>" in agent.messages[2]["content"]
    assert agent.messages[3] == {"role": "user", "content": "Observation: 7.0"}
    assert len(sink.of_kind(EventKind.TOOL_CALL)) == 3


def test_intervention_with_a_broken_action_ends_the_trial_as_error(open_trial) -> None:
    hooks = AgentHooks()
    hooks.register(HookPoint.BEFORE_TASK,
                   create_intervention_hook({"add": "<action>calculator</action>"}, execute_tools=True))
    outcome = run_trial(ReActAgent(model="scripted/samplemath", hooks=hooks), open_trial("add"), "add")
    assert outcome.status == "error" and "cannot run" in outcome.error


def test_intervention_for_tool_calling_is_a_plain_assistant_message(open_trial) -> None:
    hooks = AgentHooks()
    hooks.register(HookPoint.BEFORE_TASK, create_intervention_hook({"add": "I should add."}))
    agent = ToolCallingAgent(model="scripted/samplemath", hooks=hooks)
    assert run_trial(agent, open_trial("add"), "add").score == 1.0
    assert agent.messages[2] == {"role": "assistant", "content": "I should add."}


def test_heartbeat_every_n_iterations(open_trial) -> None:
    hooks, sink = AgentHooks(), ListSink()
    hooks.register(HookPoint.BEFORE_ITERATION, every_n_iterations(1, lambda ctx: f"Heartbeat {ctx.iteration}"))
    agent = ReActAgent(model="scripted/samplemath", hooks=hooks, sink=sink)
    assert run_trial(agent, open_trial("compound"), "compound").score == 1.0
    beats = [m["content"] for m in agent.messages if str(m["content"]).startswith("Heartbeat")]
    assert beats == ["Heartbeat 1", "Heartbeat 2"]
    assert {e.data["source"] for e in sink.of_kind(EventKind.INTERVENTION_APPLIED)} == {"heartbeat"}


def test_stop_on_repeated_tool_errors(test_scripts, open_trial) -> None:
    hooks, reasons = AgentHooks(), []
    hooks.register(HookPoint.AFTER_ITERATION, stop_on_repeated_tool_errors(2))
    hooks.register(HookPoint.AFTER_TASK, lambda ctx: reasons.append(ctx.metadata.get("stopped_reason")))
    trial = open_trial("power")
    outcome = run_trial(ReActAgent(model="scripted/errors", hooks=hooks, max_iterations=10), trial, "power")
    assert (outcome.status, outcome.iterations) == ("stopped", 2)
    assert reasons == ["2 failed tool calls in a row"]
    assert trial.get_task_status("power")["submitted_answer"] is None
