"""Breakpoints in the engine: their syntax, where an agent stops at them, and what a hit reports."""

from __future__ import annotations

import pytest

from corral_core.agents import AgentHooks, ReActAgent, ToolCallingAgent, TrialController, run_trial
from corral_core.agents.breakpoints import Breakpoint, BreakpointWatch, parse_breakpoints
from corral_core.events import EventKind, ListSink
from tests.timeouts import HANG

from .conftest import run_in_thread


def _agent(*texts: str, hold: bool, agent_class: type = ReActAgent, model: str = "scripted/samplemath"):
    """An agent whose trials stop at `texts`, with a controller that holds it when `hold`."""
    hooks, sink = AgentHooks(), ListSink()
    controller = TrialController().attach(hooks)
    agent = agent_class(model=model, hooks=hooks, sink=sink)
    agent.breakpoints = BreakpointWatch([Breakpoint.parse(t) for t in texts], controller.hold if hold else None)
    return agent, controller, sink


def _kinds(sink: ListSink, *kinds: EventKind) -> list[EventKind]:
    return [e.kind for e in sink.of_kind(*kinds)]


@pytest.mark.parametrize("text", ["tool:calculator", "risk:confirm", "fail", "tokens>500", "cost>0.25",
                                  "reply:Final Answer:\\s*\\d+"])
def test_a_breakpoint_reads_back_as_written(text: str) -> None:
    assert str(Breakpoint.parse(text)) == text
    assert Breakpoint.parse(f"  {text} ") == Breakpoint.parse(text)


def test_the_form_field_separates_breakpoints_with_semicolons() -> None:
    assert parse_breakpoints("tool:calculator; tokens > 500 ;; reply:a, b") == [
        Breakpoint("tool", "calculator"), Breakpoint("tokens", 500), Breakpoint("reply", "a, b")]
    assert parse_breakpoints("  ") == []


@pytest.mark.parametrize(("text", "problem"), [
    ("calculator", "unknown breakpoint 'calculator'; write tool:NAME"),
    ("risk:dangerous", "unknown risk level 'dangerous'; use one of: safe, confirm, blocked"),
    ("tokens>lots", "'lots' is not a whole number"),
    ("cost>-1", "cannot be negative"),
    ("reply:(unclosed", "the regex does not compile"),
    ("tool:", "unknown breakpoint"),
])
def test_a_wrong_breakpoint_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        Breakpoint.parse(text)
    assert problem in str(caught.value)


def test_a_tool_breakpoint_holds_the_agent_right_before_the_tool_runs(open_trial) -> None:
    agent, controller, sink = _agent("tool:calculator", hold=True)
    result = {}
    thread = run_in_thread(lambda: result.setdefault("outcome", run_trial(agent, open_trial("add"), "add")))
    assert controller.wait_blocked(HANG) and controller.state == "paused"
    (hit,) = sink.of_kind(EventKind.BREAKPOINT_HIT)
    assert hit.data | {"arguments": None} == {
        "breakpoint": "tool:calculator", "point": "before_tool", "reason": "about to call calculator",
        "iteration": 0, "paused": True, "tool_name": "calculator", "arguments": None}
    assert hit.data["arguments"] == {"operation": "+", "a": 17, "b": 25}
    assert sink.of_kind(EventKind.TOOL_CALL) == [], "the tool ran before the operator continued"
    paused = sink.of_kind(EventKind.CONTROL_STATE)[-1].data
    assert (paused["state"], paused["reason"]) == ("paused", "breakpoint tool:calculator: about to call calculator")

    controller.resume()
    thread.join(HANG)
    assert not thread.is_alive() and result["outcome"].score == 1.0
    assert _kinds(sink, EventKind.BREAKPOINT_HIT, EventKind.TOOL_CALL) == [EventKind.BREAKPOINT_HIT,
                                                                            EventKind.TOOL_CALL]
    assert agent.wait_seconds > 0, "the pause counted as trial time"


def test_a_step_from_a_breakpoint_finishes_the_iteration_and_pauses_before_the_next(open_trial) -> None:
    agent, controller, sink = _agent("tool:calculator", hold=True)
    thread = run_in_thread(run_trial, agent, open_trial("compound"), "compound")
    assert controller.wait_blocked(HANG)
    assert len(sink.of_kind(EventKind.ITERATION_STARTED)) == 1 and not sink.of_kind(EventKind.TOOL_CALL)
    controller.step()
    assert controller.wait_blocked(HANG)  # at the next iteration's gate, before its LLM call
    assert len(sink.of_kind(EventKind.TOOL_CALL)) == 1 and len(sink.of_kind(EventKind.ITERATION_STARTED)) == 1
    controller.cancel()
    thread.join(HANG)
    assert not thread.is_alive() and agent.outcome.status == "cancelled"


