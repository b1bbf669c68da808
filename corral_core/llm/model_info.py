"""litellm looks a chat model up in its model list twice per call, before sending it, to decide whether the
call must go to OpenAI's Responses API instead (`responses_api_bridge_check`): the same search under up to
seven spellings of the name, with the same answer every time (~0.1 ms each; for a model it does not list,
an exception built and caught). This memo remembers that answer per (model, provider).

The one litellm internal touched: the name `get_model_info_helper` in `litellm.main` (litellm 1.106), which
only that check calls; other callers of the helper are unchanged. Only lookups that read litellm's static
tables are remembered (a provider whose model info is fetched from its server, such as Ollama, is asked every
time), the answer is kept only while litellm's model list is the same object of the same size, and
`litellm.register_model` forgets it. Each caller gets its own copy of the answer (the check writes into it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

_answers: dict[tuple[str, str | None], tuple[int, int, dict[str, Any] | None, BaseException | None]] = {}
_static: dict[tuple[str, str | None], bool] = {}
_lock = threading.Lock()


def install(litellm: ModuleType) -> bool:
    """Put the memo in front of `litellm.main.get_model_info_helper`; False when this litellm has no such name."""
    try:
        import litellm.main as main
        import litellm.utils as utils
    except ImportError:  # pragma: no cover - a litellm that moved them: only speed is lost
        return False
    original = getattr(main, "get_model_info_helper", None)
    if original is None or not callable(original) or getattr(utils, "get_model_info_helper", None) is not original:
        return False
    if getattr(original, "_corral_memo", False):
        return True
    _forget_on_register(litellm, utils)

    def get_model_info_helper(model: str, custom_llm_provider: str | None = None, api_base: str | None = None,
                              api_key: str | None = None) -> Any:
        search = get_model_info_helper._corral_original  # type: ignore[attr-defined]
        if api_base is not None or api_key is not None or not isinstance(model, str) \
                or not _reads_tables_only(model, custom_llm_provider):
            return search(model=model, custom_llm_provider=custom_llm_provider, api_base=api_base, api_key=api_key)
        table = getattr(litellm, "model_cost", None)
        stamp = id(table), len(table or ())
        known = _answers.get((model, custom_llm_provider))
        if known is not None and known[:2] == stamp:
            return _answer(known[2], known[3])
        try:
            info = search(model=model, custom_llm_provider=custom_llm_provider)
        except Exception as exc:
            with _lock:
                _answers[(model, custom_llm_provider)] = (*stamp, None, exc)
            raise
        if isinstance(info, dict):
            with _lock:
                _answers[(model, custom_llm_provider)] = (*stamp, dict(info), None)
        return info

    get_model_info_helper._corral_memo = True  # type: ignore[attr-defined]
    get_model_info_helper._corral_original = original  # type: ignore[attr-defined]
    main.get_model_info_helper = get_model_info_helper  # type: ignore[attr-defined]  # litellm.main imports it, exports none
    return True


def _answer(info: dict[str, Any] | None, failure: BaseException | None) -> Any:
    if failure is not None:
        raise _again(failure)
    assert info is not None
    return {key: list(value) if type(value) is list else dict(value) if type(value) is dict else value
            for key, value in info.items()}


def _again(failure: BaseException) -> BaseException:
    """A fresh exception like the remembered one (raising one object again and again grows its traceback)."""
    try:
        return type(failure)(*failure.args)
    except Exception:  # an exception class with another constructor: a plain one with the same words
        return Exception(*failure.args)


def _reads_tables_only(model: str, provider: str | None) -> bool:
    """True when litellm answers for this model from its own tables (no provider `get_model_info` to call)."""
    known = _static.get((model, provider))
    if known is not None:
        return known
    static = False
    try:
        from litellm.types.utils import LlmProviders
        from litellm.utils import ProviderConfigManager

        if provider is None:
            static = False  # litellm then infers the provider from the name: left to it
        elif provider not in {item.value for item in LlmProviders}:
            static = True  # no provider config at all
        else:
            config = ProviderConfigManager.get_provider_model_info(model=model, provider=LlmProviders(provider))
            static = config is None or not callable(getattr(config, "get_model_info", None))
    except Exception:  # pragma: no cover - a litellm that moved these: ask it every time
        static = False
    with _lock:
        _static[(model, provider)] = static
    return static


def _forget_on_register(litellm: ModuleType, utils: ModuleType) -> None:
    register: Callable[..., Any] | None = getattr(utils, "register_model", None)
    if register is None or getattr(register, "_corral_forgets", False):
        return

    def register_model(*args: Any, **kwargs: Any) -> Any:
        try:
            return register(*args, **kwargs)
        finally:
            forget()

    register_model._corral_forgets = True  # type: ignore[attr-defined]
    setattr(utils, "register_model", register_model)  # noqa: B010 - a module attribute mypy does not see
    if getattr(litellm, "register_model", None) is register:
        setattr(litellm, "register_model", register_model)  # noqa: B010


def forget() -> None:
    """Drop what was learnt (after `litellm.register_model`, or a host that changed litellm's tables in place)."""
    with _lock:
        _answers.clear()
        _static.clear()


def original_of(function: Callable[..., Any]) -> Callable[..., Any]:
    """litellm's own helper behind the memo (tests compare the two)."""
    original: Callable[..., Any] = getattr(function, "_corral_original", function)
    return original
