"""Who runs a benchmark, whether that process is still alive, and the token that fences it.

The TUI and batch mode share one store, so two processes may run the same spec at once. A running
benchmark records its owner (pid and host), a heartbeat the runner refreshes every few seconds and
a fencing token, new at every claim. Auto-resume continues only benchmarks nobody runs any more:
`interrupted` ones, or `running` ones whose owner is gone (same host and the pid is not alive) or
silent (no heartbeat for STALE_AFTER seconds, which also covers other hosts, a reused pid and rows
from versions that recorded no owner).

Staleness is judged by the store's own clock, never a host's: heartbeats are written with the
database's time (`DatabaseNow`: PostgreSQL's `statement_timestamp()` in UTC, SQLite's
`strftime(..., 'now')`, i.e. the clock of the machine the SQLite file lives on) and compared with
the database's time when a run decides whether to take over. A host whose clock is ahead or behind
therefore neither takes over a live run nor looks dead itself.

A process paused past STALE_AFTER (SIGSTOP, a laptop lid, a VM migration) may be taken over. When it
wakes, the token it holds is no longer the benchmark's: the store writer checks it on every trial
write, in the same transaction, so none of its late writes lands; the runner checks it before every
trial and with every heartbeat, and stops at once as `lost_ownership`. The process that took over
re-runs the trials the paused one had left unfinished, and only those.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from corral_core.domain import BenchmarkStatus
from corral_core.store.tables import UTCDateTime

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


class OwnershipLost(Exception):
    """Another run has claimed the benchmark: the fencing token this run holds is no longer its own."""

    def __init__(self, benchmark_id: str) -> None:
        self.benchmark_id = benchmark_id
        super().__init__(f"benchmark {benchmark_id} is now run by another process (its fencing token changed)")


def new_token() -> str:
    """A fresh fencing token: what a claim of a benchmark writes, and every trial write checks."""
    return "own_" + secrets.token_hex(8)


class DatabaseNow(FunctionElement[datetime]):
    """The database's current UTC time, as a column value or a query (one clock for every host)."""

    type = UTCDateTime()
    inherit_cache = True
    name = "database_now"


@compiles(DatabaseNow)
def _now_generic(element: DatabaseNow, compiler: SQLCompiler, **kw: Any) -> str:
    return "CURRENT_TIMESTAMP"


@compiles(DatabaseNow, "sqlite")
def _now_sqlite(element: DatabaseNow, compiler: SQLCompiler, **kw: Any) -> str:
    # the text SQLAlchemy's SQLite DATETIME stores (microseconds), so stored values compare as written
    return "strftime('%Y-%m-%d %H:%M:%f000', 'now')"


@compiles(DatabaseNow, "postgresql")
def _now_postgresql(element: DatabaseNow, compiler: SQLCompiler, **kw: Any) -> str:
    return "timezone('UTC', statement_timestamp())"


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
    """True when the benchmark (a BenchmarkInfo) is `running` in a process that is still at it.

    `now` is the database's time (DatabaseNow), the clock its heartbeats were written with."""
    if info.status != BenchmarkStatus.RUNNING or info.heartbeat_at is None or info.owner_pid is None:
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
