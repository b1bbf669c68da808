"""MCP (Streamable HTTP) at `/tasks/{task_id}/mcp` and `/trials/{trial_id}/mcp`, on the official SDK.

Any MCP client (Claude Code, the SDK's own client, ...) can be the agent: `tools/list` lists the
target's tools (`?verbosity=` and `?style=` as on `/tools`), and `tools/call` runs one through the
same path as `POST .../tools/execute`, so risk levels hold (`blocked` never runs, `confirm` waits
for the server's ApprovalGate), the call is recorded in the trial and reported as events, and the
bearer token (an ASGI middleware over the whole app) applies. A result is `{isError, content:
[{type: "text", text}]}`: the tool's output, or its error message with `isError: true`.

With `?finish=true` two more tools end the trial the way `POST .../submit` and `.../surrender` do:
`submit_answer(answer)` and `surrender_task()` (only where the environment has no tool of that
name), for an MCP client that can do nothing but call tools. Their result is the REST answer as
JSON (score, trial_id, surrendered, explanation).

The SDK costs about two seconds to import, so it is loaded on the first MCP request, not when the
server starts; its session manager (stateless, JSON responses) then runs until the server stops.
Without a token (a loopback server) requests must name a loopback Host, which stops DNS-rebinding
pages from reaching the tools.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

import corral_core
from corral_core.server.routes import query_error
from corral_core.server.runtime import ConflictError, ServerRuntime, Target
from corral_core.tools import DocStyle, ToolVerbosity, parse_style, parse_verbosity

__all__ = ["McpEndpoint"]

_SCOPE_KEY = "corral.mcp"
_TRUE = ("1", "true", "yes", "on")
FINISH_TOOLS: dict[str, dict[str, Any]] = {
    "submit_answer": {
        "description": "Submit your final answer to the task; this ends the trial and returns its score.",
        "inputSchema": {"type": "object", "properties": {"answer": {"type": "string",
                        "description": "The final answer."}}, "required": ["answer"]},
    },
    "surrender_task": {
        "description": "Give up on the task when it cannot be solved; this ends the trial.",
        "inputSchema": {"type": "object", "properties": {}, "required": []},
    },
}
MCP_METHODS = ["GET", "POST", "DELETE"]


class McpEndpoint:
    """The MCP server of one app: its routes, and the lifespan that runs the SDK's session manager."""

    def __init__(self, runtime: ServerRuntime, *, loopback_only: bool) -> None:
        self.runtime = runtime
        self.loopback_only = loopback_only
        self._manager: Any = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._stopped: anyio.Event | None = None

    def routes(self) -> list[Route]:
        return [
            Route("/tasks/{task_id}/mcp", _McpRoute(self, self.runtime.slot, "task_id"), methods=MCP_METHODS),
            Route("/trials/{trial_id}/mcp", _McpRoute(self, self.runtime.trial, "trial_id"), methods=MCP_METHODS),
        ]

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Hold a task group for the session manager, which starts with the first MCP request."""
        self._lock, self._stopped = anyio.Lock(), anyio.Event()
        async with anyio.create_task_group() as group:
            self._task_group = group
            try:
                yield
            finally:
                self._stopped.set()

    async def manager(self) -> Any:
        if self._manager is not None:
            return self._manager
        if self._lock is None or self._task_group is None or self._stopped is None:
            raise RuntimeError("the MCP endpoint needs the app's lifespan to run")
        async with self._lock:
            if self._manager is None:
                manager = await anyio.to_thread.run_sync(self._build_manager)
                ready, stopped = anyio.Event(), self._stopped

                async def hold() -> None:
                    async with manager.run():
                        ready.set()
                        await stopped.wait()

                self._task_group.start_soon(hold)
                await ready.wait()
                self._manager = manager
        return self._manager

    def _build_manager(self) -> Any:
        lowlevel = importlib.import_module("mcp.server.lowlevel")
        http = importlib.import_module("mcp.server.streamable_http_manager")
        security = importlib.import_module("mcp.server.transport_security")
        server = lowlevel.Server("corral-tui", version=corral_core.__version__,
                                 instructions="The tools of one corral-tui task; call them to solve it.",
                                 on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        settings = None
        if self.loopback_only:
            settings = security.TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
        return http.StreamableHTTPSessionManager(app=server, json_response=True, stateless=True,
                                                 security_settings=settings)

    # --- the MCP methods ---------------------------------------------------------------------

    @staticmethod
    def _target(ctx: Any) -> tuple[Target, ToolVerbosity, DocStyle, bool]:
        request = getattr(ctx, "request", None)
        found = getattr(request, "scope", {}).get(_SCOPE_KEY)
        if found is None:
            raise RuntimeError("MCP request without a resolved task or trial")
        return found

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        types = importlib.import_module("mcp.types")
        target, level, style, finish = self._target(ctx)
        listed = target.env.tools_mcp(level, style)
        if finish:
            listed += [{"name": name, **tool} for name, tool in FINISH_TOOLS.items() if name not in target.env.tools]
        return types.ListToolsResult(tools=[types.Tool(name=t["name"], description=t["description"],
                                                       input_schema=t["inputSchema"]) for t in listed])

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        types = importlib.import_module("mcp.types")
        target, _, _, finish = self._target(ctx)
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        if finish and params.name in FINISH_TOOLS and params.name not in target.env.tools:
            return await self._finish(target, params.name, arguments)
        # Tracing: the MCP SDK's span for this request continues the trace context of the request's `_meta`,
        # and anyio runs the call in a copy of this context, so the execute_tool span nests in it.
        try:  # the REST path exactly: validation, risk levels and approvals, records, events
            call = await anyio.to_thread.run_sync(self.runtime.execute, target, params.name, arguments)
        except ConflictError as exc:  # the trial already ended
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        ok = call.get("status") == "success"
        text = call.get("result") if ok else call.get("error_message") or call.get("status")
        return types.CallToolResult(content=[types.TextContent(text=str(text or ""))], is_error=not ok)


    async def _finish(self, target: Target, name: str, arguments: dict[str, Any]) -> Any:
        types = importlib.import_module("mcp.types")
        answer = arguments.get("answer")
        if name == "submit_answer" and not isinstance(answer, str):
            return types.CallToolResult(content=[types.TextContent(text="submit_answer needs a string `answer`.")],
                                        is_error=True)
        try:  # the REST path: POST .../submit or .../surrender
            done = await anyio.to_thread.run_sync(
                functools.partial(self.runtime.finish, target, answer, surrender=name == "surrender_task"))
        except ConflictError as exc:  # the trial already ended
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        shown = {key: done[key] for key in ("score", "trial_id", "surrendered", "explanation")}
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(shown))], is_error=False)


class _McpRoute:
    """The ASGI app behind one MCP path: finds the target (404 if unknown), then hands the request
    to the SDK with the target in its scope."""

    def __init__(self, endpoint: McpEndpoint, resolve: Callable[[str], Target], param: str) -> None:
        self.endpoint = endpoint
        self.resolve = resolve
        self.param = param

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = self.resolve(scope["path_params"][self.param])  # NotFoundError: the app answers 404
        query = Request(scope).query_params
        try:
            level = parse_verbosity(query.get("verbosity"))
        except ValueError as exc:
            raise query_error("verbosity", query.get("verbosity"), str(exc)) from None
        try:
            style = parse_style(query.get("style"))
        except ValueError as exc:
            raise query_error("style", query.get("style"), str(exc)) from None
        scope[_SCOPE_KEY] = (target, level, style, query.get("finish", "").strip().lower() in _TRUE)
        manager = await self.endpoint.manager()
        await manager.handle_request(scope, receive, send)
