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
    timeout: 30                          # seconds for each call (and for starting, unless start_timeout)
    start_timeout: 60                    # seconds for starting the server and listing its tools
    session: trial                       # trial: a session (a process, for stdio) per trial; or shared
```

The server is started (or connected to) when the suite loads: its `tools/list` gives the tools'
names, descriptions and input schemas, which become ordinary Tools, so validation, verbosity
rendering, risk levels and approvals apply to them as to any other. With `session: trial` (the
default) each trial opens its own session on its first call and closes it when the trial ends, so a
server's in-memory state is each trial's own (state it keeps on disk is not: see `isolation:`,
mcp_isolation.py) and one trial's hung or dead session is never its
neighbours'; `session: shared` keeps one session for the whole process, which every trial sees.
Sessions heal (mcp_client.py): a call that overruns `timeout` is cancelled and its session
reopened, a dead server is restarted for the next call, results are capped. A call whose result has
`isError: true` is an `execution_error` carrying the server's text; a server that timed out or
broke raises `McpServerError`, an environment failure.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import tempfile
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corral_core.tools.base import RichResult, RiskLevel, Tool
from corral_core.tools.builtin.params import ToolDeclarationError
from corral_core.tools.errors import ToolArgumentError, ToolDefinitionError, ToolExecutionError
from corral_core.tools.mcp_client import DEFAULT_TIMEOUT, McpConnection, result_text
from corral_core.tools.mcp_isolation import Isolation, TrialServer, isolation_from, server_settings, trial_values
from corral_core.tools.schema import parameters_problem
from corral_core.tools.trial_scope import current_trial_scope

__all__ = ["MCP_KEYS", "SESSION_MODES", "McpConnection", "close_all_connections", "mcp_tools", "result_text"]

MCP_OPTIONS = {  # the keys of a `type: mcp` declaration besides name, type, description and risk (docs/kinds.md)
    "command": "a stdio server's command line, relative to the suite file",
    "url": "a Streamable HTTP server's address",
    "headers": "HTTP headers for a url server",
    "env": "environment variables for a command server",
    "cwd": "the working directory of a command server",
    "tools": "which of its tools (default: all it lists)",
    "prefix": "put before each tool's name, to avoid clashes",
    "risks": "{tool: level}: per-tool risk levels",
    "timeout": "seconds for each call",
    "start_timeout": "seconds to start and list its tools (default: timeout)",
    "session": "trial (a session per trial, the default) or shared",
    "isolation": "how trials are kept apart: none, process, or some of key, workdir, reset (docs/mcp-client.md)",
    "arguments": "fixed tool arguments, hidden from the agent, e.g. {state_key: \"{trial_id}\"}",
    "reset": "{tool, arguments}: a tool called in each trial's session before its first call",
}
MCP_KEYS = ("name", "type", "description", "risk", *MCP_OPTIONS)
SESSION_MODES = ("trial", "shared")
_connections: dict[tuple[Any, ...], McpConnection] = {}
_trial_connections: weakref.WeakSet[McpConnection] = weakref.WeakSet()
_connections_lock = threading.Lock()


def close_all_connections() -> None:
    """Close every MCP session this process opened (at exit; tests may call it)."""
    with _connections_lock:
        connections = list(_connections.values()) + list(_trial_connections)
        _connections.clear()
        _trial_connections.clear()
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


def _seconds(value: Any, name: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise _fail(f"{key} must be a positive number of seconds, got {value!r}.", name, key,
                    f"write e.g. {key}: 30.")
    return float(value)


def _connection(decl: Mapping[str, Any], name: str, base_dir: Path, isolation: Isolation
                ) -> tuple[McpConnection, McpConnection]:
    """(the declaration as written, its placeholders unfilled: what each trial's server is made from;
    the connection that lists the tools at load, and the one a shared session uses)."""
    command, url = decl.get("command"), decl.get("url")
    if (command is None) == (url is None):
        raise _fail("an mcp tool needs either command (a stdio server) or url (Streamable HTTP).", name, "command",
                    "add command: [program, arg, ...] or url: http://host:port/mcp.")
    timeout = _seconds(decl.get("timeout", DEFAULT_TIMEOUT), name, "timeout")
    start_timeout = _seconds(decl.get("start_timeout", timeout), name, "start_timeout")
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
        if "/" in argv[0] and not os.path.isabs(argv[0]) and "{" not in argv[0]:
            argv[0] = str((base_dir / argv[0]).resolve())
        if isolation.workdir:
            _check_workdir_arguments(argv, name, base_dir)
    elif not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise _fail(f"url must be an http(s) URL, got {url!r}.", name, "url", "write url: http://host:port/mcp.")
    template = McpConnection(name, command=argv, url=url, env=env, cwd=cwd, headers=headers, timeout=timeout,
                             start_timeout=start_timeout)
    loading = server_settings(decl, template, trial_values(None, base_dir), None)
    key = (tuple(loading["command"] or ()), url, str(cwd), tuple(sorted(loading["env"].items())),
           tuple(sorted(loading["headers"].items())), timeout, start_timeout, isolation.workdir)
    with _connections_lock:
        connection = _connections.get(key)
        if connection is None:
            connection = template.copy(**loading)
            _connections[key] = connection
    return template, connection


def _check_workdir_arguments(argv: list[str], name: str, base_dir: Path) -> None:
    """With isolation: workdir the server starts in an empty directory: a file of the suite's named
    relative to the suite folder would not be found there."""
    for part in argv[1:]:
        if part and not os.path.isabs(part) and "{" not in part and not part.startswith("-") \
                and (base_dir / part).exists():
            raise _fail(f"command names {part!r} relative to the suite folder, but isolation: workdir starts the "
                        "server in a fresh empty directory.", name, "command",
                        f'write "{{suite_dir}}/{part}" instead.')


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
    mode = decl.get("session", "trial")
    if mode not in SESSION_MODES:
        raise _fail(f"session must be trial or shared, got {mode!r}.", name, "session",
                    "write session: trial (a session per trial) or session: shared (one for all trials).")
    isolation = isolation_from(decl, name, mode)
    template, connection = _connection(decl, name, base_dir, isolation)
    listing_dir = tempfile.mkdtemp(prefix=f"corral-mcp-{name}-list-") if isolation.workdir else None
    lister = connection
    if listing_dir is not None:  # the server that lists the tools gets a directory of its own too
        lister = connection.copy(**server_settings(decl, template, trial_values(None, base_dir, listing_dir),
                                                   Path(listing_dir)))
    try:
        listed = lister.start()
    except ConnectionError as exc:
        raise _fail(str(exc), name, "url" if connection.url else "command",
                    "check that the server starts (run the command yourself) or that the URL answers.") from None
    finally:
        if listing_dir is not None:
            lister.close()
            shutil.rmtree(listing_dir, ignore_errors=True)
    connection.tools = listed
    if mode == "trial":
        connection.close()  # listed; each trial opens its own session
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
    if isolation.reset_tool is not None and isolation.reset_tool not in by_name:
        raise _fail(f"the server has no tool {isolation.reset_tool!r} to reset with.", name, "reset",
                    f"use one of: {', '.join(by_name)}.")
    schemas = {remote: _parameters(by_name[remote].get("inputSchema")) for remote in chosen}
    unused = [arg for arg in isolation.arguments if not any(arg in schemas[r]["properties"] for r in chosen)]
    if unused:
        raise _fail(f"arguments names {', '.join(map(repr, unused))}, which none of its tools takes.", name,
                    "arguments", "name arguments of the server's tools (their input schemas list them).")
    prefix = str(decl.get("prefix") or "")
    made: list[Tool] = []
    for remote in chosen:
        schema = schemas[remote]
        fixed = {arg: value for arg, value in isolation.arguments.items() if arg in schema["properties"]}
        schema = _without(schema, fixed)  # the agent never sees, nor sets, a fixed argument
        problem = parameters_problem(schema)
        if problem:
            raise _fail(f"the server's tool {remote!r} has an input schema we cannot use: {problem}.", name, "tools",
                        f"leave {remote!r} out with tools: [...].")

        def call(_remote: str = remote, _fixed: Mapping[str, Any] = fixed, **arguments: Any) -> str | RichResult:
            server = _session(template, connection, mode, isolation, decl, base_dir)
            if server is None:  # outside any trial
                if isolation.modes & {"key", "workdir", "reset"}:
                    raise ToolExecutionError(f"the MCP server {name!r} keeps trials apart (isolation: "
                                             f"{', '.join(sorted(isolation.modes))}): call its tools in a trial")
                return connection.call(_remote, {**arguments, **_fixed})
            answer: str | RichResult = server.call(_remote, arguments, _fixed)
            return answer

        try:
            made.append(McpTool(prefix + remote, by_name[remote].get("description") or "", schema, call,
                                risk=levels.get(remote, default_risk)))
        except ToolDefinitionError as exc:
            raise _fail(str(exc), name, "tools", f"leave {remote!r} out, or set prefix: to rename it.") from None
    return made


def _session(template: McpConnection, shared: McpConnection, mode: str, isolation: Isolation,
             decl: Mapping[str, Any], base_dir: Path) -> TrialServer | None:
    """The running trial's use of the server (its own session in `trial` mode, the shared one else),
    or None outside any trial."""
    scope = current_trial_scope()
    if scope is None:
        return None

    def open_one() -> TrialServer:
        source = template if isolation.per_trial_process else shared
        server = TrialServer(source if mode == "trial" else shared, scope, isolation, decl, base_dir,
                             own_session=mode == "trial")
        if mode == "trial":
            server.connection.tools = shared.tools
            with _connections_lock:  # also closed at exit if its trial never ends (held weakly)
                _trial_connections.add(server.connection)
        return server

    return scope.resource(shared, open_one)


def _without(schema: dict[str, Any], fixed: Mapping[str, Any]) -> dict[str, Any]:
    if not fixed:
        return schema
    shown = dict(schema)
    shown["properties"] = {k: v for k, v in schema["properties"].items() if k not in fixed}
    shown["required"] = [r for r in schema.get("required", []) if r not in fixed]
    return shown


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
