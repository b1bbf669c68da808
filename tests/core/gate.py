"""A gate on subprocess runs of tests/core/data/slow.yaml: its `pause` tool (chain_env.held) counts its
calls in a folder and, past `hold_after` calls, waits for a `release` file. Tests wait on these marker
files and on the store instead of assuming how many seconds a run takes."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

HANG = 120.0  # seconds: only bounds a test that is failing anyway


class Gate:
    def __init__(self, folder: Path, hold_after: int = 0) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        (folder / "hold_after").write_text(str(hold_after), encoding="utf-8")

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        return {**(os.environ if base is None else base), "CORRAL_TEST_GATE": str(self.folder)}

    @property
    def calls(self) -> int:
        path = self.folder / "calls"
        return path.stat().st_size if path.exists() else 0

    def release(self) -> None:
        (self.folder / "release").touch()


def wait_until(condition: Callable[[], bool], what: str, *processes: subprocess.Popen) -> None:
    """Wait for `condition` (polled) while every process in `processes` is still running."""
    deadline = time.monotonic() + HANG
    while not condition():
        ended = [p.args for p in processes if p.poll() is not None]
        assert not ended, f"a process ended before {what}: {ended}"
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)
