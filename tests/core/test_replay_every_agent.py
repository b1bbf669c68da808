"""`replay/<benchmark_id>` reproduces every recorded trial of every agent (issue 9, item 8).

A benchmark runs ReAct, tool-calling, planner and reflection arms over samplemath, impossible and
materials_chain on the scripted model; the same specs then run on `replay/<that benchmark>`. Every trial's
status, score, answer, surrender flag and ordered tool calls (name and arguments) must be identical,
reflection trials after the first included (their reflection prompt is part of the replayed digest).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from corral_core.batch import open_store
from corral_core.runner import BenchmarkRunner
from corral_core.spec import spec_from_dict

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"
AGENTS = [
    {"name": "react", "agent": {"type": "react"}},
    {"name": "tool_calling", "agent": {"type": "tool_calling"}},
    {"name": "planner", "agent": {"type": "planner", "options": {"executor_max_iterations": 4}}},
    {"name": "reflection", "agent": {"type": "reflection"}},
]


def _trials(db: Path, benchmark_id: str) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    """(arm, task, trial index) -> what a reader of the trial sees, tool calls in order."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select id, arm, task_id, trial_index, status, score, answer, surrendered from trial "
                            "where benchmark_id=?", (benchmark_id,)).fetchall()
        result = {}
        for trial_id, arm, task, index, status, score, answer, surrendered in rows:
            calls = conn.execute("select tool_name, arguments_json from tool_call where trial_id=? order by seq",
                                 (trial_id,)).fetchall()
            result[(arm, task, index)] = (status, score, answer, bool(surrendered),
                                          [(name, json.loads(args or "{}")) for name, args in calls])
    return result


@pytest.mark.parametrize("suite", ["samplemath", "impossible", "materials_chain"])
def test_replay_reproduces_every_trial_of_every_agent(suite: str, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    engine, repository, writer = open_store(str(db))
    try:
        base = {"suite": str(SAMPLES / f"{suite}.yaml"), "trials_per_task": 3, "parallel": 2,
                "agent": {"type": "react", "max_iterations": 6},
                "arms": [{**arm, "verbosity": "full"} for arm in AGENTS]}
        recorded = BenchmarkRunner(spec_from_dict({**base, "name": f"rec-{suite}", "model": f"scripted/{suite}"},
                                                  SAMPLES), repository=repository, writer_sink=writer).run()
        replayed = BenchmarkRunner(spec_from_dict({**base, "name": f"rep-{suite}",
                                                   "model": f"replay/{recorded.benchmark_id}"}, SAMPLES),
                                   repository=repository, writer_sink=writer).run()
        writer.flush()
    finally:
        writer.close()
        engine.dispose()
    first, second = _trials(db, recorded.benchmark_id), _trials(db, replayed.benchmark_id)
    assert len(first) == 4 * 3 * len({task for _, task, _ in first}) and len(first) >= 12
    # the recording is worth replaying: each agent made tool calls, and reflection reflected
    assert all(any(calls for (arm, _, _), (*_, calls) in first.items() if arm == a["name"]) for a in AGENTS
               if suite != "impossible")
    differing = {key: (first[key], second.get(key)) for key in first if second.get(key) != first[key]}
    assert not differing, f"{len(differing)} of {len(first)} trials differ on replay: {differing}"
    assert set(second) == set(first)
