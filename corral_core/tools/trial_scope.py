"""What a tool opens for one trial (an external MCP session), kept until that trial ends.

The environment makes one `TrialScope` per trial, makes it current while a tool runs, and closes it
when the trial ends (`Environment.close`, or the next `reset_state`). A tool that needs a resource
of its own per trial asks `current_trial_scope()` for it, so one trial's broken session is never its
neighbours'. Outside any trial (a tool called directly) there is no scope.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

__all__ = ["TrialScope", "current_trial_scope", "in_trial_scope"]


class _Closeable(Protocol):
    def close(self) -> None: ...


R = TypeVar("R", bound=_Closeable)

_CURRENT: ContextVar[TrialScope | None] = ContextVar("corral_trial_scope", default=None)


class TrialScope:
    """The resources one trial's tools opened, by key; `close()` ends them all (and refuses new ones).

    `trial_id` and `episode_id` say whose they are: a tool isolating its state per trial (an MCP
    declaration's `{trial_id}`, docs/mcp-client.md) takes them from here. Outside a chain the
    episode is the trial itself."""

    def __init__(self, trial_id: str = "", episode_id: str | None = None) -> None:
        self.trial_id = trial_id
        self.episode_id = episode_id or trial_id
        self._lock = threading.Lock()
        self._resources: dict[Hashable, Any] = {}
        self._closed = False

    def resource(self, key: Hashable, open_one: Callable[[], R]) -> R:
        """The trial's resource under `key`, made by `open_one()` on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the trial has ended: its tools can open nothing more")
            found = self._resources.get(key)
            if found is None:
                found = self._resources[key] = open_one()
            return found

    def close(self) -> None:
        with self._lock:
            self._closed = True
            resources, self._resources = list(self._resources.values()), {}
        for resource in resources:
            resource.close()


def current_trial_scope() -> TrialScope | None:
    """The scope of the trial whose tool is running in this context, if any."""
    return _CURRENT.get()


@contextmanager
def in_trial_scope(scope: TrialScope) -> Iterator[None]:
    token = _CURRENT.set(scope)
    try:
        yield
    finally:
        _CURRENT.reset(token)
