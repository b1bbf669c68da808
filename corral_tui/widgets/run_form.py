"""The run form: agent, model, verbosity arms, trials, parallel, surrender, approval, start paused."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, Label, Select

from corral_tui.run_request import (
    AGENT_TYPES,
    APPROVAL_POLICIES,
    RunRequest,
    parse_count,
    parse_verbosities,
    split_list,
)


class RunForm(Vertical):
    """Builds a `RunRequest` for the selected suite; Start (or `r`) posts `RunForm.Submitted`."""

    class Submitted(Message):
        def __init__(self, request: RunRequest) -> None:
            super().__init__()
            self.request = request

    class Invalid(Message):
        def __init__(self, problem: str) -> None:
            super().__init__()
            self.problem = problem

    def __init__(self, *, model: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.suite: str | None = None
        self.default_model = model
        self.border_title = "Run"

    def compose(self) -> ComposeResult:
        with Grid(id="form-grid"):
            yield Label("Suite")
            yield Label("-", id="form-suite")
            yield Label("Tasks")
            yield Input(placeholder="all (or: add, power)", id="form-tasks", compact=True)
            yield Label("Agent")
            yield Select([(name, name) for name in AGENT_TYPES], value="react", allow_blank=False,
                         id="form-agent", compact=True)
            yield Label("Max iterations")
            yield Input("10", id="form-iterations", type="integer", compact=True)
            yield Label("Model")
            yield Input(self.default_model or "", placeholder="scripted/<suite script>", id="form-model",
                        compact=True)
            yield Label("Arms (verbosity)")
            yield Input("full", placeholder="e.g. minimal, brief, full", id="form-arms", compact=True)
            yield Label("Trials per task")
            yield Input("1", id="form-trials", type="integer", compact=True)
            yield Label("Parallel")
            yield Input("1", id="form-parallel", type="integer", compact=True)
            yield Label("Approval")
            yield Select([(name, name) for name in APPROVAL_POLICIES], value="ask", allow_blank=False,
                         id="form-approval", compact=True)
        with Horizontal(id="form-flags"):
            yield Checkbox("Surrender", id="form-surrender", compact=True)
            yield Checkbox("Start paused", id="form-paused", compact=True)
        yield Button("Start run (r)", id="form-start", variant="primary", compact=True)

    def set_suite(self, suite: str) -> None:
        self.suite = suite
        self.query_one("#form-suite", Label).update(suite)

    def set_values(self, **values: object) -> None:
        """Fill fields by name (tasks, model, arms, trials, parallel, iterations, agent, approval,
        surrender, paused): for tests and the command palette."""
        for name, value in values.items():
            widget = self.query_one(f"#form-{name}")
            if isinstance(widget, Input):
                widget.value = str(value)
            elif isinstance(widget, (Select, Checkbox)):
                widget.value = value
            else:
                raise KeyError(name)

    def request(self) -> RunRequest:
        """The form's values as a RunRequest; ValueError says which field is wrong and why."""
        if self.suite is None:
            raise ValueError("pick a suite (or one of its tasks) in the tree first")
        text = {name: self.query_one(f"#form-{name}", Input).value
                for name in ("tasks", "iterations", "model", "arms", "trials", "parallel")}
        return RunRequest(
            suite=self.suite,
            tasks=split_list(text["tasks"]) or None,
            agent=str(self.query_one("#form-agent", Select).value),
            max_iterations=parse_count(text["iterations"], "max iterations", 1, 1000),
            model=text["model"].strip() or None,
            verbosities=parse_verbosities(text["arms"]),
            trials=parse_count(text["trials"], "trials per task"),
            parallel=parse_count(text["parallel"], "parallel", 1, 64),
            surrender=self.query_one("#form-surrender", Checkbox).value,
            approval=str(self.query_one("#form-approval", Select).value),
            start_paused=self.query_one("#form-paused", Checkbox).value,
        )

    def submit(self) -> None:
        try:
            request = self.request()
        except ValueError as exc:
            self.post_message(self.Invalid(str(exc)))
            return
        self.post_message(self.Submitted(request))

    @on(Button.Pressed, "#form-start")
    def _start(self, event: Button.Pressed) -> None:
        event.stop()
        self.submit()

    @on(Input.Submitted)
    def _enter(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()
