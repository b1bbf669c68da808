"""Per-call work litellm and the OpenAI SDK do that nobody reads here, skipped where the answer is known.

Five library internals, all behind this one module and each checked when installed (a version that
moved them only loses the speed):

- litellm times every synchronous provider request and hands the timing to its *service* loggers
  (Prometheus, Datadog, OpenTelemetry: `litellm.service_callback`) by running a fresh asyncio event
  loop per call (`ServiceLogging.service_success_hook`), ~0.2 ms CPU each, even when that list is
  empty. With no service callback there is nobody to tell: the hook returns at once.
- The OpenAI SDK rewrites every chat request body against its TypedDicts (`maybe_transform`: aliases,
  date and base64 formats, dropping omitted arguments), walking each message and tool schema with
  typing introspection: a fifth of a provider call's CPU. The chat completion parameters carry no
  alias and no format (checked over the whole type tree when installing), so for a body of plain JSON
  values the rewrite only drops the omitted arguments; that is done directly. Any other body
  (a pydantic model, a tuple, a file) still takes the SDK's path.
- litellm asks twice per call whether the provider is one of its own, as
  `provider in [p.value for p in LlmProviders]`: 166 enum members walked through `EnumType.__iter__` and
  read through `enum.property`, Python frames each (~0.1 ms a list). `LlmProviders` gets a metaclass
  whose iteration walks a tuple of the same members in the same order (rebuilt if the member count
  changes), and a `value` read by C code (`property(attrgetter("_value_"))`): the same values.
- The OpenAI SDK parses the request's URL and merges it with the client's base URL on every request
  (`_prepare_url`: two URL parses, ~0.025 ms). litellm keeps one client per provider and base URL, so the
  answer is the same each time: each client keeps its last one (an `httpx.URL`, which cannot change) and
  gives it again for the same path while its base URL is the same object.
- The OpenAI SDK builds every chat completion it receives with `construct_type`, its own lenient,
  pure-Python walk of the model's type tree (~0.13 ms a response). pydantic's strict validation builds
  the same model in ~0.01 ms (same fields, same extra fields kept, no value converted); a response it
  refuses (a `finish_reason` outside OpenAI's list, a string where a number belongs) is built by the SDK's
  walk as before, so nothing a lenient build accepted is lost.
"""

from __future__ import annotations

import enum
import logging
import operator
import threading
import typing
from collections.abc import Callable
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)
_PLAIN_SCALARS = (str, int, float, bool, type(None))
MAX_PLAIN_DEPTH = 64  # deeper bodies take the SDK's path (and its own recursion)


_chat_body_installed: bool | None = None
_lock = threading.Lock()


def install(litellm: ModuleType) -> bool:
    """Skip litellm's service logging while no service callback listens, and make its provider list quick to
    walk (at litellm's import: both are cheap). False when this litellm does not have them where expected."""
    return _quiet_service_logging(litellm) & _quick_provider_list()


class _ListedEnum(enum.EnumMeta):
    """An enum's metaclass whose iteration walks a tuple of its members (EnumType's walks a generator over
    `_member_names_`, looking each one up in `_member_map_`)."""

    def __iter__(cls) -> typing.Iterator[Any]:
        members = cls.__dict__.get("_corral_members")
        if members is None or len(members) != len(cls._member_names_):
            members = tuple(cls._member_map_[name] for name in cls._member_names_)
            type.__setattr__(cls, "_corral_members", members)
        return iter(members)


def _quick_provider_list() -> bool:
    try:
        from litellm.types.utils import LlmProviders
    except ImportError:  # pragma: no cover - a litellm that moved it
        return False
    if isinstance(LlmProviders, _ListedEnum):
        return True
    if type(LlmProviders) is not enum.EnumType or "value" in LlmProviders.__dict__:  # pragma: no cover
        return False
    LlmProviders.__class__ = _ListedEnum  # type: ignore[method-assign,assignment]
    type.__setattr__(LlmProviders, "value", property(operator.attrgetter("_value_")))
    return True


def install_for_providers() -> bool:
    """The chat body shortcut, on the first call to a provider: it imports the OpenAI SDK's chat resources
    (~450 modules), which a run on offline models never needs. False when this SDK does not allow it."""
    global _chat_body_installed
    if _chat_body_installed is None:
        with _lock:
            if _chat_body_installed is None:
                _chat_body_installed = _plain_chat_body() & _validated_chat_completion() & _memoised_request_url()
    return _chat_body_installed


def _quiet_service_logging(litellm: ModuleType) -> bool:
    try:
        from litellm._service_logger import ServiceLogging
    except ImportError:  # pragma: no cover - a litellm that moved it
        return False
    original = getattr(ServiceLogging, "service_success_hook", None)
    if original is None:  # pragma: no cover - a litellm without it
        return False
    if getattr(original, "_corral_lean", False):
        return True

    def service_success_hook(self: Any, *args: Any, **kwargs: Any) -> None:
        if not litellm.service_callback and not getattr(self, "mock_testing", False):
            return None  # the hook would build a payload for an empty list of loggers, on a new event loop
        original(self, *args, **kwargs)
        return None

    service_success_hook._corral_lean = True  # type: ignore[attr-defined]
    ServiceLogging.service_success_hook = service_success_hook  # type: ignore[method-assign]
    return True


