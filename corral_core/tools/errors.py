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
