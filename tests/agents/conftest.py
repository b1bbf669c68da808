"""Fixtures for the agent tests: a real embedded samplemath server, clients, scripts, event helpers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral_core.client import CorralRouter, TrialClient
from corral_core.env import load_suite
from corral_core.events import Event, EventKind, ListSink
from corral_core.server import EmbeddedServer, create_app

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "sample_tasks" / "samplemath.yaml"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
FAKE_KEY_ENV = "CORRAL_TEST_AGENT_KEY"


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A samplemath environment server shared by a test module (tests use isolated trials on it)."""
    app = create_app(load_suite(SUITE), base_work_dir=tmp_path_factory.mktemp("work"))
    server = EmbeddedServer(app)
    url = server.start()
    yield url
    server.stop()


@pytest.fixture
def fresh_server_url(tmp_path: Path) -> Iterator[str]:
    """A server of its own, for tests that read task-level history (last scores)."""
    server = EmbeddedServer(create_app(load_suite(SUITE), base_work_dir=tmp_path))
    url = server.start()
    yield url
    server.stop()


@pytest.fixture
def router(server_url: str) -> Iterator[CorralRouter]:
    client = CorralRouter(server_url)
    yield client
    client.close()


@pytest.fixture
def open_trial(router: CorralRouter) -> Iterator[Any]:
    """`open_trial(task_id)` -> an isolated TrialClient, closed after the test."""
    opened: list[TrialClient] = []

    def factory(task_id: str) -> TrialClient:
        trial = router.open_trial(task_id)
        opened.append(trial)
        return trial

    yield factory
    for trial in opened:
        trial.close()


@pytest.fixture
def test_scripts(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make `scripted/<name>` find the scenario scripts in tests/agents/scripts/."""
    monkeypatch.setenv("CORRAL_TUI_SCRIPTS", str(SCRIPTS))
    return SCRIPTS


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(FAKE_KEY_ENV, "sk-test-agents")
    return FAKE_KEY_ENV


def requests_of(sink: ListSink, role: str | None = None) -> list[Event]:
    return [e for e in sink.of_kind(EventKind.LLM_REQUEST) if role is None or e.data["role"] == role]


def usage_sum(sink: ListSink) -> dict[str, int]:
    """Token usage summed over every LLM_RESPONSE event."""
    total = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for event in sink.of_kind(EventKind.LLM_RESPONSE):
        for key in total:
            total[key] += event.data["usage"][key]
    return total


def run_in_thread(target: Any, *args: Any, **kwargs: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, kwargs=kwargs, daemon=True)
    thread.start()
    return thread
