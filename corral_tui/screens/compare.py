"""A benchmark's arms side by side: scores with CIs, rates, pass@k / pass^k, resources, paired tests,
the task x arm matrix and a bar chart of score by arm."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Label, Static

from corral_tui.analysis import CompareView, Estimate
from corral_tui.config import Redactor
from corral_tui.screens.base import QueryScreen
from corral_tui.widgets.bars import Bar, BarChart

if TYPE_CHECKING:
    from corral_tui.services.queries import StoreQueries


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


# The headline score's interval is printed as [lo, hi] (a t interval across tasks, clipped to [0, 1],
# so it is not symmetric: "±" would misread it); README "What the metrics mean" has the details.
SCORE_LABEL = "score [95% CI over tasks]"


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


def arms_table(view: CompareView, redact: Redactor) -> Table:
    """One column per arm, one row per metric."""
    table = Table(show_edge=False, header_style="bold", expand=False)
    table.add_column("metric", style="dim")
    for arm in view.arms:
        table.add_column(arm.name, justify="right")
    rows: list[tuple[str, list[str]]] = [
        ("trials analysed", [str(a.n_trials) for a in view.arms]),
        (SCORE_LABEL, [_estimate(a.score) for a in view.arms]),
        ("success rate", [_estimate(a.success, percent=True) for a in view.arms]),
    ]
    for k in view.k_values:
        rows.append((f"pass@{k}", [_pct(a.pass_k[k][0]) if k in a.pass_k else "-" for a in view.arms]))
        rows.append((f"pass^{k}", [_pct(a.pass_k[k][1]) if k in a.pass_k else "-" for a in view.arms]))
    rows += [
        ("surrender rate", [_estimate(a.surrender, percent=True) for a in view.arms]),
        ("documentation chars", [_doc(view, a.name, "chars") for a in view.arms]),
        ("documentation tokens", [_doc(view, a.name, "tokens") for a in view.arms]),
        ("tokens", [str(a.tokens) for a in view.arms]),
        ("duration (mean)", [redact.duration(a.duration_mean) for a in view.arms]),
        ("assisted (apart)", [str(a.n_assisted) for a in view.arms]),
    ]
    for name, values in rows:
        table.add_row(name, *values)
    return table


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
            style = "dim" if value is None else "green" if value >= 0.999 else "red" if value <= 0.001 else "yellow"
            cells.append(Text("-" if value is None else f"{value:.2f}", style=style))
        table.add_row(task, *cells)
    return table


class CompareLoaded(Message):
    def __init__(self, view: CompareView) -> None:
        super().__init__()
        self.view = view


class CompareScreen(QueryScreen):
    """Compare the arms of one benchmark."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="compare.back")]

    def __init__(self, benchmark_id: str, queries: StoreQueries, redact: Redactor, other_id: str | None = None) -> None:
        super().__init__()
        self.benchmark_id = benchmark_id
        self.other_id = other_id  # a second benchmark of the same suite: both side by side, paired by task
        self.queries = queries
        self.redact = redact

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label(Text("Loading…", style="dim"), id="compare-title", classes="screen-title")
        with VerticalScroll(id="compare-body"):
            yield Static("", id="compare-arms")
            yield Label("Paired tests (every pair of arms; unit: task; sign-flip test, Holm over all pairs)",
                        classes="section")
            yield Static("", id="compare-tests")
            yield Label("Score by arm (95% CI)", classes="section")
            yield BarChart(id="compare-chart")
            yield Label("Mean score per task", classes="section")
            yield Static("", id="compare-matrix")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#compare-body").focus()
        benchmark_id, other_id = self.benchmark_id, self.other_id
        if other_id is not None:
            self.ask(lambda: self.queries.compare_two(benchmark_id, other_id), CompareLoaded)
        else:
            self.ask(lambda: self.queries.compare(benchmark_id), CompareLoaded)

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
        redact = self.redact
        b = view.benchmark
        self.query_one("#compare-title", Label).update(Text.assemble(
            ("Compare ", "bold"), (b.spec_name, "bold cyan"), f"  {redact.ident(b.id)}  ",
            (f"{b.finished_count}/{b.trial_count} trials", "dim"), f"  {b.status}",
            ("  (stored metrics)" if view.stored else "  (computed from the trials so far)", "dim"),
            *self._other(view)))
        self.query_one("#compare-arms", Static).update(arms_table(view, redact) if view.arms
                                                       else Text("No finished trials yet.", style="dim"))
        tests = [Text.assemble((f"{arm_b} vs {arm_a}: ", "bold"), summary)
                 for arm_a, arm_b, summary in view.comparisons] + [Text(note) for note in view.notes]
        self.query_one("#compare-tests", Static).update(
            Text("\n").join(tests) if tests else Text("Only one arm: nothing to pair.", style="dim"))
        bars = [Bar(arm.name, arm.score.value, arm.score.ci) for arm in view.arms]
        self.query_one(BarChart).set_bars(bars, width=48)
        self.query_one("#compare-matrix", Static).update(matrix_table(view))
