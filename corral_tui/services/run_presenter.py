"""The workbench's run as a state machine, and the words it says about it; no Textual here.

`RunPresenter` is told what happened (a run was asked for, started, paused, finished, failed; the
engine's events of a drained batch) and answers with the state the header shows and the lines the
status bar and the notifications say. The app only routes: it hands the presenter the message or the
events and puts what comes back on a screen. tests/workbench/test_run_presenter.py drives it with
plain events and summaries, without a terminal.

    idle ── begin ──> starting ── started ──> running <── control ──> paused
                         │                       │                      │
                         └── failed <── the run's worker raised ────────┤
                                         store_failed (the store refused writes: the run is stopping)
    finished | interrupted | lost_ownership | store_failed <── finished (the run's own status)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from corral_core.domain import AttemptStatus, WorkbenchState
from corral_core.errors import UserError
from corral_core.events import BreakpointHitEvent, Event, EventKind
from corral_tui.config import Redactor
from corral_tui.live import LiveRun
from corral_tui.render import format_cost, format_tokens
from corral_tui.services.session import Command, RunSummary

LIVE_STATES = frozenset(state for state in WorkbenchState if state.live)

Severity = Literal["information", "warning", "error"]


@dataclass(frozen=True)
class Line:
    """What the status bar says (`style` is a Rich style, "" for plain)."""

    text: str
    style: str = ""


@dataclass(frozen=True)
class Alert:
    """A notification: a toast outside dialogs."""

    text: str
    title: str = ""
    severity: Severity = "information"
    timeout: float | None = None


@dataclass(frozen=True)
class Said:
    """What one drained batch of events makes the workbench say: status lines and notifications, in order."""

    lines: tuple[Line, ...] = ()
    alerts: tuple[Alert, ...] = ()


class FinishedTrial(Protocol):
    """What the headline reads of a trial of the run (corral_tui.live.TrialLive has it)."""

    @property
    def finished(self) -> bool: ...
    @property
    def assisted(self) -> bool: ...
    @property
    def score(self) -> float | None: ...


def headline(summary: RunSummary, trials: Iterable[FinishedTrial]) -> str:
    """The run's headline in words: the score and how it compares, or why there is none."""
    finished = [trial for trial in trials if trial.finished]
    if summary.attempt_status == AttemptStatus.ERRORED:
        return f"no headline score: {summary.attempt_text} (stored as errored, never compared with)"
    if summary.headline_score is None:
        if finished and all(trial.assisted for trial in finished):
            return "no headline score (every trial was assisted, and assisted trials are reported apart)"
        scored = [trial for trial in finished if trial.score is not None]
        if scored and all(trial.assisted for trial in scored):
            return "no headline score (only assisted trials were scored, and assisted trials are reported apart)"
        return "no headline score (no trial was scored)"
    score = f"headline score {summary.headline_score:.2f}"
    if summary.status != WorkbenchState.FINISHED:
        return f"{score} (interrupted: not compared with earlier runs)"
    if summary.previous_best is None:
        return f"{score} (the first finished run of this spec)"
    if summary.attempt_text:
        return f"{score} ({summary.attempt_status}: {summary.attempt_text})"
    return f"{score} ({summary.attempt_status or '-'} against the best earlier run, {summary.previous_best:.2f})"


