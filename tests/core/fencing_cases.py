"""Two runners on one benchmark, on any store URL (tests/core/test_fencing.py: SQLite; tests/postgres: PostgreSQL).

Runner A is a real batch subprocess held at a known trial by the gate (tests/core/gate.py); runner B, which
takes over, runs in the test's own process (tests/inprocess.py). Time passing is
simulated where it counts, in the store: A's last heartbeat is made older than STALE_AFTER while A is stopped
(SIGSTOP), instead of waiting a minute."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text, update

from corral_core.store import make_engine
from corral_core.store.ownership import STALE_AFTER
from corral_core.store.tables import benchmark_table
from tests.core.gate import Gate, wait_until
from tests.inprocess import run_cli

DATA = Path(__file__).resolve().parent / "data"
ARMS = ("minimal", "full")
TASKS = ("t1", "t2", "t3", "t4")
TRIALS = 2
EVERY_KEY = Counter({(a, t, i): 1 for a in ARMS for t in TASKS for i in range(TRIALS)})


def slow_spec(folder: Path) -> Path:
    spec = folder / "slow.bench.yaml"
    spec.write_text(f"name: slow-fencing\nsuite: {DATA / 'slow.yaml'}\nmodel: scripted/{DATA / 'slow.script.yaml'}\n"
                    f"arms: {{verbosity: [{', '.join(ARMS)}]}}\ntrials_per_task: {TRIALS}\nparallel: 1\n")
    return spec


def env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}


def batch(spec: Path, db: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "corral_tui.cli", "--batch", str(spec), "--db", db, "--json", str(out), "--quiet"]


def rows(db: str, sql: str, **params: Any) -> list[tuple]:
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql), params).all()]
    except Exception:  # not created yet
        return []
    finally:
        engine.dispose()


def trial_keys(db: str, benchmark_id: str) -> Counter:
    found = rows(db, "select arm, task_id, trial_index, status from trial where benchmark_id = :b", b=benchmark_id)
    assert {status for *_, status in found} == {"completed"}, found
    return Counter((arm, task, index) for arm, task, index, _ in found)


def start_held(tmp_path: Path, db: str) -> tuple[subprocess.Popen[str], Gate, Path, Path]:
    """Runner A, held in its 4th trial with three stored (and the 4th's start committed)."""
    spec = slow_spec(tmp_path)
    gate = Gate(tmp_path / "gate", hold_after=3)
    out = tmp_path / "a.json"
    process = subprocess.Popen(batch(spec, db, out), cwd=tmp_path, env=gate.env(env()), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    wait_until(lambda: gate.calls >= 4 and rows(db, "select count(*) from trial") == [(4,)]
               and rows(db, "select count(*) from trial where status != 'running'") == [(3,)],
               "three stored trials and a fourth held", process)
    return process, gate, spec, out


def stopped_past_the_heartbeat_then_continued(tmp_path: Path, db: str) -> None:
    """A is stopped past its heartbeat, B takes the benchmark over and finishes it, A continues: A stops at once
    (no new trial, no write), says `lost ownership` with exit 3, and every trial is stored exactly once."""
    a, gate, spec, a_json = start_held(tmp_path, db)
    try:
        (benchmark_id,), = rows(db, "select id from benchmark")
        a.send_signal(signal.SIGSTOP)
        engine = make_engine(db)  # A is silent: its heartbeat ages past STALE_AFTER (by the store's clock, here
        try:                      # the same as this machine's)
            with engine.begin() as conn:
                conn.execute(update(benchmark_table).values(
                    heartbeat_at=datetime.now(UTC) - timedelta(seconds=2 * STALE_AFTER)))
        finally:
            engine.dispose()
        gate.release()
        b_json = tmp_path / "b.json"
        b = run_cli(*batch(spec, db, b_json)[3:], cwd=tmp_path, env=gate.env(env()))  # B: main() in this process
        assert b.returncode == 0, b.stderr
        assert json.loads(b_json.read_text())["benchmark_id"] == benchmark_id  # B resumed A's benchmark
        calls_after_b = gate.calls
        a.send_signal(signal.SIGCONT)
        _, a_err = a.communicate(timeout=300)
    finally:
        if a.poll() is None:
            a.send_signal(signal.SIGCONT)
            a.kill()
            a.communicate()
    assert a.returncode == 3, a_err
    assert "lost ownership" in a_err and "Traceback" not in a_err
    document = json.loads(a_json.read_text())
    assert document["status"] == "lost_ownership" and document["benchmark_id"] == benchmark_id
    assert gate.calls == calls_after_b  # A started no trial after it woke (its held one was counted before)
    assert trial_keys(db, benchmark_id) == EVERY_KEY  # A's late finish of its held trial was refused
    assert rows(db, "select status from benchmark") == [("finished",)]


def skewed_clock_takes_no_live_run(tmp_path: Path, db: str) -> None:
    """B runs the same spec on a host whose clock is 90 s ahead while A is alive: B starts its own benchmark."""
    from corral_core.batch import open_store
    from corral_core.runner import BenchmarkRunner
    from corral_core.spec import load_spec
    from corral_core.store import Repository
    from corral_core.store.ownership import Owner

    a, gate, spec, a_json = start_held(tmp_path, db)
    try:
        (a_id,), = rows(db, "select id from benchmark")
        engine, _, writer = open_store(db)
        ahead = Repository(engine, clock=lambda: datetime.now(UTC) + timedelta(seconds=90))
        runner = BenchmarkRunner(load_spec(spec), repository=ahead, writer_sink=writer)
        runner.owner = Owner(os.getpid(), "host-ahead")  # another machine: A's pid says nothing there
        try:
            result = runner.run()  # the test process has no gate: B's trials are not held
        finally:
            writer.close()
            engine.dispose()
        assert result.benchmark_id != a_id and not result.resumed and result.status == "finished"
        gate.release()
        _, a_err = a.communicate(timeout=300)
    finally:
        if a.poll() is None:
            a.kill()
            a.communicate()
    assert a.returncode == 0, a_err
    assert json.loads(a_json.read_text())["status"] == "finished"
    assert trial_keys(db, a_id) == EVERY_KEY and trial_keys(db, result.benchmark_id) == EVERY_KEY
