"""`completion()`: the one way corral-tui calls an LLM.

Three paths, chosen per call by `direct.route` (llm/direct.py): offline models (`scripted/`, `replay/`)
answered in-process; OpenAI-compatible chat endpoints (`openai/...` with an `api_base`) over our own HTTP
client with litellm's request; everything else, and every call while a litellm callback listens, through
`litellm.completion`. The retry loop, rate limits, connection slots and error words are the same for all
three. litellm is imported on the first call that needs it (it costs ~2 s), after setting the env vars
that keep it offline, and our offline providers are registered then. Requests go out as plain dicts;
responses come back as our own dataclasses; failures become `LLMError`.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import importlib
import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any

from corral_core.llm import callbacks, direct, retry
from corral_core.llm.offline import OFFLINE_PREFIXES, offline_answer
from corral_core.llm.types import (
    CallContext,
    ErrorKind,
    LLMError,
    LLMResult,
    LLMToolCall,
    ModelSettings,
    Usage,
    request_digest,
)
from corral_core.safetext import redact, register_secret, register_url_secrets

log = logging.getLogger(__name__)
_litellm_module: ModuleType | None = None
_import_lock = threading.Lock()
_quiet_flag: Any = None  # litellm's "internal call" ContextVar, when this litellm has one
_heap_frozen = False
YOUNG_COLLECTION_THRESHOLD = 7000  # new container objects between young collections (Python's default: 700)


def _litellm() -> ModuleType:
    """Import and configure litellm once, then register the offline providers."""
    global _litellm_module
    if _litellm_module is None:
        with _import_lock:
            if _litellm_module is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                os.environ.setdefault("LITELLM_LOG", "ERROR")
                import litellm

                litellm.suppress_debug_info = True
                _pool_connections(litellm)
                from corral_core.llm import providers

                providers.register()
                global _quiet_flag
                try:
                    from litellm._internal_context import is_internal_call

                    _quiet_flag = is_internal_call
                except ImportError:  # pragma: no cover - a litellm without it just logs offline calls too
                    _quiet_flag = None
                _litellm_module = litellm

                callbacks.apply(litellm)
    return _litellm_module


def litellm_module() -> ModuleType:
    """litellm, imported and configured (for code that needs one of its functions, such as a price)."""
    return _litellm()


def litellm_if_imported() -> ModuleType | None:
    """litellm when a call has imported it already (None: not yet)."""
    return _litellm_module


def token_count(text: str, model: str) -> int:
    """Tokens of `text` by litellm's counter for `model` (its tokenizer, or litellm's default one for
    a model it does not know, such as scripted/ models)."""
    return int(_litellm().token_counter(model=model, text=text))


def _pool_connections(litellm: ModuleType) -> None:
    """One connection per provider call in flight, kept alive and reused by later calls (corral_core/http_lanes.py).

    litellm's OpenAI-family providers call through an httpx.Client with httpx's default pool, 100
    connections of which 20 stay open: a 101st trial waited for a connection, and most calls opened a
    new one; a pool of MAX_IN_FLIGHT connections instead scanned them all twice per call under one lock.
    They use `litellm.client_session` when it is set; a session the user set is kept.
    """
    if litellm.client_session is not None:
        return
    from corral_core import http_lanes as lanes

    try:
        from litellm.llms.custom_httpx.http_handler import get_ssl_configuration

        verify: Any = get_ssl_configuration()
    except Exception:  # pragma: no cover - a litellm without it: httpx's own certificate checks
        verify = True
    litellm.client_session = lanes.lane_client(verify=verify, follow_redirects=True)  # type: ignore[attr-defined]


def preload(models: Iterable[ModelSettings] | None = None) -> None:
    """Import what the calls of these models will need now (litellm takes seconds), so that cost does not
    land inside the first trial; `None` (the workbench, which may call any model): litellm always.

    A run whose every model takes the direct path (llm/direct.py) imports neither litellm nor the OpenAI
    SDK (~70 MB and ~2 s less). litellm 1.106 also defers two imports to its first completion (~0.5 s):
    its proxy types and its default tokenizer; they are touched too (if a later litellm moves them, only
    speed is lost).
    """
    wanted = None if models is None else list(models)
    if wanted is None or any(_route_of(settings) is None for settings in wanted):
        litellm = _litellm()
        try:
            import litellm.proxy.openai_files_endpoints.common_utils
            import litellm.responses.mcp.chat_completions_handler  # imported by the first call with tools
            import litellm.responses.mcp.litellm_proxy_mcp_handler

            litellm.main.encoding  # noqa: B018 - the attribute access loads the tokenizer
        except Exception:  # pragma: no cover - depends on litellm internals
            log.debug("litellm warm-up skipped", exc_info=True)
        if wanted is not None and any(not s.model.startswith(OFFLINE_PREFIXES) and _route_of(s) is None
                                      for s in wanted):
            _warm_provider_client()
    freeze_startup_heap()


def freeze_startup_heap() -> None:
    """Move what is alive now (litellm, the OpenAI SDK, the app: ~500,000 objects that live as long as the
    process) out of the cycle collector's reach, once per process (`gc.freeze`).

    Every full collection walked them all, ~0.3 s CPU each, a few times per thousand provider trials
    (~1.5 ms a trial). Frozen objects are still freed by reference counting; only a cycle among them that
    becomes garbage later stays. Once: a later call would freeze the garbage cycles of the runs since.

    Young collections then wait for YOUNG_COLLECTION_THRESHOLD new container objects instead of Python's
    700: with hundreds of trials in flight, their live messages and responses were walked again and again
    and promoted to the older generations, whose collections walked them once more (~0.5 ms a trial).
    """
    global _heap_frozen
    with _import_lock:
        if not _heap_frozen:
            _heap_frozen = True
            gc.freeze()
            young, *older = gc.get_threshold()
            if 0 < young < YOUNG_COLLECTION_THRESHOLD:  # 0: collection is off; larger: someone chose it
                gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *older)


def _warm_provider_client() -> None:
    """What litellm's first call to an OpenAI-compatible provider imports, without calling anyone."""
    try:
        import openai

        openai.OpenAI(api_key="warm-up", base_url="http://127.0.0.1:9/v1").chat.completions.with_raw_response  # noqa: B018
        for module in ("litellm._service_logger", "litellm.llms.litellm_proxy.chat.transformation",
                       "litellm.llms.openai.chat.gpt_audio_transformation", "litellm.llms.openai_like.dynamic_config"):
            importlib.import_module(module)
    except Exception:  # pragma: no cover - depends on openai and litellm internals
        log.debug("provider client warm-up skipped", exc_info=True)


