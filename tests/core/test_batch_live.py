"""Two batch processes on one store and spec each run their own benchmark; Ctrl-C says how to resume.

The runs are held on a gate (tests/core/gate.py) while the test acts on them, so nothing depends on
how long their trials take."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.gate import Gate, wait_until

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


def start(spec: Path, db: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "corral_tui.cli", "--batch", str(spec), "--db", str(db), *extra]
    return subprocess.Popen(command, cwd=spec.parent, env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_a_second_batch_on_a_live_run_starts_its_own_benchmark(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from corral_tui.cli import main

    spec = slow_spec(tmp_path, trials=2)
    db = tmp_path / "runs.db"
    gate = Gate(tmp_path / "gate", hold_after=0)  # every tool call waits for the release: the runs stay live
    env = gate.env(ENV)
    first = start(spec, db, "--quiet", env=env)
    second = None
    try:
        wait_until(lambda: gate.calls >= 1, "the first run's first trial", first)
        (live_id,) = [row[0] for row in read(db, "select id from benchmark")]
        second = start(spec, db, "--quiet", env=env)
        monkeypatch.chdir(tmp_path)  # the refused resume runs nothing: in this process (a subprocess costs seconds)
        refused_code = main(["--batch", str(spec), "--db", str(db), "--quiet", "--resume", live_id])
        refused_err = capsys.readouterr().err
        wait_until(lambda: len(read(db, "select id from benchmark")) == 2, "the second run's own benchmark",
                   first, second)
        gate.release()
        _, second_err = second.communicate(timeout=120)
        _, first_err = first.communicate(timeout=120)
    finally:
        gate.release()
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second_err
    assert refused_code == 2 and f"process {first.pid}" in refused_err, refused_err
    assert live_id in second_err and str(first.pid) in second_err  # it said why it did not resume
    benchmarks = read(db, "select id, status from benchmark order by created_at")
    assert [status for _, status in benchmarks] == ["finished", "finished"] and benchmarks[0][0] == live_id
    for benchmark_id, _ in benchmarks:
        rows = read(db, "select task_id, trial_index, status from trial where benchmark_id=?", benchmark_id)
        assert sorted((t, i) for t, i, _ in rows) == [(t, i) for t in ("t1", "t2", "t3", "t4") for i in range(2)]
        assert {status for _, _, status in rows} == {"completed"}


def test_the_resume_hint_after_ctrl_c_keeps_the_db(tmp_path: Path) -> None:
    spec = slow_spec(tmp_path, trials=5)
    db = tmp_path / "my runs.db"
    gate = Gate(tmp_path / "gate", hold_after=0)
    process = start(spec, db, "--quiet", env=gate.env(ENV))
    try:
        wait_until(lambda: gate.calls >= 1, "the run's first trial", process)
        process.send_signal(signal.SIGINT)
        gate.release()
        _, err = process.communicate(timeout=120)
    finally:
        gate.release()
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, err
    (benchmark_id,) = [row[0] for row in read(db, "select id from benchmark")]
    hint = next(line for line in err.splitlines() if "Resume with" in line)
    assert f"--resume {benchmark_id}" in hint and f"--db '{db}'" in hint
