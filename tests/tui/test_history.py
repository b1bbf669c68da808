"""History (benchmarks -> trials -> a trial's timeline) and the compare screen, on a recorded store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import DataTable, RichLog

from corral_tui.screens.compare import CompareScreen
from corral_tui.screens.history import HistoryScreen, TrialsScreen
from corral_tui.screens.timeline import TimelineScreen
from tests.tui.helpers import SIZE, make_app, record_benchmark, static_text, wait_for, wait_ready

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one finished two-arm samplemath benchmark (minimal vs full, add + power, 2 trials)."""
    folder = tmp_path_factory.mktemp("recorded")
    record_benchmark(folder / "corral.db", folder / "work")
    return folder / "corral.db"


@pytest.fixture
def store(recorded: Path, tmp_path: Path) -> Path:
    db = tmp_path / "corral.db"
    shutil.copy(recorded, db)
    return db


def _rows(screen) -> int:
    return screen.query_one("#rows", DataTable).row_count


async def test_history_drills_down_to_a_trial_timeline(tmp_path: Path, store: Path) -> None:
    app = make_app(tmp_path, db_url=str(store))
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and _rows(app.screen) == 1,
                       "the benchmark list")
        history = app.screen
        assert history.page.total == 1 and history.page.items[0].spec_name == "history-demo"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TrialsScreen) and _rows(app.screen) == 8,
                       "the benchmark's 8 trials")
        trials = app.screen
        assert "rows 1–8 of 8" in str(trials.query_one("#page-info").render())

        trials.query_one("#filter-task").value = "power"
        await wait_for(pilot, lambda: trials.page.total == 4 and _rows(trials) == 4, "the power trials only")
        trials.query_one("#filter-arm").value = "minimal"
        await wait_for(pilot, lambda: trials.page.total == 2, "power trials of the minimal arm")
        assert {t.arm for t in trials.page.items} == {"minimal"}

        trials.query_one("#rows").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.query_one(RichLog).lines,
                       "the trial's timeline")
        text = "\n".join(strip.text for strip in app.screen.query_one(RichLog).lines)
        for expected in ("trial started", "message", "llm call", "tool call", "calculator", "trial finished"):
            assert expected in text, f"{expected!r} missing from the timeline"
        await pilot.press("escape", "escape", "escape")
        assert app.screen is app.workbench_screen


async def test_compare_shows_the_arms_of_a_finished_benchmark(tmp_path: Path, store: Path) -> None:
    app = make_app(tmp_path, db_url=str(store))
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and _rows(app.screen) == 1,
                       "the benchmark list")
        await pilot.press("m")
        await wait_for(pilot,
                       lambda: isinstance(app.screen, CompareScreen) and app.screen.query_one("#compare-chart").bars,
                       "the comparison")
        screen = app.screen
        assert "stored metrics" in str(screen.query_one("#compare-title").render())
        arms = static_text(screen.query_one("#compare-arms"))
        assert "±" not in arms  # the intervals are [lo, hi], not symmetric
        for expected in ("minimal", "full", "score [95% CI]", "success rate", "pass@1", "pass^2",
                         "surrender rate", "tokens", "cost", "errored (by fault)", "documentation chars",
                         "documentation tokens"):
            assert expected in arms, f"{expected!r} missing from the arms table"
        assert "t-over-tasks" in static_text(screen.query_one("#compare-methods"))  # each interval's method
        # each arm's documentation size, as the run recorded it (corral-tui docs measures the same)
        line = next(row for row in arms.splitlines() if "documentation chars" in row)
        assert "-" not in line.split("documentation chars")[1], line
        assert [bar.label for bar in screen.query_one("#compare-chart").bars] == ["minimal", "full"]
        tests = static_text(screen.query_one("#compare-tests"))
        assert "full vs minimal" in tests and "McNemar" in tests
        matrix = static_text(screen.query_one("#compare-matrix"))
        assert "add" in matrix and "power" in matrix


async def test_history_pages_through_many_benchmarks(tmp_path: Path) -> None:
    from corral_core.store import Repository, init_db, make_engine

    engine = make_engine(tmp_path / "many.db")
    init_db(engine)
    repository = Repository(engine)
    for index in range(230):
        repository.create_benchmark(spec_name=f"spec-{index:03d}", spec_digest="d", arms=[{"name": "full"}])
    engine.dispose()
    app = make_app(tmp_path, db_url=str(tmp_path / "many.db"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and _rows(app.screen) == 100,
                       "the first page")
        screen = app.screen
        assert "Page 1 of 3" in str(screen.query_one("#page-info").render())
        await pilot.press("n", "n")
        await wait_for(pilot, lambda: screen.page.offset == 200 and _rows(screen) == 30, "the last page")
        assert "rows 201–230 of 230" in str(screen.query_one("#page-info").render())
        await pilot.press("n")  # on the last page: nothing to load (the wait for "b" below would see a jump)
        await pilot.pause()
        assert screen.page.offset == 200
        await pilot.press("b")
        await wait_for(pilot, lambda: screen.page.offset == 100 and _rows(screen) == 100, "the middle page")


def test_stored_and_recomputed_metrics_agree(store: Path) -> None:
    """The compare screen reads a finished benchmark's stored metrics; an unfinished one is computed
    from its trials. Both ways give the same columns."""
    from corral_core.store import Repository, make_engine
    from corral_tui.analysis import compare_view

    repository = Repository(make_engine(store))
    (benchmark,) = repository.list_benchmarks().items
    stored = compare_view(repository, benchmark.id)
    repository.finish_benchmark(benchmark.id, status="interrupted")  # metrics dropped: recompute
    computed = compare_view(repository, benchmark.id)
    assert stored.stored and not computed.stored
    assert [a.name for a in stored.arms] == [a.name for a in computed.arms] == ["minimal", "full"]
    for kept, fresh in zip(stored.arms, computed.arms, strict=True):
        assert (kept.score, kept.success, kept.pass_k, kept.task_scores, kept.tokens) == \
            (fresh.score, fresh.success, fresh.pass_k, fresh.task_scores, fresh.tokens)
    assert stored.comparisons == computed.comparisons
