"""What the store-backed screens share: a thin thread worker that asks the query object and posts
the typed answer back to the screen; a failed query is reported to the app as `WorkerFailed`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from textual import on
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from corral_tui.messages import WorkerFailed

T = TypeVar("T")
QUERY_GROUP = "query"


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
