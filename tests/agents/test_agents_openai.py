"""The agents against a fake OpenAI-compatible server (openai/<name> + api_base), and provider failures."""

from __future__ import annotations

import socket

import pytest

from corral_core.agents import LLMPlanner, ReActAgent, ReflectionAgent, ToolCallingAgent, run_trial
from corral_core.client import CorralRouter
from corral_core.events import EventKind, ListSink
from corral_core.llm import ModelSettings
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG, HTTP_TIMEOUT

from .conftest import FAKE_KEY_ENV, usage_sum

ADD_ACTION = ('<thought>Add them.</thought><action>calculator</action>'
              '<action_input>{"operation": "+", "a": 17, "b": 25}</action_input>')
ADD_FINAL = "<thought>Done.</thought><final_answer>42</final_answer>"


def _agent(agent_class, fake: FakeOpenAI, **kwargs):
    return agent_class(model="openai/fake-model", api_endpoint=fake.base_url, api_key_env=FAKE_KEY_ENV,
                       timeout=HTTP_TIMEOUT, max_retries=0, **kwargs)


def test_tool_calling_round_trip(fake_key, open_trial) -> None:
    replies = [FakeReply.tool_call("calculator", {"operation": "+", "a": 17, "b": 25}, usage=(120, 15),
                                   call_id="call_abc"),
               FakeReply.text("Final Answer: 42", usage=(160, 4))]
    sink = ListSink()
    with FakeOpenAI(replies) as fake:
        agent = _agent(ToolCallingAgent, fake, sink=sink)
        outcome = run_trial(agent, open_trial("add"), "add", verbosity="brief")
        bodies = fake.requests
    assert (outcome.status, outcome.score) == ("completed", 1.0)
    names = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert names == ["calculator", "round_number"]
    assert bodies[0]["tools"][0]["function"]["parameters"]["properties"]["operation"]
    assistant, tool = bodies[1]["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == "call_abc"
    assert assistant["tool_calls"][0]["function"]["name"] == "calculator"
    assert tool == {"role": "tool", "tool_call_id": "call_abc", "content": "42.0"}
    assert outcome.usage.to_dict() == {"prompt_tokens": 280, "completion_tokens": 19, "total_tokens": 299}
    assert agent.get_total_token_usage() == usage_sum(sink) == outcome.usage.to_dict()


def test_react_round_trip(fake_key, open_trial) -> None:
    with FakeOpenAI([FakeReply.text(ADD_ACTION, usage=(100, 20)), FakeReply.text(ADD_FINAL, usage=(130, 8))]) as fake:
        outcome = run_trial(_agent(ReActAgent, fake), open_trial("add"), "add")
        bodies = fake.requests
    assert (outcome.status, outcome.score, outcome.usage.total_tokens) == ("completed", 1.0, 258)
    assert "tools" not in bodies[0]
    assert bodies[1]["messages"][-2:] == [{"role": "assistant", "content": ADD_ACTION},
                                          {"role": "user", "content": "Observation: 42.0"}]


def test_planner_round_trip_sums_planner_and_executor_tokens(fake_key, open_trial) -> None:
    replies = [FakeReply.text("1. Add 17 and 25 with the calculator.", usage=(50, 10)),
               FakeReply.text(ADD_ACTION, usage=(60, 20)), FakeReply.text(ADD_FINAL, usage=(70, 5)),
               FakeReply.text("Final Answer: 42", usage=(80, 3))]
    sink = ListSink()
    with FakeOpenAI(replies) as fake:
        agent = _agent(LLMPlanner, fake, sink=sink)
        outcome = run_trial(agent, open_trial("add"), "add")
        bodies = fake.requests
    assert (outcome.status, outcome.score) == ("completed", 1.0)
    assert outcome.usage.to_dict() == {"prompt_tokens": 260, "completion_tokens": 38, "total_tokens": 298}
    assert "1. Add 17 and 25" in bodies[1]["messages"][1]["content"]  # the plan is the executor's task
    assert "Answer submitted by the executor: 42" in bodies[3]["messages"][-1]["content"]
    assert [e.data["role"] for e in sink.of_kind(EventKind.LLM_REQUEST)] == ["planner", "agent", "agent", "planner"]


def test_reflection_learns_from_the_previous_trial_of_the_same_task(fake_key, fresh_server_url) -> None:
    router = CorralRouter(fresh_server_url)
    wrong = ('<thought>Multiply.</thought><action>calculator</action>'
             '<action_input>{"operation": "*", "a": 2, "b": 10}</action_input>')
    replies = [FakeReply.text(wrong), FakeReply.text("<final_answer>20</final_answer>"),  # trial 1: no reflection
               FakeReply.text("Lesson: use the ** operator for powers.", usage=(30, 7)),  # reflection on trial 1
               FakeReply.text("<final_answer>1024</final_answer>"),  # trial 2
               FakeReply.text("<final_answer>35</final_answer>")]  # another task: no lessons
    sink = ListSink()
    with FakeOpenAI(replies) as fake:
        agent = _agent(ReflectionAgent, fake, sink=sink)
        first = run_trial(agent, router, "power")
        second = run_trial(agent, router, "power")
        other = run_trial(agent, router, "compound")
        bodies = fake.requests
    router.close()
    assert (first.score, second.score) == (0.0, 1.0)
    reflection_prompt = bodies[2]["messages"][0]["content"]
    assert "Attempt (trial" in reflection_prompt and "scored 0.00" in reflection_prompt
    lessons = [m for m in bodies[3]["messages"] if "LESSONS FROM PREVIOUS ATTEMPTS" in str(m["content"])]
    assert len(lessons) == 1 and lessons[0]["role"] == "system"
    assert "Attempt 1 (Score: 0.00):\nLesson: use the ** operator" in lessons[0]["content"]
    assert not any("LESSONS" in str(m["content"]) for m in bodies[4]["messages"])  # memory is per task
    assert other.status == "completed"
    roles = [e.data["role"] for e in sink.of_kind(EventKind.LLM_REQUEST)]
    assert roles == ["agent", "agent", "reflection", "agent", "agent"]
    assert second.usage.total_tokens == 37 + 15  # the reflection call counts toward the trial


@pytest.mark.parametrize("reply, expected", [
    (FakeReply.rate_limited("Rate limit reached for fake-model: slow down"), "Rate limit reached"),
    (FakeReply.server_error("upstream exploded"), "upstream exploded"),
])
def test_provider_failure_ends_the_trial_as_error_and_the_next_runs(reply, expected, fake_key, open_trial) -> None:
    with FakeOpenAI([reply, FakeReply.tool_call("calculator", {"operation": "+", "a": 17, "b": 25}),
                     FakeReply.text("Final Answer: 42")]) as fake:
        after = []
        agent = _agent(ToolCallingAgent, fake)
        agent.hooks.register("after_task", lambda ctx: after.append(ctx.iteration_data["status"]))
        failed = run_trial(agent, open_trial("add"), "add")
        ok = run_trial(agent, open_trial("add"), "add")
    assert failed.status == "error" and expected in failed.error and failed.score is None
    assert after == ["error", "answered"]
    assert (ok.status, ok.score) == ("completed", 1.0)


def test_timeout_ends_the_trial_as_error(fake_key, open_trial) -> None:
    with FakeOpenAI([FakeReply.slow(HANG * 10)]) as fake:  # answers only when the fake stops
        agent = ReActAgent(model="openai/fake-model", api_endpoint=fake.base_url, api_key_env=FAKE_KEY_ENV,
                           timeout=0.5, max_retries=0)
        outcome = run_trial(agent, open_trial("add"), "add")
    assert outcome.status == "error" and "timeout" in outcome.error.lower()


def test_connection_refused_ends_the_trial_as_error(fake_key, open_trial) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = ModelSettings("openai/fake-model", api_base=f"http://127.0.0.1:{port}/v1", api_key_env=FAKE_KEY_ENV,
                             timeout=2, max_retries=0)
    agent = LLMPlanner(settings=settings)
    outcome = run_trial(agent, open_trial("add"), "add")
    assert outcome.status == "error" and "cannot reach the model" in outcome.error
    assert outcome.usage.total_tokens == 0
