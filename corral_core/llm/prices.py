"""USD prices of OpenAI chat models from litellm's own price list, read without importing litellm.

litellm ships its price list as a JSON file (`model_prices_and_context_window_backup.json`, the same data
`litellm.model_cost` holds when `LITELLM_LOCAL_MODEL_COST_MAP` is set, as corral-tui sets it). The direct
OpenAI-compatible path (llm/direct.py) prices a response from that file when the model's price is a plain
rate per prompt and per completion token; a model with tiers (a higher rate above some prompt size) or a
response with cached prompt tokens is priced by litellm itself, so every number equals litellm's.
When litellm is already imported, its live `model_cost` is read instead (it may hold `register_model`
additions).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from pathlib import Path
from typing import Any

PRICE_FILE = "model_prices_and_context_window_backup.json"
TIERED_MARKER = "_above_"  # e.g. input_cost_per_token_above_272k_tokens: a rate that depends on the size

_table: dict[str, Any] | None = None
_lock = threading.Lock()


def _price_table() -> dict[str, Any]:
    litellm = sys.modules.get("litellm")
    live = getattr(litellm, "model_cost", None) if litellm is not None else None
    if isinstance(live, dict) and live:
        return live
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                _table = _read_price_file()
    return _table


def _read_price_file() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin).parent / PRICE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def simple_rate(model: str) -> tuple[float, float] | None:
    """(USD per prompt token, USD per completion token) of an OpenAI chat model litellm lists with a plain
    rate; None when it lists no price, or a price that depends on more than the two token counts."""
    entry = _price_table().get(model)
    if not isinstance(entry, dict) or entry.get("litellm_provider") != "openai":
        return None
    prompt, completion = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
    if not isinstance(prompt, (int, float)) or not isinstance(completion, (int, float)):
        return None
    if any(TIERED_MARKER in key for key in entry):
        return None
    return float(prompt), float(completion)


def is_listed(model: str) -> bool:
    """True when litellm's price list has an entry for this model name."""
    return isinstance(_price_table().get(model), dict)
