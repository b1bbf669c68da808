"""Scripted trials per second: the `local` executor against `processes` (a Dask LocalCluster) at 1, 2
and all workers, with the SQLite store on, and CPU-seconds per trial (all processes of the run).

    python benchmarks/scale.py [--trials 2000] [--workers 1 2 0]      # 0 means one worker per core

Each run is a fresh benchmark of samplemath on the scripted tool-calling agent, into a SQLite store.
`trials/s` is end to end, from making the runner to its return: for `processes` it includes
starting the cluster (scheduler, nannies, forking the workers), the workers' embedded servers and
closing the cluster. `steady/s` leaves that out: trials finished between the first and the last
TRIAL_FINISHED on the driver.

Not in any row, and printed first: the once-per-process litellm import. `local` trials need it in
this process; `processes` workers are forked from a forkserver that imports it (runner/executors.py
`start_forkserver`, which every processes run calls; the first run of a process waits for it).
CPU-seconds are getrusage(SELF) + getrusage(CHILDREN) + the forkserver's own and its exited
children's (the workers: the cluster is closed at the end of each run), divided by the trials.
The machine's load average is printed before each run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import psutil

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

from corral_core.batch import open_store  # noqa: E402
from corral_core.events import Event, EventKind  # noqa: E402
from corral_core.runner import BenchmarkRunner  # noqa: E402
from corral_core.spec import spec_from_dict  # noqa: E402


def make_spec(trials: int, name: str) -> object:
    return spec_from_dict({
        "name": name, "suite": str(ROOT / "sample_tasks" / "samplemath.yaml"), "model": "scripted/samplemath",
        "agent": {"type": "tool_calling", "max_iterations": 6}, "arms": [{"name": "full", "verbosity": "full"}],
        "trials_per_task": max(1, trials // 5), "k_values": [1], "parallel": 2,
    }, ROOT / "sample_tasks")


def forkserver() -> psutil.Process | None:
    """The forkserver process that forks `processes` workers (a child of this process), if started."""
    for child in psutil.Process().children():
        try:
            if "multiprocessing.forkserver" in " ".join(child.cmdline()):
                return child
        except psutil.Error:
            continue
    return None


def wait_for_workers_to_exit() -> None:
    """Until the forkserver has reaped the workers of a closed cluster: then their CPU counts in its children's."""
    server = forkserver()
    deadline = time.monotonic() + 30
    while server is not None and server.children() and time.monotonic() < deadline:
        time.sleep(0.05)


def cpu_seconds() -> float:
    """This process, its exited children, the forkserver and its exited children (workers), in CPU-seconds."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    server = forkserver()
    if server is not None:
        times = server.cpu_times()
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _nothing() -> None:
    """Forked once to wait until the forkserver has imported what workers need."""


class FinishTimes:
    """When each TRIAL_FINISHED reached the driver."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def emit(self, event: Event) -> None:
        if event.kind is EventKind.TRIAL_FINISHED:
            self.times.append(time.perf_counter())

    def steady_rate(self) -> float:
        span = self.times[-1] - self.times[0] if len(self.times) > 1 else 0.0
        return (len(self.times) - 1) / span if span > 0 else float("nan")


def measure(trials: int, executor: str, workers: int | None, folder: Path) -> tuple[int, float, float, float]:
    label = f"{executor}-{workers}"
    engine, repository, writer = open_store(str(folder / f"scale-{label}.db"))
    finishes = FinishTimes()
    try:
        cpu, wall = cpu_seconds(), time.perf_counter()
        runner = BenchmarkRunner(make_spec(trials, f"scale-{label}"), repository=repository, writer_sink=writer,
                                 sink=finishes, executor=executor, workers=workers)
        result = runner.run()
        wall = time.perf_counter() - wall
        wait_for_workers_to_exit()
        cpu = cpu_seconds() - cpu
    finally:
        writer.close()
        engine.dispose()
    assert result.errored == 0, f"{result.errored} trials errored"
    return len(result.records), wall, cpu, finishes.steady_rate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 0])
    args = parser.parse_args()
    from corral_core.llm import preload
    from corral_core.runner.executors import start_forkserver

    cores = os.cpu_count() or 1
    print(f"{args.trials} scripted trials (samplemath, tool_calling), {cores} cores")
    print(f"once per process, in no row (load {os.getloadavg()[0]:.2f}):")
    cpu, wall = cpu_seconds(), time.perf_counter()
    preload()
    print(f"  litellm import in this process (local trials):       {time.perf_counter() - wall:5.1f} s "
          f"{cpu_seconds() - cpu:5.1f} CPU-s")
    if args.workers:
        cpu, wall = cpu_seconds(), time.perf_counter()
        start_forkserver()
        first = multiprocessing.get_context("forkserver").Process(target=_nothing)
        first.start()
        first.join()
        print(f"  forkserver start with litellm (processes workers): {time.perf_counter() - wall:5.1f} s "
              f"{cpu_seconds() - cpu:5.1f} CPU-s")
    print(f"{'executor':<22}{'trials':>8}{'seconds':>10}{'trials/s':>10}{'steady/s':>10}{'CPU-s/trial':>13}"
          f"{'load before':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [("local", None)] + [("processes", w or cores) for w in args.workers]
        for executor, workers in runs:
            load = os.getloadavg()[0]
            n, wall, cpu, steady = measure(args.trials, executor, workers, Path(tmp))
            name = executor if workers is None else f"{executor} ({workers} worker{'s' if workers != 1 else ''})"
            print(f"{name:<22}{n:>8}{wall:>10.1f}{n / wall:>10.1f}{steady:>10.1f}{cpu / n:>13.4f}{load:>13.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
