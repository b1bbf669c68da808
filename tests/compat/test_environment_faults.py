"""A trial whose environment failed under it ends as an error with fault `environment`, never as a
scored trial: an external MCP server that timed out or died during a call. A tool's own error (bad
arguments) stays a tool result the agent reads, and the trial is scored as usual.

Real stdio MCP server (data/flaky_mcp_server.py) and a fake OpenAI endpoint on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral_core.tools.mcp_tools import close_all_connections
from tests.compat.test_mcp_healing import flaky_suite
from tests.timeouts import HANG


@pytest.fixture(autouse=True)
def _close_connections() -> Iterator[None]:
    yield
    close_all_connections()


def run_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_call: Any) -> Any:
    from corral_core.runner import BenchmarkRunner
    from corral_core.spec import spec_from_dict
    from tests.fakes.fake_openai import FakeOpenAI, FakeReply

    monkeypatch.setenv("CORRAL_TEST_MCP_KEY", "sk-fake")
    flaky_suite(tmp_path)
    replies = [first_call, FakeReply.tool_call("echo", {"text": "after"}), FakeReply.text("Final Answer: ok")]
    with FakeOpenAI(replies) as fake:
        spec = {"name": "mcp-fault", "suite": str(tmp_path / "flaky.yaml"), "tasks": ["t"], "trials_per_task": 1,
                "parallel": 1, "agent": {"type": "tool_calling", "max_iterations": 4},
                "model": {"id": "openai/fake-model", "api_base": fake.base_url, "api_key_env": "CORRAL_TEST_MCP_KEY",
                          "max_retries": 0, "timeout": HANG}}
        return BenchmarkRunner(spec_from_dict(spec, tmp_path)).run()


def only_trial(result: Any) -> Any:
    assert len(result.records) == 1
    return result.records[0]


def test_an_mcp_server_that_times_out_ends_the_trial_as_an_environment_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakes.fake_openai import FakeReply

    result = run_with(tmp_path, monkeypatch, FakeReply.tool_call("freeze", {"marker": str(tmp_path / "freeze")}))
    trial = only_trial(result)
    assert (trial.status, trial.fault, trial.score) == ("error", "environment", None)
    assert "the MCP server 'flaky' did not answer freeze" in (trial.error or "")
    assert result.errored == 1  # before: completed, scored 1.0, fault empty, "0 errored"


def test_an_mcp_server_that_dies_mid_call_ends_the_trial_as_an_environment_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakes.fake_openai import FakeReply

    trial = only_trial(run_with(tmp_path, monkeypatch, FakeReply.tool_call("die", {})))
    assert (trial.status, trial.fault, trial.score) == ("error", "environment", None)
    assert "the MCP server 'flaky'" in (trial.error or "")


def test_a_tools_own_error_is_a_result_the_agent_reads_and_the_trial_is_scored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakes.fake_openai import FakeReply

    trial = only_trial(run_with(tmp_path, monkeypatch, FakeReply.tool_call("echo", {"wrong": 1})))
    assert (trial.status, trial.fault, trial.score) == ("completed", None, 1.0)

