"""A deterministic workbench config for the pilot and snapshot tests (and benchmarks/tui_load.py):
a fixed clock and a `Redactor` that hides ports, times, durations and ids, so snapshots are stable."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from corral_tui.config import Redactor, WorkbenchConfig, sample_suite_paths


class StableRedactor(Redactor):
    """Hides ports, times, durations and ids: ids become stable names in order of first display."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def url(self, url: str | None) -> str:
        return "http://127.0.0.1:PORT" if url else "-"

    def timestamp(self, value: datetime | float | None) -> str:
        return "-" if value is None else "2025-01-01 12:00:00"

    def duration(self, seconds: float | None) -> str:
        return "-" if seconds is None else "0.1 s"

    def ident(self, value: str | None) -> str:
        if not value:
            return "-"
        if value not in self._names:
            prefix = value.split("_", 1)[0] if "_" in value[:4] else "id"
            same = sum(1 for name in self._names.values() if name.startswith(prefix + "_"))
            self._names[value] = f"{prefix}_{same + 1:04d}"
        return self._names[value]

    def count(self, value: int) -> str:
        return "N"


FIXED_NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC).timestamp()


def test_config(suite_paths: list[Path] | None = None, *, db_url: str, **overrides: Any) -> WorkbenchConfig:
    """A config for tests: fixed clock and stable redaction (ports, times, durations, ids hidden); a
    new approval dialog takes keys at once and ending a trial or stopping a run does not ask first
    (the grace period and the confirmations have their own tests)."""
    config = WorkbenchConfig(suite_paths=list(suite_paths) if suite_paths is not None else sample_suite_paths(),
                             db_url=db_url, clock=lambda: FIXED_NOW, redact=StableRedactor(), dialog_grace=0.0,
                             confirm_destructive=False)
    for key, value in overrides.items():
        if not hasattr(config, key):
            raise TypeError(f"WorkbenchConfig has no field {key!r}")
        setattr(config, key, value)
    return config


test_config.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
