"""Hooks: registry semantics, and flags every agent honours (should_continue, skip_current_step)."""

from __future__ import annotations

import pytest

from corral_core.agents import (
    AgentHooks,
    CriticalHookError,
    HookContext,
    HookPoint,
    LLMPlanner,
    ReActAgent,
    ReflectionAgent,
    ToolCallingAgent,
    run_trial,
)
from corral_core.events import EventKind, ListSink

from .conftest import requests_of

AGENTS = [ReActAgent, ToolCallingAgent, LLMPlanner, ReflectionAgent]


def _ctx() -> HookContext:
    return HookContext(task_id="t", agent=None, interface=None, messages=[])


def test_priority_order_is_highest_first_and_stable() -> None:
    hooks, seen = AgentHooks(), []
    for name, priority in [("a", 0), ("b", 5), ("c", 0), ("d", 5)]:
        hooks.register(HookPoint.BEFORE_TASK, lambda ctx, n=name: seen.append(n), priority)
    hooks.execute("before_task", _ctx())
    assert seen == ["b", "d", "a", "c"]


def test_string_points_remove_clear_and_has_hooks() -> None:
    hooks = AgentHooks()

    def callback(ctx: HookContext) -> None:
        return None

    hooks.register("after_iteration", callback)
    assert hooks.has_hooks(HookPoint.AFTER_ITERATION) and not hooks.has_hooks("before_task")
    assert hooks.remove("AFTER_ITERATION", callback) and not hooks.remove("after_iteration", callback)
    hooks.register(HookPoint.BEFORE_TASK, callback)
    hooks.clear()
    assert not hooks.has_hooks("before_task")
    with pytest.raises(ValueError, match="unknown hook point 'before_everything'.*before_task"):
        hooks.register("before_everything", callback)


def test_chain_stops_after_should_continue_false_and_errors_do_not() -> None:
    hooks, seen, errors = AgentHooks(), [], []

    def broken(ctx):
        raise RuntimeError("boom")

    def stopper(ctx):
        ctx.should_continue = False

    hooks.register("before_iteration", broken, 3)
    hooks.register("before_iteration", lambda ctx: seen.append("after broken"), 2)
    hooks.register("before_iteration", stopper, 1)
    hooks.register("before_iteration", lambda ctx: seen.append("never"), 0)
    ctx = hooks.execute("before_iteration", _ctx(), on_error=lambda p, n, e: errors.append((n, str(e))))
    assert seen == ["after broken"] and errors == [("broken", "boom")] and ctx.should_continue is False


def test_critical_hook_error_propagates() -> None:
    hooks = AgentHooks()

    def critical(ctx):
        raise CriticalHookError("stop everything")

    hooks.register("before_task", critical)
    with pytest.raises(CriticalHookError):
        hooks.execute("before_task", _ctx())


@pytest.mark.parametrize("agent_class", AGENTS, ids=lambda c: c.__name__)
def test_should_continue_false_stops_every_agent(agent_class, open_trial) -> None:
    hooks, after = AgentHooks(), []

    def stop_at_second(ctx: HookContext) -> None:
        if ctx.iteration == 1:
            ctx.should_continue = False

    hooks.register(HookPoint.BEFORE_ITERATION, stop_at_second)
    hooks.register(HookPoint.AFTER_TASK, lambda ctx: after.append(ctx.iteration_data["status"]))
    trial = open_trial("compound")
    outcome = run_trial(agent_class(model="scripted/samplemath", hooks=hooks), trial, "compound")
    assert (outcome.status, outcome.score, outcome.answer) == ("stopped", None, None)
    assert after == ["stopped"]
    assert trial.get_task_status("compound")["submitted_answer"] is None


@pytest.mark.parametrize("agent_class", AGENTS, ids=lambda c: c.__name__)
def test_should_continue_false_before_task_makes_no_llm_call(agent_class, open_trial) -> None:
    hooks, sink = AgentHooks(), ListSink()
    hooks.register("before_task", lambda ctx: setattr(ctx, "should_continue", False))
    agent = agent_class(model="scripted/samplemath", hooks=hooks, sink=sink)
    assert agent.run(open_trial("add"), "add") == ""
    assert agent.outcome.status == "stopped" and requests_of(sink) == []


def test_should_continue_false_at_after_task_vetoes_the_submission(open_trial) -> None:
    hooks = AgentHooks()
    hooks.register("after_task", lambda ctx: setattr(ctx, "should_continue", False))
    trial = open_trial("add")
    outcome = run_trial(ReActAgent(model="scripted/samplemath", hooks=hooks), trial, "add")
    assert outcome.status == "stopped" and trial.get_task_status("add")["submitted_answer"] is None


@pytest.mark.parametrize("agent_class", [ReActAgent, ToolCallingAgent], ids=lambda c: c.__name__)
def test_skip_current_step_skips_the_llm_call(agent_class, open_trial) -> None:
    hooks, sink = AgentHooks(), ListSink()
    hooks.register("before_iteration", lambda ctx: setattr(ctx, "skip_current_step", ctx.iteration == 0))
    skipped = []
    hooks.register("after_iteration", lambda ctx: skipped.append(ctx.iteration_data.get("skipped", False)))
    agent = agent_class(model="scripted/samplemath", hooks=hooks, sink=sink)
    outcome = run_trial(agent, open_trial("add"), "add")
    assert (outcome.status, outcome.score, outcome.iterations) == ("completed", 1.0, 3)
    assert skipped == [True, False, False]
    events = sink.of_kind(EventKind.ITERATION_STARTED, EventKind.LLM_REQUEST)
    order = [(e.kind, e.data.get("iteration")) for e in events]
    assert order[:3] == [(EventKind.ITERATION_STARTED, 0), (EventKind.ITERATION_STARTED, 1),
                         (EventKind.LLM_REQUEST, None)]
    assert len(requests_of(sink)) == 2