def completion(settings: ModelSettings, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               *, context: CallContext | None = None) -> LLMResult:
    """Call the model and return content, tool calls, usage and cost (None when the price is unknown).

    Transient failures (429, timeouts, 5xx) are retried up to `settings.max_retries` times, waiting
    the provider's Retry-After or an exponential backoff (llm/retry.py); `result.retries` counts them.
    At most `settings.max_connections` requests per model are in flight in this process.

    `context` tells scripted/replay models which task, trial, role and turn this is. Raises LLMError
    (kind connection|timeout|rate_limit|auth|bad_request|provider|replay_divergence|script).
    """
    path = _route_of(settings)
    kwargs = _request_kwargs(settings, messages, tools, context)
    started = time.perf_counter()
    waited = throttled = 0.0
    limiter = retry.rate_limiter(settings.model, settings.api_base, settings.requests_per_minute,
                                 settings.tokens_per_minute)
    for attempt in range(int(settings.max_retries) + 1):
        if limiter is not None:
            throttled += limiter.acquire()
        try:
            with retry.connection_slot(settings.model, settings.api_base, settings.max_connections):
                result = _call(path, settings, kwargs, started)
            break
        except Exception as exc:  # litellm raises many types; all become LLMError with the provider's words
            error = _map_error(exc, settings, path)
            if attempt >= settings.max_retries or not retry.is_transient(error):
                error.retries, error.retry_wait, error.rate_limit_wait = attempt, waited, throttled
                if attempt:
                    error.message = f"{error.message} [gave up after {attempt} retries, {waited:.1f} s of waiting]"
                    error.args = (error.message,)
                raise error from exc
            pause = retry.wait_before_retry(attempt, exc)
            log.info("%s: %s (%s); retry %d of %d in %.1f s", settings.model, error.kind, error.status_code,
                     attempt + 1, settings.max_retries, pause)
            retry.sleep(pause)
            waited += pause
    result.retries, result.retry_wait, result.rate_limit_wait = attempt, waited, throttled
    if limiter is not None:
        limiter.charge(result.usage.total_tokens)
    return result


_LISTENER_LISTS = ("callbacks", "success_callback", "_async_success_callback", "input_callback", "service_callback")


def _anyone_listens(litellm: ModuleType | None) -> bool:
    """True when litellm has a success callback to feed (`litellm_callbacks:`, or one set on litellm directly)."""
    return litellm is not None and any(getattr(litellm, name, None) for name in _LISTENER_LISTS)


