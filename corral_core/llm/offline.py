"""Answers of the offline models `scripted/...` and `replay/...`, without litellm.

The same functions serve the litellm custom providers (llm/providers.py, used when a litellm callback
listens, so integrations see offline calls too) and the direct path of `client.completion`.
"""

from __future__ import annotations

from typing import Any

from corral_core.llm.replay import replay_turn
from corral_core.llm.scripted import estimate_tokens, request_chars, scripted_turn
from corral_core.llm.types import CallContext, LLMError, LLMToolCall, Usage

OFFLINE_PREFIXES = ("scripted/", "replay/")
Answer = tuple[str | None, tuple[LLMToolCall, ...], Usage]


def scripted_answer(name: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                    info: dict[str, Any]) -> Answer:
    """`scripted/<name>`: the next turn of `<name>.script.yaml`, with ~4-chars-per-token usage."""
    turn = scripted_turn(name, CallContext.from_dict(info), messages, tools)
    prompt = estimate_tokens(request_chars(messages, tools))
    output = (turn.content or "") + "".join(c.name + c.arguments for c in turn.tool_calls)
    completion = estimate_tokens(output)
    return turn.content, tuple(turn.tool_calls), Usage(prompt, completion, prompt + completion)


def replay_answer(name: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                  info: dict[str, Any]) -> Answer:
    """`replay/<benchmark_id>`: the recorded answer for the same benchmark/arm/task/trial/role/turn."""
    recorded = replay_turn(name, CallContext.from_dict(info), info.get("digest"), info.get("n_messages"))
    return recorded.content, tuple(recorded.tool_calls), recorded.usage


def offline_answer(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                   info: dict[str, Any]) -> Answer:
    """The answer of an offline model id (`scripted/x` or `replay/x`)."""
    prefix, _, name = model.partition("/")
    if prefix == "scripted":
        return scripted_answer(name, messages, tools, info)
    if prefix == "replay":
        return replay_answer(name, messages, tools, info)
    raise LLMError("bad_request", f"{model}: not an offline model (they start with {' or '.join(OFFLINE_PREFIXES)}).")
