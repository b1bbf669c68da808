"""ReAct reply parsing and prompt building, without any server or model."""

from __future__ import annotations

import pytest

from corral_core.agents import ReActAgent, ToolCallingAgent
from corral_core.agents.outcome import final_answer, is_surrender_reply
from corral_core.agents.prompts import render
from corral_core.agents.react_parsing import parse_arguments, parse_react


def test_missing_action_input_only_affects_that_action() -> None:
    reply = parse_react(
        "<thought>two</thought><action>first</action>\n"
        "<action>calculator</action><action_input>{\"a\": 1}</action_input>")
    assert [(a.name, a.arguments) for a in reply.runnable] == [("calculator", {"a": 1})]
    assert "action 'first' was not run" in reply.actions[0].error
    assert "<action_input>" in reply.actions[0].error


def test_unclosed_action_input_is_named() -> None:
    reply = parse_react("<action>calculator</action><action_input>{\"a\": 1}")
    assert reply.runnable == []
    assert "no closing </action_input>" in reply.actions[0].error


def test_true_inside_strings_is_not_rewritten() -> None:
    assert parse_arguments('{"text": "True story", "flag": true}') == {"text": "True story", "flag": True}
    assert parse_arguments("{'text': 'True story', 'flag': True}") == {"text": "True story", "flag": True}


@pytest.mark.parametrize("text, expected", [
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ("a: 1\nb: two", {"a": 1, "b": "two"}),
    ("", {}),
    ('{"code": """line 1\nline "2" """}', {"code": 'line 1\nline "2" '}),
])
def test_argument_fallbacks(text, expected) -> None:
    assert parse_arguments(text) == expected


@pytest.mark.parametrize("text", ['{"a": 1', "[1, 2]", "just words"])
def test_unreadable_arguments_say_why(text) -> None:
    with pytest.raises(ValueError) as info:
        parse_arguments(text)
    assert str(info.value)


def test_final_answer_surrender_and_problems() -> None:
    assert parse_react("<thought>x</thought><final_answer> 42 </final_answer>").final_answer == "42"
    assert parse_react("Final Answer: 7").final_answer == "7"
    assert parse_react("<surrender>no tool</surrender>").surrender == "no tool"
    broken = parse_react("<final_answer>42")
    assert broken.final_answer is None and "no closing </final_answer>" in broken.problems[0]
    # the word in prose is not a tag
    assert parse_react("I will not surrender.").surrender is None


class _Interface:
    def __init__(self, guide: str = "Task: Task: What is 1 + 1?\n\nAvailable Tools: calc") -> None:
        self.guide = guide
        self.verbosities: list[object] = []

    def get_task_guide(self, task_id, verbosity=None):
        self.verbosities.append(verbosity)
        return self.guide

    def get_task_prompt(self, task_id):
        return "What is 1 + 1?"

    def get_tools_guide(self, task_id, verbosity=None):
        return "Available Tools: calc"

    def get_available_tools_for_task(self, task_id, verbosity=None):
        return {"tools": [{"type": "function", "function": {"name": "calc", "description": "d", "parameters": {}}}]}


def test_react_prompt_has_no_none_no_doubled_task_and_optional_surrender() -> None:
    interface = _Interface()
    agent = ReActAgent(model="scripted/x")
    agent._begin(interface, "t", {})
    agent._prepare(interface, "t", history=None, task_prompt=None, examples=None, verbosity="minimal")
    text = agent.messages[1]["content"]
    assert "None" not in text and "Task: Task:" not in text and "<surrender>" not in text
    assert "Task: What is 1 + 1?" in text and interface.verbosities == ["minimal"]
    agent = ReActAgent(model="scripted/x", enable_surrender=True)
    agent._begin(interface, "t", {})
    agent._prepare(interface, "t", history=None, task_prompt=None, examples="Q: 2+2\nA: 4")
    text = agent.messages[1]["content"]
    assert "<surrender>" in text and "Examples:\nQ: 2+2" in text


