"""The direct path (llm/direct.py): offline models and OpenAI-compatible chat endpoints called without litellm,
sending litellm's request on the wire, with litellm's error kinds and prices, and no library patched."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral_core.llm import callbacks, client, direct, prices
from corral_core.llm.types import LLMError, ModelSettings
from tests.core.data.recording_logger import RECORDER
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG

KEY_ENV = "CORRAL_T_DIRECT_KEY"
ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 2? \u00e9\u4e2d"}]
TOOLS = [{"type": "function", "function": {"name": "calculator", "description": "Adds.",
                                           "parameters": {"type": "object", "properties": {"a": {"type": "integer"}},
                                                          "required": ["a"]}}}]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(KEY_ENV, "sk-direct-test")
    callbacks.reset()
    RECORDER.models.clear()
    yield
    callbacks.reset()


def _settings(server: FakeOpenAI, **options: Any) -> ModelSettings:
    return ModelSettings(options.pop("model", "openai/gpt-4o-mini"), api_base=server.base_url, api_key_env=KEY_ENV,
                         max_retries=options.pop("max_retries", 0), **options)


def _through_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "_route_of", lambda settings: None)


@pytest.mark.parametrize("extra", [{}, {"max_tokens": 50, "seed": 3}, {"top_p": 0.5, "stop": ["\n\n"]},
                                   {"response_format": {"type": "json_object"}, "parallel_tool_calls": False},
                                   {"extra_headers": {"X-Team": "docs-study"}, "presence_penalty": 0.1}])
@pytest.mark.parametrize("tools", [None, TOOLS])
def test_the_direct_request_is_litellms_request_on_the_wire(monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any],
                                                            tools: list[dict[str, Any]] | None) -> None:
    with FakeOpenAI([FakeReply.text("Final Answer: 4")], repeat_last=True, model="gpt-4o-mini") as server:
        settings = _settings(server, extra=extra)
        assert client._route_of(settings) == "openai"
        ours = client.completion(settings, MESSAGES, tools)
        _through_litellm(monkeypatch)
        theirs = client.completion(settings, MESSAGES, tools)
        direct_request, litellm_request = server.received
    assert direct_request.path == litellm_request.path == "/v1/chat/completions"
    assert direct_request.body == litellm_request.body
    assert json.dumps(direct_request.body) == json.dumps(litellm_request.body)  # the same keys in the same order
    assert direct_request.headers["content-length"] == litellm_request.headers["content-length"]  # the same bytes
    for header in ("authorization", "content-type", "accept", "x-team"):
        assert direct_request.headers.get(header) == litellm_request.headers.get(header), header
    assert (ours.content, ours.usage, ours.cost) == (theirs.content, theirs.usage, theirs.cost)


def test_tool_calls_and_usage_come_back_as_on_litellms_path(monkeypatch: pytest.MonkeyPatch) -> None:
    reply = FakeReply.tool_call("calculator", {"a": 2}, usage=(120, 7), call_id="call_9")
    with FakeOpenAI([reply], repeat_last=True, model="gpt-4o-mini") as server:
        ours = client.completion(_settings(server), MESSAGES, TOOLS)
        _through_litellm(monkeypatch)
        theirs = client.completion(_settings(server), MESSAGES, TOOLS)
    assert ours.tool_calls == theirs.tool_calls
    assert (ours.usage, ours.cost, ours.content) == (theirs.usage, theirs.cost, theirs.content)


def test_the_route_table() -> None:
    base = "http://127.0.0.1:9/v1"
    assert direct.route(ModelSettings("scripted/samplemath"), False) == "offline"
    assert direct.route(ModelSettings("replay/bench-1"), False) == "offline"
    assert direct.route(ModelSettings("openai/llama3", api_base=base), False) == "openai"
    assert direct.route(ModelSettings("openai/gpt-4o-mini"), False) is None  # OpenAI itself: litellm
    for model in ("openai/o3-mini", "openai/gpt-5", "openai/gpt-5-codex", "openai/gpt-4o-audio-preview",
                  "openai/gpt-4o-search-preview", "openai/gpt-4o-realtime-preview"):
        assert direct.route(ModelSettings(model, api_base=base), False) is None, model
    assert direct.route(ModelSettings("openai/llama3", api_base=base, extra={"reasoning_effort": "low"}), False) is None
    assert direct.route(ModelSettings("openai/llama3", api_base=base, extra={"user": "u1"}), False) is None
    assert direct.route(ModelSettings("anthropic/claude-3-5-haiku-latest"), False) is None
    assert direct.route(ModelSettings("scripted/samplemath"), True) is None  # a callback listens: litellm


@pytest.mark.parametrize(("reply", "kind"), [(FakeReply.unauthorized(), "auth"),
                                             (FakeReply.server_error(status=403), "provider"),
                                             (FakeReply.rate_limited(), "rate_limit"),
                                             (FakeReply.server_error(status=400), "bad_request"),
                                             (FakeReply.server_error(status=404), "bad_request"),
                                             (FakeReply.server_error(status=422), "bad_request"),
                                             (FakeReply.server_error(), "provider"),
                                             (FakeReply.server_error(status=503), "provider")])
def test_an_error_answer_has_the_kind_litellms_path_gives_it(monkeypatch: pytest.MonkeyPatch, reply: FakeReply,
                                                             kind: str) -> None:
    kinds = []
    with FakeOpenAI([reply], repeat_last=True, model="gpt-4o-mini") as server:
        for path in ("direct", "litellm"):
            if path == "litellm":
                _through_litellm(monkeypatch)
            with pytest.raises(LLMError) as caught:
                client.completion(_settings(server), MESSAGES)
            kinds.append((caught.value.kind, caught.value.status_code))
            assert "sk-direct-test" not in caught.value.message
            if reply.error_message and "{" not in reply.error_message:
                assert reply.error_message in caught.value.message
    assert kinds[0] == kinds[1] == (kind, reply.status)


def test_a_rate_limit_is_retried_after_the_providers_retry_after() -> None:
    waits: list[float] = []
    with FakeOpenAI([FakeReply.rate_limited(retry_after="0"), FakeReply.text("Final Answer: 4")],
                    model="gpt-4o-mini") as server:
        from corral_core.llm import retry

        original = retry.sleep
        retry.sleep = lambda seconds: waits.append(seconds)  # type: ignore[assignment]
        try:
            result = client.completion(_settings(server, max_retries=2), MESSAGES)
        finally:
            retry.sleep = original  # type: ignore[assignment]
    assert (result.content, result.retries, waits) == ("Final Answer: 4", 1, [0.0])


def test_no_answer_in_time_is_a_timeout_and_a_closed_port_a_connection_error() -> None:
    release = __import__("threading").Event()
    with FakeOpenAI([FakeReply(content="late", hold=release)], model="gpt-4o-mini") as server:
        with pytest.raises(LLMError) as caught:
            client.completion(_settings(server, timeout=0.2), MESSAGES)
        release.set()
    assert caught.value.kind == "timeout" and "timeout=0.2 s" in caught.value.message
    with FakeOpenAI(model="gpt-4o-mini") as server:
        closed = server.base_url
    with pytest.raises(LLMError) as refused:
        client.completion(ModelSettings("openai/gpt-4o-mini", api_base=closed, api_key_env=KEY_ENV, max_retries=0),
                          MESSAGES)
    assert refused.value.kind == "connection" and "cannot reach the model" in refused.value.message


def test_a_missing_key_is_an_auth_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = ModelSettings("openai/llama3", api_base="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(LLMError) as caught:
        client.completion(settings, MESSAGES)
    assert caught.value.kind == "auth" and "OPENAI_API_KEY" in caught.value.message


def test_every_openai_chat_price_equals_litellms() -> None:
    litellm = client.litellm_module()
    names = sorted(name for name, entry in litellm.model_cost.items()
                   if entry.get("litellm_provider") == "openai" and entry.get("mode") == "chat")
    assert len(names) > 50
    simple = 0
    for name in names:
        settings = ModelSettings(f"openai/{name}", api_base="http://127.0.0.1:9/v1")
        answer = {"usage": {"prompt_tokens": 1234, "completion_tokens": 567}}
        ours = direct._cost(settings, answer, 1234, 567)
        prompt_cost, completion_cost = litellm.cost_per_token(model=name, custom_llm_provider="openai",
                                                              prompt_tokens=1234, completion_tokens=567)
        assert ours == pytest.approx(prompt_cost + completion_cost, rel=1e-12), name
        simple += prices.simple_rate(name) is not None
    assert simple > len(names) // 2  # most are priced from the file alone


def test_cached_prompt_tokens_are_priced_by_litellm() -> None:
    litellm = client.litellm_module()
    from litellm.types.utils import Usage as LiteUsage

    details = {"cached_tokens": 1000}
    answer = {"usage": {"prompt_tokens": 1234, "completion_tokens": 567, "prompt_tokens_details": details}}
    ours = direct._cost(ModelSettings("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1"), answer, 1234, 567)
    usage = LiteUsage(prompt_tokens=1234, completion_tokens=567, total_tokens=1801, prompt_tokens_details=details)
    assert ours == pytest.approx(sum(litellm.cost_per_token(model="gpt-4o-mini", custom_llm_provider="openai",
                                                            usage_object=usage)))
    assert ours < 1234 * prices.simple_rate("gpt-4o-mini")[0] + 567 * prices.simple_rate("gpt-4o-mini")[1]  # type: ignore[index]


RUN_WITHOUT_LITELLM = """
import json, sys
from corral_core.llm import client, prices
from corral_core.llm.types import ModelSettings
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
import os
os.environ["K"] = "sk-x"
with FakeOpenAI([FakeReply.text("Final Answer: 4", usage=(100, 10))], repeat_last=True, model="gpt-4o-mini") as s:
    models = [ModelSettings("scripted/samplemath"), ModelSettings("openai/gpt-4o-mini", api_base=s.base_url,
                                                                  api_key_env="K")]
    client.preload(models)
    answers = [client.completion(m, [{"role": "user", "content": "What is 2 + 2?"}]) for m in models]
