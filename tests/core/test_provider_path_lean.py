"""A provider call through litellm does only the per-call work we read: no success logging hand-off while
no callback listens, and litellm's price of the response taken once, not looked up again."""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator
from typing import Any

import pytest

from corral_core.llm import callbacks, client, lean
from corral_core.llm.types import ModelSettings
from tests.core.data.recording_logger import RECORDER
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG

KEY_ENV = "CORRAL_T_LEAN_KEY"


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    callbacks.reset()
    RECORDER.models.clear()
    with FakeOpenAI([FakeReply.text("Final Answer: 42", usage=(1000, 200))], repeat_last=True,
                    model="gpt-4o-mini") as server:
        yield server
    callbacks.reset()


def _settings(server: FakeOpenAI) -> ModelSettings:
    return ModelSettings("openai/gpt-4o-mini", api_base=server.base_url, api_key_env=KEY_ENV, max_retries=0)


def _count_handoffs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    import litellm.utils

    handed: list[Any] = []
    executor = litellm.utils.executor
    original = executor.submit
    monkeypatch.setattr(executor, "submit", lambda *a, **k: handed.append(a) or original(*a, **k))
    return handed


def test_without_callbacks_a_provider_call_hands_nothing_to_litellms_logging(
        provider: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    client._litellm()
    handed = _count_handoffs(monkeypatch)
    result = client.completion(_settings(provider), [{"role": "user", "content": "What is 2 + 2?"}])
    assert result.content == "Final Answer: 42"
    assert handed == []


def test_with_a_callback_every_provider_call_still_reaches_it(provider: FakeOpenAI,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    callbacks.use_callbacks(["tests.core.data.recording_logger:RECORDER"])
    client._litellm()
    handed = _count_handoffs(monkeypatch)
    client.completion(_settings(provider), [{"role": "user", "content": "What is 2 + 2?"}])
    assert len(handed) == 1
    assert RECORDER.wait_for(1, HANG), RECORDER.models


def test_the_cost_is_litellms_price_of_the_response_looked_up_once(provider: FakeOpenAI,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = client._litellm()
    price = litellm.model_cost["gpt-4o-mini"]
    expected = 1000 * price["input_cost_per_token"] + 200 * price["output_cost_per_token"]
    lookups: list[Any] = []
    original = litellm.completion_cost
    monkeypatch.setattr(litellm, "completion_cost", lambda *a, **k: lookups.append(k) or original(*a, **k))
    result = client.completion(_settings(provider), [{"role": "user", "content": "What is 2 + 2?"}])
    assert result.cost is not None and math.isclose(result.cost, expected)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (1000, 200)
    assert lookups == []  # the price litellm put on the response, not a second search


def test_an_unpriced_provider_model_costs_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI([FakeReply.text("Final Answer: 42")], model="no-such-priced-model") as server:
        settings = ModelSettings("openai/no-such-priced-model", api_base=server.base_url, api_key_env=KEY_ENV,
                                 max_retries=0)
        assert client.completion(settings, [{"role": "user", "content": "What is 2 + 2?"}]).cost is None


def test_an_unpriced_model_is_searched_for_a_price_once_until_litellm_learns_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from corral_core.llm import unpriced

    monkeypatch.setenv(KEY_ENV, "sk-test")
    callbacks.reset()
    litellm = client._litellm()
    unpriced.forget()
    searches: list[Any] = []
    original = litellm.response_cost_calculator
    monkeypatch.setattr(litellm, "response_cost_calculator", lambda **k: searches.append(k) or original(**k))
    question = [{"role": "user", "content": "What is 2 + 2?"}]
    with FakeOpenAI([FakeReply.text("Final Answer: 4", usage=(1000, 200))], repeat_last=True,
                    model="corral-unpriced-model") as server:
        settings = ModelSettings("openai/corral-unpriced-model", api_base=server.base_url, api_key_env=KEY_ENV,
                                 max_retries=0)
        assert [client.completion(settings, question).cost for _ in range(3)] == [None, None, None]
        assert len(searches) == 1, [name for name in client._LISTENER_LISTS if getattr(litellm, name, None)]
        monkeypatch.setitem(litellm.model_cost, "corral-unpriced-model", {
            "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "litellm_provider": "openai",
            "mode": "chat"})
        cost = client.completion(settings, question).cost
    assert len(searches) == 2  # a new price list: searched again, and found
    assert cost is not None and math.isclose(cost, 1000 * 1e-6 + 200 * 2e-6)


def _count_service_hooks(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    from litellm._service_logger import ServiceLogging

    hooked: list[dict[str, Any]] = []

    async def async_service_success_hook(self: Any, **kwargs: Any) -> None:
        hooked.append(kwargs)

    monkeypatch.setattr(ServiceLogging, "async_service_success_hook", async_service_success_hook)
    return hooked


def test_without_service_callbacks_a_provider_call_runs_no_service_hook(
        provider: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = client._litellm()
    monkeypatch.setattr(litellm, "service_callback", [])
    hooked = _count_service_hooks(monkeypatch)
    client.completion(_settings(provider), [{"role": "user", "content": "What is 2 + 2?"}])
    assert hooked == []  # litellm ran one on a new event loop per call, for an empty list of loggers


def test_with_a_service_callback_every_provider_call_still_reaches_the_service_hook(
        provider: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = client._litellm()
    monkeypatch.setattr(litellm, "service_callback", ["corral-test-service-listener"])
    hooked = _count_service_hooks(monkeypatch)
    client.completion(_settings(provider), [{"role": "user", "content": "What is 2 + 2?"}])
    client.completion(_settings(provider), [{"role": "user", "content": "What is 3 + 3?"}])
    assert len(hooked) == 2 and all(h["call_type"].startswith("make_sync_openai") for h in hooked)


CONVERSATION = [
    {"role": "system", "content": "You are precise."},
    {"role": "user", "content": [{"type": "text", "text": "What is 2 + 2?"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": '{"a": 2, "b": 2}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "4.0"},
]
TOOLS = [{"type": "function", "function": {
    "name": "calculator", "description": "Add two numbers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number", "default": 0}},
                   "required": ["a"], "additionalProperties": False}}}]


def test_the_chat_body_skips_the_sdks_rewrite_and_the_provider_receives_the_same_request(
        provider: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    from openai._utils import _transform
    from openai.resources.chat.completions import completions

    client._litellm()
    rewrites: list[Any] = []
    original_rewrite = _transform._transform_typeddict
    monkeypatch.setattr(_transform, "_transform_typeddict",
                        lambda *a, **k: rewrites.append(a[1]) or original_rewrite(*a, **k))
    client.completion(_settings(provider), CONVERSATION, TOOLS)
    assert rewrites == []
    monkeypatch.setattr(completions, "maybe_transform", lean.original_of(completions.maybe_transform))
    client.completion(_settings(provider), CONVERSATION, TOOLS)
    assert rewrites  # the SDK's own path walks the body
    shortcut, sdk = (request.body for request in provider.received[-2:])
    assert shortcut == sdk and shortcut["messages"][1]["content"][1]["image_url"]["url"].startswith("data:")


def test_a_chat_body_that_is_not_plain_json_takes_the_sdks_path() -> None:
    from openai import omit
    from openai.resources.chat.completions import completions
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    assert lean.install_for_providers()
    shortcut, sdk = completions.maybe_transform, lean.original_of(completions.maybe_transform)
    plain = {"messages": [{"role": "user", "content": "hi"}], "model": "m", "temperature": 0.5, "stop": omit}
    assert shortcut(plain, CompletionCreateParamsNonStreaming) == sdk(plain, CompletionCreateParamsNonStreaming) \
        == {"messages": [{"role": "user", "content": "hi"}], "model": "m", "temperature": 0.5}
    with_tuple = {"messages": ({"role": "user", "content": "hi"},), "model": "m"}
    assert shortcut(with_tuple, CompletionCreateParamsNonStreaming) == {"messages": [{"role": "user", "content": "hi"}],
                                                                       "model": "m"}  # the SDK made the list


def test_the_shortcut_is_refused_for_parameters_with_an_alias_anywhere_in_their_types() -> None:
    from typing import Annotated, TypedDict

    from openai._utils._transform import PropertyInfo
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    class Inner(TypedDict):
        card_id: Annotated[str, PropertyInfo(alias="cardID")]

    class Outer(TypedDict, total=False):
        model: str
        cards: list[Inner | None]

    assert lean._rewrites(Outer, PropertyInfo)
    assert not lean._rewrites(CompletionCreateParamsNonStreaming, PropertyInfo)


def test_the_request_copies_the_conversation_so_litellm_cannot_change_the_agents_own() -> None:
    class Part:  # not JSON: deep-copied as before
        def __init__(self) -> None:
            self.text = "hi"

    part = Part()
    messages = [{"role": "user", "content": [{"type": "text", "text": "2 + 2?"}], "extra": part}]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    kwargs = client._request_kwargs(ModelSettings("scripted/x"), messages, tools, None)
    assert kwargs["messages"] == [{"role": "user", "content": [{"type": "text", "text": "2 + 2?"}], "extra": kwargs[
        "messages"][0]["extra"]}] and kwargs["tools"] == tools
    kwargs["messages"][0]["content"][0]["text"] = "changed"
    kwargs["tools"][0]["function"]["parameters"]["properties"]["x"] = {}
    assert messages[0]["content"][0]["text"] == "2 + 2?" and tools[0]["function"]["parameters"]["properties"] == {}
    assert kwargs["messages"][0]["extra"] is not part and kwargs["messages"][0]["extra"].text == "hi"


def test_a_models_info_is_searched_once_per_model_not_twice_per_call(provider: FakeOpenAI,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from corral_core.llm import model_info

    litellm = client._litellm()
    main = importlib.import_module("litellm.main")
    calls: list[Any] = []
    original = model_info.original_of(main.get_model_info_helper)
    assert original is not main.get_model_info_helper, "the memo is not installed"
    model_info.forget()
    monkeypatch.setattr(main.get_model_info_helper, "_corral_original",
                        lambda **k: calls.append(k) or original(**k))  # what the memo lets through to litellm
    try:
        for question in ("What is 2 + 2?", "What is 3 + 3?", "What is 4 + 4?"):
            result = client.completion(_settings(provider), [{"role": "user", "content": question}], TOOLS)
            assert result.content == "Final Answer: 42"
        assert [(c["model"], c["custom_llm_provider"]) for c in calls] == [("gpt-4o-mini", "openai")]
        with FakeOpenAI([FakeReply.text("Final Answer: 5")], repeat_last=True, model="corral-unlisted") as other:
            settings = ModelSettings("openai/corral-unlisted", api_base=other.base_url, api_key_env=KEY_ENV,
                                     max_retries=0)
            for _ in range(3):
                assert client.completion(settings, [{"role": "user", "content": "What is 2 + 3?"}]).content \
                    == "Final Answer: 5"
        assert [c["model"] for c in calls] == ["gpt-4o-mini", "corral-unlisted"]  # not listed: remembered too
        litellm.register_model({"corral-unlisted": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
                                                    "litellm_provider": "openai", "mode": "chat"}})
        with FakeOpenAI([FakeReply.text("Final Answer: 5")], repeat_last=True, model="corral-unlisted") as other:
            settings = ModelSettings("openai/corral-unlisted", api_base=other.base_url, api_key_env=KEY_ENV,
                                     max_retries=0)
            assert client.completion(settings, [{"role": "user", "content": "What is 2 + 3?"}]).cost is not None
        assert [c["model"] for c in calls] == ["gpt-4o-mini", "corral-unlisted", "corral-unlisted"]
    finally:
        litellm.model_cost.pop("corral-unlisted", None)
        model_info.forget()


def test_the_memo_answers_what_litellm_answers_and_each_caller_gets_its_own_copy() -> None:
    import litellm.main

    from corral_core.llm import model_info

    client._litellm()
    memo = litellm.main.get_model_info_helper
    original = model_info.original_of(memo)
    assert memo is not original and getattr(memo, "_corral_memo", False)
    model_info.forget()
    for _ in range(2):
        first = memo(model="gpt-4o-mini", custom_llm_provider="openai")
        assert first == original(model="gpt-4o-mini", custom_llm_provider="openai")
        first["mode"] = "responses"  # litellm's bridge check writes into the answer
    assert memo(model="gpt-4o-mini", custom_llm_provider="openai")["mode"] == "chat"
    for _ in range(2):
        with pytest.raises(Exception) as raised:
            memo(model="corral-no-such-model", custom_llm_provider="openai")
        with pytest.raises(type(raised.value)) as direct:
            original(model="corral-no-such-model", custom_llm_provider="openai")
        assert str(raised.value) == str(direct.value)


def test_a_provider_whose_model_info_comes_from_its_server_is_asked_every_time() -> None:
    from corral_core.llm import model_info

    client._litellm()
    model_info.forget()
    assert model_info._reads_tables_only("gpt-4o-mini", "openai")
    assert not model_info._reads_tables_only("llama3", "ollama")  # litellm asks the Ollama server for it
    assert not model_info._reads_tables_only("gpt-4o-mini", None)


RESPONSES = [
    {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake-model",
     "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                  "tool_calls": [{"id": "call_1", "type": "function",
                                  "function": {"name": "calculator", "arguments": '{"a": 1}'}}]}}],
     "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}},
    {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "system_fingerprint": "fp",
     "service_tier": "default", "provider_extra": {"a": [1, 2.5]},
     "choices": [{"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": "hi", "reasoning_content": "think", "refusal": None},
                  "logprobs": {"content": [{"token": "hi", "logprob": 0, "bytes": [104, 105], "top_logprobs": []}]}}],
     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2,
               "prompt_tokens_details": {"cached_tokens": 0}}},
]
LENIENT_ONLY = [  # strict validation refuses these; the SDK's own build takes them as before
    {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
     "choices": [{"index": 0, "finish_reason": "eos", "message": {"role": "assistant", "content": "hi"}}]},
    {"id": "x", "object": "chat.completion", "created": "1", "model": "m", "choices": []},
]


def test_a_chat_completion_is_built_by_validation_into_the_same_model_the_sdk_builds() -> None:
    import json

    from openai import _base_client
    from openai.types.chat import ChatCompletion

    assert lean.install_for_providers()  # fails on an SDK whose internals moved: the shortcut is gone
    shortcut = _base_client.construct_type
    sdk = lean.original_of(shortcut)
    assert shortcut is not sdk
    for body in RESPONSES + LENIENT_ONLY:
        ours, theirs = shortcut(value=body, type_=ChatCompletion), sdk(value=body, type_=ChatCompletion)
        assert type(ours) is type(theirs) is ChatCompletion
        assert json.dumps(ours.model_dump(), sort_keys=True) == json.dumps(theirs.model_dump(), sort_keys=True)
    assert shortcut(value=[1], type_=list[int]) == [1]


def test_a_provider_answer_outside_openais_lists_still_reaches_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI([FakeReply.text("Final Answer: 7")], repeat_last=True, model="gpt-4o-mini") as server:
        original = server._body_for

        def odd(reply: FakeReply, number: int) -> dict[str, Any]:
            body = original(reply, number)
            body["choices"][0]["finish_reason"] = "eos"  # not one of OpenAI's: strict validation refuses it
            return body

        monkeypatch.setattr(server, "_body_for", odd)
        result = client.completion(_settings(server), [{"role": "user", "content": "What is 3 + 4?"}])
    assert result.content == "Final Answer: 7"


def test_litellms_provider_list_walks_the_same_members_with_the_same_values_through_c_code() -> None:
    import enum

    client._litellm()
    # litellm 1.106 walks `[p.value for p in LlmProviders]` twice per call (litellm.main.completion and
    # litellm.utils.get_optional_params): fails on a litellm whose provider list moved
    import litellm.main
    import litellm.utils
    from litellm.types.utils import LlmProviders

    assert litellm.main.LlmProviders is LlmProviders is litellm.utils.LlmProviders
    assert isinstance(LlmProviders, lean._ListedEnum) and isinstance(LlmProviders, enum.EnumMeta)
    assert type(LlmProviders.__dict__["value"]) is property
    members = [LlmProviders._member_map_[name] for name in LlmProviders._member_names_]
    assert list(LlmProviders) == members and len(LlmProviders) == len(members) > 100
    assert [p.value for p in LlmProviders] == [p._value_ for p in members]
    assert LlmProviders("openai") is LlmProviders.OPENAI and LlmProviders.OPENAI.value == "openai"
    assert isinstance(LlmProviders.OPENAI, LlmProviders) and LlmProviders["OPENAI"] is LlmProviders.OPENAI

    class Colour(enum.Enum):
        RED = "red"
        CRIMSON = "red"  # an alias: not walked, as EnumType does not walk it
        BLUE = "blue"

    Colour.__class__ = lean._ListedEnum
    assert [c.value for c in Colour] == ["red", "blue"]


def test_a_clients_request_url_is_merged_once_per_path_and_base_and_the_provider_sees_the_same_request(
        provider: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    import openai
    from openai._base_client import BaseClient

    assert lean.install_for_providers()  # fails on an SDK whose internals moved: the memo is gone
    sdk = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    first = sdk._prepare_url("/chat/completions")
    assert sdk._prepare_url("/chat/completions") is first  # the memo answers; the SDK makes a new URL each time
    assert first == lean.original_of(BaseClient._prepare_url)(sdk, "/chat/completions")
    assert str(sdk._prepare_url("/embeddings")) == "http://127.0.0.1:9/v1/embeddings"
    sdk.base_url = "http://127.0.0.1:10/v2"  # a new base: merged again
    assert str(sdk._prepare_url("/chat/completions")) == "http://127.0.0.1:10/v2/chat/completions"

    client.completion(_settings(provider), CONVERSATION, TOOLS)
    monkeypatch.setattr(BaseClient, "_prepare_url", lean.original_of(BaseClient._prepare_url))
    client.completion(_settings(provider), CONVERSATION, TOOLS)
    memo, own = provider.received[-2:]
    ignored = {"x-stainless-retry-count", "idempotency-key", "x-stainless-read-timeout"}
    assert memo.path == own.path == "/v1/chat/completions" and memo.body == own.body
    assert {k: v for k, v in memo.headers.items() if k.lower() not in ignored} == \
        {k: v for k, v in own.headers.items() if k.lower() not in ignored}
