"""A benchmark's arms side by side: scores with CIs, rates, pass@k / pass^k, resources, paired tests,
the task x arm matrix, a bar chart of score by arm, a forest plot of one pair's per-task differences
(`p` goes to the next pair) and, for arms that are ordered levels, a line plot of score by level."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Label, Static

from corral_core.metrics import task_differences
from corral_core.report import trials_done_text
from corral_tui.analysis import ArmColumn, CompareView, Estimate
from corral_tui.config import Redactor
from corral_tui.render import format_cost, format_tokens
from corral_tui.screens.base import QueryScreen
from corral_tui.widgets.bars import Bar, BarChart

if TYPE_CHECKING:
    from corral_tui.services.queries import StoreQueries
    from corral_tui.widgets.plots import ForestPlot, LevelPlot


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


# Intervals print as [lo, hi] (a t interval across tasks, clipped to [0, 1], is not symmetric: "±" would
# misread it), and the line under the table names how each was computed; docs/benchmarks.md "What the metrics mean".
SCORE_LABEL = "score [95% CI]"


def _estimate(estimate: Estimate, percent: bool = False) -> str:
    if estimate.value is None:
        return "-"
    fmt = _pct if percent else (lambda v: f"{v:.2f}")
    ci = f" [{fmt(estimate.ci[0])}, {fmt(estimate.ci[1])}]" if estimate.ci else ""
    return fmt(estimate.value) + ci


def _doc(view: CompareView, arm: str, key: str) -> str:
    """An arm's documentation size per task (what `corral-tui docs` measures), "-" when not recorded."""
    value = (view.documentation.get(arm) or {}).get(key)
    return "-" if not isinstance(value, (int, float)) else f"{value:,.0f}"


def _has_doc_views(view: CompareView) -> bool:
    """Whether any arm was shown a documentation variant or a component subset (else no row for it)."""
    return any((d or {}).get("components") is not None or (d or {}).get("variant") not in (None, "original")
               for d in view.documentation.values())


def _doc_view(view: CompareView, arm: str) -> str:
    """An arm's documentation variant and components: `rewritten`, `rewritten: brief+syntactical`."""
    shown = view.documentation.get(arm) or {}
    components = shown.get("components")
    variant = str(shown.get("variant") or "original")
    return f"{variant}: {'+'.join(components)}" if isinstance(components, list) else variant


def _score(arm: ArmColumn) -> Text:
    """The score, over how many trials, and a flag when some of the arm's trials errored."""
    text = Text(_estimate(arm.score))
    text.append(f" over {arm.n_trials}", style="dim")
    if arm.n_errored:
        text.append(f" ⚠ {arm.n_errored} errored", style="bold red")
    return text


def _errors(arm: ArmColumn) -> Text:
    if not arm.n_errored:
        return Text("0", style="dim")
    faults = ", ".join(f"{fault} {n}" for fault, n in arm.errors_by_fault.items())
    return Text(f"{arm.n_errored} ({faults})", style="bold red")


def _assisted(arm: ArmColumn) -> str:
    marked = max(arm.n_assisted_marked, arm.n_assisted)
    return str(marked) if marked == arm.n_assisted else f"{marked} ({arm.n_assisted} attempted)"


def arms_table(view: CompareView, redact: Redactor) -> Table:
    """One column per arm, one row per metric."""
    table = Table(show_edge=False, header_style="bold", expand=False)
    table.add_column("metric", style="dim")
    for arm in view.arms:
        table.add_column(arm.name, justify="right")
    rows: list[tuple[str, list[str | Text]]] = [
        ("trials scored", [str(a.n_trials) for a in view.arms]),
        (SCORE_LABEL, [_score(a) for a in view.arms]),
        ("success rate", [_estimate(a.success, percent=True) for a in view.arms]),
        ("errored (by fault)", [_errors(a) for a in view.arms]),
    ]
    for k in view.k_values:
        rows.append((f"pass@{k}", [_pct(a.pass_k[k][0]) if k in a.pass_k else "-" for a in view.arms]))
        rows.append((f"pass^{k}", [_pct(a.pass_k[k][1]) if k in a.pass_k else "-" for a in view.arms]))
    rows.append(("surrender rate", [_estimate(a.surrender, percent=True) for a in view.arms]))
    if _has_doc_views(view):  # what each arm was shown beyond its level
        rows.append(("documentation", [_doc_view(view, a.name) for a in view.arms]))
    rows += [
        ("documentation chars", [_doc(view, a.name, "chars") for a in view.arms]),
        ("documentation tokens", [_doc(view, a.name, "tokens") for a in view.arms]),
        ("tokens", [format_tokens(a.tokens) for a in view.arms]),
        ("cost", [format_cost(a.cost) for a in view.arms]),
        ("duration (mean)", [redact.duration(a.duration_mean) for a in view.arms]),
        ("assisted (apart)", [_assisted(a) for a in view.arms]),
    ]
    for name, values in rows:
        table.add_row(name, *values)
    return table


