"""Request accounting as a pure ASGI middleware.

It sits on every request, so it is a plain ASGI callable (no `BaseHTTPMiddleware`, which costs a
task and a memory stream per request) and does as little as possible.
"""

from __future__ import annotations

import time

from starlette.datastructures import State
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from corral_core.events import (
    NULL_SINK,
    EventSink,
    RequestServedData,
    RequestServedEvent,
)

__all__ = ["RequestStatsMiddleware"]


class RequestStatsMiddleware:
    """Counts requests in `state.requests_served` and emits REQUEST_SERVED with the latency."""

    def __init__(self, app: ASGIApp, *, state: State, sink: EventSink | None) -> None:
        self.app = app
        self.state = state
        self.sink = None if sink is NULL_SINK else sink
        if not hasattr(state, "requests_served"):
            state.requests_served = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0
        state = self.state

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # Counted before the response leaves, so a client that got it sees it counted.
                # Only the event loop thread runs this: the increment needs no lock.
                state.requests_served += 1
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            if status == 0:  # the app failed before answering
                status = 500
                state.requests_served += 1
            if self.sink is not None:
                self.sink.emit(RequestServedEvent(data=RequestServedData(
                    method=scope["method"], path=scope["path"], status=status,
                    latency_ms=(time.perf_counter() - started) * 1000.0)))
