"""The approval dialog: a confirm-level tool call waits for a person (posting's ConfirmationModal shape).

Shows the task, the asking trial and its iteration, the model's last thought before the call, the
tool, its risk, the pretty arguments and the time left. The answer is a `Decision` through
`dismiss`: approve (y), reject (n, with the reason typed in the field; Enter there rejects too),
approve this tool for the rest of the run (w), end the trial (t), or None for "later" (escape: the
request stays queued; `a` on the workbench reopens it).

The dialog's letters mean nothing on the workbench, and for `grace` seconds after it opens it
takes no keys at all, so keys meant for the screen behind never answer a dialog that popped up
under the operator's fingers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
from corral_tui.services.approvals import Decision, Verdict

THOUGHT_CHARS = 300
BUTTONS = (("approve", "Approve (y)", "success"), ("reject", "Reject (n)", "error"),
           ("approve_tool", "Approve tool for run (w)", "warning"), ("terminate", "End trial (t)", "default"))


@dataclass(frozen=True)
class AskingTrial:
    """What the workbench knows about the trial that asks (from its live events)."""

    iteration: int | None = None  # 1-based
    last_thought: str = ""


class ApprovalScreen(ModalScreen[Decision | None]):
    """Approve or reject one pending tool call."""

    BINDINGS = [
        Binding("y", "decide('approve')", "Approve", id="approval.approve"),
        Binding("n", "decide('reject')", "Reject (with the reason typed)", id="approval.reject"),
        Binding("w", "decide('approve_tool')", "Approve tool for the whole run", id="approval.approve_tool"),
        Binding("t", "decide('terminate')", "End the asking trial", id="approval.terminate"),
        Binding("escape", "later", "Later", id="approval.later"),
    ]

    def __init__(self, request: ApprovalRequest, *, clock: Callable[[], float], redact: Redactor,
                 pending: int = 1, asking: AskingTrial | None = None, grace: float = 0.0) -> None:
        super().__init__()
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
            yield Input(placeholder="Reason for a rejection (optional; Enter rejects)", id="approval-reason",
                        compact=True)
            yield Label("", id="approval-countdown")
            with Horizontal(classes="buttons"):
                for button_id, label, variant in BUTTONS:
                    yield Button(label, id=button_id, variant=variant, disabled=not self.armed)  # type: ignore[arg-type]

    def on_mount(self) -> None:
        self._tick()
        self.set_interval(0.5, self._tick)
        if self.armed:
            self.query_one("#reject", Button).focus()  # the safe default, as in posting's dialog
        else:
            self.set_timer(self.grace, self.arm)

    def arm(self) -> None:
        """Start taking keys: enable the buttons and focus the safe default (Reject)."""
        self.armed = True
        for button in self.query(Button):
            button.disabled = False
        if not isinstance(self.focused, Input):  # the operator may be typing a reason already
            self.query_one("#reject", Button).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("decide", "later") and not self.armed:
            return None
        if action == "decide" and isinstance(self.focused, Input):
            return None  # the reason field types letters
        return True

    def _tick(self) -> None:
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
            self.dismiss(self._decision(Verdict(str(event.button.id))))

    @on(Input.Submitted, "#approval-reason")
    def _reason_entered(self, event: Input.Submitted) -> None:
        event.stop()
        if self.armed:
            self.dismiss(self._decision(Verdict.REJECT))

    def action_decide(self, verdict: str) -> None:
        self.dismiss(self._decision(Verdict(verdict)))

    def action_later(self) -> None:
        self.dismiss(None)