def _plain_chat_body() -> bool:
    try:
        from openai._types import NotGiven, Omit
        from openai._utils._transform import PropertyInfo
        from openai.resources.chat.completions import completions as module
        from openai.types.chat import completion_create_params as params
    except ImportError:  # pragma: no cover - an SDK that moved them
        return False
    if getattr(getattr(module, "maybe_transform", None), "_corral_lean", False):
        return True
    chat_params = tuple(getattr(params, name, None) for name in ("CompletionCreateParamsNonStreaming",
                                                                  "CompletionCreateParamsStreaming"))
    if any(t is None for t in chat_params) or any(_rewrites(t, PropertyInfo) for t in chat_params):
        log.debug("the OpenAI SDK's chat parameters carry aliases or formats: its body rewrite stays")
        return False
    omitted = (NotGiven, Omit)

    def shortcut(original: Callable[..., Any]) -> Callable[..., Any]:
        def maybe_transform(data: object, expected_type: object) -> Any:
            if expected_type in chat_params and isinstance(data, dict) and _plain_values(data.values(), omitted):
                return {key: value for key, value in data.items() if not isinstance(value, omitted)}
            return original(data, expected_type)

        return maybe_transform

    return _replace(module, "maybe_transform", shortcut)


def _validated_chat_completion() -> bool:
    try:
        import pydantic
        from openai import _base_client as base
        from openai.types.chat import ChatCompletion
    except ImportError:  # pragma: no cover - an SDK that moved them
        return False

    def validated(original: Callable[..., Any]) -> Callable[..., Any]:
        def construct_type(*, value: object, type_: object, metadata: Any = None) -> object:
            if type_ is ChatCompletion and metadata is None and isinstance(value, dict):
                try:
                    return ChatCompletion.model_validate(value, strict=True)
                except pydantic.ValidationError:
                    pass  # the SDK's lenient build below takes what strict validation refuses
            return original(value=value, type_=type_, metadata=metadata)

        return construct_type

    return _replace(base, "construct_type", validated)


def _memoised_request_url() -> bool:
    try:
        from openai._base_client import BaseClient
    except ImportError:  # pragma: no cover - an SDK that moved it
        return False

    def memoised(original: Callable[..., Any]) -> Callable[..., Any]:
        def _prepare_url(self: Any, url: str) -> Any:
            base_url = self.base_url
            last = self.__dict__.get("_corral_last_url")
            if last is not None and last[0] is base_url and last[1] == url:
                return last[2]
            merged = original(self, url)
            self.__dict__["_corral_last_url"] = (base_url, url, merged)  # one tuple: threads see all or none
            return merged

        return _prepare_url

    return _replace(BaseClient, "_prepare_url", memoised)


def _replace(owner: object, name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> bool:
    """Put `wrap(original)` in place of `owner.name`, marked so a second install keeps it and `original_of`
    finds the library's own; False when `owner` has no such function (a version that moved it)."""
    original = getattr(owner, name, None)
    if original is None or not callable(original):  # pragma: no cover
        return False
    if getattr(original, "_corral_lean", False):
        return True
    replacement = wrap(original)
    replacement._corral_lean = True  # type: ignore[attr-defined]
    replacement._corral_original = original  # type: ignore[attr-defined]
    setattr(owner, name, replacement)
    return True


def _plain_values(values: typing.Iterable[object], omitted: tuple[type, ...]) -> bool:
    """True when every value is JSON made of dicts with string keys, lists and scalars (or an omitted argument
    at the top level)."""
    todo: list[tuple[object, int]] = [(value, 0) for value in values if not isinstance(value, omitted)]
    while todo:
        value, depth = todo.pop()
        kind = type(value)
        if kind in _PLAIN_SCALARS:
            continue
        if depth >= MAX_PLAIN_DEPTH:
            return False
        if kind is dict:
            items = typing.cast(dict[object, object], value)
            if any(type(key) is not str for key in items):
                return False
            todo.extend((item, depth + 1) for item in items.values())
        elif kind is list:
            todo.extend((item, depth + 1) for item in typing.cast(list[object], value))
        else:
            return False
    return True


def _rewrites(root: object, marker: type) -> bool:
    """True when a type reachable from `root` is annotated with `marker` (the SDK's alias/format info)."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, marker):
            return True
        metadata = getattr(current, "__metadata__", None)  # Annotated[...]
        if metadata:
            todo.extend(metadata)
        if isinstance(current, type) and hasattr(current, "__annotations__") and hasattr(current, "__total__"):
            try:
                todo.extend(typing.get_type_hints(current, include_extras=True).values())
            except Exception:  # an annotation that does not resolve: assume the worst
                return True
        todo.extend(arg for arg in typing.get_args(current) if not isinstance(arg, (str, int, float, bool)))
        origin = getattr(current, "__origin__", None)
        if origin is not None and not isinstance(origin, type):
            todo.append(origin)
    return False


def original_of(function: Callable[..., Any]) -> Callable[..., Any]:
    """The SDK's own function behind a shortcut (tests compare the two)."""
    return typing.cast(Callable[..., Any], getattr(function, "_corral_original", function))
