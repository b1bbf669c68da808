"""The typed messages of the workbench.

Two directions: what thread workers and engine callbacks report to the app (`post_message` is
thread-safe), and what screens ask the app for (they bubble up from the screen). Screens never call
the app; the app builds screens and calls their methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from textual.message import Message

from corral_tui.run_request import RunRequest

if TYPE_CHECKING:
    from corral_core.store import BenchmarkInfo
    from corral_tui.services.catalogue import SuiteView
    from corral_tui.services.session import Command, RunSummary

# --- reports to the app ------------------------------------------------------------------------


class SuitesLoaded(Message):
    def __init__(self, suites: list[SuiteView]) -> None:
        super().__init__()
        self.suites = suites


class ServicesReady(Message):
    """The store is open and the servers answer: runs can start."""

    def __init__(self, urls: dict[str, str]) -> None:
        super().__init__()
        self.urls = urls


class ApprovalsChanged(Message):
    """The approvals inbox changed ("add": a new request came; "remove": one was decided or timed out)."""

    def __init__(self, change: Literal["add", "remove"]) -> None:
        super().__init__()
        self.change = change

    def can_replace(self, message: Message) -> bool:
        # a burst coalesces, but an "add" is never hidden behind a later "remove"
        return isinstance(message, ApprovalsChanged) and (self.change == "add" or message.change == "remove")


class RunStarted(Message):
    def __init__(self, total: int, start_paused: bool, model: str) -> None:
        super().__init__()
        self.total = total
        self.start_paused = start_paused
        self.model = model


class RunFinished(Message):
    def __init__(self, summary: RunSummary) -> None:
        super().__init__()
        self.summary = summary


class TaskTextLoaded(Message):
    def __init__(self, suite: str, task_id: str, verbosity: str, prompt: str, guide: str) -> None:
        super().__init__()
        self.suite, self.task_id, self.verbosity = suite, task_id, verbosity
        self.prompt, self.guide = prompt, guide


class WorkerFailed(Message):
    """A screen's worker failed: the app shows it (a UserError in words, anything else as a bug)."""

    def __init__(self, error: BaseException | None) -> None:
        super().__init__()
        self.error = error


# --- requests from the screens ------------------------------------------------------------------


class RunRequested(Message):
    def __init__(self, request: RunRequest) -> None:
        super().__init__()
        self.request = request


class StopRequested(Message):
    """Stop the run in progress."""


class ControlRequested(Message):
    """pause / step / resume one trial, or every trial (`trial_id` None)."""

    def __init__(self, command: Command, trial_id: str | None) -> None:
        super().__init__()
        self.command = command
        self.trial_id = trial_id


class TrialCancelRequested(Message):
    """End one running trial (scored as cancelled)."""

    def __init__(self, trial_id: str) -> None:
        super().__init__()
        self.trial_id = trial_id


class QuitRequested(Message):
    """Quit the workbench (the app asks first when a run is live)."""


class InterventionRequested(Message):
    """Open the intervention dialog for a running trial."""

    def __init__(self, trial_id: str) -> None:
        super().__init__()
        self.trial_id = trial_id


class BreakpointsRequested(Message):
    """Open the breakpoints dialog for the run in progress (before a run, the form's field is used)."""


class TaskTextRequested(Message):
    def __init__(self, suite: str, task_id: str, verbosity: str) -> None:
        super().__init__()
        self.suite, self.task_id, self.verbosity = suite, task_id, verbosity


class CompareRequested(Message):
    """Open the compare screen of a benchmark (None: the last run of this session), or of two benchmarks
    of one suite side by side (`other_id`)."""

    def __init__(self, benchmark_id: str | None, other_id: str | None = None) -> None:
        super().__init__()
        self.benchmark_id = benchmark_id
        self.other_id = other_id


class ResumeRequested(Message):
    """Finish an interrupted (or stopped) stored benchmark from its stored spec, in the workbench."""

    def __init__(self, benchmark_id: str) -> None:
        super().__init__()
        self.benchmark_id = benchmark_id


class SpecFileRequested(Message):
    """Open a `.bench.yaml` into the run form (`request` None), or save the form's `request` as one."""

    def __init__(self, request: RunRequest | None = None) -> None:
        super().__init__()
        self.request = request


class TrialsRequested(Message):
    """Open a stored benchmark's trials."""

    def __init__(self, benchmark: BenchmarkInfo) -> None:
        super().__init__()
        self.benchmark = benchmark


class TimelineRequested(Message):
    """Open a stored trial's timeline."""

    def __init__(self, trial_id: str) -> None:
        super().__init__()
        self.trial_id = trial_id


class ForkRequested(Message):
    """Fork a stored trial: the app asks where (the fork dialog), then runs the fork."""

    def __init__(self, trial_id: str, iterations: int) -> None:
        super().__init__()
        self.trial_id = trial_id
        self.iterations = iterations


class ForkViewRequested(Message):
    """Show a fork beside its parent from the fork point."""

    def __init__(self, trial_id: str) -> None:
        super().__init__()
        self.trial_id = trial_id
