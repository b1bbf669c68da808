"""The workbench and a store that fails: a store it cannot open ends the start with exit 2 and one
message; a store that refuses writes mid-run is shown at once and stops the run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from corral_core.store import Repository, init_db, make_engine
from corral_core.store.schema import VERSION_TABLE
from corral_tui.screens.dialogs import ErrorScreen
from tests.tui.helpers import SIZE, make_app, start_run, wait_for, wait_ready

pytestmark = pytest.mark.anyio


def made_store(path: Path) -> Path:
    engine = make_engine(path)
    init_db(engine)
    Repository(engine).create_benchmark(spec_name="kept", spec_digest="d")
    engine.dispose()
    return path


def store_failed_notice(app) -> str:
    """The text of the "Store failed" notification, on screen (Textual keeps no public list of them) or
    held while a dialog is open: on a loaded machine the run's error dialog may open before the store's
    event is drained, and the notification then waits on the dialog's note line until it closes."""
    shown = [n.message for n in app._notifications if n.title == "Store failed"]
    held = [message for message, title, *_ in app._held_toasts if title == "Store failed"]
    return " ".join(shown + held)


async def test_a_store_from_a_newer_version_ends_the_start_with_exit_2(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = made_store(tmp_path / "future.db")
    with sqlite3.connect(path) as conn:
        conn.execute(f"update {VERSION_TABLE} set version_num = '9999_future'")
    app = make_app(tmp_path, db_url=str(path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.return_code == 2, "the app to exit with code 2")
    assert not app.ready
    printed = " ".join(capsys.readouterr().err.split())  # Textual prints it once the screen is gone
    assert printed.startswith("corral-tui: --db: the store") and printed.count("corral-tui:") == 1
    assert "9999_future" in printed and "Traceback" not in printed


async def test_a_store_that_refuses_writes_is_shown_at_once_and_stops_the_run(tmp_path: Path) -> None:
    path = made_store(tmp_path / "refusing.db")
    with sqlite3.connect(path) as conn:
        conn.execute("create trigger quota before insert on trial "
                     "begin select raise(abort, 'quota exceeded (test trigger)'); end")
    app = make_app(tmp_path, db_url=str(path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", tasks="add", arms="full", trials="3")
        # said in the status line and in a notification that stays 30 s; the status line may already describe
        # a trial highlighted after it (a loaded machine draws rows late), so the notification is what is read
        await wait_for(pilot, lambda: store_failed_notice(app), "the store failure")
        assert "The store refused writes" in store_failed_notice(app)
        assert "quota exceeded (test trigger)" in store_failed_notice(app)
        await wait_for(pilot, lambda: app.run_state == "failed", "the run to end as failed")
        # how promptly the run stops is proven by event order in tests/core/test_store_failures.py: here
        # three scripted trials may all end before the writer's first commit fails on a loaded machine
        # the run's error is shown in a dialog too: let it finish mounting before the app closes
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen) and app.screen.query("Button"),
                       "the error dialog")
        assert "quota exceeded (test trigger)" in " ".join(str(w.render()) for w in app.screen.query("Static"))
    with sqlite3.connect(path) as conn:
        assert conn.execute("select status from benchmark where spec_name != 'kept'").fetchall() == [("store_failed",)]
