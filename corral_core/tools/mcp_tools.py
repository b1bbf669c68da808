"""Tools of an external MCP server (stdio command or Streamable HTTP URL) as environment tools.

```yaml
tools:
  - name: notes                          # a label for the server (messages, and the default prefix "")
    type: mcp
    command: [python3, notes_server.py]  # stdio: the program and its arguments (cwd: the suite's folder)
    # url: http://127.0.0.1:9000/mcp     # or Streamable HTTP, with optional headers: {...}
    tools: [add_note, delete_note]       # which of its tools (default: all of them)
    risk: safe                           # the default risk level of its tools
    risks: {delete_note: blocked, add_note: confirm}
    timeout: 30                          # seconds for starting, listing and each call
```

The server is started (or connected to) once, when the suite loads: its `tools/list` gives the
tools' names, descriptions and input schemas, which become ordinary Tools, so validation, verbosity
rendering, risk levels and approvals apply to them as to any other. The session then stays open on
a background thread (the SDK is asynchronous; our tools are called from worker threads) until the
process ends, shared by every trial: a stateful external server sees all of them. A call whose
result has `isError: true` is an `execution_error` carrying the server's text.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import tempfile
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from corral_core.tools.base import RichResult, RiskLevel, Tool
from corral_core.tools.builtin.params import ToolDeclarationError
from corral_core.tools.errors import ToolArgumentError, ToolDefinitionError, ToolExecutionError
from corral_core.tools.schema import parameters_problem

__all__ = ["MCP_KEYS", "McpConnection", "close_all_connections", "mcp_tools"]

MCP_KEYS = ("name", "type", "description", "command", "url", "headers", "env", "cwd", "tools", "prefix", "risk",
            "risks", "timeout")
DEFAULT_TIMEOUT = 30.0
_connections: dict[tuple[Any, ...], McpConnection] = {}
_connections_lock = threading.Lock()


class McpConnection:
    """One open client session with an MCP server, served by a private event loop thread."""

    def __init__(self, label: str, *, command: list[str] | None = None, url: str | None = None,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        if (command is None) == (url is None):
            raise ValueError("an MCP connection needs a command or a url")
        self.label = label
        self.command = command
        self.url = url
        self.env = dict(env or {})
        self.cwd = cwd
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.tools: list[dict[str, Any]] = []
        self._thread: threading.Thread | None = None
        self._portal: Any = None
        self._session_cm: AbstractContextManager[Any] | None = None
        self._session: Any = None
        self._errlog: Any = None
        self._lock = threading.Lock()

    def start(self) -> list[dict[str, Any]]:
        """Connect, initialize and list the server's tools ({name, description, inputSchema})."""
        with self._lock:
            if self._session is not None:
                return self.tools
            # the server's stderr, kept for error messages; closed with the connection
            self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            ready = threading.Event()
            # A daemon thread: a session left open never keeps the interpreter from exiting.
            self._thread = threading.Thread(target=self._run_loop, args=(ready,), name=f"mcp-{self.label}",
                                            daemon=True)
            self._thread.start()
            ready.wait()
            try:
                if self._portal is None:
                    raise RuntimeError("the event loop thread did not start")
                self._session_cm = self._portal.wrap_async_context_manager(self._connect())
                self._session = self._session_cm.__enter__()
                self.tools = self._portal.call(self._list_tools)
            except BaseException as exc:
                detail = self._stderr_tail()
                self._shutdown()
                where = " ".join(self.command) if self.command else self.url
                raise ConnectionError(f"cannot use the MCP server {where}: {_reason(exc)}"
                                      + (f" (its stderr: {detail})" if detail else "")) from None
        return self.tools

    def _run_loop(self, ready: threading.Event) -> None:
        import anyio
        from anyio.from_thread import BlockingPortal

        async def serve() -> None:
            async with BlockingPortal() as portal:
                self._portal = portal
                ready.set()
                await portal.sleep_until_stopped()

        try:
            anyio.run(serve)
        finally:
            ready.set()

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Any]:
        import anyio
        from mcp import ClientSession

        if self.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env or None,
                                           cwd=str(self.cwd) if self.cwd else None)
            transport: Any = stdio_client(params, errlog=self._errlog)
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=self.headers, timeout=httpx2.Timeout(self.timeout))
            transport = _with_client(http, streamable_http_client(str(self.url), http_client=http))
        async with transport as streams, ClientSession(*streams) as session:
            with anyio.fail_after(self.timeout):
                await session.initialize()
            yield session

    async def _list_tools(self) -> list[dict[str, Any]]:
        import anyio

        listed: list[dict[str, Any]] = []
        cursor = None
        with anyio.fail_after(self.timeout):
            while True:
                page = await self._session.list_tools(cursor=cursor) if cursor else await self._session.list_tools()
                listed += [{"name": t.name, "description": t.description or "", "inputSchema": dict(t.input_schema)}
                           for t in page.tools]
                cursor = getattr(page, "next_cursor", None)
                if not cursor:
                    return listed

    def call(self, name: str, arguments: dict[str, Any]) -> str | RichResult:
        """Call a tool: its text content, or a RichResult when it answered with more than text (image,
        audio or resource blocks, structured content); ToolExecutionError with the server's text on isError."""
        if self._portal is None or self._session is None:
            raise ToolExecutionError(f"the MCP server {self.label!r} is not connected")
        try:
            result = self._portal.call(self._call, name, arguments)
        except TimeoutError:
            raise ToolExecutionError(f"the MCP server {self.label!r} did not answer within {self.timeout:g}s") from None
        except Exception as exc:  # the session broke (server exited, connection lost)
            raise ToolExecutionError(f"the MCP server {self.label!r} failed: {_reason(exc)}") from None
        text = result_text(result)
        if getattr(result, "is_error", False):
            raise ToolExecutionError(text or f"the MCP tool {name} reported an error")
        blocks = getattr(result, "content", None) or []
        structured = getattr(result, "structured_content", None)
        if structured is not None or any(getattr(block, "type", "text") != "text" for block in blocks):
            dumped = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in blocks]
            return RichResult(text, dumped, structured)
        return text

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        import anyio

        with anyio.fail_after(self.timeout):
            return await self._session.call_tool(name, arguments)

    def _stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            return " ".join(self._errlog.read()[-500:].split())
        except (OSError, ValueError):
            return ""

    def close(self) -> None:
        """End the session (a stdio server process is stopped)."""
        with self._lock:
            self._shutdown()

    def _shutdown(self) -> None:
        session_cm, portal, thread = self._session_cm, self._portal, getattr(self, "_thread", None)
        self._session_cm = self._session = self._portal = None
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
                thread.join(self.timeout)
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None


