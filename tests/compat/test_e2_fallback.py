"""Our runner against a server that offers only Corral E2's task routes (corral_e2_server.py).

The client finds no trial routes, runs the tasks over the task routes one trial per task at a
time (the stand-in counts how many were open at once), reads the finished trial's id from the
state (Corral's answer names the next one), sends verbosity in lowercase (Corral answers 422
otherwise), and the run's output says it fell back.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.client import CorralRouter, TaskRouteTrial, TrialClient
from corral_core.server import EmbeddedServer
from tests.compat.corral_e2_server import create_corral_e2_app
from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]
TASKS = {"sum_small": ("What is 2 + 3?", "5"), "sum_big": ("What is 40 + 2?", "42")}

SUITE = """\
name: corral_e2_standin
tasks:
  - {id: sum_small, prompt: "What is 2 + 3?", answer: "5"}
  - {id: sum_big, prompt: "What is 40 + 2?", answer: "42"}
"""
SCRIPT = """\
description: answers for the Corral E2 stand-in
tasks:
  sum_small:
    react:
      - "<thought>Add them.</thought><action>add</action><action_input>{\\"a\\": 2, \\"b\\": 3}</action_input>"
      - "<thought>5.</thought><final_answer>5</final_answer>"
    tool_calling:
      - tool_calls: [{name: add, arguments: {a: 2, b: 3}}]
      - content: "Final Answer: 5"
  sum_big:
    react:
      - "<thought>Add them.</thought><action>add</action><action_input>{\\"a\\": 40, \\"b\\": 2}</action_input>"
      - "<thought>42.</thought><final_answer>42</final_answer>"
    tool_calling:
      - tool_calls: [{name: add, arguments: {a: 40, b: 2}}]
      - content: "Final Answer: 42"
"""
SPEC = """\
name: e2_fallback
suite: standin.yaml
model: scripted/standin.script.yaml
agent: {type: react, max_iterations: 5}
arms:
  - {name: react, verbosity: brief}
  - {name: tool_calling, verbosity: detailed, agent: {type: tool_calling}}
trials_per_task: 3
parallel: 4
timeouts: {trial: 120, tool: 30, grader: 30}
"""


@pytest.fixture
def standin() -> Iterator[tuple[str, object]]:
    app = create_corral_e2_app(TASKS)
    server = EmbeddedServer(app)
    try:
        yield server.start(), app
    finally:
        server.stop()


def test_the_client_falls_back_to_task_routes_and_reads_the_finished_trial_id(standin: tuple[str, object]) -> None:
    url, _ = standin
    with CorralRouter(url, default_verbosity="BRIEF") as router:
        assert router.trial_routes() is False
        trial = router.open_trial("sum_small")
        assert isinstance(trial, TaskRouteTrial) and not isinstance(trial, TrialClient)
        assert trial.server_trial_id == "0" and trial.trial_id.startswith("tk_")
        assert "Tool: add" in trial.get_task_guide("sum_small")  # "BRIEF" went out as "brief"
        assert trial.execute_tool("sum_small", "add", {"a": 2, "b": 3}).result == "5"
        first = trial.submit_answer("sum_small", "5")
        trial.close()
        assert first.trial_id == "0" and first.score == 1.0  # Corral answered trial_id "1"
        with router.open_trial("sum_small") as abandoned:  # never submitted: surrendered on close
            assert abandoned.server_trial_id == "1"
        with router.open_trial("sum_small") as third:
            assert third.server_trial_id == "2"
            assert third.get_task_status("sum_small")["tool_statistics"]["total_calls"] == 0
        assert router.get_trial_state("sum_small", "1")["surrendered"] is True


def test_our_runner_scores_every_trial_over_corral_task_routes(standin: tuple[str, object], tmp_path: Path) -> None:
    url, app = standin
    (tmp_path / "standin.yaml").write_text(SUITE)
    (tmp_path / "standin.script.yaml").write_text(SCRIPT)
    (tmp_path / "spec.yaml").write_text(SPEC)
    proc = run_cli("--batch", "spec.yaml", "--server", url, "--db", str(tmp_path / "runs.db"), "--json", "out.json",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "has no trial routes (a Corral E2 server)" in proc.stderr
    assert "one trial per task at a time" in proc.stderr
    document = json.loads((tmp_path / "out.json").read_text())
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        rows = conn.execute("select id, task_id, arm, status, score, error from trial where benchmark_id=?",
                            (document["benchmark_id"],)).fetchall()
    assert len(rows) == 12
    assert all(status == "completed" and score == 1.0 and error is None for _, _, _, status, score, error in rows), rows
    assert len({row[0] for row in rows}) == 12  # unique trial ids although Corral's restart at "0" per task
    environments = app.state.environments  # type: ignore[attr-defined]
    assert {task: env.max_open_trials for task, env in environments.items()} == {"sum_small": 1, "sum_big": 1}
    assert {task: len(env.trial_states) for task, env in environments.items()} == {"sum_small": 6, "sum_big": 6}
    assert set(app.state.verbosities) == {"brief", "detailed"}  # type: ignore[attr-defined]


def test_an_e2c_server_gets_trial_runtimes_by_trial_runtime_id() -> None:
    from fastapi import FastAPI

    app = FastAPI()
    closed: list[str] = []

    @app.post("/tasks/{task_id}/trials")
    def open_runtime(task_id: str) -> dict[str, object]:
        return {"trial_runtime_id": "tr_0123456789abcdef", "task_id": task_id, "workspace": None,
                "mcp_url": "/trials/tr_0123456789abcdef/mcp"}

    @app.get("/trials/{rid}/prompt")
    def prompt(rid: str) -> dict[str, str]:
        return {"prompt": f"runtime {rid}"}

    @app.delete("/trials/{rid}")
    def close(rid: str) -> dict[str, str]:
        closed.append(rid)
        return {"status": "closed", "trial_runtime_id": rid}

    with EmbeddedServer(app) as server, CorralRouter(server.url) as router:
        assert router.trial_routes() is True
        with router.open_trial("t1") as trial:
            assert isinstance(trial, TrialClient) and trial.trial_id == "tr_0123456789abcdef"
            assert trial.get_task_prompt("t1") == "runtime tr_0123456789abcdef"
    assert closed == ["tr_0123456789abcdef"]