def test_tool_calling_adds_a_surrender_tool_only_when_enabled() -> None:
    interface = _Interface()
    for enabled, names in [(False, ["calc"]), (True, ["calc", "surrender"])]:
        agent = ToolCallingAgent(model="scripted/x", enable_surrender=enabled)
        agent._begin(interface, "t", {})
        agent._prepare(interface, "t", history=None, task_prompt=None, examples=None)
        assert [t["function"]["name"] for t in agent.tools] == names
        assert ("surrender" in agent.messages[1]["content"]) is enabled


def test_corral_argument_list_tools_are_converted_to_openai_format() -> None:
    from corral_core.agents.tool_calling import as_openai_tool

    corral = {"name": "calc", "description": "Do maths.", "arguments": [
        {"name": "op", "type": "str", "description": "which", "required": True, "default": None, "choices": ["+"]},
        {"name": "xs", "type": "list[float]", "required": False}]}
    assert as_openai_tool(corral) == {"type": "function", "function": {
        "name": "calc", "description": "Do maths.", "parameters": {"type": "object", "properties": {
            "op": {"type": "string", "description": "which", "enum": ["+"]},
            "xs": {"type": "array", "items": {"type": "number"}}},  # the type name's schema, as our servers send
            "required": ["op"]}}}
    already = {"type": "function", "function": {"name": "calc"}, "name": "calc", "arguments": [], "risk": "safe"}
    assert as_openai_tool(already) == {"type": "function", "function": {"name": "calc"}}  # only what models read


def test_user_prompt_template_errors_name_the_variable() -> None:
    with pytest.raises(ValueError, match="unknown variable.*task_guid"):
        render("{{task_guid}}", task_guide="x")


class _ToolInterface:
    def __init__(self, response) -> None:
        self.response = response

    def execute_tool(self, task_id, tool_name, arguments):
        return self.response


def test_observations_say_when_a_tool_failed() -> None:
    from corral_core.client import ToolResponse
    from corral_core.events import EventKind, ListSink

    corral_style = {"tool_name": "calc", "arguments": {}, "result": None, "status": "invalid_args",
                    "error_message": "Missing required argument: a"}
    cases = [
        (ToolResponse(success=False, error="cannot reach the environment server"),
         "the tool call could not be made (status: execution_error). Error: cannot reach the environment server"),
        (ToolResponse(success=True, result=corral_style),  # Corral's client: failures looked like successes
         "the tool call failed (status: invalid_args). Error: Missing required argument: a"),
        (ToolResponse(success=True, result="3.0", tool_call={**corral_style, "status": "success", "result": "3.0"}),
         "3.0"),
    ]
    for response, expected in cases:
        sink = ListSink()
        agent = ReActAgent(model="scripted/x", sink=sink)
        interface = _ToolInterface(response)
        agent._begin(interface, "t", {"trial_id": "tr_1"})
        outcome = agent.execute_tool("calc", {})
        assert outcome.text == expected and outcome.ok is (expected == "3.0")
        event = sink.of_kind(EventKind.TOOL_CALL)[0]
        assert event.trial_id == "tr_1" and event.data["tool_name"] == "calc" and event.data["iteration"] == 0


@pytest.mark.parametrize("reply, surrenders", [
    ("GIVE UP", True),
    ("Final Answer: give up.", True),
    ("Final Answer: SURRENDER", True),
    ("No tool can do this.\nFinal Answer: GIVE UP", True),
    ("I will not give up. Final Answer: 12", False),
    ("Final Answer: GIVE UP is not an option; 12", False),
    ("Never GIVE UP", False),
    ("SURRENDER", False),  # bare SURRENDER was never a form the prompts offer
])
def test_surrender_reply_is_the_sentinel_never_prose(reply, surrenders) -> None:
    assert is_surrender_reply(reply) is surrenders


def test_final_answer_needs_text_after_the_marker() -> None:
    assert final_answer("Plan done.\nFinal Answer:  42 ") == "42"
    assert final_answer("Final Answer:   ") is None and final_answer("no marker") is None
