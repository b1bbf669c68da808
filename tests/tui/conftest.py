"""Pilot tests run on anyio's pytest plugin (asyncio backend); scripts and markers come from tests/tui/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.helpers import DATA


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def tui_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Scripted models from tests/tui/data; write_marker writes into the returned folder."""
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("CORRAL_TUI_SCRIPTS", str(DATA))
    monkeypatch.setenv("CORRAL_TUI_TEST_MARKERS", str(markers))
    return markers
