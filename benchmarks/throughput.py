"""Scripted trials per second for a 1,000-trial samplemath benchmark, with the SQLite store on.

    python benchmarks/throughput.py [--trials 1000] [--parallel 1 4] [--agent tool_calling|react] [--profile]

Each trial is the real path: open a trial on the embedded server over HTTP, an agent on the
scripted model (through litellm; tool_calling by default: one calculator call, then the answer),
tool calls over HTTP, submit, close; every event goes to the store writer. litellm's one-off
import is done before timing. `--profile` prints cProfile's top 25 (cumulative and own time).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from corral_core.batch import open_store  # noqa: E402
from corral_core.runner import BenchmarkRunner  # noqa: E402
from corral_core.spec import spec_from_dict  # noqa: E402


def make_spec(trials: int, parallel: int, name: str, agent: str = "tool_calling") -> object:
    tasks = 5  # samplemath has five tasks
    return spec_from_dict({
        "name": name, "suite": str(ROOT / "sample_tasks" / "samplemath.yaml"), "model": "scripted/samplemath",
        "agent": {"type": agent, "max_iterations": 6}, "arms": [{"name": "full", "verbosity": "full"}],
        "trials_per_task": max(1, trials // tasks), "k_values": [1], "parallel": parallel,
    }, ROOT / "sample_tasks")


def measure(trials: int, parallel: int, folder: Path, agent: str) -> tuple[int, float, dict[str, float]]:
    engine, repository, writer = open_store(str(folder / f"throughput-{parallel}.db"))
    spec = make_spec(trials, parallel, f"throughput-p{parallel}", agent)
    runner = BenchmarkRunner(spec, repository=repository, writer_sink=writer, auto_resume=False)
    started, cpu = time.perf_counter(), time.process_time()
    result = runner.run()
    elapsed = time.perf_counter() - started
    stats = writer.stats()
    stats["cpu"] = time.process_time() - cpu
    writer.close()
    engine.dispose()
    assert result.status == "finished" and result.errored == 0, result.status
    return result.trials_run, elapsed, stats


def warm_up(folder: Path, agent: str) -> None:
    engine, repository, writer = open_store(str(folder / "warmup.db"))
    BenchmarkRunner(make_spec(5, 1, "warm-up", agent), repository=repository, writer_sink=writer).run()
    writer.close()
    engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--agent", default="tool_calling", choices=["tool_calling", "react"])
    parser.add_argument("--profile", action="store_true", help="cProfile the first measurement (top 25)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corral-throughput-") as tmp:
        folder = Path(tmp)
        warm_up(folder, args.agent)
        for parallel in args.parallel:
            if args.profile:
                import cProfile
                import pstats

                profiler = cProfile.Profile()
                profiler.enable()
            count, elapsed, stats = measure(args.trials, parallel, folder, args.agent)
            if args.profile:
                profiler.disable()
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
                pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
                args.profile = False
            print(f"parallel {parallel}: {count} trials in {elapsed:.2f} s = {count / elapsed:.1f} trials/s "
                  f"(CPU {stats['cpu']:.2f} s = {1000 * stats['cpu'] / count:.1f} ms per trial; "
                  f"store: {stats['written']} events written, {stats['dropped']} dropped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
