"""Snapshot tests share the pilot tests' data: scripts and markers from tests/tui/data."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.tui.helpers import DATA, record_benchmark, settle


@pytest.fixture(autouse=True)
def tui_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("CORRAL_TUI_SCRIPTS", str(DATA))
    monkeypatch.setenv("CORRAL_TUI_TEST_MARKERS", str(markers))
    return markers


@pytest.fixture(scope="session")
def recorded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the same two-arm benchmark recorded twice (improved, then baseline); recorded once per
    worker for every snapshot module (the tests copy it before they open it: none writes to it)."""
    folder = tmp_path_factory.mktemp("recorded")
    for _ in range(2):
        record_benchmark(folder / "corral.db", folder / "work")
    return folder / "corral.db"


@pytest.fixture
def snap_compare(snap_compare: Callable[..., bool]) -> Callable[..., bool]:
    """The plugin's `snap_compare`, with the picture taken only once the screen has settled (its key
    footer drawn for the bindings in force: Textual redraws it a refresh after a screen opens or
    focus moves, which a loaded machine may not have reached when the test's own steps are done)."""

    def compare(app: Any, *args: Any, run_before: Callable[[Pilot], Awaitable[None] | None] | None = None,
                **kwargs: Any) -> bool:
        async def before(pilot: Pilot) -> None:
            if run_before is not None:
                result = run_before(pilot)
                if inspect.isawaitable(result):
                    await result
            await settle(pilot)

        return snap_compare(app, *args, run_before=before, **kwargs)

    return compare
