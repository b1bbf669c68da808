"""The size cap on what one tool call hands back to the agent (and the store), defined once.

Every tool result passes here: a tool's text in the environment, and an external MCP server's
content blocks and structured content in the MCP client, so one call can flood neither the model's
context nor the store.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_RESULT_CHARS", "cap_result", "json_size"]

MAX_RESULT_CHARS = 20_000  # what one tool call may hand back to the agent (and the store)


def cap_result(value: str | None, limit: int = MAX_RESULT_CHARS) -> str | None:
    """Cut an oversized tool result, saying so, so one call cannot flood the context or the store."""
    if value is None or len(value) <= limit:
        return value
    return value[:limit] + f"\n[... result cut: {len(value) - limit} more characters]"


def json_size(value: Any) -> int:
    """The length of `value` written as compact JSON (how the store and the wire hold it)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
