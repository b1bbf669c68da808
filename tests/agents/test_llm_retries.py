"""Retries for every provider (429 + Retry-After, timeouts, 5xx) and max_connections, against the fake server.

The waits are recorded by replacing `retry.sleep`, so the tests see how long the policy would wait
without taking that time; the retried requests themselves really reach the fake server.
"""

from __future__ import annotations

import threading

import pytest

from corral_core.llm import LLMError, ModelSettings, completion, retry
from corral_core.llm.types import DEFAULT_MAX_RETRIES
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG

KEY_ENV = "CORRAL_TEST_FAKE_KEY"
MESSAGES = [{"role": "user", "content": "What is 17 + 25?"}]
# openai/ and hosted_vllm/ speak chat completions; anthropic/ speaks the Messages API (its own wire format)
MODELS = ["openai/fake-model", "hosted_vllm/fake-model", "anthropic/claude-3-5-sonnet-20241022"]


@pytest.fixture(autouse=True)
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-123")


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    seen: list[float] = []
    monkeypatch.setattr(retry, "sleep", seen.append)
    return seen


def settings_for(server: FakeOpenAI, model: str, **overrides) -> ModelSettings:
    base = server.base_url.removesuffix("/v1") if model.startswith("anthropic/") else server.base_url
    return ModelSettings(model, **{"api_base": base, "api_key_env": KEY_ENV, "timeout": 10.0, **overrides})


@pytest.mark.parametrize("model", MODELS)
def test_default_settings_retry_429_with_retry_after_and_5xx_until_success(model: str, waits: list[float]) -> None:
    replies = [FakeReply.rate_limited(retry_after="7"), FakeReply.server_error(status=503),
               FakeReply.rate_limited(retry_after="0"), FakeReply.text("Final Answer: 42", usage=(30, 4))]
    with FakeOpenAI(replies) as server:
        result = completion(settings_for(server, model), MESSAGES)
        paths = {r.path for r in server.received}
    assert result.content == "Final Answer: 42" and result.usage.total_tokens == 34
    assert result.retries == 3 and len(server.received) == 4
    assert waits[0] == 7.0 and waits[2] == 0.0  # the provider's Retry-After, as asked
    assert 0.0 <= waits[1] <= retry.BACKOFF_BASE * 2  # no header: exponential backoff (retry 2), jittered
    assert result.retry_wait == pytest.approx(sum(waits))
    assert paths == ({"/v1/messages"} if model.startswith("anthropic/") else {"/v1/chat/completions"})


@pytest.mark.parametrize("model", MODELS)
def test_the_retry_count_is_bounded_and_the_error_says_so(model: str, waits: list[float]) -> None:
    with FakeOpenAI([FakeReply.rate_limited()], repeat_last=True) as server:
        with pytest.raises(LLMError) as caught:
            completion(settings_for(server, model, max_retries=2), MESSAGES)
        sent = len(server.received)
    assert caught.value.kind == "rate_limit" and caught.value.retries == 2 and sent == 3
    assert "gave up after 2 retries" in caught.value.message
    assert waits == [0.0, 0.0]


@pytest.mark.parametrize("reply", [FakeReply(status=400, error_message="bad request"),
                                   FakeReply(status=401, error_message="bad key")])
def test_client_errors_are_not_retried(reply: FakeReply, waits: list[float]) -> None:
    with FakeOpenAI([reply], repeat_last=True) as server:
        with pytest.raises(LLMError) as caught:
            completion(settings_for(server, "openai/fake-model"), MESSAGES)
        sent = len(server.received)
    assert sent == 1 and caught.value.retries == 0 and waits == []
    assert caught.value.kind in ("bad_request", "auth")


def test_timeouts_are_retried(waits: list[float]) -> None:
    # the first reply answers only when the fake stops; the second must beat the same timeout on a busy machine
    with FakeOpenAI([FakeReply.slow(HANG * 10), FakeReply.text("on time")]) as server:
        result = completion(settings_for(server, "openai/fake-model", timeout=3.0), MESSAGES)
    assert result.content == "on time" and result.retries == 1


def test_retries_are_on_by_default_and_litellm_does_not_retry_underneath() -> None:
    assert ModelSettings("openai/x").max_retries == DEFAULT_MAX_RETRIES > 0
    with FakeOpenAI([FakeReply.rate_limited()], repeat_last=True) as server:
        with pytest.raises(LLMError):
            completion(settings_for(server, "openai/fake-model", max_retries=0), MESSAGES)
        assert len(server.received) == 1  # max_retries=0: one request, no SDK retries below ours


def test_retry_after_forms() -> None:
    class Failure(Exception):
        def __init__(self, headers: dict[str, str]) -> None:
            super().__init__("x")
            self.litellm_response_headers = headers

    assert retry.retry_after(Failure({"retry-after": "12"})) == 12.0
    assert retry.retry_after(Failure({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry.retry_after(Failure({"Retry-After": "Thu, 01 Jan 1970 00:00:00 GMT"})) == 0.0  # a past date
    assert retry.retry_after(Failure({})) is None
    assert retry.wait_before_retry(0, Failure({"retry-after": "100000"})) == retry.RETRY_AFTER_CAP
    assert all(0 <= retry.backoff(n) <= retry.BACKOFF_CAP for n in range(40))


@pytest.mark.parametrize("model", ["openai/fake-model", "anthropic/claude-3-5-sonnet-20241022"])
def test_max_connections_never_lets_a_third_request_in_flight(model: str) -> None:
    callers = 6
    with FakeOpenAI([FakeReply.text("ok")], repeat_last=True, hold=True) as server:
        settings = settings_for(server, model, max_connections=2)
        results: list[str | None] = []
        lock = threading.Lock()

        def call() -> None:
            answer = completion(settings, MESSAGES).content
            with lock:
                results.append(answer)

        threads = [threading.Thread(target=call) for _ in range(callers)]
        for thread in threads:
            thread.start()
        for done in range(callers):  # let them through one by one, each time with the slots full
            assert server.wait_until(lambda s, done=done: s.in_flight == min(2, callers - done))
            server.release(1)
        for thread in threads:
            thread.join(timeout=HANG)
        peak = server.max_in_flight
    assert results == ["ok"] * callers
    assert peak == 2  # two at once, never three
