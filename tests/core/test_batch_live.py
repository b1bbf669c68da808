"""Two batch processes on one store and spec each run their own benchmark; Ctrl-C says how to resume."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}


def read(db: Path, sql: str, *args: object) -> list[tuple]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []


def slow_spec(tmp_path: Path, trials: int) -> Path:
    spec = tmp_path / "slow.bench.yaml"
    spec.write_text(f"name: slow-live\nsuite: {DATA / 'slow.yaml'}\nmodel: scripted/{DATA / 'slow.script.yaml'}\n"
                    f"trials_per_task: {trials}\nparallel: 1\n", encoding="utf-8")
    return spec


def start(spec: Path, db: Path, *extra: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "corral_tui.cli", "--batch", str(spec), "--db", str(db), *extra]
    return subprocess.Popen(command, cwd=spec.parent, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_for_trials(db: Path, process: subprocess.Popen[str], count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        done = read(db, "select count(*) from trial where status != 'running'")
        if done and done[0][0] >= count:
            return
        time.sleep(0.02)
    raise AssertionError("the run ended (or hung) before it got going")


def test_a_second_batch_on_a_live_run_starts_its_own_benchmark(tmp_path: Path) -> None:
    spec = slow_spec(tmp_path, trials=8)  # about 8 s of trials: still running while the others start
    db = tmp_path / "runs.db"
    first = start(spec, db, "--quiet")
    try:
        wait_for_trials(db, first, 2)
        (live_id,) = [row[0] for row in read(db, "select id from benchmark")]
        second = start(spec, db, "--quiet")
        refused = subprocess.run([sys.executable, "-m", "corral_tui.cli", "--batch", str(spec), "--db", str(db),
                                  "--quiet", "--resume", live_id], cwd=tmp_path, env=ENV, capture_output=True,
                                 text=True, timeout=60)
        _, second_err = second.communicate(timeout=120)
        _, first_err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second_err
    assert refused.returncode == 2 and f"process {first.pid}" in refused.stderr, refused.stderr
    assert live_id in second_err and str(first.pid) in second_err  # it said why it did not resume
    benchmarks = read(db, "select id, status from benchmark order by created_at")
    assert [status for _, status in benchmarks] == ["finished", "finished"] and benchmarks[0][0] == live_id
    for benchmark_id, _ in benchmarks:
        rows = read(db, "select task_id, trial_index, status from trial where benchmark_id=?", benchmark_id)
        assert sorted((t, i) for t, i, _ in rows) == [(t, i) for t in ("t1", "t2", "t3", "t4") for i in range(8)]
        assert {status for _, _, status in rows} == {"completed"}


def test_the_resume_hint_after_ctrl_c_keeps_the_db(tmp_path: Path) -> None:
    spec = slow_spec(tmp_path, trials=5)
    db = tmp_path / "my runs.db"
    process = start(spec, db, "--quiet")
    try:
        wait_for_trials(db, process, 1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, err
    (benchmark_id,) = [row[0] for row in read(db, "select id from benchmark")]
    hint = next(line for line in err.splitlines() if "Resume with" in line)
    assert f"--resume {benchmark_id}" in hint and f"--db '{db}'" in hint
