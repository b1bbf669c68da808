"""A running benchmark's Compare tests the trend across levels exactly when its finish will: the arms are
levels of one thing only if everything else they set is alike, temperature and agent options included —
read from the plan stored at the start (before: from the stored arms' model id and agent type only, so
arms that differ in temperature too got a trend while running and none once finished)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import update

from corral_core.store import Repository, make_engine
from corral_core.store.tables import benchmark_table
from corral_tui.analysis import compare_view
from tests.tui.test_compare_plots import SCORES, levels_store


def planned_arm(level: str, temperature: float) -> dict[str, Any]:
    """An arm as the plan stores it (ArmSpec.to_dict)."""
    return {"name": level, "verbosity": level, "model": {"id": "m", "temperature": temperature},
            "agent": {"type": "react", "max_iterations": 10}}


def running_view(tmp_path: Path, arms: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
    path = levels_store(tmp_path / "store.db")
    engine = make_engine(path)
    try:
        with engine.begin() as conn:
            conn.execute(update(benchmark_table).values(metrics_json=json.dumps({"spec": {"arms": arms}})))
        return compare_view(Repository(engine), "bm_levels")
    finally:
        engine.dispose()


def test_levels_that_also_differ_in_temperature_get_no_trend_while_running(tmp_path: Path) -> None:
    view = running_view(tmp_path, [planned_arm(level, t) for level, t in zip(SCORES, (0.0, 0.5, 1.0), strict=True)])
    assert not view.stored and view.curve is None and view.notes == []  # as ordered_levels(spec) says at the end


def test_levels_alike_in_everything_else_get_the_trend_while_running(tmp_path: Path) -> None:
    view = running_view(tmp_path, [planned_arm(level, 0.0) for level in SCORES])
    assert view.curve is not None and view.curve.levels == ["minimal", "brief", "full"]


def test_the_stored_plan_gives_what_ordered_levels_gives_the_spec() -> None:
    """The plan is the spec's normalized form after a JSON round trip: the same levels as at the end."""
    from types import SimpleNamespace

    from corral_core.runner.results import ordered_levels
    from corral_core.spec import load_spec
    from corral_tui.analysis import _stored_levels

    root = Path(__file__).resolve().parents[2] / "sample_tasks"
    for name, expected in (("quickstart", ["minimal", "brief", "syntactical"]), ("samplemath", [])):
        spec = load_spec(root / f"{name}.bench.yaml")
        plan = json.loads(json.dumps(spec.normalized(), default=str))
        assert _stored_levels(SimpleNamespace(arms=[]), plan) == ordered_levels(spec) == expected