print(json.dumps({"litellm": "litellm" in sys.modules, "openai": "openai" in sys.modules,
                  "cost": answers[1].cost, "rate": prices.simple_rate("gpt-4o-mini")}))
"""


def test_a_run_on_direct_models_imports_neither_litellm_nor_the_openai_sdk() -> None:
    done = subprocess.run([sys.executable, "-c", RUN_WITHOUT_LITELLM], cwd=ROOT, capture_output=True, text=True,
                          timeout=HANG, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["litellm"] is False and seen["openai"] is False
    assert seen["rate"] == [1.5e-07, 6e-07]
    assert seen["cost"] == pytest.approx(100 * 1.5e-07 + 10 * 6e-07)


def test_a_callback_sees_direct_models_through_litellm() -> None:
    callbacks.use_callbacks(["tests.core.data.recording_logger:RECORDER"])
    with FakeOpenAI([FakeReply.text("Final Answer: 4")], repeat_last=True, model="gpt-4o-mini") as server:
        assert client._route_of(_settings(server)) is None
        client.completion(_settings(server), MESSAGES)
        client.completion(ModelSettings("scripted/samplemath"), MESSAGES)
    assert RECORDER.wait_for(2, HANG)
    assert sorted(RECORDER.models)[-1].endswith("samplemath")


def test_no_function_or_class_of_litellm_or_the_sdk_is_ours_after_calls_on_every_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI([FakeReply.text("Final Answer: 4")], repeat_last=True, model="gpt-4o-mini") as server:
        client.completion(_settings(server), MESSAGES, TOOLS)
        client.completion(ModelSettings("scripted/samplemath"), MESSAGES)
        _through_litellm(monkeypatch)
        client.completion(_settings(server), MESSAGES, TOOLS)
        client.completion(ModelSettings("scripted/samplemath"), MESSAGES)
    ours = []
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in ("litellm", "openai", "httpx", "httpcore"):
            continue
        for attribute, value in list(vars(module).items()):
            members = list(vars(value).items()) if isinstance(value, type) else []
            for member, candidate in [(attribute, value), *members]:
                if _defined_in(candidate).startswith("corral_core"):
                    ours.append(f"{name}.{attribute}.{member}")
            if isinstance(value, type) and type(value).__module__.startswith("corral_core"):
                ours.append(f"{name}.{attribute} (metaclass)")
    assert ours == []


def _defined_in(value: object) -> str:
    """The module a function (or a method, property or static method) was written in; "" for anything else."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        value = value.fget
    return str(value.__module__) if isinstance(value, types.FunctionType) else ""


def test_many_trials_in_flight_on_the_local_executor_are_told_about_processes() -> None:
    from corral_core.batch import PROCESSES_HINT_AT, processes_hint

    hint = processes_hint("local", PROCESSES_HINT_AT, 2)
    assert hint is not None and "--executor processes" in hint and "(2 here)" in hint
    assert processes_hint("local", PROCESSES_HINT_AT - 1, 2) is None
    assert processes_hint("processes", 256, 2) is None
    assert processes_hint("local", 256, 1) is None