@pytest.mark.parametrize("agent_class", AGENTS, ids=lambda c: c.__name__)
def test_after_task_fires_on_error_with_status(agent_class, test_scripts, open_trial) -> None:
    hooks, seen = AgentHooks(), []
    hooks.register("after_task", lambda ctx: seen.append(dict(ctx.iteration_data)))
    agent = agent_class(model="scripted/no_such_script", hooks=hooks)
    outcome = run_trial(agent, open_trial("add"), "add")
    assert outcome.status == "error" and "no script for model 'scripted/no_such_script'" in outcome.error
    assert len(seen) == 1 and seen[0]["status"] == "error" and seen[0]["error"] == outcome.error


def test_hook_exception_is_recorded_and_the_trial_continues(open_trial) -> None:
    hooks, sink = AgentHooks(), ListSink()

    def flaky(ctx: HookContext) -> None:
        raise KeyError("missing thing")

    hooks.register("before_iteration", flaky)
    outcome = run_trial(ReActAgent(model="scripted/samplemath", hooks=hooks, sink=sink), open_trial("add"), "add")
    assert (outcome.status, outcome.score) == ("completed", 1.0)
    errors = sink.of_kind(EventKind.HOOK_ERROR)
    assert len(errors) == 2 and errors[0].data == {"point": "before_iteration", "hook": "flaky",
                                                   "error": "KeyError: 'missing thing'"}


def test_critical_hook_error_ends_the_trial_as_error(open_trial) -> None:
    hooks, after = AgentHooks(), []

    def critical(ctx: HookContext) -> None:
        raise CriticalHookError("the experiment is misconfigured")

    hooks.register("before_iteration", critical)
    hooks.register("after_task", lambda ctx: after.append(ctx.iteration_data["status"]))
    outcome = run_trial(ReActAgent(model="scripted/samplemath", hooks=hooks), open_trial("add"), "add")
    assert outcome.status == "error" and "misconfigured" in outcome.error and after == ["error"]


def test_hook_fired_events_and_metadata_persisting_across_points(open_trial) -> None:
    hooks, sink, seen = AgentHooks(), ListSink(), []

    def count(ctx: HookContext) -> None:
        ctx.metadata["count"] = ctx.metadata.get("count", 0) + 1

    def report(ctx: HookContext) -> None:
        seen.append(ctx.metadata["count"])

    hooks.register("before_task", count)
    hooks.register("before_iteration", count)
    hooks.register("after_task", report)
    run_trial(ReActAgent(model="scripted/samplemath", hooks=hooks, sink=sink), open_trial("add"), "add")
    assert seen == [3]
    fired = sink.of_kind(EventKind.HOOK_FIRED)
    assert [(e.data["point"], e.data["hook"], e.data["iteration"]) for e in fired] == [
        ("before_task", "count", 0), ("before_iteration", "count", 0), ("before_iteration", "count", 1),
        ("after_task", "report", 1)]


def test_hooks_see_the_live_conversation_and_after_iteration_data(open_trial) -> None:
    hooks, data = AgentHooks(), []
    hooks.register("after_iteration", lambda ctx: data.append(ctx.iteration_data))
    hooks.register("before_iteration", lambda ctx: ctx.messages.append(
        {"role": "user", "content": f"note {ctx.iteration}"}))
    agent = ReActAgent(model="scripted/samplemath", hooks=hooks)
    run_trial(agent, open_trial("add"), "add")
    assert [m["content"] for m in agent.messages if str(m["content"]).startswith("note")] == ["note 0", "note 1"]
    assert data[0]["parsed_actions"][0]["name"] == "calculator" and data[0]["tool_results"][0]["status"] == "success"
    assert data[1]["final_answer"] == "42"


def test_internal_hooks_do_not_flood_the_event_log(open_trial):
    """The controller and the inbox report through their own events; user hooks still fire."""
    from corral_core.agents import AgentHooks, HookPoint, InterventionInbox, ReActAgent, TrialController, run_trial
    from corral_core.events import EventKind, ListSink

    sink = ListSink()
    hooks = AgentHooks()
    TrialController().attach(hooks)
    InterventionInbox().attach(hooks)
    seen = []
    hooks.register(HookPoint.BEFORE_ITERATION, lambda ctx: seen.append(ctx.iteration))
    agent = ReActAgent(model="scripted/samplemath", hooks=hooks, sink=sink)
    assert run_trial(agent, open_trial("add"), "add", verbosity="full").score == 1.0
    fired = [e.data["hook"] for e in sink.of_kind(EventKind.HOOK_FIRED)]
    assert len(seen) == 2 and len(fired) == 2
    assert not any(name in ("trial_controller", "intervention_inbox") for name in fired)
