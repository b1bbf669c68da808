"""With `--server`, the spec's approval policy holds: it is applied on the server, or the run refuses.

Before the fix a batch with `approval: reject` against `corral-tui serve --approve auto` ran the
confirm-level tool in every trial (the server's own policy decided). Each test here starts a real
`corral-tui serve` process on a free loopback port and runs `corral-tui --batch` (its `main()`) against it;
`write_marker` (tests/tui/data/tuitest_env.py) leaves a file behind whenever it really runs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.core.test_batch_live import ENV, read
from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]
TUITEST = ROOT / "tests" / "tui" / "data" / "tuitest.yaml"
SCRIPT = TUITEST.with_name("tuitest.script.yaml")
TRIALS = 3


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


def _serve(approve: str, markers: Path) -> Iterator[str]:
    """`corral-tui serve tuitest.yaml --approve <approve>` on a free port; yields its URL."""
    env = {**ENV, "CORRAL_TUI_TEST_MARKERS": str(markers)}
    server = subprocess.Popen(
        [sys.executable, "-m", "corral_tui.cli", "serve", str(TUITEST), "--port", "0", "--approve", approve],
        cwd=markers, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()  # the first line names the URL (or the server has exited)
        found = re.search(r"on (http://127\.0\.0\.1:\d+)", banner)
        assert found, f"the server did not start: {banner!r} (exit code {server.poll()})"
        yield found.group(1)
    finally:
        server.terminate()
        try:
            server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


@pytest.fixture
def auto_server(markers: Path) -> Iterator[str]:
    yield from _serve("auto", markers)


@pytest.fixture
def rejecting_server(markers: Path) -> Iterator[str]:
    yield from _serve("reject", markers)


def _batch(tmp_path: Path, url: str, approval: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    spec = tmp_path / f"{approval}.bench.yaml"
    spec.write_text(f"name: policy-{approval}\nsuite: {TUITEST}\nmodel: scripted/{SCRIPT}\ntasks: [mark]\n"
                    f"trials_per_task: {TRIALS}\nparallel: 1\napproval: {approval}\n", encoding="utf-8")
    db = tmp_path / f"{approval}.db"
    # the batch runs in this process (tests/inprocess.py), the server stays a process of its own
    done = run_cli("--batch", str(spec), "--db", str(db), "--server", url, "--quiet", cwd=tmp_path, env=ENV)
    return done, db


def test_a_reject_spec_runs_no_confirm_tool_on_an_auto_approving_server(tmp_path: Path, markers: Path,
                                                                         auto_server: str) -> None:
    done, db = _batch(tmp_path, auto_server, "reject")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    calls = read(db, "select tool_name, status, approval from tool_call")
    assert len(calls) == TRIALS, calls  # every trial asked for the tool ...
    assert {(name, status) for name, status, _ in calls} == {("write_marker", "rejected")}, calls
    assert not list(markers.iterdir())  # ... and it never ran

    # The same server, the same suite, a spec that approves: the tool runs (the test can fail).
    done, db = _batch(tmp_path, auto_server, "approve")
    assert done.returncode == 0, done.stderr
    assert {status for (status,) in read(db, "select status from tool_call")} != {"rejected"}
    assert (markers / "marker.txt").exists()


def test_a_spec_looser_than_the_server_refuses_to_start(tmp_path: Path, markers: Path,
                                                        rejecting_server: str) -> None:
    done, db = _batch(tmp_path, rejecting_server, "approve")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "approval: approve" in done.stderr and "--approve" in done.stderr, done.stderr
    assert read(db, "select count(*) from trial") in ([], [(0,)])  # refused before any trial
    assert not list(markers.iterdir())


def test_the_rest_api_applies_a_stricter_trial_policy_and_refuses_a_looser_one(markers: Path,
                                                                               auto_server: str) -> None:
    with httpx.Client(base_url=auto_server, timeout=60) as http:
        assert http.get("/approvals").json()["policy"] == "approve"
        trial = http.post("/tasks/mark/trials", json={"approval": "reject"}).json()
        answer = http.post(f"/trials/{trial['trial_id']}/tools/execute",
                           json={"tool_name": "write_marker", "arguments": {"name": "m.txt"}})
        assert answer.status_code == 200 and answer.json()["result"]["status"] == "rejected", answer.text
        assert not list(markers.iterdir())
        unknown = http.post("/tasks/mark/trials", json={"approval": "sometimes"})
        assert unknown.status_code == 422, unknown.text


def test_a_trial_cannot_loosen_the_servers_policy(markers: Path, rejecting_server: str) -> None:
    with httpx.Client(base_url=rejecting_server, timeout=60) as http:
        assert http.get("/approvals").json()["policy"] == "reject"
        looser = http.post("/tasks/mark/trials", json={"approval": "approve"})
        assert looser.status_code == 409 and "--approve" in looser.json()["detail"], looser.text
        same = http.post("/tasks/mark/trials", json={"approval": "reject"})
        assert same.status_code == 200, same.text



def test_a_server_that_does_not_state_its_policy_is_refused_for_confirm_tools(tmp_path: Path) -> None:
    """Corral's own server has no `/approvals` and no risk levels: a reject spec cannot be enforced there."""
    from fastapi import FastAPI

    from corral_core.client import CorralRouter
    from corral_core.errors import UserError
    from corral_core.runner.benchmark_runner import BenchmarkRunner
    from corral_core.server import EmbeddedServer
    from corral_core.spec import BenchmarkSpec, spec_from_dict

    def spec(tasks: list[str], approval: str) -> BenchmarkSpec:
        return spec_from_dict({"name": "bare", "suite": str(TUITEST), "model": f"scripted/{SCRIPT}",
                               "tasks": tasks, "approval": approval}, tmp_path)

    bare = FastAPI()
    bare.get("/tasks")(lambda: ["mark", "count"])
    server = EmbeddedServer(bare)
    url = server.start()
    try:
        with pytest.raises(UserError, match="does not say how it decides confirm-level tools"):
            BenchmarkRunner(spec(["mark"], "reject"), server_url=url).run()
        with CorralRouter(url, default_verbosity=None) as router:  # the check alone: the spec lets it run them
            BenchmarkRunner(spec(["mark"], "approve"), server_url=url)._check_remote(router)
    finally:
        server.stop()