@asynccontextmanager
async def _with_client(http: Any, transport: Any) -> AsyncIterator[Any]:
    async with http, transport as streams:
        yield streams


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


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)  # an ExceptionGroup from the SDK's task groups
    if inner:
        return _reason(inner[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def close_all_connections() -> None:
    """Close every MCP session this process opened (at exit; tests may call it)."""
    with _connections_lock:
        connections = list(_connections.values())
        _connections.clear()
    for connection in connections:
        connection.close()


atexit.register(close_all_connections)


# --- the YAML declaration -----------------------------------------------------------------------


def _fail(problem: str, name: str, key: str, fix: str) -> ToolDeclarationError:
    return ToolDeclarationError(problem, tool=name, key=key, fix=fix)


def _strings(value: Any, name: str, key: str, fix: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _fail(f"{key} must be a mapping of names to text.", name, key, fix)
    return {k: str(v) for k, v in value.items()}


def _risk(value: Any, name: str, key: str) -> RiskLevel:
    if isinstance(value, RiskLevel):
        return value
    try:
        return RiskLevel(str(value).strip().lower())
    except ValueError:
        raise _fail(f"unknown risk level {value!r}.", name, key, "use safe, confirm or blocked.") from None


def _connection(decl: Mapping[str, Any], name: str, base_dir: Path) -> McpConnection:
    command, url = decl.get("command"), decl.get("url")
    if (command is None) == (url is None):
        raise _fail("an mcp tool needs either command (a stdio server) or url (Streamable HTTP).", name, "command",
                    "add command: [program, arg, ...] or url: http://host:port/mcp.")
    timeout = decl.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise _fail(f"timeout must be a positive number of seconds, got {timeout!r}.", name, "timeout",
                    "write e.g. timeout: 30.")
    cwd = base_dir
    if decl.get("cwd") is not None:
        cwd = (base_dir / str(decl["cwd"])).resolve()
        if not cwd.is_dir():
            raise _fail(f"cwd {str(cwd)!r} is not a directory.", name, "cwd",
                        "give an existing directory (relative to the suite file).")
    env = _strings(decl.get("env"), name, "env", "write env: {NAME: value}.")
    headers = _strings(decl.get("headers"), name, "headers", "write headers: {Authorization: Bearer ...}.")
    argv: list[str] | None = None
    if command is not None:
        argv = shlex.split(command) if isinstance(command, str) else command
        if not isinstance(argv, list) or not argv or not all(isinstance(a, (str, int, float)) for a in argv):
            raise _fail("command must be a program and its arguments.", name, "command",
                        "write command: [python3, server.py] (relative to the suite file).")
        argv = [str(a) for a in argv]
        if "/" in argv[0] and not os.path.isabs(argv[0]):
            argv[0] = str((base_dir / argv[0]).resolve())
    elif not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise _fail(f"url must be an http(s) URL, got {url!r}.", name, "url", "write url: http://host:port/mcp.")
    key = (tuple(argv or ()), url, str(cwd), tuple(sorted(env.items())), tuple(sorted(headers.items())),
           float(timeout))
    with _connections_lock:
        connection = _connections.get(key)
        if connection is None:
            connection = McpConnection(name, command=argv, url=url, env=env, cwd=cwd, headers=headers,
                                       timeout=float(timeout))
            _connections[key] = connection
    return connection


def mcp_tools(decl: Mapping[str, Any], base_dir: Path) -> list[Tool]:
    """The Tools of one `type: mcp` declaration (connecting to the server to list them)."""
    name = str(decl.get("name"))
    for key in decl:
        if key not in MCP_KEYS:
            raise _fail(f"unknown key '{key}' for an mcp tool.", name, str(key), f"use one of: {', '.join(MCP_KEYS)}.")
    default_risk = _risk(decl.get("risk", "safe"), name, "risk")
    risks = decl.get("risks") or {}
    if not isinstance(risks, Mapping):
        raise _fail("risks must map tool names to risk levels.", name, "risks", "write risks: {delete: blocked}.")
    levels = {str(tool): _risk(level, name, "risks") for tool, level in risks.items()}
    connection = _connection(decl, name, base_dir)
    try:
        listed = connection.start()
    except ConnectionError as exc:
        raise _fail(str(exc), name, "url" if connection.url else "command",
                    "check that the server starts (run the command yourself) or that the URL answers.") from None
    by_name = {tool["name"]: tool for tool in listed}
    wanted = decl.get("tools")
    if wanted is None:
        chosen = list(by_name)
    elif isinstance(wanted, list) and all(isinstance(t, str) for t in wanted):
        missing = [t for t in wanted if t not in by_name]
        if missing:
            raise _fail(f"the server has no tool {', '.join(map(repr, missing))}.", name, "tools",
                        f"use some of: {', '.join(by_name) or 'none (it lists no tools)'}.")
        chosen = list(wanted)
    else:
        raise _fail("tools must be a list of the server's tool names.", name, "tools", "write tools: [a, b].")
    unknown = [t for t in levels if t not in by_name]  # a typo; a tool left out by tools: may keep its level
    if unknown:
        raise _fail(f"risks names {', '.join(map(repr, unknown))}, which the server does not have.", name,
                    "risks", f"use some of: {', '.join(by_name)}.")
    prefix = str(decl.get("prefix") or "")
    made: list[Tool] = []
    for remote in chosen:
        listed_tool = by_name[remote]
        schema = _parameters(listed_tool.get("inputSchema"))
        problem = parameters_problem(schema)
        if problem:
            raise _fail(f"the server's tool {remote!r} has an input schema we cannot use: {problem}.", name, "tools",
                        f"leave {remote!r} out with tools: [...].")

        def call(_remote: str = remote, **arguments: Any) -> str | RichResult:
            return connection.call(_remote, arguments)

        try:
            made.append(McpTool(prefix + remote, listed_tool.get("description") or "", schema, call,
                                risk=levels.get(remote, default_risk)))
        except ToolDefinitionError as exc:
            raise _fail(str(exc), name, "tools", f"leave {remote!r} out, or set prefix: to rename it.") from None
    return made


class McpTool(Tool):
    """A tool of an external MCP server. Besides our checks, its arguments are validated against the
    server's input schema with a real JSON Schema validator (`$ref`/`$defs`, minimum/maximum, pattern,
    oneOf, ...), so a call the server would refuse is `invalid_args` before it is sent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from jsonschema import exceptions, validators

        schema = self.parameters
        checker = validators.validator_for(schema, default=validators.Draft202012Validator)
        try:
            checker.check_schema(schema)
        except exceptions.SchemaError as exc:
            raise ToolDefinitionError(f"Tool '{self.name}': its input schema is not valid JSON Schema "
                                      f"({exc.message}).") from None
        self._validator = checker(schema)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        checked = super().validate(arguments)
        from jsonschema.exceptions import best_match

        error = best_match(self._validator.iter_errors(checked))
        if error is not None:
            where = ".".join(str(part) for part in error.absolute_path) or "the arguments"
            raise ToolArgumentError(f"Invalid value for {where}: {error.message}")
        return checked


def _parameters(schema: Any) -> dict[str, Any]:
    """An MCP input schema as our parameters object (`type: object`, properties, required)."""
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}, "required": []}
    cleaned = {k: v for k, v in schema.items() if k not in ("$schema", "title")}
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    cleaned["required"] = [r for r in cleaned.get("required", []) if r in cleaned["properties"]]
    return cleaned