def test_without_a_hold_a_hit_is_recorded_and_the_trial_goes_on(open_trial) -> None:
    agent, _controller, sink = _agent("tool:calculator", "risk:safe", "reply:Final Answer", hold=False,
                                      agent_class=ToolCallingAgent)
    outcome = run_trial(agent, open_trial("add"), "add")
    assert outcome.score == 1.0
    hits = [(e.data["breakpoint"], e.data["point"], e.data["paused"]) for e in sink.of_kind(EventKind.BREAKPOINT_HIT)]
    assert hits == [("tool:calculator", "before_tool", False), ("risk:safe", "before_tool", False),
                    ("reply:Final Answer", "after_llm", False)]
    assert not [e for e in sink.of_kind(EventKind.CONTROL_STATE) if e.data["state"] == "paused"]


def test_a_token_threshold_hits_once_after_the_call_that_passes_it(open_trial) -> None:
    agent, controller, sink = _agent("tokens>300", hold=True)
    thread = run_in_thread(run_trial, agent, open_trial("compound"), "compound")
    assert controller.wait_blocked(HANG)
    responses = sink.of_kind(EventKind.LLM_RESPONSE)
    spent = sum(e.data["usage"]["total_tokens"] for e in responses)
    before = spent - responses[-1].data["usage"]["total_tokens"]
    assert before <= 300 < spent, "it did not stop at the call that passed the threshold"
    (hit,) = sink.of_kind(EventKind.BREAKPOINT_HIT)
    assert hit.data["tokens"] == spent and hit.data["reason"] == f"the trial has used {spent:,} tokens, over tokens>300"
    controller.resume()
    thread.join(HANG)
    assert not thread.is_alive() and agent.outcome.status == "answered"
    assert len(sink.of_kind(EventKind.BREAKPOINT_HIT)) == 1, "a threshold hits once per trial"


def test_a_failed_tool_call_hits_a_fail_breakpoint(open_trial, test_scripts) -> None:
    agent, _controller, sink = _agent("fail", hold=False, model="scripted/errors")
    agent.max_iterations = 2
    run_trial(agent, open_trial("power"), "power")
    hits = sink.of_kind(EventKind.BREAKPOINT_HIT)
    assert [(e.data["point"], e.data["status"]) for e in hits] == [("after_tool", "execution_error")] * 2
    assert hits[0].data["reason"].startswith("calculator failed (execution_error: ")


def test_a_risk_breakpoint_reads_the_tools_risk_from_the_listing(open_trial) -> None:
    agent, _controller, sink = _agent("risk:confirm", hold=False)
    run_trial(agent, open_trial("add"), "add")
    assert sink.of_kind(EventKind.BREAKPOINT_HIT) == [], "calculator is safe, below confirm"

    class Listing:  # the agent asks the trial's listing; here calculator is declared confirm-level
        def tool_listing(self) -> list[dict]:
            return [{"name": "calculator", "risk": "confirm"}]

        current_iteration = 3

        def __init__(self) -> None:
            self.events: list = []

        def emit(self, event) -> None:
            self.events.append((event.kind, event.data))

    watch, probe = BreakpointWatch([Breakpoint.parse("risk:confirm")]), Listing()
    watch.before_tool(probe, "calculator", {})
    watch.before_tool(probe, "unknown_tool", {})
    assert [(kind, data["reason"]) for kind, data in probe.events] == [
        (EventKind.BREAKPOINT_HIT, "about to call calculator (risk confirm)")]


def test_a_running_trial_checks_the_breakpoints_set_after_it_started(open_trial) -> None:
    from corral_core.agents.breakpoints import BreakpointSet

    hooks, sink = AgentHooks(), ListSink()
    controller = TrialController(start_paused=True).attach(hooks)
    points = BreakpointSet()
    agent = ReActAgent(model="scripted/samplemath", hooks=hooks, sink=sink)
    agent.breakpoints = BreakpointWatch(points, controller.hold)
    thread = run_in_thread(run_trial, agent, open_trial("compound"), "compound")
    assert controller.wait_blocked(HANG)  # paused before the first iteration, with no breakpoint
    points.replace([Breakpoint.parse("tool:calculator")])
    controller.resume()
    assert controller.wait_blocked(HANG)
    assert [e.data["breakpoint"] for e in sink.of_kind(EventKind.BREAKPOINT_HIT)] == ["tool:calculator"]
    points.replace([])
    controller.resume()
    thread.join(HANG)
    assert not thread.is_alive() and agent.outcome.status == "answered"
    assert len(sink.of_kind(EventKind.BREAKPOINT_HIT)) == 1 and len(sink.of_kind(EventKind.TOOL_CALL)) == 2


def test_a_planners_executor_stops_at_a_breakpoint_and_a_cancel_ends_it_there(open_trial) -> None:
    from corral_core.agents import LLMPlanner

    agent, controller, sink = _agent("tool:calculator", hold=True, agent_class=LLMPlanner)
    thread = run_in_thread(run_trial, agent, open_trial("add"), "add")
    assert controller.wait_blocked(HANG)  # inside the executor the planner runs: the trial's ledger is shared
    (hit,) = sink.of_kind(EventKind.BREAKPOINT_HIT)
    assert hit.data["tool_name"] == "calculator" and not sink.of_kind(EventKind.TOOL_CALL)
    controller.cancel()
    thread.join(HANG)
    assert not thread.is_alive() and agent.outcome.status == "cancelled"
    assert sink.of_kind(EventKind.TOOL_CALL) == [], "the tool ran after the trial was cancelled at its breakpoint"
