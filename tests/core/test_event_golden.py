"""The JSON the engine's events make, byte for byte: what the store writes from them and what a Dask worker
sends of them (`json.dumps(event.to_dict(), default=str)`), for scripted runs of every agent, a chain, hooks,
a breakpoint and approvals. Only times, durations, ids and the run's temporary directory are normalised;
key order, separators, numbers and text are compared as written.

A change to an event's payload or to how the store writes it fails here; when it is meant, regenerate the
golden file with `UPDATE_EVENT_GOLDEN=1 ./dev test tests/core/test_event_golden.py` and read its diff.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral_core.batch import open_store
from corral_core.events import Event, ListSink
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"
GOLDEN = Path(__file__).resolve().parent / "data" / "event_golden.jsonl"

SPECS: list[dict[str, Any]] = [
    {"name": "golden-agents", "suite": str(SAMPLES / "samplemath.yaml"), "model": "scripted/samplemath",
     "tasks": ["add", "power"], "agent": {"type": "react", "max_iterations": 6},
     "arms": [{"name": "react", "verbosity": "full"},
              {"name": "tool_calling", "verbosity": "brief", "agent": {"type": "tool_calling"}},
              {"name": "planner", "verbosity": "full",
               "agent": {"type": "planner", "options": {"executor_max_iterations": 4}}},
              {"name": "reflection", "verbosity": "full", "agent": {"type": "reflection"}}]},
    {"name": "golden-chain", "suite": str(SAMPLES / "materials_chain.yaml"), "model": "scripted/materials_chain",
     "agent": {"type": "react", "max_iterations": 6}, "arms": {"verbosity": ["workflow"]}},
    {"name": "golden-hooks", "suite": str(SAMPLES / "shell_ops.yaml"), "model": "scripted/shell_ops",
     "agent": {"type": "react", "max_iterations": 4}, "arms": {"verbosity": ["brief"]}, "surrender": True,
     "approval": "reject",
     "hooks": {"interventions": {"sh_count": "Count the lines with wc."},
               "heartbeat": {"every": 2, "prompt": "Check your progress."},
               "breakpoints": ["tool:ls", "tokens>10"]}},
]
COMMON = {"trials_per_task": 1, "parallel": 1, "timeouts": {"trial": 120, "tool": 30, "grader": 30}}

# columns that hold a time or a measured duration (normalised), per stored table, and the order rows are read in
TABLES = {
    "trial": "arm, task_id, trial_index",
    "message": "trial_id, id",
    "tool_call": "trial_id, seq",
    "hook_event": "trial_id, id",
    "llm_call": "trial_id, id",
}
TIMES = frozenset({"ts", "started_at", "finished_at", "created_at", "heartbeat_at"})
MEASURED = frozenset({"duration", "tool_duration", "latency_ms", "llm_retry_wait", "rate_limit_wait", "retry_wait",
                      "timestamp", "elapsed", "waited"})
_MEASURED_IN_JSON = re.compile(r'"(' + "|".join(sorted(MEASURED | TIMES)) + r')": (-?[0-9.e+-]+|"[^"]*")')
_SPEC_DIGEST = re.compile(r'"spec_digest": "[0-9a-f]{64}"')
_IDS = re.compile(r"\b(?:tr|bm|ep|ap|ws|run|fk)_[0-9A-Za-z]+\b")


def _runs(tmp_path: Path) -> tuple[Path, list[Event]]:
    db = tmp_path / "golden.db"
    sink = ListSink()
    engine, repository, writer = open_store(str(db))
    try:
        for spec in SPECS:
            BenchmarkRunner(spec_from_dict({**COMMON, **spec}, tmp_path), repository=repository,
                            writer_sink=writer, sink=sink, auto_resume=False).run()
    finally:
        writer.close()
        engine.dispose()
    return db, sink.events


def _stored(db: Path) -> Iterator[str]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        trial_rank = {row["id"]: (row["arm"], row["task_id"], row["trial_index"]) for row in conn.execute(
            "select t.id, b.spec_name || '/' || t.arm as arm, t.task_id, t.trial_index from trial t "
            "join benchmark b on b.id = t.benchmark_id")}
        for table, order in TABLES.items():
            rows = [dict(row) for row in conn.execute(f"select * from {table} order by {order}")]
            key = "id" if table == "trial" else "trial_id"
            rows.sort(key=lambda row: (trial_rank.get(row[key], ("", "", 0)), row.get("seq") or 0,
                                       row.get("index") or 0, 0 if table == "trial" else row["id"]))
            for row in rows:
                if table != "trial":
                    del row["id"]  # an autoincrement key: the order above says the same
                yield json.dumps({"table": table, **{name: "<time>" if name in TIMES and value is not None
                                                     else "<measured>" if name in MEASURED and value is not None
                                                     else value for name, value in row.items()}})


def _sent(events: list[Event]) -> Iterator[str]:
    """What a Dask worker sends of each event (runner/dask_worker.py), grouped per trial in emission order."""
    order: dict[str | None, int] = {}
    for event in events:
        order.setdefault(event.trial_id, len(order))
    for event in sorted(events, key=lambda e: order[e.trial_id]):  # stable: each trial's own order is kept
        yield "wire " + json.dumps(event.to_dict(), default=str)


def normalise(lines: Iterator[str], tmp_path: Path) -> list[str]:
    ids: dict[str, str] = {}

    def stable(match: re.Match[str]) -> str:
        return ids.setdefault(match.group(0), f"{match.group(0).split('_')[0]}_<{len(ids) + 1}>")

    out = []
    for line in lines:
        line = line.replace(str(tmp_path), "<tmp>").replace(str(SAMPLES.parent), "<checkout>")
        line = _SPEC_DIGEST.sub('"spec_digest": "<digest of the spec and its absolute paths>"', line)
        line = _MEASURED_IN_JSON.sub(lambda m: f'"{m.group(1)}": "<measured>"', line)
        line = re.sub(r'\\"(' + "|".join(sorted(MEASURED | TIMES)) + r')\\": (-?[0-9.e+-]+)',
                      lambda m: f'\\"{m.group(1)}\\": \\"<measured>\\"', line)
        out.append(_IDS.sub(stable, line))
    return out


@pytest.fixture(scope="module")
def golden_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    tmp_path = tmp_path_factory.mktemp("golden")
    db, events = _runs(tmp_path)
    return normalise(iter([*_stored(db), *_sent(events)]), tmp_path)


def test_the_events_json_is_what_it_was(golden_lines: list[str]) -> None:
    if os.environ.get("UPDATE_EVENT_GOLDEN"):
        GOLDEN.write_text("\n".join(golden_lines) + "\n")
    expected = GOLDEN.read_text().splitlines()
    first = next((i for i, (a, b) in enumerate(zip(expected, golden_lines, strict=False)) if a != b), None)
    assert first is None and len(expected) == len(golden_lines), (
        f"line {first}: expected\n{expected[first] if first is not None else ''}\n"
        f"got\n{golden_lines[first] if first is not None else ''}\n"
        f"({len(expected)} golden lines, {len(golden_lines)} now)")


def test_the_golden_runs_cover_every_stored_kind_of_event(golden_lines: list[str]) -> None:
    stored_kinds = {json.loads(line)["kind"] for line in golden_lines if line.startswith('{"table": "hook_event"')}
    sent_kinds = {json.loads(line[5:])["kind"] for line in golden_lines if line.startswith("wire ")}
    assert {"hook_fired", "intervention_applied", "breakpoint_hit", "iteration_started"} <= stored_kinds
    assert {"benchmark_started", "benchmark_finished", "trial_started", "trial_finished", "llm_request",
            "llm_response", "message", "tool_call", "agent_finished"} <= sent_kinds
    assert any('"approval": "rejected"' in line for line in golden_lines if line.startswith('{"table": "tool_call"'))
