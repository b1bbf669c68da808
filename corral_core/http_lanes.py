"""An httpx transport that gives each request in flight a connection of its own, reused across calls.

Used for provider calls (litellm's shared client) and for the REST calls of trials to the environment
server. httpx's connection pool scans every connection it holds, under one lock, to place a request and
again to release it: with 256 trials in flight that is 256 connections scanned twice per request, and
the lock is contended by every trial thread at once. Here each *lane* is an `httpx.HTTPTransport` with
one connection; a request takes a free lane (or makes one), and the lane goes back when its response
is closed. Taking and returning a lane is a list pop and append; a lane keeps its connection alive
between calls, so consecutive trials reuse connections just as the pool did.

Two more per-request costs of httpx/httpcore are cut here, both without changing what goes on the wire:

- httpcore writes a request's headers and its body with one `send` each; a lane's connection keeps them
  and sends them together when it starts reading the answer (one system call and one TCP segment instead
  of two, and no Nagle wait for the body). A write error met then is handled as httpcore handles one met
  while writing: the answer is still read (a server may have answered and closed early).
- httpx's client hands every response to its cookie jar, which parses it through urllib's cookie machinery
  (~0.1 ms) even when the response sets no cookie; `lane_client` skips the jar for those.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpcore
import httpx

MAX_HELD_BYTES = 64 * 1024  # a streamed upload is sent as it comes beyond this


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


class _HeldWrites(httpcore.NetworkStream):
    """A connection's stream whose writes wait for its next read (or close), then go out in one `send`."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream
        self._held: list[bytes] = []
        self._size = 0
        self._timeout: float | None = None

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        self._held.append(buffer)
        self._size += len(buffer)
        self._timeout = timeout
        if self._size > MAX_HELD_BYTES:
            self._send()

    def _send(self) -> None:
        held, self._held, self._size = b"".join(self._held), [], 0
        self._stream.write(held, timeout=self._timeout)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._held:
            with contextlib.suppress(httpcore.WriteError):  # as httpcore does for a request it could not finish
                self._send()  # writing: the answer is read anyway
        return self._stream.read(max_bytes, timeout=timeout)

    def close(self) -> None:
        self._held, self._size = [], 0
        self._stream.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        if self._held:
            self._send()
        return _HeldWrites(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _HeldWritesBackend(httpcore.NetworkBackend):
    """httpcore's network backend whose connections hold their writes until they read (`_HeldWrites`)."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _HeldWrites(self._backend.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                                     socket_options=socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _HeldWrites(self._backend.connect_unix_socket(path, timeout=timeout, socket_options=socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _holding_writes(transport: httpx.HTTPTransport) -> httpx.HTTPTransport:
    """The transport with its connections' writes held until they read. httpx keeps httpcore's pool in
    `_pool` and the pool its backend in `_network_backend` (httpx 0.28, httpcore 1.0); a transport without
    them (a SOCKS proxy, another version) is left as it is."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend) and not isinstance(backend, _HeldWritesBackend):
        pool._network_backend = _HeldWritesBackend(backend)  # type: ignore[union-attr]
    return transport


def lane_transport(verify: Any = True, keepalive_expiry: float | None = 5.0, **transport_options: Any
                   ) -> LaneTransport:
    """Lanes of `httpx.HTTPTransport(**transport_options)` with one connection each, idle for at most
    `keepalive_expiry` seconds, each connection sending a request in one piece. `verify` is httpx's (True,
    False, a CA bundle path or an SSLContext): one SSL context is made here and shared by every lane (making
    one loads the CA bundle, milliseconds each)."""
    context = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify=verify)
    one = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=keepalive_expiry)
    return LaneTransport(lambda: _holding_writes(httpx.HTTPTransport(verify=context, limits=one,
                                                                     **transport_options)))


class _Cookies(httpx.Cookies):
    """A client's cookie jar that does not parse responses setting no cookie."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


def lane_client(verify: Any = True, **client_options: Any) -> httpx.Client:
    """An httpx.Client whose requests each get a connection of their own (see the module's docstring)."""
    context = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify=verify)
    client = httpx.Client(transport=lane_transport(context), verify=context, **client_options)
    jar = _Cookies()
    jar.jar = client.cookies.jar  # the cookies given in client_options, if any
    client._cookies = jar  # httpx 0.28 keeps the jar there; `client.cookies = ...` would replace it
    return client
