"""Driver memory over a long local run with the store attached: does RSS stay flat after warm-up?

    python benchmarks/rss_flat.py [--trials 20000] [--parallel 4] [--every 2000]

Runs scripted samplemath trials (the tool-calling agent: one calculator call, then the answer) on
local threads, every event into a SQLite store, and prints the driver's resident set size (VmRSS)
every `--every` finished trials, then after warm-up (`--warm-up` trials) and at the end, with the
growth per trial between them. With a store the runner keeps a count of finished trials, not
their payloads, so the growth per trial should be ~0 (issue 23 measured ~1.4 KB per trial before).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.throughput import make_spec  # noqa: E402
from corral_core.batch import open_store  # noqa: E402
from corral_core.events import Event, EventKind  # noqa: E402
from corral_core.runner import BenchmarkRunner  # noqa: E402


def rss_mb() -> float:
    """This process's resident set size in MB (Linux: VmRSS in /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


class RssSampler:
    """An event sink noting RSS every `every` finished trials."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.done = 0
        self.samples: list[tuple[int, float]] = []
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        if event.kind is not EventKind.TRIAL_FINISHED:
            return
        with self._lock:
            self.done += 1
            if self.done % self.every == 0:
                self.samples.append((self.done, rss_mb()))
                print(f"{self.done:>7} trials: RSS {self.samples[-1][1]:.1f} MB", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--warm-up", type=int, default=7_000,
                        help="trials after which the bounded caches are full: the embedded server keeps the last "
                             "1,000 finished trials of each task (5,000 for samplemath's five tasks)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corral-rss-") as tmp:
        engine, repository, writer = open_store(str(Path(tmp) / "rss.db"))
        sampler = RssSampler(args.every)
        runner = BenchmarkRunner(make_spec(args.trials, args.parallel, "rss-flat"), repository=repository,
                                 writer_sink=writer, sink=sampler, auto_resume=False)
        started = time.perf_counter()
        result = runner.run()
        elapsed = time.perf_counter() - started
        writer.close()
        engine.dispose()
    warmed = [sample for sample in sampler.samples if sample[0] >= args.warm_up] or sampler.samples
    (first_n, first), (last_n, last) = warmed[0], sampler.samples[-1]
    per_trial = (last - first) * 1024 * 1024 / max(1, last_n - first_n)
    print(f"{result.trials_run} trials ({result.status}) in {elapsed:.0f} s; RSS after warm-up ({first_n} trials) "
          f"{first:.1f} MB, at the end {last:.1f} MB: {per_trial:+.0f} bytes per trial; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
