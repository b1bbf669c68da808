"""One payload type per event kind: every kind has one, the JSON an event makes is the JSON it always made,
and what the engine emits stays inside the declared keys (a new key is declared, so mypy sees its readers)."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from corral_core.events import PAYLOADS, TELEMETRY_KINDS, Event, EventKind, ListSink, payload

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


def _declared(kind: EventKind) -> set[str]:
    return set(typing.get_type_hints(PAYLOADS[kind]))


@pytest.mark.parametrize("kind", list(EventKind), ids=lambda kind: kind.value)
def test_each_kind_has_a_payload_type_and_its_json_round_trips(kind: EventKind) -> None:
    assert kind in PAYLOADS, f"{kind} has no payload type in corral_core.events.PAYLOADS"
    data = {key: [f"{key}-value", len(key)] for key in sorted(_declared(kind))}
    event = Event(kind, trial_id="tr_1", task_id="t1", data=data, benchmark_id="bm_1", ts=12.5)
    wire = json.dumps(event.to_dict())
    assert json.loads(wire) == {"kind": kind.value, "trial_id": "tr_1", "task_id": "t1", "benchmark_id": "bm_1",
                                "ts": 12.5, "data": data}
    back = json.loads(wire)
    again = Event(EventKind(back["kind"]), back["trial_id"], back["task_id"], back["data"], back["benchmark_id"],
                  back["ts"])
    assert again == event
    assert payload(again, PAYLOADS[kind]) is again.data  # typed access is the dict itself: no copy


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
