"""The workbench: suites and tasks, the run form, the running trials and the selected trial's panes.

Keys: a text field types every letter (`Esc` leaves the field; Enter there moves to the next field
and never starts a run). Outside text fields a letter acts only where what it acts on has the focus:
the trial keys (p s c P S C i k m) in the trials table or the selected trial's panes, `r` and `b` in the
run form (ctrl+r runs it from anywhere); elsewhere it only says where it works (docs/keys-and-layout.md
has the rule).
While a run is live the run form is locked and the trials table has the focus, so the run's keys
reach it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Header, Input, Select, Static, Tree

from corral_core.events import Event
from corral_tui.config import Redactor
from corral_tui.live import Changes, LiveRun
from corral_tui.messages import (
    BreakpointsRequested,
    ControlRequested,
    InterventionRequested,
    RunRequested,
    SpecFileRequested,
    StopRequested,
    TaskTextRequested,
    TimelineRequested,
    TrialCancelRequested,
)
from corral_tui.render import format_cost, format_tokens
from corral_tui.run_request import VERBOSITY_LEVELS
from corral_tui.screens.base import QueryScreen, apply_breakpoints, breakpoint_classes, laid_out_for
from corral_tui.screens.dialogs import ErrorScreen
from corral_tui.services.catalogue import SuiteView
from corral_tui.services.session import Command
from corral_tui.widgets.run_form import RunForm
from corral_tui.widgets.select import Choice
from corral_tui.widgets.status import FittingFooter, Info, InfoBar, RunBar, StatusLine
from corral_tui.widgets.task_tree import TaskRef, TaskTree
from corral_tui.widgets.trial_panes import TrialPanes
from corral_tui.widgets.trials_table import TrialsTable

if TYPE_CHECKING:
    from corral_tui.services.queries import StoreQueries


def _key(keys: str, action: str, description: str, binding_id: str, *, show: bool = True,
         key_display: str | None = None) -> Binding:
    return Binding(keys, action, description, show=show, key_display=key_display, priority=True, id=binding_id)


FIELD_CHORDS = frozenset({"leave_field", "open_spec", "save_spec", "run_anywhere"})  # chords a text field lets through


class StoredEvents(Message):
    """A trial's events, read from the store for its panes (its live buffer gave them up)."""

    def __init__(self, trial_id: str, events: list[Event]) -> None:
        super().__init__()
        self.trial_id = trial_id
        self.events = events


