"""The three ways a tool can go wrong: how it was written, how it was called, what it reported."""

from __future__ import annotations


class ToolDefinitionError(ValueError):
    """A tool is defined wrongly (docstring, type hints, tags, schema); raised when it is built.

    The message names the tool (or function) and the part that is wrong, so the author can fix it.
    """


class ToolArgumentError(ValueError):
    """The arguments of a call do not fit the tool's schema; the message is shown to the agent."""


class ToolExecutionError(Exception):
    """A tool reports a failure in words (e.g. "Binary not found: foo"); shown to the agent as is."""


class ToolEnvironmentError(ToolExecutionError):
    """The tool's environment failed, not the tool: an external server timed out, closed or could not
    be reached. The agent still reads the message, but a trial runner can tell it from an ordinary
    tool error (`isinstance`, or `environment_failure`) and fault the environment instead of scoring."""

    environment_failure = True


class McpServerError(ToolEnvironmentError):
    """An external MCP server failed a call: `reason` is "timeout" (the call was cancelled and the
    session dropped), "closed" (the process died or the connection broke) or "unavailable" (it could
    not be started or reached again). `server` is the declaration's name."""

    def __init__(self, message: str, *, server: str, reason: str) -> None:
        super().__init__(message)
        self.server = server
        self.reason = reason
