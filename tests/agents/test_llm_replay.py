"""replay/<benchmark_id>: recorded answers come back turn by turn; any divergence is reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral_core.errors import UserError
from corral_core.events import Event, EventKind, event_from
from corral_core.llm import (
    CallContext,
    JsonlReplaySource,
    LLMError,
    LLMToolCall,
    ModelSettings,
    RecordedResponse,
    Usage,
    completion,
    request_digest,
    set_replay_source,
    write_replay_jsonl,
)

SCRIPTED = ModelSettings("scripted/samplemath", timeout=5, max_retries=0)
REPLAY = ModelSettings("replay/bm-1", timeout=5, max_retries=0)
TOOLS = [{"type": "function", "function": {"name": "calculator", "description": "Arithmetic.",
                                           "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture(autouse=True)
def no_replay_source():
    previous = set_replay_source(None)
    yield
    set_replay_source(previous)


def conversation(turn: int) -> list[dict]:
    """The messages a tool-calling agent would send at each turn of task 'compound'."""
    messages = [{"role": "user", "content": "What is (3 + 4) * 5?"}]
    for index in range(turn):
        call = {"id": f"call_agent_{index}_0", "type": "function",
                "function": {"name": "calculator", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_agent_{index}_0", "content": "7"})
    return messages


def record_events(task: str = "compound", turns: int = 3, arm: str = "A") -> list[Event]:
    """Run the scripted model and emit the LLM events an agent would, as the recorded benchmark."""
    events = []
    for turn in range(turns):
        messages = conversation(turn)
        digest = request_digest(messages, TOOLS)
        result = completion(SCRIPTED, messages, TOOLS, context=CallContext(task, arm=arm, turn=turn))
        common = {"trial_id": "tr_1", "task_id": task, "benchmark_id": "bm-1"}
        events.append(event_from(EventKind.LLM_REQUEST, data={"role": "agent", "turn": turn, "digest": digest,
                                                         "n_messages": len(messages), "model": SCRIPTED.model},
                            **common))
        events.append(event_from(EventKind.MESSAGE, data={"role": "assistant", "content": result.content}, **common))
        events.append(event_from(EventKind.LLM_RESPONSE, data={
            "role": "agent", "turn": turn, "digest": digest, "content": result.content,
            "tool_calls": [c.to_dict() for c in result.tool_calls], "usage": result.usage.to_dict(),
            "cost": result.cost, "duration": result.duration, "model": result.model, "arm": arm, "trial_index": 0,
        }, **common))
    return events


@pytest.fixture
def recorded(tmp_path: Path) -> JsonlReplaySource:
    path = tmp_path / "bm-1.jsonl"
    assert write_replay_jsonl(record_events(), path) == 6  # MESSAGE events are left out
    source = JsonlReplaySource(path)
    set_replay_source(source)
    return source


def replay(turn: int, messages: list[dict] | None = None, **context):
    ctx = {"task_id": "compound", "arm": "A", "turn": turn, **context}
    return completion(REPLAY, conversation(turn) if messages is None else messages, TOOLS, context=CallContext(**ctx))


def test_replay_returns_the_recorded_turns(recorded: JsonlReplaySource) -> None:
    assert len(recorded) == 3
    for turn in range(3):
        original = completion(SCRIPTED, conversation(turn), TOOLS, context=CallContext("compound", turn=turn))
        again = replay(turn)
        assert (again.content, again.tool_calls, again.usage) == (original.content, original.tool_calls,
                                                                  original.usage)
        assert again.model == "replay/bm-1"
    assert json.loads(replay(1).tool_calls[0].arguments) == {"operation": "*", "a": 7, "b": 5}
    assert replay(2).content == "Final Answer: 35"


def test_a_different_request_is_a_divergence_naming_the_turn(recorded: JsonlReplaySource) -> None:
    with pytest.raises(LLMError) as info:
        replay(1, conversation(2))  # one exchange too many at the second turn (shown as turn 2)
    assert info.value.kind == "replay_divergence"
    assert "agent turn 2" in info.value.message and "5 messages now vs 3 recorded" in info.value.message
    changed = conversation(1)
    changed[0] = {"role": "user", "content": "What is (3 + 4) * 6?"}
    with pytest.raises(LLMError, match="same message count \\(3\\) but different"):
        replay(1, changed)


def test_missing_recording_is_a_divergence(recorded: JsonlReplaySource) -> None:
    for context in ({"turn": 3}, {"turn": 0, "arm": "B"}, {"turn": 0, "task_id": "add"},
                    {"turn": 0, "trial_index": 1}):
        with pytest.raises(LLMError) as info:
            replay(messages=conversation(0), **context)
        assert info.value.kind == "replay_divergence"
        assert f"turn {context['turn'] + 1}" in info.value.message and "nothing recorded" in info.value.message


def test_without_a_source_replay_says_how_to_install_one() -> None:
    with pytest.raises(LLMError) as info:
        replay(0)
    assert info.value.kind == "replay_divergence" and "set_replay_source" in info.value.message


class MemorySource:
    """A ReplaySource that is not a file: the protocol is all the store needs to implement."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def lookup(self, benchmark_id, arm, task_id, trial_index, role, turn):
        self.asked.append((benchmark_id, arm, task_id, trial_index, role, turn))
        return RecordedResponse(content=f"recorded {role} {turn}",
                                tool_calls=[LLMToolCall("c9", "calculator", '{"a": 1}')],
                                usage=Usage(11, 2, 13), digest=None)


def test_any_replay_source_is_pluggable() -> None:
    source = MemorySource()
    set_replay_source(source)
    result = completion(REPLAY, [{"role": "user", "content": "x"}],
                        context=CallContext("t", trial_index=2, arm="arm-x", role="planner", turn=4))
    assert source.asked == [("bm-1", "arm-x", "t", 2, "planner", 4)]
    assert result.content == "recorded planner 4" and result.usage == Usage(11, 2, 13)
    assert result.tool_calls == [LLMToolCall("c9", "calculator", '{"a": 1}')]


def test_bad_jsonl_is_a_user_error_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"kind": "llm_request", "data": {}}\nnot json\n', encoding="utf-8")
    with pytest.raises(UserError, match="line 2"):
        JsonlReplaySource(path)
    with pytest.raises(UserError, match="cannot read"):
        JsonlReplaySource(tmp_path / "absent.jsonl")
