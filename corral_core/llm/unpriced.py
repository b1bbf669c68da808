"""litellm prices every response it builds; for a model it has no price for, that search fails the same
way on every call (~1 ms CPU each: a dozen model-info lookups under different spellings). This adapter
remembers, per model, that the search came back empty, and answers None at once the next time.

The one litellm internal touched: `Logging.response_cost_calculator` (litellm 1.106). The answer is
only remembered while litellm's price list keeps its size (`litellm.register_model` adds a price and
forgets the memo), never for a call with its own price (`input_cost_per_token` and the like), and the
full search runs again whenever a callback listens, so what a logging integration sees is unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

_unpriced: set[tuple[str, int]] = set()
_lock = threading.Lock()


def install(litellm: ModuleType, anyone_listens: Callable[[ModuleType], bool]) -> bool:
    """Wrap litellm's response pricing with the memo; False when this litellm has no such method."""
    try:
        from litellm.litellm_core_utils.litellm_logging import Logging
    except ImportError:  # pragma: no cover - a litellm that moved it: only speed is lost
        return False
    original = getattr(Logging, "response_cost_calculator", None)
    if original is None or getattr(original, "_corral_memo", False):
        return original is not None

    def response_cost_calculator(self: Any, result: object, cache_hit: bool | None = None,
                                 litellm_model_name: str | None = None, router_model_id: str | None = None
                                 ) -> float | None:
        key = _key(self, litellm, litellm_model_name)
        if key is not None and key in _unpriced and not anyone_listens(litellm):
            return None
        cost: float | None = original(self, result, cache_hit=cache_hit, litellm_model_name=litellm_model_name,
                                      router_model_id=router_model_id)
        if cost is None and key is not None:
            with _lock:
                _unpriced.add(key)
        return cost

    response_cost_calculator._corral_memo = True  # type: ignore[attr-defined]
    Logging.response_cost_calculator = response_cost_calculator  # type: ignore[method-assign]
    return True


def _key(logging_obj: Any, litellm: ModuleType, model_name: str | None) -> tuple[str, int] | None:
    """(model, size of litellm's price list), or None for a call that brings its own price."""
    params = getattr(logging_obj, "litellm_params", None) or {}
    if isinstance(params, dict) and any("cost_per" in name and value is not None for name, value in params.items()):
        return None
    details = getattr(logging_obj, "model_call_details", None) or {}
    provider = details.get("custom_llm_provider") if isinstance(details, dict) else None
    model = model_name or getattr(logging_obj, "model", None)
    if not model:
        return None
    return f"{provider}|{model}", len(getattr(litellm, "model_cost", ()) or ())


def forget() -> None:
    """Drop what was learnt (tests, or a host that changed litellm's prices in place)."""
    with _lock:
        _unpriced.clear()
