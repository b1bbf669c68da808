"""A client session with an external MCP server (stdio command or Streamable HTTP URL) that heals.

The SDK is asynchronous and our tools are called from worker threads, so each open session lives on
a private event-loop thread behind an anyio portal. What a session does when the server misbehaves:

- a call that overruns `timeout` is cancelled on the session (the SDK sends `notifications/cancelled`),
  and the session is then dropped, its stdio process stopped: a server that ignores the cancel
  (a blocked event loop, a result still streaming in) would otherwise delay every later call;
- a session whose server died or closed the connection is dropped too;
- the next call opens a new session. A session found closed *before* a call is replaced at once
  (nothing was sent, so nothing can run twice); a call that broke on the way fails, and is not
  retried, since the server may have run it.

Every such failure is a `McpServerError` (an environment failure, not the tool's own error result),
naming the server, the tool and the reason. A result larger than `MAX_RESULT_CHARS` is cut: its
text blocks keep their start and a marker naming the size, a structured content that does not fit
is dropped with a marker, and blocks beyond the cap are replaced by a marker.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from corral_core.tools.base import RichResult
from corral_core.tools.errors import McpServerError, ToolExecutionError
from corral_core.tools.result_cap import MAX_RESULT_CHARS, cap_result, json_size

__all__ = ["DEFAULT_TIMEOUT", "McpConnection", "result_text"]

DEFAULT_TIMEOUT = 30.0


class _Live:
    """One open session: its event-loop thread and portal, the SDK session and the server's stderr."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.portal: Any = None
        self.session_cm: AbstractContextManager[Any] | None = None
        self.session: Any = None
        self.errlog: Any = None


