"""Store numbers the README quotes: writer throughput, history paging, and the whole-benchmark reads
(end-of-run metrics, export, the compare screen) on a large benchmark.

    .venv/bin/python benchmarks/store_history.py [--trials 100000] [--events 100000]
    .venv/bin/python benchmarks/store_history.py --trials 1000000 --events 0 --tasks 1000 --store /work/store1m.db

Uses a temporary SQLite file, or --store FILE: built there once and reused by later runs of the same
--trials/--tasks/--tool-calls (upgraded to the current schema first). Prints one line per measurement.
The trials (two arms, --tasks tasks, one tool call each) are bulk-inserted with executemany in one
transaction, not run. Each whole-benchmark read runs in a fresh interpreter on that store and reports
its wall time, its CPU time and the peak RSS of that interpreter (ru_maxrss) next to its RSS before
the call (imports, an open engine).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import distinct, func, insert, select, update

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corral_core.events import Event, EventKind, event_from
from corral_core.store import ArmInfo, Repository, StoreWriter, init_db, make_engine
from corral_core.store.tables import benchmark_table, tool_call_table, trial_table

SAMPLES = Path(__file__).resolve().parents[1] / "sample_tasks"
ARMS = ("brief", "full")
CHUNK = 20_000  # rows per executemany, all in one transaction


def writer_throughput(db: Path, n_events: int) -> float:
    """Events/s from emit to commit, a realistic mix (messages, tool calls, LLM calls, hooks)."""
    engine = make_engine(db)
    init_db(engine)
    Repository(engine, id_factory=lambda: "bm_w").create_benchmark(spec_name="w", spec_digest="w")
    call = {"tool_name": "calculator", "arguments": {"operation": "+", "a": 1, "b": 2}, "result": "3.0",
            "status": "success", "error_message": None, "duration": 0.001, "risk": "safe", "approval": None,
            "render": "text", "iteration": 1}
    llm = {"role": "agent", "turn": 0, "digest": "d" * 64, "content": "thinking " * 20,
           "tool_calls": [{"id": "c", "name": "calculator", "arguments": "{}"}],
           "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
           "cost": 0.0, "duration": 0.1, "model": "scripted/x", "arm": "a", "trial_index": 0}
    per_trial = 50
    events: list[Event] = []
    for t in range(n_events // per_trial):
        trial_id = f"tr_{t}"
        events.append(event_from(EventKind.TRIAL_STARTED, trial_id, "task", {"arm": "a", "trial_index": t}, "bm_w"))
        for i in range(per_trial - 2):
            kind = i % 4
            if kind == 0:
                message = {"role": "assistant", "content": "x" * 300, "index": i}
                events.append(event_from(EventKind.MESSAGE, trial_id, "task", message, "bm_w"))
            elif kind == 1:
                events.append(event_from(EventKind.TOOL_CALL, trial_id, "task", call, "bm_w"))
            elif kind == 2:
                events.append(event_from(EventKind.LLM_RESPONSE, trial_id, "task", llm, "bm_w"))
            else:
                hook = {"point": "after_iteration", "hook": "h", "iteration": i}
                events.append(event_from(EventKind.HOOK_FIRED, trial_id, "task", hook, "bm_w"))
        events.append(event_from(EventKind.TRIAL_FINISHED, trial_id, "task", {"status": "completed", "score": 1.0},
                                 "bm_w"))
    writer = StoreWriter(engine).start()
    start = time.perf_counter()
    for event in events:
        writer.emit(event)
    writer.flush(120)
    elapsed = time.perf_counter() - start
    writer.close()
    engine.dispose()
    assert writer.dropped == 0 and writer.failed == 0, writer.stats()
    return len(events) / elapsed


def bulk_trials(repo: Repository, engine, benchmark_id: str, n: int, tasks: int = 50, tool_calls: int = 0) -> None:
    """`n` trials of two arms over `tasks` tasks (trial index = round), inserted in one transaction."""
    base = datetime(2025, 1, 1, tzinfo=UTC)
    per_round = len(ARMS) * tasks
    with engine.begin() as conn:
        for start in range(0, n, CHUNK):
            rows = [
                {
                    "id": f"tr_{i:07d}", "benchmark_id": benchmark_id, "arm": ARMS[(i // tasks) % 2],
                    "task_id": f"task_{i % tasks}", "trial_index": i // per_round, "episode_id": None,
                    "agent": "react", "model": "m", "verbosity": None,
                    "status": ("completed", "error", "surrendered")[i % 3],
                    "score": float(i % 2), "answer": "42", "explanation": None, "surrendered": i % 3 == 2,
                    "error": None, "prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110, "cost": 0.0,
                    "duration": 1.0, "tool_duration": 0.1, "iterations": 3, "assisted": False,
                    "started_at": base + timedelta(seconds=i), "finished_at": base + timedelta(seconds=i + 1),
                }
                for i in range(start, min(n, start + CHUNK))
            ]
            conn.execute(insert(trial_table), rows)
            if tool_calls:
                calls = [{"trial_id": row["id"], "seq": seq, "tool_name": "calculator", "status": "success",
                          "arguments_json": '{"a": 1}', "result": "2", "duration": 0.001, "iteration": 1,
                          "ts": row["started_at"]}
                         for row in rows for seq in range(tool_calls)]
                conn.execute(insert(tool_call_table), calls)


def stored_shape(repo: Repository, engine) -> tuple[int, int, int] | None:
    """(trials, tasks, tool calls per trial) of the stored benchmark bm_h, or None when there is none."""
    if repo.get_benchmark("bm_h") is None:
        return None
    with engine.connect() as conn:
        trials = conn.execute(select(func.count()).select_from(trial_table)
                              .where(trial_table.c.benchmark_id == "bm_h")).scalar_one()
        tasks = conn.execute(select(func.count(distinct(trial_table.c.task_id)))
                             .where(trial_table.c.benchmark_id == "bm_h")).scalar_one()
        calls = conn.execute(select(func.count()).select_from(tool_call_table)).scalar_one()
    return trials, tasks, calls // trials if trials else 0


def whole_benchmark_spec(tasks: int, trials_per_task: int):
    from corral_core.spec import spec_from_dict

    return spec_from_dict({"name": "store_history", "suite": str(SAMPLES / "samplemath.yaml"),
                           "model": "scripted/samplemath", "trials_per_task": trials_per_task,
                           "k_values": [1, 10], "arms": [{"name": arm, "verbosity": arm} for arm in ARMS]}, SAMPLES)


class _Flushed:
    """The runner's writer sink, already flushed (the trials were bulk-inserted)."""

    def emit(self, event: Event) -> None:
        pass

    def flush(self, timeout: float) -> bool:
        return True


