"""One trial's full timeline: messages, tool calls, hook events, approvals and interventions in time
order, under a header with the trial's outcome: its answer, the task's expected answer and the
scorer's explanation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Footer, Header, Label, RichLog, Static

from corral_tui.config import Redactor
from corral_tui.messages import ForkRequested, ForkViewRequested
from corral_tui.render import clip, format_score, timeline_item
from corral_tui.screens.base import QueryScreen

if TYPE_CHECKING:
    from corral_core.store import TimelineEntry, TrialInfo
    from corral_tui.services.queries import StoreQueries, TrialTimeline

MAX_ENTRIES = 2_000  # a trial longer than this shows its last entries (the export has them all)
KIND_STYLES = {"message": "green", "tool_call": "yellow", "llm_call": "dim", "approval_asked": "bold yellow",
               "approval_decided": "bold yellow", "intervention_applied": "bold magenta", "hook_fired": "cyan",
               "hook_error": "red", "trial_started": "bold", "trial_finished": "bold"}


class TimelineLoaded(Message):
    def __init__(self, timeline: TrialTimeline) -> None:
        super().__init__()
        self.timeline = timeline


class TimelineScreen(QueryScreen):
    """The stored timeline of one trial."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="timeline.back"),
        Binding("f", "fork", "Fork from an iteration", id="timeline.fork"),
        Binding("v", "beside_parent", "Fork beside its parent", id="timeline.beside_parent"),
    ]

    def __init__(self, trial_id: str, queries: StoreQueries, redact: Redactor) -> None:
        super().__init__()
        self.trial_id = trial_id
        self.queries = queries
        self.redact = redact
        self.trial: TrialInfo | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label(Text.assemble(("Trial ", "bold"), (self.redact.ident(self.trial_id), "bold cyan")),
                    id="timeline-title", classes="screen-title")
        yield Static("", id="timeline-outcome")
        yield RichLog(id="timeline", wrap=True, markup=False, highlight=False, max_lines=MAX_ENTRIES * 8)
        yield Label(Text("Loading…", style="dim"), id="page-info")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(RichLog).focus()
        trial_id = self.trial_id
        self.ask(lambda: self.queries.timeline(trial_id), TimelineLoaded)

    @on(TimelineLoaded)
    def _loaded(self, message: TimelineLoaded) -> None:
        message.stop()
        timeline = message.timeline
        trial, redact = timeline.trial, self.redact
        self.trial = trial
        self.refresh_bindings()
        if trial is not None:
            self.query_one("#timeline-title", Label).update(Text.assemble(
                ("Trial ", "bold"), (redact.ident(trial.id), "bold cyan"),
                f"  {trial.task_id} trial {trial.trial_index + 1}  arm {trial.arm}  ", (trial.status, "bold"),
                f"  score {format_score(trial.score)}", ("  assisted" if trial.assisted else "", "magenta"),
                (f"  fork of {redact.ident(trial.parent_trial_id)} at iteration {(trial.fork_iteration or 0) + 1}"
                 if trial.parent_trial_id else "", "magenta")))
            self.query_one("#timeline-outcome", Static).update(outcome_text(timeline))
        entries = timeline.entries
        log = self.query_one(RichLog)
        log.clear()
        shown = entries[-MAX_ENTRIES:]
        if len(entries) > len(shown):
            log.write(Text(f"… {len(entries) - len(shown)} earlier entries not shown", style="dim"))
        for entry in shown:
            log.write(entry_renderable(entry, redact))
        self.query_one("#page-info", Label).update(f"{len(entries)} entries")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`v` is offered only on a fork's timeline."""
        if action == "beside_parent":
            return self.trial is not None and self.trial.parent_trial_id is not None
        return True

    def action_fork(self) -> None:
        trial = self.trial
        if trial is None or not trial.iterations:
            self.notify("This trial has no iteration to fork from.", severity="warning")
            return
        self.post_message(ForkRequested(trial.id, trial.iterations))

    def action_beside_parent(self) -> None:
        if self.trial is not None:
            self.post_message(ForkViewRequested(self.trial.id))


def entry_renderable(entry: TimelineEntry, redact: Redactor) -> Group:
    """One timeline entry: its time and kind, then the entry drawn as the live panes draw it."""
    stamp = Text.assemble((redact.timestamp(entry.ts)[11:], "dim"), "  ",
                          (entry.kind.replace("_", " "), KIND_STYLES.get(entry.kind, "")))
    return Group(stamp, timeline_item(entry.kind, entry.summary, entry.data, redact))


def outcome_text(timeline: TrialTimeline) -> Text:
    """Answer vs expected answer, and what the scorer said (or the error)."""
    trial = timeline.trial
    text = Text()
    if trial is None:
        return text
    text.append("Answer ", style="dim")
    text.append(clip(trial.answer, 80) if trial.answer is not None else "-", style="bold")
    text.append("   Expected ", style="dim")
    if timeline.expected is not None:
        text.append(clip(timeline.expected, 80), style="bold green")
    else:
        text.append("- (the task names none: its grader decides)" if timeline.suite_known
                    else "- (its suite file is not found)", style="dim")
    text.append("\nScorer ", style="dim")
    text.append(clip(trial.explanation, 220) if trial.explanation else "-")
    if trial.error:
        text.append("\nError ", style="dim")
        text.append(clip(trial.error, 220), style="red")
    return text
