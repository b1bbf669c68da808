"""The approval dialog: a confirm-level tool call waits for a person (posting's ConfirmationModal shape).

Shows task, trial, tool, risk, the pretty arguments and the time left, counting down. The result
is a `Decision` through `dismiss`: approve (a / y), reject (r / n), approve this tool for the rest of
the run (A), or None for "later" (escape: the request stays queued, `a` on the workbench reopens).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from corral_core.env.approval import ApprovalRequest
from corral_tui.config import Redactor
from corral_tui.render import json_block
from corral_tui.services.approvals import Decision, Verdict


class ApprovalScreen(ModalScreen[Decision | None]):
    """Approve or reject one pending tool call."""

    BINDINGS = [
        Binding("a,y", "decide('approve')", "Approve", id="approval.approve"),
        Binding("r,n", "decide('reject')", "Reject", id="approval.reject"),
        Binding("A,shift+a", "decide('approve_tool')", "Approve tool for run", key_display="A",
                id="approval.approve_tool"),
        Binding("escape", "later", "Later", id="approval.later"),
    ]

    def __init__(self, request: ApprovalRequest, *, clock: Callable[[], float], redact: Redactor,
                 pending: int = 1) -> None:
        super().__init__()
        self.request = request
        self.clock = clock
        self.redact = redact
        self.pending = pending  # requests waiting, this one included

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="approval-dialog", classes="dialog"):
            yield Label(Text("Approval needed: a confirm-level tool wants to run", style="bold"), id="approval-title")
            facts = Table.grid(padding=(0, 2))
            facts.add_column(style="dim")
            facts.add_column()
            facts.add_row("Task", request.task_id or "-")
            facts.add_row("Trial", self.redact.ident(request.trial_id))
            facts.add_row("Tool", Text(request.tool_name, style="bold"))
            facts.add_row("Risk", Text(request.risk, style="bold yellow"))
            yield Static(facts, id="approval-facts")
            yield Label("Arguments", classes="section")
            with VerticalScroll(id="approval-args"):
                yield Static(json_block(request.arguments or {}))
            yield Label("", id="approval-countdown")
            with Horizontal(classes="buttons"):
                yield Button("Approve (a)", id="approve", variant="success")
                yield Button("Reject (r)", id="reject", variant="error")
                yield Button("Approve tool for run (A)", id="approve_tool", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#reject", Button).focus()  # the safe default, as in posting's dialog
        self._tick()
        self.set_interval(0.5, self._tick)

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

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(Decision(Verdict(str(event.button.id))))

    def action_decide(self, verdict: str) -> None:
        self.dismiss(Decision(Verdict(verdict)))

    def action_later(self) -> None:
        self.dismiss(None)
