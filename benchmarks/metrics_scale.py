"""How the statistics scale: a whole benchmark's analysis (per-arm metrics, every pair of arms with the
sign-flip test, the task-cluster bootstrap, Holm and the secondary McNemar) over synthetic trial records.

    .venv/bin/python benchmarks/metrics_scale.py                      # 100,000 trials, two shapes
    .venv/bin/python benchmarks/metrics_scale.py --trials 20000 --arms 2
    .venv/bin/python benchmarks/metrics_scale.py --sweep                 # 9 levels x 500 tasks x 5 trials

Shapes: many tasks with one trial each (the sign-flip test and the interval see every trial as a task),
and 100 trials per task (McNemar pairs every trial). Prints CPU seconds for analyse() and peak traced
memory of the analysis itself (records are generated on the fly, as a store stream would give them).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corral_core.metrics import TrialResult, analyse


def records(n_trials: int, trials_per_task: int, arms: list[str], seed: int) -> Iterator[TrialResult]:
    """Trials of `arms` on n_trials // trials_per_task tasks; task difficulty varies, arms do not."""
    rng = random.Random(seed)
    n_tasks = max(1, n_trials // trials_per_task)
    levels = [rng.random() for _ in range(n_tasks)]
    for arm in arms:
        for task, level in enumerate(levels):
            for index in range(trials_per_task):
                success = rng.random() < level
                yield TrialResult(task_id=f"t{task}", arm=arm, trial_index=index,
                                  score=1.0 if success else 0.0)


def measure(n_trials: int, trials_per_task: int, arms: list[str]) -> None:
    tracemalloc.start()
    started = time.process_time()
    result = analyse(records(n_trials, trials_per_task, arms, seed=1), arms, k_values=(1,))
    cpu = time.process_time() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    first = result.comparisons[0]
    print(f"{n_trials:>8,} trials per arm x {len(arms)} arms, {trials_per_task:>3} per task "
          f"({first.n_tasks:,} tasks): analyse {cpu:6.2f} s CPU, peak {peak / 2**20:6.1f} MiB; "
          f"sign-flip {first.score.p_method}, interval {first.score.ci_method}, "
          f"McNemar over {first.mcnemar.n_pairs:,} pairs", flush=True)


def sweep_records(levels: list[str], n_tasks: int, trials: int, seed: int) -> Iterator[TrialResult]:
    """A verbosity sweep: each level adds a little to every task's chance, so neighbours barely differ
    and distant levels clearly do (a mix of verdicts, as a real sweep gives)."""
    rng = random.Random(seed)
    difficulty = [rng.random() for _ in range(n_tasks)]
    for step, level in enumerate(levels):
        for task, base in enumerate(difficulty):
            chance = min(1.0, base + 0.01 * step)
            for index in range(trials):
                yield TrialResult(task_id=f"t{task}", arm=level, trial_index=index,
                                  score=1.0 if rng.random() < chance else 0.0)


def sweep(n_levels: int, n_tasks: int, trials: int) -> None:
    """The nine-level sweep as the Compare screen and the export analyse it: every pair, Holm, the trend."""
    levels = [f"level{i}" for i in range(n_levels)]
    data = list(sweep_records(levels, n_tasks, trials, seed=1))
    started = time.process_time()
    result = analyse(data, levels, k_values=(1,), ordered_levels=levels)
    cpu = time.process_time() - started
    verdicts = Counter(c.verdict for c in result.comparisons)
    print(f"sweep {n_levels} levels x {n_tasks} tasks x {trials} trials, {len(result.comparisons)} pairs: "
          f"analyse {cpu:5.2f} s CPU (load {os.getloadavg()[0]:.1f}); verdicts "
          + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())), flush=True)
    trend = result.trend
    if trend is not None:
        print(f"  trend: p {trend.p_value:.4g} ({trend.p_method}), slope {trend.slope:+.4f} per level")
    for c in result.comparisons:
        print(f"  {c.arm_a} vs {c.arm_b}: p {c.score.p_value:.4g} ({c.score.p_method}), "
              f"CI {c.score.ci}, {c.verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=100_000, help="trials per arm (default 100,000)")
    parser.add_argument("--arms", type=int, default=2, help="arms, every pair compared (default 2)")
    parser.add_argument("--sweep", action="store_true",
                        help="only the verbosity sweep: 9 levels x 500 tasks x 5 trials, all 36 pairs")
    args = parser.parse_args()
    if args.sweep:
        sweep(9, 500, 5)
        return
    arms = [f"arm{i}" for i in range(args.arms)]
    for per_task in (1, 100):
        measure(args.trials, per_task, arms)


if __name__ == "__main__":
    main()
