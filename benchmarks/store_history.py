"""Store numbers the README quotes: writer throughput and history paging on 100,000 trials.

    /work/venv/bin/python benchmarks/store_history.py [--trials 100000] [--events 100000]

Uses a temporary SQLite file; prints one line per measurement.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from corral_core.events import Event, EventKind
from corral_core.store import Repository, StoreWriter, init_db, make_engine
from corral_core.store.tables import trial_table


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
        events.append(Event(EventKind.TRIAL_STARTED, trial_id, "task", {"arm": "a", "trial_index": t}, "bm_w"))
        for i in range(per_trial - 2):
            kind = i % 4
            if kind == 0:
                message = {"role": "assistant", "content": "x" * 300, "index": i}
                events.append(Event(EventKind.MESSAGE, trial_id, "task", message, "bm_w"))
            elif kind == 1:
                events.append(Event(EventKind.TOOL_CALL, trial_id, "task", call, "bm_w"))
            elif kind == 2:
                events.append(Event(EventKind.LLM_RESPONSE, trial_id, "task", llm, "bm_w"))
            else:
                hook = {"point": "after_iteration", "hook": "h", "iteration": i}
                events.append(Event(EventKind.HOOK_FIRED, trial_id, "task", hook, "bm_w"))
        events.append(Event(EventKind.TRIAL_FINISHED, trial_id, "task", {"status": "completed", "score": 1.0}, "bm_w"))
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


def bulk_trials(repo: Repository, engine, benchmark_id: str, n: int) -> None:
    base = datetime(2025, 1, 1, tzinfo=UTC)
    rows = [
        {
            "id": f"tr_{i:07d}", "benchmark_id": benchmark_id, "arm": ("brief", "full")[(i // 50) % 2],
            "task_id": f"task_{i % 50}", "trial_index": i // 100, "episode_id": None, "agent": "react",
            "model": "m", "verbosity": None, "status": ("completed", "error", "surrendered")[i % 3],
            "score": float(i % 2), "answer": "42", "explanation": None, "surrendered": i % 3 == 2,
            "error": None, "prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110, "cost": 0.0,
            "duration": 1.0, "tool_duration": 0.1, "iterations": 3, "assisted": False,
            "started_at": base + timedelta(seconds=i), "finished_at": base + timedelta(seconds=i + 1),
        }
        for i in range(n)
    ]
    with engine.begin() as conn:
        conn.execute(insert(trial_table), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rate = writer_throughput(Path(folder) / "w.db", args.events)
        print(f"writer: {rate:,.0f} events/s (emit -> commit, batched)")

        engine = make_engine(Path(folder) / "h.db")
        init_db(engine)
        repo = Repository(engine, id_factory=lambda: "bm_h")
        repo.create_benchmark(spec_name="h", spec_digest="h")
        start = time.perf_counter()
        bulk_trials(repo, engine, "bm_h", args.trials)
        print(f"bulk insert: {args.trials:,} trials in {time.perf_counter() - start:.2f}s")
        for label, call in [
            ("list_benchmarks (with trial counts)", lambda: repo.list_benchmarks(0, 50)),
            ("first page of trials", lambda: repo.trials("bm_h", limit=100)),
            ("page at offset 50,000", lambda: repo.trials("bm_h", offset=50_000, limit=100)),
            ("count_trials", lambda: repo.count_trials("bm_h")),
            ("count_trials status=error", lambda: repo.count_trials("bm_h", status="error")),
            ("trials task=task_7 (first page)", lambda: repo.trials("bm_h", task="task_7", limit=100)),
            ("trial_records (all, for metrics)", lambda: repo.trial_records("bm_h")),
        ]:
            start = time.perf_counter()
            call()
            print(f"{label}: {(time.perf_counter() - start) * 1000:.1f} ms")
        engine.dispose()


if __name__ == "__main__":
    main()
