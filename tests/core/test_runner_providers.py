"""A benchmark against a rate-limiting provider: with default settings every trial completes, and the
retries (and a provider that never recovers) are recorded apart from the agent's own failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from corral_core.events import EventKind, ListSink
from corral_core.llm import retry
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict
from tests.fakes.fake_openai import FakeOpenAI, FakeReply

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"
KEY_ENV = "CORRAL_TEST_FAKE_KEY"


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)


def run(server: FakeOpenAI, **model: Any) -> list[dict[str, Any]]:
    spec = spec_from_dict({"name": "providers", "suite": str(SAMPLEMATH), "tasks": ["add", "multiply"],
                           "trials_per_task": 2, "parallel": 1,
                           "model": {"id": "openai/fake-model", "api_base": server.base_url, "api_key_env": KEY_ENV,
                                     "timeout": 10, **model}}, SAMPLEMATH.parent)
    sink = ListSink()
    BenchmarkRunner(spec, sink=sink).run()
    return [e.data for e in sink.of_kind(EventKind.TRIAL_FINISHED)]


def test_with_default_settings_every_trial_survives_429s() -> None:
    replies = [FakeReply.rate_limited(), FakeReply.server_error(status=502), FakeReply.text("Final Answer: 42")] * 4
    with FakeOpenAI(replies) as server:
        trials = run(server)
    assert len(trials) == 4
    assert [t["status"] for t in trials] == ["completed"] * 4, [t["error"] for t in trials]
    assert [t["llm_retries"] for t in trials] == [2] * 4
    assert all("fault" not in t for t in trials)


def test_a_provider_that_never_recovers_is_its_fault_not_the_agents() -> None:
    with FakeOpenAI([FakeReply.rate_limited()], repeat_last=True) as server:
        trials = run(server, max_retries=1)
        sent = len(server.received)
    assert sent == 4 * 2
    assert {(t["status"], t["fault"], t["llm_retries"]) for t in trials} == {("error", "provider", 1)}
    assert all("gave up after 1 retries" in t["error"] for t in trials)
