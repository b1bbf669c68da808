"""Are the verdicts honest? A seeded calibration with designed truth, through the analysis batch runs.

    .venv/bin/python benchmarks/calibration.py                    # 500 replicates per cell (minutes)
    .venv/bin/python benchmarks/calibration.py --replicates 100   # a quick look

Each replicate is a two-arm benchmark of N tasks x 3 trials whose truth is known: task t has a base
pass rate b_t uniform on [0.2, 0.7] and a task x arm effect u_t uniform on [-0.2, 0.2]; arm A passes
with b_t - u_t / 2, arm B with b_t + delta + u_t / 2. So the true mean difference over the task
population is delta (0 under the null, +0.10 under the effect) and arm A's true score is 0.45.

The replicate's trials go through `corral_core.runner.results.compute_metrics` and
`BenchmarkResult.to_dict`, the functions a `--batch` run uses for its report, stored metrics and JSON
(everything after the trials ran: the agents and the store are not exercised here). Per cell it prints:

- false positives: share of null replicates whose verdict names a better arm (alpha 0.05);
- coverage: share of replicates whose 95% difference interval holds delta (null and effect pooled),
  and whose arm-A interval holds 0.45;
- power: share of effect replicates whose verdict is "B better on score";
- no verdict possible: share of replicates whose design cannot reach 0.05.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corral_core.metrics import TrialResult
from corral_core.runner.results import BenchmarkResult, compute_metrics
from corral_core.spec import spec_from_dict

SIZES = (2, 3, 5, 10, 20, 50)
TRIALS = 3
EFFECT = 0.10
TRUE_A = 0.45
SAMPLES = Path(__file__).resolve().parents[1] / "sample_tasks"


def make_spec(tasks: int):
    return spec_from_dict({"name": "calibration", "suite": str(SAMPLES / "samplemath.yaml"),
                           "model": "scripted/samplemath", "trials_per_task": TRIALS,
                           "arms": [{"name": "A"}, {"name": "B"}]}, SAMPLES)


def replicate(rng: random.Random, tasks: int, delta: float) -> list[TrialResult]:
    records = []
    for t in range(tasks):
        base, u = rng.uniform(0.2, 0.7), rng.uniform(-0.2, 0.2)
        for arm, rate in (("A", base - u / 2), ("B", base + delta + u / 2)):
            for i in range(TRIALS):
                records.append(TrialResult(f"task{t}", arm, i, score=float(rng.random() < rate)))
    return records


def run_cell(tasks: int, replicates: int, seed: int) -> dict[str, float]:
    spec = make_spec(tasks)
    rng = random.Random(seed * 1000 + tasks)
    counts = {"fp": 0, "power": 0, "cover_diff": 0, "cover_arm": 0, "impossible": 0, "intervals": 0}
    for r in range(replicates):
        for delta in (0.0, EFFECT):
            arms, comparisons, chains, headline = compute_metrics(spec, replicate(rng, tasks, delta))
            document = BenchmarkResult(f"cal{r}", spec, "finished", arms, comparisons, chains, [],
                                       headline_score=headline).to_dict(include_trials=False)
            (c,) = document["comparisons"]
            verdict = c["verdict"]
            better = verdict.endswith("better on score")
            if delta == 0.0:
                counts["fp"] += better
            else:
                counts["power"] += verdict == "B better on score"
            counts["impossible"] += verdict.startswith("no verdict is possible")
            ci = c["score"]["ci"]
            if ci is not None:
                counts["intervals"] += 1
                counts["cover_diff"] += ci[0] <= delta <= ci[1]
            arm_ci = document["arms"]["A"]["average_score"]["ci"]
            counts["cover_arm"] += arm_ci is not None and arm_ci[0] <= TRUE_A <= arm_ci[1]
    runs = 2 * replicates
    return {"fp": counts["fp"] / replicates, "power": counts["power"] / replicates,
            "cover_diff": counts["cover_diff"] / max(1, counts["intervals"]), "cover_arm": counts["cover_arm"] / runs,
            "impossible": counts["impossible"] / runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=500, help="replicates per cell and condition (500)")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    print(f"calibration: {args.replicates} replicates per cell and condition, {TRIALS} trials per task and arm, "
          f"alpha 0.05, effect +{EFFECT:.2f}, seed {args.seed}")
    print("| tasks | false positives (null) | 95% difference CI covers | arm CI covers | power at +0.10 "
          "| no verdict possible | seconds |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for tasks in args.sizes:
        start = time.process_time()
        cell = run_cell(tasks, args.replicates, args.seed)
        print(f"| {tasks} | {cell['fp']:.1%} | {cell['cover_diff']:.1%} | {cell['cover_arm']:.1%} | "
              f"{cell['power']:.1%} | {cell['impossible']:.0%} | {time.process_time() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