def methods_text(view: CompareView) -> Text:
    """How the intervals were computed, and why there is no interval over tasks with one task."""
    found: dict[str, set[str]] = {}
    for arm in view.arms:
        for label, estimate in (("score", arm.score), ("success", arm.success), ("surrender", arm.surrender)):
            if estimate.ci is not None and estimate.method:
                found.setdefault(label, set()).add(estimate.method)
    parts = "; ".join(f"{label}: {', '.join(sorted(methods))}" for label, methods in found.items())
    text = Text(f"95% intervals ({parts or 'none computed'}).", style="dim")
    if view.n_tasks == 1:
        text.append(" One task: there is no interval over tasks; the intervals above are over that task's "
                    "trials, which are not independent draws of a benchmark.", style="yellow")
    return text


def matrix_table(view: CompareView) -> Table:
    """Mean score per task (rows) and arm (columns)."""
    table = Table(show_edge=False, header_style="bold")
    table.add_column("task")
    for arm in view.arms:
        table.add_column(arm.name, justify="right")
    for task in view.tasks:
        cells = []
        for arm in view.arms:
            value = arm.task_scores.get(task)
            if value is None:  # no unassisted scored trial: say why the task has no score here
                assisted = arm.assisted_tasks.get(task)
                cells.append(Text(f"{assisted} assisted" if assisted else "-", style="magenta" if assisted else "dim"))
                continue
            style = "green" if value >= 0.999 else "red" if value <= 0.001 else "yellow"
            cells.append(Text(f"{value:.2f}", style=style))
        table.add_row(task, *cells)
    return table


class CompareLoaded(Message):
    def __init__(self, view: CompareView) -> None:
        super().__init__()
        self.view = view


def forest_caption(view: CompareView, index: int, shown: int, hidden: int) -> Text:
    """What the forest plot shows: which pair, which way round, how many tasks, what the mean row is."""
    pair = view.pairs[index]
    text = Text.assemble(("B − A = ", "dim"), (pair.arm_b, "bold"), " − ", (pair.arm_a, "bold"),
                         (f": difference of mean score per task ({shown} task{'s' if shown != 1 else ''}", "dim"))
    if hidden:
        text.append(f"; the {shown} largest shown, {hidden} smaller hidden", style="dim")
    text.append("); ◆ mean over tasks with its 95% sign-flip interval.", style="dim")
    if len(view.pairs) > 1:
        text.append(f"  Pair {index + 1} of {len(view.pairs)}: p for the next.", style="bold")
    return text


