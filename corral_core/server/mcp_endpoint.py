"""MCP (Streamable HTTP) at `/tasks/{task_id}/mcp` and `/trials/{trial_id}/mcp`, on the official SDK.

Any MCP client (Claude Code, the SDK's own client, ...) can be the agent: `tools/list` lists the
target's tools (`?verbosity=` and `?style=` as on `/tools`; a trial opened with a `verbosity` lists at
that level), each with MCP's `destructiveHint`/`readOnlyHint` for its risk level and
`_meta: {"corral-tui/risk", "corral-tui/verbosity"}`; `tools/call` runs one through the same path as
`POST .../tools/execute`, so risk levels hold (`blocked` never runs, `confirm` waits for the server's
ApprovalGate), the call is recorded in the trial and reported as events, and the bearer token (an
ASGI middleware over the whole app) applies. A result is `{isError, content}`: the tool's text, its
error message with `isError: true`, or the content blocks (images, structured content) an external
MCP tool answered with, passed through. The prompt `task` (`prompts/get`) is the task's prompt.

With `?finish=true` two more tools end the trial the way `POST .../submit` and `.../surrender` do:
`submit_answer(answer)` and `surrender_task()` (only where the environment has no tool of that
name), for an MCP client that can do nothing but call tools. Their result is the REST answer as
JSON (score, trial_id, surrendered, explanation).

The SDK costs about two seconds to import, so it is loaded on the first MCP request, not when the
server starts; its session manager (stateless, JSON responses) then runs until the server stops.
The Host and Origin checks of every route (server/hosts.py) guard these routes too. A `GET` with
`Accept: text/event-stream` opens a stream on which a stateless server never sends anything: the
server closes it after `stream_idle` seconds without a message (keep-alive pings do not count), and
holds at most `max_streams` at once (503 beyond), so idle streams cannot pile up.
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
from starlette.types import Message, Receive, Scope, Send

import corral_core
from corral_core.domain import ToolStatus
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
RISK_KEY = "corral-tui/risk"  # a tool's risk level (safe, confirm, blocked), in its `_meta`
LEVEL_KEY = "corral-tui/verbosity"  # the documentation level of a listing, in its and each tool's `_meta`
TASK_PROMPT = "task"
DEFAULT_STREAM_IDLE = 60.0  # seconds an MCP GET stream may go without a message before we close it
DEFAULT_MAX_STREAMS = 32  # MCP GET streams open at once, per server


class McpEndpoint:
    """The MCP server of one app: its routes, and the lifespan that runs the SDK's session manager."""

    def __init__(self, runtime: ServerRuntime, *, stream_idle: float = DEFAULT_STREAM_IDLE,
                 max_streams: int = DEFAULT_MAX_STREAMS) -> None:
        self.runtime = runtime
        self.stream_idle = stream_idle
        self.max_streams = max_streams
        self.open_streams = 0  # only the event loop thread touches it
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
        server = lowlevel.Server("corral-tui", version=corral_core.__version__,
                                 instructions="The tools of one corral-tui task; call them to solve it.",
                                 on_list_tools=self._list_tools, on_call_tool=self._call_tool,
                                 on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt)
        # No security_settings: HostGuardMiddleware checks Host and Origin on every route, with the
        # hosts this server is bound for (the SDK's list knew only 127.0.0.1 and localhost).
        return http.StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)

    async def stream(self, manager: Any, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve an MCP GET (an SSE stream): counted against `max_streams`, closed when idle."""
        if self.open_streams >= self.max_streams:
            await _busy(send, self.max_streams)
            return
        self.open_streams += 1
        last_message = anyio.current_time()
        started = finished = False

        async def watched_send(message: Message) -> None:
            nonlocal last_message, started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body":
                body = message.get("body", b"")
                if body and not body.lstrip().startswith(b":"):  # an SSE comment is a keep-alive ping
                    last_message = anyio.current_time()
                finished = not message.get("more_body", False)
            await send(message)

        try:
            async with anyio.create_task_group() as group:
                async def close_when_idle() -> None:
                    while (left := last_message + self.stream_idle - anyio.current_time()) > 0:
                        await anyio.sleep(left)
                    group.cancel_scope.cancel()

                group.start_soon(close_when_idle)
                await manager.handle_request(scope, receive, watched_send)
                group.cancel_scope.cancel()
            if started and not finished:  # end the chunked body cleanly: the client sees the stream end
                with anyio.CancelScope(shield=True):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.open_streams -= 1

    # --- the MCP methods ---------------------------------------------------------------------

    @staticmethod
    def _target(ctx: Any) -> tuple[Target, ToolVerbosity, DocStyle, bool]:
        request = getattr(ctx, "request", None)
        found = getattr(request, "scope", {}).get(_SCOPE_KEY)
        if found is None:
            raise RuntimeError("MCP request without a resolved task or trial")
        target: tuple[Target, ToolVerbosity, DocStyle, bool] = found
        return target

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        types = importlib.import_module("mcp.types")
        target, level, style, finish = self._target(ctx)
        listed = target.env.tools_mcp(level, style)
        risks = {name: tool.risk.value for name, tool in target.env.tools.items()}
        if finish:
            listed += [{"name": name, **tool} for name, tool in FINISH_TOOLS.items() if name not in target.env.tools]
        return types.ListToolsResult(
            tools=[types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"],
                              annotations=_annotations(types, risks.get(t["name"], "safe")),
                              meta={RISK_KEY: risks.get(t["name"], "safe"), LEVEL_KEY: level.value})
                   for t in listed],
            meta={LEVEL_KEY: level.value})

    async def _list_prompts(self, ctx: Any, params: Any) -> Any:
        types = importlib.import_module("mcp.types")
        return types.ListPromptsResult(prompts=[types.Prompt(
            name=TASK_PROMPT, description="The task to solve (what GET .../prompt gives), as a user message.")])

    async def _get_prompt(self, ctx: Any, params: Any) -> Any:
        types = importlib.import_module("mcp.types")
        if params.name != TASK_PROMPT:
            raise ValueError(f"Unknown prompt {params.name!r}; this server has one: {TASK_PROMPT!r}.")
        target, _, _, _ = self._target(ctx)
        prompt = await anyio.to_thread.run_sync(target.env.get_task_prompt)
        parts = [prompt] if isinstance(prompt, str) else list(prompt)
        messages = [types.PromptMessage(role="user", content=_content_block(types, part)) for part in parts]
        return types.GetPromptResult(description=f"Task {target.env.task_id}", messages=messages)

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
        ok = call.get("status") == ToolStatus.SUCCESS
        text = call.get("result") if ok else call.get("error_message") or call.get("status")
        blocks = call.get("content") if ok else None  # an external MCP tool's own content: passed through
        content = ([_content_block(types, block) for block in blocks] if blocks
                   else [types.TextContent(text=str(text or ""))])
        return types.CallToolResult(content=content, is_error=not ok,
                                    structured_content=call.get("structured_content") if ok else None)


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


def _annotations(types: Any, risk: str) -> Any:
    """MCP's hints for a risk level: `confirm` and `blocked` tools may change things (destructive, not
    read-only); a `safe` one is not destructive (whether it only reads, we cannot know)."""
    if risk == "safe":
        return types.ToolAnnotations(destructive_hint=False)
    return types.ToolAnnotations(read_only_hint=False, destructive_hint=True)


def _content_block(types: Any, part: Any) -> Any:
    """An MCP content block from text or a content-part dict (MCP's own, or an OpenAI-style text part)."""
    if isinstance(part, str):
        return types.TextContent(text=part)
    if isinstance(part, dict) and part.get("type") in ("image", "audio", "resource", "resource_link", "text") \
            and not (part.get("type") == "text" and "text" not in part):
        kind = {"image": types.ImageContent, "audio": types.AudioContent, "resource": types.EmbeddedResource,
                "resource_link": types.ResourceLink, "text": types.TextContent}[part["type"]]
        try:
            return kind.model_validate(part)
        except ValueError:
            pass
    return types.TextContent(text=part.get("text", "") if isinstance(part, dict) else str(part))


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
            level = parse_verbosity(query.get("verbosity") or getattr(target, "verbosity", None))
        except ValueError as exc:
            raise query_error("verbosity", query.get("verbosity"), str(exc)) from None
        try:
            style = parse_style(query.get("style"))
        except ValueError as exc:
            raise query_error("style", query.get("style"), str(exc)) from None
        scope[_SCOPE_KEY] = (target, level, style, query.get("finish", "").strip().lower() in _TRUE)
        manager = await self.endpoint.manager()
        if scope["method"] == "GET":
            await self.endpoint.stream(manager, scope, receive, send)
        else:
            await manager.handle_request(scope, receive, send)


async def _busy(send: Send, limit: int) -> None:
    body = json.dumps({"detail": f"Too many MCP event streams open on this server (at most {limit}); "
                                 "close one, or use POST requests, which need no stream."}).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", b"5")]})
    await send({"type": "http.response.body", "body": body})
