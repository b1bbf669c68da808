"""The workbench with its trials on Dask workers (`--executor processes`, a real LocalCluster of 2 worker
processes on loopback): the trials show live in the table, pause and continue reach them, each is stored
once, a confirm-level call from a worker's trial is asked in the workbench's approval dialog, and the
runs of one workbench share its workers."""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from corral_core.events import EventKind
from corral_core.runner.executors import EventBridge
from corral_tui.screens.approval import ApprovalScreen
from corral_tui.widgets.trials_table import TrialsTable
from tests.timeouts import HANG
from tests.tui.helpers import (
    SIZE,
    TUITEST,
    make_app,
    run_done,
    start_run,
    static_text,
    trial_events,
    wait_for,
    wait_ready,
)
from tests.tui.test_remote import remote_url  # noqa: F401 (a fixture: `corral-tui serve --approve ask`)

pytestmark = pytest.mark.anyio


@pytest.fixture
def bridged(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the events that reach the driver from Dask workers (through the runner's EventBridge)."""
    seen: Counter[str] = Counter()
    deliver = EventBridge.on_message

    def counting(self: EventBridge, item: tuple[float, Any]) -> None:
        seen.update(str(message.get("kind")) for message in json.loads(item[1]))
        deliver(self, item)

    monkeypatch.setattr(EventBridge, "on_message", counting)
    return seen


def statuses(app: Any) -> dict[str, str]:
    """Trial id -> the Status cell the trials table shows."""
    table = app.workbench_screen.query_one(TrialsTable)
    return {str(key.value): table.get_cell(key, "status").plain.strip().rstrip("*") for key in table.rows}


def stored(app: Any, db: Path) -> list[tuple[Any, ...]]:
    assert app.services.lifecycle.writer.flush(HANG)
    with sqlite3.connect(db) as conn:
        return conn.execute("select id, arm, task_id, trial_index, status, assisted from trial").fetchall()


async def test_a_run_on_processes_shows_its_trials_live_and_stores_each_once(tmp_path: Path,
                                                                             bridged: Counter[str]) -> None:
    app = make_app(tmp_path, executor="processes", workers=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_for(pilot, lambda: "trials on processes (2 workers)" in static_text(
            app.workbench_screen.query_one("#info")), "the executor in the info bar")
        # started paused: the trials wait on their workers, so the table shows them while they run
        await start_run(pilot, "samplemath", tasks="add, multiply", arms="minimal, full", paused=True)
        await wait_for(pilot, lambda: len(statuses(app)) >= 2 and set(statuses(app).values()) == {"paused"},
                       "trials paused on the workers, in the table")
        assert app.run_state == "paused" and bridged["trial_started"] >= 2
        resumed: set[str] = set()

        def newly_paused() -> set[str]:
            return {trial for trial, status in statuses(app).items() if status == "paused"} - resumed

        while not run_done(app):  # continue all, once for each trial that starts paused (start paused holds)
            if newly_paused():
                resumed |= newly_paused()
                await pilot.press("C")
            await wait_for(pilot, lambda: run_done(app) or bool(newly_paused()), "the next paused trial or the end")
        assert app.run_state == "finished"
        shown = statuses(app)
    assert sorted(shown.values()) == ["completed"] * 4
    rows = stored(app, tmp_path / "corral.db")
    assert Counter((arm, task, index) for _, arm, task, index, _, _ in rows) == Counter(
        {(arm, task, 0): 1 for arm in ("minimal", "full") for task in ("add", "multiply")})
    assert {trial_id for trial_id, *_ in rows} == set(shown) and {r[4] for r in rows} == {"completed"}
    assert bridged["trial_finished"] == 4  # every trial ran on a worker and reported through the bridge


async def test_a_confirm_level_call_on_a_worker_is_asked_in_the_workbench(tmp_path: Path, tui_env: Path,
                                                                           bridged: Counter[str]) -> None:
    """Run 1: the operator approves, the tool runs (marker written); run 2: rejects, it does not. Each time
    the decision reaches the trial on the worker, and the store records the question and the answer."""
    marker = tui_env / "marker.txt"
    app = make_app(tmp_path, suites=[TUITEST], executor="processes", workers=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        workers: list[Any] = []  # the worker processes of each run: the same for both
        for key, approved in (("y", True), ("n", False)):
            finished_before = bridged["trial_finished"]
            await start_run(pilot, "tuitest", tasks="mark", approval="ask")
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
            request = app.screen.request
            assert (request.tool_name, request.task_id, request.arguments) == ("write_marker", "mark",
                                                                                 {"name": "marker.txt"})
            assert not marker.exists(), "the tool ran before anyone decided"
            trial_id = request.trial_id
            await pilot.press({"y": "ctrl+y", "n": "enter"}[key])  # the reason field has the focus
            await wait_for(pilot, lambda: run_done(app) and trial_id in app.live.trials,  # noqa: B023 (awaited here)
                           "the run to end")
            assert bridged["trial_finished"] == finished_before + 1  # the trial ran on a worker
            decided = trial_events(app, trial_id, EventKind.APPROVAL_DECIDED)
            assert [(d.data["approved"], d.data["decided_by"]) for d in decided] == [(approved, "user")]
            (call,) = [e.data for e in trial_events(app, trial_id, EventKind.TOOL_CALL)]  # from the worker's agent
            assert call["status"] == ("success" if approved else "rejected")
            assert marker.exists() is approved
            (row,) = [r for r in stored(app, tmp_path / "corral.db") if r[0] == trial_id]
            assert row[4] == "completed" and row[5]  # assisted: a person decided
            kinds = [entry.kind for entry in app.services.lifecycle.repository.timeline(trial_id)]
            assert "approval_asked" in kinds and "approval_decided" in kinds
            marker.unlink(missing_ok=True)
            workers.append(sorted(app.services.session.cluster.client.run(os.getpid).values()))
        assert len(workers[0]) == 2 and workers[1] == workers[0], "the second run started other workers"
    assert app.services.session.cluster is None  # closed with the workbench


async def test_workers_using_a_remote_server_that_asks_are_answered_from_the_workbench(
        tmp_path: Path, tui_env: Path, request: pytest.FixtureRequest, bridged: Counter[str]) -> None:
    """The route for workers on other nodes: `corral-tui serve --approve ask` holds the question, the workbench
    started with --server shows it (polled) and answers it, and the trial on the worker goes on."""
    marker = tui_env / "marker.txt"
    app = make_app(tmp_path, suites=[TUITEST], server_url=request.getfixturevalue("remote_url"), approval_poll=0.2,
                   executor="processes", workers=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "tuitest", tasks="mark", approval="ask")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the polled approval dialog")
        assert app.screen.request.tool_name == "write_marker" and not marker.exists()
        await pilot.press("ctrl+y")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        (trial_id,) = app.live.trials
        assert marker.exists(), "the approved tool did not run on the remote server"
        (call,) = trial_events(app, trial_id, EventKind.TOOL_CALL)
        assert call.data["status"] == "success" and app.live.trials[trial_id].status == "completed"
        assert bridged["trial_finished"] == 1  # the trial ran on a worker
