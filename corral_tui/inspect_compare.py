"""`corral-tui compare --tui A.eval B.eval [...]`: the workbench's Compare screen on runs recorded as
Inspect AI logs — each log an arm, samples paired by id and epoch, the same paired task-level analysis
as the printed `compare` (corral_core.interop.inspect_in), with the forest plot of per-task differences and,
for logs that are documentation levels of one task (task_args `verbosity`), score by level with the trend."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App
from textual.binding import Binding

from corral_tui.analysis import ArmColumn, CompareView, curve_from_json, pair_from_json
from corral_tui.config import Redactor
from corral_tui.screens.compare import CompareScreen

if TYPE_CHECKING:
    from corral_core.interop.inspect_in import InspectComparison


def inspect_compare_view(comparison: InspectComparison) -> CompareView:
    """The comparison of Inspect logs as the Compare screen shows a benchmark's arms."""
    from corral_core.store import ArmInfo, BenchmarkInfo

    document = comparison.to_dict()
    samples = sum(len(run.records) for run in comparison.runs)
    arms = [ArmColumn.from_json(d) for d in document["arms"].values()]
    benchmark = BenchmarkInfo(
        id=document["benchmark_id"], spec_name="Inspect logs", spec_digest="", spec_yaml="", suites=[], agent="",
        model="", arms=[ArmInfo(run.arm) for run in comparison.runs], trials_per_task=max(comparison.k_values),
        status=f"{len(comparison.paired)} sample-epochs paired", headline_score=comparison.analysis.headline,
        attempt_status=None, created_at=datetime.now(UTC), finished_at=None, metrics=document,
        trial_count=samples, finished_count=samples,
        # the header's figures are the arms' rows summed (the paired samples), so it says what the table says
        total_tokens=sum(column.tokens for column in arms),
        cost_total=math.fsum(c.cost for c in arms if c.cost is not None) if any(c.cost is not None for c in arms)
        else None)
    notes = [f"{run.arm}: {run.path} (scorer {run.scorer}, {len(run.records)} samples)" for run in comparison.runs]
    notes += [f"not paired, only in {arm}: {len(keys)} sample(s), left out" for arm, keys in comparison.unpaired.items()
              if keys]
    curve = curve_from_json(document.get("trend") or {})  # logs that are documentation levels of one task
    if curve is not None and curve.summary:
        notes.append(curve.summary)
    tasks = sorted({task for column in arms for task in column.task_scores})
    comparisons = [(str(c["arm_a"]), str(c["arm_b"]), str(c["summary"])) for c in document["comparisons"]]
    return CompareView(benchmark, arms, comparisons, tasks, comparison.k_values, True, notes=notes,
                       pairs=[pair_from_json(c) for c in document["comparisons"]], curve=curve)


class InspectCompareApp(App[None]):
    """One screen: Compare on the logs; escape or q quits."""

    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "corral-tui compare"
    BINDINGS = [Binding("q", "quit", "Quit", id="inspect_compare.quit")]

    def __init__(self, view: CompareView) -> None:
        super().__init__()
        self.view = view

    def on_mount(self) -> None:
        self.push_screen(CompareScreen(self.view.benchmark.id, None, Redactor(), view=self.view))

    async def action_pop_screen(self) -> None:
        """Escape on the only screen: leave."""
        self.exit()


def compare_tui_main(argv: list[str]) -> int:
    """Read the logs (a user mistake is an exit-2 paragraph before any screen), then open Compare."""
    from corral_core import report
    from corral_core.interop.inspect_in import compare_args, compare_logs

    args = compare_args(argv)
    if args.json:
        report.check_writable(args.json, "--json")
    comparison = compare_logs([Path(p) for p in args.logs], scorer=args.scorer, k_values=args.k, seed=args.seed)
    if args.json:
        report.write_json(args.json, comparison.to_dict())
    InspectCompareApp(inspect_compare_view(comparison)).run()
    return 0
