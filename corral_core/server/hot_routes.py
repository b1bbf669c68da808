"""`HotRoutes`: the four routes every trial takes, answered without FastAPI's per-request machinery.

A runner's trial is three requests (POST /tasks/{task_id}/trials, POST /trials/{trial_id}/tools/execute,
POST /trials/{trial_id}/submit or /surrender, each with its `?close=`), and on the offline path
FastAPI's routing, dependency solving and wrapping cost more CPU than the work they lead to. This pure
ASGI middleware sits innermost (inside the Host, auth, body-limit and accounting middlewares) and
serves those requests itself: the same shared work (`routes.tool_call`, `routes.finish`,
`routes.open_trial_response`) in the same thread pool, the same `SafeJSONResponse`, and errors
through the app's own exception handlers. Anything it is not sure of goes to FastAPI unchanged, its
body replayed: a body that is not `application/json` or does not validate, a query string other
than `close=true|false`, a `root_path`, FastAPI's own OpenTelemetry spans (which name the route). So
the wire is the same either way, validation errors included; only the cost differs.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from corral_core.server.routes import finish, open_trial_response, tool_call
from corral_core.server.runtime import ServerRuntime
from corral_core.server.schemas import SubmitRequest, ToolRequest, TrialCreateRequest
from corral_core.tracing import TRACE_HEADERS

__all__ = ["HotRoutes"]

# Starlette's `{param}` is `[^/]+` on the percent-decoded path; a trailing slash is FastAPI's (a redirect)
_TRIAL_ROUTE = re.compile(r"/trials/([^/]+)/(tools/execute|submit|surrender)")
_OPEN_ROUTE = re.compile(r"/tasks/([^/]+)/trials")
_CLOSE = {b"": False, b"close=true": True, b"close=false": False}
_TRACE = frozenset(name.encode() for name in TRACE_HEADERS)
_JSON = b"application/json"


class _Delegate(Exception):
    """Not a request this fast path answers exactly as FastAPI would: FastAPI answers it (and when
    reading the body raised `reading_error`, FastAPI's reading raises it again)."""

    def __init__(self, reading_error: Exception | None = None) -> None:
        super().__init__()
        self.reading_error = reading_error


class HotRoutes:
    """Serve the trial's hot routes directly (see the module); everything else passes to `app`.

    `handlers` is the app's `exception_handlers`, read when an error is answered, so a runtime error
    (404, 409, a 422 on a parameter, a 413 while reading) gets the same response as on FastAPI's path;
    other exceptions propagate as from any route, to the app's 500 handler.
    """

    def __init__(self, app: ASGIApp, *, runtime: ServerRuntime, handlers: Mapping[Any, Callable[..., Any]]) -> None:
        self.app = app
        self.runtime = runtime
        self.handlers = handlers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path")
                or "fastapi.telemetry" in scope):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        trial = _TRIAL_ROUTE.fullmatch(path)
        opening = None if trial is not None else _OPEN_ROUTE.fullmatch(path)
        if trial is None and opening is None:
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        try:
            if trial is not None:
                response = await self._trial_route(scope, receive, received, trial[1], trial[2])
            else:
                assert opening is not None
                response = await self._open(scope, receive, received, opening[1])
        except _Delegate as delegated:
            await self.app(scope, _replay(received, delegated.reading_error, receive), send)
            return
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            response = handler(Request(scope, receive), exc)
            if inspect.isawaitable(response):
                response = await response
        await response(scope, receive, send)

    async def _trial_route(self, scope: Scope, receive: Receive, received: list[Message], trial_id: str,
                           action: str) -> Response:
        runtime = self.runtime
        if action == "tools/execute":  # takes no query parameter
            request = _body(ToolRequest, await _read(receive, received), scope)
            target = runtime.trial(trial_id)
            trace = _trace(scope)
            return await anyio.to_thread.run_sync(tool_call, runtime, target, request, trace)
        close = _CLOSE.get(scope["query_string"])
        if close is None:
            raise _Delegate
        if action == "submit":
            answer = _body(SubmitRequest, await _read(receive, received), scope).answer
            target = runtime.trial(trial_id)
            return await anyio.to_thread.run_sync(lambda: finish(runtime, target, answer, surrender=False,
                                                                 close=close))
        target = runtime.trial(trial_id)  # surrender: no body
        return await anyio.to_thread.run_sync(lambda: finish(runtime, target, None, surrender=True, close=close))

    async def _open(self, scope: Scope, receive: Receive, received: list[Message], task_id: str) -> Response:
        body = await _read(receive, received)
        request = _body(TrialCreateRequest, body, scope) if body else None  # an empty body is no body
        base_url = str(Request(scope).base_url)
        return await anyio.to_thread.run_sync(open_trial_response, self.runtime, task_id, request, base_url,
                                              _trace(scope))

    def _handler(self, exc: Exception) -> Callable[..., Any] | None:
        """The app's handler for `exc`, as Starlette's ExceptionMiddleware finds it (not the 500 one)."""
        handlers = self.handlers
        if isinstance(exc, HTTPException) and exc.status_code in handlers:
            return handlers[exc.status_code]
        for kind in type(exc).__mro__:
            if kind is Exception:
                return None
            if kind in handlers:
                return handlers[kind]
        return None


async def _read(receive: Receive, received: list[Message]) -> bytes:
    """The whole body, each message kept for a replay; whatever goes wrong, FastAPI reads it again."""
    chunks = []
    while True:
        try:
            message = await receive()
        except Exception as exc:  # a body over a limit, ...: raised again where FastAPI reads
            raise _Delegate(exc) from exc
        received.append(message)
        if message["type"] != "http.request":
            raise _Delegate  # the client went away
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _body(model: Any, body: bytes, scope: Scope) -> Any:
    """`body` validated as FastAPI would: JSON (sent as exactly `application/json`) into `model`."""
    content_type = next((value for name, value in scope["headers"] if name == b"content-type"), None)
    if not body or content_type != _JSON:
        raise _Delegate
    try:
        return model.model_validate(json.loads(body), from_attributes=True)
    except (ValueError, ValidationError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise _Delegate from exc


def _trace(scope: Scope) -> dict[str, str] | None:
    """The W3C trace headers, the first of each (as Starlette's `Headers` gives them)."""
    trace: dict[str, str] = {}
    for name, value in scope["headers"]:
        if name in _TRACE:
            trace.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    return trace or None


def _replay(received: list[Message], error: Exception | None, receive: Receive) -> Receive:
    """A `receive` that gives back what was already read (then raises what reading raised), then reads on."""
    pending = list(received)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        if error is not None:
            raise error
        return await receive()

    return replay