def _route_of(settings: ModelSettings) -> direct.Route | None:
    """The path of a call with these settings now: a callback asked for, or one set on litellm, sends every
    call through litellm so that it sees them all."""
    return direct.route(settings, bool(callbacks.wanted()) or _anyone_listens(_litellm_module))


def _call(path: direct.Route | None, settings: ModelSettings, kwargs: dict[str, Any], started: float) -> LLMResult:
    """One attempt on the chosen path."""
    if path == "offline":
        content, calls, usage = offline_answer(settings.model, kwargs["messages"], kwargs.get("tools"),
                                               kwargs["metadata"]["corral"])
        cost = _priced(settings.price, usage.prompt_tokens, usage.completion_tokens) \
            if settings.price is not None else None
        return LLMResult(content=content, tool_calls=list(calls), usage=usage, cost=cost, model=settings.model,
                         duration=time.perf_counter() - started)
    if path == "openai":
        answer = direct.post(settings, kwargs["messages"], kwargs.get("tools"))
        return direct.chat_result(answer, settings, time.perf_counter() - started)
    litellm = _litellm()
    with _quiet(not _anyone_listens(litellm)):
        response = litellm.completion(**kwargs)
    return _to_result(response, settings, time.perf_counter() - started, litellm)


@contextlib.contextmanager
def _quiet(quiet: bool) -> Iterator[None]:
    """Tell litellm the call is internal: it then skips its success logging (a thread-pool hand-off per
    call, and in that thread the logging payload and a second cost lookup: ~1-2 ms a call that nobody reads).
    Asked while no callback listens (a call on the litellm path then is one the direct path does not take);
    cost and usage are ours (`_to_result`), failures are logged by litellm either way."""
    if not quiet or _quiet_flag is None:
        yield
        return
    token = _quiet_flag.set(True)
    try:
        yield
    finally:
        _quiet_flag.reset(token)


def _api_key(settings: ModelSettings) -> str | None:
    if not settings.api_key_env:
        return None
    value = os.environ.get(settings.api_key_env)
    if not value:
        raise LLMError("auth", f"{settings.model}: the model settings say the API key is in the environment "
                               f"variable {settings.api_key_env} (api_key_env), but it is not set. Fix: export "
                               f"{settings.api_key_env}=<key>, or drop api_key_env to use the provider's default "
                               "variable (e.g. OPENAI_API_KEY).")
    register_secret(value)
    return value


def register_model_secrets(settings: ModelSettings) -> None:
    """Register what in these settings is a secret: the key, header values, api_base userinfo."""
    register_url_secrets(settings.api_base)
    extra = settings.extra or {}
    register_secret(extra.get("api_key"))
    headers = extra.get("extra_headers") or extra.get("headers")
    if isinstance(headers, dict):
        for value in headers.values():
            register_secret(value)


def _request_kwargs(settings: ModelSettings, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                    context: CallContext | None) -> dict[str, Any]:
    register_model_secrets(settings)
    kwargs: dict[str, Any] = dict(settings.extra or {})
    # Copies: litellm must not mutate the agent's own conversation or tool list.
    kwargs.update(model=settings.model, messages=_json_copy(messages), temperature=settings.temperature,
                  timeout=settings.timeout, max_retries=0)  # retries are ours (llm/retry.py), for every provider
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    api_key = _api_key(settings)
    if api_key:
        kwargs["api_key"] = api_key
    if tools:
        kwargs["tools"] = _json_copy(tools)
        kwargs.setdefault("tool_choice", "auto")
    else:
        kwargs.pop("tool_choice", None)
    info = (context or CallContext(task_id="")).to_dict()
    if settings.model.startswith("replay/"):
        info["digest"] = request_digest(messages, tools)
        info["n_messages"] = len(messages)
    kwargs["metadata"] = {"corral": info}
    return kwargs


_IMMUTABLE = (str, int, float, bool, type(None))


def _json_copy(value: Any) -> Any:
    """A copy of JSON-shaped data (dicts, lists, scalars) a quarter of deepcopy's cost; anything else is
    deep-copied."""
    kind = type(value)
    if kind is dict:
        return {key: _json_copy(item) for key, item in value.items()}
    if kind is list:
        return [_json_copy(item) for item in value]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


