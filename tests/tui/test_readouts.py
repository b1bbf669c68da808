"""Every readout tells the stored rows' story: one run mixing approval-assisted, intervention-assisted,
errored, surrendered and plain trials, read on the live line, the trials table, Compare and the batch
table, each checked against what the store recorded."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import DataTable

from corral_core import report
from corral_core.batch import history_main
from corral_tui.screens.approval import ApprovalScreen
from corral_tui.screens.compare import CompareScreen
from corral_tui.screens.dialogs import ErrorScreen, InterventionScreen
from corral_tui.screens.history import HistoryScreen
from corral_tui.widgets.status import RunBar
from corral_tui.widgets.trials_table import TrialsTable
from tests.fakes.fake_openai import FakeOpenAI, FakeReply
from tests.timeouts import HANG
from tests.tui.helpers import (
    DATA,
    SAMPLEMATH,
    SIZE,
    make_app,
    pane_text,
    record_progress_store,
    run_done,
    start_run,
    static_text,
    wait_for,
    wait_ready,
)

pytestmark = pytest.mark.anyio
MIXED = DATA / "mixed.yaml"


def _stored(app):
    lifecycle = app.services.lifecycle
    assert lifecycle.writer.flush(HANG)
    repository = lifecycle.repository
    return repository, repository.trials(app.last_benchmark_id, limit=100).items


def _errored(trial) -> bool:
    return trial.status in ("error", "timeout") or bool(trial.error)


async def test_every_readout_of_a_mixed_run_agrees_with_the_stored_rows(tmp_path: Path) -> None:
    app = make_app(tmp_path, suites=[MIXED])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "mixed", parallel="5", approval="ask", surrender=True, paused=True)
        await wait_for(pilot, lambda: len(app.live.trials) == 5
                       and all(t.control == "paused" for t in app.live.trials.values()), "five trials paused")
        table = app.workbench_screen.query_one(TrialsTable)
        table.focus()
        nudge = next(t for t in app.live.trials.values() if t.task_id == "nudge")
        table.move_cursor(row=table.get_row_index(nudge.trial_id))
        await wait_for(pilot, lambda: app.workbench_screen.selected_trial() == nudge.trial_id, "nudge selected")
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, InterventionScreen), "the intervention dialog")
        await pilot.press(*"Count on", "ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, InterventionScreen), "the dialog to close")
        await pilot.press("C")  # every trial goes on; mark asks for its confirm-level tool
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog")
        await pilot.press("ctrl+y")  # approve (the dialog's reason field has the focus)
        await wait_for(pilot, lambda: run_done(app), "the run to finish")

        repository, rows = _stored(app)
        by_task = {row.task_id: row for row in rows}
        assert {task for task, row in by_task.items() if row.assisted} == {"mark", "nudge"}
        assert {task for task, row in by_task.items() if _errored(row)} == {"broken"}
        assert by_task["broken"].fault == "provider"
        assert {task for task, row in by_task.items() if row.surrendered} == {"give_up"}
        unassisted = [row for row in rows if not row.assisted]  # attempted, untouched by a person
        errored = [row for row in unassisted if _errored(row)]
        # an error outside the agent is missing, not a failure: the scores are over the rest
        scored = [row for row in unassisted if not (_errored(row) and row.fault != "agent")]

        # the live line: the analysed trials are the unassisted ones, as in the store
        (live,) = app.live.arm_scores()
        assert (live.n_trials, live.n_tasks) == (len(scored), len(scored))
        bar = str(app.workbench_screen.query_one(RunBar).render())
        assert f"n={len(scored)}" in bar and f"{len(errored)} errored" in bar, bar

        # the trials table: the assisted mark and the status of every row
        said = table._said
        for row in rows:
            status = said[row.id]["status"]
            assert status.endswith("*") == row.assisted, (row.task_id, status)
            assert status.rstrip("*") in (row.status, {"surrendered": "surrender"}.get(row.status)), status

        # Compare: the same counts
        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.view is not None,
                       "the compare screen")
        (column,) = app.screen.view.arms
        assert (column.n_trials, column.n_assisted, column.n_errored) == (len(scored), 2, len(errored))
        assert column.errors_by_fault == {"provider": 1}
        arms = static_text(app.screen.query_one("#compare-arms"))
        assert "errored (by fault)" in arms and "1 (provider 1)" in arms, arms

    # the batch table of the same stored results
    benchmark = repository.get_benchmark(app.last_benchmark_id)
    out = io.StringIO()
    report.print_results(benchmark.metrics, Console(file=out, width=200, no_color=True))
    text = out.getvalue()
    assert "1 (provider 1)" in text and "2: score" in text, text
    (arm,) = benchmark.metrics["arms"].values()
    assert arm["n_trials"] == len(scored) and arm["assisted"]["n_assisted"] == 2


async def test_history_counts_done_of_planned_for_running_and_interrupted_runs(tmp_path: Path) -> None:
    """The plan is kept when a run starts, so a running or interrupted run says "5/8", not "5/5+"; its
    errored trials and its tokens and cost are on its row, in the TUI and in `corral-tui history`."""
    db = tmp_path / "corral.db"
    interrupted, running = record_progress_store(db)
    app = make_app(tmp_path, suites=[SAMPLEMATH], db_url=str(db))
    async with app.run_test(size=(220, 60)) as pilot:  # History shows tokens · cost from 180 columns
        await wait_ready(pilot)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.page is not None
                       and app.screen.query_one("#rows", DataTable).row_count == 2, "the two benchmarks")
        table = app.screen.query_one("#rows", DataTable)
        cells = {row.value: [str(cell) for cell in table.get_row(row)] for row in table.rows}
        assert "5/8, 1 errored" in cells[interrupted] and "4.6k · $0.000548" in cells[interrupted]
        assert "3/8, 1 errored" in cells[running] and "2.3k · $0.000274" in cells[running]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert history_main(["--db", str(db)]) == 0
    listed = out.getvalue()
    assert "5/8, 1 errored" in listed and "3/8, 1 errored" in listed and "$0.000548" in listed, listed


@pytest.mark.parametrize(("model", "said"), [
    ("openai/gpt-4o-mnii", "did you mean openai/gpt-4o-mini"),
    ("openai/gpt-4o-mini", "needs its provider's API key in OPENAI_API_KEY"),
])
async def test_the_form_refuses_a_run_that_could_only_error_before_any_trial(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, said: str) -> None:
    if "mnii" in model:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    else:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app = make_app(tmp_path, suites=[SAMPLEMATH])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", tasks="add", model=model)
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen), "the refusal")
        assert said in app.screen.message
        assert said in str(app.workbench_screen.query_one("#status").render())  # the form's error, in words
        assert app.run_state == "failed" and not app.live.trials
        assert app.services.lifecycle.repository.count_benchmarks() == 0  # nothing stored


async def test_the_form_passes_the_key_variable_to_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEAM_KEY", raising=False)
    app = make_app(tmp_path, suites=[SAMPLEMATH])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "samplemath", tasks="add", model="openai/gpt-4o-mini", api_key_env="TEAM_KEY")
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen), "the refusal")
        assert "TEAM_KEY" in app.screen.message and "OPENAI_API_KEY" not in app.screen.message


async def test_an_all_errored_run_shows_its_errors_on_compare_and_history(tmp_path: Path) -> None:
    """Every trial errored (the provider's fault): Compare has an errored row by fault and flags the score
    (over 0 trials), History's row says so; nothing reads as a plain 0% run."""
    app = make_app(tmp_path, suites=[MIXED])
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await start_run(pilot, "mixed", tasks="broken", trials="3", parallel="3")
        await wait_for(pilot, lambda: run_done(app), "the run to finish")
        _repository, rows = _stored(app)
        assert [row.fault for row in rows] == ["provider"] * 3
        status = str(app.workbench_screen.query_one("#status").render())
        assert "3 errored" in status, status
        assert "⚠ 3 errored (provider 3)" in str(app.workbench_screen.query_one(RunBar).render())

        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.view is not None,
                       "the compare screen")
        arms = static_text(app.screen.query_one("#compare-arms"))
        assert "3 (provider 3)" in arms and "⚠ 3 errored" in arms, arms
        assert "3/3, 3 errored" in str(app.screen.query_one("#compare-title").render())
        await pilot.press("escape", "h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen)
                       and app.screen.query_one("#rows", DataTable).row_count == 1, "the history")
        table = app.screen.query_one("#rows", DataTable)
        (row,) = [[str(cell) for cell in table.get_row(key)] for key in table.rows]
        assert "3/3, 3 errored" in row, row


