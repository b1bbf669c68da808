"""Quitting in the middle of a run stops everything: no thread survives the app."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from corral_tui.screens.approval import ApprovalScreen
from tests.tui.helpers import SIZE, TUITEST, make_app, start_run, wait_for, wait_ready

QUIT_LIMIT = 5.0  # seconds: generous (shared machine); the app takes well under one
LINGER = 1.0  # daemon threads may take this long to notice


def _ours(thread: threading.Thread) -> bool:
    """litellm keeps a process-wide logging pool (threads "litellm-logging_N", created on the first
    completion and reused by every later one); it belongs to the process, not to the app."""
    return not thread.name.startswith("litellm-logging")


def test_quitting_during_a_run_leaves_no_thread_behind(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    app = make_app(tmp_path, suites=[TUITEST])
    seen: dict[str, object] = {}

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_ready(pilot)
            # One trial waits for an approval (a server thread blocks in the gate), one is running.
            await start_run(pilot, "tuitest", tasks="mark, count", parallel="2", approval="ask")
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
            seen["running"] = [t.name for t in threading.enumerate() if t.name.startswith("corral-trial")]
            seen["started"] = time.monotonic()
            await pilot.press("ctrl+q")  # a priority binding: it quits from the dialog too
        seen["quit"] = time.monotonic() - seen["started"]

    asyncio.run(scenario())  # its end joins the event loop's executor threads (Textual's thread workers)

    def leftover_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t not in before and _ours(t)]

    deadline = time.monotonic() + LINGER
    while (leftover := leftover_threads()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen["running"], "the run was not in progress when the app quit"
    assert leftover == [], f"threads left behind: {[t.name for t in leftover]}"
    assert seen["quit"] < QUIT_LIMIT
    assert app.return_code == 0
