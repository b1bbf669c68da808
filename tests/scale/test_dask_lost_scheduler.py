"""A `dask scheduler` killed (SIGKILL) mid-run is an infrastructure failure, never a result: the batch exits 2 with
one line and no traceback, writes its --json, leaves the benchmark `interrupted` with the trials that never ran
unrun (not errored), and `--resume` on a fresh scheduler runs exactly the missing ones: every trial once, and the
headline an uninterrupted run gives."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

from tests.core.fencing_cases import ARMS, EVERY_KEY, TASKS, TRIALS, rows, slow_spec
from tests.core.gate import Gate, wait_until
from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]


class Cluster:
    """A real `dask scheduler` and one `dask worker` (2 processes, 1 thread each) on 127.0.0.1."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        dask = str(Path(sys.executable).with_name("dask"))
        folder.mkdir(parents=True, exist_ok=True)
        self.scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                           "--dashboard-address", "127.0.0.1:0"],
                                          stderr=subprocess.PIPE, text=True, cwd=folder, env=env)
        self.worker: subprocess.Popen[str] | None = None
        address = None
        assert self.scheduler.stderr is not None
        for line in self.scheduler.stderr:  # it prints its address once it listens
            found = re.search(r"Scheduler at:\s+(tcp://\S+)", line)
            if found:
                address = found.group(1)
                break
        assert address, "the dask scheduler did not start"
        threading.Thread(target=lambda: sum(1 for _ in self.scheduler.stderr or ()), daemon=True).start()
        self.worker = subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                                        "--no-dashboard", "--host", "127.0.0.1"], stderr=subprocess.DEVNULL,
                                       cwd=folder, env=env)
        from distributed import Client

        with Client(address) as client:
            client.wait_for_workers(2, timeout=120)
        self.executor = address.replace("tcp://", "dask://", 1)

    def close(self) -> None:
        for process in (self.worker, self.scheduler):
            if process is not None and process.poll() is None:
                process.kill()
            if process is not None:
                process.wait(60)


def test_a_lost_scheduler_leaves_the_rest_unrun_and_a_resume_runs_exactly_it(tmp_path: Path) -> None:
    spec = slow_spec(tmp_path)
    spec.write_text(spec.read_text().replace("parallel: 1", "parallel: 2"))
    gate = Gate(tmp_path / "gate", hold_after=5)  # the workers' 6th tool call waits: the kill comes at a known point
    env = gate.env({**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
                    "PYTHONPATH": str(ROOT),  # the scheduler unpickles task graphs: it imports this checkout
                    "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"})  # the client gives up reconnecting soon
    db, out = tmp_path / "runs.db", tmp_path / "out.json"
    command = [sys.executable, "-m", "corral_tui.cli", "--batch", str(spec), "--db", str(db), "--quiet"]
    first = Cluster(tmp_path / "first", env)
    try:
        driver = subprocess.Popen([*command, "--executor", first.executor, "--json", str(out)], cwd=tmp_path, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: gate.calls > 5 and
                       rows(str(db), "select count(*) from trial where status != 'running'")[0][0] >= 3,
                       "three stored trials and a held one", driver)
            first.scheduler.send_signal(signal.SIGKILL)
            _, err = driver.communicate(timeout=300)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()
    finally:
        first.close()  # its workers too: nothing of theirs runs on
    gate.release()

    assert driver.returncode == 2, err
    assert "Traceback" not in err and "AttributeError" not in err, err
    said = [line for line in err.splitlines() if line.startswith("interrupted:")]
    assert len(said) == 1 and "Dask scheduler" in said[0] and "--resume" in said[0], err
    document = json.loads(out.read_text())
    (benchmark_id, status), = rows(str(db), "select id, status from benchmark")
    assert document["benchmark_id"] == benchmark_id and document["status"] == "interrupted" == status
    stored = rows(str(db), "select status from trial where benchmark_id = :b", b=benchmark_id)
    assert "error" not in {s for (s,) in stored}  # the trials that never ran are not results
    finished_before = sum(1 for (s,) in stored if s == "completed")
    assert 3 <= finished_before < len(EVERY_KEY)

    second = Cluster(tmp_path / "second", env)
    try:
        # the resume and the local run below call main() in this process (tests/inprocess.py): only the run
        # whose scheduler is killed needs to be a process of its own
        resumed = run_cli(*command[3:], "--executor", second.executor, "--resume", benchmark_id, "--json",
                          str(tmp_path / "resumed.json"), cwd=tmp_path, env=env)
    finally:
        second.close()
    assert resumed.returncode == 0, resumed.stderr
    # exactly the missing trials ran (those left `running` by the lost workers among them)
    assert json.loads((tmp_path / "resumed.json").read_text())["trials_run"] == len(EVERY_KEY) - finished_before
    found = rows(str(db), "select arm, task_id, trial_index, status from trial where benchmark_id = :b",
                 b=benchmark_id)
    assert Counter((a, t, i) for a, t, i, _ in found) == EVERY_KEY and {s for *_, s in found} == {"completed"}
    assert rows(str(db), "select status from benchmark") == [("finished",)]

    local = run_cli(*command[3:], "--db", str(tmp_path / "local.db"), "--json", str(tmp_path / "local.json"),
                    cwd=tmp_path, env=env)
    assert local.returncode == 0, local.stderr
    (headline,), = rows(str(db), "select headline_score from benchmark")
    assert headline == json.loads((tmp_path / "local.json").read_text())["headline_score"]
    assert len(ARMS) * len(TASKS) * TRIALS == len(EVERY_KEY)
