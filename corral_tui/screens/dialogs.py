"""Small modal dialogs: send an intervention, set a run's breakpoints, confirm, show an error, list the
key bindings."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

from corral_tui.widgets.fields import Field, FieldArea
from corral_tui.widgets.suggest import BreakpointSuggester


class InterventionScreen(ModalScreen[str | None]):
    """Write a message for a running trial; it reaches the model before its next LLM call."""

    BINDINGS = [
        Binding("ctrl+s", "send", "Send", id="intervention.send"),
        Binding("escape", "cancel", "Cancel", id="intervention.cancel"),
    ]

    def __init__(self, trial_label: str, text: str = "") -> None:
        super().__init__()
        self.trial_label = trial_label
        self.initial = text

    def compose(self) -> ComposeResult:
        with Vertical(id="intervention-dialog", classes="dialog"):
            yield Label(Text.assemble(("Intervene in ", "bold"), (self.trial_label, "bold cyan")))
            yield Static(Text("The message reaches the agent before its next LLM call; the trial is marked "
                              "assisted.", style="dim"))
            yield FieldArea(self.initial, id="intervention-text", soft_wrap=True, show_line_numbers=False)
            yield Label("", classes="dialog-note")
            with Horizontal(classes="buttons"):
                yield Button("Send (ctrl+s)", id="send", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_send() if event.button.id == "send" else self.action_cancel()

    def action_send(self) -> None:
        text = self.query_one(TextArea).text.strip()
        if not text:
            self.notify("Write a message first (or press escape).", severity="warning")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class BreakpointsScreen(ModalScreen[str | None]):
    """Change the breakpoints of the run in progress; answers their text (`;`-separated, checked)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="breakpoints.cancel")]

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.initial = text

    def compose(self) -> ComposeResult:
        # the agents package: when asked, not before the first frame
        from corral_core.agents.breakpoints import breakpoint_syntax

        with Vertical(id="breakpoints-dialog", classes="dialog"):
            yield Label(Text("Breakpoints of this run", style="bold"))
            yield Static(Text(f"Separated by ';': {breakpoint_syntax()}. A hit pauses the trial where it happens; c "
                              "continues it, s steps. Running trials check the new ones from their next check "
                              "on; an empty field removes them all.", style="dim"))
            yield Field(self.initial, placeholder="e.g. tool:calculator; tokens>2000", id="breakpoints-text",
                        suggester=BreakpointSuggester())
            yield Label("", classes="dialog-note")
            with Horizontal(classes="buttons"):
                yield Button("Set (enter)", id="set", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_set() if event.button.id == "set" else self.action_cancel()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_set()

    def action_set(self) -> None:
        from corral_core.agents.breakpoints import parse_breakpoints

        try:
            points = parse_breakpoints(self.query_one(Input).value)
        except ValueError as exc:
            self.notify(str(exc), title="Breakpoints", severity="error")
            return
        self.dismiss("; ".join(str(point) for point in points))

    def action_cancel(self) -> None:
        self.dismiss(None)


class SpecFileScreen(ModalScreen[str | None]):
    """Ask for a `.bench.yaml` path to open into the run form or to save the form as. `act(path)` does it
    and answers None, or the problem (a bad file, as `--batch` words it): the problem is shown here and
    the dialog stays open for another path. Dismissed with the path that worked, or None (Esc)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="specfile.cancel")]

    def __init__(self, verb: str, act: Callable[[str], str | None], path: str = "") -> None:
        super().__init__()
        self.verb = verb
        self.act = act
        self.initial = path

    def compose(self) -> ComposeResult:
        with Vertical(id="specfile-dialog", classes="dialog"):
            yield Label(Text(f"{self.verb} a benchmark spec (.bench.yaml)", style="bold"))
            yield Static(Text("The file `corral-tui --batch FILE` runs; a path relative to the folder the "
                              "workbench started in.", style="dim"))
            yield Field(self.initial, placeholder="e.g. my-run.bench.yaml", id="specfile-path")
            with VerticalScroll(id="specfile-problem-box"):
                yield Static("", id="specfile-problem")
            yield Label("", classes="dialog-note")
            with Horizontal(classes="buttons"):
                yield Button(f"{self.verb} (enter)", id="specfile-go", variant="primary")
                yield Button("Cancel (esc)", id="specfile-cancel")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_go() if event.button.id == "specfile-go" else self.action_cancel()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_go()

    def action_go(self) -> None:
        path = self.query_one(Input).value.strip()
        problem = "Give the file's path." if not path else self.act(path)
        if problem is None:
            self.dismiss(path)
            return
        self.query_one("#specfile-problem", Static).update(Text(problem, style="bold red"))
        self.query_one("#specfile-problem-box").display = True
        self.query_one(Input).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question with the safe answer focused (posting's ConfirmationModal)."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", key_display="n / esc", id="confirm.no"),
    ]

    def __init__(self, title: str, message: str, yes: str = "Yes (y)", no: str = "No (n)") -> None:
        super().__init__()
        self.title_text = title
        self.message = message
        self.yes, self.no = yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="dialog"):
            yield Label(Text(self.title_text, style="bold"))
            yield Static(Text(self.message))
            with Horizontal(classes="buttons"):
                yield Button(self.yes, id="yes", variant="error")
                yield Button(self.no, id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ErrorScreen(ModalScreen[None]):
    """A problem in words (a user mistake) or a bug report (an unexpected exception)."""

    BINDINGS = [Binding("escape,enter", "close", "Close", key_display="esc / enter", id="error.close")]

    def __init__(self, title: str, message: str) -> None:
        super().__init__()
        self.title_text = title
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="error-dialog", classes="dialog"):
            yield Label(Text(self.title_text, style="bold red"))
            with VerticalScroll():
                yield Static(Text(self.message))
            with Horizontal(classes="buttons"):
                yield Button("Close", id="close", variant="primary")

    def on_mount(self) -> None:
        self.query_one(Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key binding of the app and of the screen below, with its id (for keymaps)."""

    BINDINGS = [Binding("escape,f1,question_mark,q", "close", "Close", key_display="esc / F1 / ? / q",
                        id="help.close")]

    def __init__(self, rows: list[tuple[str, str, str, str]]) -> None:
        super().__init__()
        self.rows = rows  # (where, key, description, id)

    def compose(self) -> ComposeResult:
        table = Table(title="Key bindings", expand=True, header_style="bold", show_edge=False)
        for column in ("Where", "Key", "Action", "Binding id"):
            table.add_column(column)
        for where, key, description, binding_id in self.rows:
            table.add_row(where, Text(key, style="bold cyan"), description, Text(binding_id, style="dim"))
        with Vertical(id="help-dialog", classes="dialog"):
            with VerticalScroll():
                yield Static(table, id="help-table")
            yield Label(Text("ctrl+p opens the command palette with every action.  escape closes this.",
                             style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)
