"""StoreWriter: events become rows in batched commits; trial start/finish are never dropped."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from corral_core.events import (
    Event,
    EventKind,
    LLMRequestEvent,
    ToolCallEvent,
    event_from,
)
from corral_core.store import Repository, StoreWriter, database, init_db, make_engine
from corral_core.store.tables import (
    hook_event_table,
    llm_call_table,
    message_table,
    tool_call_table,
    trial_table,
)
from tests.timeouts import HANG

T0 = 1_700_000_000.0


def ev(kind: EventKind, trial_id: str | None = "tr_1", *, ts: float = T0, task: str = "add",
       bm: str | None = "bm_1", **data) -> Event:
    return event_from(kind, trial_id=trial_id, task_id=task, data=data, benchmark_id=bm, ts=ts)


def started(trial_id: str = "tr_1", *, arm: str = "brief", index: int = 0, task: str = "add",
            ts: float = T0) -> Event:
    return ev(EventKind.TRIAL_STARTED, trial_id, ts=ts, task=task, arm=arm, trial_index=index,
              episode_id="ep_1", agent="react", model="scripted/samplemath", verbosity=arm)


def finished(trial_id: str = "tr_1", *, status: str = "completed", score: float = 1.0,
             assisted: bool = False, ts: float = T0 + 10) -> Event:
    return ev(EventKind.TRIAL_FINISHED, trial_id, ts=ts, status=status, score=score, answer="42",
              surrendered=False, error=None, explanation="exact", iterations=3, prompt_tokens=100,
              completion_tokens=20, total_tokens=120, cost=0.01, duration=2.5, tool_duration=0.5,
              assisted=assisted)


@pytest.fixture()
def engine(tmp_path: Path) -> Iterator:
    engine = make_engine(tmp_path / "store.db")
    init_db(engine)
    repo = Repository(engine, id_factory=lambda: "bm_1")
    repo.create_benchmark(spec_name="spec", spec_digest="d1")
    yield engine
    engine.dispose()


@pytest.fixture()
def writer(engine) -> Iterator[StoreWriter]:
    writer = StoreWriter(engine).start()
    yield writer
    writer.close()


def count(engine, table, **where) -> int:
    query = select(func.count()).select_from(table)
    for key, value in where.items():
        query = query.where(table.c[key] == value)
    with engine.connect() as conn:
        return conn.execute(query).scalar_one()


def test_each_event_kind_becomes_its_row(engine, writer: StoreWriter) -> None:
    call = {"tool_name": "calculator", "arguments": {"operation": "+", "a": 17, "b": 25}, "result": "42.0",
            "status": "success", "error_message": None, "duration": 0.01, "timestamp": "2023-11-14T22:13:21Z",
            "risk": "safe", "approval": None, "render": "text", "iteration": 1}
    events = [
        started(),
        ev(EventKind.ITERATION_STARTED, ts=T0 + 1, iteration=1),
        ev(EventKind.LLM_REQUEST, ts=T0 + 1.1, role="agent", turn=0, digest="abc", n_messages=2, model="m"),
        ev(EventKind.LLM_RESPONSE, ts=T0 + 1.2, role="agent", turn=0, digest="abc", content=None,
           tool_calls=[{"id": "c1", "name": "calculator", "arguments": "{}"}],
           usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}, cost=0.001,
           duration=0.2, model="m", arm="brief", trial_index=0),
        ev(EventKind.MESSAGE, ts=T0 + 1.3, role="assistant", content="let me add", index=2,
           tool_calls=[{"id": "c1", "name": "calculator", "arguments": "{}"}]),
        ev(EventKind.TOOL_CALL, ts=T0 + 1.4, **call),
        ev(EventKind.TOOL_CALL, ts=T0 + 1.5, **{**call, "status": "invalid_args"}),
        ev(EventKind.HOOK_FIRED, ts=T0 + 2, point="after_iteration", hook="log", iteration=1,
           should_continue=True, skip_current_step=False),
        ev(EventKind.HOOK_ERROR, ts=T0 + 2.1, point="after_iteration", hook="bad", error="boom"),
        ev(EventKind.CONTROL_STATE, ts=T0 + 2.2, state="paused", iteration=1),
        ev(EventKind.APPROVAL_ASKED, ts=T0 + 2.3, approval_id="ap1", tool_name="cli", arguments={},
           risk="confirm", timeout=30),
        ev(EventKind.APPROVAL_DECIDED, ts=T0 + 2.4, approval_id="ap1", tool_name="cli", approved=True,
           decided_by="policy", reason=""),
        ev(EventKind.INTERVENTION_APPLIED, ts=T0 + 2.5, text="try again", source="map", iteration=2),
        # not rows:
        ev(EventKind.TOOL_CALL_EXECUTED, **call),
        ev(EventKind.TOOL_CALL_REQUESTED, tool_name="calculator", arguments={}, risk="safe"),
        ev(EventKind.REQUEST_SERVED, method="GET", path="/health", status=200, latency_ms=1),
        finished(),
    ]
    for event in events:
        writer.emit(event)
    assert writer.flush(HANG)

    trial = Repository(engine).trial("tr_1")
    assert trial is not None
    assert (trial.status, trial.score, trial.answer, trial.total_tokens, trial.iterations) == (
        "completed", 1.0, "42", 120, 3)
    assert (trial.arm, trial.trial_index, trial.episode_id, trial.model) == ("brief", 0, "ep_1", "scripted/samplemath")
    assert trial.started_at.timestamp() == T0 and trial.finished_at.timestamp() == T0 + 10
    assert trial.assisted is False  # a policy approval and a scripted intervention are not a person

    assert count(engine, message_table) == 1
    assert count(engine, tool_call_table) == 2
    assert count(engine, hook_event_table) == 7
    assert count(engine, llm_call_table) == 1
    with engine.connect() as conn:
        seqs = conn.execute(select(tool_call_table.c.seq).order_by(tool_call_table.c.seq)).scalars().all()
        llm = conn.execute(select(llm_call_table)).one()
        kinds = set(conn.execute(select(hook_event_table.c.kind)).scalars())
    assert seqs == [0, 1]
    assert (llm.benchmark_id, llm.arm, llm.task_id, llm.trial_index, llm.total_tokens) == (
        "bm_1", "brief", "add", 0, 15)
    assert llm.request_messages_n == 2  # joined from LLM_REQUEST
    assert kinds == {"iteration_started", "hook_fired", "hook_error", "control_state", "approval_asked",
                     "approval_decided", "intervention_applied"}
    assert writer.stats()["failed"] == 0


def test_events_without_a_trial_row_are_still_written(engine, writer: StoreWriter) -> None:
    writer.emit(ev(EventKind.MESSAGE, "tr_solo", bm=None, role="user", content="hi", index=0))
    writer.emit(ev(EventKind.TOOL_CALL, "tr_solo", bm=None, tool_name="calculator", arguments={}, status="success"))
    assert writer.flush(HANG)
    assert count(engine, message_table, trial_id="tr_solo") == 1
    assert count(engine, tool_call_table, trial_id="tr_solo") == 1
    assert count(engine, trial_table, id="tr_solo") == 0


def test_flush_waits_for_everything_queued_before_it(engine, writer: StoreWriter) -> None:
    writer.emit(started())
    for i in range(5_000):
        writer.emit(ev(EventKind.MESSAGE, ts=T0 + i / 1000, role="user", content=f"m{i}", index=i))
    assert writer.flush(HANG)
    assert count(engine, message_table) == 5_000  # read right after flush, no sleep


def test_user_approval_and_inbox_intervention_mark_the_trial_assisted(engine, writer: StoreWriter) -> None:
    writer.emit(started("tr_a", index=0))
    writer.emit(started("tr_b", index=1))
    writer.emit(started("tr_c", index=2))
    writer.emit(ev(EventKind.APPROVAL_DECIDED, "tr_a", approval_id="x", tool_name="cli", approved=False,
                   decided_by="user", reason="no"))
    writer.emit(ev(EventKind.INTERVENTION_APPLIED, "tr_b", text="hint", source="inbox", iteration=1))
    writer.emit(ev(EventKind.APPROVAL_DECIDED, "tr_c", approval_id="y", tool_name="cli", approved=True,
                   decided_by="timeout", reason=""))
    for trial_id in ("tr_a", "tr_b", "tr_c"):
        writer.emit(finished(trial_id, assisted=False))  # the runner's flag cannot clear it
    assert writer.flush(HANG)
    repo = Repository(engine)
    assert repo.trial("tr_a").assisted is True
    assert repo.trial("tr_b").assisted is True
    assert repo.trial("tr_c").assisted is False


def test_assisted_mark_before_the_trial_row_exists_is_kept(engine, writer: StoreWriter) -> None:
    writer.emit(ev(EventKind.APPROVAL_DECIDED, "tr_late", approval_id="x", tool_name="cli", approved=True,
                   decided_by="remote", reason=""))
    assert writer.flush(HANG)
    writer.emit(started("tr_late"))
    writer.emit(finished("tr_late"))
    assert writer.flush(HANG)
    assert Repository(engine).trial("tr_late").assisted is True


def test_a_full_queue_drops_ordinary_events_but_never_trial_finished(engine) -> None:
    writer = StoreWriter(engine, maxsize=3, put_timeout=0.01)  # not started: nothing drains the queue
    writer.emit(started())
    for i in range(5):
        writer.emit(ev(EventKind.MESSAGE, role="user", content=str(i), index=i))
    assert writer.dropped == 3  # queue holds the start + 2 messages

    emitter = threading.Thread(target=writer.emit, args=(finished(),))
    emitter.start()
    emitter.join(0.3)
    assert emitter.is_alive()  # blocked on the full queue instead of dropping the event
    writer.start()
    emitter.join(5)
    assert not emitter.is_alive()
    assert writer.flush(HANG)
    writer.close()
    assert writer.dropped == 3
    trial = Repository(engine).trial("tr_1")
    assert trial.status == "completed" and trial.score == 1.0
    assert count(engine, message_table) == 2


def test_a_refused_message_costs_only_itself_but_a_refused_trial_row_fails_the_store(engine,
                                                                                   writer: StoreWriter) -> None:
    with engine.begin() as conn:
        conn.execute(text("create trigger no_bad before insert on message when new.content = 'bad' "
                          "begin select raise(abort, 'no bad messages'); end"))
    writer.emit(started("tr_x"))
    writer.emit(ev(EventKind.MESSAGE, "tr_x", role="user", content="bad", index=0))
    writer.emit(ev(EventKind.MESSAGE, "tr_x", role="user", content="kept", index=1))
    assert writer.flush(HANG)
    assert (writer.failed, writer.failure) == (1, None)
    assert count(engine, message_table) == 1
    # a trial row the store refuses (its benchmark is missing) would be lost: the store fails, loudly
    writer.emit(ev(EventKind.TRIAL_STARTED, "tr_y", bm="bm_missing", arm="a", trial_index=0))
    writer.emit(ev(EventKind.MESSAGE, "tr_y", role="user", content="after", index=0))
    assert writer.flush(HANG)
    assert writer.failure is not None and "FOREIGN KEY" in str(writer.failure)
    assert count(engine, message_table) == 1  # nothing more is written once the store failed


def test_restarting_the_same_trial_key_replaces_the_old_row(engine, writer: StoreWriter) -> None:
    writer.emit(started("tr_old"))
    writer.emit(ev(EventKind.MESSAGE, "tr_old", role="user", content="old", index=0))
    writer.emit(started("tr_new"))  # same benchmark, arm, task and index
    assert writer.flush(HANG)
    assert count(engine, trial_table) == 1
    assert count(engine, message_table, trial_id="tr_old") == 0
    assert Repository(engine).trial("tr_new").status == "running"


def test_close_writes_what_is_queued_and_later_events_are_dropped(engine) -> None:
    writer = StoreWriter(engine).start()
    writer.emit(started())
    writer.close()
    writer.close()  # idempotent
    assert not writer.running
    writer.emit(ev(EventKind.MESSAGE, role="user", content="late", index=0))
    assert writer.dropped == 1
    assert count(engine, trial_table) == 1


def test_readers_never_see_database_is_locked_while_the_writer_commits(engine, writer: StoreWriter) -> None:
    errors: list[BaseException] = []
    stop = threading.Event()
    repo = Repository(engine)
    reads = 0

    def reader() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                repo.trials("bm_1", limit=50)
                repo.count_trials("bm_1")
                repo.timeline("tr_0")
                repo.list_benchmarks()
                reads += 1
            except BaseException as exc:
                errors.append(exc)
                return

    def other_writer() -> None:  # the runner writes benchmarks and chain outputs meanwhile
        for i in range(30):
            try:
                repo.record_chain_output("bm_1", "ep_1", f"t{i}", "out", 1.0)
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader) for _ in range(2)] + [threading.Thread(target=other_writer)]
    for thread in threads:
        thread.start()
    started_at = time.perf_counter()
    n = 0
    for t in range(200):
        writer.emit(started(f"tr_{t}", index=t, ts=T0 + t))
        for i in range(50):
            writer.emit(ev(EventKind.MESSAGE, f"tr_{t}", ts=T0 + t + i / 100, role="user", content="x" * 200, index=i))
            n += 1
        writer.emit(finished(f"tr_{t}", ts=T0 + t + 1))
    assert writer.flush(HANG)
    elapsed = time.perf_counter() - started_at
    stop.set()
    for thread in threads:
        thread.join(10)
    assert not errors, errors
    assert reads > 0
    assert count(engine, message_table) == n
    assert count(engine, trial_table, status="completed") == 200
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    print(f"\n{n + 400} events written in {elapsed:.2f}s with 2 readers: {(n + 400) / elapsed:,.0f} events/s")


def test_a_malformed_event_does_not_stop_the_writer(engine, writer: StoreWriter) -> None:
    writer.emit(LLMRequestEvent(trial_id="tr_1", data=None))  # type: ignore[arg-type]
    writer.emit(ToolCallEvent(trial_id="tr_1", data="nonsense"))  # type: ignore[arg-type]
    writer.emit(started())
    assert writer.flush(HANG)
    assert writer.running
    assert writer.failed == 2
    assert count(engine, trial_table) == 1


def test_a_failed_batch_keeps_an_earlier_assisted_mark(engine) -> None:
    writer = StoreWriter(engine, batch_interval=1.0)
    writer.emit(ev(EventKind.APPROVAL_DECIDED, "tr_z", approval_id="x", tool_name="cli", approved=True,
                   decided_by="user", reason=""))
    writer.start()
    assert writer.flush(HANG)  # the mark waits for a trial row
    writer.emit(started("tr_z"))
    writer.emit(ev(EventKind.TRIAL_STARTED, "tr_bad", bm="bm_missing", arm="a", trial_index=0))  # fails the batch
    assert writer.flush(HANG)
    writer.close()
    assert writer.failed == 1
    assert Repository(engine).trial("tr_z").assisted is True


def test_a_second_writer_waits_its_turn_however_long_the_store_writer_commits(tmp_path: Path, monkeypatch) -> None:
    """The CI flake: record_chain_output polled for SQLite's write lock while the store writer
    committed batch after batch, and gave up ("database is locked") when the busy timeout ran out.
    With a 1 ms busy timeout and a write transaction held open until the second writer is seen
    waiting, the second writer must queue, not fail."""
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 1)
    engine = make_engine(tmp_path / "store.db")
    init_db(engine)
    repo = Repository(engine, id_factory=lambda: "bm_1")
    repo.create_benchmark(spec_name="spec", spec_digest="d1")
    holding, release, done = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:  # stands for a long batch commit of the store writer
        with database.write_transaction(engine) as conn:
            conn.execute(text("UPDATE benchmark SET spec_name = 'held'"))
            holding.set()
            release.wait(30)

    def second_writer() -> None:
        try:
            repo.record_chain_output("bm_1", "ep_1", "t0", "out", 1.0)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    second = threading.Thread(target=second_writer)
    second.start()
    for _ in range(100_000):  # until the second writer waits inside `write_transaction` (or has failed)
        frame = sys._current_frames().get(second.ident or 0)
        names = set()
        while frame is not None:
            names.add(frame.f_code.co_name)
            frame = frame.f_back
        if "write_transaction" in names or done.wait(0.001):
            break
    release.set()
    holder.join(10)
    assert done.wait(10)
    second.join(10)
    engine.dispose()
    assert not errors, errors
    assert [c.task_id for c in Repository(engine).chain_outputs("bm_1")] == ["t0"]
