"""Inspect AI logs in: each log is an arm, each sample a trial (task = sample id, trial = epoch), so
our paired task-level analysis (sign-flip test, cluster bootstrap, Holm, pass@k / pass^k) runs on
runs made with Inspect. Samples are paired by (id, epoch): only those present in every log are
analysed, and the rest are reported as unpaired. Logs of one task and model that differ only in their
documentation level (task_args `verbosity`, as our export writes it) are ordered levels: the trend
test across them runs as it does for a benchmark of levels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from corral_core.domain import TrialStatus
from corral_core.errors import UserError
from corral_core.interop import off_the_loop, require
from corral_core.metrics import Analysis, TrialResult, analyse, levels_in_order, metrics_to_dict

SampleKey = tuple[str, int]  # (sample id, epoch)


@dataclass
class InspectRun:
    """One log as an arm: its name, which scorer was read, and its samples as trial records."""

    path: Path
    arm: str
    scorer: str
    records: dict[SampleKey, TrialResult] = field(default_factory=dict)
    verbosity: str | None = None  # task_args["verbosity"], when the log has one
    setup: tuple[str, str] = ("", "")  # (Inspect task, model): what must not differ between levels
    named: bool = False  # the log names its arm (task_args["arm"], our export)
    task_args: dict[str, Any] = field(default_factory=dict)  # the Inspect task's arguments (`-T key=value`)


@dataclass
class InspectComparison:
    runs: list[InspectRun]
    analysis: Analysis
    paired: list[SampleKey]
    unpaired: dict[str, list[SampleKey]]  # arm -> its samples missing from another log
    k_values: list[int]

    def to_dict(self) -> dict[str, Any]:
        """A results document in the shape `report.print_results` and `--json` use."""
        return {
            "name": "compare", "benchmark_id": " vs ".join(run.arm for run in self.runs), "status": "inspect logs",
            "logs": {run.arm: {"path": str(run.path), "scorer": run.scorer, "samples": len(run.records)}
                     for run in self.runs},
            "spec": {"k_values": self.k_values},
            "paired_samples": len(self.paired),
            "unpaired": {arm: [{"id": sid, "epoch": epoch} for sid, epoch in keys]
                         for arm, keys in self.unpaired.items() if keys},
            "headline_score": self.analysis.headline,
            "arms": {name: metrics_to_dict(m) for name, m in self.analysis.arms.items()},
            "comparisons": [metrics_to_dict(c) for c in self.analysis.comparisons],
            "trend": metrics_to_dict(self.analysis.trend) if self.analysis.trend is not None else None,
            "chains": {},
        }


def read_run(path: Path, scorer: str | None = None, taken: Sequence[str] = ()) -> InspectRun:
    """One Inspect log (.eval or .json) as an arm; `scorer` picks the score (default: the log's first)."""
    log_module = require("inspect_ai.log", "inspect", "`compare` on Inspect logs")
    from inspect_ai.scorer import value_to_float

    if not path.is_file():
        raise UserError("Inspect log not found.", file=path, fix="give the path of a .eval or .json log.")
    try:
        header = off_the_loop(partial(log_module.read_eval_log, str(path), header_only=True))
        summaries = off_the_loop(partial(log_module.read_eval_log_sample_summaries, str(path)))
    except Exception as exc:  # not a log, a truncated file, an unknown version
        raise UserError(f"not a readable Inspect log: {type(exc).__name__}: {exc}.", file=path) from None
    scores = header.results.scores if header.results else []
    chosen = scorer or (scores[0].name if scores else None)
    if chosen is None:
        chosen = next((name for s in summaries for name in (s.scores or {})), None)
    if chosen is None:
        raise UserError("the log has no scores to compare.", file=path, fix="score the run (inspect score LOG).")
    level = (header.eval.task_args or {}).get("verbosity")
    run = InspectRun(path, _arm_name(header, path, taken), chosen, verbosity=str(level) if level else None,
                     setup=(str(header.eval.task), str(header.eval.model)),
                     named=bool((header.eval.task_args or {}).get("arm")), task_args=dict(header.eval.task_args or {}))
    to_float = value_to_float()
    for sample in summaries:
        key = (str(sample.id), int(sample.epoch))
        score = (sample.scores or {}).get(chosen)
        ours = (score.metadata or {}) if score is not None else {}
        value = None
        if score is not None:
            try:
                value = to_float(score.value)
            except (TypeError, ValueError):
                raise UserError(f"sample {key[0]!r} epoch {key[1]}: score {chosen!r} is not a number "
                                f"({score.value!r}).", file=path, fix="pick a numeric scorer with --scorer.") from None
            if not math.isnan(value) and not 0.0 <= value <= 1.0:
                raise UserError(f"sample {key[0]!r} epoch {key[1]}: score {chosen!r} is {value:g}, outside [0, 1]; "
                                "the paired analysis, its intervals and the plots are for scores in [0, 1].",
                                file=path, fix="rescale the scorer to [0, 1] (divide by its scale's maximum), "
                                               "or pick another scorer with --scorer.")
        status = str(ours.get("status") or (TrialStatus.ERROR if sample.error else TrialStatus.LIMIT if sample.limit
                                             else TrialStatus.COMPLETED))
        run.records[key] = TrialResult(
            task_id=key[0], arm=run.arm, trial_index=key[1] - 1, status=status,
            score=None if value is None or math.isnan(value) else value,
            surrendered=bool(ours.get("surrendered", False)), error=ours.get("error") or (
                str(sample.error) if sample.error else None), fault=ours.get("fault"),
            assisted=bool(ours.get("assisted", False)), duration=sample.total_time,
            prompt_tokens=sum(u.input_tokens for u in (sample.model_usage or {}).values()),
            completion_tokens=sum(u.output_tokens for u in (sample.model_usage or {}).values()),
            total_tokens=sum(u.total_tokens for u in (sample.model_usage or {}).values()),
            cost=_cost(sample.model_usage),
        )
    if scorer is not None and not any(scorer in (s.scores or {}) for s in summaries):
        known = sorted({name for s in summaries for name in (s.scores or {})})
        raise UserError(f"no scorer {scorer!r} in the log.", file=path, fix=f"use one of: {', '.join(known)}.")
    return run


def _cost(usage: dict[str, Any] | None) -> float | None:
    costs = [u.total_cost for u in (usage or {}).values() if u.total_cost is not None]
    return math.fsum(costs) if costs else None


def _arm_name(header: Any, path: Path, taken: Sequence[str]) -> str:
    """The arm a log stands for: the arm recorded by our export, else Inspect's task and model."""
    args = header.eval.task_args or {}
    name = str(args.get("arm") or f"{header.eval.task}/{header.eval.model}")
    if name in taken:
        name = f"{name} ({path.stem})"
    return name


def _name_by_level(runs: Sequence[InspectRun]) -> bool:
    """Logs of one task and model, each at its own documentation level and none naming its arm, are named
    by their level (`brief`, not `task/model (file stem)`): the level is all that tells them apart."""
    levels = [run.verbosity for run in runs]
    if any(run.named or not run.verbosity for run in runs) or len(set(levels)) != len(runs) or \
            len({run.setup for run in runs}) != 1:
        return False
    for run in runs:
        _rename(run, str(run.verbosity))
    return True


def _name_by_task_args(runs: Sequence[InspectRun]) -> None:
    """Logs that do not name their arm and differ in their task arguments (`inspect eval ... -T
    variant=baseline` and `-T variant=better`) are named by the arguments that differ (`variant=baseline`),
    after their task and model when those differ too; a name two logs still share keeps the file stem."""
    unnamed = [run for run in runs if not run.named]
    keys = sorted({key for run in unnamed for key in run.task_args})
    differing = [key for key in keys if len({repr(run.task_args.get(key)) for run in unnamed}) > 1]
    if len(unnamed) < 2 or not differing:
        return
    same_setup = len({run.setup for run in unnamed}) == 1
    for run in unnamed:
        args = " ".join(f"{key}={run.task_args.get(key)}" for key in differing)
        _rename(run, args if same_setup else f"{run.setup[0]}/{run.setup[1]} {args}")
    taken: set[str] = {run.arm for run in runs if run.named}
    for run in unnamed:
        if run.arm in taken:
            _rename(run, f"{run.arm} ({run.path.stem})")
        taken.add(run.arm)


def _rename(run: InspectRun, name: str) -> None:
    run.arm = name
    for key, record in run.records.items():
        run.records[key] = replace(record, arm=name)


def compare_logs(paths: Sequence[Path], *, scorer: str | None = None, k_values: Sequence[int] = (),
                 seed: int = 0) -> InspectComparison:
    """Read every log and run the paired analysis over the samples present in all of them."""
    if len(paths) < 2:
        raise UserError("compare needs at least two Inspect logs.", fix="corral-tui compare A.eval B.eval.")
    runs: list[InspectRun] = []
    for path in paths:
        runs.append(read_run(path, scorer, [run.arm for run in runs]))
    if not _name_by_level(runs):
        _name_by_task_args(runs)
    shared = set(runs[0].records).intersection(*(run.records for run in runs[1:]))
    paired = sorted(shared)
    unpaired = {run.arm: sorted(set(run.records) - shared) for run in runs}
    if not paired:
        raise UserError("no sample (id and epoch) is in every log, so nothing can be paired.",
                        fix="compare logs of the same task and dataset.")
    epochs = max(key[1] for key in paired)
    ks = sorted(set(k_values)) or list(range(1, epochs + 1))
    if any(k < 1 for k in ks):
        raise UserError("every k must be at least 1.", where="--k")
    records = [run.records[key] for run in runs for key in paired]
    levels = levels_in_order([(run.arm, run.verbosity, run.setup) for run in runs])
    analysis = analyse(records, [run.arm for run in runs], ks, seed=seed, ordered_levels=levels)
    return InspectComparison(runs, analysis, paired, unpaired, ks)


def compare_args(argv: list[str]) -> Any:
    """The parsed arguments of `corral-tui compare` (a UserError for invalid ones; --help exits 0)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="corral-tui compare",
        description="Compare runs recorded as Inspect AI logs, paired by sample id and epoch: per-run scores "
                    "with intervals over tasks, pass@k / pass^k, and every pair of runs compared by task "
                    "(sign-flip test, cluster bootstrap interval, Holm-adjusted).")
    parser.add_argument("logs", nargs="+", metavar="LOG", help="Inspect logs (.eval or .json), one per run")
    parser.add_argument("--scorer", metavar="NAME", help="which score to compare (default: each log's first)")
    parser.add_argument("--k", type=int, nargs="+", default=[], metavar="K",
                        help="pass@k and pass^k for these k (default: 1 up to the number of epochs)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo test and bootstrap")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--tui", action="store_true",
                        help="open the workbench's Compare screen on the logs (plots included) instead of printing")
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed its message; --help exits 0
        if exc.code in (0, None):
            raise
        raise UserError("invalid arguments (see the usage above).", where=parser.prog,
                        fix=f"run `{parser.prog} --help`.") from None


def compare_main(argv: list[str]) -> int:
    """`corral-tui compare A.eval B.eval [...] [--scorer NAME] [--k 1 3] [--json FILE]` (printed; with
    --tui the command line opens the Compare screen instead, corral_tui.inspect_compare)."""
    import sys

    from corral_core import report

    args = compare_args(argv)
    if args.json:
        report.check_writable(args.json, "--json")
    comparison = compare_logs([Path(p) for p in args.logs], scorer=args.scorer, k_values=args.k, seed=args.seed)
    document = comparison.to_dict()
    console = report.plain_console(sys.stdout)
    for run in comparison.runs:
        console.print(f"{run.arm}: {run.path} (scorer {run.scorer}, {len(run.records)} samples)",
                      highlight=False, markup=False, soft_wrap=True)
    report.print_arms(document, console)
    tasks = len({sample_id for sample_id, _epoch in comparison.paired})
    console.print(f"{len(comparison.paired)} sample-epochs ({tasks} samples x epochs) paired by id and epoch in "
                  "every log.", highlight=False)
    for arm, keys in comparison.unpaired.items():
        if keys:
            shown = ", ".join(f"{sid} (epoch {epoch})" for sid, epoch in keys[:10])
            more = f" and {len(keys) - 10} more" if len(keys) > 10 else ""
            console.print(f"not paired, only in {arm}: {len(keys)} sample(s): {shown}{more}; left out.",
                          highlight=False, markup=False, soft_wrap=True)
    if args.json:
        report.write_json(args.json, document)
    return 0
