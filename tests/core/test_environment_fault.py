"""A trial whose REST environment server vanished mid-trial ends as an error with fault `environment`,
named after the tool call that found it gone (the MCP half: tests/compat/test_environment_faults.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from corral_core.client import CorralRouter
from corral_core.env import load_suite
from corral_core.server import EmbeddedServer, create_app
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"


def test_a_rest_server_that_vanishes_mid_trial_is_the_environments_fault(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from corral_core.runner import BenchmarkRunner
    from corral_core.spec import spec_from_dict

    monkeypatch.setenv("CORRAL_TEST_REST_KEY", "sk-fake")
    server = EmbeddedServer(create_app(load_suite(SAMPLEMATH)))
    url = server.start()
    replies = [FakeReply.tool_call("calculator", {"operation": "add", "a": 17, "b": 25}),
               FakeReply.text("Final Answer: 42")]
    with FakeOpenAI(replies, hold=True) as fake:
        spec = {"name": "rest-gone", "suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 1,
                "parallel": 1, "agent": {"type": "tool_calling", "max_iterations": 4},
                "model": {"id": "openai/fake-model", "api_base": fake.base_url, "api_key_env": "CORRAL_TEST_REST_KEY",
                          "max_retries": 0, "timeout": HANG}}
        runner = BenchmarkRunner(spec_from_dict(spec, tmp_path), server_url=url)
        results: list = []
        thread = threading.Thread(target=lambda: results.append(runner.run()))
        thread.start()
        try:
            assert fake.wait_until(lambda f: f.in_flight == 1, HANG), "the agent's first model call"
            server.stop()  # the trial is open on it and the model is about to ask for the calculator
        finally:
            fake.release(2)
            thread.join(HANG)
    assert not thread.is_alive() and len(results) == 1
    [row] = results[0].rows
    assert (row["status"], row["fault"], row["score"], results[0].errored) == ("error", "environment", None, 1)
    # before: already an environment error, but named after the submit that failed last, not the tool call
    assert "the tool calculator could not be called: " in row["error"]
    assert "cannot reach the environment server" in row["error"]


def test_a_refused_connection_is_the_environments_failure_and_a_bad_call_is_not() -> None:
    server = EmbeddedServer(create_app(load_suite(SAMPLEMATH)))
    with CorralRouter(server.start(), default_verbosity=None) as router:
        trial = router.open_trial("add")
        wrong = trial.execute_tool("add", "calculator", {"nope": 1})  # the tool's own error: the agent's
        assert not wrong.success and wrong.fault is None and "fault" not in (wrong.tool_call or {})
        server.stop()
        gone = trial.execute_tool("add", "calculator", {"operation": "add", "a": 1, "b": 1})
    assert not gone.success and gone.fault == "environment"  # before: success False and nothing more
    assert "cannot reach the environment server" in (gone.error or "")
