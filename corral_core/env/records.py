"""What a trial leaves behind: one `ToolCall` per tool call, and Corral-shaped statistics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from corral_core.constants import ToolStatus as ToolStatus
from corral_core.constants import utc_now as utc_now
from corral_core.events import ToolCallData


def utc_iso(moment: datetime | None = None) -> str:
    return (moment or utc_now()).isoformat()


@dataclass(slots=True)
class ToolCall:
    """One call of a tool by an agent, successful or not (Corral's ToolCall plus risk and approval)."""

    tool_name: str
    arguments: dict[str, Any]
    result: str | None
    status: ToolStatus
    error_message: str | None = None
    duration: float = 0.0
    timestamp: str = field(default_factory=utc_iso)
    risk: str = "safe"
    approval: str | None = None  # approved | rejected | timeout | None when no approval was needed
    render: str = "text"
    # what an external MCP tool answered besides text (image/audio/resource blocks as MCP dicts, and
    # its structured content): passed through to MCP clients; `result` stays its text for the rest
    content: list[dict[str, Any]] | None = None
    structured_content: Any = None
    # "environment" when the call failed because the tool's environment did (an external server timed
    # out, closed or is gone: a ToolEnvironmentError), not the tool; the trial then errors on that fault
    fault: str | None = None

    @property
    def success(self) -> bool:
        return self.status is ToolStatus.SUCCESS

    def to_dict(self) -> ToolCallData:
        """Corral's ToolCall JSON (what the server answers), also the TOOL_CALL(_EXECUTED) event's payload."""
        rich = ToolCallData()
        if self.content is not None:
            rich["content"] = self.content
        if self.structured_content is not None:
            rich["structured_content"] = self.structured_content
        if self.fault is not None:
            rich["fault"] = self.fault
        return ToolCallData(**rich, tool_name=self.tool_name, arguments=self.arguments, result=self.result,
                            status=self.status.value, error_message=self.error_message, duration=self.duration,
                            timestamp=self.timestamp, risk=self.risk, approval=self.approval, render=self.render)


FAILURE_STATUSES = tuple(status.value for status in ToolStatus if status is not ToolStatus.SUCCESS)


def tool_statistics(calls: Iterable[ToolCall]) -> dict[str, Any]:
    """Corral's `tool_statistics` shape, counting every non-success status as a failure.

    `error_types` lists every failure status, zeros included (Corral's three first), as Corral does.
    """
    calls = list(calls)
    failed = Counter(c.status.value for c in calls if not c.success)
    total_failed = sum(failed.values())
    return {
        "total_calls": len(calls),
        "successful_calls": len(calls) - total_failed,
        "failed_calls": total_failed,
        "tools_used": sorted({c.tool_name for c in calls}),
        "error_types": {status: failed.get(status, 0) for status in FAILURE_STATUSES},
        "tool_calls": [c.to_dict() for c in calls],
    }
