"""`corral-tui --batch --db postgresql://...` as a user runs it: a whole run, a resume after SIGKILL,
and two runners at once on one database, with every trial stored exactly once."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from tests.core.gate import Gate
from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "sample_tasks" / "quickstart.bench.yaml"
DATA = ROOT / "tests" / "core" / "data"
ARMS = ("minimal", "full")
TASKS = ("t1", "t2", "t3", "t4")
TRIALS = 3


def env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`corral-tui ARGS` in this process (tests/inprocess.py); the runs that are killed or race stay processes."""
    return run_cli(*args, cwd=cwd, env=env())


def rows(url: str, sql: str, *args: object) -> list[tuple]:
    try:
        with psycopg.connect(url) as conn:
            return conn.execute(sql, args).fetchall()
    except psycopg.errors.UndefinedTable:  # the run has not created the store yet
        return []


def slow_spec(folder: Path, parallel: int = 1) -> Path:
    spec = folder / "slow.bench.yaml"
    spec.write_text(f"name: slow-pg\nsuite: {DATA / 'slow.yaml'}\nmodel: scripted/{DATA / 'slow.script.yaml'}\n"
                    f"arms: {{verbosity: [{', '.join(ARMS)}]}}\ntrials_per_task: {TRIALS}\nparallel: {parallel}\n")
    return spec


def wait_until(predicate, what: str, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
    """Poll the database until `predicate()` holds (the process must still be running)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert process.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def assert_every_trial_once(url: str, benchmark_id: str) -> list[tuple]:
    trials = rows(url, "select id, arm, task_id, trial_index, status, score from trial where benchmark_id = %s",
                  benchmark_id)
    keys = sorted((arm, task, index) for _, arm, task, index, _, _ in trials)
    assert keys == sorted((a, t, i) for a in ARMS for t in TASKS for i in range(TRIALS))
    for _, _, task, _, status, score in trials:
        assert status == "completed" and score == (0.0 if task == "t4" else 1.0)
    return trials


def test_a_batch_run_history_and_export_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    run = cli("--batch", str(QUICKSTART), "--db", pg_url, "--json", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    document = json.loads(out.read_text())
    benchmark_id = document["benchmark_id"]
    assert rows(pg_url, "select status from benchmark") == [("finished",)]
    assert rows(pg_url, "select count(*), count(distinct (arm, task_id, trial_index)) from trial") == [(45, 45)]
    assert rows(pg_url, "select count(*) from message")[0][0] > 45
    assert rows(pg_url, "select count(*) from llm_call")[0][0] >= 45

    history = cli("history", "--db", pg_url, cwd=tmp_path)
    assert history.returncode == 0 and benchmark_id in history.stdout, history.stderr
    exported = cli("export", benchmark_id, "--db", pg_url, "--format", "csv", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert len(list(csv.DictReader(io.StringIO(exported.stdout)))) == 45

    again = cli("--batch", str(QUICKSTART), "--db", pg_url, "--json", str(out), cwd=tmp_path)  # same spec: compared
    assert again.returncode == 0, again.stderr
    assert json.loads(out.read_text())["previous_best"] == document["headline_score"]


def test_a_run_killed_with_sigkill_resumes_every_trial_exactly_once(pg_url: str, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "corral_tui.cli", "--batch", str(slow_spec(tmp_path)), "--db", pg_url, "--quiet"]
    gate = Gate(tmp_path / "gate", hold_after=3)  # the 4th trial's tool call waits: killed at a known point
    process = subprocess.Popen(command, cwd=tmp_path, env=gate.env(env()), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: gate.calls >= 4 and (rows(pg_url, "select count(*) from trial where status != 'running'")
                                                or [(0,)])[0][0] >= 3, "three finished trials, a fourth held",
                   process)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        gate.release()

    (benchmark_id, status), = rows(pg_url, "select id, status from benchmark")
    assert status == "running"  # nobody closed it: the process died
    before = rows(pg_url, "select id from trial where status != 'running'")
    assert 3 <= len(before) < len(ARMS) * len(TASKS) * TRIALS

    resumed = cli(*command[3:], "--resume", benchmark_id, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert rows(pg_url, "select status from benchmark where id = %s", benchmark_id) == [("finished",)]
    trials = assert_every_trial_once(pg_url, benchmark_id)
    assert {trial_id for (trial_id,) in before} <= {row[0] for row in trials}  # kept, not re-run


def test_two_runners_on_one_database_lose_and_duplicate_nothing(pg_url: str, tmp_path: Path) -> None:
    spec = slow_spec(tmp_path, parallel=2)
    command = [sys.executable, "-m", "corral_tui.cli", "--batch", str(spec), "--db", pg_url]
    gate = Gate(tmp_path / "gate", hold_after=0)  # the first run's tool calls wait: it stays live meanwhile
    first = subprocess.Popen(command, cwd=tmp_path, env=gate.env(env()), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    second = None
    try:
        # The second starts while the first is live: it must not resume (and so double) the first's run.
        wait_until(lambda: gate.calls >= 1 and (rows(pg_url, "select count(*) from trial") or [(0,)])[0][0] >= 1,
                   "the first run's first trial, stored", first)
        second = subprocess.Popen(command, cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        wait_until(lambda: len(rows(pg_url, "select id from benchmark")) == 2, "the second run's own benchmark", first)
        gate.release()  # from here both run at once
        _out, second_err = second.communicate(timeout=300)
        _out, err = first.communicate(timeout=300)
    finally:
        gate.release()
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate(10)
    assert first.returncode == 0, err
    assert second.returncode == 0, second_err

    benchmarks = rows(pg_url, "select id, status from benchmark order by created_at")
    assert [status for _, status in benchmarks] == ["finished", "finished"]
    for benchmark_id, _ in benchmarks:
        assert_every_trial_once(pg_url, benchmark_id)
    assert rows(pg_url, "select count(*), count(distinct id) from trial") == [(48, 48)]
