"""The live handles of a run: which trials are running, and how to pause, step, steer or stop them.

The runner registers every trial it starts (its `TrialController` and `InterventionInbox`), so the
TUI can reach a trial by id while it runs. The registry also enforces the trial time limit: one
watchdog thread cancels a trial through its controller once its running time (time spent paused
is not counted) passes the limit, and the runner then reports it as `timeout`.

Paused time: the agent adds a pause to its `wait_seconds` only when the pause ends, so the watchdog
also counts the pause in progress itself, from when it first sees the controller `blocked` until
the agent has added that pause.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corral_core.agents import InterventionInbox, TrialController
from corral_core.domain import ControlState

log = logging.getLogger(__name__)

WATCHDOG_INTERVAL = 0.05  # seconds between time-limit checks
CREDIT_GRACE = 1.0  # seconds after a pause ends within which the agent adds it to wait_seconds


@dataclass(frozen=True, slots=True)
class RunningTrial:
    """A snapshot of one running trial, for lists in the UI."""

    trial_id: str
    task_id: str
    arm: str
    index: int
    state: str  # running | paused | stepping | cancelled
    iteration: int
    episode_id: str | None = None
    elapsed: float = 0.0  # seconds since start, paused time included


@dataclass(slots=True)
class _Entry:
    trial_id: str
    task_id: str
    arm: str
    index: int
    episode_id: str | None
    controller: TrialController
    inbox: InterventionInbox
    agent: Any
    started: float
    time_limit: float | None
    timed_out: bool = False
    pause_started: float | None = None  # when the watchdog first saw the current pause
    wait_at_pause: float = 0.0  # the agent's wait_seconds then
    last_blocked: float = 0.0  # when the watchdog last saw the agent blocked
    own_wait: float = 0.0  # pauses the agent never added itself

    def running_time(self, now: float, waited: float, blocked: bool) -> float:
        """Seconds the trial has run, without its pauses (the current one included)."""
        return now - self.started - waited - self.own_wait - self._current_pause(now, waited, blocked)

    def _current_pause(self, now: float, waited: float, blocked: bool) -> float:
        if blocked:
            if self.pause_started is None or waited > self.wait_at_pause:  # a new pause
                self.pause_started, self.wait_at_pause = now, waited
            self.last_blocked = now
            return now - self.pause_started
        if self.pause_started is None:
            return 0.0
        if waited > self.wait_at_pause:  # the agent has added the pause to wait_seconds
            self.pause_started = None
            return 0.0
        if now - self.last_blocked > CREDIT_GRACE:  # it never will: count the pause here
            self.own_wait += self.last_blocked - self.pause_started
            self.pause_started = None
            return 0.0
        return now - self.pause_started  # resumed a moment ago; the agent is adding the pause


class ControlRegistry:
    """Running trials by id, with run-wide pause / step / resume / cancel.

    `pause_all()` also makes trials that start later begin paused, until `resume_all()`;
    `start_paused=True` does the same from the outset (the TUI's "start paused" option).
    `hold_on_breakpoints=True` (a person is watching: the workbench) pauses a trial at a breakpoint
    hit; otherwise (batch) a hit is only recorded.
    """

    def __init__(self, *, start_paused: bool = False, hold_on_breakpoints: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.start_paused = start_paused
        self.hold_on_breakpoints = hold_on_breakpoints
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._paused_all = False
        self._watchdog: threading.Thread | None = None
        self._closed = threading.Event()
        # pause_all / resume_all / cancel_all also go here (to Dask workers: for the trials they start later);
        # a step is per running trial, through its controller, so no trial steps twice
        self.forward: Callable[..., None] | None = None

    # --- what the runner calls ------------------------------------------------------------------

    def new_controller(self) -> TrialController:
        """A controller for a trial about to start (paused when the run is paused)."""
        return TrialController(start_paused=self.start_paused or self._paused_all)

    def register(self, trial_id: str, *, task_id: str, arm: str, index: int, controller: TrialController,
                 inbox: InterventionInbox, agent: Any, episode_id: str | None = None,
                 time_limit: float | None = None) -> None:
        entry = _Entry(trial_id, task_id, arm, index, episode_id, controller, inbox, agent, self._clock(),
                       time_limit)
        with self._lock:
            self._entries[trial_id] = entry
            if self._paused_all and controller.state == ControlState.RUNNING:
                controller.pause()
        if time_limit is not None:
            self._ensure_watchdog()

    def unregister(self, trial_id: str) -> bool:
        """Forget a finished trial; True when its time limit had cancelled it."""
        with self._lock:
            entry = self._entries.pop(trial_id, None)
        return bool(entry and entry.timed_out)

    def close(self) -> None:
        """Stop the watchdog (the registry can be reused; a new trial restarts it)."""
        self._closed.set()
        watchdog = self._watchdog
        if watchdog is not None:
            watchdog.join(1.0)
        self._watchdog = None

    # --- what the TUI calls -------------------------------------------------------------------------

    def controller(self, trial_id: str) -> TrialController | None:
        with self._lock:
            entry = self._entries.get(trial_id)
        return entry.controller if entry else None

    def inbox(self, trial_id: str) -> InterventionInbox | None:
        with self._lock:
            entry = self._entries.get(trial_id)
        return entry.inbox if entry else None

    def send(self, trial_id: str, text: str) -> bool:
        """Post an intervention to a running trial; False when it is not running (any more)."""
        inbox = self.inbox(trial_id)
        return inbox is not None and inbox.post(text)

    def running(self) -> list[RunningTrial]:
        """The running trials, oldest first."""
        now = self._clock()
        with self._lock:
            entries = sorted(self._entries.values(), key=lambda e: e.started)
        return [RunningTrial(e.trial_id, e.task_id, e.arm, e.index, e.controller.state,
                             int(getattr(e.agent, "current_iteration", 0) or 0), e.episode_id, now - e.started)
                for e in entries]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def pause_all(self) -> None:
        """Pause every running trial before its next iteration, and start new trials paused."""
        self._paused_all = True
        self._each("pause", self._forward("pause_all"))

    def step_all(self) -> None:
        """Let every paused trial run exactly one more iteration."""
        for controller in self._controllers():
            controller.step()

    def resume_all(self) -> None:
        """Resume every trial; new trials start running again (unless start_paused)."""
        self._paused_all = False
        self._each("resume", self._forward("resume_all"))

    def cancel_all(self) -> None:
        """Cancel every running trial (each ends as `cancelled` at its next iteration boundary)."""
        self._each("cancel", self._forward("cancel_all"))

    def _forward(self, op: str) -> str | None:
        """Send a run-wide command to the Dask workers; its id (None: not forwarded)."""
        forward = self.forward
        if forward is None:
            return None
        cause = uuid.uuid4().hex
        try:
            forward(op, cause=cause)
        except Exception:  # the cluster is gone: its trials are too
            log.warning("could not forward %s to the workers", op, exc_info=True)
        return cause

    def _each(self, method: str, cause: str | None) -> None:
        """A run-wide command on every known trial. A remote trial's command names the run-wide one it
        comes from (`cause`): a worker that applied that already ignores it, so a trial that paused
        at a breakpoint since is not resumed twice."""
        for controller in self._controllers():
            if cause is not None and getattr(controller, "remote", False):
                getattr(controller, method)(cause=cause)
            else:
                getattr(controller, method)()

    def _controllers(self) -> list[TrialController]:
        with self._lock:
            return [entry.controller for entry in self._entries.values()]

    # --- the trial time limit ----------------------------------------------------------------------

    def _ensure_watchdog(self) -> None:
        with self._lock:
            if self._watchdog is not None and self._watchdog.is_alive():
                return
            self._closed.clear()
            self._watchdog = threading.Thread(target=self._watch, name="corral-trial-watchdog", daemon=True)
            self._watchdog.start()

    def _watch(self) -> None:
        while not self._closed.wait(WATCHDOG_INTERVAL):
            now = self._clock()
            with self._lock:
                entries = [e for e in self._entries.values() if e.time_limit is not None and not e.timed_out]
            for entry in entries:
                waited = float(getattr(entry.agent, "wait_seconds", 0.0) or 0.0)
                blocked = bool(getattr(entry.controller, "blocked", False))
                assert entry.time_limit is not None
                if entry.running_time(now, waited, blocked) > entry.time_limit:
                    entry.timed_out = True
                    entry.controller.cancel()
