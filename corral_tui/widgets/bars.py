"""A horizontal bar chart drawn with unicode blocks, with a CI whisker on each bar."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widgets import Static

EIGHTHS = " ▏▎▍▌▋▊▉█"


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None  # 0..1
    ci: tuple[float, float] | None = None


def bar_line(value: float, width: int) -> str:
    """`value` in [0, 1] as a bar of `width` cells with eighth-cell resolution."""
    value = min(1.0, max(0.0, value))
    eighths = round(value * width * 8)
    full, rest = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[rest] if rest else "")).ljust(width)


def whisker(cells: str, ci: tuple[float, float], width: int) -> Text:
    """Overlay a CI whisker (├──┤) on the bar's cells."""
    low = min(width - 1, max(0, round(min(1.0, max(0.0, ci[0])) * (width - 1))))
    high = min(width - 1, max(0, round(min(1.0, max(0.0, ci[1])) * (width - 1))))
    text = Text()
    for index, cell in enumerate(cells):
        if low <= index <= high and cell == " ":
            mark = "├" if index == low else "┤" if index == high else "─"
            text.append(mark, style="bold yellow")
        elif index in (low, high):
            text.append("├" if index == low else "┤", style="bold yellow on blue")
        else:
            text.append(cell, style="blue")
    return text


def render_bars(bars: list[Bar], width: int = 40) -> Text:
    """One line per bar: label, bar with whisker, value and CI."""
    label_width = max((len(bar.label) for bar in bars), default=4)
    out = Text()
    for bar in bars:
        out.append(bar.label.ljust(label_width) + " │", style="bold")
        if bar.value is None:
            out.append(" " * width + " no score\n", style="dim")
            continue
        cells = bar_line(bar.value, width)
        out.append_text(whisker(cells, bar.ci, width) if bar.ci else Text(cells, style="blue"))
        ci = f" [{bar.ci[0]:.2f}, {bar.ci[1]:.2f}]" if bar.ci else ""
        out.append(f" {bar.value:.2f}{ci}\n")
    scale = " " * label_width + " └" + "┴".join("─" * ((width - 3) // 2) for _ in range(2))
    out.append(scale + "┘\n", style="dim")
    out.append(" " * label_width + "  0" + " " * (width // 2 - 3) + "0.5" + " " * (width - width // 2 - 3) + "1",
               style="dim")
    return out


class BarChart(Static):
    """Score by arm, with 95% CI whiskers."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.bars: list[Bar] = []

    def set_bars(self, bars: list[Bar], width: int = 40) -> None:
        self.bars = bars
        self.update(render_bars(bars, width) if bars else Text("no scores yet", style="dim"))
