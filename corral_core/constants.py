"""Values every layer shares, each defined once: the tool-call statuses and the UTC clock.

Other shared vocabularies have their home beside the code that owns them and are imported from there:
event kinds (`corral_core.events.EventKind`), verbosity levels (`corral_core.tools.verbosity.VALID_LEVELS`),
agent types and approval policies (`corral_core.spec.AGENT_TYPES`, `APPROVAL_POLICIES`), trial statuses
(`corral_core.metrics.TRIAL_STATUSES`) and text clipping (`corral_core.safetext.clip`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum

__all__ = ["TOOL_STATUSES", "ToolStatus", "utc_now"]


class ToolStatus(str, Enum):
    """Outcome of one tool call. The first four are Corral's; the rest come from risk enforcement."""

    SUCCESS = "success"
    INVALID_TOOL = "invalid_tool"
    INVALID_ARGS = "invalid_args"
    EXECUTION_ERROR = "execution_error"
    BLOCKED = "blocked"
    REJECTED = "rejected"
    TIMEOUT = "timeout"


TOOL_STATUSES = tuple(status.value for status in ToolStatus)


def utc_now() -> datetime:
    """The current time, timezone-aware UTC (the real clock; stores and tools accept another)."""
    return datetime.now(UTC)
