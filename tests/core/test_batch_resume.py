"""A batch process killed mid-run (SIGKILL) resumes with --resume: nothing lost, nothing duplicated."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.core.gate import Gate, wait_until
from tests.inprocess import run_cli

DATA = Path(__file__).resolve().parent / "data"
ARMS = ("minimal", "full")
TASKS = ("t1", "t2", "t3", "t4")
TRIALS = 4


def read(db: Path, sql: str, *args: object) -> list[tuple]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []


def test_killed_batch_resumes_every_trial_exactly_once(tmp_path: Path) -> None:
    spec = tmp_path / "slow.bench.yaml"
    spec.write_text(f"name: slow-resume\nsuite: {DATA / 'slow.yaml'}\nmodel: scripted/{DATA / 'slow.script.yaml'}\n"
                    f"arms: {{verbosity: [{', '.join(ARMS)}]}}\ntrials_per_task: {TRIALS}\nparallel: 1\n")
    db = tmp_path / "runs.db"
    gate = Gate(tmp_path / "gate", hold_after=3)  # the 4th trial's tool call waits: killed at a known point
    env = gate.env({**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"})
    command = [sys.executable, "-m", "corral_tui.cli", "--batch", str(spec), "--db", str(db), "--quiet"]
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: gate.calls >= 4 and (read(db, "select count(*) from trial where status != 'running'")
                                                or [(0,)])[0][0] >= 3, "three stored trials and a fourth held",
                   process)
        process.send_signal(signal.SIGKILL)
        process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
        process.stderr.close()
    gate.release()

    (benchmark_id, status), = read(db, "select id, status from benchmark")
    assert status == "running"  # nobody closed it: the process died
    before = read(db, "select id, arm, task_id, trial_index, score from trial where status != 'running'")
    assert len(before) == 3  # the three trials before the held one

    resumed = run_cli(*command[3:], "--resume", benchmark_id, cwd=tmp_path, env=env)  # in this process
    assert resumed.returncode == 0, resumed.stderr
    assert read(db, "select status from benchmark where id=?", benchmark_id) == [("finished",)]

    rows = read(db, "select id, arm, task_id, trial_index, status, score from trial where benchmark_id=?",
                benchmark_id)
    keys = sorted((arm, task, index) for _, arm, task, index, _, _ in rows)
    assert keys == sorted((a, t, i) for a in ARMS for t in TASKS for i in range(TRIALS))  # each exactly once
    for _, _, task, _, status, score in rows:
        assert status == "completed"
        assert score == (0.0 if task == "t4" else 1.0)
    survivors = {row[0] for row in rows}
    assert {row[0] for row in before} <= survivors  # trials finished before the kill were kept, not re-run
    assert "headline score" in resumed.stdout
