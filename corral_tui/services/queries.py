"""What the history, trials, timeline and compare screens ask of the store: typed, paged, blocking.

Screens get a `StoreQueries` in their constructor and call it from their own thread workers; each
method waits (bounded) for the store to open at start-up and returns plain data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral_core.events import (
    Event,
    EventKind,
)
from corral_tui.services.catalogue import SuiteCatalogue

if TYPE_CHECKING:
    from corral_core.store import BenchmarkInfo, Repository, TimelineEntry, TrialInfo
    from corral_tui.analysis import CompareView, Page, TrialFilter

SERVICES_WAIT = 30.0  # seconds a query waits for the store to open at start-up


@dataclass(frozen=True)
class TrialTimeline:
    """One stored trial with everything its timeline screen shows."""

    trial: TrialInfo | None
    entries: list[TimelineEntry]
    expected: str | None  # the task's expected answer, when its suite is known (open here, or on disk)
    suite_known: bool = True  # False: the trial's suite file is neither open here nor readable


@dataclass(frozen=True)
class ForkView:
    """A fork and its parent, each from the fork point on (the side-by-side fork screen)."""

    fork: TrialInfo
    parent: TrialInfo | None
    iteration: int  # 0-based: where the fork went live
    intervention: str | None
    fork_entries: list[TimelineEntry]
    parent_entries: list[TimelineEntry]


class StoreQueries:
    """Paged reads of the store for the screens (`page_size` rows per page)."""

    def __init__(self, store: Callable[[float], Repository], catalogue: SuiteCatalogue, page_size: int) -> None:
        self._store = store
        self.catalogue = catalogue
        self.page_size = page_size

    def _repository(self) -> Repository:
        return self._store(SERVICES_WAIT)

    # corral_tui.analysis (and the metrics it reads) is imported by the first query, not before the first frame

    def benchmarks(self, offset: int) -> Page[BenchmarkInfo]:
        from corral_tui import analysis

        return analysis.benchmark_page(self._repository(), offset, self.page_size)

    def trials(self, benchmark_id: str, filters: TrialFilter, offset: int) -> Page[TrialInfo]:
        from corral_tui import analysis

        return analysis.trial_page(self._repository(), benchmark_id, filters, offset, self.page_size)

    def timeline(self, trial_id: str) -> TrialTimeline:
        repository = self._repository()
        trial = repository.trial(trial_id)
        entries = repository.timeline(trial_id)
        expected, known = None, False
        if trial is not None and trial.benchmark_id is not None:
            benchmark = repository.get_benchmark(trial.benchmark_id)
            if benchmark is not None:
                paths = [str(p) for p in benchmark.suites]
                known = self.catalogue.suite_of(paths, trial.task_id) is not None
                expected = self.catalogue.expected_answer(paths, trial.task_id) if known else None
        return TrialTimeline(trial, entries, expected, known)

    def fork_view(self, trial_id: str) -> ForkView | None:
        """A fork beside its parent from the fork point (None: `trial_id` is not a stored fork)."""
        from corral_tui import analysis

        repository = self._repository()
        fork = repository.trial(trial_id)
        if fork is None or fork.parent_trial_id is None or fork.fork_iteration is None:
            return None
        iteration = fork.fork_iteration
        fork_entries = analysis.from_iteration(repository.timeline(trial_id), iteration)
        intervention = next((str(event.data.get("text")) for entry in fork_entries
                             if (event := entry.event()) is not None and event.kind is EventKind.INTERVENTION_APPLIED
                             and event.data.get("iteration") == iteration), None)
        return ForkView(fork, repository.trial(fork.parent_trial_id), iteration, intervention, fork_entries,
                        analysis.from_iteration(repository.timeline(fork.parent_trial_id), iteration))

    def trial_events(self, trial_id: str) -> list[Event]:
        """A stored trial as the live panes draw it: its timeline turned back into events."""
        return [event for entry in self._repository().timeline(trial_id)
                if (event := event_of(trial_id, entry)) is not None]

    def compare(self, benchmark_id: str) -> CompareView:
        from corral_tui import analysis

        return analysis.compare_view(self._repository(), benchmark_id)

    def compare_two(self, first_id: str, second_id: str) -> CompareView:
        """Two benchmarks of one suite, their arms side by side, paired by task."""
        from corral_tui import analysis

        return analysis.compare_two_view(self._repository(), first_id, second_id)

    def filter_choices(self, benchmark: BenchmarkInfo) -> tuple[list[str], list[str]]:
        """(tasks, arms) a benchmark's trials can be filtered by (no I/O)."""
        from corral_tui import analysis

        return analysis.filter_choices(benchmark, self.catalogue.task_ids([str(p) for p in benchmark.suites]))


def event_of(trial_id: str, entry: TimelineEntry) -> Event | None:
    """The event a stored timeline entry was written from (None for the start line)."""
    event = entry.event(trial_id)
    return None if event is None or event.kind is EventKind.TRIAL_STARTED else event
