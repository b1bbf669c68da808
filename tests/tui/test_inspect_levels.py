"""Inspect AI logs that are documentation levels of one task (task_args `verbosity`, as our export writes
them): `compare` runs the trend test across the levels, printed and on the Compare screen's score-by-level
plot (before: pairwise tests only, no trend, no curve). Logs made by inspect_ai itself (mockllm, offline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.metrics.trend import trend_test
from tests.core.test_inspect_compare import cli
from tests.tui.helpers import SIZE, wait_for

pytest.importorskip("inspect_ai")

QUESTIONS = [f"q{i}" for i in range(1, 7)]
RIGHT = {"minimal": {"q1"}, "brief": {"q1", "q2", "q3"}, "full": {"q1", "q2", "q3", "q4", "q5"}}


def level_log(log_dir: Path, level: str) -> Path:
    """One run of the same Inspect task at `level`, its level recorded in the log's task_args."""
    import re

    from inspect_ai import Task, task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    def reply(messages, tools, tool_choice, config) -> ModelOutput:  # type: ignore[no-untyped-def]
        question = re.search(r"q\d+", messages[-1].text).group(0)  # type: ignore[union-attr]
        output = ModelOutput.from_content("mockllm/model", "7" if question in RIGHT[level] else "0")
        output.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)  # no tokenizer download
        return output

    @task
    def arithmetic(verbosity: str = "full") -> Task:
        return Task(dataset=[Sample(id=q, input=f"{q}: what is 3 + 4?", target="7") for q in QUESTIONS],
                    solver=generate(), scorer=match())

    [log] = inspect_eval(arithmetic(verbosity=level), model=get_model("mockllm/model", custom_outputs=reply),
                         log_dir=str(log_dir / level), display="none", max_samples=1)
    assert log.status == "success", log.error
    assert log.eval.task_args == {"verbosity": level}
    return Path(log.location)


@pytest.fixture(scope="module")
def level_logs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("inspect-levels")
    return [level_log(folder, level) for level in ("full", "minimal", "brief")]  # not in level order


def expected_trend():  # type: ignore[no-untyped-def]
    levels = ["minimal", "brief", "full"]
    means = {level: {q: float(q in RIGHT[level]) for q in QUESTIONS} for level in levels}
    return trend_test(levels, means, {level: dict.fromkeys(QUESTIONS, 1) for level in levels})


def test_compare_tests_the_trend_across_logs_that_are_levels(level_logs: list[Path]) -> None:
    from corral_core.interop.inspect_in import compare_logs

    document = compare_logs(level_logs).to_dict()
    expected = expected_trend()
    trend = document["trend"]
    assert trend is not None and trend["levels"] == ["minimal", "brief", "full"]  # ordered by level, not by argument
    assert [point["value"] for point in trend["curve"]] == pytest.approx([1 / 6, 3 / 6, 5 / 6])
    assert trend["summary"] == expected.summary and trend["p_value"] == expected.p_value
    assert compare_logs(level_logs[:2]).to_dict()["trend"] is None  # two levels: pairwise only


def test_printed_compare_names_the_trend(level_logs: list[Path]) -> None:
    run = cli("compare", *map(str, level_logs))
    assert run.returncode == 0, run.stderr
    assert expected_trend().summary.split(";")[0] in run.stdout.replace("\n", " ")


@pytest.mark.anyio
async def test_the_compare_screen_plots_score_by_level_for_inspect_logs(level_logs: list[Path]) -> None:
    from corral_core.interop.inspect_in import compare_logs
    from corral_tui.inspect_compare import InspectCompareApp, inspect_compare_view
    from corral_tui.screens.compare import CompareScreen
    from corral_tui.widgets.plots import LevelPlot

    app = InspectCompareApp(inspect_compare_view(compare_logs(level_logs)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.view is not None,
                       "the comparison")
        plot = app.screen.query_one(LevelPlot)
        assert plot.display and plot.curve is not None
        assert plot.curve.levels == ["minimal", "brief", "full"]
        assert [point.value for point in plot.curve.points] == pytest.approx([1 / 6, 3 / 6, 5 / 6])
        caption = str(app.screen.query_one("#compare-levels-caption").render())
        assert "trend across 3 ordered levels" in caption


def test_compare_refuses_scores_outside_0_1(tmp_path: Path) -> None:
    """Our intervals and the plots' axes are for scores in [0, 1] (they clip there): a log scored on a 0-10
    scale is refused with words, not analysed into clipped intervals (before: exit 0, intervals cut at 1)."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, Target, mean, scorer
    from inspect_ai.solver import TaskState, generate

    @scorer(metrics=[mean()])
    def out_of_ten():  # type: ignore[no-untyped-def]
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=7.0)
        return score

    def reply(messages, tools, tool_choice, config) -> ModelOutput:  # type: ignore[no-untyped-def]
        output = ModelOutput.from_content("mockllm/model", "7")
        output.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)
        return output

    logs = []
    for name in ("a", "b"):
        task = Task(name=name, dataset=[Sample(id=q, input=f"{q}?", target="7") for q in QUESTIONS],
                    solver=generate(), scorer=out_of_ten())
        [log] = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=reply), log_dir=str(tmp_path),
                             display="none", max_samples=1)
        logs.append(str(log.location))
    run = cli("compare", *logs)
    assert run.returncode == 2, run.stdout
    assert "outside [0, 1]" in run.stderr and "Traceback" not in run.stderr
