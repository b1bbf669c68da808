"""The run form: tasks, agent (and more agents to compare), model (several to compare) with its API
base and the environment variable holding its key, verbosity arms, trials, parallel, surrender,
approval policy, breakpoints, start paused. The arms are every model x agent x verbosity named. It follows the
selected suite (its tasks in the placeholder, task ids of another suite cleared) and is locked while a
run is live. Enter in a field moves to the next one; only Start (or `r` outside a field) starts a run."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, Label, Select
from textual.widgets.input import Selection

from corral_core.constants import AGENT_TYPES, APPROVAL_POLICIES
from corral_tui.run_request import RunRequest, parse_count, parse_verbosities, split_list
from corral_tui.widgets.fields import Field
from corral_tui.widgets.select import Choice
from corral_tui.widgets.suggest import AgentSuggester, BreakpointSuggester

FORM_POLICIES = ("ask", *(policy for policy in APPROVAL_POLICIES if policy != "ask"))  # the default first
PLACEHOLDER_TASKS = 4  # task ids named in the Tasks placeholder


class MarkedCheckbox(Checkbox):
    """A checkbox whose state shows without colour: `X` when ticked, a blank when not (Textual's shows
    `X` both ways, in two colours)."""

    def on_mount(self) -> None:
        self.BUTTON_INNER = "X" if self.value else " "

    def watch_value(self) -> None:
        self.BUTTON_INNER = "X" if self.value else " "
        super().watch_value()


class FormInput(Field):
    """A form field that shows the start of a long value (an API base's scheme and host, not its tail):
    focused, the whole value is selected (typing replaces it) with the cursor at the start; unfocused,
    it shows from the start."""

    def on_mount(self) -> None:
        self.cursor_position = 0

    def on_focus(self) -> None:
        self.call_later(self._select_from_start)  # after Input's own focus handler has selected it all

    def _select_from_start(self) -> None:
        if self.value and self.has_focus and self.selection == Selection(0, len(self.value)):
            self.selection = Selection(len(self.value), 0)

    def on_blur(self) -> None:
        self.cursor_position = 0


class RunForm(Vertical):
    """Builds a `RunRequest` for the selected suite; Start (or `r`) posts `RunForm.Submitted`."""

    # Enter in a field or on a checkbox moves on at once (a priority binding is handled before the next
    # key is handed out, so keys typed right after Enter land in the next field); space ticks a checkbox
    BINDINGS = [Binding("enter", "next_field", "Next field", show=False, priority=True, id="form.next_field")]

    class Submitted(Message):
        def __init__(self, request: RunRequest) -> None:
            super().__init__()
            self.request = request

    class Invalid(Message):
        def __init__(self, problem: str) -> None:
            super().__init__()
            self.problem = problem

    def __init__(self, *, model: str | None = None, api_base: str | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.suite: str | None = None
        self.task_ids: list[str] = []
        self.default_model = model
        self.default_api_base = api_base
        self.border_title = "Run"
        self.kept: dict[str, object] = {}  # an opened spec file's keys the form has no field for

    def compose(self) -> ComposeResult:
        with Grid(id="form-grid"):
            yield Label("Suite")
            yield Label("-", id="form-suite")
            yield Label("Tasks")
            yield FormInput(placeholder="all", id="form-tasks", compact=True)
            yield Label("Agent")
            yield Choice([(name, name) for name in AGENT_TYPES], value="react", allow_blank=False,
                         id="form-agent", compact=True)
            yield Label("+ agents (arms)")
            yield FormInput(placeholder="compare with, e.g. planner, reflection", id="form-agents", compact=True,
                            suggester=AgentSuggester())
            yield Label("Max iterations")
            yield FormInput("10", id="form-iterations", type="integer", compact=True)
            yield Label("Model")
            yield FormInput(self.default_model or "", placeholder="scripted/<suite script>; several: arms",
                            id="form-model", compact=True)
            yield Label("API base")
            yield FormInput(self.default_api_base or "", placeholder="the provider's default", id="form-api_base",
                        compact=True)
            yield Label("Key env")
            yield FormInput(placeholder="the provider's, e.g. OPENAI_API_KEY", id="form-api_key_env", compact=True)
            yield Label("Arms (verbosity)")
            yield FormInput("full", placeholder="e.g. minimal, brief, full", id="form-arms", compact=True)
            yield Label("Trials per task")
            yield FormInput("1", id="form-trials", type="integer", compact=True)
            yield Label("Parallel")
            yield FormInput("1", id="form-parallel", type="integer", compact=True)
            yield Label("Approval")
            yield Choice([(name, name) for name in FORM_POLICIES], value="ask", allow_blank=False,
                         id="form-approval", compact=True)
            yield Label("Breakpoints")
            yield FormInput(placeholder="e.g. tool:calculator", id="form-breakpoints", compact=True,
                            suggester=BreakpointSuggester())
        with Horizontal(id="form-flags"):
            yield MarkedCheckbox("Surrender", id="form-surrender", compact=True)
            yield MarkedCheckbox("Start paused", id="form-paused", compact=True)
        yield Label("", id="form-file")
        yield Button("Start run (r)", id="form-start", variant="primary", compact=True)

    def set_suite(self, suite: str, task_ids: list[str]) -> None:
        """Follow the selected suite: its tasks in the placeholder; task ids it lacks are cleared."""
        self.suite = suite
        self.task_ids = list(task_ids)
        self.query_one("#form-suite", Label).update(suite)
        tasks = self.query_one("#form-tasks", Input)
        named = ", ".join(task_ids[:PLACEHOLDER_TASKS]) + (", …" if len(task_ids) > PLACEHOLDER_TASKS else "")
        tasks.placeholder = f"all: {named}" if task_ids else "all"
        kept = [task for task in split_list(tasks.value) if task in task_ids]
        if kept != split_list(tasks.value):
            tasks.value = ", ".join(kept)

    def set_values(self, **values: object) -> None:
        """Fill fields by name (tasks, model, api_base, api_key_env, arms, trials, parallel, iterations, agent,
        approval, breakpoints, surrender, paused): for tests and the command palette."""
        for name, value in values.items():
            widget = self.query_one(f"#form-{name}")
            if isinstance(widget, Input):
                widget.value = str(value)
            elif isinstance(widget, (Select, Checkbox)):
                widget.value = value
            else:
                raise KeyError(name)

    def fill(self, request: RunRequest) -> None:
        """Fill the form from a request (the last run's, at start-up); task ids the suite lacks are dropped
        when the suite is picked, values the form cannot show are skipped."""
        values: dict[str, object] = {
            "tasks": ", ".join(request.tasks or []), "agent": request.agent, "iterations": request.max_iterations,
            "agents": ", ".join(request.more_agents), "model": ", ".join(m for m in request.models if m),
            "api_base": request.api_base or "", "api_key_env": request.api_key_env or "",
            "arms": ", ".join(request.verbosities), "trials": request.trials, "parallel": request.parallel,
            "approval": request.approval, "breakpoints": "; ".join(request.breakpoints),
            "surrender": bool(request.surrender), "paused": bool(request.start_paused)}
        for name, value in values.items():
            try:
                self.set_values(**{name: value})
            except Exception:
                continue
        self.kept = dict(request.kept)

    def show_file(self, text: str) -> None:
        """Say under the fields which file the form came from (or was saved as) and what it keeps."""
        label = self.query_one("#form-file", Label)
        label.update(text)
        label.display = bool(text)

    def set_locked(self, locked: bool) -> None:
        """Disable every field and the Start button (a run is live), or enable them again."""
        for widget in self.query("Input, Select, Checkbox, Button"):
            widget.disabled = locked
        self.border_subtitle = "locked while the run is live" if locked else ""

    def request(self) -> RunRequest:
        """The form's values as a RunRequest; ValueError says which field is wrong and why."""
        from corral_core.agents import AGENTS  # the engine: at the first run, not the first frame
        from corral_core.agents.breakpoints import parse_breakpoints
        from corral_core.spec import MAX_PARALLEL

        if self.suite is None:
            raise ValueError("pick a suite (or one of its tasks) in the tree first")
        text = {name: self.query_one(f"#form-{name}", Input).value
                for name in ("tasks", "agents", "iterations", "model", "api_base", "api_key_env", "arms", "trials",
                             "parallel", "breakpoints")}
        tasks = split_list(text["tasks"]) or None
        unknown = [task for task in tasks or [] if self.task_ids and task not in self.task_ids]
        if unknown:
            raise ValueError(f"suite {self.suite} has no task {', '.join(unknown)}; it has {', '.join(self.task_ids)}")
        models = split_list(text["model"])
        model, api_base = (models[0] if models else None), text["api_base"].strip() or None
        agent = str(self.query_one("#form-agent", Select).value)
        more_agents = [name for name in split_list(text["agents"]) if name != agent]
        unknown = [name for name in more_agents if name not in AGENTS]
        if unknown:
            raise ValueError(f"unknown agent type {', '.join(unknown)} in + agents; use: {', '.join(AGENTS.names())}")
        api_key_env = text["api_key_env"].strip() or None
        if api_base and not model:
            raise ValueError("an API base needs a model too (e.g. openai/<model> for an OpenAI-compatible server)")
        if api_key_env and not model:
            raise ValueError("a key's environment variable needs a model too (scripted models need no key)")
        if api_key_env and not api_key_env.replace("_", "").isalnum():
            raise ValueError(f"Key env names an environment variable (e.g. OPENAI_API_KEY), not {api_key_env!r}: "
                             "the key itself never goes in the form")
        return RunRequest(
            suite=self.suite,
            tasks=tasks,
            agent=agent,
            more_agents=more_agents,
            more_models=models[1:],
            kept=dict(self.kept),
            max_iterations=parse_count(text["iterations"], "max iterations", 1, 1000),
            model=model,
            api_base=api_base,
            api_key_env=api_key_env,
            verbosities=parse_verbosities(text["arms"]),
            trials=parse_count(text["trials"], "trials per task"),
            parallel=parse_count(text["parallel"], "parallel", 1, MAX_PARALLEL),
            surrender=self.query_one("#form-surrender", Checkbox).value,
            approval=str(self.query_one("#form-approval", Select).value),
            start_paused=self.query_one("#form-paused", Checkbox).value,
            breakpoints=[str(point) for point in parse_breakpoints(text["breakpoints"])],
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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_field":  # a Select opens its list and the Start button starts on Enter
            return isinstance(self.screen.focused, (Input, Checkbox)) or None
        return True

    def action_next_field(self) -> None:
        """Enter in a field moves on to the next one: it never starts a run."""
        self.screen.focus_next()

    @on(Input.Submitted)
    def _enter(self, event: Input.Submitted) -> None:
        event.stop()  # (Enter is the form's binding; a submitted field only moves on)
        self.screen.focus_next()
