"""One payload type per event kind: every kind has one, the JSON an event makes is the JSON it always made,
and what the engine emits stays inside the declared keys (a new key is declared, so mypy sees its readers)."""

from __future__ import annotations

import ast
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


# --- every emitter builds its payload through its kind's type -------------------------------------------------

ROOT = SAMPLES.parent
ENVELOPE = frozenset({"kind", "trial_id", "task_id", "benchmark_id", "ts", "sink"})  # Event's own fields


def _is_kind(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "EventKind":
        return node.attr
    return None


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _typed_by(value: ast.expr, shape: str, scope: ast.AST, returns: dict[str, str]) -> bool:
    """`value` is built by `shape(...)`, or is a name the enclosing function binds only to one."""
    if isinstance(value, ast.Call):
        return _callee(value) == shape or returns.get(_callee(value)) == shape
    if not isinstance(value, ast.Name):
        return False
    bound: list[bool] = []
    for node in ast.walk(scope):
        if isinstance(node, ast.arg) and node.arg == value.id:
            bound.append(node.annotation is not None and ast.unparse(node.annotation) == shape)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == value.id:
            bound.append(ast.unparse(node.annotation) == shape)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets):
            bound.append(_typed_by(node.value, shape, scope, returns))
    return bool(bound) and all(bound)


def _untyped_emits(tree: ast.Module) -> list[str]:
    returns = {node.name: ast.unparse(node.returns) for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None}
    found: list[str] = []
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for function in functions:
        for call in ast.walk(function):
            if not isinstance(call, ast.Call) or not ("emit" in _callee(call) or _callee(call) == "Event"):
                continue
            kinds = [k for k in map(_is_kind, [*call.args, *(kw.value for kw in call.keywords)]) if k]
            if not kinds:
                continue
            shape = PAYLOADS[EventKind[kinds[0]]].__name__
            untyped = [keyword.arg or "**" for keyword in call.keywords if keyword.arg not in ENVELOPE and (
                keyword.arg not in (None, "data") or not _typed_by(keyword.value, shape, function, returns))]
            if untyped:
                found.append(f"line {call.lineno}: EventKind.{kinds[0]} data ({', '.join(untyped)}) not built by "
                             f"{shape}(...)")
    return found


def test_every_emitter_builds_its_payload_through_its_kinds_type() -> None:
    """So mypy checks every key and value an emitter writes: `**TrialOpenedData(...)`, or a name bound to one."""
    problems = []
    for path in sorted([*ROOT.joinpath("corral_core").rglob("*.py"), *ROOT.joinpath("corral_tui").rglob("*.py")]):
        if "sample-data" in path.parts:
            continue
        problems += [f"{path.relative_to(ROOT)} {p}" for p in _untyped_emits(ast.parse(path.read_text()))]
    assert not problems, "\n".join(problems)


def test_the_emitter_check_finds_an_untyped_payload() -> None:
    source = ("def f(sink, x):\n"
              "    emit_event(sink, EventKind.STORE_FAILED, benchmark_id='b', error=x)\n"
              "    emit_event(sink, EventKind.STORE_FAILED, **{'error': x})\n"
              "    data = {'error': x}\n"
              "    emit_event(sink, EventKind.STORE_FAILED, **data)\n"
              "    emit_event(sink, EventKind.STORE_FAILED, **StoreFailedData(error=x))\n"
              "    typed = StoreFailedData(error=x)\n"
              "    emit_event(sink, EventKind.STORE_FAILED, **typed)\n")
    assert [line.split(":")[0] for line in _untyped_emits(ast.parse(source))] == ["line 2", "line 3", "line 5"]
