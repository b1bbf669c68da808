"""ReflectionAgent: reflects on its own previous trial of a task, and survives a failed reflection."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from corral_core.agents import ReActAgent, ReflectionAgent, run_trial
from corral_core.client import CorralRouter
from corral_core.events import EventKind, ListSink
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HTTP_TIMEOUT

from .conftest import FAKE_KEY_ENV

WRONG_POWER = ('<thought>Multiply.</thought><action>calculator</action>'
               '<action_input>{"operation": "*", "a": 2, "b": 10}</action_input>')


@pytest.fixture
def fresh_router(fresh_server_url: str) -> Iterator[CorralRouter]:
    router = CorralRouter(fresh_server_url)
    yield router
    router.close()


def _fake_agent(agent_class: type, fake: FakeOpenAI, **kwargs: Any) -> Any:
    return agent_class(model="openai/fake-model", api_endpoint=fake.base_url, api_key_env=FAKE_KEY_ENV,
                       timeout=HTTP_TIMEOUT, max_retries=0, **kwargs)


def _arm_trial(agent: Any, router: CorralRouter, task_id: str, arm: str, index: int) -> Any:
    """One trial the way the runner runs an arm's trial: its own trial runtime, closed afterwards."""
    with router.open_trial(task_id, arm=arm, trial_index=index) as trial:
        return run_trial(agent, trial, task_id, arm=arm, trial_index=index)


def test_reflection_uses_its_own_previous_score_not_another_arms(fake_key, fresh_router) -> None:
    replies = [FakeReply.text(WRONG_POWER), FakeReply.text("<final_answer>20</final_answer>"),  # reflection arm
               FakeReply.text("<final_answer>1024</final_answer>"),  # the other arm, in between: scores 1.0
               FakeReply.text("Lesson: powers need the ** operator."),  # reflection on its own first trial
               FakeReply.text("<final_answer>1024</final_answer>")]
    with FakeOpenAI(replies) as fake:
        reflection = _fake_agent(ReflectionAgent, fake)
        other = _fake_agent(ReActAgent, fake)
        first = _arm_trial(reflection, fresh_router, "power", "reflect", 0)
        between = _arm_trial(other, fresh_router, "power", "other", 0)
        second = _arm_trial(reflection, fresh_router, "power", "reflect", 1)
        bodies = fake.requests
    assert (first.score, between.score, second.score) == (0.0, 1.0, 1.0)
    assert fresh_router.get_last_score("power")["score"] == 1.0  # the server's latest trial is the other arm's
    reflection_prompt = bodies[3]["messages"][0]["content"]
    assert "Attempt (trial 0) scored 0.00" in reflection_prompt
    # nothing run-specific enters the prompt (replay checks its digest): neither trial id appears
    assert first.trial_id not in reflection_prompt and between.trial_id not in reflection_prompt
    assert [(lesson.trial_id, lesson.score) for lesson in reflection.lessons("power")] == [(first.trial_id, 0.0)]


def test_reflection_on_an_unscored_attempt_says_how_it_ended(fake_key, fresh_router) -> None:
    replies = [FakeReply.text(WRONG_POWER),  # max_iterations=1: the first trial hits the limit, no score
               FakeReply.text("<final_answer>1024</final_answer>"),  # another arm scores 1.0 meanwhile
               FakeReply.text("Lesson: finish within the iteration budget."), FakeReply.text(WRONG_POWER)]
    with FakeOpenAI(replies) as fake:
        reflection = _fake_agent(ReflectionAgent, fake, max_iterations=1)
        first = _arm_trial(reflection, fresh_router, "power", "reflect", 0)
        _arm_trial(_fake_agent(ReActAgent, fake), fresh_router, "power", "other", 0)
        _arm_trial(reflection, fresh_router, "power", "reflect", 1)
        bodies = fake.requests
    assert first.status == "iteration_limit"
    assert "scored nothing (it ended without a score: iteration limit)" in bodies[2]["messages"][0]["content"]
    assert reflection.lessons("power")[0].score is None


def test_reflection_without_run_trial_falls_back_to_the_servers_last_score(fake_key, fresh_router) -> None:
    replies = [FakeReply.text("<final_answer>20</final_answer>"), FakeReply.text("Lesson: use **."),
               FakeReply.text("<final_answer>1024</final_answer>")]
    with FakeOpenAI(replies) as fake:
        agent = _fake_agent(ReflectionAgent, fake)
        assert agent.run(fresh_router, "power") == "20"
        fresh_router.submit_answer("power", "20")  # Corral's task routes: the caller submits
        agent.run(fresh_router, "power")
        bodies = fake.requests
    assert "scored 0.00" in bodies[1]["messages"][0]["content"]
    assert agent.lessons("power")[0].score == 0.0


def test_a_failed_reflection_call_costs_the_lesson_not_the_trial(test_scripts, open_trial) -> None:
    sink = ListSink()
    agent = ReflectionAgent(model="scripted/no_reflection", sink=sink)
    first = run_trial(agent, open_trial("add"), "add")
    second = run_trial(agent, open_trial("add"), "add")
    assert (first.status, first.score) == ("completed", 0.0)
    assert (second.status, second.answer, second.error) == ("completed", "41", None)
    errors = sink.of_kind(EventKind.HOOK_ERROR)
    assert [(e.data["hook"], e.trial_id) for e in errors] == [("reflection", agent.trial_id)]
    assert "reflection call failed" in errors[0].data["error"] and "no `reflection` turns" in errors[0].data["error"]
    assert agent.lessons("add") == []
    assert sink.of_kind(EventKind.AGENT_FINISHED)[-1].data["status"] == "answered"


def test_a_reflection_prompt_naming_the_run_specific_trial_id_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\{\{trial_id\}\}.*\{\{trial\}\}"):
        ReflectionAgent(model="scripted/samplemath", reflection_prompt="Attempt {{trial_id}}: {{score}}")
    ReflectionAgent(model="scripted/samplemath", reflection_prompt="Attempt {{trial}} of {{task_id}}: {{score}}")