def _to_result(response: Any, settings: ModelSettings, duration: float, litellm: ModuleType) -> LLMResult:
    message = response.choices[0].message
    calls = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or []):
        function = call.function
        arguments = function.arguments if isinstance(function.arguments, str) else str(function.arguments or "{}")
        calls.append(LLMToolCall(id=call.id or f"call_{index}", name=function.name or "", arguments=arguments or "{}"))
    raw_usage = getattr(response, "usage", None)
    prompt = int(getattr(raw_usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(raw_usage, "completion_tokens", 0) or 0)
    total = int(getattr(raw_usage, "total_tokens", 0) or 0) or prompt + completion_tokens
    content = message.content if isinstance(message.content, str) or message.content is None else str(message.content)
    return LLMResult(content=content, tool_calls=calls, usage=Usage(prompt, completion_tokens, total),
                     cost=_priced(settings.price, prompt, completion_tokens) if settings.price is not None
                     else None if settings.model.startswith(OFFLINE_PREFIXES) else _cost(response, litellm),
                     model=settings.model, duration=duration)


def _priced(price: tuple[float, float], prompt_tokens: int, completion_tokens: int) -> float:
    """USD at the settings' own price (per million prompt / completion tokens), litellm's price list aside."""
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def _cost(response: Any, litellm: ModuleType) -> float | None:
    """USD cost where litellm knows the model's price; None otherwise (never raises).

    litellm prices every response it builds (`_hidden_params["response_cost"]`, None when it knows no
    price); that number is taken rather than looking the price up a second time."""
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]
    else:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # unknown model or price: not an error for the caller
            return None
    return float(cost) if isinstance(cost, (int, float)) and cost >= 0 else None


def _map_error(exc: BaseException, settings: ModelSettings, path: direct.Route | None = None) -> LLMError:
    """Turn a failure of `_call` into LLMError(kind, message) keeping the provider's text."""
    ours = _find_llm_error(exc)
    if ours is not None:
        return ours
    if path is not None:
        # offline: a bug in a script's code or ours, the provider fault of an offline model
        found = direct.error_for(exc, settings) if path == "openai" else ("provider", f"{type(exc).__name__}: {exc}",
                                                                          None)
        register_model_secrets(settings)
        return LLMError(found[0], redact(f"{settings.model}: {found[1]}"), status_code=found[2],
                        error_type=type(exc).__name__)
    import httpx
    import openai

    text = _clean_text(exc)
    where = f" (api_base {settings.api_base})" if settings.api_base else ""
    kind: ErrorKind
    if isinstance(exc, openai.APITimeoutError) or _in_chain(exc, httpx.TimeoutException):
        kind, text = "timeout", f"{text} [no answer within timeout={settings.timeout:g} s{where}; raise `timeout` " \
                                "in the model settings if the model is just slow]"
    elif isinstance(exc, openai.RateLimitError):
        kind = "rate_limit"
    elif isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        kind = "auth"
    elif isinstance(exc, (openai.BadRequestError, openai.NotFoundError, openai.UnprocessableEntityError)):
        kind = "bad_request"
    elif _is_connection_failure(exc, httpx, openai):
        kind, text = "connection", f"{text} [cannot reach the model{where}]"
    elif "api_key" in text:
        kind, text = "auth", f"{text} [Fix: set api_key_env in the model settings to the variable holding the key]"
    else:
        kind = "provider"
    register_model_secrets(settings)
    return LLMError(kind, redact(f"{settings.model}: {text}"), status_code=getattr(exc, "status_code", None),
                    error_type=type(exc).__name__)


def _is_connection_failure(exc: BaseException, httpx: ModuleType, openai: ModuleType) -> bool:
    """True when the cause is a network failure. litellm labels a refused connection InternalServerError,
    and labels any unexpected exception (even a bug) APIConnectionError, so only the cause chain tells."""
    from litellm.exceptions import APIConnectionError as LiteLLMWrapper

    return any(
        isinstance(e, (httpx.TransportError, ConnectionError))
        or (isinstance(e, openai.APIConnectionError) and not isinstance(e, LiteLLMWrapper))
        for e in _chain(exc)
    )


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 20:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _find_llm_error(exc: BaseException) -> LLMError | None:
    # litellm wraps exceptions raised inside custom providers; ours stay in the chain.
    return next((e for e in _chain(exc) if isinstance(e, LLMError)), None)


def _in_chain(exc: BaseException, kind: type[BaseException]) -> bool:
    return any(isinstance(e, kind) for e in _chain(exc))


def _clean_text(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    text = text.split("\nTraceback (most recent call last):", 1)[0].strip()
    return re.sub(r"^litellm\.\w+: ", "", text)  # the class is in LLMError.error_type
