"""The approval dialog: a confirm-level tool call waits for a person (posting's ConfirmationModal shape).

Shows the task, the asking trial and its iteration, the model's last thought before the call, the
tool, its risk, the pretty arguments and the time left. The answer is a `Decision` through
`dismiss`: approve, reject (with the reason typed in the field), approve this tool for the rest of
the run, end the trial (after a confirmation, unless `confirm_end` is off), or None for "later"
(escape: the request stays queued; `a` on the workbench reopens it).

Text first: the dialog opens with the reason field focused, and the field takes every letter typed
into it. Decisions are taken by chords that work anywhere in the dialog (Enter in the field rejects
with the reason, ctrl+y approves, ctrl+r approves the tool for the run, ctrl+t ends the trial), or
by the letters shown on the buttons (y n w t) once the focus is on the buttons and the field is
empty. For `grace` seconds after it opens the dialog takes no decision at all, so keys meant for
the screen behind never answer a dialog that popped up under the operator's fingers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from corral_core.env.approval import ApprovalRequest
from corral_tui.config import Redactor
from corral_tui.render import clip, json_block
from corral_tui.screens.dialogs import ConfirmScreen
from corral_tui.services.approvals import Decision, Verdict
from corral_tui.widgets.fields import Field

THOUGHT_CHARS = 300
BUTTONS = (("approve", "Approve (y)", "success"), ("reject", "Reject (n)", "error"),
           ("approve_tool", "Tool for run (w)", "warning"), ("terminate", "End trial (t)", "default"))
CHORDS_HINT = ("Enter rejects with the reason  ·  ctrl+y approve  ·  ctrl+r approve the tool for the run  ·  "
               "ctrl+t end the trial  ·  esc later  ·  Tab to the buttons: y n w t")


@dataclass(frozen=True)
class AskingTrial:
    """What the workbench knows about the trial that asks (from its live events)."""

    iteration: int | None = None  # 1-based
    last_thought: str = ""


class ApprovalScreen(ModalScreen[Decision | None]):
    """Approve or reject one pending tool call."""

    BINDINGS = [
        Binding("y", "letter('approve')", "Approve (on the buttons, empty reason)", id="approval.approve"),
        Binding("n", "letter('reject')", "Reject (on the buttons, with the reason typed)", id="approval.reject"),
        Binding("w", "letter('approve_tool')", "Approve tool for the whole run (on the buttons, empty reason)",
                id="approval.approve_tool"),
        Binding("t", "letter('terminate')", "End the asking trial (on the buttons, empty reason)",
                id="approval.terminate"),
        Binding("ctrl+y", "decide('approve')", "Approve", id="approval.approve_chord"),
        Binding("ctrl+r", "decide('approve_tool')", "Approve tool for the whole run", id="approval.approve_tool_chord"),
        Binding("ctrl+t", "decide('terminate')", "End the asking trial", id="approval.terminate_chord"),
        Binding("escape", "later", "Later", id="approval.later"),
    ]
    AUTO_FOCUS = "#approval-reason"

    def __init__(self, request: ApprovalRequest, *, clock: Callable[[], float], redact: Redactor,
                 pending: int = 1, asking: AskingTrial | None = None, grace: float = 0.0,
                 confirm_end: bool = True) -> None:
        super().__init__()
        self.confirm_end = confirm_end  # ending the trial asks first
        self.request = request
        self.clock = clock
        self.redact = redact
        self.pending = pending  # requests waiting, this one included
        self.asking = asking or AskingTrial()
        self.grace = grace
        self.armed = grace <= 0  # takes keys (after the grace period)

    def compose(self) -> ComposeResult:
        request, asking = self.request, self.asking
        with Vertical(id="approval-dialog", classes="dialog"):
            yield Label(Text("Approval needed: a confirm-level tool wants to run", style="bold"), id="approval-title")
            facts = Table.grid(padding=(0, 2))
            facts.add_column(style="dim")
            facts.add_column()
            facts.add_row("Task", request.task_id or "-")
            iteration = f"  at iteration {asking.iteration}" if asking.iteration else ""
            facts.add_row("Trial", Text.assemble(self.redact.ident(request.trial_id), (iteration, "dim")))
            facts.add_row("Tool", Text(request.tool_name, style="bold"))
            facts.add_row("Risk", Text(request.risk, style="bold yellow"))
            facts.add_row("Last thought", Text(clip(asking.last_thought, THOUGHT_CHARS) or "-", style="italic"))
            yield Static(facts, id="approval-facts")
            yield Label("Arguments", classes="section")
            with VerticalScroll(id="approval-args"):
                yield Static(json_block(request.arguments or {}))
            yield Field(placeholder="Reason for a rejection (optional; Enter rejects)", id="approval-reason",
                        compact=True)
            yield Label(Text(CHORDS_HINT, style="dim"), id="approval-keys")
            yield Label("", id="approval-countdown")
            yield Label("", classes="dialog-note")
            with Horizontal(classes="buttons"):
                for button_id, label, variant in BUTTONS:
                    yield Button(label, id=button_id, variant=variant, disabled=not self.armed)  # type: ignore[arg-type]

    def on_mount(self) -> None:
        self._tick()
        self.set_interval(0.5, self._tick)
        self.query_one("#approval-reason", Input).focus()  # text first: whatever is typed lands here
        if not self.armed:
            self.set_timer(self.grace, self.arm)

    def arm(self) -> None:
        """Start taking decisions: enable the buttons (the focus stays where it is)."""
        self.armed = True
        for button in self.query(Button):
            button.disabled = False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("decide", "letter", "later") and not self.armed:
            return None
        return True

    def action_letter(self, verdict: str) -> None:
        """A button's letter: it decides only with the focus on the buttons and the reason field empty
        (in the field the letter is typed; with a reason written, a letter would drop or misuse it)."""
        reason = self.query_one("#approval-reason", Input)
        if self.focused is reason:
            return  # never reached: the field takes printable keys before any binding
        if reason.value.strip() and verdict != "reject":
            self.notify("A reason is written: Enter in the field (or n) rejects with it; ctrl+y approves anyway.",
                        severity="warning")
            return
        self.action_decide(verdict)

    def _tick(self) -> None:
        if not self.query("#approval-countdown"):  # counted before the dialog is composed (the inbox changed
            return  # as it opened)
        left = max(0.0, self.request.deadline - self.clock())
        queued = self.pending - 1
        more = f"   ·   {queued} more pending" if queued > 0 else ""
        style = "bold red" if left < 10 else "bold"
        self.query_one("#approval-countdown", Label).update(
            Text.assemble(("Time left: ", "dim"), (f"{left:.0f} s", style), ("  (then it is rejected)", "dim"),
                          (more, "bold yellow")))

    def set_pending(self, pending: int) -> None:
        self.pending = pending
        self._tick()

    def _decision(self, verdict: Verdict) -> Decision:
        reason = self.query_one("#approval-reason", Input).value.strip()
        if verdict is Verdict.TERMINATE:
            reason = reason or "the operator ended the trial"
        return Decision(verdict, reason if verdict in (Verdict.REJECT, Verdict.TERMINATE) else "")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if self.armed:
            self.action_decide(str(event.button.id))

    @on(Input.Submitted, "#approval-reason")
    def _reason_entered(self, event: Input.Submitted) -> None:
        event.stop()
        if self.armed:
            self.action_decide(Verdict.REJECT.value)

    def action_decide(self, verdict: str) -> None:
        decision = self._decision(Verdict(verdict))
        if decision.verdict is not Verdict.TERMINATE or not self.confirm_end:
            self.dismiss(decision)
            return
        who = self.redact.ident(self.request.trial_id)
        self.app.push_screen(ConfirmScreen(f"End trial {who}?", f"The asking call is rejected and trial {who} "
                                           f"({self.request.task_id}) ends, scored cancelled. The other trials go "
                                           "on.", yes="End trial (y)", no="Back (n)"),
                             callback=partial(self._end_confirmed, decision))

    def _end_confirmed(self, decision: Decision, yes: bool | None) -> None:
        if yes:
            self.dismiss(decision)

    def action_later(self) -> None:
        self.dismiss(None)
