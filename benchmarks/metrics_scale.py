"""How the statistics scale: a whole benchmark's analysis (per-arm metrics, every pair of arms with the
sign-flip test, the task-cluster bootstrap, Holm and the secondary McNemar) over synthetic trial records.

    .venv/bin/python benchmarks/metrics_scale.py                      # 100,000 trials, two shapes
    .venv/bin/python benchmarks/metrics_scale.py --trials 20000 --arms 2

Shapes: many tasks with one trial each (the sign-flip test and the interval see every trial as a task),
and 100 trials per task (McNemar pairs every trial). Prints CPU seconds for analyse() and peak traced
memory of the analysis itself (records are generated on the fly, as a store stream would give them).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corral_core.metrics import TrialRecord, analyse


def records(n_trials: int, trials_per_task: int, arms: list[str], seed: int) -> Iterator[TrialRecord]:
    """Trials of `arms` on n_trials // trials_per_task tasks; task difficulty varies, arms do not."""
    rng = random.Random(seed)
    n_tasks = max(1, n_trials // trials_per_task)
    levels = [rng.random() for _ in range(n_tasks)]
    for arm in arms:
        for task, level in enumerate(levels):
            for index in range(trials_per_task):
                success = rng.random() < level
                yield TrialRecord(task_id=f"t{task}", arm=arm, trial_index=index,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=100_000, help="trials per arm (default 100,000)")
    parser.add_argument("--arms", type=int, default=2, help="arms, every pair compared (default 2)")
    args = parser.parse_args()
    arms = [f"arm{i}" for i in range(args.arms)]
    for per_task in (1, 100):
        measure(args.trials, per_task, arms)


if __name__ == "__main__":
    main()
