"""Terminal plots on the Compare screen (textual-plotext): a forest plot of per-task differences and a
line plot of score by ordered level. They draw what the engine computed; they compute no statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual_plotext import PlotextPlot

if TYPE_CHECKING:
    from corral_core.metrics import TaskDifferences
    from corral_tui.analysis import LevelCurve, PairScore

POINT, MEAN = "cyan", "yellow"
FOREST_MIN_HEIGHT = 8


class ForestPlot(PlotextPlot):
    """One row per task: B - A of the two arms' mean scores on that task (the largest differences when
    there are many); a last row "mean" with the mean over tasks and its 95% interval; a line at zero."""

    DEFAULT_CSS = "ForestPlot { height: 10; }"

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's own name)
        super().__init__(id=id)
        self.rows: list[tuple[str, float]] = []  # what is drawn, top to bottom (read by tests)
        self.pair: PairScore | None = None

    def show(self, pair: PairScore, differences: TaskDifferences) -> None:
        self.pair, self.rows = pair, list(differences.rows)
        plt = self.plt
        plt.clear_figure()
        count = len(self.rows)
        ys = [count - index for index in range(count)]
        labels = [task for task, _ in self.rows]
        plt.vline(0, color="gray")
        if self.rows:
            plt.scatter([value for _, value in self.rows], ys, marker="●", color=POINT)
        if pair.mean_diff is not None:
            if pair.ci is not None:
                plt.plot(list(pair.ci), [0, 0], marker="─", color=MEAN)
            plt.scatter([pair.mean_diff], [0], marker="◆", color=MEAN)
        plt.yticks([*ys, 0], [*labels, "mean"])
        plt.ylim(-0.5, count + 0.5)
        plt.xlim(-1, 1)
        plt.xticks([-1, -0.5, 0, 0.5, 1])
        self.styles.height = max(FOREST_MIN_HEIGHT, count + 5)
        self.refresh(layout=True)


class LevelPlot(PlotextPlot):
    """Score (0..1) by level, left to right from the least to the most documentation, each point with its
    95% interval over tasks."""

    DEFAULT_CSS = "LevelPlot { height: 14; }"

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's own name)
        super().__init__(id=id)
        self.curve: LevelCurve | None = None  # what is drawn (read by tests)

    def show(self, curve: LevelCurve) -> None:
        self.curve = curve
        plt = self.plt
        plt.clear_figure()
        xs = [index + 1 for index, point in enumerate(curve.points) if point.value is not None]
        ys = [point.value for point in curve.points if point.value is not None]
        if xs:
            plt.plot(xs, ys, marker="braille", color=POINT)
            for x, point in zip(range(1, len(curve.points) + 1), curve.points, strict=True):
                if point.value is not None and point.ci is not None:
                    plt.plot([x, x], list(point.ci), marker="│", color=MEAN)
            plt.scatter(xs, ys, marker="●", color=POINT)
        plt.xticks(list(range(1, len(curve.levels) + 1)), curve.levels)
        plt.xlim(0.6, len(curve.levels) + 0.4)
        plt.ylim(0, 1)
        plt.yticks([0, 0.25, 0.5, 0.75, 1])
        self.refresh()
