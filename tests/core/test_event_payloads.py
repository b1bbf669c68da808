"""One event class per kind, its payload type bound to it: every kind has one, the JSON an event makes is the JSON it
always made, what the engine emits stays inside the declared keys, and mypy refuses a payload of another kind
and a key its kind does not have (at emit and at read)."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from corral_core.events import (
    EVENT_TYPES,
    PAYLOADS,
    TELEMETRY_KINDS,
    Event,
    EventBase,
    EventKind,
    ListSink,
    event_from,
)

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


def _declared(kind: EventKind) -> set[str]:
    return set(typing.get_type_hints(PAYLOADS[kind]))


@pytest.mark.parametrize("kind", list(EventKind), ids=lambda kind: kind.value)
def test_each_kind_has_a_payload_type_and_its_json_round_trips(kind: EventKind) -> None:
    assert kind in PAYLOADS, f"{kind} has no payload type in corral_core.events.PAYLOADS"
    data = {key: [f"{key}-value", len(key)] for key in sorted(_declared(kind))}
    event = event_from(kind, trial_id="tr_1", task_id="t1", data=data, benchmark_id="bm_1", ts=12.5)
    wire = json.dumps(event.to_dict())
    assert json.loads(wire) == {"kind": kind.value, "trial_id": "tr_1", "task_id": "t1", "benchmark_id": "bm_1",
                                "ts": 12.5, "data": data}
    back = json.loads(wire)
    again = event_from(back["kind"], back["trial_id"], back["task_id"], back["data"], back["benchmark_id"], back["ts"])
    assert again == event and type(again) is EVENT_TYPES[kind] and again.kind is kind


def test_the_event_union_is_one_class_per_kind() -> None:
    classes = typing.get_args(Event)
    assert sorted(c.kind.value for c in classes) == sorted(k.value for k in EventKind)
    # (by name: a slots dataclass is a new class, and the one it replaced may linger among the subclasses)
    assert {c.__name__ for c in EventBase.__subclasses__()} == {c.__name__ for c in classes}, \
        "an event class left out of `Event`"
    with pytest.raises(ValueError):
        event_from("no_such_kind")


def test_what_a_run_emits_stays_inside_each_kinds_payload_type() -> None:
    from corral_core.runner import BenchmarkRunner
    from corral_core.spec import load_spec

    sink = ListSink()
    for name in ("samplemath", "materials_chain"):
        BenchmarkRunner(load_spec(SAMPLES / f"{name}.bench.yaml"), sink=sink, server_telemetry=True).run()
    seen: set[EventKind] = set()
    for event in sink.events:
        undeclared = set(event.data) - _declared(event.kind)
        assert not undeclared, f"{event.kind.value} carries {sorted(undeclared)}, not in its payload type"
        seen.add(event.kind)
    assert {EventKind.TRIAL_FINISHED, EventKind.LLM_RESPONSE, EventKind.TOOL_CALL, EventKind.MESSAGE} <= seen
    assert TELEMETRY_KINDS - {EventKind.REQUEST_SERVED} <= seen


def test_the_ui_skips_the_servers_telemetry_by_its_one_definition() -> None:
    from corral_tui.services.lifecycle import UI_SKIPPED_KINDS

    assert TELEMETRY_KINDS <= UI_SKIPPED_KINDS and {EventKind.LLM_REQUEST} == UI_SKIPPED_KINDS - TELEMETRY_KINDS


# --- mypy checks the binding at emit and read sites --------------------------------------------------------

CHECKED = """
from corral_core.events import (Event, EventKind, HookData, HookFiredEvent, StoreFailedData, StoreFailedEvent,
                                TrialFinishedData, TrialFinishedEvent)

def emits() -> list[Event]:
    return [StoreFailedEvent(data=StoreFailedData(error="disk full")),
            TrialFinishedEvent(data=StoreFailedData(error="x")),  # line 6: another kind's payload
            HookFiredEvent(data=HookData(hook="h", error="e")),
            HookFiredEvent(data={"hook": "h", "tool_name": "t"})]  # line 8: a key HookData does not have

def reads(event: Event) -> object:
    if event.kind is EventKind.TRIAL_FINISHED:
        return event.data["score"], event.data["tool_name"]  # line 12: a key its kind does not have
    if event.kind is EventKind.STORE_FAILED:
        return event.data["error"]
    return event.data["error"]  # line 15: not narrowed, and most kinds have no `error`
"""


def test_mypy_refuses_a_payload_or_a_key_of_another_kind(tmp_path: Path) -> None:
    from mypy import api

    module = tmp_path / "uses_events.py"
    module.write_text(CHECKED.lstrip("\n"))
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n")  # not the project's: only this module, strict
    out, err, status = api.run(["--strict", "--follow-imports=silent", "--no-incremental", "--no-error-summary",
                                "--config-file", str(config), str(module)])
    lines = sorted({int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line})
    assert status == 1 and lines == [6, 8, 12, 15], out + err
