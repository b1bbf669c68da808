"""Bounds for tests that wait on something: they only limit a failing test, so they are generous (a
loaded, shared machine may be slow; a passing test returns as soon as its answer arrives)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

HTTP_TIMEOUT = 60.0  # seconds an httpx client in a test waits for a response (httpx's default is 5)
HANG = 120.0  # seconds a test waits for a thread, a process or a condition before it calls it a hang


def wait_until(condition: Callable[[], Any], what: str, timeout: float = HANG) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout` seconds (a failing test's
    bound only: a passing test returns as soon as the condition holds)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(0.01)
