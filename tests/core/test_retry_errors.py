"""--retry-errors: only the errored trials of a finished benchmark run again, into the same benchmark,
and each earlier attempt stays in the store as that trial's history."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from corral_core.batch import open_store
from corral_core.errors import UserError
from corral_core.llm import retry
from corral_core.metrics.records import retired_attempt, retired_original_index
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.inprocess import run_cli

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"
KEY_ENV = "CORRAL_TEST_FAKE_KEY"


@pytest.fixture(autouse=True)
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)


def make_spec(server: FakeOpenAI) -> Any:
    return spec_from_dict({"name": "retry", "suite": str(SAMPLEMATH), "tasks": ["add", "multiply", "divide"],
                           "trials_per_task": 2, "parallel": 1,
                           "model": {"id": "openai/fake-model", "api_base": server.base_url, "api_key_env": KEY_ENV,
                                     "timeout": 10, "max_retries": 0}}, SAMPLEMATH.parent)


def run(spec: Any, db: Path, **kwargs: Any) -> Any:
    engine, repository, writer = open_store(str(db))
    try:
        return BenchmarkRunner(spec, repository=repository, writer_sink=writer).run(**kwargs)
    finally:
        writer.close()
        engine.dispose()


def rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("select benchmark_id, arm, task_id, trial_index, status, id from trial "
                            "order by task_id, trial_index, status").fetchall()


def test_only_errored_trials_run_again_and_the_old_attempts_stay_as_history(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    ok, broken = FakeReply.text("Final Answer: 42"), FakeReply(status=400, error_message="malformed request")
    with FakeOpenAI([ok, broken, ok, ok, broken, ok]) as server:  # trials 2 and 5 error (400 is not retried)
        spec = make_spec(server)
        first = run(spec, db)
        assert first.errored == 2 and len(first.records) == 6
        before = rows(db)
        errored = {r[5]: (r[1], r[2], r[3]) for r in before if r[4] == "error"}
        server.push(ok, ok)
        again = run(spec, db, resume_id=first.benchmark_id, retry_errors=True)
        sent = len(server.received) - 6
        third = run(spec, db, resume_id=first.benchmark_id, retry_errors=True)  # nothing left to retry
        assert len(server.received) - 6 == sent and third.trials_run == 0
    assert sent == 2  # only the two errored trials ran
    assert again.benchmark_id == first.benchmark_id and again.errored == 0 and again.trials_run == 2
    assert len(again.records) == 6 and {r.status for r in again.records} == {"completed"}
    after = rows(db)
    history = {r[5]: (r[1], r[2], retired_original_index(r[3]), retired_attempt(r[3])) for r in after
               if r[4] == "retried"}
    assert history == {tid: (*key, 1) for tid, key in errored.items()}  # the old attempts, kept as history
    live = [(r[1], r[2], r[3]) for r in after if r[4] != "retried"]
    assert len(live) == len(set(live)) == 6  # each (arm, task, trial) once
    assert {r[0] for r in after} == {first.benchmark_id}


def test_retry_errors_needs_a_benchmark_and_a_store(tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        spec = make_spec(server)
    with pytest.raises(UserError, match="retry"):
        BenchmarkRunner(spec).run(retry_errors=True)


def test_cli_retry_errors_without_an_id_takes_the_newest_benchmark_of_the_spec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from corral_tui.cli import main

    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR", KEY_ENV: "sk-test"}
    spec_file = tmp_path / "r.bench.yaml"
    with FakeOpenAI([FakeReply(status=400, error_message="no"), FakeReply.text("Final Answer: 42")],
                    repeat_last=True) as server:
        spec_file.write_text(f"name: r\nsuite: {SAMPLEMATH}\ntasks: [add, multiply]\nmodel: {{id: openai/fake-model, "
                             f"api_base: '{server.base_url}', api_key_env: {KEY_ENV}, max_retries: 0}}\n")
        base = ["--batch", str(spec_file), "--db", "x.db", "--quiet"]  # each run in this process (tests/inprocess.py)
        first = run_cli(*base, cwd=tmp_path, env=env)
        assert first.returncode == 1 and "--retry-errors bm_" in first.stderr, first.stderr
        second = run_cli(*base, "--retry-errors", "--json", "out.json", cwd=tmp_path, env=env)
        monkeypatch.chdir(tmp_path)  # refused before anything runs
        both = main([*base, "--retry-errors", "--resume", "bm_x"])
    assert second.returncode == 0, second.stderr
    document = json.loads((tmp_path / "out.json").read_text())
    assert document["trials_run"] == 1 and [t["status"] for t in document["trials"]] == ["completed"] * 2
    assert both == 2 and "cannot be used together" in capsys.readouterr().err
