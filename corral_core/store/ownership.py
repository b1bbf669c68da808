"""Who runs a benchmark, and whether that process is still alive.

The TUI and batch mode share one store, so two processes may run the same spec at once. A running
benchmark records its owner (pid and host) and a heartbeat the runner refreshes every few seconds.
Auto-resume continues only benchmarks nobody runs any more: `interrupted` ones, or `running` ones
whose owner is gone (same host and the pid is not alive) or silent (no heartbeat for a minute,
which also covers other hosts, a reused pid and rows from versions that recorded no owner).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime
from typing import Any

HEARTBEAT_INTERVAL = 5.0  # seconds between a runner's heartbeats
STALE_AFTER = 60.0  # seconds without a heartbeat after which a running benchmark counts as abandoned


@dataclass(frozen=True, slots=True)
class Owner:
    """A process that runs benchmarks."""

    pid: int
    host: str

    @classmethod
    def current(cls) -> Owner:
        return cls(os.getpid(), socket.gethostname())

    def describe(self) -> str:
        return f"process {self.pid} on {self.host}"


def pid_alive(pid: int) -> bool:
    """True when a process with this id exists on this machine."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill(pid, 0) would send Ctrl-C there; rely on the heartbeat
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    return True


def owner_alive(info: Any, now: datetime, *, here: Owner | None = None, stale_after: float = STALE_AFTER) -> bool:
    """True when the benchmark (a BenchmarkInfo) is `running` in a process that is still at it."""
    if info.status != "running" or info.heartbeat_at is None or info.owner_pid is None:
        return False
    if (now - info.heartbeat_at).total_seconds() > stale_after:
        return False
    here = here or Owner.current()
    if info.owner_host == here.host:
        return pid_alive(int(info.owner_pid))
    return True


def owner_of(info: Any) -> Owner | None:
    """The recorded owner of a benchmark, if any."""
    if info.owner_pid is None:
        return None
    return Owner(int(info.owner_pid), str(info.owner_host or "?"))
