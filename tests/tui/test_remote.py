"""`--server URL`: the workbench drives a `corral-tui serve` process, approvals included."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.events import EventKind
from corral_tui.screens.approval import ApprovalScreen
from tests.timeouts import HANG
from tests.tui.helpers import (
    ROOT,
    SIZE,
    TUITEST,
    make_app,
    only_trial,
    run_done,
    start_run,
    trial_events,
    wait_for,
    wait_ready,
)

pytestmark = pytest.mark.anyio
START_LIMIT = 20.0


@pytest.fixture
def remote_url(tui_env: Path) -> Iterator[str]:
    """`corral-tui serve tests/tui/data/tuitest.yaml --approve ask` on a free loopback port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "corral_tui.cli", "serve", str(TUITEST), "--port", "0", "--approve", "ask"],
        cwd=ROOT, env=dict(os.environ), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + START_LIMIT
        url = None
        assert process.stderr is not None
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                break
            found = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
            url = found.group(1) if found else None
        assert url is not None, f"the server did not start (exit code {process.poll()})"
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


async def test_a_remote_server_runs_trials_and_asks_for_approval(tmp_path: Path, tui_env: Path,
                                                                 remote_url: str) -> None:
    marker = tui_env / "marker.txt"
    app = make_app(tmp_path, suites=[TUITEST], server_url=remote_url, approval_poll=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        assert app.services.lifecycle.remote and app.urls == {"tuitest": remote_url}
        await start_run(pilot, "tuitest", tasks="mark", approval="ask")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the polled approval dialog")
        assert app.screen.request.tool_name == "write_marker"
        assert not marker.exists()  # the call waits for the decision
        await pilot.press("ctrl+y")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")

        trial_id = only_trial(app)
        assert marker.exists(), "the approved tool did not run on the remote server"
        assert app.live.trials[trial_id].status == "completed"
        (call,) = trial_events(app, trial_id, EventKind.TOOL_CALL)
        assert call.data["status"] == "success"
        store = app.services.lifecycle
        assert store.writer.flush(HANG)
        stored = store.repository.trial(trial_id)
        assert stored.assisted and stored.status == "completed"
        await wait_for(pilot, lambda: store.requests_served() > 0, "the server's request count")
