"""`LazyApp`: a suite's environment server whose FastAPI app is built on its first request.

The workbench serves every suite it opens, and a session runs one or two of them: importing FastAPI
and building each suite's app (a pydantic adapter per route parameter) was a third of the start-up
before "Ready.". A LazyApp is what uvicorn serves instead: it answers uvicorn's lifespan at once, builds
the real app (`create_app`, same routes and answers) on the first request or when `build()` is called
(the workbench calls it in the background after "Ready."), then runs that app's own lifespan inside the
server's event loop and hands it every request. Its `state` holds what is read before then (the Host
policy the server binds, the token, the request count) and is the real app's state afterwards.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from starlette.datastructures import State
from starlette.types import Message, Receive, Scope, Send

from corral_core.server.hosts import HostPolicy

if TYPE_CHECKING:
    from fastapi import FastAPI

    from corral_core.env import ServedSuite

__all__ = ["LazyApp"]


class LazyApp:
    """An ASGI app standing for `create_app(suite, **options)` until the first request needs it."""

    def __init__(self, suite: ServedSuite, **options: Any) -> None:
        self.suite = suite
        self.options = options
        self._app: FastAPI | None = None
        self._building = threading.Lock()
        self._pending = State({"hosts": HostPolicy(options.get("allowed_hosts", ())),
                               "token": options.get("token"), "requests_served": 0})
        self._started: asyncio.Lock | None = None  # made in the server's loop, at its lifespan start
        self._lifespan: asyncio.Task[None] | None = None  # the real app's lifespan, once it runs
        self._live = False  # that lifespan has started
        self._to_app: asyncio.Queue[Message] = asyncio.Queue()
        self._from_app: asyncio.Queue[Message] = asyncio.Queue()

    @property
    def built(self) -> bool:
        return self._app is not None

    @property
    def state(self) -> State:
        return self._app.state if self._app is not None else self._pending

    def build(self) -> FastAPI:
        """The real app, built once (from any thread); it answers for the address bound meanwhile."""
        with self._building:
            if self._app is None:
                from corral_core.server.app import create_app

                app = create_app(self.suite, **self.options)
                hosts = self._pending.hosts
                if hosts.bound_host is not None and hosts.port is not None:
                    app.state.hosts.bind(hosts.bound_host, hosts.port)
                self._app = app
            return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._serve_lifespan(scope, receive, send)
            return
        app = await self._running(scope)
        await app(scope, receive, send)

    async def _running(self, scope: Scope) -> FastAPI:
        """The real app with its lifespan started in this event loop (the first request builds it on a
        thread, so the loop goes on answering while it is built)."""
        if self._live and self._app is not None:
            return self._app
        if self._started is None:  # served without a lifespan: one loop all the same
            self._started = asyncio.Lock()
        async with self._started:
            if not self._live:
                app = self._app if self._app is not None else await asyncio.to_thread(self.build)
                lifespan = {"type": "lifespan", "asgi": scope.get("asgi", {"version": "3.0"}), "state": {}}
                self._lifespan = asyncio.create_task(app(lifespan, self._to_app.get, self._from_app.put))
                await self._to_app.put({"type": "lifespan.startup"})
                answer = await self._from_app.get()
                if answer["type"] != "lifespan.startup.complete":
                    raise RuntimeError(f"the environment server did not start: {answer.get('message', '')}")
                self._live = True
        assert self._app is not None
        return self._app

    async def _serve_lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Started at once; on shutdown, the real app's lifespan ends too (if it ever ran)."""
        await receive()  # lifespan.startup
        self._started = asyncio.Lock()
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        try:
            if self._lifespan is not None:
                await self._to_app.put({"type": "lifespan.shutdown"})
                await self._from_app.get()
                await self._lifespan
        finally:
            await send({"type": "lifespan.shutdown.complete"})
