"""Quitting in the middle of a run stops everything: no thread survives the app."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import traceback
from pathlib import Path

from corral_tui.screens.approval import ApprovalScreen
from tests.timeouts import HANG, wait_until
from tests.tui.helpers import SIZE, TUITEST, make_app, start_run, wait_for, wait_ready

NEVER = 10 * HANG  # the approval's timeout: a quit that waited for it would outlast HANG


def _ours(thread: threading.Thread) -> bool:
    """litellm keeps a process-wide logging pool (threads "litellm-logging_N", created on the first
    completion and reused by every later one); it belongs to the process, not to the app."""
    return not thread.name.startswith("litellm-logging")


def _stacks(threads: list[threading.Thread]) -> str:
    """Each leftover thread's name and where it stands (for an executor's idle worker, also the thread
    running the event loop that owns the executor), so a failure says what did not end."""
    frames = sys._current_frames()

    def where(thread: threading.Thread | None) -> str:
        if thread is None or thread.ident not in frames:
            return "(gone)"
        return "".join(traceback.format_stack(frames[thread.ident]))

    def owner(thread: threading.Thread) -> str:
        executor = getattr(thread, "_args", (None,))[0]
        executor = executor() if callable(executor) else None
        if executor is None:
            return ""
        holders = gc.get_referrers(executor)  # the loop itself, or its __dict__
        for holder in holders:
            candidates = [holder] if isinstance(holder, asyncio.AbstractEventLoop) else gc.get_referrers(holder)
            for loop in (r for r in candidates if isinstance(r, asyncio.AbstractEventLoop)):
                running = next((t for t in threading.enumerate() if t.ident == getattr(loop, "_thread_id", None)), None)
                runner = running.name if running else "(no thread)"
                return f"{getattr(loop, '_probe_stack', '')}  its loop {loop!r} runs on {runner}:\n{where(running)}"
        return ""

    return "\n".join(f"{t.name}:\n{where(t)}{owner(t)}" for t in threads)


def test_quitting_during_a_run_leaves_no_thread_behind(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    app = make_app(tmp_path, suites=[TUITEST], approval_timeout=NEVER)
    seen: dict[str, object] = {}

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_ready(pilot)
            # One trial waits for an approval (a server thread blocks in the gate), one is running.
            await start_run(pilot, "tuitest", tasks="mark, count", parallel="2", approval="ask")
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
            seen["running"] = [t.name for t in threading.enumerate() if t.name.startswith("corral-trial")]
            await pilot.press("ctrl+q")  # a priority binding: it quits from the dialog too

    # its end joins the event loop's executor threads (Textual's thread workers); a quit that waited for
    # the pending approval (NEVER) or for the running trial would not end within HANG
    asyncio.run(asyncio.wait_for(scenario(), HANG))

    def leftover_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t not in before and _ours(t)]

    assert seen["running"], "the run was not in progress when the app quit"
    try:
        wait_until(lambda: not leftover_threads(), "every thread of the app to end")  # daemon threads take a moment
    except AssertionError as failure:
        raise AssertionError(f"{failure}; left:\n{_stacks(leftover_threads())}") from None
    assert app.return_code == 0
