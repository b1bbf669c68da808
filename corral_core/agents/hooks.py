"""Hook points where code outside an agent can watch and steer it (Corral's hook system).

A hook is a callable taking a mutable `HookContext`. Unlike Corral, every agent here honours the
context's flags: `should_continue=False` stops the agent at any hook point (status "stopped", nothing
is submitted) and `skip_current_step=True` at BEFORE_ITERATION skips that iteration's LLM call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

log = logging.getLogger(__name__)


class HookPoint(str, Enum):
    """Where in an agent's run a hook fires."""

    BEFORE_TASK = "before_task"  # prompt built, before the first iteration (interventions go here)
    AFTER_TASK = "after_task"  # on every exit path, errors included; iteration_data["status"]
    BEFORE_ITERATION = "before_iteration"  # before each LLM call
    AFTER_ITERATION = "after_iteration"  # after the iteration's tools ran


class CriticalHookError(Exception):
    """Raised by a hook that must end the trial (status "error"); other hook errors are only recorded."""


class TrialCancelled(Exception):
    """Raised by a control hook to end the trial with status "cancelled" (see trial_control.py)."""


@dataclass
class HookContext:
    """What a hook sees and may change.

    `messages` is the agent's live conversation: appending to it changes what the model sees next.
    `metadata` is one dict per trial, shared by every hook point, so hooks can keep counters.
    """

    task_id: str
    agent: Any
    interface: Any
    messages: list[dict[str, Any]]
    iteration: int = 0
    should_continue: bool = True
    skip_current_step: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    iteration_data: dict[str, Any] = field(default_factory=dict)
    point: HookPoint | None = None


HookCallback = Callable[[HookContext], Any]
FiredObserver = Callable[[HookPoint, str, HookContext], None]
ErrorObserver = Callable[[HookPoint, str, BaseException], None]


def hook_name(callback: Any) -> str:
    """A readable name for a callback (factories set `hook_name` on the closures they return)."""
    return str(getattr(callback, "hook_name", None) or getattr(callback, "__name__", None)
               or type(callback).__name__)


def _as_point(point: HookPoint | str) -> HookPoint:
    if isinstance(point, HookPoint):
        return point
    try:
        return HookPoint(str(point).lower())
    except ValueError:
        valid = ", ".join(p.value for p in HookPoint)
        raise ValueError(f"unknown hook point {point!r}; use one of: {valid}") from None


class AgentHooks:
    """Callbacks per hook point, run highest priority first (registration order among equals)."""

    def __init__(self) -> None:
        self._hooks: dict[HookPoint, list[tuple[int, HookCallback]]] = {p: [] for p in HookPoint}
        self._lock = threading.Lock()

    def register(self, point: HookPoint | str, callback: HookCallback, priority: int = 0) -> HookCallback:
        """Add `callback` at `point`; returns it so `register` also works as a helper in expressions."""
        if not callable(callback):
            raise TypeError(f"hook for {point!r} must be callable, got {callback!r}")
        hook_point = _as_point(point)
        with self._lock:
            entries = [*self._hooks[hook_point], (priority, callback)]
            entries.sort(key=lambda entry: -entry[0])  # stable: equal priorities keep registration order
            self._hooks[hook_point] = entries
        return callback

    def remove(self, point: HookPoint | str, callback: HookCallback) -> bool:
        """Remove the first registration of `callback` at `point`; False when it was not there."""
        hook_point = _as_point(point)
        with self._lock:
            entries = self._hooks[hook_point]
            for i, (_, registered) in enumerate(entries):
                if registered is callback or registered == callback:
                    self._hooks[hook_point] = entries[:i] + entries[i + 1:]
                    return True
        return False

    def clear(self, point: HookPoint | str | None = None) -> None:
        """Remove every callback at `point`, or everywhere when `point` is None."""
        with self._lock:
            for hook_point in ([_as_point(point)] if point is not None else list(HookPoint)):
                self._hooks[hook_point] = []

    def has_hooks(self, point: HookPoint | str) -> bool:
        return bool(self._hooks[_as_point(point)])

    def callbacks(self, point: HookPoint | str) -> list[HookCallback]:
        """The callbacks at `point` in the order they run."""
        return [cb for _, cb in self._hooks[_as_point(point)]]

    def execute(self, point: HookPoint | str, context: HookContext, *,
                on_fired: FiredObserver | None = None, on_error: ErrorObserver | None = None) -> HookContext:
        """Run the callbacks at `point` on `context` and return it.

        The chain stops after a callback sets `should_continue=False`. `CriticalHookError` and
        `TrialCancelled` propagate; any other exception is logged, reported to `on_error`, and the
        next callback still runs. A callback marked `quiet` (the run controller, the intervention
        inbox: they report what they do in events of their own) is not reported to `on_fired`
        unless it changed the flow.
        """
        hook_point = _as_point(point)
        context.point = hook_point
        for callback in self.callbacks(hook_point):
            name = hook_name(callback)
            try:
                callback(context)
            except (CriticalHookError, TrialCancelled) as exc:
                if on_error is not None and isinstance(exc, CriticalHookError):
                    on_error(hook_point, name, exc)
                raise
            except Exception as exc:  # a broken hook must not kill the trial
                log.warning("hook %s at %s failed: %s", name, hook_point.value, exc, exc_info=True)
                if on_error is not None:
                    on_error(hook_point, name, exc)
                continue
            changed_flow = not context.should_continue or context.skip_current_step
            if on_fired is not None and (changed_flow or not getattr(callback, "quiet", False)):
                on_fired(hook_point, name, context)
            if not context.should_continue:
                break
        return context


ITERATION_POINTS = frozenset({HookPoint.BEFORE_ITERATION, HookPoint.AFTER_ITERATION})


class ChildHooks(AgentHooks):
    """Hooks for an agent run inside another (a planner's executor, a reflection's actor).

    The child runs its own hooks at every point, then the parent's at iteration points only, so
    pausing, stepping and live interventions reach the agent doing the work, while the parent's
    task-level hooks fire once per trial.
    """

    def __init__(self, own: AgentHooks, parent: AgentHooks) -> None:
        super().__init__()
        self._own = own
        self._parent = parent

    def register(self, point: HookPoint | str, callback: HookCallback, priority: int = 0) -> HookCallback:
        return self._own.register(point, callback, priority)

    def remove(self, point: HookPoint | str, callback: HookCallback) -> bool:
        return self._own.remove(point, callback)

    def clear(self, point: HookPoint | str | None = None) -> None:
        self._own.clear(point)

    def callbacks(self, point: HookPoint | str) -> list[HookCallback]:
        hook_point = _as_point(point)
        parent = self._parent.callbacks(hook_point) if hook_point in ITERATION_POINTS else []
        return [*self._own.callbacks(hook_point), *parent]

    def has_hooks(self, point: HookPoint | str) -> bool:
        hook_point = _as_point(point)
        return self._own.has_hooks(hook_point) or (
            hook_point in ITERATION_POINTS and self._parent.has_hooks(hook_point))

    def execute(self, point: HookPoint | str, context: HookContext, *,
                on_fired: FiredObserver | None = None, on_error: ErrorObserver | None = None) -> HookContext:
        hook_point = _as_point(point)
        self._own.execute(hook_point, context, on_fired=on_fired, on_error=on_error)
        if context.should_continue and hook_point in ITERATION_POINTS:
            self._parent.execute(hook_point, context, on_fired=on_fired, on_error=on_error)
        return context
