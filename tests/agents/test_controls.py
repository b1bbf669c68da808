"""Live run controls: pause, step, resume, cancel, and the operator's inbox."""

from __future__ import annotations

import threading
import time

from corral_core.agents import (
    AgentHooks,
    InterventionInbox,
    LLMPlanner,
    ReActAgent,
    ToolCallingAgent,
    TrialController,
    run_trial,
)
from corral_core.events import EventKind, ListSink
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG, HTTP_TIMEOUT

from .conftest import FAKE_KEY_ENV, requests_of, run_in_thread


def _controlled(agent_class=ReActAgent, **kwargs):
    hooks, sink = AgentHooks(), ListSink()
    controller = TrialController(start_paused=True).attach(hooks)
    agent = agent_class(model=kwargs.pop("model", "scripted/samplemath"), hooks=hooks, sink=sink, **kwargs)
    return agent, controller, sink


def test_step_advances_exactly_one_iteration_per_step(open_trial) -> None:
    agent, controller, sink = _controlled()
    result = {}
    thread = run_in_thread(lambda: result.setdefault("outcome", run_trial(agent, open_trial("compound"), "compound")))
    assert controller.wait_blocked(HANG) and controller.state == "paused"
    assert requests_of(sink) == []
    for expected in (1, 2):
        controller.step()
        assert controller.wait_blocked(HANG)
        assert len(requests_of(sink)) == expected and controller.state == "paused"
    controller.resume()
    thread.join(timeout=HANG)
    assert not thread.is_alive() and result["outcome"].score == 1.0
    states = [e.data["state"] for e in sink.of_kind(EventKind.CONTROL_STATE)]
    assert states == ["paused", "stepping", "paused", "stepping", "paused", "running"]


def test_cancel_ends_a_paused_agent_promptly(open_trial) -> None:
    agent, controller, sink = _controlled()
    result = {}
    thread = run_in_thread(lambda: result.setdefault("outcome", run_trial(agent, open_trial("add"), "add")))
    assert controller.wait_blocked(HANG)
    controller.cancel()
    thread.join(timeout=HANG)  # a paused agent stays paused until resumed: only cancel() can end it here
    assert not thread.is_alive(), "cancel() did not end the paused agent"
    assert result["outcome"].status == "cancelled" and agent.outcome.status == "cancelled"
    assert requests_of(sink) == [] and controller.state == "cancelled"
    controller.resume()  # cancel is final
    assert controller.state == "cancelled"


def test_cancel_inside_a_planner_executor(open_trial) -> None:
    agent, controller, _sink = _controlled(LLMPlanner)
    result = {}
    thread = run_in_thread(lambda: result.setdefault("outcome", run_trial(agent, open_trial("add"), "add")))
    for _ in range(2):  # planner iteration 0, then the executor's first iteration
        assert controller.wait_blocked(HANG)
        controller.step()
    assert controller.wait_blocked(HANG)
    controller.cancel()
    thread.join(timeout=HANG)
    assert not thread.is_alive() and result["outcome"].status == "cancelled"


def test_paused_time_is_not_trial_time(open_trial) -> None:
    agent, controller, _ = _controlled()
    trial = open_trial("add")
    result = {}
    started = time.perf_counter()
    thread = run_in_thread(lambda: result.setdefault("outcome", run_trial(agent, trial, "add")))
    assert controller.wait_blocked(HANG)
    time.sleep(0.3)
    controller.resume()
    thread.join(timeout=HANG)
    wall = time.perf_counter() - started  # encloses the whole run_trial call, pause included
    assert not thread.is_alive() and result["outcome"].score == 1.0
    assert agent.wait_seconds >= 0.3
    # the pause is taken out of the trial's duration (exactly: duration = run time - wait)
    assert result["outcome"].duration <= wall - agent.wait_seconds


def test_inbox_message_posted_while_paused_reaches_the_next_llm_call(fake_key, open_trial) -> None:
    replies = [FakeReply.tool_call("calculator", {"operation": "+", "a": 17, "b": 25}),
               FakeReply.text("Final Answer: 42")]
    with FakeOpenAI(replies) as fake:
        hooks, sink = AgentHooks(), ListSink()
        controller = TrialController()
        controller.attach(hooks)
        inbox = InterventionInbox()
        inbox.attach(hooks)
        pause_after_first = []

        def pause_once(ctx):
            if ctx.iteration == 0 and not pause_after_first:
                pause_after_first.append(True)
                controller.pause()

        hooks.register("after_iteration", pause_once)
        agent = ToolCallingAgent(model="openai/fake-model", api_endpoint=fake.base_url, api_key_env=FAKE_KEY_ENV,
                                 timeout=HTTP_TIMEOUT, hooks=hooks, sink=sink)
        result = {}
        thread = run_in_thread(lambda: result.setdefault("outcome", run_trial(agent, open_trial("add"), "add")))
        assert controller.wait_blocked(HANG)
        assert len(fake.requests) == 1
        inbox.post("Answer with the bare number.")
        controller.resume()
        thread.join(timeout=HANG)
        bodies = fake.requests
    outcome = result["outcome"]
    assert outcome.status == "completed" and outcome.score == 1.0 and outcome.assisted
    last = bodies[1]["messages"][-1]
    assert last == {"role": "user", "content": "Intervention from the operator: Answer with the bare number."}
    assert bodies[1]["messages"][-2]["role"] == "tool"
    applied = sink.of_kind(EventKind.INTERVENTION_APPLIED)
    assert [(e.data["source"], e.data["iteration"]) for e in applied] == [("inbox", 1)]
    order = [e.kind for e in sink.events if e.kind in (EventKind.INTERVENTION_APPLIED, EventKind.LLM_REQUEST)]
    assert order == [EventKind.LLM_REQUEST, EventKind.INTERVENTION_APPLIED, EventKind.LLM_REQUEST]


def test_an_intervention_posted_during_the_last_llm_call_is_reported_undelivered(fake_key, open_trial) -> None:
    release = threading.Event()
    replies = [FakeReply.tool_call("calculator", {"operation": "+", "a": 17, "b": 25}),
               FakeReply(content="Final Answer: 42", hold=release)]
    with FakeOpenAI(replies) as fake:
        hooks, sink = AgentHooks(), ListSink()
        inbox = InterventionInbox()
        inbox.attach(hooks)
        agent = ToolCallingAgent(model="openai/fake-model", api_endpoint=fake.base_url, api_key_env=FAKE_KEY_ENV,
                                 timeout=HTTP_TIMEOUT, hooks=hooks, sink=sink)
        result = {}
        thread = run_in_thread(lambda: result.setdefault("outcome", run_trial(agent, open_trial("add"), "add")))
        assert fake.wait_requests(2, HANG), "the last LLM call never started"
        assert inbox.post("Round it to one digit.")  # accepted: the trial is still running
        release.set()
        thread.join(timeout=HANG)
    outcome = result["outcome"]
    assert outcome.status == "completed" and not outcome.assisted  # it never reached the model
    assert sink.of_kind(EventKind.INTERVENTION_APPLIED) == []
    (undelivered,) = sink.of_kind(EventKind.INTERVENTION_UNDELIVERED)
    assert undelivered.data["text"] == "Round it to one digit." and undelivered.data["source"] == "inbox"
    assert "ended before" in undelivered.data["reason"]
    assert not inbox.post("too late")  # the trial is over: refused, never queued
