"""litellm custom providers for the offline models `scripted/...` and `replay/...`.

This module imports litellm at the top, so only `corral_core.llm.client` imports it, lazily, and only
when a litellm callback listens: then offline calls go through `litellm.completion` like real models
(same kwargs, same response object, same usage reporting), so the integrations see them. Otherwise
`client.completion` asks llm/offline.py directly. CallContext arrives in
`litellm_params["metadata"]["corral"]`.
"""

from __future__ import annotations

from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ChatCompletionMessageToolCall, Function, Message, ModelResponse
from litellm.types.utils import Usage as LiteUsage

from corral_core.llm.offline import Answer, replay_answer, scripted_answer
from corral_core.llm.types import LLMError, LLMToolCall, Usage

METADATA_KEY = "corral"
PROVIDER_NAMES = ("scripted", "replay")


def _call_info(litellm_params: dict[str, Any] | None) -> dict[str, Any]:
    metadata = (litellm_params or {}).get("metadata") or {}
    info = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    return info if isinstance(info, dict) else {}


def _fill(model_response: ModelResponse, model: str, content: str | None,
          calls: list[LLMToolCall] | tuple[LLMToolCall, ...], usage: Usage) -> ModelResponse:
    tool_calls = [
        ChatCompletionMessageToolCall(id=c.id, type="function", function=Function(name=c.name, arguments=c.arguments))
        for c in calls
    ]
    choice = model_response.choices[0]
    choice.message = Message(content=content, role="assistant", tool_calls=tool_calls or None)
    choice.finish_reason = "tool_calls" if tool_calls else "stop"
    model_response.model = model
    # litellm keeps `usage` on ModelResponse as an extra (undeclared) pydantic field
    model_response.usage = LiteUsage(  # type: ignore[attr-defined]
        prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens, total_tokens=usage.total_tokens)
    # Offline models cost nothing: saying so up front spares litellm its price search on every call.
    model_response._hidden_params["response_cost"] = 0.0
    return model_response


class _OfflineProvider(CustomLLM):
    """Shared plumbing: sync and async completion, no streaming."""

    prefix = ""

    def answer(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               info: dict[str, Any]) -> Answer:
        raise NotImplementedError

    def completion(self, model: str, messages: list[Any], api_base: str, custom_prompt_dict: dict[str, Any],
                   model_response: ModelResponse, print_verbose: Any, encoding: Any, api_key: Any,
                   logging_obj: Any, optional_params: dict[str, Any], acompletion: Any = None,
                   litellm_params: Any = None, logger_fn: Any = None, headers: Any = None, timeout: Any = None,
                   client: Any = None) -> ModelResponse:
        tools = (optional_params or {}).get("tools")
        content, calls, usage = self.answer(model, messages, tools, _call_info(litellm_params))
        return _fill(model_response, f"{self.prefix}/{model}", content, calls, usage)

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.completion(*args, **kwargs)

    def streaming(self, *args: Any, **kwargs: Any) -> Any:
        raise LLMError("bad_request", f"{self.prefix}/ models do not stream; call without stream=True.")

    async def astreaming(self, *args: Any, **kwargs: Any) -> Any:
        raise LLMError("bad_request", f"{self.prefix}/ models do not stream; call without stream=True.")


class ScriptedProvider(_OfflineProvider):
    """`scripted/<name>`: turns from `<name>.script.yaml`, with ~4-chars-per-token usage."""

    prefix = "scripted"

    def answer(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               info: dict[str, Any]) -> Answer:
        return scripted_answer(model, messages, tools, info)


class ReplayProvider(_OfflineProvider):
    """`replay/<benchmark_id>`: the recorded answer for the same benchmark/arm/task/trial/role/turn."""

    prefix = "replay"

    def answer(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               info: dict[str, Any]) -> Answer:
        return replay_answer(model, messages, tools, info)


def register() -> None:
    """Add our providers to litellm.custom_provider_map (idempotent; keeps others' entries)."""
    present = {entry.get("provider") for entry in litellm.custom_provider_map}
    handlers = {"scripted": ScriptedProvider, "replay": ReplayProvider}
    for name in PROVIDER_NAMES:
        if name not in present:
            litellm.custom_provider_map.append({"provider": name, "custom_handler": handlers[name]()})
    litellm.utils.custom_llm_setup()

