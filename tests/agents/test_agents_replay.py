"""replay/<benchmark_id> drives a real agent through a recorded trial: same tool calls, answer and score."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral_core.agents import ReActAgent, ToolCallingAgent, run_trial
from corral_core.events import EventKind, ListSink
from corral_core.llm import JsonlReplaySource, set_replay_source, write_replay_jsonl

BENCHMARK = "bm-agents-replay"
TRIAL = {"benchmark_id": BENCHMARK, "arm": "terse", "trial_index": 2}  # the identity replay looks recordings up by


@pytest.fixture(autouse=True)
def no_replay_source() -> Iterator[None]:
    previous = set_replay_source(None)
    yield
    set_replay_source(previous)


def _run(agent_class: type, model: str, open_trial: Any, task_id: str, verbosity: str) -> tuple[Any, ListSink]:
    sink = ListSink()
    outcome = run_trial(agent_class(model=model, sink=sink), open_trial(task_id), task_id, verbosity=verbosity,
                        **TRIAL)
    return outcome, sink


def _tool_calls(sink: ListSink) -> list[tuple[str, dict[str, Any]]]:
    return [(e.data["tool_name"], e.data["arguments"]) for e in sink.of_kind(EventKind.TOOL_CALL)]


def _record(agent_class: type, open_trial: Any, tmp_path: Path) -> tuple[Any, ListSink]:
    """Run `compound` with the scripted model and install its LLM events as the replay source."""
    recorded, sink = _run(agent_class, "scripted/samplemath", open_trial, "compound", "brief")
    assert (recorded.status, recorded.score) == ("completed", 1.0)
    path = tmp_path / f"{BENCHMARK}.jsonl"
    assert write_replay_jsonl(sink.events, path) == 2 * len(sink.of_kind(EventKind.LLM_RESPONSE))
    set_replay_source(JsonlReplaySource(path))
    return recorded, sink


@pytest.mark.parametrize("agent_class", [ReActAgent, ToolCallingAgent])
def test_replay_repeats_the_recorded_trial(agent_class, open_trial, tmp_path) -> None:
    recorded, recorded_sink = _record(agent_class, open_trial, tmp_path)
    replayed, replayed_sink = _run(agent_class, f"replay/{BENCHMARK}", open_trial, "compound", "brief")
    assert _tool_calls(recorded_sink) == [("calculator", {"operation": "+", "a": 3, "b": 4}),
                                          ("calculator", {"operation": "*", "a": 7, "b": 5})]
    assert _tool_calls(replayed_sink) == _tool_calls(recorded_sink)
    assert (replayed.status, replayed.answer, replayed.score) == (recorded.status, recorded.answer, recorded.score)
    assert replayed.usage == recorded.usage  # the recorded usage comes back too
    digests = [[e.data["digest"] for e in s.of_kind(EventKind.LLM_REQUEST)] for s in (recorded_sink, replayed_sink)]
    assert digests[0] == digests[1]


@pytest.mark.parametrize("agent_class", [ReActAgent, ToolCallingAgent])
def test_a_diverging_conversation_fails_the_replayed_trial(agent_class, open_trial, tmp_path) -> None:
    _record(agent_class, open_trial, tmp_path)
    diverged, sink = _run(agent_class, f"replay/{BENCHMARK}", open_trial, "compound", "full")  # other tool docs
    assert (diverged.status, diverged.score, diverged.answer) == ("error", None, None)
    assert f"replay/{BENCHMARK}" in diverged.error and "differs from the recording" in diverged.error
    assert _tool_calls(sink) == []  # nothing ran on a made-up answer
