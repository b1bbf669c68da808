"""Repository: benchmarks, resume helpers, timeline, replay lookups and chain outputs."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from corral_core.events import Event, EventKind, event_from
from corral_core.store import (
    ArmInfo,
    Repository,
    StoreReplaySource,
    StoreWriter,
    compute_spec_digest,
    init_db,
    make_engine,
)
from corral_core.store.tables import TRIAL_CHILD_TABLES
from tests.timeouts import HANG

T0 = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


@pytest.fixture()
def engine(tmp_path: Path) -> Iterator:
    engine = make_engine(tmp_path / "store.db")
    init_db(engine)
    yield engine
    engine.dispose()


@pytest.fixture()
def repo(engine) -> Repository:
    ids = (f"bm_{i}" for i in itertools.count(1))
    return Repository(engine, clock=Clock(), id_factory=lambda: next(ids))


@pytest.fixture()
def writer(engine) -> Iterator[StoreWriter]:
    writer = StoreWriter(engine).start()
    yield writer
    writer.close()


def ev(kind: EventKind, trial_id: str, ts: float, *, bm: str = "bm_1", task: str = "add", **data) -> Event:
    return event_from(kind, trial_id=trial_id, task_id=task, data=data, benchmark_id=bm, ts=ts)


def run_trial(writer: StoreWriter, trial_id: str, *, arm: str = "brief", task: str = "add", index: int = 0,
              bm: str = "bm_1", status: str | None = "completed", ts: float = T0) -> None:
    """Emit a small but complete trial; status None leaves it running (a crash)."""
    writer.emit(ev(EventKind.TRIAL_STARTED, trial_id, ts, bm=bm, task=task, arm=arm, trial_index=index))
    writer.emit(ev(EventKind.MESSAGE, trial_id, ts + 1, bm=bm, task=task, role="user", content="q", index=0))
    writer.emit(ev(EventKind.LLM_RESPONSE, trial_id, ts + 2, bm=bm, task=task, role="agent", turn=0,
                   digest="d0", content="thinking", tool_calls=[], usage={"total_tokens": 7},
                   arm=arm, trial_index=index))
    writer.emit(ev(EventKind.TOOL_CALL, trial_id, ts + 3, bm=bm, task=task, tool_name="calculator",
                   arguments={"a": 1}, status="success", result="2", duration=0.25))
    writer.emit(ev(EventKind.HOOK_FIRED, trial_id, ts + 4, bm=bm, task=task, point="after_iteration",
                   hook="log", iteration=1))
    if status is not None:
        writer.emit(ev(EventKind.TRIAL_FINISHED, trial_id, ts + 5, bm=bm, task=task, status=status,
                       score=1.0 if status == "completed" else 0.0, surrendered=status == "surrendered"))


def test_benchmark_life_cycle(repo: Repository) -> None:
    digest = compute_spec_digest({"name": "s", "tasks": ["add"]})
    assert digest == compute_spec_digest({"tasks": ["add"], "name": "s"})  # key order does not matter
    created = repo.create_benchmark(
        spec_name="s", spec_digest=digest, spec_yaml="name: s\n", suites=["samplemath"], agent="react",
        model="scripted/samplemath", arms=[ArmInfo("brief", verbosity="brief"), {"name": "full", "verbosity": "full"}],
        trials_per_task=3,
    )
    assert created.id == "bm_1" and created.status == "running"
    assert created.created_at.tzinfo is not None
    repo.finish_benchmark("bm_1", "finished", headline_score=0.8, attempt_status="baseline",
                          metrics_json={"pass@1": 0.8})
    got = repo.get_benchmark("bm_1")
    assert got is not None
    assert (got.status, got.headline_score, got.attempt_status, got.metrics) == (
        "finished", 0.8, "baseline", {"pass@1": 0.8})
    assert [a.name for a in got.arms] == ["brief", "full"] and got.arms[1].verbosity == "full"
    assert got.suites == ["samplemath"] and got.trials_per_task == 3
    assert got.finished_at > got.created_at
    assert repo.get_benchmark("bm_nope") is None
    with pytest.raises(ValueError):
        repo.finish_benchmark("bm_1", "done")
    with pytest.raises(KeyError):
        repo.finish_benchmark("bm_nope")


def test_list_benchmarks_is_newest_first_with_trial_counts(repo: Repository, writer: StoreWriter) -> None:
    for _ in range(5):
        repo.create_benchmark(spec_name="s", spec_digest="d")
    run_trial(writer, "tr_a", bm="bm_2", index=0)
    run_trial(writer, "tr_b", bm="bm_2", index=1, status=None)
    assert writer.flush(HANG)
    page = repo.list_benchmarks(0, 3)
    assert [b.id for b in page.items] == ["bm_5", "bm_4", "bm_3"] and page.has_more
    rest = repo.list_benchmarks(3, 3)
    assert [b.id for b in rest.items] == ["bm_2", "bm_1"] and not rest.has_more
    assert (rest.items[0].trial_count, rest.items[0].finished_count) == (2, 1)
    assert repo.count_benchmarks() == 5


def test_auto_resume_and_attempt_comparison_queries(repo: Repository) -> None:
    repo.create_benchmark(spec_name="s", spec_digest="same")
    repo.finish_benchmark("bm_1", headline_score=0.5)
    repo.create_benchmark(spec_name="s", spec_digest="same")
    repo.finish_benchmark("bm_2", headline_score=0.7)
    repo.create_benchmark(spec_name="s", spec_digest="same")
    repo.finish_benchmark("bm_3", "interrupted", headline_score=0.9)  # not a finished attempt
    repo.create_benchmark(spec_name="other", spec_digest="other")
    repo.finish_benchmark("bm_4", headline_score=1.0)
    assert repo.best_previous_score("same") == 0.7
    assert repo.best_previous_score("same", exclude_id="bm_2") == 0.5
    assert repo.best_previous_score("never") is None
    assert repo.find_unfinished_benchmark("same").id == "bm_3"
    repo.create_benchmark(spec_name="s", spec_digest="same")  # bm_5, running: the newest wins
    assert repo.find_unfinished_benchmark("same").id == "bm_5"
    assert repo.find_unfinished_benchmark("other") is None


def test_resume_helpers_keep_finished_trials_and_remove_running_ones(repo, writer, engine) -> None:
    repo.create_benchmark(spec_name="s", spec_digest="d")
    run_trial(writer, "tr_done", index=0)
    run_trial(writer, "tr_gave_up", index=1, status="surrendered")
    run_trial(writer, "tr_crashed", index=2, status=None)
    assert writer.flush(HANG)
    repo.record_chain_output("bm_1", "ep", "add", "42", 1.0, trial_id="tr_crashed")
    repo.record_chain_output("bm_1", "ep", "add", "42", 1.0, trial_id="tr_done")

    assert repo.finished_trial_keys("bm_1") == {("brief", "add", 0), ("brief", "add", 1)}
    assert repo.delete_unfinished_trials("bm_1") == 1
    assert repo.trial("tr_crashed") is None
    with engine.connect() as conn:
        for table in TRIAL_CHILD_TABLES:
            count = select(func.count()).select_from(table)
            left = conn.execute(count.where(table.c.trial_id == "tr_crashed")).scalar()
            kept = conn.execute(count.where(table.c.trial_id == "tr_done")).scalar()
            assert (table.name, left) == (table.name, 0)
            assert kept == 1
    assert [c.trial_id for c in repo.chain_outputs("bm_1")] == ["tr_done"]
    assert repo.count_trials("bm_1") == 2

    # the re-run of the crashed trial lands once, next to the kept ones
    run_trial(writer, "tr_rerun", index=2)
    assert writer.flush(HANG)
    assert repo.count_trials("bm_1") == 3
    assert repo.delete_unfinished_trials("bm_1") == 0


def test_trial_filters_and_records_for_metrics(repo: Repository, writer: StoreWriter) -> None:
    repo.create_benchmark(spec_name="s", spec_digest="d")
    run_trial(writer, "tr_1", arm="brief", task="add", index=0, ts=T0)
    run_trial(writer, "tr_2", arm="full", task="add", index=0, ts=T0 + 10, status="error")
    run_trial(writer, "tr_3", arm="brief", task="power", index=0, ts=T0 + 20)
    assert writer.flush(HANG)
    assert [t.id for t in repo.trials("bm_1").items] == ["tr_1", "tr_2", "tr_3"]
    assert [t.id for t in repo.trials("bm_1", arm="brief").items] == ["tr_1", "tr_3"]
    assert [t.id for t in repo.trials("bm_1", task="add", status="error").items] == ["tr_2"]
    assert [t.id for t in repo.trials("bm_1", status=["error", "completed"], offset=1, limit=1).items] == ["tr_2"]
    assert repo.count_trials("bm_1", arm="brief") == 2

    records = repo.trial_records("bm_1")
    assert [(r.arm, r.task_id, r.trial_index, r.status) for r in records] == [
        ("brief", "add", 0, "completed"), ("brief", "power", 0, "completed"), ("full", "add", 0, "error")]
    calls = records[0].tool_calls
    assert [(c["tool_name"], c["status"], c["duration"]) for c in calls] == [("calculator", "success", 0.25)]
    assert records[0].score == 1.0 and records[0].assisted is False


def test_timeline_merges_every_source_in_time_order(repo: Repository, writer: StoreWriter) -> None:
    repo.create_benchmark(spec_name="s", spec_digest="d")
    t = "tr_1"
    writer.emit(ev(EventKind.TRIAL_STARTED, t, T0, arm="brief", trial_index=0))
    writer.emit(ev(EventKind.ITERATION_STARTED, t, T0 + 1, iteration=1))
    writer.emit(ev(EventKind.LLM_RESPONSE, t, T0 + 2, role="agent", turn=0, content="", arm="brief",
                   trial_index=0, usage={"total_tokens": 9}))
    writer.emit(ev(EventKind.MESSAGE, t, T0 + 2, role="assistant", content="calling", index=1))  # same ts
    writer.emit(ev(EventKind.APPROVAL_ASKED, t, T0 + 3, tool_name="cli", risk="confirm"))
    writer.emit(ev(EventKind.APPROVAL_DECIDED, t, T0 + 4, tool_name="cli", approved=True, decided_by="user"))
    writer.emit(ev(EventKind.TOOL_CALL, t, T0 + 5, tool_name="cli", arguments={"cmd": "ls"}, status="success",
                   approval="approved"))
    writer.emit(ev(EventKind.INTERVENTION_APPLIED, t, T0 + 6, text="be brief", source="inbox", iteration=2))
    writer.emit(ev(EventKind.MESSAGE, t, T0 + 0.5, role="user", content="What is 17 + 25?", index=0))  # late emit
    writer.emit(ev(EventKind.TRIAL_FINISHED, t, T0 + 7, status="completed", score=1.0))
    assert writer.flush(HANG)

    timeline = repo.timeline(t)
    assert [e.kind for e in timeline] == [
        "trial_started", "message", "iteration_started", "llm_call", "message", "approval_asked",
        "approval_decided", "tool_call", "intervention_applied", "trial_finished",
    ]
    assert [e.ts for e in timeline] == sorted(e.ts for e in timeline)
    assert timeline[1].summary.startswith("user: What is 17 + 25?")
    assert "approved by user" in timeline[6].summary
    assert timeline[7].data["arguments"] == {"cmd": "ls"} and "[approved]" in timeline[7].summary
    assert "be brief" in timeline[8].summary
    assert repo.trial(t).assisted is True
    assert repo.timeline("tr_unknown") == []


def test_llm_response_lookup_and_store_replay_source(repo: Repository, writer: StoreWriter, engine) -> None:
    repo.create_benchmark(spec_name="s", spec_digest="d")
    writer.emit(ev(EventKind.LLM_REQUEST, "tr_1", T0, role="agent", turn=1, digest="dig", n_messages=4))
    writer.emit(ev(EventKind.LLM_RESPONSE, "tr_1", T0 + 1, role="agent", turn=1, digest="dig", content="hi",
                   tool_calls=[{"id": "c1", "name": "calculator", "arguments": '{"a": 1}'}],
                   usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}, model="m",
                   arm="brief", trial_index=2))
    writer.emit(ev(EventKind.LLM_RESPONSE, "tr_1", T0 + 2, role="extractor", turn=1, content="other",
                   arm="brief", trial_index=2))
    assert writer.flush(HANG)

    call = repo.llm_response("bm_1", "brief", "add", 2, "agent", 1)
    assert call is not None
    assert (call.content, call.digest, call.n_messages, call.usage["total_tokens"]) == ("hi", "dig", 4, 5)
    assert call.tool_calls == [{"id": "c1", "name": "calculator", "arguments": '{"a": 1}'}]
    assert repo.llm_response("bm_1", "brief", "add", 2, "agent", 2) is None
    assert repo.llm_response("bm_1", "brief", "add", 0, "agent", 1) is None
    # a one-arm recording answers a replay that names its arm differently
    assert repo.llm_response("bm_1", "default", "add", 2, "agent", 1).content == "hi"

    recorded = StoreReplaySource(engine).lookup("bm_1", "brief", "add", 2, "agent", 1)
    assert recorded is not None
    assert recorded.content == "hi" and recorded.digest == "dig" and recorded.n_messages == 4
    assert [(c.id, c.name, c.arguments) for c in recorded.tool_calls] == [("c1", "calculator", '{"a": 1}')]
    assert recorded.usage.total_tokens == 5
    assert StoreReplaySource(engine).lookup("bm_x", "brief", "add", 2, "agent", 1) is None

    from corral_core.llm import ReplaySource

    assert isinstance(StoreReplaySource(engine), ReplaySource)


def test_chain_outputs_by_episode(repo: Repository) -> None:
    repo.create_benchmark(spec_name="s", spec_digest="d")
    repo.record_chain_output("bm_1", "ep_1", "fetch", "data", 1.0)
    repo.record_chain_output("bm_1", "ep_2", "fetch", "other", 0.0)
    repo.record_chain_output("bm_1", "ep_1", "summarize", "short", 1.0)
    outputs = [(c.task_id, c.output) for c in repo.chain_outputs("bm_1", "ep_1")]
    assert outputs == [("fetch", "data"), ("summarize", "short")]
    assert len(repo.chain_outputs("bm_1")) == 3
    assert repo.chain_outputs("bm_2") == []