class WorkbenchScreen(QueryScreen):
    """The main screen. It draws what the app hands it and asks for everything else with messages."""

    BINDINGS = [
        _key("r", "start_run(False)", "Run", "workbench.run"),
        _key("ctrl+r", "run_anywhere", "Run the form (from anywhere)", "workbench.run_anywhere", show=False),
        _key("x", "stop_run", "Stop run", "workbench.stop"),
        _key("p", "control('pause')", "Pause", "workbench.pause"),
        _key("s", "control('step')", "Step", "workbench.step"),
        _key("c", "control('resume')", "Continue", "workbench.continue"),
        _key("P,shift+p", "control_all('pause')", "Pause all", "workbench.pause_all", show=False, key_display="P"),
        _key("S,shift+s", "control_all('step')", "Step all", "workbench.step_all", show=False, key_display="S"),
        _key("C,shift+c", "control_all('resume')", "Continue all", "workbench.continue_all", show=False,
             key_display="C"),
        _key("i", "intervene", "Intervene", "workbench.intervene"),
        _key("k", "cancel_trial", "End trial", "workbench.end_trial"),
        _key("a", "app.approvals", "Approvals", "workbench.approvals", show=False),
        _key("m", "app.compare_last", "Compare", "workbench.compare"),
        _key("b", "breakpoints", "Breakpoints (form / live run)", "workbench.breakpoints", show=False),
        _key("t", "next_pane", "Next pane tab", "workbench.next_pane", show=False),
        _key("v", "toggle_view", "Run form or trials (a short terminal shows one)", "workbench.toggle_view",
             show=False),
        _key("z", "maximize", "Maximise (esc back)", "workbench.maximize", show=False),
        _key("ctrl+o", "open_spec", "Open a .bench.yaml into the run form", "workbench.open_spec", show=False),
        _key("ctrl+s", "save_spec", "Save the run form as a .bench.yaml", "workbench.save_spec", show=False),
        Binding("escape", "leave_field", "Leave field", show=False, id="workbench.leave_field"),
    ]

    def __init__(self, live: LiveRun, redact: Redactor, queries: StoreQueries, *, clock: Callable[[], float],
                 default_model: str | None = None, default_api_base: str | None = None,
                 pane_lines: int = 1_000) -> None:
        super().__init__(id="workbench")
        self.live_run = live
        self.redact = redact
        self.queries = queries
        self.clock = clock
        self.default_model = default_model
        self.default_api_base = default_api_base
        self.pane_lines = pane_lines
        self.selected: TaskRef | None = None
        self.shown_task: tuple[str, str, str] | None = None  # (suite, task, verbosity) on display
        self.suites: dict[str, SuiteView] = {}
        self._info_bar: InfoBar | None = None
        self._info: Info | None = None  # the last info shown, kept for the bar's first frame
        self._resumed = False

    def compose(self) -> ComposeResult:
        apply_breakpoints(self, self.app.size)  # before the widgets are styled: the first frame is laid out once
        self._set_view_classes("form")  # likewise: set on mount, they restyled every widget and laid out again
        yield Header()
        self._info_bar = InfoBar(id="info")
        if self._info is not None:  # in the first frame: the app's own first update comes after it
            self._info_bar.show(self._info)
        yield self._info_bar
        with Horizontal(id="top"):
            yield TaskTree(id="tasks")
            with Vertical(id="task-view"):
                yield Choice([(level, level) for level in VERBOSITY_LEVELS], value="full", allow_blank=False,
                             id="verbosity", compact=True, prompt="verbosity")
                with VerticalScroll(id="task-scroll"):
                    yield Static(Text("Loading suites…", style="dim"), id="task-text")
            yield RunForm(model=self.default_model, api_base=self.default_api_base, id="run-form")
        with Horizontal(id="bottom"):
            yield TrialsTable(self.redact, id="trials")
            yield TrialPanes(self.redact, max_lines=self.pane_lines, id="panes")
        yield RunBar(id="run-bar")
        yield StatusLine("Starting the environment server…", id="status")
        yield FittingFooter()

    def on_resize(self, event: events.Resize) -> None:
        """A Resize to the size the screen is already laid out at, with its classes (Textual sends three
        after the first frame), changes nothing: Textual's handler would lay it all out again for each.
        Made short while a run is live, the screen shows the run's trials (as a run started short does)."""
        if laid_out_for(self, event.size):
            event.prevent_default()
        elif self.live and breakpoint_classes(self, event.size).get("-short") and self.run_is_live():
            self.set_view("trials")  # a run is live: a short terminal shows its trials, not the locked form

    def run_is_live(self) -> bool:
        """Whether the run form is locked for a live run."""
        return self.query_one("#form-start").disabled

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """The first resume comes as the screen's widgets have just been styled, each as it mounted:
        Textual's handler would style them all again before the first frame (needed on a later resume,
        when the theme or the classes may have changed behind a dialog)."""
        if not self._resumed:
            self._resumed = True
            event.refresh_styles = False

    @property
    def live(self) -> bool:
        """True while the widgets exist (not before compose, not while the app shuts down)."""
        info = self._info_bar  # not a DOM query: the drain asks 10 times a second
        return self.is_mounted and info is not None and info.is_attached

    def on_mount(self) -> None:
        self._focus_for_view("form")
        self.query_one("#task-view").border_title = "Task"
        self.query_one(TaskTree).border_title = "Suites"
        self.query_one(TrialPanes).border_title = "Selected trial"
        self.show_run_bar()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A text field types the workbench's letters (Esc leaves it): their bindings stand aside. The
        chords (ctrl+r, ctrl+o, ctrl+s) are no letters: they act from the form's fields too."""
        if action not in FIELD_CHORDS and isinstance(self.focused, Input):
            return None
        return True

    # --- what the app tells the screen --------------------------------------------------------

    def show_suites(self, suites: list[SuiteView]) -> None:
        self.suites = {suite.name: suite for suite in suites}
        tree = self.query_one(TaskTree)
        tree.show_suites(suites)
        tree.focus()
        tree.select_first_task()

    def select_suite(self, name: str) -> None:
        """Put the tree's cursor on suite `name` and the run form on it (an opened spec file's suite)."""
        self.query_one(TaskTree).select_suite(name)
        suite = self.suites.get(name)
        self.query_one(RunForm).set_suite(name, [t.id for t in suite.tasks] if suite else [])

    def show_info(self, info: Info) -> None:
        """Show `info` in the info bar (before the bar exists: in its first frame)."""
        self._info = info
        if self.live:
            self.query_one(InfoBar).show(info)

    def say(self, message: str, style: str = "", when_drawn: Callable[[], None] | None = None) -> None:
        self.query_one(StatusLine).say(message, style, when_drawn)

    def reset_run(self) -> None:
        self.query_one(TrialsTable).reset()
        self.query_one(TrialPanes).show(None)
        self.show_run_bar()

    def lock_form(self, locked: bool) -> None:
        """Lock the run form while a run is live (its keys must reach the run, not a field). The run's
        trials table takes the focus, so the arrows pick a trial and Enter opens its timeline; on a short
        terminal the trials take the form's place (v brings the form back)."""
        form = self.query_one(RunForm)
        if locked:
            if self.has_class("-short"):
                self.set_view("trials")
            self.query_one(TrialsTable).focus()
        form.set_locked(locked)

    def set_view(self, view: str) -> None:
        """"form": the suites, task and run form on top (on a short terminal, only them); "trials": the
        top row collapsed, the trials and the selected trial's panes take the height."""
        self._set_view_classes(view)
        self._focus_for_view(view)

    def _set_view_classes(self, view: str) -> None:
        self.update_classes({"-collapsed": view == "trials", "-setup": view == "form"})

    def _focus_for_view(self, view: str) -> None:
        focused = self.focused
        top = self.query_one("#top")
        if view == "trials" and focused is not None and top in focused.ancestors_with_self:
            self.query_one(TrialsTable).focus()
        elif view == "form" and self.has_class("-short"):
            self.query_one(TaskTree).focus()

    def apply_changes(self, live: LiveRun, changes: Changes) -> None:
        """Redraw what one drained batch changed: table rows, the selected trial's panes."""
        table = self.query_one(TrialsTable)
        was_empty = table.row_count == 0
        table.sync(live, changes, self.clock())
        panes = self.query_one(TrialPanes)
        if was_empty and table.row_count:
            self._select_trial(table.selected_trial())
        elif panes.trial_id in changes.events:
            panes.append(changes.events[panes.trial_id])
        if panes.trial_id in changes.rows:
            self._describe_selected()
        if changes.finished or changes.benchmark_finished or changes.benchmark_id:
            self.show_run_bar()

    def tick(self) -> None:
        """Once a second: the running trials' time, the run's elapsed time and ETA."""
        now = self.clock()
        self.query_one(TrialsTable).tick(self.live_run, now)
        self.show_run_bar(now)

    def show_run_bar(self, now: float | None = None) -> None:
        live, now = self.live_run, self.clock() if now is None else now
        eta = live.eta(now)
        tokens, cost = live.totals()
        self.query_one(RunBar).show(self.redact.duration(live.elapsed(now)),
                                    "-" if eta is None else self.redact.duration(eta), live.arm_scores(),
                                    format_tokens(tokens), format_cost(cost))

    def show_task_text(self, suite: str, task_id: str, verbosity: str, prompt: str, guide: str) -> None:
        if self.selected != TaskRef(suite, task_id):
            return
        task = next((t for t in self.suites[suite].tasks if t.id == task_id), None) if suite in self.suites else None
        notes = []
        if task is not None and task.depends_on:
            notes.append(Text(f"Chain link: gets the outputs of {', '.join(task.depends_on)}.", style="magenta"))
        if task is not None and not task.solvable:
            notes.append(Text("⊘ Declared unsolvable: surrendering is the right outcome.", style="yellow"))
        text = Group(*notes, Text("Prompt", style="bold underline"), Text(prompt), Text(""),
                     Text(f"Tools guide at verbosity {verbosity}", style="bold underline"), Text(guide))
        self.query_one("#task-text", Static).update(text)
        self.shown_task = (suite, task_id, verbosity)

    # --- reacting to the widgets ----------------------------------------------------------------

    @on(Tree.NodeHighlighted, "#tasks")
    def _task_highlighted(self, event: Tree.NodeHighlighted[TaskRef]) -> None:
        ref = event.node.data
        if ref is None:
            return
        self.selected = ref
        suite = self.suites.get(ref.suite)
        self.query_one(RunForm).set_suite(ref.suite, [t.id for t in suite.tasks] if suite else [])
        if ref.task_id is None:
            if suite is not None:
                chain = " → ".join(t.id for t in suite.tasks) if suite.chained else ""
                self.query_one("#task-text", Static).update(Group(
                    Text(suite.name, style="bold"), Text(suite.description or ""),
                    Text(f"{len(suite.tasks)} tasks; model scripted/{suite.script}" if suite.script
                         else f"{len(suite.tasks)} tasks"),
                    Text(f"chain: {chain}", style="magenta") if chain else Text("")))
            return
        self._request_task_text()

    @on(Select.Changed, "#verbosity")
    def _verbosity_changed(self) -> None:
        self._request_task_text()

    def _request_task_text(self) -> None:
        if self.selected is None or self.selected.task_id is None:
            return
        verbosity = str(self.query_one("#verbosity", Select).value)
        self.post_message(TaskTextRequested(self.selected.suite, self.selected.task_id, verbosity))

    @on(RunForm.Submitted)
    def _submitted(self, event: RunForm.Submitted) -> None:
        event.stop()
        self.post_message(RunRequested(event.request))

    @on(RunForm.Invalid)
    def _invalid(self, event: RunForm.Invalid) -> None:
        self.refuse("Cannot start the run", event.problem)

    def refuse(self, title: str, problem: str) -> None:
        """Say why an action on the run form was refused, in a dialog: what is typed next (a path for the
        spec file that was not asked for) reaches the dialog, never a binding; Enter or Esc closes it and
        the focus comes back where it was."""
        self.say(f"{title}: {problem}.", "bold red")
        self.app.push_screen(ErrorScreen(title, f"{problem}.\n\nCorrect the run form, then try again."))

    @on(DataTable.RowHighlighted, "#trials")
    def _trial_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._select_trial(event.row_key.value)

    @on(DataTable.RowSelected, "#trials")
    def _trial_opened(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.post_message(TimelineRequested(event.row_key.value))

    def _select_trial(self, trial_id: str | None) -> None:
        panes = self.query_one(TrialPanes)
        if trial_id == panes.trial_id:
            return
        panes.show(self.live_run.trials.get(trial_id) if trial_id else None)
        if panes.needs_store and trial_id is not None:
            queries = self.queries
            self.ask(lambda: queries.trial_events(trial_id), lambda events: StoredEvents(trial_id, events))
        self._describe_selected()

    @on(StoredEvents)
    def _stored_events(self, message: StoredEvents) -> None:
        message.stop()
        self.query_one(TrialPanes).show_stored(message.trial_id, message.events)

    def _describe_selected(self) -> None:
        trial = self.live_run.trials.get(self.query_one(TrialPanes).trial_id or "")
        if trial is None:
            return
        redact = self.redact
        if trial.finished:
            where = f"after {trial.iteration} iteration{'s' if trial.iteration != 1 else ''}"
        else:
            where = f"at iteration {trial.iteration}" if trial.iteration else "before its first iteration"
        assisted = "  (assisted)" if trial.assisted else ""
        held = f" at breakpoint {trial.held_by} — c continues, s steps" if trial.held_by and not trial.finished \
            else ""
        model = f" model {trial.model}" if trial.model else ""
        self.say(f"Trial {redact.ident(trial.trial_id)}: {trial.task_id} trial {trial.index + 1} arm "
                 f"{trial.arm or '-'}{model} — {trial.status}{held} {where}{assisted}.  Enter: its whole timeline")

    def selected_trial(self) -> str | None:
        return self.query_one(TrialPanes).trial_id

    # --- actions ------------------------------------------------------------------------------

    def action_leave_field(self) -> None:
        focused = self.focused
        if focused is not None and self.query_one(RunForm) in focused.ancestors_with_self:
            table = self.query_one(TrialsTable)
            (table if table.row_count else self.query_one(TaskTree)).focus()

    def action_toggle_view(self) -> None:
        self.set_view("form" if self.has_class("-collapsed") else "trials")

    def action_maximize(self) -> None:
        """The trials table or the selected trial's panes, whichever has the focus, fill the screen."""
        focused = self.focused
        area = next((node for node in (focused.ancestors_with_self if focused else [])
                     if isinstance(node, (TrialsTable, TrialPanes))), None)
        if area is None:
            self.say("z maximises the trials table or the selected trial: Tab to one of them first.", "bold yellow")
            return
        self.maximize(area, container=False)

    def action_next_pane(self) -> None:
        self.query_one(TrialPanes).next_pane()

    def action_breakpoints(self) -> None:
        """Before a run: the run form's Breakpoints field. During one (the form is locked): the dialog
        that changes the run's breakpoints."""
        field = self.query_one("#form-breakpoints", Input)
        if field.disabled:
            self.post_message(BreakpointsRequested())
            return
        if not self._focus_in(RunForm, TrialsTable, TrialPanes):  # it moves the focus into a text field
            self.say("b goes to the run form's Breakpoints field from the run form or the trials table.",
                     "bold yellow")
            return
        from corral_core.agents.breakpoints import breakpoint_syntax  # the agents package: when asked

        field.focus()
        self.say(f"Breakpoints, separated by ';': {breakpoint_syntax()}. A hit pauses the trial; c continues, "
                 "s steps.")

    def _focus_in(self, *areas: type[Widget]) -> bool:
        focused = self.focused
        return focused is not None and any(isinstance(node, areas) for node in focused.ancestors_with_self)

    def at_trials(self, key: str) -> bool:
        """Trial keys act with the focus on the trials table or the panes; elsewhere they say so."""
        if self._focus_in(TrialsTable, TrialPanes):
            return True
        self.say(f"{key} acts on the selected trial: Tab to the trials table (or click a trial) first.", "bold yellow")
        return False

    def action_run_anywhere(self) -> None:
        """ctrl+r: the run form, from anywhere on the workbench, its text fields included."""
        self.action_start_run(chord=True)

    def action_start_run(self, chord: bool = False) -> None:
        """`r` in the run form (off its text fields), ctrl+r anywhere: a letter typed elsewhere (a task id
        typed outside its field) never starts a run."""
        if not chord and not self._focus_in(RunForm):
            self.say("r runs the form from inside it (Tab to it, or press Start); ctrl+r runs it from anywhere.",
                     "bold yellow")
            return
        self.query_one(RunForm).submit()

    def action_open_spec(self) -> None:
        """ctrl+o: a `.bench.yaml` into the run form (not while a run is live: the form is locked)."""
        if self.query_one("#form-start").disabled:
            self.say("The run form is locked while the run is live: open a spec file when it has ended.",
                     "bold yellow")
            return
        self.post_message(SpecFileRequested())

    def action_save_spec(self) -> None:
        """ctrl+s: the run form as a `.bench.yaml` (`corral-tui --batch FILE` runs the same plan)."""
        try:
            request = self.query_one(RunForm).request()
        except ValueError as exc:
            self.refuse("Cannot save the run form", str(exc))
            return
        self.post_message(SpecFileRequested(request))

    def action_stop_run(self) -> None:
        self.post_message(StopRequested())

    def action_control(self, command: Command) -> None:
        if not self.at_trials({"pause": "p", "step": "s", "resume": "c"}[command]):
            return
        trial_id = self.selected_trial()
        if trial_id is None:
            self.notify("Select a running trial first (or use the shift key for all trials).", severity="warning")
            return
        self.post_message(ControlRequested(command, trial_id))

    def action_control_all(self, command: Command) -> None:
        if not self.at_trials({"pause": "P", "step": "S", "resume": "C"}[command]):
            return
        self.post_message(ControlRequested(command, None))

    def _running_selected(self, what: str) -> str | None:
        trial = self.live_run.trials.get(self.selected_trial() or "")
        if trial is None or trial.finished:
            self.notify(f"Select a running trial to {what}.", severity="warning")
            return None
        return trial.trial_id

    def action_intervene(self) -> None:
        at_table = self._focus_in(TrialsTable, TrialPanes)
        trial = self.live_run.trials.get(self.selected_trial() or "") if at_table else None
        if trial is None or trial.finished:
            # text is about to be typed: the refusal is a dialog that takes it (and any letter) and does
            # nothing with it, so it can never reach the workbench's keys; Esc or Enter closes it and the
            # focus is where it was
            what = "The trials table does not have the focus" if not at_table else "No trial is selected" \
                if trial is None else \
                f"Trial {self.redact.ident(trial.trial_id)} ({trial.task_id}) has finished ({trial.status})"
            self.app.push_screen(ErrorScreen("Select a running trial to intervene in",
                                             f"{what}. In the trials table, move to a running trial (up/down), "
                                             "then press i.  Esc or Enter closes this; what you type here goes "
                                             "nowhere."))
            return
        self.post_message(InterventionRequested(trial.trial_id))

    def action_cancel_trial(self) -> None:
        if not self.at_trials("k"):
            return
        trial_id = self._running_selected("end")
        if trial_id is not None:
            self.post_message(TrialCancelRequested(trial_id))

