"""An httpx transport that gives each request in flight a connection of its own, reused across calls.

Used for provider calls (litellm's shared client) and for the REST calls of trials to the environment
server. httpx's connection pool scans every connection it holds, under one lock, to place a request and
again to release it: with 256 trials in flight that is 256 connections scanned twice per request, and
the lock is contended by every trial thread at once. Here each *lane* is an `httpx.HTTPTransport` with
one connection; a request takes a free lane (or makes one), and the lane goes back when its response
is closed. Taking and returning a lane is a list pop and append; a lane keeps its connection alive
between calls, so consecutive trials reuse connections just as the pool did.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx


class LaneTransport(httpx.BaseTransport):
    """Requests on single-connection transports taken from a free list (most recently used first)."""

    def __init__(self, make_lane: Callable[[], httpx.BaseTransport]) -> None:
        self._make_lane = make_lane
        self._free: list[httpx.BaseTransport] = []
        self._all: list[httpx.BaseTransport] = []
        self._lock = threading.Lock()
        self._closed = False

    @property
    def lanes(self) -> int:
        """How many lanes (connections at most) were made so far."""
        return len(self._all)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        lane = self._take()
        try:
            response = lane.handle_request(request)
        except BaseException:
            self._give_back(lane)
            raise
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        return httpx.Response(status_code=response.status_code, headers=response.headers.raw,
                              stream=_ReleasingStream(stream, lambda: self._give_back(lane)),
                              extensions=response.extensions)

    def _take(self) -> httpx.BaseTransport:
        try:
            return self._free.pop()  # atomic on a list: no lock on the hot path
        except IndexError:
            pass
        lane = self._make_lane()
        with self._lock:
            self._all.append(lane)
        return lane

    def _give_back(self, lane: httpx.BaseTransport) -> None:
        if self._closed:
            lane.close()
        else:
            self._free.append(lane)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            lanes, self._all, self._free = self._all, [], []
        for lane in lanes:
            lane.close()


class _ReleasingStream(httpx.SyncByteStream):
    """The lane's response body; closing it (httpx does once the body is read) frees the lane, once."""

    def __init__(self, stream: httpx.SyncByteStream, release: Callable[[], None]) -> None:
        self._stream = stream
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


def lane_transport(verify: Any = True, keepalive_expiry: float | None = 5.0, **transport_options: Any
                   ) -> LaneTransport:
    """Lanes of `httpx.HTTPTransport(**transport_options)` with one connection each, idle for at most
    `keepalive_expiry` seconds. `verify` is httpx's (True, False, a CA bundle path or an SSLContext): one
    SSL context is made here and shared by every lane (making one loads the CA bundle, milliseconds each)."""
    context = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify=verify)
    one = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=keepalive_expiry)
    return LaneTransport(lambda: httpx.HTTPTransport(verify=context, limits=one, **transport_options))


def lane_client(verify: Any = True, **client_options: Any) -> httpx.Client:
    """An httpx.Client whose requests each get a connection of their own (see the module's docstring)."""
    context = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify=verify)
    return httpx.Client(transport=lane_transport(context), verify=context, **client_options)
