"""Hundreds of trials in flight at once: a run with `parallel: 256` against a slow provider has every
trial waiting on the model at the same time, and each of them completes and is stored exactly once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from corral_core.batch import open_store
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"
KEY_ENV = "CORRAL_TEST_FAKE_KEY"
IN_FLIGHT = 256


def test_256_trials_wait_on_the_provider_at_once_and_each_is_stored_once(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    engine, repository, writer = open_store(str(tmp_path / "store.db"))
    # the provider holds every request until all IN_FLIGHT trials are waiting on it
    with FakeOpenAI([FakeReply.text("Final Answer: 42")], repeat_last=True, hold=True) as server:
        spec = spec_from_dict({"name": "in-flight", "suite": str(SAMPLEMATH), "tasks": ["add"],
                               "agent": {"type": "tool_calling", "max_iterations": 2},
                               "trials_per_task": IN_FLIGHT, "k_values": [1], "parallel": IN_FLIGHT,
                               "model": {"id": "openai/fake-model", "api_base": server.base_url,
                                         "api_key_env": KEY_ENV, "timeout": HANG, "max_retries": 0}},
                              SAMPLEMATH.parent)
        runner = BenchmarkRunner(spec, repository=repository, writer_sink=writer)
        results = []
        thread = threading.Thread(target=lambda: results.append(runner.run()), daemon=True)
        thread.start()
        all_waiting = server.wait_until(lambda s: s.in_flight == IN_FLIGHT, timeout=HANG)
        server.release(IN_FLIGHT)
        thread.join(HANG)
        peak = server.max_in_flight
    try:
        assert all_waiting, f"only {peak} requests were in flight at once"
        assert not thread.is_alive() and results, "the run did not end"
        result = results[0]
        assert result.status == "finished" and result.errored == 0
        records = repository.trial_records(result.benchmark_id)
    finally:
        writer.close()
        engine.dispose()
    assert peak == IN_FLIGHT
    assert sorted(r.trial_index for r in records) == list(range(IN_FLIGHT))  # every trial, each once
    assert {(r.status, r.score) for r in records} == {("completed", 1.0)}
