"""One-line bars: the info bar (server, requests, model, progress) and the run status line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.visual import VisualType
from textual.widgets import Footer, Static

from corral_core.domain import WorkbenchState
from corral_tui.live import ArmScore
from corral_tui.widgets.textual_adapter import FooterKey  # what Footer composes: no public name


@dataclass
class Info:
    server: str = "starting…"
    requests: str = "0"
    model: str = "-"
    done: int = 0
    total: int = 0
    run_state: str = WorkbenchState.IDLE
    approvals: int = 0
    executor: str = "local"  # where trials run: shown unless local (e.g. "processes (2 workers)")


NARROW = 100  # below this many columns the info bar and the footer take their short forms


class FittingFooter(Footer):
    """The key footer, compact (less space between keys) on a terminal narrower than NARROW columns, so
    the keys that matter still fit at 80.

    Textual's footer rebuilds its keys whenever the focus moves (eight times before "Ready.", 25 widgets
    each): this one rebuilds only when the keys it would show have changed. Each key is also styled
    once, not three times: Textual creates it compact, restyles it compact as it mounts, and again not
    compact when the footer's `compact` reaches it; here it starts as the footer is."""

    _drawn_keys: tuple[object, ...] | None = None

    def on_resize(self) -> None:
        self.compact = self.app.size.width < NARROW

    def _shown_keys(self) -> tuple[object, ...]:
        """Everything `Footer.compose` draws from: the shown bindings with their state and key display."""
        keys = tuple((binding, enabled, tooltip, self.app.get_key_display(binding))
                     for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
                     if binding.show or key == self.app.COMMAND_PALETTE_BINDING)
        return (self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE, keys)

    def compose(self) -> ComposeResult:
        drawn = False
        for widget in super().compose():  # one by one: a key group's `with` block must see its own keys
            drawn = True
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):  # bound to `compact`
                widget.set_reactive(FooterKey.compact, self.compact)
                widget.set_class(self.compact, "-compact", update=False)
            yield widget
        # an empty compose (Textual's footer draws nothing until its bindings are ready) is never kept
        self._drawn_keys = self._shown_keys() if drawn else None

    async def recompose(self) -> None:
        if self._drawn_keys is not None and self.is_attached and self._shown_keys() == self._drawn_keys:
            return
        await super().recompose()


class Bar(Static):
    """A bar of fixed height (app.tcss) whose text is replaced often (every half second, every second,
    every event batch): an unchanged text is not redrawn, and a new one is drawn without a layout pass
    (the whole screen's), since it cannot change the bar's size."""

    _shown: tuple[object, ...] | None = None
    _when_drawn: tuple[Callable[[], None], ...] = ()

    def show_text(self, text: Text, when_drawn: Callable[[], None] | None = None) -> None:
        """Show `text`; `when_drawn` runs once it is on screen (or at once, if it already is)."""
        key = (text.markup, str(text.style), text.overflow, text.no_wrap, text.justify)
        if when_drawn is not None:
            if key == self._shown and not self._when_drawn:  # on screen already: nothing waits for a frame
                self.app.call_later(when_drawn)
            else:  # runs with what already waits, once the next frame draws the bar (this text or a newer one)
                self._when_drawn = (*self._when_drawn, when_drawn)
        if key == self._shown:
            return
        self._shown = key
        height = self.styles.height
        self.update(text, layout=height is None or not height.is_cells)

    def render(self) -> VisualType:
        """The compositor renders a changed bar while it paints the frame: what waits for the text to be
        drawn is queued behind that frame's output."""
        for waiting in self._when_drawn:
            self.app.call_later(waiting)
        self._when_drawn = ()
        return super().render()


class InfoBar(Bar):
    """server URL · requests served · model · where trials run (unless local) · progress · run state ·
    pending approvals. Below NARROW columns: shorter labels and the model's id cut to what is left."""

    def show(self, info: Info) -> None:
        width = self.app.size.width
        if width < NARROW:
            self._show_short(info, width)
            return
        text = Text.assemble(("server ", "dim"), (info.server, "bold"), ("  requests ", "dim"), info.requests,
                             ("  model ", "dim"), (info.model, "bold"))
        if info.executor != "local":
            text.append("  trials on ", style="dim")
            text.append(info.executor, style="bold")
        text.append("  progress ", style="dim")
        text.append(f"{info.done}/{info.total}")
        text.append("  run ", style="dim")
        text.append(info.run_state, style="bold cyan")
        if info.approvals:
            text.append(f"  approvals pending: {info.approvals}", style="bold black on yellow")
        self.show_text(text)


    def _show_short(self, info: Info, width: int) -> None:
        server = info.server.removeprefix("http://").removeprefix("https://")
        tail = Text.assemble(("  ", ""), (f"{info.done}/{info.total}", ""), (" ", ""), (info.run_state, "bold cyan"))
        if info.executor != "local":
            tail.append(f" on {info.executor}", style="bold")
        if info.approvals:
            tail.append(f"  approvals: {info.approvals}", style="bold black on yellow")
        head = Text.assemble((server, "bold"), ("  req ", "dim"), info.requests, ("  ", ""))
        room = max(width - head.cell_len - tail.cell_len - 2, 6)
        model = info.model if len(info.model) <= room else "…" + info.model[-(room - 1):]
        self.show_text(Text.assemble(head, (model, "bold"), tail))


class StatusLine(Bar):
    """What the selected trial is doing, or the last thing that happened."""

    def say(self, message: str, style: str = "", when_drawn: Callable[[], None] | None = None) -> None:
        self.show_text(Text(message, style=style), when_drawn)


class RunBar(Bar):
    """The run at a glance: elapsed time, ETA, the run's tokens and cost so far, and each arm's mean
    score so far with its 95% CI and how that interval was computed (mean over tasks of the task means,
    unassisted trials: what the final metrics report), over how many tasks, and its errored trials."""

    def show(self, elapsed: str, eta: str, scores: list[ArmScore], tokens: str = "0", cost: str = "-") -> None:
        text = Text.assemble(("elapsed (start-up incl.) ", "dim"), (elapsed, "bold"), ("  ETA ", "dim"), (eta, "bold"),
                             ("  tokens ", "dim"), tokens, ("  cost ", "dim"), cost)
        methods = {score.method for score in scores if score.ci is not None}
        if scores:
            shared = f", {next(iter(methods))}" if len(methods) == 1 else ""
            text.append(f"\nscore by arm (95% CI{shared}): ", style="dim")
        for position, score in enumerate(scores):
            if position:
                text.append(" · ", style="dim")
            text.append(f"{score.arm} ", style="bold")
            text.append("-" if score.value is None else f"{score.value:.2f}")
            if score.ci is not None:
                text.append(f" [{score.ci[0]:.2f}, {score.ci[1]:.2f}]", style="cyan")
                if len(methods) > 1:
                    text.append(f" {score.method}", style="dim")
            text.append(f" n={score.n_tasks} task{'s' if score.n_tasks != 1 else ''}", style="dim")
            if score.n_errored:
                faults = ", ".join(f"{fault} {n}" for fault, n in score.errors_by_fault.items())
                text.append(f" ⚠ {score.n_errored} errored ({faults})", style="bold red")
        text.overflow = "ellipsis"  # two lines: the run, then the arms (cut at the width, never wrapped)
        text.no_wrap = True
        self.show_text(text)
