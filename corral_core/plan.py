"""`corral-tui plan SPEC [--from BENCHMARK_ID] --effect 0.10 [--power 0.8]`: how many tasks and trials
the spec's comparison needs, before anything is spent (see corral_core/metrics/power.py for the model)."""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any

from corral_core.errors import UserError
from corral_core.metrics import tasks_needed
from corral_core.metrics.power import (
    Assumptions,
    assumptions_from_pilot,
    minimum_detectable_effect,
    power_table,
    simulated_power,
)
from corral_core.metrics.records import effective_score, in_primary_analysis
from corral_core.metrics.stats import MDE_FORMULA

TASK_GRID = (5, 10, 20, 30, 50, 75, 100, 150, 200)
TRIAL_GRID = (1, 3, 5)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="corral-tui plan", description=(
        "Power of the spec's paired comparison for a true effect: the tasks x trials trade-off, by simulation "
        "with the verdict's own sign-flip test, and Miller's formula as a check."))
    parser.add_argument("spec", metavar="SPEC", help="the benchmark spec (YAML)")
    parser.add_argument("--from", dest="pilot", metavar="BENCHMARK_ID",
                        help="estimate the rates and spreads from a recorded pilot benchmark")
    parser.add_argument("--db", metavar="URL", help="the store holding the pilot (default: the user store)")
    parser.add_argument("--effect", type=float, required=True, help="the true score difference to detect, e.g. 0.10")
    parser.add_argument("--power", type=float, default=0.8, help="the power wanted (default 0.8)")
    parser.add_argument("--alpha", type=float, default=0.05, help="the test's level (default 0.05)")
    parser.add_argument("--base-rate", type=float, default=0.5, help="assumed mean score without a pilot (0.5)")
    parser.add_argument("--task-sd", type=float, default=0.2, help="assumed spread of task difficulty (0.2)")
    parser.add_argument("--task-arm-sd", type=float, default=0.1,
                        help="assumed spread of the effect across tasks (task x arm interaction, 0.1)")
    parser.add_argument("--simulations", type=int, default=300, help="simulated studies per design (300)")
    parser.add_argument("--seed", type=int, default=0)
    return parser


