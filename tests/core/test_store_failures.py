"""The store never reports success for work it did not keep: when the database refuses writes, the
run stops at once, exits 2 with one message, and a resume after the cause is gone runs every trial
exactly once."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from corral_core.batch import open_store
from corral_core.errors import StoreError
from corral_core.events import Event, EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict
from corral_core.store import Repository, StoreWriter, init_db, make_engine
from tests.inprocess import run_cli
from tests.timeouts import HANG

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_tasks"
ARMS = ("minimal", "full")
TRIALS = 4
TASKS = 5  # samplemath
KEPT = 6  # the trigger refuses the trial rows after these


def spec_text(parallel: int) -> str:
    return (f"name: refused-writes\nsuite: {SAMPLES / 'samplemath.yaml'}\nmodel: scripted/samplemath\n"
            f"arms: {{verbosity: [{', '.join(ARMS)}]}}\ntrials_per_task: {TRIALS}\nparallel: {parallel}\n")


def refusing_store(path: Path, after: int = KEPT) -> Path:
    """A store whose database refuses every trial row after the first `after` (a trigger that raises,
    as a full disk or a quota would)."""
    engine = make_engine(path)
    init_db(engine)
    engine.dispose()
    with sqlite3.connect(path) as conn:
        conn.execute(f"create trigger quota before insert on trial when (select count(*) from trial) >= {after} "
                     "begin select raise(abort, 'quota exceeded (test trigger)'); end")
    return path


def rows(path: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, args).fetchall()


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd)


class Order:
    """Records the kinds of events in the order the run emits them."""

    def __init__(self) -> None:
        self.kinds: list[EventKind] = []

    def emit(self, event: Event) -> None:
        if event.kind in (EventKind.TRIAL_STARTED, EventKind.STORE_FAILED):
            self.kinds.append(event.kind)


def test_a_refused_write_stops_the_run_at_once_and_raises(tmp_path: Path) -> None:
    parallel = 2
    path = refusing_store(tmp_path / "runs.db")
    spec = spec_from_dict({"name": "refused", "suite": str(SAMPLES / "samplemath.yaml"),
                           "model": "scripted/samplemath", "arms": {"verbosity": list(ARMS)},
                           "trials_per_task": TRIALS, "parallel": parallel}, SAMPLES)
    engine, repository, writer = open_store(str(path))
    order, sink = Order(), ListSink()
    try:
        with pytest.raises(StoreError) as info:
            BenchmarkRunner(spec, repository=repository, writer_sink=writer, sink=[order, sink]).run()
    finally:
        writer.close()
        engine.dispose()
    message = str(info.value)
    assert "quota exceeded (test trigger)" in message and str(path) in message
    recorded = re.search(r"the (\d+) trials it recorded are kept", message)
    assert recorded is not None, message
    assert int(recorded.group(1)) == len(rows(path, "select id from trial where status != 'running'")) <= KEPT
    assert info.value.benchmark_id is not None
    assert writer.failure is not None and writer.stats()["store_failed"] == 1

    assert EventKind.STORE_FAILED in order.kinds
    after = order.kinds[order.kinds.index(EventKind.STORE_FAILED) + 1:]
    assert after.count(EventKind.TRIAL_STARTED) <= parallel  # only workers already past their last check
    assert len(sink.of_kind(EventKind.BENCHMARK_FINISHED)) == 0  # no results for a run the store did not keep
    assert rows(path, "select status from benchmark") == [("store_failed",)]


def test_batch_exits_2_with_one_message_and_a_resume_runs_every_trial_once(tmp_path: Path) -> None:
    spec = tmp_path / "refused.bench.yaml"
    spec.write_text(spec_text(parallel=1))
    db = refusing_store(tmp_path / "runs.db")
    out = tmp_path / "out.json"

    first = cli("--batch", str(spec), "--db", str(db), "--json", str(out), cwd=tmp_path)
    assert first.returncode == 2, (first.stdout, first.stderr)
    assert "Traceback" not in first.stderr
    lines = [line for line in first.stderr.splitlines() if line.startswith("corral-tui: ")]
    assert len(lines) == 1, first.stderr
    assert "quota exceeded (test trigger)" in lines[0] and "--resume" in lines[0]
    assert "headline score" not in first.stdout and not out.exists()  # no results for what was not kept
    (benchmark_id, status), = rows(db, "select id, status from benchmark")
    assert status == "store_failed"
    kept = rows(db, "select id from trial where status != 'running'")
    assert len(kept) <= KEPT

    with sqlite3.connect(db) as conn:
        conn.execute("drop trigger quota")  # the cause is removed (disk freed, quota raised)
    resumed = cli("--batch", str(spec), "--db", str(db), "--resume", benchmark_id, "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert rows(db, "select status from benchmark where id=?", benchmark_id) == [("finished",)]
    trials = rows(db, "select id, arm, task_id, trial_index, status from trial where benchmark_id=?", benchmark_id)
    keys = sorted((arm, task, index) for _, arm, task, index, _ in trials)
    assert len(keys) == len(ARMS) * TASKS * TRIALS and len(set(keys)) == len(keys)  # every trial exactly once
    assert all(status != "running" for *_, status in trials)
    assert {trial_id for (trial_id,) in kept} <= {row[0] for row in trials}  # the kept ones were not re-run


def test_auto_resume_continues_a_store_failed_run(tmp_path: Path) -> None:
    spec = tmp_path / "refused.bench.yaml"
    spec.write_text(spec_text(parallel=2))
    db = refusing_store(tmp_path / "runs.db", after=3)
    assert cli("--batch", str(spec), "--db", str(db), "--quiet", cwd=tmp_path).returncode == 2
    with sqlite3.connect(db) as conn:
        conn.execute("drop trigger quota")
    again = cli("--batch", str(spec), "--db", str(db), "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "(resumed)" in again.stderr or rows(db, "select count(*) from benchmark") == [(1,)]
    assert rows(db, "select count(*), count(distinct arm || task_id || trial_index) from trial") == [
        (len(ARMS) * TASKS * TRIALS, len(ARMS) * TASKS * TRIALS)]


def test_a_writer_whose_store_failed_refuses_the_next_run_at_once(tmp_path: Path) -> None:
    path = refusing_store(tmp_path / "runs.db", after=0)
    spec = spec_from_dict({"name": "x", "suite": str(SAMPLES / "samplemath.yaml"), "model": "scripted/samplemath",
                           "trials_per_task": 1, "parallel": 1}, SAMPLES)
    engine, repository, writer = open_store(str(path))
    seen: list[Any] = []
    try:
        with pytest.raises(StoreError):
            BenchmarkRunner(spec, repository=repository, writer_sink=writer).run()
        writer.on_failure(seen.append)  # a listener added later hears of it at once
        sink = ListSink()
        with pytest.raises(StoreError):
            BenchmarkRunner(spec, repository=repository, writer_sink=writer, sink=sink).run()
        assert sink.of_kind(EventKind.TRIAL_STARTED) == []  # nothing ran into a store that refuses writes
    finally:
        writer.close()
        engine.dispose()
    assert len(seen) == 1 and isinstance(seen[0], StoreError)


def test_a_full_disk_stops_the_run_with_one_clear_message(tmp_path: Path) -> None:
    """SQLite's own "database or disk is full" (SQLITE_FULL), made real by capping the file's pages
    (PRAGMA max_page_count) a little above what the empty store uses."""
    path = tmp_path / "full.db"
    engine = make_engine(path)
    init_db(engine)
    with engine.connect() as conn:
        pages = int(conn.exec_driver_sql("PRAGMA page_count").scalar_one())

    @event.listens_for(engine, "connect")
    def cap(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute(f"PRAGMA max_page_count={pages + 8}")

    engine.dispose()  # the pooled connections reconnect with the cap
    spec = spec_from_dict({"name": "full", "suite": str(SAMPLES / "samplemath.yaml"), "model": "scripted/samplemath",
                           "arms": {"verbosity": list(ARMS)}, "trials_per_task": TRIALS, "parallel": 2}, SAMPLES)
    writer = StoreWriter(engine).start()
    sink = ListSink()
    try:
        with pytest.raises(StoreError) as info:
            BenchmarkRunner(spec, repository=Repository(engine), writer_sink=writer, sink=sink).run()
    finally:
        writer.close()
        engine.dispose()
    assert "database or disk is full" in str(info.value) and str(path) in str(info.value)
    assert "free disk space" in str(info.value)
    assert 1 <= len(sink.of_kind(EventKind.TRIAL_STARTED)) < len(ARMS) * TASKS * TRIALS  # ran, then stopped
    assert sink.of_kind(EventKind.BENCHMARK_FINISHED) == []


def test_a_write_refused_only_when_the_run_flushes_at_its_end_still_fails_the_run(tmp_path: Path) -> None:
    """A writer that lags behind the trials (a loaded machine) meets the refusal only when the run
    flushes it at the end: the run must still fail and say so, never report `finished` for trials its
    store lost. (It did: the runner stopped listening for the writer's failure before that flush.)"""
    path = refusing_store(tmp_path / "lagging.db", after=0)
    spec = spec_from_dict({"name": "lagging", "suite": str(SAMPLES / "samplemath.yaml"),
                           "model": "scripted/samplemath", "tasks": ["add"], "trials_per_task": 2}, SAMPLES)
    engine, repository, writer = open_store(str(path))
    flushed = threading.Event()
    write, flush = writer._write, writer.flush

    def lagging_write(batch: Any) -> None:  # the writer thread holds its first batch until the run's end
        flushed.wait(HANG)
        write(batch)

    def flush_at_the_end(timeout: float = 10.0) -> bool:
        flushed.set()
        return flush(timeout)

    writer._write = lagging_write  # type: ignore[method-assign]
    writer.flush = flush_at_the_end  # type: ignore[method-assign]
    sink = ListSink()
    try:
        with pytest.raises(StoreError) as info:
            BenchmarkRunner(spec, repository=repository, writer_sink=writer, sink=[sink]).run()
    finally:
        flushed.set()
        writer.close()
        engine.dispose()
    assert flushed.is_set() and writer.failure is not None
    assert "quota exceeded (test trigger)" in str(info.value)
    assert len(sink.of_kind(EventKind.STORE_FAILED)) == 1  # the workbench is told, as for an early failure
    assert len(sink.of_kind(EventKind.BENCHMARK_FINISHED)) == 0
    assert rows(path, "select status from benchmark") == [("store_failed",)]
    assert rows(path, "select count(*) from trial") == [(0,)]
