"""Errors are not agent failures: each errored trial says whose fault it was (issue 9, item 7), in the
finished event, the store, the per-arm metrics and JUnit."""

from __future__ import annotations

import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from corral_core.agents import ReActAgent, run_trial
from corral_core.agents.outcome import StepResult
from corral_core.batch import open_store
from corral_core.client import ConnectionFailed
from corral_core.llm.types import LLMError
from corral_core.report import junit_xml
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict
from tests.fakes.fake_openai import FakeOpenAI, FakeReply

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"
KEY_ENV = "CORRAL_TEST_FAULT_KEY"


def _run(tmp_path: Path, **spec: Any) -> tuple[Any, list[tuple[str, str | None, str | None]]]:
    db = tmp_path / "runs.db"
    engine, repository, writer = open_store(str(db))
    try:
        data = {"name": "faults", "suite": str(SAMPLES / "samplemath.yaml"), "tasks": ["add"], "trials_per_task": 1,
                "parallel": 1, "agent": {"type": "react", "max_iterations": 3}, **spec}
        result = BenchmarkRunner(spec_from_dict(data, SAMPLES), repository=repository, writer_sink=writer).run()
    finally:
        writer.close()
        engine.dispose()
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select status, error, fault from trial where benchmark_id=?",
                            (result.benchmark_id,)).fetchall()
    return result, rows


def test_a_failing_provider_is_the_providers_fault_everywhere(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-fake")
    with FakeOpenAI([FakeReply.server_error()] * 4) as fake:
        result, rows = _run(tmp_path, model={"id": "openai/fake-model", "api_base": fake.base_url,
                                             "api_key_env": KEY_ENV, "max_retries": 0, "timeout": 5})
    assert [(status, fault) for status, _, fault in rows] == [("error", "provider")]
    metrics = result.arms["default"]
    assert metrics.errors_by_fault == {"provider": 1}
    document = result.to_dict()
    assert [row["fault"] for row in document["trials"]] == ["provider"]
    root = ET.fromstring(junit_xml("faults", document["trials"], ["default"], ["add"], document["arms"]))
    assert root.tag == "testsuites" and "skipped" not in root.attrib and root.get("errors") == "1"
    (error,) = root.iter("error")
    assert error.get("type") == "provider" and not list(root.iter("failure"))


def test_a_replay_that_no_longer_matches_is_the_agents_fault(tmp_path: Path) -> None:
    recorded, _ = _run(tmp_path, model="scripted/samplemath")
    _, rows = _run(tmp_path, name="faults-replayed", model=f"replay/{recorded.benchmark_id}",
                   agent={"type": "react", "max_iterations": 3, "system_prompt": "Another prompt."})
    assert [(status, fault) for status, _, fault in rows] == [("error", "agent")]


class _Bare(ReActAgent):
    """A ReAct agent that reads no guide (no server behind these interfaces)."""

    def _prepare(self, *args: Any, **kwargs: Any) -> None:
        pass


class _Body(_Bare):
    """An agent whose iteration raises what it is given."""

    def __init__(self, exc: Exception, **kwargs: Any) -> None:
        super().__init__(model="scripted/samplemath", **kwargs)
        self.exc = exc

    def _run_body(self) -> StepResult:
        raise self.exc


class _Interface:
    trial_id = "t_1"

    def submit_answer(self, task_id: str, answer: str) -> Any:
        raise ConnectionFailed(None, "connection refused", method="POST", url="/submit")


@pytest.mark.parametrize(("exc", "fault"), [
    (LLMError("rate_limit", "slow down"), "provider"),
    (LLMError("connection", "no route"), "provider"),
    (LLMError("replay_divergence", "asked something else"), "agent"),
    (ConnectionFailed(None, "the tool server is gone", method="GET", url="/tools"), "environment"),
    (KeyError("parsed"), "agent"),
])
def test_the_agent_names_whose_fault_an_error_was(exc: Exception, fault: str) -> None:
    agent = _Body(exc)
    agent.run(_Interface(), "add")
    assert agent.outcome is not None and (agent.outcome.status, agent.outcome.fault) == ("error", fault)


def test_a_refused_submission_is_the_environments_fault() -> None:
    class Answers(_Bare):
        def _run_body(self) -> StepResult:
            return StepResult(status="answered", answer="42")

    outcome = run_trial(Answers(model="scripted/samplemath"), _Interface(), "add")
    assert (outcome.status, outcome.fault) == ("error", "environment")
    assert "submitting the answer failed" in (outcome.error or "")
