"""Run controls for a live agent: pause, resume, step one iteration at a time, cancel.

The controller is a BEFORE_ITERATION hook (highest priority) that waits on a Condition in short
timed slices and checks a cancel Event, so nothing ever hangs: cancelling a paused agent ends it
within a fraction of a second with status "cancelled". Time spent waiting is reported to the agent
so it counts toward nothing (not the trial duration, not any limit). A breakpoint hit pauses the
agent the same way mid-iteration (`hold`), where the breakpoint found it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from corral_core.domain import ControlState as ControlState  # re-exported: its home is corral_core.domain
from corral_core.events import (
    ControlStateData,
    ControlStateEvent,
)

from .hooks import AgentHooks, HookContext, HookPoint, TrialCancelled

GATE_PRIORITY = 1000
_SLICE = 0.05  # seconds per wait slice; bounds how late a cancel is noticed


class TrialController:
    """Pause / resume / step / cancel one running agent from another thread.

    `step()` lets exactly one more iteration run, then the agent pauses again before the next one.
    Attach with `controller.attach(hooks)` (or register `controller.hook` at BEFORE_ITERATION).
    """

    def __init__(self, *, start_paused: bool = False) -> None:
        self._cond = threading.Condition()
        self._cancel = threading.Event()
        self._state: ControlState = ControlState.PAUSED if start_paused else ControlState.RUNNING
        self._permits = 0
        self._blocked = False
        self._finished = False
        self._agent: Any = None

    # ----------------------------------------------------------------- commands (any thread)
    @property
    def state(self) -> ControlState:
        return self._state

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def blocked(self) -> bool:
        """True while the agent is waiting at the gate."""
        return self._blocked

    def pause(self) -> None:
        """Pause before the agent's next iteration (the current one finishes first)."""
        self._set(ControlState.PAUSED, permits=0)

    def resume(self) -> None:
        self._set(ControlState.RUNNING, permits=0)

    continue_ = resume

    def step(self) -> None:
        """Allow exactly one more iteration, then pause again."""
        self._set(ControlState.STEPPING, permits=1)

    def cancel(self) -> None:
        """End the run at the next iteration boundary, or at once if it is paused."""
        self._cancel.set()
        self._set(ControlState.CANCELLED, permits=0)

    def wait_blocked(self, timeout: float = 5.0) -> bool:
        """Block until the agent waits at the gate after the last command (or has finished).

        Returns False on timeout. For tests and UIs that want to act once the agent is paused.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while not (self._blocked or self._finished):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, _SLICE))
            return self._blocked

    # ----------------------------------------------------------------- hooks (agent thread)
    def attach(self, hooks: AgentHooks, priority: int = GATE_PRIORITY) -> TrialController:
        """Register the gate at BEFORE_ITERATION and bookkeeping at BEFORE_TASK/AFTER_TASK."""
        hooks.register(HookPoint.BEFORE_TASK, self._on_start, priority)
        hooks.register(HookPoint.BEFORE_ITERATION, self.hook, priority)
        hooks.register(HookPoint.AFTER_TASK, self._on_finish, priority)
        return self

    def hook(self, ctx: HookContext) -> None:
        """The gate: returns when the agent may run this iteration; raises TrialCancelled on cancel."""
        self._agent = ctx.agent
        self._wait(ctx.agent)

    def hold(self, agent: Any, reason: str) -> None:
        """Pause the agent where it is, mid-iteration (a breakpoint hit), until continue or step.

        Reported as CONTROL_STATE `paused` with the `reason`; raises TrialCancelled on cancel. A step
        from here lets the rest of this iteration run and pauses before the next one.
        """
        self._agent = agent
        with self._cond:
            if self._cancel.is_set():
                raise TrialCancelled("cancelled by the operator")
            self._state, self._permits = ControlState.PAUSED, 0
        self._emit_state(reason=reason)
        self._wait(agent)

    def _wait(self, agent: Any) -> None:
        """Return when the agent may go on (running, or a step permit); TrialCancelled on cancel."""
        started = None
        try:
            with self._cond:
                while True:
                    if self._cancel.is_set():
                        raise TrialCancelled("cancelled by the operator")
                    if self._state == ControlState.RUNNING:
                        return
                    if self._permits > 0:
                        self._permits -= 1
                        self._state = ControlState.STEPPING
                        return
                    if self._state == ControlState.STEPPING:  # the stepped iteration is done: pause here
                        self._state = ControlState.PAUSED
                        self._emit_state()
                    if not self._blocked:
                        self._blocked = True
                        started = started or time.monotonic()
                        self._cond.notify_all()
                    self._cond.wait(_SLICE)
        finally:
            with self._cond:
                self._blocked = False
            if started is not None and hasattr(agent, "add_wait_time"):
                agent.add_wait_time(time.monotonic() - started)

    hook.hook_name = "trial_controller"  # type: ignore[attr-defined]
    hook.quiet = True  # type: ignore[attr-defined]  # reports itself through CONTROL_STATE

    def _on_start(self, ctx: HookContext) -> None:
        self._agent = ctx.agent
        with self._cond:
            self._finished = False
        self._emit_state()

    _on_start.hook_name = "trial_controller"  # type: ignore[attr-defined]
    _on_start.quiet = True  # type: ignore[attr-defined]

    def _on_finish(self, ctx: HookContext) -> None:
        with self._cond:
            self._finished = True
            self._cond.notify_all()

    _on_finish.hook_name = "trial_controller"  # type: ignore[attr-defined]
    _on_finish.quiet = True  # type: ignore[attr-defined]

    # ----------------------------------------------------------------- internals
    def _set(self, state: ControlState, *, permits: int) -> None:
        with self._cond:
            if self._state == ControlState.CANCELLED and state != ControlState.CANCELLED:
                return  # cancel is final
            changed = state != self._state
            self._state = state
            self._permits = permits
            self._blocked = False  # wait_blocked() now waits for the agent's next stop
            self._cond.notify_all()
        if changed:
            self._emit_state()

    def _emit_state(self, reason: str | None = None) -> None:
        agent = self._agent
        if agent is not None and hasattr(agent, "emit"):
            agent.emit(ControlStateEvent(data=ControlStateData(
                state=self._state, iteration=getattr(agent, "current_iteration", 0),
                **({"reason": reason} if reason is not None else {}))))
