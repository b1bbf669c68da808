"""How fast the workbench opens: process start -> first frame -> "Ready." -> first trial started, and
`--batch` start -> first trial finished line.

    .venv/bin/python benchmarks/tui_start.py [--repeats 5] [--skip-batch]

The real `corral-tui` runs in a pseudo-terminal (160 x 50) on the sample suites' scripted model, with a
fresh SQLite store each time. Timestamps are taken from just before the process is started:
- first frame: the first output holding the status line ("model ..."), painted with the first screen;
- "Ready.": the status line's "Ready." (suites loaded, store open, servers started);
- first trial started: ctrl+r is sent at "Ready." and the status line says the run is "running"
  (the run's trials are being started).
`--batch sample_tasks/samplemath.bench.yaml` is timed from start to its first trial line on stdout.
Medians of `--repeats` runs are printed with the load average (a busy machine stretches every number).
Bytecode caches are warm, as for a user from their second start on: one unmeasured start goes first,
and PYTHONDONTWRITEBYTECODE (set in some shells and CI) is dropped for the measured processes, which
otherwise compile every module of ours from source on every start (about 0.15 s of CPU here).
`--cold-cache` keeps the environment as it is and skips the unmeasured start.
Targets on a quiet machine: first frame <= 0.5 s, "Ready." <= 1.5 s.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXECUTABLE = shutil.which("corral-tui", path=str(Path(sys.executable).parent)) or "corral-tui"
TIMEOUT = 120.0


def _environment(cold: bool) -> dict[str, str]:
    environment = dict(os.environ)
    if not cold:
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return environment


def _workbench_once(directory: Path, cold: bool) -> dict[str, float]:
    started = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real workbench
        os.environ.clear()
        os.environ.update(_environment(cold), TERM="xterm-256color", COLUMNS="160", LINES="50")
        os.chdir(ROOT)
        os.execv(EXECUTABLE, [EXECUTABLE, "--db", str(directory / "corral.db")])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    output = b""
    marks: dict[str, float] = {}
    try:
        while "trial" not in marks and time.monotonic() - started < TIMEOUT:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                output += os.read(fd, 1 << 16)
            except OSError:
                break
            now = time.monotonic() - started
            if "frame" not in marks and b"model" in output:
                marks["frame"] = now
            if "ready" not in marks and b"Ready." in output:
                marks["ready"] = now
                seen = len(output)
                os.write(fd, b"\x12")  # ctrl+r: run the form as it stands
            if "ready" in marks and b"running" in output[seen:]:
                marks["trial"] = now
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    if len(marks) < 3:
        raise SystemExit(f"the workbench did not get past {sorted(marks)} within {TIMEOUT:.0f} s")
    return marks


def _batch_once(directory: Path, cold: bool) -> float:
    started = time.monotonic()
    process = subprocess.Popen([EXECUTABLE, "--batch", "sample_tasks/samplemath.bench.yaml", "--db",
                                str(directory / "batch.db")], cwd=ROOT, env=_environment(cold),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if "trial" in line.lower():
                return time.monotonic() - started
        raise SystemExit("the batch run printed no trial line")
    finally:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-batch", action="store_true")
    parser.add_argument("--cold-cache", action="store_true", help="keep PYTHONDONTWRITEBYTECODE, no warm-up start")
    args = parser.parse_args()
    if not args.cold_cache:  # writes the bytecode caches; not measured
        with tempfile.TemporaryDirectory() as directory:
            _workbench_once(Path(directory), cold=False)
            if not args.skip_batch:
                _batch_once(Path(directory), cold=False)
    load_before = os.getloadavg()[0]
    runs = []
    batch = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as directory:
            runs.append(_workbench_once(Path(directory), args.cold_cache))
            if not args.skip_batch:
                batch.append(_batch_once(Path(directory), args.cold_cache))
    load_after = os.getloadavg()[0]

    def median(key: str) -> str:
        values = [run[key] for run in runs]
        return f"{statistics.median(values):5.2f} s (min {min(values):.2f}, max {max(values):.2f})"

    print(f"corral-tui start, median of {args.repeats} (load average {load_before:.1f} -> {load_after:.1f}, "
          f"{os.cpu_count()} CPUs, {'cold' if args.cold_cache else 'warm'} bytecode caches):")
    print(f"  first frame          {median('frame')}")
    print(f"  \"Ready.\"             {median('ready')}")
    print(f"  first trial started  {median('trial')}")
    if batch:
        print(f"  --batch first trial  {statistics.median(batch):5.2f} s (min {min(batch):.2f}, max {max(batch):.2f})")


if __name__ == "__main__":
    main()
