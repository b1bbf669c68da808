"""litellm callbacks passed through from a spec (`litellm_callbacks:`) or the CLI (`--litellm-callback`),
so MLflow, Langfuse, W&B and the other integrations litellm documents see every LLM call of a run.

A name is either one of litellm's integrations (`mlflow`, `langfuse`, `wandb`, ...: configured through
their own environment variables, as litellm documents) or `module:attribute`, a Python object such as a
`litellm.integrations.custom_logger.CustomLogger` instance.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from corral_core.errors import UserError

_lock = threading.Lock()
_wanted: tuple[str, ...] = ()
_applied: dict[str, Any] = {}  # name -> what was given to litellm
# where litellm keeps a callback: the lists we append to, and those its first call copies a logger into
_LITELLM_LISTINGS = ("callbacks", "success_callback", "failure_callback", "input_callback", "service_callback",
                     "_async_success_callback", "_async_failure_callback", "_async_input_callback")


def check_callback(name: str) -> None:
    """Raise a UserError when `module:attribute` does not import (integration names are litellm's to check)."""
    if ":" in name:
        _resolve(name)


def _resolve(name: str) -> Any:
    module_name, _, attribute = name.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"litellm callback {name!r} cannot be loaded: {exc}.",
                        fix="give a litellm integration name (mlflow, langfuse, wandb, ...) or module:attribute "
                            "of an importable object.") from None


def use_callbacks(names: Sequence[str]) -> None:
    """Add these callbacks to litellm (now if it is imported, else when it is); each is added once."""
    global _wanted
    for name in names:
        check_callback(name)
    with _lock:
        _wanted = tuple(dict.fromkeys([*_wanted, *names]))
    from corral_core.llm import client

    if client.litellm_if_imported() is not None:
        apply(client.litellm_if_imported())


def apply(litellm: ModuleType | None) -> None:
    """Give litellm the callbacks asked for that it does not have yet."""
    if litellm is None:
        return
    known = set(getattr(litellm, "_known_custom_logger_compatible_callbacks", ()))
    with _lock:
        for name in _wanted:
            if name in _applied:
                continue
            target = _resolve(name) if ":" in name else name
            if isinstance(target, str) and target not in known:  # the older success/failure style (e.g. wandb)
                litellm.success_callback.append(target)
                litellm.failure_callback.append(target)
            else:
                litellm.callbacks.append(target)
            _applied[name] = target


def wanted() -> tuple[str, ...]:
    """The callbacks asked for so far (given to litellm at its import, if not yet)."""
    return _wanted


def applied() -> dict[str, Any]:
    """The callbacks given to litellm so far (name -> object or name)."""
    with _lock:
        return dict(_applied)


def reset() -> None:
    """Take back from litellm every callback added here (for tests and long-lived hosts)."""
    global _wanted
    from corral_core.llm import client

    litellm = client.litellm_if_imported()
    with _lock:
        for target in _applied.values():
            for listing in _LITELLM_LISTINGS:
                registered = getattr(litellm, listing, None) if litellm is not None else None
                while registered is not None and target in registered:
                    registered.remove(target)
        _applied.clear()
        _wanted = ()
