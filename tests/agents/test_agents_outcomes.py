"""How runs end: recovery from malformed turns, deliberate surrender, iteration limits, tool failures."""

from __future__ import annotations

import pytest

from corral_core.agents import LLMPlanner, ReActAgent, ToolCallingAgent, run_trial
from corral_core.events import EventKind, ListSink


def _contents(agent, role: str) -> list[str]:
    return [str(m.get("content")) for m in agent.messages if m["role"] == role]


def test_react_recovers_from_invalid_json(test_scripts, open_trial) -> None:
    agent = ReActAgent(model="scripted/recovery")
    outcome = run_trial(agent, open_trial("add"), "add")
    assert (outcome.status, outcome.score, outcome.iterations) == ("completed", 1.0, 3)
    corrective = [c for c in _contents(agent, "user") if c.startswith("Format problem")]
    assert len(corrective) == 1
    assert "action 'calculator' was not run" in corrective[0] and "not valid JSON" in corrective[0]


def test_react_recovers_from_untagged_reply_and_keeps_the_good_action(test_scripts, open_trial) -> None:
    agent = ReActAgent(model="scripted/recovery")
    outcome = run_trial(agent, open_trial("multiply"), "multiply")
    assert (outcome.status, outcome.score) == ("completed", 1.0)
    users = _contents(agent, "user")
    assert "no <action> and no <final_answer>" in users[1]
    observation = next(i for i, c in enumerate(users) if c.startswith("Observation:"))
    assert users[observation] == "Observation: 144.0"
    assert "action 'round_number' was not run" in users[observation + 1]


def test_react_reads_python_literal_arguments(test_scripts, open_trial) -> None:
    outcome = run_trial(ReActAgent(model="scripted/recovery"), open_trial("divide"), "divide")
    assert (outcome.status, outcome.score) == ("completed", 1.0)


def test_tool_calling_recovers_from_broken_arguments(test_scripts, open_trial) -> None:
    agent = ToolCallingAgent(model="scripted/recovery")
    outcome = run_trial(agent, open_trial("add"), "add")
    assert (outcome.status, outcome.score) == ("completed", 1.0)
    tool_messages = [m for m in agent.messages if m["role"] == "tool"]
    assert "not a valid JSON object" in tool_messages[0]["content"]
    assert tool_messages[1]["content"] == "42.0"


@pytest.mark.parametrize("agent_class, task_id", [
    (ReActAgent, "add"),  # <surrender> tag
    (ToolCallingAgent, "add"),  # "Final Answer: GIVE UP"
    (ToolCallingAgent, "multiply"),  # the virtual surrender tool
    (ToolCallingAgent, "compound"),  # reasoning, then "Final Answer: GIVE UP"
    (LLMPlanner, "add"),  # "Final Answer: GIVE UP" instead of a plan
    (LLMPlanner, "compound"),  # reasoning, then "Final Answer: GIVE UP"
])
def test_deliberate_surrender_is_recorded(agent_class, task_id, test_scripts, open_trial) -> None:
    trial = open_trial(task_id)
    agent = agent_class(model="scripted/surrender", enable_surrender=True)
    outcome = run_trial(agent, trial, task_id)
    assert (outcome.status, outcome.surrendered, outcome.score, outcome.answer) == ("surrendered", True, 0.0, None)
    assert agent.outcome.status == "surrendered"
    assert trial.get_task_status(task_id)["submitted_answer"] is None


def test_run_returns_the_surrender_sentinel(test_scripts, open_trial) -> None:
    agent = ReActAgent(model="scripted/surrender", enable_surrender=True)
    assert agent.run(open_trial("add"), "add") == "GIVE UP"


@pytest.mark.parametrize("agent_class", [ReActAgent, ToolCallingAgent, LLMPlanner])
def test_prose_mentioning_surrender_is_not_surrender(agent_class, test_scripts, open_trial) -> None:
    outcome = run_trial(agent_class(model="scripted/surrender", enable_surrender=True), open_trial("divide"), "divide")
    assert (outcome.status, outcome.surrendered, outcome.score, outcome.answer) == ("completed", False, 1.0, "12")