def measure(what: str, db: str, benchmark_id: str, tasks: int, trials_per_task: int, folder: str) -> dict:
    """One whole-benchmark read, as the product does it (in this fresh interpreter)."""
    engine = make_engine(db)
    repo = Repository(engine)
    if what == "compare_unfinished":  # a reused store's benchmark may have finished in an earlier run
        with engine.begin() as conn:
            conn.execute(update(benchmark_table).where(benchmark_table.c.id == benchmark_id)
                         .values(status="running", metrics_json=None))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    note = ""
    if what == "end_of_run":  # the runner's own end of a run: streamed metrics, stored with the benchmark
        from corral_core.runner import BenchmarkRunner

        runner = BenchmarkRunner(whole_benchmark_spec(tasks, trials_per_task), repository=repo,
                                 writer_sink=_Flushed())  # type: ignore[arg-type]
        result = runner._results(benchmark_id, "finished", False, 0.0)
        first = result.comparisons[0]
        note = (f"{result.trials_total:,} trials, {first.n_tasks:,} paired tasks, McNemar over "
                f"{first.mcnemar.n_pairs:,} pairs, headline {result.headline_score:.3f}")
    elif what.startswith("compare"):  # what the compare screen's worker calls (StoreQueries.compare)
        from corral_tui.analysis import compare_view

        view = compare_view(repo, benchmark_id)
        note = f"{'stored metrics' if view.stored else 'computed from the trials'}, {len(view.tasks):,} task rows"
    elif what.startswith("export_"):  # `corral-tui export ID --format F --output FILE`
        from corral_core.batch import export_main

        fmt = what.removeprefix("export_")
        target = Path(folder) / f"export.{fmt}"
        assert export_main([benchmark_id, "--format", fmt, "--db", db, "--output", str(target)]) == 0
        note = f"{target.stat().st_size / 2**20:,.0f} MiB written"
    elif what == "offset_rows":  # the old way: OFFSET pages of 1,000 (quadratic); for comparison only
        offset, rows = 0, 0
        while True:
            page = repo.trials(benchmark_id, offset=offset, limit=1000)
            rows += len(page.items)
            if not page.has_more:
                break
            offset += 1000
        note = f"{rows:,} rows"
    else:
        raise ValueError(what)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    engine.dispose()
    return {"what": what, "wall": wall, "cpu": cpu, "rss_before": before / 1024, "rss_peak": peak / 1024,
            "note": note}


