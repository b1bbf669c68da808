"""Run a call that may never return, and stop waiting for it after a timeout.

A Python thread cannot be killed, so an overrunning call is abandoned: it keeps its daemon thread
until it ends by itself, and its result is ignored. Tools, graders and search providers use this so
a hung call becomes a failure the caller reports, instead of a hung trial.
"""

from __future__ import annotations

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
    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return Outcome(timed_out=True)
    return outcome
