"""BenchmarkRunner in process: chains, skips, grader and trial timeouts, approvals, resume of a cut round."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from corral_core.batch import open_store
from corral_core.events import EventKind, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict
from tests.timeouts import HANG, wait_until

DATA = Path(__file__).resolve().parent / "data"


def make_spec(suite: str, **overrides: Any) -> Any:
    data = {"name": f"test-{suite}", "suite": str(DATA / f"{suite}.yaml"),
            "model": f"scripted/{DATA / f'{suite}.script.yaml'}", "trials_per_task": 1, "parallel": 2}
    data.update(overrides)
    return spec_from_dict(data, DATA)


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.engine, self.repository, self.writer = open_store(str(path))

    def close(self) -> None:
        self.writer.close()
        self.engine.dispose()

    def rows(self, sql: str, *args: Any) -> list[tuple]:
        with sqlite3.connect(self.path) as conn:
            return conn.execute(sql, args).fetchall()


@pytest.fixture
def store(tmp_path: Path) -> Any:
    opened = Store(tmp_path / "runs.db")
    yield opened
    opened.close()


def finished(sink: ListSink) -> dict[tuple[str, str, int], dict[str, Any]]:
    return {(e.data["arm"], e.task_id, e.data["trial_index"]): e.data for e in sink.of_kind(EventKind.TRIAL_FINISHED)}


def run(spec: Any, store: Store | None = None, **kwargs: Any) -> tuple[Any, ListSink]:
    sink = ListSink()
    extra = {"repository": store.repository, "writer_sink": store.writer} if store else {}
    result = BenchmarkRunner(spec, sink=sink, **extra, **kwargs).run()
    return result, sink


def test_chain_outputs_flow_within_a_round_and_failures_skip_dependents(store: Store) -> None:
    spec = make_spec("chain", trials_per_task=3, parallel=3)
    result, sink = run(spec, store, server_telemetry=True)  # TRIAL_OPENED below: which trials the server saw
    trials = finished(sink)
    # rounds 0 and 1 ran concurrently with different seeds: each dependent saw its own round's output
    assert [trials[("default", t, 0)]["answer"] for t in ("seed", "double", "report")] == ["21", "42", "42"]
    assert [trials[("default", t, 1)]["answer"] for t in ("seed", "double", "report")] == ["50", "100", "100"]
    assert all(trials[("default", t, i)]["score"] == 1.0 for t in ("double", "report") for i in (0, 1))
    # round 2: the seed fails, so both dependents are skipped (reported, never run on the server)
    assert trials[("default", "seed", 2)]["status"] == "completed" and trials[("default", "seed", 2)]["score"] == 0
    for task in ("double", "report"):
        assert trials[("default", task, 2)]["status"] == "skipped"
    skipped_ids = [e.trial_id for e in sink.of_kind(EventKind.TRIAL_FINISHED) if e.data["status"] == "skipped"]
    assert all(tid.startswith("sk_") for tid in skipped_ids)
    opened = {e.trial_id for e in sink.of_kind(EventKind.TRIAL_OPENED)}
    assert not opened & set(skipped_ids)
    episodes = {trials[("default", "seed", i)]["episode_id"] for i in range(3)}
    assert episodes == {f"{result.benchmark_id}:default:{i}" for i in range(3)}
    # partial-completion metrics show the cut round
    (chain,) = result.chains["default"]
    assert chain.chain_order == ["seed", "double", "report"]
    assert chain.end_to_end.value == pytest.approx(2 / 3)
    assert chain.partial_completion.value == pytest.approx(2 / 3)
    assert chain.links["double"].skipped == 1 and chain.links["report"].skipped == 1
    outputs = {(o.episode_id, o.task_id): o.output for o in store.repository.chain_outputs(result.benchmark_id)}
    assert outputs[(f"{result.benchmark_id}:default:1", "double")] == "100"
    assert store.rows("select count(*) from trial where status='skipped'") == [(2,)]


def test_resuming_a_cut_chain_round_reruns_only_its_unfinished_links(store: Store) -> None:
    spec = make_spec("chain", trials_per_task=2)
    first, _ = run(spec, store)
    bid = first.benchmark_id
    cut = f"{bid}:default:1"
    # as if the process died after `seed` of round 1: later links unfinished, benchmark not closed
    store.rows("delete from chain_output where episode_id=? and task_id != 'seed'", cut)
    store.rows("update trial set status='running' where episode_id=? and task_id != 'seed'", cut)
    store.rows("update benchmark set status='interrupted' where id=?", bid)
    sink = ListSink()
    resumed = BenchmarkRunner(spec, repository=store.repository, writer_sink=store.writer, sink=sink).run(bid)
    rerun = finished(sink)
    assert sorted(rerun) == [("default", "double", 1), ("default", "report", 1)]
    # the stored seed output (50) reached the re-run links through the seeded episode
    assert rerun[("default", "double", 1)]["answer"] == "100" and rerun[("default", "double", 1)]["score"] == 1.0
    assert resumed.resumed and resumed.status == "finished" and resumed.trials_run == 2
    keys = store.rows("select arm, task_id, trial_index, count(*) from trial where benchmark_id=? "
                      "group by arm, task_id, trial_index", bid)
    assert len(keys) == 8 and all(row[3] == 1 for row in keys)


def test_grader_that_never_returns_times_out_and_the_run_goes_on(store: Store) -> None:
    spec = make_spec("grader", trials_per_task=2, timeouts={"grader": 0.5, "trial": 30})
    result, sink = run(spec, store)  # the grader never returns: only its timeout lets the run end
    trials = finished(sink)
    for index in (0, 1):
        hung = trials[("default", "hang", index)]
        assert hung["status"] == "timeout" and hung["score"] is None
        assert "timed out" in hung["explanation"]
        assert trials[("default", "fine", index)]["status"] == "completed"
    assert result.errored == 2
    assert store.rows("select status, score from trial where task_id='hang'") == [("timeout", None)] * 2


def test_trial_time_limit_cancels_the_agent_and_reports_timeout() -> None:
    spec = make_spec("ops", tasks=["loop"], agent={"type": "react", "max_iterations": 500},
                     timeouts={"trial": 0.5})
    _result, sink = run(spec)
    (trial,) = finished(sink).values()
    assert trial["status"] == "timeout" and "0.5 s limit" in trial["error"] and trial["score"] is None
    assert trial["iterations"] < 500  # cancelled long before the iteration limit


@pytest.mark.parametrize(("policy", "status"), [("ask", "error"), ("approve", "completed"), ("reject", "completed")])
def test_approval_policy_for_confirm_tools_in_batch(policy: str, status: str) -> None:
    spec = make_spec("ops", tasks=["danger"], approval=policy)
    _, sink = run(spec)
    (trial,) = finished(sink).values()
    assert trial["status"] == status
    if policy == "ask":
        assert trial["error"].startswith("needs approval") and "'launch'" in trial["error"]
    calls = [e.data for e in sink.of_kind(EventKind.TOOL_CALL)]
    expected = "success" if policy == "approve" else "rejected"
    assert [c["status"] for c in calls] == [expected]


def test_controls_pause_step_intervene_and_resume(tmp_path: Path) -> None:
    from corral_core.runner import ControlRegistry

    spec = make_spec("slow", tasks=["t1"], trials_per_task=1)
    controls = ControlRegistry(start_paused=True)
    sink = ListSink()
    runner = BenchmarkRunner(spec, sink=sink, controls=controls)
    import threading

    outcome: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("result", runner.run()))
    worker.start()
    wait_until(controls.running, "the trial to start")
    (live,) = controls.running()
    assert live.task_id == "t1" and live.state == "paused"
    controller = controls.controller(live.trial_id)
    assert controller.wait_blocked(HANG)
    assert not sink.of_kind(EventKind.LLM_REQUEST)  # paused before the first step
    controls.step_all()  # exactly one iteration (the pause tool call), then paused again
    assert controller.wait_blocked(HANG)
    assert len(sink.of_kind(EventKind.LLM_REQUEST)) == 1 and controls.running()[0].state == "paused"
    assert controls.send(live.trial_id, "Answer with one.")
    controls.resume_all()
    worker.join(HANG)
    assert not worker.is_alive()
    (trial,) = finished(sink).values()
    assert trial["status"] == "completed" and trial["assisted"] is True and trial["iterations"] == 2
    applied = sink.of_kind(EventKind.INTERVENTION_APPLIED)
    assert [(e.data["source"], e.data["text"]) for e in applied] == [("inbox", "Answer with one.")]
    assert outcome["result"].arms["default"].n_assisted == 1
    assert not controls.running() and not controls.send(live.trial_id, "late")


def test_stopping_a_run_leaves_it_resumable_without_duplicates(store: Store) -> None:
    from corral_core.runner import ControlRegistry

    spec = make_spec("slow", trials_per_task=3, parallel=1)
    sink = ListSink()

    class StopAfterTwo:
        runner: BenchmarkRunner

        def emit(self, event: Any) -> None:
            if event.kind is EventKind.TRIAL_FINISHED and len(sink.of_kind(EventKind.TRIAL_FINISHED)) >= 2:
                self.runner.stop()

    stopper = StopAfterTwo()
    runner = BenchmarkRunner(spec, repository=store.repository, writer_sink=store.writer, sink=[sink, stopper],
                             controls=ControlRegistry())
    stopper.runner = runner
    first = runner.run()
    assert first.status == "interrupted" and first.attempt_status is None
    assert store.repository.get_benchmark(first.benchmark_id).status == "interrupted"
    second, sink2 = run(spec, store)  # auto-resume: same spec digest, unfinished benchmark
    assert second.benchmark_id == first.benchmark_id and second.resumed
    assert second.status == "finished"
    rows = store.rows("select task_id, trial_index, status, score from trial where benchmark_id=?",
                      first.benchmark_id)
    assert sorted((t, i) for t, i, _, _ in rows) == [(t, i) for t in ("t1", "t2", "t3", "t4") for i in range(3)]
    assert {(t, s) for t, _, s, _ in rows} == {("t1", "completed"), ("t2", "completed"), ("t3", "completed"),
                                                ("t4", "completed")}
    assert all(score == (0.0 if task == "t4" else 1.0) for task, _, _, score in rows)
    finished_before = {k for k, v in finished(sink).items() if v["status"] != "cancelled"}
    assert not finished_before & set(finished(sink2))  # nothing that had finished ran again


@pytest.mark.parametrize("start_paused", [True, False])
def test_a_trial_that_registers_after_its_run_was_stopped_is_cancelled(start_paused: bool) -> None:
    """The stop lands between the trial's opening on the server (TRIAL_STARTED) and its registration, where
    `cancel_all` cannot see it: the trial is cancelled when it registers. Before, a run started paused waited
    on it forever, and a running one ran it to the end."""
    import threading

    from corral_core.runner import ControlRegistry

    spec = make_spec("slow", tasks=["t1"], trials_per_task=1)
    controls = ControlRegistry(start_paused=start_paused)
    sink = ListSink()

    class StopOnStart:  # runs on the trial's thread, after TRIAL_STARTED and before the trial registers
        runner: BenchmarkRunner

        def emit(self, event: Any) -> None:
            if event.kind is EventKind.TRIAL_STARTED:
                self.runner.stop()

    stopper = StopOnStart()
    runner = BenchmarkRunner(spec, sink=[sink, stopper], controls=controls)
    stopper.runner = runner
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(runner.run()))
    worker.start()
    worker.join(HANG)
    hung = worker.is_alive()
    if hung:  # free the trial the stop missed, so the failing test ends
        for trial in controls.running():
            controls.controller(trial.trial_id).cancel()
        worker.join(HANG)
    assert not hung, "the stopped run waited on a trial that registered after the stop"
    assert results[0].status == "interrupted"
    assert [e.data["status"] for e in sink.of_kind(EventKind.TRIAL_FINISHED)] == ["cancelled"]
    assert not sink.of_kind(EventKind.LLM_REQUEST)  # it never called the model


def test_replay_model_answers_with_a_recorded_benchmark(store: Store) -> None:
    samplemath = DATA.parent.parent.parent / "sample_tasks" / "samplemath.yaml"
    base = {"suite": str(samplemath), "tasks": ["add", "power"], "trials_per_task": 2,
            "arms": [{"name": "brief", "verbosity": "brief"}]}
    recorded, sink = run(spec_from_dict({**base, "name": "rec", "model": "scripted/samplemath"}, DATA), store)
    replayed, sink2 = run(spec_from_dict({**base, "name": "rep", "model": f"replay/{recorded.benchmark_id}"}, DATA),
                          store)
    assert replayed.benchmark_id != recorded.benchmark_id
    first = {k: (v["status"], v["answer"]) for k, v in finished(sink).items()}
    second = {k: (v["status"], v["answer"]) for k, v in finished(sink2).items()}
    assert second == first and first[("brief", "power", 0)] == ("completed", "20")


def test_a_replay_source_lasts_as_long_as_its_run_even_one_that_raises(store: Store) -> None:
    """A replay run reads its store only while it runs: after it, and after a replay run that fails while it
    is set up, no `replay/` model of the process reads that store (it may be closed; another run may be
    replaying another store)."""
    from corral_core.errors import UserError
    from corral_core.llm import get_replay_source, set_replay_source

    before = set_replay_source(None)
    try:
        samplemath = DATA.parent.parent.parent / "sample_tasks" / "samplemath.yaml"
        base = {"suite": str(samplemath), "tasks": ["add"], "arms": [{"name": "brief", "verbosity": "brief"}]}
        recorded, _ = run(spec_from_dict({**base, "name": "rec", "model": "scripted/samplemath"}, DATA), store)
        replay = spec_from_dict({**base, "name": "rep", "model": f"replay/{recorded.benchmark_id}"}, DATA)
        replayed, _ = run(replay, store)
        assert [row["status"] for row in replayed.rows] == ["completed"]
        assert get_replay_source() is None and get_replay_source(recorded.benchmark_id) is None
        with pytest.raises(UserError, match="cannot use the environment server"):  # raises once replay is set up
            run(replay, store, server_url="http://127.0.0.1:9")
        assert get_replay_source() is None and get_replay_source(recorded.benchmark_id) is None
    finally:
        set_replay_source(before)


def test_a_cancel_that_lands_as_the_last_trial_ends_still_interrupts_the_run(store: Store) -> None:
    """The UI's cancel event may be set while the last trial is finishing: the run must end
    `interrupted` (never finished/improved), however the worker pool's wake-ups fall."""
    import threading

    cancel = threading.Event()

    class CancelOnFinish:
        def emit(self, event: Any) -> None:  # runs on the trial's thread, before its job returns
            if event.kind is EventKind.TRIAL_FINISHED:
                cancel.set()

    spec = make_spec("chain", tasks=["solo"], trials_per_task=1, parallel=1)
    runner = BenchmarkRunner(spec, sink=CancelOnFinish(), repository=store.repository, writer_sink=store.writer)
    result = runner.run(cancel_event=cancel)
    assert result.status == "interrupted" and result.attempt_status is None
    assert store.rows("SELECT status FROM benchmark") == [("interrupted",)]


def test_the_embedded_servers_telemetry_is_produced_only_when_asked_for() -> None:
    """Trials opened/closed, tool calls requested/executed and requests served have no reader in the
    engine, the store, batch or the workbench: the runner's servers emit them only on request."""
    from corral_core.events import TELEMETRY_KINDS

    spec = make_spec("slow", tasks=["t1"])  # one trial with one tool call
    _, quiet = run(spec)
    _, chatty = run(spec, server_telemetry=True)
    assert not {e.kind for e in quiet.events} & TELEMETRY_KINDS
    assert {e.kind for e in chatty.events} >= TELEMETRY_KINDS
    assert finished(quiet).keys() == finished(chatty).keys()