class McpConnection:
    """A client of one MCP server: at most one open session at a time, reopened when it broke."""

    def __init__(self, label: str, *, command: list[str] | None = None, url: str | None = None,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT,
                 start_timeout: float | None = None) -> None:
        if (command is None) == (url is None):
            raise ValueError("an MCP connection needs a command or a url")
        self.label = label
        self.command = command
        self.url = url
        self.env = dict(env or {})
        self.cwd = cwd
        self.headers = dict(headers or {})
        self.timeout = timeout  # seconds for each call
        self.start_timeout = start_timeout or timeout  # seconds for starting the server and listing its tools
        self.tools: list[dict[str, Any]] = []
        self.sessions_opened = 0  # how many sessions this connection has opened (1 + its reconnects)
        self._live: _Live | None = None
        self._lock = threading.Lock()
        self._closers: list[threading.Thread] = []  # dropped sessions being closed

    def copy(self, **changes: Any) -> McpConnection:
        """A connection of its own to the same server (a trial's), knowing the tools already listed;
        `changes` (command, env, headers, cwd) start it differently (a trial's own namespace or directory)."""
        settings: dict[str, Any] = {"command": self.command, "url": self.url, "env": self.env, "cwd": self.cwd,
                                    "headers": self.headers, **changes}
        twin = McpConnection(self.label, timeout=self.timeout, start_timeout=self.start_timeout, **settings)
        twin.tools = self.tools
        return twin

    @property
    def where(self) -> str:
        return " ".join(self.command) if self.command else str(self.url)

    @property
    def _thread(self) -> threading.Thread | None:  # the open session's thread (tests check it ends)
        return self._live.thread if self._live is not None else None

    # --- opening and closing -------------------------------------------------------------------

    def start(self) -> list[dict[str, Any]]:
        """Connect, initialize and list the server's tools ({name, description, inputSchema})."""
        with self._lock:
            live = self._open()
            try:
                self.tools = live.portal.call(self._list_tools, live.session)
            except BaseException as exc:
                detail = _stderr_tail(live)
                self._close(live)
                raise ConnectionError(f"cannot use the MCP server {self.where}: {_reason(exc)}"
                                      + (f" (its stderr: {detail})" if detail else "")) from None
        return self.tools

    def _open(self) -> _Live:
        """The open session, opening one if there is none or the one there is found closed."""
        live = self._live
        if live is not None and not _session_closed(live.session):
            return live
        if live is not None:
            self._close(live)
        live = _Live()
        # the server's stderr, kept for error messages; closed with the session
        live.errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        ready = threading.Event()
        # A daemon thread: a session left open never keeps the interpreter from exiting.
        live.thread = threading.Thread(target=_run_loop, args=(live, ready), name=f"mcp-{self.label}", daemon=True)
        live.thread.start()
        ready.wait()
        try:
            if live.portal is None:
                raise RuntimeError("the event loop thread did not start")
            live.session_cm = live.portal.wrap_async_context_manager(self._connect(live))
            live.session = live.session_cm.__enter__()
        except BaseException as exc:
            detail = _stderr_tail(live)
            self._close(live)
            raise ConnectionError(f"cannot use the MCP server {self.where}: {_reason(exc)}"
                                  + (f" (its stderr: {detail})" if detail else "")) from None
        self._live = live
        self.sessions_opened += 1
        return live

    @asynccontextmanager
    async def _connect(self, live: _Live) -> AsyncIterator[Any]:
        import anyio
        from mcp import ClientSession

        if self.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env or None,
                                           cwd=str(self.cwd) if self.cwd else None)
            transport: Any = stdio_client(params, errlog=live.errlog)
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=self.headers,
                                      timeout=httpx2.Timeout(max(self.timeout, self.start_timeout)))
            transport = _with_client(http, streamable_http_client(str(self.url), http_client=http))
        async with transport as streams, ClientSession(*streams) as session:
            with anyio.fail_after(self.start_timeout):
                await session.initialize()
            yield session

    async def _list_tools(self, session: Any) -> list[dict[str, Any]]:
        import anyio

        listed: list[dict[str, Any]] = []
        cursor = None
        with anyio.fail_after(self.start_timeout):
            while True:
                page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
                listed += [{"name": t.name, "description": t.description or "", "inputSchema": dict(t.input_schema)}
                           for t in page.tools]
                cursor = getattr(page, "next_cursor", None)
                if not cursor:
                    return listed

    def close(self) -> None:
        """End the session (a stdio server process is stopped), and wait for dropped ones to end."""
        with self._lock:
            live, self._live = self._live, None
            closers, self._closers = self._closers, []
        if live is not None:
            self._close(live)
        for closer in closers:
            closer.join(self.start_timeout)

    def _drop(self, live: _Live) -> None:
        """Close a session that timed out or broke, unless another call already replaced it. In the
        background: a stdio server that ignores its closed stdin gets a grace period before it is
        stopped, which the failed call need not wait for."""
        with self._lock:
            if self._live is not live:
                return
            self._live = None
            closer = threading.Thread(target=self._close, args=(live,), name=f"mcp-{self.label}-close", daemon=True)
            self._closers = [c for c in self._closers if c.is_alive()] + [closer]
            closer.start()

    def _close(self, live: _Live) -> None:
        session_cm, portal, thread = live.session_cm, live.portal, live.thread
        live.session_cm = live.session = live.portal = None
        try:
            if session_cm is not None:
                session_cm.__exit__(None, None, None)
        except Exception:  # already broken: nothing more to close
            pass
        finally:
            if portal is not None:
                with contextlib.suppress(Exception):
                    portal.call(portal.stop)
            if thread is not None:
                thread.join(self.start_timeout)
            if live.errlog is not None:
                live.errlog.close()
                live.errlog = None

    # --- calling -------------------------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any]) -> str | RichResult:
        """Call a tool: its text content, or a RichResult when it answered with more than text (image,
        audio or resource blocks, structured content), both within MAX_RESULT_CHARS. ToolExecutionError
        with the server's text on isError; McpServerError when the server timed out, closed or is gone."""
        live = self._session_for_call()
        try:
            try:
                result = self._send(live, name, arguments)
            except Exception as exc:
                if not (self.url and _session_unknown(exc)):
                    raise
                # An HTTP server that restarted (or expired the session) refused the call unrun:
                # the one case a call is sent again, on a new session.
                self._drop(live)
                live = self._session_for_call()
                result = self._send(live, name, arguments)
        except TimeoutError:
            self._drop(live)
            raise McpServerError(f"the MCP server {self.label!r} did not answer {name} within {self.timeout:g}s: "
                                 "the call was cancelled and the session will be reopened for the next call",
                                 server=self.label, reason="timeout") from None
        except Exception as exc:
            if _answered(exc):  # a JSON-RPC error the server sent (unknown tool, bad params): the session is fine
                raise ToolExecutionError(f"the MCP server {self.label!r} refused {name}: {_reason(exc)}") from None
            detail = _stderr_tail(live)
            self._drop(live)
            raise McpServerError(f"the MCP server {self.label!r} failed during {name}: {_reason(exc)}"
                                 + (f" (its stderr: {detail})" if detail else "")
                                 + "; the session will be reopened for the next call",
                                 server=self.label, reason="closed") from None
        return _answer(name, result)

    def _session_for_call(self) -> _Live:
        try:
            with self._lock:
                return self._open()
        except ConnectionError as exc:
            raise McpServerError(f"the MCP server {self.label!r} is unavailable: {exc}", server=self.label,
                                 reason="unavailable") from None

    def _send(self, live: _Live, name: str, arguments: dict[str, Any]) -> Any:
        portal, session = live.portal, live.session  # None when another call's failure just closed it
        if portal is None:
            raise ConnectionError("the session was closed by another call's failure")
        return portal.call(self._call, session, name, arguments)

    async def _call(self, session: Any, name: str, arguments: dict[str, Any]) -> Any:
        import anyio

        # Our own deadline, not the SDK's read timeout: cancelling the scope abandons the request,
        # which sends the server `notifications/cancelled`.
        with anyio.fail_after(self.timeout):
            return await session.call_tool(name, arguments)


