"""corral-tui against Inspect AI on the same tool-calling workload, side by side; and a latency-bound mode.

    python benchmarks/vs_inspect.py [--trials 1000] [--parallel 1 4 16] [--repeats 2] [--only corral|inspect]
    python benchmarks/vs_inspect.py --latency [--trials 2000] [--in-flight 64 256] [--delay 0.5]
                                    [--executor processes] [--only corral|inspect]

The workload: ten arithmetic questions, each trial one `calculator` call and then the answer, from
a deterministic offline model, everything recorded. corral-tui runs it as `corral-tui --batch` with
the tool-calling agent on a `scripted/` model (litellm path, embedded REST server, SQLite store).
Inspect AI runs it as an eval of `use_tools(calculator()) + generate()` on its `mockllm` model whose
custom outputs give the same tool call, then the same answer, scored by `match(numeric=True)`, with
its eval log as its store. `--trials` is split into ten tasks x trials per task (Inspect: ten samples
x epochs); `--parallel` is corral's `parallel` and Inspect's `max_samples` (and `max_connections`).

Inspect AI is installed by this script into its own virtualenv (INSPECT_VENV, default
~/.cache/corral-tui-bench/inspect-venv, `inspect-ai==INSPECT_VERSION`); it is never a dependency of
corral-tui. Each run is a fresh process; runs are interleaved A/B (the order flips every repeat) so
a shared machine's load falls on both. Reported per run, median over repeats:

- wall: the process, start to exit (imports and start-up included);
- steady/s: trials finished between the 10th and the 90th percentile finish times, per second
  (corral: the store's `finished_at`; Inspect: the log's `completed_at`);
- CPU ms/trial: the process's CPU (all threads, with its live child processes, from /proc, polled) over that same
  window, per trial; `total`: the whole process's CPU (getrusage) per trial;
- peak RSS (ru_maxrss), and store bytes per trial (SQLite files; Inspect's log directory).

`--latency`: a fake OpenAI-compatible provider (benchmarks/fake_provider.py, its own process) answers
every call after `--delay` seconds; corral-tui runs `--trials` trials at each `--in-flight` with
`parallel` = in-flight, on litellm's `openai/` path, with `--executor` (default local; `processes`
spreads the in-flight trials over a Dask worker per core). The ideal rate is in-flight / (2 calls x
delay); memory per in-flight trial is the peak RSS difference between the two in-flight levels divided by
their difference. Inspect AI runs the same trials against the same provider (its `openai/` provider,
chat completions, no retries; `max_samples` = `max_connections` = in flight), interleaved A/B with
`--repeats`; the 1-minute load average is printed before and after every run. Its OpenAI provider
needs openai >= 3.4 (litellm pins 2.x), so it runs from INSPECT_VENV with INSPECT_OPENAI. Everything
stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
INSPECT_VERSION = "0.3.285"
INSPECT_OPENAI = "3.57.0"  # --latency: Inspect's OpenAI provider needs openai >= 3.4 (corral-tui's litellm pins 2.x)
INSPECT_VENV = Path(os.environ.get("INSPECT_VENV", Path.home() / ".cache" / "corral-tui-bench" / "inspect-venv"))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
QUESTIONS = [("+", 17, 25), ("*", 12, 12), ("/", 144, 12), ("-", 100, 58), ("**", 2, 10),
             ("+", 3.5, 4.25), ("*", 7, 6), ("/", 1, 8), ("-", 5, 12), ("**", 3, 4)]


def answer_of(operation: str, a: float, b: float) -> float:
    return {"+": a + b, "-": a - b, "*": a * b, "/": a / b, "**": a ** b}[operation]


def question_text(operation: str, a: float, b: float) -> str:
    return f"What is {a} {operation} {b}?"


# --- the two workloads -------------------------------------------------------------------------------

def write_corral_workload(folder: Path, trials: int, parallel: int, model: dict[str, Any] | None = None) -> Path:
    """A suite of the ten questions, its script for `scripted/vs-inspect`, and the spec; returns the spec."""
    tasks, script = [], {}
    for index, (operation, a, b) in enumerate(QUESTIONS):
        task_id = f"q{index}"
        tasks.append({"id": task_id, "prompt": question_text(operation, a, b), "answer": answer_of(operation, a, b)})
        script[task_id] = {"tool_calling": [
            {"tool_calls": [{"name": "calculator", "arguments": {"operation": operation, "a": a, "b": b}}]},
            {"content": f"Final Answer: {answer_of(operation, a, b)}"}]}
    suite = {"name": "vs-inspect", "environment": str(ROOT / "environments" / "samplemath.py"),
             "tools": ["calculator"], "scoring": {"type": "numeric", "tolerance": 1e-6}, "tasks": tasks}
    (folder / "vs-inspect.yaml").write_text(json.dumps(suite, indent=1))
    (folder / "vs-inspect.script.yaml").write_text(json.dumps({"tasks": script}, indent=1))
    spec = {"name": f"vs-inspect-p{parallel}", "suite": str(folder / "vs-inspect.yaml"),
            "model": model or "scripted/vs-inspect", "agent": {"type": "tool_calling", "max_iterations": 4},
            "arms": [{"name": "full", "verbosity": "full"}], "trials_per_task": max(1, trials // len(QUESTIONS)),
            "k_values": [1], "parallel": parallel}
    path = folder / f"spec-p{parallel}.yaml"
    path.write_text(json.dumps(spec, indent=1))
    return path


INSPECT_RUN = '''
import json, sys
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool

questions, epochs, parallel, log_dir = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
provider = sys.argv[5] if len(sys.argv) > 5 else ""  # --latency: the fake provider's base URL
by_text = {q["text"]: q for q in questions}


@tool
def calculator():
    async def execute(operation: str, a: float, b: float) -> str:
        """Apply one arithmetic operation to two numbers.

        Args:
            operation: The operation to apply: one of "+", "-", "*", "/", "**".
            a: The left operand.
            b: The right operand.
        """
        result = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else float("nan"), "**": a ** b}[operation]
        return str(float(result))
    return execute


def outputs(messages, tools, tool_choice, config):
    """The same two turns as corral's scripted model: one calculator call, then the answer."""
    question = by_text[next(m.text for m in messages if m.role == "user")]
    if any(m.role == "tool" for m in messages):
        output = ModelOutput.from_content("mockllm/model", "Final Answer: " + str(question["answer"]))
    else:
        output = ModelOutput.for_tool_call("mockllm/model", "calculator", question["arguments"])
    output.usage = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)
    return output


