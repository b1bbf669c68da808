"""A trial field is declared once, in TrialResult (its `field(metadata=role(...))`): what is derived from the
declaration picks a new field up by itself, and what is written by hand is a checklist that names each place a
declared field has not reached yet. Both are shown on a copy of the declaration with one field more."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path
from typing import Any

from corral_core import events
from corral_core.events import EventKind, TrialFinishedData
from corral_core.report import CSV_COLUMNS, csv_columns
from corral_core.store.event_rows import trial_finished_values
from corral_core.store.models import TrialInfo
from corral_core.store.tables import TrialRow
from corral_core.trial_result import (
    NOT_FINISHED,
    RECORD_COLUMNS,
    FieldRole,
    TrialResult,
    exported_columns,
    field_roles,
    record_builder,
    record_columns,
    record_fields,
    role,
)

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = ROOT / "corral_core" / "store" / "migrations" / "versions"
# What TRIAL_FINISHED repeats of TRIAL_STARTED (the writer keeps the started row's) and what the writer OR-s in.
WRITTEN_AT_START = ("arm", "trial_index", "episode_id", "assisted")

# The copy: TrialResult with one field more, declared as a contributor would (the issue's `message_count`).
Extended = dataclasses.make_dataclass(
    "Extended", [("message_count", "int", dataclasses.field(default=0, metadata=role(none_is_default=True)))],
    bases=(TrialResult,), frozen=True)


def _finished_event(data: dict[str, Any]) -> Any:
    """A TRIAL_FINISHED event of `data`, built as corral_core.events builds one of a kind: `event_from` once
    events are one class per kind (#32 item 3, merged beside this test), the `Event` class before."""
    make = getattr(events, "event_from", None) or events.Event
    return make(EventKind.TRIAL_FINISHED, trial_id="tr_1", task_id="t1", data=data)


def migrated_trial_columns() -> set[str]:
    """Every column a migration creates in, or adds to, the `trial` table."""
    found = set()
    for path in MIGRATIONS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("create_table", "add_column") and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == "trial"):
                found |= {column.args[0].value for column in node.args[1:] if isinstance(column, ast.Call)
                          and column.args and isinstance(column.args[0], ast.Constant)}
    return found


def missing_places(record: type) -> list[str]:
    """Each place a declared field of `record` must reach by hand and does not, as "field: place (file)"."""
    hints = typing.get_type_hints(record)
    payload = typing.get_type_hints(TrialFinishedData)
    info = typing.get_type_hints(TrialInfo)
    table = {column.name for column in TrialRow.__table__.columns}  # type: ignore[attr-defined]
    migrated = migrated_trial_columns()
    finished = [name for name, r in field_roles(record).items() if r.finished]
    written = set(trial_finished_values(_finished_event(dict.fromkeys(finished))))
    missing = []
    for name, r in field_roles(record).items():
        if r.finished and payload.get(name) != hints[name]:
            missing.append(f"{name}: TRIAL_FINISHED's payload type (events.py TrialFinishedData)")
        if r.finished and name not in WRITTEN_AT_START and name not in written:
            missing.append(f"{name}: the store's write of TRIAL_FINISHED (store/event_rows.py trial_finished_values)")
        if r.column is None:
            continue
        if r.column != "id" and info.get(r.column) != hints[name]:
            missing.append(f"{name}: the stored trial (store/models.py TrialInfo, last)")
        if r.column not in table:
            missing.append(f"{name}: the trial table (store/tables.py TrialRow)")
        if r.column not in migrated:
            missing.append(f"{name}: a migration adding the column (store/migrations/versions/)")
    return missing


def test_every_declared_field_reaches_every_place() -> None:
    missing = missing_places(TrialResult)
    assert not missing, "a declared TrialResult field has not reached:\n" + "\n".join(missing)
    assert set(exported_columns()) <= set(CSV_COLUMNS)


def test_the_checklist_names_each_place_a_new_field_is_missing_from() -> None:
    assert missing_places(Extended) == [
        "message_count: TRIAL_FINISHED's payload type (events.py TrialFinishedData)",
        "message_count: the store's write of TRIAL_FINISHED (store/event_rows.py trial_finished_values)",
        "message_count: the stored trial (store/models.py TrialInfo, last)",
        "message_count: the trial table (store/tables.py TrialRow)",
        "message_count: a migration adding the column (store/migrations/versions/)",
    ]


def test_a_new_field_reaches_everything_derived_from_the_declaration() -> None:
    assert field_roles(Extended)["message_count"] == FieldRole("message_count", True, True, True, True)
    assert record_columns(Extended) == (*RECORD_COLUMNS, "message_count")  # the store selects it for the metrics
    assert record_fields(Extended)[-1] == "message_count"
    assert "message_count" not in NOT_FINISHED
    assert csv_columns(Extended) == (*CSV_COLUMNS, "message_count")  # the CSV export's new last column
    build = record_builder(Extended)
    stored: dict[str, Any] = {column: None for column in record_columns(Extended)}
    stored.update(id="tr_1", task_id="t1", status="completed", surrendered=0, assisted=1, message_count=7)
    record = build(tuple(stored[c] for c in record_columns(Extended)), solvable=False)
    assert isinstance(record, Extended) and record.message_count == 7  # type: ignore[attr-defined]
    assert (record.trial_id, record.task_id, record.assisted, record.surrendered, record.solvable) == (
        "tr_1", "t1", True, False, False)
    unset = build(tuple({**stored, "message_count": None}[c] for c in record_columns(Extended)))
    assert unset.message_count == 0 and unset.tool_calls == []  # type: ignore[attr-defined]
    assert Extended.from_mapping({"task_id": "t1", "message_count": None}).message_count == 0  # type: ignore[attr-defined]
    assert record.evolve(message_count=8).message_count == 8
    assert Extended.from_values(dataclasses.astuple(record)) == record


def test_the_builder_sets_every_field_from_its_column_or_its_default() -> None:
    """Each measured field from its own column (distinct values, so a swapped position shows), each unstored one
    from what the reader is given, each unread one at its default."""
    columns = record_columns()
    values = {column: f"value of {column}" for column in columns}
    record = record_builder()(tuple(values[c] for c in columns), solvable="given solvable", chain_position=3,
                              tool_calls=[{"tool_name": "calc"}])
    roles = field_roles()
    for f in dataclasses.fields(TrialResult):
        got, r = getattr(record, f.name), roles[f.name]
        if r.column is None:
            continue
        if not r.measured:
            assert got == f.default, f.name
        elif f.type == "bool":
            assert got is True, f.name
        else:
            assert got == f"value of {r.column}", f.name
    assert (record.solvable, record.chain_position, record.tool_calls) == ("given solvable", 3, [{"tool_name": "calc"}])