async def test_a_finished_trials_panes_show_its_final_state_and_the_model_that_ran(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-for-tests")
    replies = [FakeReply.tool_call("calculator", {"operation": "+", "a": 17, "b": 25}),
               FakeReply(content="Final Answer: 42")]
    with FakeOpenAI(replies) as fake:
        app = make_app(tmp_path, suites=[SAMPLEMATH])
        async with app.run_test(size=SIZE) as pilot:
            await wait_ready(pilot)
            await start_run(pilot, "samplemath", tasks="add", agent="tool_calling", model="openai/fake-model",
                            api_base=fake.base_url)
            await wait_for(pilot, lambda: run_done(app), "the run to finish")
            app.refresh_info()
            assert "openai/fake-model" in str(app.workbench_screen.query_one("#info").render())
            hooks = await pane_text(pilot, "pane-hooks")
            assert hooks.strip().splitlines()[-1].startswith("trial completed after 2 iterations"), hooks
            iterations = await pane_text(pilot, "pane-iterations")
            assert "answer '42'" in iterations.strip().splitlines()[-1], iterations
            app.workbench_screen._describe_selected()  # what the status line says of the selected trial
            status = str(app.workbench_screen.query_one("#status").render())
            assert "add trial 1 arm full model openai/fake-model — completed after 2 iterations" in status, status
            table = app.workbench_screen.query_one(TrialsTable)
            (row,) = table._said.values()
            assert (row["number"], row["iteration"]) == ("1", "2")
