"""Forking a stored trial (corral_core/runner/fork.py), without a terminal: the fork replays its parent's
recorded conversation up to the fork point through `replay/<benchmark>` and the store, its tools answer
as the parent's did, and it is stored with its parent, fork point and the assisted flag."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from corral_core.batch import open_store
from corral_core.errors import UserError
from corral_core.runner import BenchmarkRunner
from corral_core.runner.fork import ForkRunner
from corral_core.spec import spec_from_dict

DATA = Path(__file__).resolve().parents[1] / "tui" / "data"  # the tuitest suite and its scripted model
SKIP = "Skip the remaining steps; the answer is 5."  # the script answers at once when it reads this


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("CORRAL_TUI_SCRIPTS", str(DATA))
    engine, repository, writer = open_store(str(tmp_path / "runs.db"))
    yield repository, writer, tmp_path / "runs.db"
    writer.close()
    engine.dispose()


def record_parent(repository: Any, writer: Any) -> str:
    """A two-trial run of `count` (six iterations: five tally calls, then the answer); returns trial #1's id."""
    spec = spec_from_dict({"name": "fork-parent", "suite": str(DATA / "tuitest.yaml"), "tasks": ["count"],
                           "agent": {"type": "react", "max_iterations": 8}, "trials_per_task": 2,
                           "approval": "approve"}, DATA)
    result = BenchmarkRunner(spec, repository=repository, writer_sink=writer).run()
    return next(row["trial_id"] for row in result.rows if row["trial_index"] == 1)


def rows(db: Path, sql: str, trial_id: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, (trial_id,)).fetchall()


def messages(db: Path, trial_id: str) -> list[tuple[Any, ...]]:
    return rows(db, 'select role, content, tool_calls_json from message where trial_id = ? order by "index"',
                trial_id)


def tool_calls(db: Path, trial_id: str) -> list[tuple[Any, ...]]:
    return rows(db, "select iteration, tool_name, arguments_json, result, status from tool_call "
                    "where trial_id = ? order by seq", trial_id)


def fork(repository: Any, writer: Any, parent: str, iteration: int, intervention: str | None = None) -> str:
    runner = ForkRunner(repository, writer, parent, iteration, intervention)
    result = runner.run()
    assert result.status == "finished" and runner.fork_trial_id is not None
    return runner.fork_trial_id


def test_a_fork_replays_its_parent_up_to_the_fork_point_then_goes_live_with_the_intervention(store: Any) -> None:
    repository, writer, db = store
    parent_id = record_parent(repository, writer)
    fork_id = fork(repository, writer, parent_id, 2, SKIP)  # iterations 1-2 replayed, live from 3

    parent, child = repository.trial(parent_id), repository.trial(fork_id)
    assert (child.parent_trial_id, child.fork_iteration, child.assisted) == (parent_id, 2, True)
    assert (parent.parent_trial_id, parent.fork_iteration, parent.assisted) == (None, None, False)
    assert (child.arm, child.task_id, child.trial_index) == (parent.arm, parent.task_id, 1)
    assert child.benchmark_id != parent.benchmark_id  # a benchmark of its own: the parent's results stand
    assert (parent.iterations, child.iterations) == (6, 3)
    assert (child.status, child.answer, child.score) == ("completed", "5", 1.0)

    # the tools ran again on the environment and answered exactly as they did for the parent
    replayed = [call for call in tool_calls(db, fork_id) if call[0] < 2]
    assert replayed == tool_calls(db, parent_id)[:2] and len(replayed) == 2
    assert [call[0] for call in tool_calls(db, fork_id)] == [0, 1]  # none after the fork point

    # the LLM answers up to the fork point came from the parent's recording, then from its own model
    models = rows(db, "select turn, model from llm_call where trial_id = ? order by turn", fork_id)
    assert models == [(0, f"replay/{parent.benchmark_id}"), (1, f"replay/{parent.benchmark_id}"),
                      (2, "scripted/tuitest")]

    # the conversation is the parent's up to the fork point, and differs from there
    mine, theirs = messages(db, fork_id), messages(db, parent_id)
    at_fork = 2 + 2 * 2  # system and task prompt, then an assistant reply and an observation per iteration
    assert mine[:at_fork] == theirs[:at_fork]
    assert mine[at_fork] == ("user", f"Intervention from the operator: {SKIP}", None) != theirs[at_fork]
    assert "skipped" in mine[at_fork + 1][1] and len(mine) == at_fork + 2


def test_a_fork_without_an_intervention_goes_on_as_its_deterministic_parent_did_and_is_still_assisted(
        store: Any) -> None:
    repository, writer, db = store
    parent_id = record_parent(repository, writer)
    fork_id = fork(repository, writer, parent_id, 1)
    assert messages(db, fork_id) == messages(db, parent_id)
    assert tool_calls(db, fork_id) == tool_calls(db, parent_id)
    child = repository.trial(fork_id)
    assert (child.assisted, child.fork_iteration, child.status) == (True, 1, "completed")
    fork_point = [e for e in repository.timeline(fork_id) if e.kind == "hook_fired"]
    assert [(e.data.get("hook"), e.data.get("iteration")) for e in fork_point] == [("fork", 1)]


def test_a_fork_of_an_assisted_trial_gets_the_interventions_it_was_sent_again_at_their_iterations(
        store: Any) -> None:
    repository, writer, db = store
    parent_id = record_parent(repository, writer)
    steered = fork(repository, writer, parent_id, 1, "Keep counting.")  # read at iteration 2; the run goes on
    again = fork(repository, writer, steered, 4)  # a fork of that fork, past its intervention
    assert messages(db, again) == messages(db, steered)
    assert messages(db, steered)[4] == ("user", "Intervention from the operator: Keep counting.", None)
    assert (repository.trial(again).status, repository.trial(again).parent_trial_id) == ("completed", steered)


def test_a_trial_cannot_be_forked_where_it_never_was(store: Any) -> None:
    repository, writer, _ = store
    parent_id = record_parent(repository, writer)
    with pytest.raises(UserError, match="ran 6 iteration"):
        ForkRunner(repository, writer, parent_id, 6)
    with pytest.raises(UserError, match="no trial"):
        ForkRunner(repository, writer, "tr_missing", 0)


def test_a_fork_whose_replayed_request_differs_from_the_recording_ends_as_an_error_naming_the_turn(
        store: Any) -> None:
    repository, writer, db = store
    parent_id = record_parent(repository, writer)
    with sqlite3.connect(db) as conn:  # as if a tool had answered differently: turn 2's request differs
        conn.execute("update llm_call set digest = ? where trial_id = ? and turn = 1", ("0" * 64, parent_id))
    fork_id = fork(repository, writer, parent_id, 3)
    child = repository.trial(fork_id)
    assert (child.status, child.fault, child.iterations) == ("error", "agent", 2)
    assert "turn 2 differs from the recording" in child.error
    assert len(tool_calls(db, fork_id)) == 1  # nothing ran after the divergence
