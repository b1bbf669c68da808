"""The Compare screen's plots: a forest plot of one pair's per-task differences (p for the next pair) and,
for arms that are ordered verbosity levels, score by level with the trend test — for a running benchmark
too (before, only a finished one had the trend, and nothing was plotted)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import insert

from corral_core.metrics import analyse, task_differences
from corral_core.runner import stored_benchmark_records
from corral_core.store import ArmInfo, Repository, init_db, make_engine
from corral_core.store.tables import trial_table
from corral_tui.analysis import compare_view
from corral_tui.screens.compare import CompareScreen
from corral_tui.widgets.plots import ForestPlot, LevelPlot
from tests.tui.helpers import SIZE, make_app, wait_for

# three documentation levels of one model and agent, 6 tasks, 1 trial each: more documentation helps
SCORES = {"minimal": [0.0, 0.0, 0.2, 0.0, 0.4, 0.1],
          "brief": [0.5, 0.2, 0.4, 0.1, 0.4, 0.3],
          "full": [1.0, 0.6, 0.4, 0.3, 0.4, 0.9]}


def levels_store(path: Path, scores: dict[str, list[float]] = SCORES, status: str = "completed") -> Path:
    engine = make_engine(path)
    init_db(engine)
    try:
        repo = Repository(engine, id_factory=lambda: "bm_levels")
        repo.create_benchmark(spec_name="levels", spec_digest="d", trials_per_task=1,
                              arms=[ArmInfo(name, verbosity=name, model="m", agent="react") for name in scores])
        rows = [{"id": f"tr_{arm}_{t}", "benchmark_id": "bm_levels", "arm": arm, "task_id": f"t{t}",
                 "trial_index": 0, "episode_id": None, "agent": "react", "model": "m", "verbosity": arm,
                 "status": status, "score": score, "answer": "x", "explanation": None, "surrendered": False,
                 "error": None, "fault": None, "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2,
                 "cost": None, "duration": 1.0, "tool_duration": 0.0, "iterations": 1, "assisted": False,
                 "started_at": datetime(2025, 1, 1, tzinfo=UTC), "finished_at": datetime(2025, 1, 1, tzinfo=UTC)}
                for arm, values in scores.items() for t, score in enumerate(values)]
        with engine.begin() as conn:
            conn.execute(insert(trial_table), rows)
    finally:
        engine.dispose()
    return path


def test_task_differences_keep_the_largest_and_count_the_rest() -> None:
    a = {"t1": 0.0, "t2": 0.5, "t3": 0.5, "t4": 1.0, "only_a": 0.3}
    b = {"t1": 1.0, "t2": 0.25, "t3": 0.5, "t4": 0.5, "only_b": 0.9}
    result = task_differences(a, b, shown=2)
    assert result.rows == [("t1", 1.0), ("t4", -0.5)]  # B's best first, then A's
    assert (result.hidden, result.n_tasks) == (2, 4)  # t2 and t3 hidden; unpaired tasks are not differences


def test_a_running_benchmark_of_levels_gets_the_trend_and_curve_a_finished_one_would(tmp_path: Path) -> None:
    path = levels_store(tmp_path / "store.db")
    engine = make_engine(path)
    try:
        repo = Repository(engine)
        view = compare_view(repo, "bm_levels")
        records = list(stored_benchmark_records(repo, repo.get_benchmark("bm_levels")))
    finally:
        engine.dispose()
    batch = analyse(records, list(SCORES), ordered_levels=list(SCORES))
    assert not view.stored and batch.trend is not None
    assert view.curve is not None and view.curve.levels == ["minimal", "brief", "full"]
    assert [p.value for p in view.curve.points] == [e.value for e in batch.trend.curve]
    assert [p.ci for p in view.curve.points] == [tuple(e.ci) for e in batch.trend.curve]
    assert view.notes == [batch.trend.summary] and "trend" in view.notes[0]
    assert [(p.arm_a, p.arm_b, p.mean_diff, p.ci) for p in view.pairs] == \
        [(c.arm_a, c.arm_b, c.score.mean_diff, c.score.ci) for c in batch.comparisons]


def test_arms_that_are_not_levels_of_one_thing_get_no_curve(tmp_path: Path) -> None:
    path = levels_store(tmp_path / "store.db", {"x": [0.1, 0.2], "y": [0.3, 0.4], "z": [0.5, 0.6]})
    engine = make_engine(path)
    try:
        view = compare_view(Repository(engine), "bm_levels")
    finally:
        engine.dispose()
    assert view.curve is None and view.notes == [] and len(view.pairs) == 3


@pytest.mark.anyio
async def test_the_compare_screen_plots_per_task_differences_and_score_by_level(tmp_path: Path) -> None:
    app = make_app(tmp_path, db_url=str(levels_store(tmp_path / "levels.db")))
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(CompareScreen("bm_levels", app.services.queries, app.config.redact))
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.view is not None,
                       "the comparison")
        screen = app.screen
        forest, levels = screen.query_one(ForestPlot), screen.query_one(LevelPlot)
        # pairs in arm order: (minimal, brief) first
        assert forest.pair is not None and (forest.pair.arm_a, forest.pair.arm_b) == ("minimal", "brief")
        expected = task_differences(dict(zip((f"t{i}" for i in range(6)), SCORES["minimal"], strict=True)),
                                    dict(zip((f"t{i}" for i in range(6)), SCORES["brief"], strict=True)))
        assert forest.rows == expected.rows and forest.rows[0][0] == "t0"
        caption = str(screen.query_one("#compare-forest-caption").render())
        assert "brief − minimal" in caption and "Pair 1 of 3" in caption
        assert levels.display and levels.curve is not None and levels.curve.levels == ["minimal", "brief", "full"]
        assert "trend" in str(screen.query_one("#compare-levels-caption").render())
        screen.query_one("#compare-body").focus()
        await pilot.press("p", "p")
        await wait_for(pilot, lambda: forest.pair is not None and forest.pair.arm_a == "brief", "the third pair")
        assert forest.pair.arm_b == "full"
        assert "Pair 3 of 3" in str(screen.query_one("#compare-forest-caption").render())
