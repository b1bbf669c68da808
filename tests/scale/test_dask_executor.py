"""Trials on a real Dask LocalCluster (2 worker processes): every (arm, task, trial) exactly once in the
store, the same metrics as a `local` run, and the workers' events reaching the driver's sinks."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from corral_core.batch import open_store  # noqa: E402
from corral_core.errors import UserError  # noqa: E402
from corral_core.events import EventKind, ListSink  # noqa: E402
from corral_core.runner import BenchmarkRunner  # noqa: E402
from corral_core.spec import spec_from_dict  # noqa: E402

SAMPLEMATH = Path(__file__).resolve().parents[2] / "sample_tasks" / "samplemath.yaml"


def spec() -> Any:
    return spec_from_dict({"name": "dask", "suite": str(SAMPLEMATH), "tasks": ["add", "multiply", "divide"],
                           "arms": {"verbosity": ["minimal", "full"]}, "trials_per_task": 2, "parallel": 2},
                          SAMPLEMATH.parent)


def run(db: Path, **kwargs: Any) -> tuple[Any, ListSink]:
    engine, repository, writer = open_store(str(db))
    sink = ListSink()
    try:
        result = BenchmarkRunner(spec(), repository=repository, writer_sink=writer, sink=sink, **kwargs).run()
    finally:
        writer.close()
        engine.dispose()
    return result, sink


def test_processes_executor_runs_every_trial_once_with_the_same_metrics_as_local(tmp_path: Path) -> None:
    local, _ = run(tmp_path / "local.db")
    remote, sink = run(tmp_path / "dask.db", executor="processes", workers=2)
    with sqlite3.connect(tmp_path / "dask.db") as conn:
        keys = conn.execute("select arm, task_id, trial_index, status from trial").fetchall()
    assert Counter((a, t, i) for a, t, i, _ in keys) == Counter(
        {(arm, task, index): 1 for arm in ("minimal", "full") for task in ("add", "multiply", "divide")
         for index in (0, 1)})
    assert {s for *_, s in keys} == {"completed"}
    assert remote.headline_score == local.headline_score
    for name in ("minimal", "full"):
        assert remote.arms[name].average_score.value == local.arms[name].average_score.value
    kinds = Counter(e.kind for e in sink.events)
    assert kinds[EventKind.TRIAL_FINISHED] == 12 and kinds[EventKind.LLM_RESPONSE] >= 12  # from the workers


def test_unknown_executor_is_a_user_error() -> None:
    with pytest.raises(UserError, match="executor"):
        BenchmarkRunner(spec(), executor="threads")