task = Task(dataset=MemoryDataset([Sample(input=q["text"], target=str(q["answer"])) for q in questions]),
            solver=[use_tools(calculator()), generate()], scorer=match(numeric=True), epochs=epochs)
if provider:  # the OpenAI provider on the fake OpenAI-compatible server (chat completions, no retries)
    from inspect_ai.model import GenerateConfig
    model = get_model("openai/fake-model", base_url=provider, api_key="not-a-secret", responses_api=False,
                      config=GenerateConfig(max_retries=0, timeout=120))
else:
    model = get_model("mockllm/model", custom_outputs=outputs)
logs = eval(task, model=model, max_samples=parallel, max_connections=parallel, log_dir=log_dir, display="none")
sys.exit(0 if logs and logs[0].status == "success" else 1)
'''

INSPECT_READ = '''
import json, sys
from inspect_ai.log import list_eval_logs, read_eval_log
log = read_eval_log(list_eval_logs(sys.argv[1])[0])
times, correct = [], 0
for sample in log.samples or []:
    times.append(sample.completed_at)
    correct += sum(1 for score in (sample.scores or {}).values() if score.value == "C")
print(json.dumps({"finished": times, "correct": correct}))
'''


def ensure_inspect(provider: bool = False) -> Path:
    """A python with inspect-ai INSPECT_VERSION (and, for `provider`, the openai package its OpenAI provider
    needs): this one when the [inspect] extra installed it and it fits, else the benchmark's own virtualenv
    (made on first use)."""
    wanted = f"inspect_ai.__version__ == '{INSPECT_VERSION}'"
    if provider:
        wanted += " and int(openai.__version__.split('.')[0]) >= 3"
    for python in (Path(sys.executable), INSPECT_VENV / "bin" / "python"):
        check = [str(python), "-c", f"import inspect_ai, openai, sys; sys.exit(not ({wanted}))"]
        if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
            return python
    python = INSPECT_VENV / "bin" / "python"
    print(f"installing inspect-ai=={INSPECT_VERSION} openai=={INSPECT_OPENAI} into {INSPECT_VENV} (once) ...",
          file=sys.stderr)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(INSPECT_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"inspect-ai=={INSPECT_VERSION}",
                    f"openai=={INSPECT_OPENAI}"], check=True)
    return python


# --- measuring one process ---------------------------------------------------------------------------

@dataclass
class Run:
    who: str
    parallel: int
    trials: int
    correct: int
    wall: float
    steady_rate: float
    steady_cpu_ms: float
    total_cpu_ms: float
    peak_rss_mb: float
    store_bytes: float


def _stat(pid: int | str) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _process_cpu(pid: int) -> float | None:
    """CPU seconds of the process and its live descendants (a `processes` run's Dask workers), every thread."""
    own = _stat(pid)
    if own is None:
        return None
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(entry.name)) is not None:
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    ticks, todo = 0, [pid]
    while todo:
        current = todo.pop()
        fields = own if current == pid else _stat(current)
        if fields is not None:
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
            todo += parents.get(current, [])
    return ticks / CLOCK_TICKS


def run_measured(command: list[str], env: dict[str, str], log: Path, ok_codes: tuple[int, ...] = (0,)
                 ) -> tuple[float, list[tuple[float, float]], Any]:
    """Run `command`; returns (wall seconds, [(epoch time, process CPU seconds)], rusage)."""
    with log.open("w") as out:
        started = time.time()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        samples: list[tuple[float, float]] = []
        while True:  # wait4, not poll(): it also gives the child's rusage (peak RSS, CPU)
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            cpu = _process_cpu(process.pid)
            if cpu is not None:
                samples.append((time.time(), cpu))
            time.sleep(0.05)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.time() - started
    if process.returncode not in ok_codes:
        raise SystemExit(f"{command[0]} failed (exit {process.returncode}); see {log}:\n{log.read_text()[-2000:]}")
    return wall, samples, usage


def _cpu_at(samples: list[tuple[float, float]], when: float) -> float:
    for (t0, c0), (t1, c1) in itertools.pairwise(samples):
        if t0 <= when <= t1:
            return c0 + (c1 - c0) * ((when - t0) / (t1 - t0) if t1 > t0 else 0.0)
    return samples[-1][1] if when > samples[-1][0] else samples[0][1]


def steady(finished: list[float], samples: list[tuple[float, float]]) -> tuple[float, float]:
    """Trials/s and CPU ms per trial between the 10th and 90th percentile finish times."""
    finished = sorted(finished)
    low, high = int(len(finished) * 0.1), int(len(finished) * 0.9) - 1
    span = finished[high] - finished[low]
    if high <= low or span <= 0 or not samples:
        return float("nan"), float("nan")
    cpu = _cpu_at(samples, finished[high]) - _cpu_at(samples, finished[low])
    return (high - low) / span, 1000 * cpu / (high - low)


def _epoch(value: Any) -> float:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _usage_numbers(usage: Any, trials: int) -> tuple[float, float]:
    cpu = usage.ru_utime + usage.ru_stime
    return 1000 * cpu / trials, usage.ru_maxrss / 1024


def run_corral(folder: Path, trials: int, parallel: int, model: dict[str, Any] | None = None,
               extra_env: dict[str, str] | None = None, executor: str = "local") -> Run:
    work = Path(tempfile.mkdtemp(prefix=f"corral-p{parallel}-", dir=folder))
    spec = write_corral_workload(work, trials, parallel, model)
    store = work / "store"
    store.mkdir()
    env = {**os.environ, "CORRAL_TUI_SCRIPTS": str(work), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_LOG": "ERROR", **(extra_env or {})}
    command = [str(Path(sys.executable).parent / "corral-tui"), "--batch", str(spec), "--db",
               str(store / "corral.db"), "--executor", executor]
    # exit 1: some trials errored; they are counted below and their errors printed
    wall, samples, usage = run_measured(command, env, work / "output.log", ok_codes=(0, 1))
    with sqlite3.connect(store / "corral.db") as db:
        rows = db.execute("SELECT finished_at, score FROM trial").fetchall()
        errors = db.execute("SELECT error, COUNT(*) FROM trial WHERE status != 'completed' GROUP BY error").fetchall()
    for error, count in errors:
        print(f"  corral-tui p{parallel}: {count} trials not completed: {error}", flush=True)
    finished = [_epoch(row[0]) for row in rows if row[0] is not None]
    rate, cpu = steady(finished, samples)
    total_cpu, rss = _usage_numbers(usage, len(rows))
    correct = sum(1 for row in rows if row[1] is not None and row[1] >= 1.0)
    return Run("corral-tui", parallel, len(rows), correct, wall, rate, cpu, total_cpu, rss,
               _folder_bytes(store) / max(1, len(rows)))


def run_inspect(python: Path, folder: Path, trials: int, parallel: int, provider: str = "") -> Run:
    work = Path(tempfile.mkdtemp(prefix=f"inspect-p{parallel}-", dir=folder))
    questions = [{"text": question_text(op, a, b), "answer": answer_of(op, a, b),
                  "arguments": {"operation": op, "a": a, "b": b}} for op, a, b in QUESTIONS]
    (work / "run.py").write_text(INSPECT_RUN)
    logs = work / "logs"
    env = {**os.environ, "INSPECT_LOG_LEVEL": "warning", "INSPECT_DISPLAY": "none"}
    env.pop("PYTHONPATH", None)
    command = [str(python), str(work / "run.py"), json.dumps(questions), str(max(1, trials // len(QUESTIONS))),
               str(parallel), str(logs), provider]
    wall, samples, usage = run_measured(command, env, work / "output.log")
    read = subprocess.run([str(python), "-c", INSPECT_READ, str(logs)], capture_output=True, text=True, check=True,
                          env=env)
    data = json.loads(read.stdout)
    finished = [_epoch(value) for value in data["finished"] if value]
    rate, cpu = steady(finished, samples)
    total_cpu, rss = _usage_numbers(usage, len(data["finished"]))
    return Run("inspect-ai", parallel, len(data["finished"]), data["correct"], wall, rate, cpu, total_cpu, rss,
               _folder_bytes(logs) / max(1, len(data["finished"])))


# --- the two modes -----------------------------------------------------------------------------------

def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _median(runs: list[Run], name: str) -> float:
    return statistics.median(getattr(r, name) for r in runs)


def _print_run(run: Run) -> None:
    print(f"  {run.who:10} p{run.parallel:<3} {run.trials} trials ({run.correct} correct): wall {run.wall:6.2f} s, "
          f"steady {run.steady_rate:6.1f}/s, CPU {run.steady_cpu_ms:5.1f} ms/trial (total {run.total_cpu_ms:5.1f}), "
          f"peak RSS {run.peak_rss_mb:5.0f} MB, store {run.store_bytes / 1024:4.1f} KB/trial", flush=True)


def side_by_side(args: argparse.Namespace, folder: Path) -> None:
    sides = ("corral", "inspect") if args.only is None else (args.only,)
    python = ensure_inspect() if "inspect" in sides else Path(sys.executable)
    print(f"workload: {args.trials} trials = {len(QUESTIONS)} tasks x {args.trials // len(QUESTIONS)}; "
          f"inspect-ai {INSPECT_VERSION}; {os.cpu_count()} cores; load average {loadavg()}", flush=True)
    results: dict[tuple[str, int], list[Run]] = {}
    for parallel in args.parallel:
        for repeat in range(args.repeats):
            order = sides if repeat % 2 == 0 else sides[::-1]
            for who in order:
                run = run_corral(folder, args.trials, parallel) if who == "corral" else \
                    run_inspect(python, folder, args.trials, parallel)
                results.setdefault((run.who, parallel), []).append(run)
                _print_run(run)
    print(f"\nmedians over {args.repeats} interleaved runs each (load average now {loadavg()}):")
    print("| parallel | who | wall s | steady trials/s | CPU ms/trial (steady / total) | peak RSS MB "
          "| store KB/trial |")
    print("|---|---|---|---|---|---|---|")
    for parallel in args.parallel:
        for who in ("corral-tui", "inspect-ai"):
            if (who, parallel) not in results:
                continue
            runs = results[(who, parallel)]
            print(f"| {parallel} | {who} | {_median(runs, 'wall'):.1f} | {_median(runs, 'steady_rate'):.1f} | "
                  f"{_median(runs, 'steady_cpu_ms'):.1f} / {_median(runs, 'total_cpu_ms'):.1f} | "
                  f"{_median(runs, 'peak_rss_mb'):.0f} | {_median(runs, 'store_bytes') / 1024:.1f} |")
    for parallel in args.parallel if args.only is None else ():
        ours, theirs = results[("corral-tui", parallel)], results[("inspect-ai", parallel)]
        print(f"parallel {parallel}: corral-tui / Inspect steady trials/s = "
              f"{_median(ours, 'steady_rate') / _median(theirs, 'steady_rate'):.2f}x")


def latency_bound(args: argparse.Namespace, folder: Path) -> None:
    sides = ("corral", "inspect") if args.only is None else (args.only,)
    python = ensure_inspect(provider=True) if "inspect" in sides else Path(sys.executable)
    provider = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "fake_provider.py"),
                                 "--delay", str(args.delay)], stdout=subprocess.PIPE, text=True)
    try:
        assert provider.stdout is not None
        port = int(provider.stdout.readline().split()[1])
        base_url = f"http://127.0.0.1:{port}/v1"
        model = {"id": "openai/fake-model", "api_base": base_url,
                 "api_key_env": "FAKE_PROVIDER_KEY", "timeout": 120, "max_retries": 0}
        print(f"latency-bound: {args.trials} trials, 2 provider calls per trial, {args.delay:g} s each; "
              f"corral-tui executor {args.executor}; inspect-ai {INSPECT_VERSION} (openai provider, "
              f"max_samples = max_connections = in flight); {os.cpu_count()} cores; load average {loadavg()}",
              flush=True)
        results: dict[tuple[str, int], list[Run]] = {}
        for in_flight in args.in_flight:
            ideal = in_flight / (2 * args.delay)
            for repeat in range(args.repeats):
                order = sides if repeat % 2 == 0 else sides[::-1]
                for who in order:
                    before = loadavg().split()[0]
                    run = run_corral(folder, args.trials, in_flight, model, {"FAKE_PROVIDER_KEY": "not-a-secret"},
                                     args.executor) if who == "corral" else \
                        run_inspect(python, folder, args.trials, in_flight, base_url)
                    results.setdefault((run.who, in_flight), []).append(run)
                    _print_run(run)
                    print(f"    {run.steady_rate:.1f} trials/s steady of {ideal:.0f} ideal = "
                          f"{100 * run.steady_rate / ideal:.0f}%; {run.trials / run.wall:.1f} trials/s over the whole "
                          f"process; 1-min load average {before} before, {loadavg().split()[0]} after", flush=True)
        print(f"\nmedians over {args.repeats} interleaved runs each (load average now {loadavg()}):")
        print("| in flight | who | steady trials/s (% of ideal) | CPU ms/trial (steady / total) | peak RSS MB |")
        print("|---|---|---|---|---|")
        for in_flight in args.in_flight:
            ideal = in_flight / (2 * args.delay)
            for who in ("corral-tui", "inspect-ai"):
                if (who, in_flight) not in results:
                    continue
                runs = results[(who, in_flight)]
                rate = _median(runs, "steady_rate")
                print(f"| {in_flight} | {who} | {rate:.1f} ({100 * rate / ideal:.0f}%) | "
                      f"{_median(runs, 'steady_cpu_ms'):.1f} / {_median(runs, 'total_cpu_ms'):.1f} | "
                      f"{_median(runs, 'peak_rss_mb'):.0f} |")
        ours = [results[("corral-tui", f)] for f in args.in_flight if ("corral-tui", f) in results]
        if len(ours) >= 2:
            low, high = ours[0][0], ours[-1][0]
            per_trial = (high.peak_rss_mb - low.peak_rss_mb) / (high.parallel - low.parallel)
            print(f"corral-tui memory per in-flight trial: ({high.peak_rss_mb:.0f} - {low.peak_rss_mb:.0f} MB) / "
                  f"({high.parallel} - {low.parallel}) = {1024 * per_trial:.0f} KB")
    finally:
        provider.terminate()
        provider.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=None, help="trials per run (1000; --latency: 2000)")
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side per parallelism (--latency: "
                        "per in-flight level)")
    parser.add_argument("--latency", action="store_true", help="the latency-bound mode (both, on a fake provider)")
    parser.add_argument("--in-flight", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--delay", type=float, default=0.5, help="--latency: the provider's seconds per call")
    parser.add_argument("--executor", default="local", help="--latency: corral-tui's executor (local, processes)")
    parser.add_argument("--only", choices=("corral", "inspect"), default=None,
                        help="run one side only (profiling one side's CPU per trial; no ratio is printed)")
    parser.add_argument("--keep", action="store_true", help="keep the runs' folders (stores, logs) and say where")
    args = parser.parse_args()
    args.trials = args.trials or (2000 if args.latency else 1000)
    folder = Path(tempfile.mkdtemp(prefix="corral-vs-inspect-"))
    try:
        (latency_bound if args.latency else side_by_side)(args, folder)
    finally:
        if args.keep:
            print(f"runs kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
