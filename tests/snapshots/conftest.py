"""Snapshot tests share the pilot tests' data: scripts and markers from tests/tui/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.helpers import DATA, record_benchmark


@pytest.fixture(autouse=True)
def tui_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("CORRAL_TUI_SCRIPTS", str(DATA))
    monkeypatch.setenv("CORRAL_TUI_TEST_MARKERS", str(markers))
    return markers


@pytest.fixture(scope="module")
def recorded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the same two-arm benchmark recorded twice (improved, then baseline)."""
    folder = tmp_path_factory.mktemp("recorded")
    for _ in range(2):
        record_benchmark(folder / "corral.db", folder / "work")
    return folder / "corral.db"