class CompareScreen(QueryScreen):
    """Compare the arms of one benchmark."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="compare.back"),
                Binding("p", "next_pair", "Next pair", id="compare.next_pair")]

    def __init__(self, benchmark_id: str, queries: StoreQueries | None, redact: Redactor, other_id: str | None = None,
                 *, view: CompareView | None = None) -> None:
        """Loads the benchmark (and `other_id`) through `queries`, or shows a `view` computed elsewhere (Inspect
        logs: corral_tui.inspect_compare)."""
        super().__init__()
        if view is None and queries is None:
            raise ValueError("CompareScreen needs the store's queries or a computed view")
        self.given = view
        self.benchmark_id = benchmark_id
        self.other_id = other_id  # a second benchmark of the same suite: both side by side, paired by task
        self.queries = queries
        self.redact = redact
        self.view: CompareView | None = None  # what is shown, once loaded
        self.pair_index = 0  # the pair the forest plot shows

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label(Text("Loading…", style="dim"), id="compare-title", classes="screen-title")
        with VerticalScroll(id="compare-body"):
            yield Static("", id="compare-arms")
            yield Static("", id="compare-methods")
            yield Label("Paired tests (every pair of arms; unit: task; sign-flip test, Holm over all pairs)",
                        classes="section")
            yield Static("", id="compare-tests")
            yield Label("Score by arm (95% CI)", classes="section")
            yield BarChart(id="compare-chart")
            yield Label("Per-task differences", classes="section compare-pair")
            yield Static("", id="compare-forest-caption", classes="compare-pair")
            from corral_tui.widgets.plots import ForestPlot, LevelPlot  # plotext: not before the first frame

            yield ForestPlot(id="compare-forest")
            yield Label("Score by level (95% CI over tasks)", classes="section compare-levels")
            yield Static("", id="compare-levels-caption", classes="compare-levels")
            yield LevelPlot(id="compare-levels")
            yield Label("Mean score per task", classes="section")
            yield Static("", id="compare-matrix")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#compare-body").focus()
        benchmark_id, other_id, queries = self.benchmark_id, self.other_id, self.queries
        if self.given is not None or queries is None:
            if self.given is not None:
                self.post_message(CompareLoaded(self.given))
        elif other_id is not None:
            self.ask(lambda: queries.compare_two(benchmark_id, other_id), CompareLoaded)
        else:
            self.ask(lambda: queries.compare(benchmark_id), CompareLoaded)

    @on(CompareLoaded)
    def _loaded(self, message: CompareLoaded) -> None:
        message.stop()
        self.show(message.view)

    def _other(self, view: CompareView) -> list[tuple[str, str]]:
        """The title's second half when two benchmarks are compared: which is A and which is B."""
        other = view.other
        if other is None:
            return []
        return [("   A = ", "dim"), (self.redact.ident(view.benchmark.id), "bold"), ("  vs  B = ", "dim"),
                (f"{other.spec_name} ", "bold cyan"), (self.redact.ident(other.id), "bold"),
                (f"  {other.finished_count}/{other.trial_count} trials  {other.status}", "dim")]

    def show(self, view: CompareView) -> None:
        self.view = view
        redact = self.redact
        b = view.benchmark
        self.query_one("#compare-title", Label).update(Text.assemble(
            ("Compare ", "bold"), (b.spec_name, "bold cyan"), f"  {redact.ident(b.id)}  ",
            (f"trials {trials_done_text(b)}", "bold red" if b.errored_count else "dim"), f"  {b.status}",
            ("  tokens ", "dim"), format_tokens(b.total_tokens), ("  cost ", "dim"), format_cost(b.cost_total),
            ("  (stored metrics)" if view.stored else "  (from the trials so far)", "dim"),
            *self._other(view)))
        self.query_one("#compare-arms", Static).update(arms_table(view, redact) if view.arms
                                                       else Text("No finished trials yet.", style="dim"))
        self.query_one("#compare-methods", Static).update(methods_text(view) if view.arms else "")
        tests = [Text.assemble((f"{arm_b} vs {arm_a}: ", "bold"), summary)
                 for arm_a, arm_b, summary in view.comparisons] + [Text(note) for note in view.notes]
        self.query_one("#compare-tests", Static).update(
            Text("\n").join(tests) if tests else Text("Only one arm: nothing to pair.", style="dim"))
        bars = [Bar(arm.name, arm.score.value, arm.score.ci) for arm in view.arms]
        self.query_one(BarChart).set_bars(bars, width=48)
        self.query_one("#compare-matrix", Static).update(matrix_table(view))
        self.pair_index = min(self.pair_index, max(0, len(view.pairs) - 1))
        self._show_pair()
        curve = view.curve
        for widget in self.query(".compare-levels"):
            widget.display = curve is not None
        self._level_plot().display = curve is not None
        if curve is not None:
            self.query_one("#compare-levels-caption", Static).update(Text(curve.summary, style="dim"))
            self._level_plot().show(curve)

    def _forest_plot(self) -> ForestPlot:
        return cast("ForestPlot", self.query_one("#compare-forest"))

    def _level_plot(self) -> LevelPlot:
        return cast("LevelPlot", self.query_one("#compare-levels"))

    def _show_pair(self) -> None:
        view = self.view
        shown = view is not None and bool(view.pairs)
        for widget in self.query(".compare-pair"):
            widget.display = shown
        self._forest_plot().display = shown
        if not shown or view is None:
            return
        pair = view.pairs[self.pair_index]
        columns = {arm.name: arm for arm in view.arms}
        a, b = columns.get(pair.arm_a), columns.get(pair.arm_b)
        differences = task_differences(a.task_scores if a else {}, b.task_scores if b else {})
        self.query_one("#compare-forest-caption", Static).update(
            forest_caption(view, self.pair_index, len(differences.rows), differences.hidden))
        self._forest_plot().show(pair, differences)

    def action_next_pair(self) -> None:
        """Show the next pair of arms in the forest plot."""
        if self.view is not None and self.view.pairs:
            self.pair_index = (self.pair_index + 1) % len(self.view.pairs)
            self._show_pair()
