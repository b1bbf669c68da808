"""Run a call that may never return, and stop waiting for it after a timeout.

A Python thread cannot be killed, so an overrunning call is abandoned: it keeps its daemon thread
until it ends by itself, and its result is ignored. Tools, graders and search providers use this so
a hung call becomes a failure the caller reports, instead of a hung trial.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(slots=True)
class Outcome(Generic[T]):
    """What became of a call: a value, an exception (any BaseException), or a timeout."""

    value: T | None = None
    error: BaseException | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


def call_with_timeout(function: Callable[[], T], timeout: float | None, name: str = "call") -> Outcome[T]:
    """Call `function`; with a `timeout`, in a daemon thread abandoned when the time is up.

    Every exception is captured, `SystemExit` and `KeyboardInterrupt` included: what a tool or a
    grader raises is data about that tool, never a reason for the server or runner to die.
    """
    outcome: Outcome[T] = Outcome()

    def run() -> None:
        try:
            outcome.value = function()
        except BaseException as exc:
            outcome.error = exc

    if timeout is None:
        run()
        return outcome
    done = threading.Event()
    _WORKERS.start(run, done, name)
    if not done.wait(timeout):
        return Outcome(timed_out=True)
    return outcome


class _Workers:
    """Daemon threads kept between calls: a tool call and a grading each took a new thread (its start
    and end cost about what the calculator's whole call does). A call runs in a fresh context, as in
    a new thread; an abandoned call keeps its thread until it ends, and the thread is reused after;
    a thread idle for IDLE seconds ends."""

    KEEP = 32  # idle threads kept; more idle ones end
    IDLE = 2.0  # seconds a thread waits for its next call before it ends (a quiet process keeps none)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[tuple[Callable[[], None], threading.Event, str]]] = []

    def start(self, function: Callable[[], None], done: threading.Event, name: str) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True).start()
        inbox.put((function, done, name))

    def _serve(self, inbox: queue.SimpleQueue[tuple[Callable[[], None], threading.Event, str]]) -> None:
        me = threading.current_thread()
        while True:
            try:
                function, done, name = inbox.get(timeout=self.IDLE)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # nobody took it meanwhile: end
                        self._idle.remove(inbox)
                        return
                continue  # a call was handed to it as it timed out: take it
            me.name = name
            try:
                contextvars.Context().run(function)
            finally:
                done.set()
            with self._lock:
                if len(self._idle) >= self.KEEP:
                    return
                self._idle.append(inbox)


_WORKERS = _Workers()
