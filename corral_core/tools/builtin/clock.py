"""datetime: the current UTC time, from an injectable clock so tests and replays are deterministic."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from corral_core.constants import utc_now
from corral_core.tools.base import Tool
from corral_core.tools.builtin.params import unwrap

Clock = Callable[[], datetime]

DATETIME_DESCRIPTION = unwrap(
    """\
[BRIEF] Return the current date and time in UTC as ISO 8601. [/BRIEF]
[DETAILED] The answer looks like 2025-03-14T15:09:26+00:00 (seconds precision, always UTC). [/DETAILED]
[PROCEDURAL] Call it whenever the task depends on today's date or the time of day; do not guess. [/PROCEDURAL]
[WORKFLOW_INTEGRATION] Use the returned date to compute ages, deadlines or durations, e.g. with the
calculator. [/WORKFLOW_INTEGRATION]
[SYNTACTICAL] Takes no arguments: call it with {}. [/SYNTACTICAL]
[LIMITATIONS] UTC only; convert to a local time zone yourself. [/LIMITATIONS]
[EXAMPLES] {} -> 2025-03-14T15:09:26+00:00 [/EXAMPLES]"""
)


def format_utc(moment: datetime) -> str:
    """ISO 8601 in UTC at seconds precision; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def datetime_tool(clock: Clock | None = None, *, name: str = "datetime", risk: str = "safe") -> Tool:
    """The datetime builtin; `clock` returns the moment to report (default: the system clock)."""
    read_clock = clock or utc_now

    def current_datetime() -> str:
        return format_utc(read_clock())

    parameters = {"type": "object", "properties": {}, "required": []}
    return Tool(name, DATETIME_DESCRIPTION, parameters, current_datetime, risk=risk)
