"""How the workbench is set up: which suites, which store, which server, which model.

`config_from_args` turns the command line into a `WorkbenchConfig` (the tests build theirs with a
fixed clock and a `Redactor` that hides what changes from run to run, tests/tui/stable.py). The app
never reads `sys.argv` or the clock directly: everything it shows goes through the config.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral_tui.options import CliOptions

SUITE_SKIP_SUFFIXES = (".bench.yaml", ".script.yaml")
FIRST_SUITE = "samplemath"


def sample_suite_paths() -> list[Path]:
    """The sample suites (sample_tasks/*.yaml without specs and scripts), shipped in the package."""
    from corral_core.samples import sample_tasks_dir

    folder = sample_tasks_dir()
    paths = sorted(p for p in folder.glob("*.yaml") if not p.name.endswith(SUITE_SKIP_SUFFIXES))
    return sorted(paths, key=lambda p: p.stem != FIRST_SUITE)  # the quick-start suite on top


class Redactor:
    """Formats the values that differ between runs. The default shows them as they are."""

    def url(self, url: str | None) -> str:
        return url or "-"

    def timestamp(self, value: datetime | float | None) -> str:
        if value is None:
            return "-"
        if isinstance(value, (int, float)):
            value = datetime.fromtimestamp(value, UTC)
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")

    def duration(self, seconds: float | None) -> str:
        if seconds is None:
            return "-"
        if seconds < 1:
            return f"{seconds * 1000:.0f} ms"
        if seconds < 60:
            return f"{seconds:.1f} s"
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes}m{rest:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"

    def ident(self, value: str | None) -> str:
        return value or "-"

    def count(self, value: int) -> str:
        return str(value)


@dataclass
class WorkbenchConfig:
    """Everything the workbench needs to start. Built by `config_from_args` (or a test's config)."""

    suite_paths: list[Path]
    db_url: str
    server_url: str | None = None  # a remote environment server; None starts an embedded one
    token: str | None = None
    model: str | None = None  # default model of the run form (None: the suite's scripted model)
    model_base_url: str | None = None  # default API base of the run form (--model-base-url)
    max_connections: int | None = None  # --max-connections: requests in flight per model id
    executor: str = "local"  # --executor: where a run's trials run (local | processes | dask://HOST:PORT)
    workers: int | None = None  # --workers: worker processes of `processes` (None: one per core)
    clock: Callable[[], float] = time.time
    redact: Redactor = field(default_factory=Redactor)
    approval_timeout: float = 120.0  # seconds a confirm-level tool waits for a decision
    approval_poll: float = 0.5  # seconds between GET /approvals on a remote server
    dialog_grace: float = 0.4  # seconds a new approval dialog takes no keys (keys meant for the screen behind)
    confirm_destructive: bool = True  # end trial, stop run: ask first (--no-confirm turns it off)
    drain_interval: float = 0.1  # seconds between two drains of the event queue
    drain_batch: int = 2_000  # events applied per drain at most
    queue_size: int = 20_000  # events waiting for the UI at most (oldest dropped)
    trial_buffer: int = 1_000  # events kept per trial for its panes (the newest)
    pane_lines: int = 1_000  # lines per live pane (RichLog max_lines)
    page_size: int = 100  # rows per history page
    work_dir: Path | None = None  # trial workspaces (None: a temporary directory)
    form_memory: Path | None = None  # where the run form keeps its last values (None: it starts with defaults)
    keymap: dict[str, str] = field(default_factory=dict)  # binding id -> keys, e.g. {"workbench.step": "n"}
    title: str = "corral-tui"


def config_from_args(options: CliOptions) -> WorkbenchConfig:
    """The workbench config from the command line's typed options (flags, environment and user config:
    suite, db, server, token, model, executor, keymap)."""
    from corral_core.errors import UserError

    suites = [Path(p).expanduser() for p in options.suite] or sample_suite_paths()
    missing = [str(p) for p in suites if not p.is_file()]
    if missing:
        raise UserError(f"suite file not found: {', '.join(missing)}.", where="--suite",
                        fix="give the path of a suite YAML such as sample_tasks/samplemath.yaml.")
    if not suites:
        raise UserError("no suites to open: sample_tasks/ has no suite files.", where="--suite",
                        fix="pass --suite FILE.")
    from corral_core.constants import EXECUTOR_FIX, default_db_path, is_executor

    executor = (options.executor or "local").strip()
    if not is_executor(executor):
        raise UserError(f"unknown executor {executor!r}.", where="--executor", fix=EXECUTOR_FIX)
    db = options.db or str(default_db_path())
    return WorkbenchConfig(suite_paths=suites, db_url=str(db), server_url=options.server, token=options.token,
                           model=options.model, model_base_url=options.model_base_url,
                           max_connections=options.max_connections, executor=executor, workers=options.workers,
                           confirm_destructive=not options.no_confirm, keymap=dict(options.keymap),
                           form_memory=default_db_path().parent / "last-run-form.json")
