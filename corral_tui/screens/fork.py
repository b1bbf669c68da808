"""Forking a trial: the dialog that picks the fork point (and an intervention), and a fork beside its
parent from the fork point on, two stored timelines side by side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Header, Input, Label, RichLog, Static, TextArea

from corral_tui.config import Redactor
from corral_tui.render import clip, format_score
from corral_tui.screens.base import QueryScreen
from corral_tui.screens.timeline import entry_renderable
from corral_tui.widgets.fields import Field, FieldArea

if TYPE_CHECKING:
    from corral_core.store import TimelineEntry, TrialInfo
    from corral_tui.services.queries import ForkView, StoreQueries


@dataclass(frozen=True)
class ForkChoice:
    iteration: int  # 0-based
    intervention: str | None


class ForkScreen(ModalScreen[ForkChoice | None]):
    """Pick the iteration a fork goes live at (1-based in the field) and, optionally, an intervention."""

    BINDINGS = [
        Binding("ctrl+s", "fork", "Fork", id="fork.start"),
        Binding("escape", "cancel", "Cancel", id="fork.cancel"),
    ]

    def __init__(self, trial_label: str, iterations: int) -> None:
        super().__init__()
        self.trial_label = trial_label
        self.iterations = iterations

    def compose(self) -> ComposeResult:
        with Vertical(id="fork-dialog", classes="dialog"):
            yield Label(Text.assemble(("Fork trial ", "bold"), (self.trial_label, "bold cyan")))
            yield Static(Text("Iterations before the one you pick are replayed from the recording (same LLM "
                              "answers, same tool results); from it on the trial's own model runs live. The "
                              "fork is a new trial, marked assisted.", style="dim"))
            yield Field(str(self.iterations), id="fork-iteration", type="integer",
                        placeholder=f"iteration to go live at, 1 to {self.iterations}")
            yield FieldArea("", id="fork-intervention", soft_wrap=True, show_line_numbers=False,
                           placeholder="Intervention the agent reads at that point (optional)")
            yield Label("", classes="dialog-note")
            with Horizontal(classes="buttons"):
                yield Button("Fork (ctrl+s)", id="fork", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#fork-iteration", Input).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_fork() if event.button.id == "fork" else self.action_cancel()

    @on(Input.Submitted, "#fork-iteration")
    def _iteration_entered(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#fork-intervention", TextArea).focus()

    def action_fork(self) -> None:
        text = self.query_one("#fork-iteration", Input).value.strip()
        number = int(text) if text.lstrip("-").isdigit() else 0
        if not 1 <= number <= self.iterations:
            self.notify(f"Pick an iteration from 1 to {self.iterations}.", severity="warning")
            return
        intervention = self.query_one("#fork-intervention", TextArea).text.strip()
        self.dismiss(ForkChoice(number - 1, intervention or None))

    def action_cancel(self) -> None:
        self.dismiss(None)


def side_log(log_id: str) -> RichLog:
    """One side's log: it opens at the fork point (no scrolling to the end) and wraps at half the screen."""
    return RichLog(id=log_id, wrap=True, markup=False, highlight=False, auto_scroll=False, min_width=20)


class ForkViewLoaded(Message):
    def __init__(self, view: ForkView | None) -> None:
        super().__init__()
        self.view = view


class ForkViewScreen(QueryScreen):
    """A fork and its parent side by side, each from the fork point on."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="fork_view.back")]

    def __init__(self, trial_id: str, queries: StoreQueries, redact: Redactor) -> None:
        super().__init__()
        self.trial_id = trial_id
        self.queries = queries
        self.redact = redact

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label(Text("Loading…", style="dim"), id="fork-title", classes="screen-title")
        with Horizontal(id="fork-sides"):
            with Vertical(classes="fork-side"):
                yield Static("", id="parent-head", classes="fork-head")
                yield side_log("parent-log")
            with Vertical(classes="fork-side"):
                yield Static("", id="fork-head", classes="fork-head")
                yield side_log("fork-log")
        yield Footer()

    def on_mount(self) -> None:
        trial_id = self.trial_id
        self.ask(lambda: self.queries.fork_view(trial_id), ForkViewLoaded)

    @on(ForkViewLoaded)
    def _loaded(self, message: ForkViewLoaded) -> None:
        message.stop()
        view, redact = message.view, self.redact
        title = self.query_one("#fork-title", Label)
        if view is None:
            title.update(Text(f"Trial {redact.ident(self.trial_id)} is not a fork.", style="bold red"))
            return
        said = f"  intervention: {clip(view.intervention, 70)}" if view.intervention else "  no intervention"
        title.update(Text.assemble(("Fork ", "bold"), (redact.ident(view.fork.id), "bold cyan"), " of ",
                                   (redact.ident(view.fork.parent_trial_id), "bold cyan"),
                                   f"  from iteration {view.iteration + 1}", (said, "magenta")))
        self._side("parent", view.parent, view.parent_entries)
        self._side("fork", view.fork, view.fork_entries)
        self.query_one("#fork-log", RichLog).focus()

    def _side(self, side: str, trial: TrialInfo | None, entries: list[TimelineEntry]) -> None:
        head = self.query_one(f"#{side}-head", Static)
        if trial is None:
            head.update(Text(f"{side}: not in the store", style="dim"))
            return
        head.update(Text.assemble((f"{side.capitalize()} ", "bold"), (self.redact.ident(trial.id), "bold cyan"),
                                  f"  {trial.status}  score {format_score(trial.score)}\nanswer ",
                                  (clip(trial.answer, 30) if trial.answer is not None else "-", "bold"),
                                  f"  after {trial.iterations} iterations"))
        log = self.query_one(f"#{side}-log", RichLog)
        log.clear()
        for entry in entries:
            log.write(entry_renderable(entry, self.redact))
        if not entries:
            log.write(Text("nothing recorded from the fork point on", style="dim"))
