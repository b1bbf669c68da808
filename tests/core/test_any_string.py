"""Any string survives: lone UTF-16 surrogates become U+FFFD (corral_core.safetext), in the store too.

SQLite cannot encode a lone surrogate, so before the fix the writer's transaction failed and the
trial (its answer, its tool calls, its messages) was lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from corral_core.events import Event, EventKind, event_from
from corral_core.safetext import REPLACEMENT, clean, clean_text
from corral_core.store import Repository, StoreWriter, init_db, make_engine
from corral_core.store.tables import message_table, tool_call_table
from tests.timeouts import HANG

LONE = "\ud800"
T0 = 1_700_000_000.0


def test_lone_surrogates_become_the_replacement_character_and_pairs_are_joined() -> None:
    assert clean_text(f"a{LONE}b") == f"a{REPLACEMENT}b"
    assert clean_text("\udc00\ud800") == REPLACEMENT * 2
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a pair is the character it encodes
    plain = "caf\u00e9 \U0001f600"
    assert clean_text(plain) is plain
    value = {"k": [f"x{LONE}", ("y",)], f"key{LONE}": 1, "n": 2.5}
    assert clean(value) == {"k": [f"x{REPLACEMENT}", ("y",)], f"key{REPLACEMENT}": 1, "n": 2.5}
    untouched = {"k": ["x", {"y": "z"}], "n": None}
    assert clean(untouched) is untouched
    for text in clean(value):
        text.encode("utf-8")


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[tuple[Repository, StoreWriter]]:
    engine = make_engine(tmp_path / "store.db")
    init_db(engine)
    repo = Repository(engine, id_factory=lambda: "bm_1")
    repo.create_benchmark(spec_name="spec", spec_digest="d1")
    writer = StoreWriter(engine).start()
    yield repo, writer
    writer.close()
    engine.dispose()


def ev(kind: EventKind, ts: float, **data: object) -> Event:
    return event_from(kind, trial_id="tr_1", task_id=f"t{LONE}", data=data, benchmark_id="bm_1", ts=ts)


def test_the_store_keeps_a_trial_whose_texts_hold_lone_surrogates(store) -> None:
    repo, writer = store
    events = [
        ev(EventKind.TRIAL_STARTED, T0, arm=f"arm{LONE}", trial_index=0, agent="react", model="m", verbosity="full"),
        ev(EventKind.MESSAGE, T0 + 1, role="assistant", content=f"thinking {LONE}", index=0,
           tool_calls=[{"id": "c1", "name": f"echo{LONE}", "arguments": f'{{"text": "{LONE}"}}'}]),
        ev(EventKind.TOOL_CALL, T0 + 2, tool_name=f"echo{LONE}", arguments={f"text{LONE}": LONE},
           result=f"out {LONE}", status="success", error_message=None, duration=0.01, risk="safe"),
        ev(EventKind.TRIAL_FINISHED, T0 + 3, status="completed", score=1.0, answer=f"42 {LONE}",
           surrendered=False, error=None, explanation=f"got {LONE}", iterations=1, prompt_tokens=1,
           completion_tokens=1, total_tokens=2, cost=None, duration=3.0, tool_duration=0.01, assisted=False),
    ]
    for event in events:
        writer.emit(event)
    assert writer.flush(HANG)

    assert writer.stats()["failed"] == 0
    trial = repo.trial("tr_1")
    assert trial is not None
    assert (trial.status, trial.answer, trial.task_id, trial.arm) == (
        "completed", f"42 {REPLACEMENT}", f"t{REPLACEMENT}", f"arm{REPLACEMENT}")
    with repo.engine.connect() as conn:
        call = conn.execute(select(tool_call_table)).one()
        message = conn.execute(select(message_table)).one()
    assert call.tool_name == f"echo{REPLACEMENT}" and call.result == f"out {REPLACEMENT}"
    assert json.loads(call.arguments_json) == {f"text{REPLACEMENT}": REPLACEMENT}
    assert message.content == f"thinking {REPLACEMENT}"
    assert events[-1].data["answer"] == f"42 {LONE}"  # other sinks still see the event as emitted
