"""`RunRepository`: what a run reads and writes through the store's Repository (store/repository.py).

A protocol, so mypy --strict checks every call the runner, its lineage, its fork planning and its
results readers make, without the runner depending on how the store does it. It sits at the bottom of
the runner's layers (lineage and results use it too); `runner/collaborators.py` lists it with the
runner's other collaborators.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from corral_core.store.models import ArmInfo, BenchmarkInfo, ChainOutputInfo, TimelineEntry, TrialInfo
    from corral_core.store.ownership import Owner
    from corral_core.trial_result import TrialResult

__all__ = ["RunRepository"]


class RunRepository(Protocol):
    """The store's Repository as a run uses it: its benchmark's life, its trials read back, chain outputs."""

    @property
    def engine(self) -> Engine:
        """The engine it reads (a run's replay source reads it too)."""

    # the benchmark: open, own, close (runner/lineage.py, benchmark_runner.py)
    def create_benchmark(self, *, spec_name: str, spec_digest: str, spec_yaml: str = ..., suites: Sequence[str] = ...,
                         agent: str = ..., model: str = ..., arms: Iterable[ArmInfo | Mapping[str, Any]] = ...,
                         trials_per_task: int = ..., benchmark_id: str | None = ..., owner: Owner | None = ...,
                         plan: Mapping[str, Any] | None = ...) -> BenchmarkInfo: ...

    def finish_benchmark(self, benchmark_id: str, status: str = ..., headline_score: float | None = ...,
                         attempt_status: str | None = ..., metrics_json: Mapping[str, Any] | str | None = ..., *,
                         token: str | None = ..., revoke: bool = ...) -> None: ...

    def get_benchmark(self, benchmark_id: str) -> BenchmarkInfo | None: ...

    def find_unfinished_benchmark(self, spec_digest: str, here: Owner | None = ...) -> BenchmarkInfo | None: ...

    def live_benchmarks(self, spec_digest: str, here: Owner | None = ...) -> list[BenchmarkInfo]: ...

    def is_live(self, info: BenchmarkInfo, here: Owner | None = ..., now: datetime | None = ...) -> bool: ...

    def claim_benchmark(self, seen: BenchmarkInfo, owner: Owner) -> str | None: ...

    def heartbeat(self, benchmark_id: str, token: str) -> bool: ...

    def owns(self, benchmark_id: str, token: str) -> bool: ...

    def best_previous_score(self, spec_digest: str, exclude_id: str | None = ..., *, direction: str = ...,
                            finished_before: datetime | None = ...) -> float | None: ...

    def earlier_runs(self, spec_digest: str, exclude_id: str | None = ..., *,
                     finished_before: datetime | None = ..., limit: int = ...) -> list[BenchmarkInfo]: ...

    # its trials (resume, --retry-errors, the end of a run, a fork's parent)
    def trial(self, trial_id: str) -> TrialInfo | None: ...

    def timeline(self, trial_id: str) -> list[TimelineEntry]: ...

    def finished_trial_keys(self, benchmark_id: str) -> set[tuple[str, str, int]]: ...

    def delete_unfinished_trials(self, benchmark_id: str) -> int: ...

    def retire_trials(self, benchmark_id: str, trial_ids: list[str]) -> int: ...

    def iter_trial_records(self, benchmark_id: str, *, page_size: int = ...,
                           tool_calls: bool = ...) -> Iterator[TrialResult]: ...

    def iter_trial_record_values(self, benchmark_id: str, *, page_size: int = ..., tool_calls: bool = ...
                                 ) -> Iterator[tuple[Sequence[Any], Sequence[tuple[str, str, float | None]]]]: ...

    def iter_trial_values(self, benchmark_id: str, *, page_size: int = ..., driver_times: bool = ...
                          ) -> Iterator[Sequence[Any]]: ...

    # a chain's links pass their outputs on through the store
    def record_chain_output(self, benchmark_id: str | None, episode_id: str | None, task_id: str,
                            output: str | None, score: float | None = ..., trial_id: str | None = ..., *,
                            token: str | None = ...) -> None: ...

    def chain_outputs(self, benchmark_id: str, episode_id: str | None = ...) -> list[ChainOutputInfo]: ...
