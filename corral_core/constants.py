"""Values every layer shares, each defined once: the tool-call statuses, the UTC clock, the in-flight cap,
the executors, and the agent types and approval policies (here, not in the spec and env packages they
belong to, because the workbench's run form lists them in its first frame, before it imports those).

Other shared vocabularies have their home beside the code that owns them and are imported from there:
event kinds (`corral_core.events.EventKind`), verbosity levels (`corral_core.tools.verbosity.VALID_LEVELS`),
trial statuses (`corral_core.metrics.TRIAL_STATUSES`) and text clipping (`corral_core.safetext.clip`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from corral_core.domain import ToolStatus as ToolStatus  # its home is the status vocabulary

__all__ = ["AGENT_TYPES", "APPROVAL_POLICIES", "EXECUTORS", "EXECUTOR_FIX", "MAX_IN_FLIGHT", "TOOL_STATUSES",
           "ToolStatus", "default_db_path", "is_executor", "utc_now"]

# Trials one process runs at once (a spec's `parallel`); the environment client pools as many
# connections. Each trial is a thread waiting on its model most of the time: at 256 in flight one
# process holds them in ~0.2 MB each (benchmarks/vs_inspect.py --latency); CPU, not threads, bounds it.
MAX_IN_FLIGHT = 512


TOOL_STATUSES = tuple(status.value for status in ToolStatus)
AGENT_TYPES = ("react", "tool_calling", "planner", "reflection")  # the built-in agents (AGENTS has plugins' too)
APPROVAL_POLICIES = ("reject", "approve", "ask")  # confirm-level tools: never run, always run, a person decides


def utc_now() -> datetime:
    """The current time, timezone-aware UTC (the real clock; stores and tools accept another)."""
    return datetime.now(UTC)


EXECUTORS = ("local", "processes")  # and dask://HOST:PORT; they run in corral_core/runner/executors.py
EXECUTOR_FIX = ("use `local` (threads here), `processes` (a Dask LocalCluster on this machine's cores) or "
                "`dask://HOST:PORT` (an existing Dask scheduler).")


def is_executor(text: str) -> bool:
    """`local`, `processes` or `dask://HOST:PORT`."""
    return text in EXECUTORS or (text.startswith("dask://") and ":" in text[len("dask://"):])


def default_db_path() -> Path:
    """Where the TUI and batch mode keep their history when no --db is given (here, not in the store
    package: the workbench needs the path before its first frame, the store's SQLAlchemy after it)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("corral-tui", appauthor=False)) / "corral.db"
