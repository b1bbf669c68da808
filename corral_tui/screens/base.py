"""What the store-backed screens share: a thin thread worker that asks the query object and posts
the typed answer back to the screen; a failed query is reported to the app as `WorkerFailed`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from textual import on
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from corral_tui.messages import WorkerFailed

T = TypeVar("T")
QUERY_GROUP = "query"


def breakpoint_classes(screen: Screen[Any], size: Size) -> dict[str, bool]:
    """The width and height classes of `screen`'s breakpoints (its own, else the app's) for `size`: each
    class name, and whether it applies (as Textual sets them on the screen's Resize)."""
    app = screen.app
    horizontal = app.HORIZONTAL_BREAKPOINTS if screen.HORIZONTAL_BREAKPOINTS is None else screen.HORIZONTAL_BREAKPOINTS
    vertical = app.VERTICAL_BREAKPOINTS if screen.VERTICAL_BREAKPOINTS is None else screen.VERTICAL_BREAKPOINTS
    classes = {name: False for _, name in [*(horizontal or ()), *(vertical or ())]}
    for points, dimension in ((horizontal or (), size.width), (vertical or (), size.height)):
        for point, name in sorted(points, reverse=True):
            if dimension >= point:
                classes[name] = True
                break
    return classes


def apply_breakpoints(screen: Screen[Any], size: Size) -> None:
    """Give `screen` its breakpoint classes for `size` now. Textual gives them on the screen's first
    Resize, which comes after the first frame: a screen that has them from the start is styled, laid
    out and painted once, instead of once without them and again with them."""
    screen.update_classes(breakpoint_classes(screen, size))


def laid_out_for(screen: Screen[Any], size: Size) -> bool:
    """Whether `screen` is laid out at `size` with that size's breakpoint classes: a Resize to `size`
    would change nothing."""
    return screen.size == size and all(screen.has_class(name) == on
                                       for name, on in breakpoint_classes(screen, size).items())


class QueryScreen(Screen[None]):
    """A screen that reads the store through the query object it was given."""

    def ask(self, query: Callable[[], T], answer: Callable[[T], Message]) -> None:
        """Run `query()` on a thread; post `answer(result)` to this screen."""
        def work() -> None:
            self.post_message(answer(query()))

        self.run_worker(work, thread=True, exit_on_error=False, group=QUERY_GROUP)

    @on(Worker.StateChanged)
    def _query_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.group == QUERY_GROUP:
            self.post_message(WorkerFailed(event.worker.error))
