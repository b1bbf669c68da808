"""What `BenchmarkRunner` needs from the objects its caller hands it, as protocols mypy checks.

`StoreSink`: the store writer (store/writer.py `StoreWriter`): it takes the run's events, says when the
store refuses writes, checks the benchmark's fencing token on every trial write and says when another
process claimed the benchmark. `ApprovalGate` (env/approval.py): who decides confirm-level tools.
`Cluster`: a started Dask executor a caller keeps across runs (runner/executors.py `DaskExecutor`).
`RunRepository` (runner/run_store.py, below the runner's other layers: lineage and results read it too):
the store's Repository, as the run opens, owns and closes its benchmark and reads its trials back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from corral_core.env.approval import ApprovalGate
from corral_core.errors import StoreError
from corral_core.events import EventSink
from corral_core.runner.run_store import RunRepository

if TYPE_CHECKING:
    from corral_core.runner.dask_worker import RemoteBatch, RemoteJob, RemoteTrial
    from corral_core.runner.executors import EventBridge

__all__ = ["ApprovalGate", "Cluster", "RunRepository", "StoreSink"]


class StoreSink(EventSink, Protocol):
    """The store writer as the runner uses it: an event sink that fails loudly and honours a fence."""

    @property
    def failure(self) -> StoreError | None:
        """Set once the store refuses writes for good."""

    def flush(self, timeout: float = 10.0) -> bool:
        """Block until what was queued before is committed; False on timeout."""

    def on_failure(self, listener: Callable[[StoreError], None]) -> Callable[[], None]:
        """Call `listener` when the store fails (at once if it has); returns the unsubscribe function."""

    def fence(self, benchmark_id: str, token: str) -> Callable[[], None]:
        """Refuse this benchmark's trial writes unless `token` still owns it; returns the lifting function."""

    def on_lost(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call `listener(benchmark_id)` when a fenced write finds the benchmark claimed; returns the remover."""


class Cluster(Protocol):
    """A started Dask executor: runs a run's jobs on its workers and carries control commands to them."""

    def send_command(self, run: str, op: str, **fields: Any) -> None: ...

    def run(self, template: RemoteBatch, remote: list[RemoteJob], bridge: EventBridge, *,
            stopped: Callable[[], bool], on_trial: Callable[[int, RemoteTrial], None],
            on_failed: Callable[[int, str], None], parallel: int = 1) -> None: ...

    def close(self) -> None: ...
