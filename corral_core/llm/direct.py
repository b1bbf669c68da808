"""The direct path: offline models answered in-process, OpenAI-compatible chat endpoints called over our
own HTTP client; litellm for everything else.

litellm's per-call work is several times the cost of the HTTP exchange itself (building its logging
object, its provider lookups, the OpenAI SDK's request rewrite and response build: ~5 ms CPU per call
measured against ~1.5 ms for the same request over `http_lanes`), and on a 2-core machine with hundreds
of trials in flight that CPU decides how fast a study runs. Nothing of litellm or the OpenAI SDK is
patched: calls that take this path never enter them; every other call goes through litellm unchanged.

`route()` decides, per call:
- "offline": `scripted/...` and `replay/...` (llm/offline.py), unless a litellm callback listens
  (then litellm, so the integration sees the call);
- "openai": `openai/<model>` with an `api_base` (an OpenAI-compatible server: vLLM, llama.cpp, Ollama,
  LM Studio, a proxy), whose request litellm would send unchanged: no model family litellm rewrites
  (o-series, gpt-5, codex, audio, search, realtime), every `extra` parameter one litellm passes through
  as it is (DIRECT_PARAMS), and no callback listening. The request body and headers are litellm's
  (tests/core/test_direct_provider.py compares them on the wire);
- None: litellm.

The choice is one thread-safe function of the settings; it is taken per call and is visible to a test
(`route`).
"""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Any, Literal

import httpx

from corral_core.llm import prices
from corral_core.llm.offline import OFFLINE_PREFIXES
from corral_core.llm.types import ErrorKind, LLMError, LLMResult, LLMToolCall, ModelSettings, Usage
from corral_core.safetext import register_secret

Route = Literal["offline", "openai"]
OPENAI_PREFIX = "openai/"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"  # the variable litellm and the OpenAI SDK read when no api_key_env is given
# parameters litellm passes to an OpenAI-compatible chat endpoint as they are (checked on the wire by the tests)
DIRECT_PARAMS = frozenset({"max_tokens", "max_completion_tokens", "seed", "top_p", "stop", "presence_penalty",
                           "frequency_penalty", "response_format", "parallel_tool_calls", "logit_bias", "n",
                           "extra_headers"})
# (403 is "provider" there, as litellm maps it: it raises no PermissionDeniedError for these)
# model families whose requests litellm rewrites (parameters renamed or dropped, another API): litellm's path
LITELLM_REWRITES = re.compile(r"^(o\d|gpt-5)|codex|audio|search|realtime|transcribe|tts|computer-use",
                              re.IGNORECASE)
HTTP_ERROR_KINDS: dict[int, ErrorKind] = {401: "auth", 429: "rate_limit", 408: "timeout",
                                      400: "bad_request", 404: "bad_request", 413: "bad_request",
                                      422: "bad_request"}
MAX_ERROR_BODY = 4096  # characters of a provider's error body kept in the message

_client: httpx.Client | None = None
_client_lock = threading.Lock()


def route(settings: ModelSettings, anyone_listens: bool) -> Route | None:
    """Which path a call with these settings takes ("offline", "openai", or None for litellm)."""
    if anyone_listens:
        return None
    model = settings.model
    if model.startswith(OFFLINE_PREFIXES):
        return "offline"
    if not model.startswith(OPENAI_PREFIX) or not settings.api_base:
        return None
    if LITELLM_REWRITES.search(model[len(OPENAI_PREFIX):]):
        return None
    if not set(settings.extra or {}) <= DIRECT_PARAMS:
        return None
    return "openai"


class ProviderHTTPError(Exception):
    """An HTTP error answer of an OpenAI-compatible endpoint (`response` carries its headers: Retry-After)."""

    def __init__(self, message: str, response: httpx.Response) -> None:
        super().__init__(message)
        self.response = response
        self.status_code = response.status_code


def _http() -> httpx.Client:
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                from corral_core import http_lanes

                _client = http_lanes.lane_client(follow_redirects=True)
    return _client


def api_key(settings: ModelSettings) -> str:
    """The key litellm would send: `api_key_env`'s variable, else OPENAI_API_KEY (an LLMError when unset)."""
    name = settings.api_key_env or DEFAULT_KEY_ENV
    value = os.environ.get(name)
    if not value:
        raise LLMError("auth", f"{settings.model}: no API key: the environment variable {name} is not set "
                               f"({'api_key_env' if settings.api_key_env else 'the default for openai/ models'}). "
                               f"Fix: export {name}=<key> (a local server that checks no key takes any value, "
                               "e.g. `sk-local`), or set api_key_env to the variable that holds it.")
    register_secret(value)
    return value


