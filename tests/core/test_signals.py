"""SIGTERM stops a batch like the first Ctrl-C (clean stop, resume hint, exit 143) and `serve` stops
cleanly on it (pending approvals rejected, workspaces removed, a last word, exit 0).

Before the fix SIGTERM killed both on the spot: the batch left no resume hint and `serve` said
nothing. The waits below wait for the processes; their timeouts only bound a failing test.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from tests.core.gate import Gate, wait_until
from tests.core.test_batch_live import ENV, read, slow_spec, start
from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_sigterm_stops_a_batch_with_a_resume_hint_and_143_and_the_resume_completes(tmp_path: Path) -> None:
    spec = slow_spec(tmp_path, trials=5)
    db = tmp_path / "runs.db"
    gate = Gate(tmp_path / "gate", hold_after=0)  # the run waits in its first tool call until released
    process = start(spec, db, "--quiet", env=gate.env(ENV))
    try:
        wait_until(lambda: gate.calls >= 1, "the run's first trial", process)
        process.send_signal(signal.SIGTERM)
        gate.release()
        _, err = process.communicate(timeout=120)
    finally:
        gate.release()
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 143, err
    assert "Traceback" not in err
    (benchmark_id,) = [row[0] for row in read(db, "select id from benchmark")]
    assert read(db, "select status from benchmark") == [("interrupted",)]
    hint = next(line for line in err.splitlines() if "Resume with" in line)
    assert f"--resume {benchmark_id}" in hint

    resumed = run_cli("--batch", str(spec), "--db", str(db), "--quiet", "--resume", benchmark_id,
                      cwd=spec.parent, env=ENV)  # in this process: only the stopped run needs a signal
    assert resumed.returncode == 0, resumed.stderr
    rows = read(db, "select task_id, trial_index from trial where benchmark_id=? and status='completed'",
                benchmark_id)
    assert sorted(rows) == [(t, i) for t in ("t1", "t2", "t3", "t4") for i in range(5)]  # each exactly once


def test_serve_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "corral_tui.cli", "serve", str(ROOT / "sample_tasks" / "shell_ops.yaml"),
               "--port", "0", "--approve", "ask", "--approval-timeout", "600"]
    server = subprocess.Popen(command, cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()
        url = re.search(r"on (http://\S+)", banner)
        assert url, banner
        with httpx.Client(base_url=url.group(1), timeout=60) as http:
            trial = http.post("/tasks/sh_cleanup/trials", json={}).json()
            workspace = Path(trial["workspace"])
            assert workspace.is_dir()
            answers: list[dict] = []
            call = threading.Thread(target=lambda: answers.append(http.post(
                f"/trials/{trial['trial_id']}/tools/execute",
                json={"tool_name": "delete_file", "arguments": {"path": "scratch.tmp"}}).json()))
            call.start()
            lines = []  # the server announces the approval it waits for (after its other start-up lines)
            while not lines or ("approval" not in lines[-1] and lines[-1] and len(lines) < 20):
                lines.append(server.stderr.readline())
            asked = lines[-1]
            assert "approval" in asked and "delete_file" in asked, lines
            server.send_signal(signal.SIGTERM)
            call.join(60)
        _, err = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert server.returncode == 0, err
    assert "stopped (SIGTERM)" in err and "Traceback" not in err
    assert answers and answers[0]["result"]["status"] == "rejected", json.dumps(answers)
    assert not workspace.exists()  # every environment closed, temporary workspaces removed
