"""Work a trial does once per trial or less, counted: the driver does not rescan its pending jobs, the
ownership look is not a read per trial, a tool call and a grading reuse a thread, a scripted model's
file is not resolved at every call, an empty workspace goes without a tree walk."""

from __future__ import annotations

import concurrent.futures
import contextvars
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from corral_core import deadline
from corral_core.deadline import call_with_timeout
from corral_core.events import EventKind
from corral_core.llm import scripted
from corral_core.llm.types import LLMError
from corral_core.runner import benchmark_runner
from corral_core.server import runtime
from tests.core.test_runner import Store, finished, run
from tests.timeouts import HANG, wait_until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> Any:
    opened = Store(tmp_path / "runs.db")
    yield opened
    opened.close()


def samplemath(**overrides: Any) -> Any:
    from corral_core.spec import spec_from_dict

    data = {"name": "per-trial", "suite": str(ROOT / "sample_tasks" / "samplemath.yaml"),
            "model": "scripted/samplemath", "agent": {"type": "tool_calling", "max_iterations": 4},
            "trials_per_task": 2, "parallel": 2, **overrides}
    return spec_from_dict(data, ROOT / "sample_tasks")


def test_the_driver_waits_for_its_jobs_without_rescanning_them(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[int] = []
    original = concurrent.futures.wait
    monkeypatch.setattr(concurrent.futures, "wait", lambda fs, *a, **k: waits.append(len(fs)) or original(fs, *a, **k))
    result, sink = run(samplemath(), store)
    assert len(finished(sink)) == 10 and result.trials_run == 10
    assert waits == []  # the old loop called wait() on every pending future, every 0.1 s


def test_the_ownership_look_reads_the_store_at_most_once_per_interval(store: Store,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[str] = []
    owns = store.repository.owns
    monkeypatch.setattr(store.repository, "owns", lambda b, t: looks.append(b) or owns(b, t))
    monkeypatch.setattr(benchmark_runner, "_clock", lambda: 1000.0)  # time stands still: one look for the run
    result, sink = run(samplemath(parallel=1), store)
    assert len(finished(sink)) == 10
    assert looks == [result.benchmark_id]


def test_the_ownership_look_reads_the_store_again_once_the_interval_passed(store: Store,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[str] = []
    owns = store.repository.owns
    monkeypatch.setattr(store.repository, "owns", lambda b, t: looks.append(b) or owns(b, t))
    ticks = iter(range(0, 10_000))
    monkeypatch.setattr(benchmark_runner, "_clock",
                        lambda: next(ticks) * benchmark_runner.OWNER_CHECK_EVERY)  # an interval between looks
    _, sink = run(samplemath(parallel=1), store)
    assert len(finished(sink)) == 10
    assert len(looks) == 10  # before every trial


def test_tool_calls_and_gradings_reuse_their_threads(store: Store) -> None:
    started: list[str] = []
    original = threading.Thread.start

    def counting(self: threading.Thread) -> None:
        started.append(self.name)
        original(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(deadline._Workers, "IDLE", HANG)  # however slow the machine, a kept thread waits
        patch.setattr(threading.Thread, "start", counting)
        _, sink = run(samplemath(parallel=1), store)
    assert len(finished(sink)) == 10
    per_call = [name for name in started if name.startswith(("tool-", "grader-"))]
    assert len(per_call) <= 2  # was one per tool call and one per grading: 10 trials, 20+ threads


def test_a_reused_thread_runs_each_call_in_a_fresh_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deadline._Workers, "IDLE", HANG)
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[tuple[int, str]] = []

    def first() -> None:
        seen.append((threading.get_ident(), var.get()))
        var.set("left behind")

    def second() -> None:
        seen.append((threading.get_ident(), var.get()))

    assert call_with_timeout(first, 30.0, "tool-first").ok
    assert call_with_timeout(second, 30.0, "tool-second").ok
    assert seen[0][0] == seen[1][0] and seen[1][1] == "unset"


def test_a_kept_thread_ends_once_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deadline._Workers, "IDLE", 0.01)
    ran_on: list[threading.Thread] = []
    assert call_with_timeout(lambda: ran_on.append(threading.current_thread()), HANG, "tool-idle").ok
    wait_until(lambda: not ran_on[0].is_alive(), "the idle thread to end")


def test_a_call_past_its_timeout_is_abandoned_and_the_next_one_runs() -> None:
    release = threading.Event()
    assert call_with_timeout(release.wait, 0.01, "tool-hung").timed_out
    outcome = call_with_timeout(lambda: 42, 30.0, "tool-next")
    release.set()
    assert outcome.value == 42


def test_a_scripted_models_file_is_resolved_only_when_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    path = scripted.find_script("samplemath")
    scripted.load_script(path)
    resolved: list[Path] = []
    original = Path.resolve
    monkeypatch.setattr(Path, "resolve", lambda self, *a, **k: resolved.append(self) or original(self, *a, **k))
    assert scripted.load_script(path)["tasks"]
    assert resolved == []


def test_an_edited_script_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "edited.script.yaml"
    path.write_text("default: {react: ['Final Answer: 1']}\n")
    assert scripted.load_script(path)["default"]["react"] == ["Final Answer: 1"]
    path.write_text("default: {react: ['Final Answer: 22']}\n")
    assert scripted.load_script(path)["default"]["react"] == ["Final Answer: 22"]


def test_an_empty_workspace_goes_without_a_tree_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[str] = []
    monkeypatch.setattr(shutil, "rmtree", lambda path, **k: walks.append(str(path)))
    empty = tmp_path / "empty"
    empty.mkdir()
    runtime._remove_tree(str(empty))
    assert not empty.exists() and walks == []


def test_a_workspace_with_files_is_removed_whole(tmp_path: Path) -> None:
    full = tmp_path / "full"
    (full / "sub").mkdir(parents=True)
    (full / "sub" / "file.txt").write_text("x")
    runtime._remove_tree(str(full))
    assert not full.exists()


def test_a_trial_is_closed_by_its_submission_not_by_a_delete_of_its_own(store: Store,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from corral_core.client import CorralRouter

    deletes: list[str] = []
    close_trial = CorralRouter.close_trial
    monkeypatch.setattr(CorralRouter, "close_trial", lambda self, t: deletes.append(t) or close_trial(self, t))
    _, sink = run(samplemath(), store, server_telemetry=True)
    trials = {e.trial_id for e in sink.of_kind(EventKind.TRIAL_FINISHED)}
    assert len(trials) == 10
    assert deletes == []  # was one DELETE /trials/{id} per trial
    closed = [e.trial_id for e in sink.of_kind(EventKind.TRIAL_CLOSED)]
    assert sorted(closed) == sorted(trials)  # every trial closed on the server, once
    kinds = [(e.kind, e.trial_id) for e in sink.events if e.kind in (EventKind.TRIAL_CLOSED, EventKind.TRIAL_FINISHED)]
    for trial in trials:  # closed before the runner reports it finished, as with the DELETE
        assert kinds.index((EventKind.TRIAL_CLOSED, trial)) < kinds.index((EventKind.TRIAL_FINISHED, trial))


def _turn(name: str) -> Any:
    from corral_core.llm.types import CallContext

    return scripted.scripted_turn(name, CallContext(task_id="t", role="agent"),
                                  [{"role": "user", "content": "hi"}], None)


def test_a_scripted_model_looks_for_its_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "once.script.yaml").write_text("default: {react: ['Final Answer: 1']}\n")
    monkeypatch.setenv(scripted.SCRIPTS_ENV, str(tmp_path))
    searches: list[str] = []
    find = scripted.find_script
    monkeypatch.setattr(scripted, "find_script", lambda name: searches.append(name) or find(name))
    assert [_turn("once").content for _ in range(3)] == ["Final Answer: 1"] * 3
    assert searches == ["once"]  # was a search of every folder at every call


def test_a_removed_script_is_looked_for_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "moved.script.yaml").write_text("default: {react: ['Final Answer: first']}\n")
    (second / "moved.script.yaml").write_text("default: {react: ['Final Answer: second']}\n")
    monkeypatch.setenv(scripted.SCRIPTS_ENV, f"{first}{os.pathsep}{second}")
    assert _turn("moved").content == "Final Answer: first"
    (first / "moved.script.yaml").unlink()
    assert _turn("moved").content == "Final Answer: second"
    (second / "moved.script.yaml").unlink()
    with pytest.raises(LLMError, match="no script for model 'scripted/moved'"):
        _turn("moved")