def chat_request(settings: ModelSettings, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 key: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """(URL, headers, JSON body) of litellm's request for this call."""
    extra = dict(settings.extra or {})
    extra_headers = extra.pop("extra_headers", None) or {}
    params: dict[str, Any] = {**extra, "temperature": settings.temperature}
    if tools:
        params["tool_choice"], params["tools"] = "auto", tools
    # litellm sends the messages and the model first, then the parameters in alphabetical order
    body = {"messages": messages, "model": settings.model[len(OPENAI_PREFIX):],
            **{name: params[name] for name in sorted(params)}}
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json", "Content-Type": "application/json"}
    headers.update({str(name): str(value) for name, value in extra_headers.items()})
    return str(settings.api_base).rstrip("/") + "/chat/completions", headers, body


def encode(body: dict[str, Any]) -> bytes:
    """The body's bytes as the OpenAI SDK sends them (httpx's JSON encoding: compact, UTF-8, no NaN)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def post(settings: ModelSettings, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
         ) -> dict[str, Any]:
    """Send one chat request on the calling thread and return the decoded answer (ProviderHTTPError or an
    httpx error on failure: `error_for` names its kind)."""
    url, headers, body = chat_request(settings, messages, tools, api_key(settings))
    response = _http().post(url, headers=headers, content=encode(body),
                            timeout=httpx.Timeout(settings.timeout))
    if response.status_code >= 400:
        raise ProviderHTTPError(_error_text(response), response)
    try:
        answer = response.json()
    except ValueError as exc:
        raise ProviderHTTPError(f"the answer is not JSON: {response.text[:MAX_ERROR_BODY]!r}", response) from exc
    if not isinstance(answer, dict) or not answer.get("choices"):
        raise ProviderHTTPError(f"the answer has no choices: {str(answer)[:MAX_ERROR_BODY]}", response)
    return answer


def _error_text(response: httpx.Response) -> str:
    """The provider's own words: `error.message` of an OpenAI-style error body, else the body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    text = str(message) if message else response.text
    return f"Error code: {response.status_code} - {text[:MAX_ERROR_BODY]}"


def error_for(exc: BaseException, settings: ModelSettings) -> tuple[ErrorKind, str, int | None]:
    """(kind, text, HTTP status) of a failure of `post`, in the words `client._map_error` uses for litellm's."""
    where = f" (api_base {settings.api_base})" if settings.api_base else ""
    if isinstance(exc, ProviderHTTPError):
        kind = HTTP_ERROR_KINDS.get(exc.status_code, "provider")
        return kind, str(exc), exc.status_code
    if isinstance(exc, httpx.TimeoutException):
        return "timeout", (f"{type(exc).__name__}: {exc} [no answer within timeout={settings.timeout:g} s{where}; "
                           "raise `timeout` in the model settings if the model is just slow]"), None
    if isinstance(exc, httpx.TransportError):
        return "connection", f"Connection error ({type(exc).__name__}: {exc}) [cannot reach the model{where}]", None
    return "provider", f"{type(exc).__name__}: {exc}", None


def chat_result(answer: dict[str, Any], settings: ModelSettings, duration: float) -> LLMResult:
    """Our result from an OpenAI chat completion body, priced as litellm prices it."""
    message = (answer["choices"][0] or {}).get("message") or {}
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        calls.append(LLMToolCall(id=call.get("id") or f"call_{index}", name=function.get("name") or "",
                                 arguments=(arguments if isinstance(arguments, str) else str(arguments or "{}"))
                                 or "{}"))
    usage = answer.get("usage") or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    total = int(usage.get("total_tokens") or 0) or prompt + completion_tokens
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = str(content)
    return LLMResult(content=content, tool_calls=calls, usage=Usage(prompt, completion_tokens, total),
                     cost=_cost(settings, answer, prompt, completion_tokens), model=settings.model,
                     duration=duration)


def _cost(settings: ModelSettings, answer: dict[str, Any], prompt: int, completion_tokens: int) -> float | None:
    """The settings' own price, else litellm's price of the model (None when it lists none)."""
    if settings.price is not None:
        return (prompt * settings.price[0] + completion_tokens * settings.price[1]) / 1_000_000
    name = settings.model[len(OPENAI_PREFIX):]
    details = (answer.get("usage") or {}).get("prompt_tokens_details") or {}
    rate = prices.simple_rate(name)
    if rate is not None and not details.get("cached_tokens"):
        return prompt * rate[0] + completion_tokens * rate[1]
    if not prices.is_listed(name):
        return None
    return _litellm_cost(name, prompt, completion_tokens, details)


def _litellm_cost(name: str, prompt: int, completion_tokens: int, details: dict[str, Any]) -> float | None:
    """litellm's own price for what the simple rate does not cover (tiers, cached prompt tokens)."""
    from corral_core.llm import client

    litellm = client.litellm_module()
    try:
        from litellm.types.utils import Usage as LiteUsage

        usage = LiteUsage(prompt_tokens=prompt, completion_tokens=completion_tokens,
                          total_tokens=prompt + completion_tokens, prompt_tokens_details=details or None)
        prompt_cost, completion_cost = litellm.cost_per_token(model=name, custom_llm_provider="openai",
                                                              usage_object=usage)
    except Exception:  # a price litellm cannot compute: unknown, as on litellm's own path
        return None
    return float(prompt_cost) + float(completion_cost)