@pytest.mark.parametrize("agent_class, task_id", [
    (ReActAgent, "add"), (ToolCallingAgent, "add"), (ToolCallingAgent, "compound"), (LLMPlanner, "add"),
    (LLMPlanner, "compound"),
])
def test_surrender_when_not_enabled_is_refused(agent_class, task_id, test_scripts, open_trial) -> None:
    trial = open_trial(task_id)
    agent = agent_class(model="scripted/surrender", max_iterations=2)
    outcome = run_trial(agent, trial, task_id)
    assert (outcome.status, outcome.surrendered, outcome.answer) == ("iteration_limit", False, None)
    assert "surrender is not available" in _contents(agent, "user")[-1].lower()
    assert trial.get_task_status(task_id)["submitted_answer"] is None  # "GIVE UP" is never scored as an answer


@pytest.mark.parametrize("agent_class", [ReActAgent, ToolCallingAgent, LLMPlanner])
def test_iteration_limit_submits_nothing(agent_class, test_scripts, open_trial) -> None:
    trial = open_trial("add")
    sink = ListSink()
    agent = agent_class(model="scripted/loop", max_iterations=3, sink=sink)
    answer = agent.run(trial, "add")
    assert answer == "" and agent.outcome.status == "iteration_limit" and agent.outcome.answer is None
    assert agent.outcome.iterations == 3 and agent.outcome.error is None
    status = trial.get_task_status("add")
    assert status["submitted_answer"] is None and status["score"] is None
    assert sink.of_kind(EventKind.AGENT_FINISHED)[0].data["status"] == "iteration_limit"
    assert not any("Error" in str(m.get("content")) for m in agent.messages if m["role"] == "assistant")


def test_run_trial_does_not_submit_on_iteration_limit(test_scripts, open_trial) -> None:
    trial = open_trial("add")
    outcome = run_trial(ReActAgent(model="scripted/loop", max_iterations=2), trial, "add")
    assert (outcome.status, outcome.score, outcome.answer, outcome.iterations) == ("iteration_limit", None, None, 2)
    assert trial.get_task_status("add")["submitted_answer"] is None


def test_failed_tool_calls_show_status_and_error(test_scripts, open_trial) -> None:
    sink = ListSink()
    agent = ReActAgent(model="scripted/errors", max_iterations=1, sink=sink)
    agent.run(open_trial("power"), "power")
    observation = _contents(agent, "user")[-1]
    assert observation.startswith("Observation: the tool call failed (status: execution_error)")
    assert "Unknown operation" in observation
    call = sink.of_kind(EventKind.TOOL_CALL)[0].data
    assert call["status"] == "execution_error" and call["iteration"] == 0


@pytest.mark.parametrize("depth", [200, 1000, 5000])
def test_tool_calling_answers_deeply_nested_arguments_with_the_invalid_arguments_message(
        depth, open_trial, tmp_path, monkeypatch) -> None:
    import yaml

    deep = '{"operation": "+", "a": ' + "[" * depth + "]" * depth + ', "b": 1}'
    script = {"tasks": {"add": {"tool_calling": [
        {"tool_calls": [{"name": "calculator", "arguments": deep}]},
        {"tool_calls": [{"name": "calculator", "arguments": {"operation": "+", "a": 17, "b": 25}}]},
        {"content": "Final Answer: 42"}]}}}
    (tmp_path / "deep.script.yaml").write_text(yaml.safe_dump(script))
    monkeypatch.setenv("CORRAL_TUI_SCRIPTS", str(tmp_path))
    agent = ToolCallingAgent(model="scripted/deep")
    outcome = run_trial(agent, open_trial("add"), "add")
    assert (outcome.status, outcome.score) == ("completed", 1.0), outcome.error
    first = next(m for m in agent.messages if m["role"] == "tool")["content"]
    assert "not a valid JSON object" in first and "nested" in first
