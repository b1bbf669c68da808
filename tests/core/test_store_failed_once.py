"""The store failure is taken once: two threads that meet a refused write at the same moment (a worker
thread's chained output and the writer's listener) emit one STORE_FAILED, never two."""

from __future__ import annotations

from pathlib import Path

from corral_core.errors import StoreError
from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


class RacingRunner(BenchmarkRunner):
    """The first read of the store failure lets a second thread report its own failure right there: the
    interleaving where both threads have looked before either has set it."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self._race: StoreError | None = None
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    @property
    def _store_failure(self) -> StoreError | None:
        seen = self.__dict__.get("_failure")
        race, self._race = self._race, None
        if race is not None:
            self._store_failed(race)  # the other thread, between this one's check and its set
        return seen

    @_store_failure.setter
    def _store_failure(self, value: StoreError | None) -> None:
        self.__dict__["_failure"] = value


def test_two_threads_failing_at_once_emit_one_store_failed() -> None:
    spec = spec_from_dict({"name": "once", "suite": str(SAMPLES / "samplemath.yaml"),
                           "model": "scripted/samplemath"}, SAMPLES)
    runner = RacingRunner(spec)
    sink = ListSink()
    runner._bus = sink
    runner._race = StoreError("the writer's refusal")
    runner._store_failed(StoreError("the worker's refusal"))
    failed = [event for event in sink.events if event.kind is EventKind.STORE_FAILED]
    assert len(failed) == 1, [event.data["error"] for event in failed]
    assert runner._stop.is_set()