def _check(args: argparse.Namespace) -> None:
    if not 0.0 < abs(args.effect) <= 1.0:
        raise UserError(f"--effect must be a score difference between 0 and 1 (not 0), got {args.effect}.",
                        where="--effect", fix="for example --effect 0.10 (ten points).")
    if not 0.0 < args.power < 1.0 or not 0.0 < args.alpha < 0.5:
        raise UserError("--power must lie in (0, 1) and --alpha in (0, 0.5).", where="--power / --alpha")
    if not 10 <= args.simulations <= 100_000:
        raise UserError(f"--simulations must be between 10 and 100000, got {args.simulations}.",
                        where="--simulations")
    for name in ("base_rate", "task_sd", "task_arm_sd"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            raise UserError(f"--{name.replace('_', '-')} must lie in [0, 1].", where=f"--{name.replace('_', '-')}")


def _pilot(db: str | None, benchmark_id: str, defaults: Assumptions) -> Assumptions:
    from corral_core.batch import open_repository
    from corral_core.runner import stored_benchmark_records

    engine, repository = open_repository(db, create=False)
    try:
        info = repository.get_benchmark(benchmark_id)
        if info is None:
            raise UserError(f"no benchmark {benchmark_id!r} in the store.", where="--from",
                            fix="list benchmarks with `corral-tui history` (with the same --db).")
        scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for record in stored_benchmark_records(repository, info, tool_calls=False):
            if in_primary_analysis(record):
                scores[record.arm][record.task_id].append(effective_score(record))
    finally:
        engine.dispose()
    if not scores:
        raise UserError(f"benchmark {benchmark_id} has no analysed trial to estimate from.", where="--from",
                        fix="run a small pilot first (a few tasks x 3 trials), or plan from stated assumptions.")
    return assumptions_from_pilot(scores, defaults)


def plan_main(argv: list[str]) -> int:
    from corral_core.batch import _parse
    from corral_core.spec import load_spec

    args = _parse(_parser(), argv)
    _check(args)
    spec = load_spec(args.spec)
    defaults = Assumptions(args.base_rate, args.task_sd, args.task_arm_sd)
    assumptions = _pilot(args.db, args.pilot, defaults) if args.pilot else defaults
    for line in plan_lines(spec, assumptions, args):
        print(line)
    return 0


def plan_lines(spec: Any, a: Assumptions, args: argparse.Namespace) -> list[str]:
    arms = max(1, len(spec.arms))
    pairs = max(1, arms * (arms - 1) // 2)
    alpha = args.alpha / pairs
    tasks, trials = len(spec.task_ids), int(spec.trials_per_task)
    say = []
    family = f"{pairs} pairs of arms: each tested at {args.alpha:g}/{pairs} = {alpha:.3g} (Holm's first step)" \
        if pairs > 1 else f"one pair of arms, tested at {alpha:g}"
    say.append(f"plan for {spec.name}: effect {args.effect:+.2f} on score, power {args.power:.0%}; {family}; "
               "unit: task; paired sign-flip test")
    say.append(f"assumptions ({a.source}): mean score {a.base_rate:.2f}, task difficulty sd {a.task_sd:.2f}, "
               f"task x arm sd {a.interaction_sd:.2f}, within-task pass/fail variance {a.within:.3f}")
    needed = tasks_needed(alpha)
    now = f"current design: {tasks} task{'s' if tasks != 1 else ''} x {trials} trial{'s' if trials != 1 else ''}: "
    if tasks < needed:
        now += (f"no verdict is possible with {tasks} tasks (p < {alpha:.3g} needs at least {needed} differing "
                "tasks)")
    else:
        mde = minimum_detectable_effect(a, tasks, trials, args.power, alpha)
        simulated = simulated_power(a, args.effect, tasks, trials, alpha=alpha, simulations=args.simulations,
                                    seed=args.seed)
        now += (f"minimum detectable effect ±{mde:.3f} at {args.power:.0%} power ({MDE_FORMULA}); simulated power at "
                f"{args.effect:+.2f}: {simulated:.0%}" if mde is not None and simulated is not None else "")
    say.append(now)
    grid = sorted(set(TASK_GRID) | ({tasks} if tasks >= needed else set()))
    table = power_table(a, args.effect, power=args.power, alpha=alpha, tasks=grid, trials=TRIAL_GRID,
                        simulations=args.simulations, seed=args.seed)
    say.append(f"simulated power ({args.simulations} studies per design; '-' : no verdict possible) and Miller's "
               f"tasks for {args.power:.0%}:")
    say.append("trials | " + " ".join(f"{n:>5}" for n in grid) + " | Miller tasks")
    best = None
    for r in TRIAL_GRID:
        row = [d for d in table if d.trials == r]
        cells = " ".join(f"{'-' if d.power is None else f'{d.power:.0%}':>5}" for d in row)
        say.append(f"{r:>6} | {cells} | {row[0].miller_tasks}")
        for d in row:
            if d.power is not None and d.power >= args.power and (best is None or d.tasks * d.trials < best[0]):
                best = (d.tasks * d.trials, d.tasks, d.trials)
    if best is not None:
        say.append(f"cheapest design in the grid reaching {args.power:.0%}: {best[1]} tasks x {best[2]} trials "
                   f"({best[0]} trials per arm)")
    else:
        say.append(f"no design in the grid reaches {args.power:.0%}: more tasks are needed (Miller above)")
    if a.base_rate + abs(args.effect) + a.task_sd > 1.0 or a.base_rate - a.task_sd - abs(args.effect) < 0.0:
        say.append(f"note: around a mean of {a.base_rate:.2f} with task sd {a.task_sd:.2f} many tasks' rates meet 0 or "
                   f"1, where an effect of {args.effect:+.2f} cannot fully show: the simulation (rates clipped to "
                   "[0, 1]) is then below what Miller's formula, which ignores that, promises")
    say.append("trials within a task are correlated: past a few trials, more tasks buy more power than more trials")
    return say