class RunPresenter:
    """The run's state and wording. The app tells it what happened and shows what it answers."""

    def __init__(self, redact: Redactor) -> None:
        self.redact = redact
        self.state = WorkbenchState.IDLE
        self.model: str | None = None  # the model of the run that started last (the header names it)
        self.last_benchmark_id: str | None = None  # the last run that finished (m compares its arms)

    # --- starting -------------------------------------------------------------------------------

    def refusal(self, ready: bool) -> str | None:
        """Why a run (or a fork, or a resume) cannot start now; None when it can."""
        if not ready:
            return "The environment server is still starting; try again in a moment."
        if self.state.live:
            return "A run is in progress: stop it with x first."
        return None

    def begin(self) -> None:
        """A run (new, fork or resume) is about to start."""
        self.state = WorkbenchState.STARTING

    def run_line(self, suite: str, arms: Iterable[str], trials: int) -> Line:
        return Line(f"Starting {suite}: arms {', '.join(arms)}, {trials} trial(s) per task…")

    def fork_line(self, trial_id: str, iteration: int, with_intervention: bool) -> Line:
        told = " with your intervention" if with_intervention else ""
        return Line(f"Forking trial {self.redact.ident(trial_id)}: replaying it up to iteration {iteration + 1}, "
                    f"then live{told}…")

    def resume_line(self, benchmark_id: str) -> Line:
        return Line(f"Resuming benchmark {self.redact.ident(benchmark_id)} from its stored spec: its finished "
                    "trials are kept, the missing ones run…")

    def started(self, paused: bool, model: str) -> None:
        """The runner is built and its trials are about to run."""
        self.model = model
        self.state = WorkbenchState.PAUSED if paused else WorkbenchState.RUNNING

    # --- steering -------------------------------------------------------------------------------

    def control(self, command: Command, trial_id: str | None) -> Line:
        """A pause / step / resume the session accepted; for every trial it changes the run's state."""
        if trial_id is None:
            self.state = {"pause": WorkbenchState.PAUSED, "resume": WorkbenchState.RUNNING}.get(command, self.state)
        who = "every trial" if trial_id is None else f"trial {self.redact.ident(trial_id)}"
        verb = {"pause": "Pausing", "step": "Stepping one iteration of", "resume": "Continuing"}[command]
        return Line(f"{verb} {who}.", "bold")

    def resume_hint(self, benchmark_id: str | None) -> str:
        """How the run in progress can be finished later: its benchmark id and the key or command."""
        if benchmark_id is None:
            return ""
        benchmark_id = self.redact.ident(benchmark_id)  # as every id on screen
        return (f" Benchmark {benchmark_id} can be finished later: History (h), select it, press u (resume); or "
                f"headless: corral-tui --batch SPEC --resume {benchmark_id}.")

    # --- what the engine reports ----------------------------------------------------------------

    def events(self, events: Iterable[Event], undelivered: Iterable[tuple[str, str]],
               breakpoints: Iterable[BreakpointHitEvent]) -> Said:
        """What one drained batch says: interventions that never reached their trial, breakpoints that
        held, a store that refused writes (the run is stopping), a benchmark another process took."""
        lines: list[Line] = []
        alerts: list[Alert] = []
        for trial_id, text in undelivered:
            who = self.redact.ident(trial_id)
            lines.append(Line(f"Intervention NOT delivered to trial {who}: it ended before its next LLM call. "
                              f"\"{text[:60]}\" is recorded in its timeline as undelivered.", "bold red"))
            alerts.append(Alert(f"Trial {who} ended before reading your intervention; it was not delivered.",
                                "Intervention not delivered", "error", 10))
        for hit in breakpoints:
            alerts.append(self._breakpoint(hit))
        for event in events:
            if event.kind is EventKind.STORE_FAILED:
                if self.state.live:
                    self.state = WorkbenchState.STORE_FAILED
                error = str(event.data.get("error") or "the database refused a write")
                text = f"The store refused writes, so the run was stopped: {error} Its recorded trials are kept."
                lines.append(Line(text))
                alerts.append(Alert(text, "Store failed", "error", 30))
            elif event.kind is EventKind.OWNERSHIP_LOST:
                text = (f"Benchmark {event.benchmark_id} was taken over by another process (this run was silent "
                        "past its heartbeat), so this run stopped and wrote nothing more; the other process "
                        "finishes it.")
                lines.append(Line(text))
                alerts.append(Alert(text, "Lost ownership", "error", 30))
        return Said(tuple(lines), tuple(alerts))

    def _breakpoint(self, hit: BreakpointHitEvent) -> Alert:
        """A breakpoint held: which trial waits, why, and how to go on."""
        who, data = self.redact.ident(hit.trial_id or ""), hit.data
        action = "paused: select it and press c to continue or s to step" if data.get("paused") else "recorded"
        return Alert(f"Trial {who} ({hit.task_id}): {data.get('reason')}; {action}.",
                     f"Breakpoint {data.get('breakpoint')}", "warning", 10)

    # --- the end --------------------------------------------------------------------------------

    def finished(self, summary: RunSummary, live: LiveRun) -> Line:
        """The run ended on its own terms (finished, interrupted, ...): its state and its finish line."""
        self.state = WorkbenchState(summary.status)  # the model stays: the header names it until the next run
        self.last_benchmark_id = summary.benchmark_id
        undelivered = len(live.undelivered)
        lost = f" {undelivered} intervention(s) NOT delivered (their trials ended first; see the timelines)." \
            if undelivered else ""
        if summary.fork_of is not None:
            return Line(f"Fork of trial {self.redact.ident(summary.fork_of)} {summary.status}. Enter opens its "
                        f"timeline; v there shows it beside its parent from the fork point.{lost}",
                        "bold red" if undelivered else "")
        tokens, cost = live.totals()
        return Line(f"Run {summary.status}: {headline(summary, live.trials.values())}; {summary.trials_run} trials, "
                    f"{summary.errored} errored; tokens {format_tokens(tokens)}, cost {format_cost(cost)}.{lost} "
                    "m compares the arms.", "bold red" if undelivered or summary.errored else "")

    def failed(self, error: BaseException | None) -> Line:
        """The run's worker raised: the run is over, the form can be corrected and run again."""
        self.state = WorkbenchState.FAILED
        why = error.problem.rstrip(".") if isinstance(error, UserError) and len(error.errors) == 1 \
            else "see the message"
        return Line(f"The run did not go through ({why}): correct the form and press r.", "bold red")
