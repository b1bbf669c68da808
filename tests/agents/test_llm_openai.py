"""Real provider path: openai/<name> against the loopback fake server, and error mapping."""

from __future__ import annotations

import json
import socket

import pytest

from corral_core.llm import CallContext, LLMError, ModelSettings, completion
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG, HTTP_TIMEOUT

KEY_ENV = "CORRAL_TEST_FAKE_KEY"
TOOLS = [{
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Do arithmetic.",
        "parameters": {"type": "object", "properties": {"operation": {"type": "string", "enum": ["+", "*"]},
                                                          "a": {"type": "number"}, "b": {"type": "number"}},
                       "required": ["operation", "a", "b"]},
    },
}]
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 17 + 25?"}]


@pytest.fixture(autouse=True)
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-123")


def settings_for(server: FakeOpenAI, model: str = "openai/fake-model", **overrides) -> ModelSettings:
    values = {"api_base": server.base_url, "api_key_env": KEY_ENV, "timeout": 5.0, "max_retries": 0, **overrides}
    return ModelSettings(model, **values)


def test_tool_calls_round_trip_through_the_fake_server() -> None:
    replies = [FakeReply.tool_call("calculator", {"operation": "+", "a": 17, "b": 25}, usage=(123, 17)),
               FakeReply.text("Final Answer: 42", usage=(150, 4))]
    with FakeOpenAI(replies) as server:
        settings = settings_for(server, extra={"max_tokens": 64})
        tools = json.loads(json.dumps(TOOLS))
        first = completion(settings, MESSAGES, tools, context=CallContext("add"))
        assert tools == TOOLS  # the caller's tool list is not mutated
        call = first.tool_calls[0]
        follow_up = [*MESSAGES, {"role": "assistant", "content": None, "tool_calls": [call.to_message()]},
                     {"role": "tool", "tool_call_id": call.id, "name": "calculator", "content": "42"}]
        second = completion(settings, follow_up, TOOLS)
        bodies = server.requests
        auth = server.received[0].headers["authorization"]
    assert [(c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("calculator", {"operation": "+", "a": 17, "b": 25})]
    assert first.usage.prompt_tokens == 123 and first.usage.completion_tokens == 17 and first.usage.total_tokens == 140
    assert second.content == "Final Answer: 42" and second.tool_calls == []
    assert first.model == "openai/fake-model" and first.duration > 0
    assert first.cost is None  # litellm has no price for "fake-model"
    body = bodies[0]
    assert body["tools"] == TOOLS and body["tool_choice"] == "auto"
    assert body["messages"] == MESSAGES
    assert body["model"] == "fake-model" and body["temperature"] == 0.7 and body["max_tokens"] == 64
    assert "metadata" not in body and "provider_specific_fields" not in json.dumps(bodies)
    assert bodies[1]["messages"][2]["tool_calls"][0]["function"]["name"] == "calculator"
    assert bodies[1]["messages"][3] == follow_up[3]
    assert auth == "Bearer sk-test-123"


def test_cost_is_reported_when_litellm_knows_the_price() -> None:
    with FakeOpenAI([FakeReply.text("hi", usage=(1000, 1000))], model="gpt-4o-mini") as server:
        result = completion(settings_for(server, "openai/gpt-4o-mini"), MESSAGES)
    assert result.cost is not None and result.cost > 0


def test_no_tools_means_no_tool_choice_and_messages_stay_untouched() -> None:
    messages = [dict(m) for m in MESSAGES]
    with FakeOpenAI(["ok"]) as server:
        completion(settings_for(server, extra={"tool_choice": "required"}), messages)
        body = server.requests[0]
    assert "tools" not in body and "tool_choice" not in body
    assert messages == MESSAGES


def test_missing_api_key_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with FakeOpenAI(["never sent"]) as server:
        with pytest.raises(LLMError) as info:
            completion(settings_for(server), MESSAGES)
        assert server.requests == []
    assert info.value.kind == "auth"
    assert KEY_ENV in info.value.message and "Fix:" in info.value.message


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_maps_to_connection_quickly() -> None:
    settings = ModelSettings("openai/fake-model", api_base=f"http://127.0.0.1:{closed_port()}/v1",
                             api_key_env=KEY_ENV, timeout=HTTP_TIMEOUT, max_retries=0)
    with pytest.raises(LLMError) as info:
        completion(settings, MESSAGES)
    assert info.value.kind == "connection" and info.value.retries == 0  # no hidden retries
    assert "Connection error" in info.value.message


@pytest.mark.parametrize(
    ("reply", "kind", "provider_text", "status"),
    [
        (FakeReply.rate_limited("Rate limit reached for fake-model"), "rate_limit", "Rate limit reached", 429),
        (FakeReply.server_error("upstream exploded"), "provider", "upstream exploded", 500),
        (FakeReply(status=401, error_message="Incorrect API key provided"), "auth", "Incorrect API key", 401),
        (FakeReply(status=400, error_message="messages: bad role"), "bad_request", "bad role", 400),
    ],
)
def test_http_errors_map_to_kinds_keeping_the_provider_text(reply: FakeReply, kind: str, provider_text: str,
                                                            status: int) -> None:
    with FakeOpenAI([reply]) as server:
        with pytest.raises(LLMError) as info:
            completion(settings_for(server), MESSAGES)
        assert len(server.requests) == 1  # max_retries=0: exactly one attempt
    assert info.value.kind == kind
    assert provider_text in info.value.message
    assert info.value.status_code == status


def test_slow_server_maps_to_timeout() -> None:
    # the fake answers only when it stops: the client's timeout must end the call
    with FakeOpenAI([FakeReply.slow(HANG * 10)]) as server, pytest.raises(LLMError) as info:
        completion(settings_for(server, timeout=1.0), MESSAGES)
    assert info.value.kind == "timeout"
    assert "timeout=1 s" in info.value.message


def test_fake_server_reports_exhausted_queue_and_can_repeat() -> None:
    with FakeOpenAI(["only"]) as server:
        completion(settings_for(server), MESSAGES)
        with pytest.raises(LLMError, match="no scripted reply left"):
            completion(settings_for(server), MESSAGES)
    with FakeOpenAI(["again"], repeat_last=True) as server:
        contents = [completion(settings_for(server), MESSAGES).content for _ in range(2)]
    assert contents == ["again", "again"]
