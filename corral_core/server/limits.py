"""What one client may cost the server: a request-body limit and a deadline for receiving a request.

- `BodyLimitMiddleware` (pure ASGI) answers 413 to a body over `max_body_bytes`: at once when
  Content-Length says so, else as soon as the streamed (chunked) body passes the limit.
- `DeadlineHttpToolsProtocol` is uvicorn's httptools protocol (a C parser; uvicorn's pure-Python h11
  protocol cost the server a third more CPU per request) with one more timer: from the moment a connection
  opens, and again after every response, the client has `request_timeout` seconds to deliver a
  complete request (head and body). uvicorn 0.54 has no such timer of its own: its keep-alive timer
  is cancelled by the first byte of the next request, so a half-sent request (a slowloris) held its
  connection forever, even with --token. A request that has fully arrived is never cut, however
  long its tool runs. Idle keep-alive connections still close after `KEEP_ALIVE_TIMEOUT`.

The protocol class reaches uvicorn through its public `http=` setting, but as a subclass it relies on
uvicorn's parser callbacks and on `cycle`/`parser` staying as they are in the uvicorn series it was
written for (UVICORN_SERIES, pinned in pyproject.toml): `deadline_protocol` refuses another series in
words, so an upgrade cannot break the deadline silently.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_REQUEST_TIMEOUT",
    "KEEP_ALIVE_TIMEOUT",
    "MAX_HEAD_BYTES",
    "BodyLimitMiddleware",
    "DeadlineHttpToolsProtocol",
    "deadline_protocol",
]

UVICORN_SERIES = "0.54"  # the uvicorn minor series DeadlineHttpToolsProtocol is written and tested for
DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024  # tool arguments and answers are text; 10 MiB is plenty
DEFAULT_REQUEST_TIMEOUT = 30.0  # seconds to deliver one complete request
KEEP_ALIVE_TIMEOUT = 5  # seconds an idle keep-alive connection stays open (uvicorn's default)
MAX_HEAD_BYTES = 16 * 1024  # a request's line and headers (h11's limit, which uvicorn's h11 protocol had)

_TIMEOUT_RESPONSE = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                     b"connection: close\r\ncontent-length: 47\r\n\r\n"
                     b"The request did not arrive completely in time.\n")


def too_large_message(limit: int) -> str:
    return (f"Request body too large: this server accepts at most {limit} bytes "
            "(corral-tui serve --max-body-bytes).")


class BodyLimitMiddleware:
    """413 for request bodies larger than `max_body_bytes`."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.limit = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    break  # the HTTP parser already refuses a malformed length; nothing to add
                if declared > limit:
                    await _send_json(send, 413, {"detail": too_large_message(limit)})
                    return
                break
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:  # FastAPI lets an HTTPException raised while reading the body through
                    raise HTTPException(413, too_large_message(limit))
            return message

        await self.app(scope, limited_receive, send)


async def _send_json(send: Send, status: int, payload: Any) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class DeadlineHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, plus a deadline for receiving each complete request (see the module)."""

    request_timeout: float = DEFAULT_REQUEST_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._deadline_at = 0.0
        self._head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_deadline()

    # A request head is held in memory until it is complete: at most MAX_HEAD_BYTES of it (as h11 did),
    # else the parser's error, and uvicorn answers 400 and closes.
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        """One Host header, and none only on HTTP/1.0, as h11 required: the Host check (server/hosts.py)
        reads the one there is."""
        hosts = sum(1 for name, _ in self.headers if name == b"host")
        if hosts > 1 or (hosts == 0 and self.parser.get_http_version() != "1.0"):
            raise ValueError("a request needs exactly one Host header (none only on HTTP/1.0)")
        super().on_headers_complete()

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            raise ValueError(f"request head over {MAX_HEAD_BYTES} bytes")

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_deadline()
        super().connection_lost(exc)

    def _arm_deadline(self) -> None:
        """The client has `request_timeout` seconds from now. One timer per connection: a response only
        moves the deadline on, and the timer, firing before it, waits the rest (no timer per response)."""
        self._deadline_at = self.loop.time() + self.request_timeout
        if self._deadline is None:
            self._deadline = self.loop.call_at(self._deadline_at, self._on_deadline)

    def _disarm_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _on_deadline(self) -> None:
        """The client had its time: unless the whole request is in, the connection closes."""
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.loop.time() < self._deadline_at:  # moved on by a response since: wait the rest
            self._deadline = self.loop.call_at(self._deadline_at, self._on_deadline)
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:  # a request head arrived and is unanswered
            if not cycle.more_body:
                return  # complete: the app is answering it
            self.transport.close()  # a body cut short: the app sees the client disconnect
            return
        self.transport.write(_TIMEOUT_RESPONSE)  # no request head yet, so nobody else answers: say why
        self.transport.close()


def check_uvicorn(version: str | None = None) -> None:
    """Raise a RuntimeError that says what to do when the installed uvicorn is not of UVICORN_SERIES."""
    if version is None:
        from importlib.metadata import version as installed

        version = installed("uvicorn")
    if version != UVICORN_SERIES and not version.startswith(UVICORN_SERIES + "."):
        raise RuntimeError(f"corral-tui's server protocol (corral_core/server/limits.py) extends uvicorn "
                           f"{UVICORN_SERIES}.x's httptools protocol, and uvicorn {version} is installed: its "
                           f"request deadline may not hold on another series. Fix: pip install "
                           f"'uvicorn=={UVICORN_SERIES}.*' (the version corral-tui pins).")


def deadline_protocol(request_timeout: float) -> type[DeadlineHttpToolsProtocol]:
    """The protocol class for a server whose clients get `request_timeout` seconds per request."""
    if not request_timeout > 0:
        raise ValueError(f"request_timeout must be positive, got {request_timeout!r}")
    check_uvicorn()
    return type("DeadlineHttpToolsProtocol", (DeadlineHttpToolsProtocol,), {"request_timeout": float(request_timeout)})