def run_measure(what: str, db: Path, args: argparse.Namespace, folder: str) -> dict:
    command = [sys.executable, __file__, "--measure", what, "--db", str(db), "--tasks", str(args.tasks),
               "--trials", str(args.trials), "--folder", folder]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=100_000, help="writer events (0: skip)")
    parser.add_argument("--tasks", type=int, default=50, help="tasks per arm")
    parser.add_argument("--tool-calls", type=int, default=1, help="tool calls per trial")
    parser.add_argument("--offset", action="store_true", help="also time the old OFFSET read of every row")
    parser.add_argument("--steps", default="compare_unfinished,end_of_run,compare_finished,export_json,export_csv",
                        help="whole-benchmark reads to time, in order (comma-separated)")
    parser.add_argument("--store", type=Path, help="keep the trials' store in this file and reuse it")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    trials_per_task = max(1, args.trials // (len(ARMS) * args.tasks))
    if args.measure:
        print(json.dumps(measure(args.measure, args.db, "bm_h", args.tasks, trials_per_task, args.folder)))
        return
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
          f"({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as folder:
        if args.events:
            rate = writer_throughput(Path(folder) / "w.db", args.events)
            print(f"writer: {rate:,.0f} events/s (emit -> commit, batched)")

        db = args.store or Path(folder) / "h.db"
        engine = make_engine(db)
        init_db(engine)  # an older store is upgraded to the current schema (new indexes included)
        repo = Repository(engine, id_factory=lambda: "bm_h")
        shape = f"{args.trials:,} trials ({args.tasks:,} tasks x {len(ARMS)} arms, {args.tool_calls} tool call(s) each)"
        if stored_shape(repo, engine) == (args.trials, args.tasks, args.tool_calls):
            print(f"reused store {db}: {shape}, {db.stat().st_size / 2**20:,.0f} MiB")
        else:
            if repo.get_benchmark("bm_h") is not None:
                raise SystemExit(f"{db} holds another shape of benchmark bm_h: delete it or choose another --store")
            repo.create_benchmark(spec_name="store_history", spec_digest="h", arms=[ArmInfo(arm) for arm in ARMS],
                                  trials_per_task=trials_per_task, suites=[str(SAMPLES / "samplemath.yaml")])
            start = time.perf_counter()
            bulk_trials(repo, engine, "bm_h", args.trials, args.tasks, args.tool_calls)
            print(f"bulk insert: {shape} in {time.perf_counter() - start:.2f}s, "
                  f"store {db.stat().st_size / 2**20:,.0f} MiB")
        for label, call in [
            ("list_benchmarks (with trial counts)", lambda: repo.list_benchmarks(0, 50)),
            ("first page of trials", lambda: repo.trials("bm_h", limit=100)),
            (f"page at offset {args.trials // 2:,}", lambda: repo.trials("bm_h", offset=args.trials // 2, limit=100)),
            ("count_trials", lambda: repo.count_trials("bm_h")),
            ("count_trials status=error", lambda: repo.count_trials("bm_h", status="error")),
            ("trials task=task_7 (first page)", lambda: repo.trials("bm_h", task="task_7", limit=100)),
        ]:
            start = time.perf_counter()
            call()
            print(f"{label}: {(time.perf_counter() - start) * 1000:.1f} ms")
        engine.dispose()
        steps = [step for step in args.steps.split(",") if step]
        for what in steps + (["offset_rows"] if args.offset else []):
            m = run_measure(what, db, args, folder)
            print(f"{what}: {m['wall']:.2f} s wall, {m['cpu']:.2f} s CPU, peak RSS {m['rss_peak']:,.0f} MiB "
                  f"({m['rss_before']:,.0f} MiB before the call); {m['note']}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
