"""`EmbeddedServer`: uvicorn in a background thread, for the TUI, batch runs and tests.

We bind the socket ourselves (port 0 picks a free one), so the real port is known before uvicorn
starts; uvicorn gets `log_config=None` and no access log, so it never touches the host's logging
or terminal. `stop()` rejects pending approvals first, so shutdown never waits on a person.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from corral_core.server.auth import is_loopback_host
from corral_core.server.limits import DEFAULT_REQUEST_TIMEOUT, KEEP_ALIVE_TIMEOUT, deadline_protocol

__all__ = ["EmbeddedServer", "uvicorn_config"]

START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0


def bind_socket(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A listening TCP socket for uvicorn; OSError when the address cannot be bound.

    proto must be IPPROTO_TCP: asyncio only sets TCP_NODELAY on accepted sockets whose proto says
    TCP, and without it every response waits ~40 ms for a delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(backlog)  # connections queue from now on, so the URL is usable at once
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def uvicorn_config(app: Any, *, request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
                   timeout_graceful_shutdown: float | None = None) -> uvicorn.Config:
    """How every corral-tui server runs uvicorn: no logging setup, no access log, and clients get
    `request_timeout` seconds to deliver each request (server/limits.py)."""
    return uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="on",
        http=deadline_protocol(request_timeout),
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
        # uvicorn annotates int but passes it to asyncio.wait_for, which takes any float
        timeout_graceful_shutdown=timeout_graceful_shutdown,  # type: ignore[arg-type]
    )


class EmbeddedServer:
    """Serve an ASGI app on `host:port` from a daemon thread."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, *,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.request_timeout = request_timeout
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._error: BaseException | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        """The base URL, e.g. http://127.0.0.1:41234 (known once `start()` has bound the port)."""
        if self._url is None:
            raise RuntimeError("the server is not started; call start() first")
        return self._url

    def start(self) -> str:
        """Start serving; returns the base URL once requests are accepted."""
        if self._thread is not None:
            return self.url
        if not is_loopback_host(self.host) and not getattr(getattr(self.app, "state", None), "token", None):
            raise ValueError(f"refusing to serve on {self.host} without a token: create the app with "
                             "token=... or bind 127.0.0.1")
        sock = bind_socket(self.host, self.port)
        self._socket = sock
        self.port = sock.getsockname()[1]
        hosts = getattr(getattr(self.app, "state", None), "hosts", None)
        if hosts is not None:  # the Host and Origin checks answer for the address we bound
            hosts.bind(self.host, self.port)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self._url = f"http://{host}:{self.port}"
        config = uvicorn_config(self.app, request_timeout=self.request_timeout,
                                timeout_graceful_shutdown=STOP_TIMEOUT / 2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"corral-server-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the embedded server did not start: {self._error or 'timed out'}")
            time.sleep(0.005)
        return self.url

    def _run(self) -> None:
        assert self._server is not None and self._socket is not None
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as exc:  # reported by start()
            self._error = exc

    def stop(self) -> None:
        """Stop serving and wait (bounded) for the thread; safe to call twice."""
        runtime = getattr(getattr(self.app, "state", None), "runtime", None)
        if runtime is not None and hasattr(runtime, "begin_shutdown"):
            runtime.begin_shutdown()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(STOP_TIMEOUT / 2)
        if runtime is not None and hasattr(runtime, "close"):
            runtime.close()  # idempotent; covers a thread that died before the lifespan ran
        if self._socket is not None:
            self._socket.close()
        self._socket = None
        self._thread = None
        self._server = None

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
