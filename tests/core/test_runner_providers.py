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
    assert all(t["fault"] is None for t in trials)


def test_a_provider_that_never_recovers_is_its_fault_not_the_agents() -> None:
    with FakeOpenAI([FakeReply.rate_limited()], repeat_last=True) as server:
        trials = run(server, max_retries=1)
        sent = len(server.received)
    assert sent == 4 * 2
    assert {(t["status"], t["fault"], t["llm_retries"]) for t in trials} == {("error", "provider", 1)}
    assert all("gave up after 1 retries" in t["error"] for t in trials)


def test_cost_per_trial_arm_and_run_reaches_the_json_and_the_batch_table() -> None:
    import io
    import math

    from corral_core import report

    with FakeOpenAI([FakeReply.text("Final Answer: 42", usage=(1000, 100))], repeat_last=True,
                    model="gpt-4o-mini") as server:
        spec = spec_from_dict({"name": "priced", "suite": str(SAMPLEMATH), "tasks": ["add", "multiply"],
                               "trials_per_task": 2,
                               "model": {"id": "openai/gpt-4o-mini", "api_base": server.base_url,
                                         "api_key_env": KEY_ENV}}, SAMPLEMATH.parent)
        document = BenchmarkRunner(spec).run().to_dict()
    costs = [t["cost"] for t in document["trials"]]
    assert len(costs) == 4 and all(c is not None and c > 0 for c in costs)  # litellm's price of gpt-4o-mini
    assert math.isclose(document["cost_total"], sum(costs))
    assert math.isclose(document["arms"]["default"]["resources"]["cost"], sum(costs))
    out = io.StringIO()
    report.print_results(document, report.plain_console(out))
    table = out.getvalue()
    assert "per trial" in table and report.money_text(sum(costs) / 4) in table
    assert f"cost {report.money_text(sum(costs))}" in table and "$0.000" in table  # significant digits, not $0.000