def _run_loop(live: _Live, ready: threading.Event) -> None:
    import anyio
    from anyio.from_thread import BlockingPortal

    async def serve() -> None:
        async with BlockingPortal() as portal:
            live.portal = portal
            ready.set()
            await portal.sleep_until_stopped()

    try:
        anyio.run(serve)
    finally:
        ready.set()


@asynccontextmanager
async def _with_client(http: Any, transport: Any) -> AsyncIterator[Any]:
    async with http, transport as streams:
        yield streams


def _session_closed(session: Any) -> bool:
    """Whether the SDK already saw the session's stream end (the server died or hung up while idle).

    The SDK's only record of it is its dispatcher's private flag (mcp 2.3): read here and nowhere
    else; tests/compat/test_mcp_healing.py fails if an upgrade removes it."""
    return bool(getattr(getattr(session, "_dispatcher", None), "_closed", False))


def _answered(exc: BaseException) -> bool:
    """Whether `exc` is an error response the server sent, rather than the session failing."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    return isinstance(exc, MCPError) and exc.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT)


def _session_unknown(exc: BaseException) -> bool:
    """Whether a Streamable HTTP server refused a request for not knowing its session (HTTP 404: it
    restarted, or expired the session), which means it did not run it."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_REQUEST

    return isinstance(exc, MCPError) and exc.code == INVALID_REQUEST and "session" in exc.error.message.lower()


def _stderr_tail(live: _Live) -> str:
    if live.errlog is None:
        return ""
    try:
        live.errlog.flush()
        live.errlog.seek(0)
        return " ".join(live.errlog.read()[-500:].split())
    except (OSError, ValueError):
        return ""


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)  # an ExceptionGroup from the SDK's task groups
    if inner:
        return _reason(inner[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# --- the answer -----------------------------------------------------------------------------------


def _answer(name: str, result: Any) -> str | RichResult:
    text = result_text(result)
    if getattr(result, "is_error", False):
        raise ToolExecutionError(cap_result(text) or f"the MCP tool {name} reported an error")
    blocks = getattr(result, "content", None) or []
    structured = getattr(result, "structured_content", None)
    if structured is None and all(getattr(block, "type", "text") == "text" for block in blocks):
        return text  # the environment caps text
    dumped = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in blocks]
    return capped_rich_result(text, dumped, structured)


def capped_rich_result(text: str, content: list[dict[str, Any]], structured: Any) -> RichResult:
    """A RichResult within MAX_RESULT_CHARS: text blocks cut with a marker, blocks past the budget and
    a structured content that does not fit replaced by a marker naming their size."""
    budget = MAX_RESULT_CHARS
    kept: list[dict[str, Any]] = []
    for block in content:
        size = json_size(block)
        if size <= budget:
            kept.append(block)
            budget -= size
        elif block.get("type") == "text" and budget > 200:
            cut = dict(block, text=cap_result(str(block.get("text", "")), budget - 200))
            kept.append(cut)
            budget -= json_size(cut)
        else:
            kept.append({"type": "text", "text": f"[{block.get('type', 'content')} block of {size} characters "
                                                  f"left out: over the {MAX_RESULT_CHARS}-character result cap]"})
    note = ""
    if structured is not None and (size := json_size(structured)) > MAX_RESULT_CHARS:
        structured = None
        note = f"\n[structured content of {size} characters left out: over the {MAX_RESULT_CHARS}-character cap]"
    # room for both notes, so the environment's own cap (the same constant) leaves them whole
    text = (cap_result(text, MAX_RESULT_CHARS - len(note) - 60) or "") + note
    return RichResult(text, kept, structured)


def result_text(result: Any) -> str:
    """The text of a CallToolResult: its text blocks, other blocks named, else its structured content."""
    parts = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(getattr(block, "data", ""))
            parts.append(f"[{kind}: {getattr(block, 'mime_type', '?')}, {size} base64 chars]")
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            parts.append(getattr(resource, "text", None) or f"[resource: {getattr(resource, 'uri', '?')}]")
        elif kind == "resource_link":
            parts.append(f"[resource: {getattr(block, 'uri', '?')}]")
    if not parts and getattr(result, "structured_content", None) is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)
