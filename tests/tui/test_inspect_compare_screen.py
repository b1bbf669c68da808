"""`corral-tui compare --tui A.eval B.eval`: the Compare screen on two logs made by inspect_ai itself
(mockllm, offline): the same paired task-level analysis as the printed `compare`, with the forest plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.test_inspect_compare import BASELINE, BETTER, make_log
from tests.tui.helpers import SIZE, wait_for

pytest.importorskip("inspect_ai")
pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("inspect-logs-tui")
    return make_log(folder, "baseline", BASELINE), make_log(folder, "better", BETTER)


async def test_the_compare_screen_opens_on_two_inspect_logs(logs: tuple[Path, Path]) -> None:
    from corral_core.interop.inspect_in import compare_logs
    from corral_tui.inspect_compare import InspectCompareApp, inspect_compare_view
    from corral_tui.screens.compare import CompareScreen
    from corral_tui.widgets.plots import ForestPlot

    comparison = compare_logs(list(logs))
    printed = comparison.to_dict()
    app = InspectCompareApp(inspect_compare_view(comparison))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.view is not None,
                       "the comparison")
        screen = app.screen
        view = screen.view
        assert [arm.name for arm in view.arms] == ["baseline/mockllm/model", "better/mockllm/model"]
        assert view.comparisons == [(c["arm_a"], c["arm_b"], c["summary"]) for c in printed["comparisons"]]
        tests = str(screen.query_one("#compare-tests").render())
        assert "sign-flip" in tests and "not paired, only in baseline/mockllm/model: 2 sample(s)" in tests
        forest = screen.query_one(ForestPlot)
        # per task (sample id), B - A of the mean over epochs: q3 (right on 1 of 2 epochs -> 2 of 2), q4 (0 -> 1)
        assert dict(forest.rows) == {"q1": 0.0, "q2": 0.0, "q3": 0.5, "q4": 1.0, "q5": 0.0}
        assert forest.pair is not None and forest.pair.ci == tuple(printed["comparisons"][0]["score"]["ci"])
        # one token figure: the header's is the tokens row summed (4 tokens a call, one call a paired sample)
        tokens = sum(arm.tokens for arm in view.arms)
        assert tokens == 4 * 2 * 5 * 2 and view.benchmark.total_tokens == tokens
        assert f"tokens {tokens}" in str(screen.query_one("#compare-title").render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.return_code is not None, "the app to leave")
    assert app.return_code == 0


def test_compare_tui_refuses_a_missing_log_before_any_screen(tmp_path: Path) -> None:
    from tests.core.test_inspect_compare import cli

    run = cli("compare", "--tui", str(tmp_path / "nope.eval"), str(tmp_path / "nope2.eval"))
    assert run.returncode == 2 and "Inspect log not found" in run.stderr and "Traceback" not in run.stderr
