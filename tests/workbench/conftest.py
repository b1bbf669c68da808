"""The workbench services without a terminal: scripts and markers from tests/tui/data, no Textual."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "tui" / "data"
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"
TUITEST = DATA / "tuitest.yaml"


@pytest.fixture(autouse=True)
def markers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    monkeypatch.setenv("CORRAL_TUI_SCRIPTS", str(DATA))
    monkeypatch.setenv("CORRAL_TUI_TEST_MARKERS", str(folder))
    return folder
