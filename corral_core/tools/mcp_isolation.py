"""How an external MCP server keeps one trial's state from another's: a declaration's `isolation:`.

```yaml
isolation: [key, reset]                         # what the suite relies on (docs/mcp-client.md)
arguments: {state_key: "tau2/airline/{trial_id}"}   # fixed tool arguments, hidden from the agent
reset: {tool: reset_state, arguments: {state_key: "tau2/airline/{trial_id}"}}
```

- `process`: a session (for stdio, a server process) per trial, nothing more: isolates what the
  server keeps in memory only (the default with `session: trial`);
- `none`: nothing (the default with `session: shared`);
- `key`: `{trial_id}` (or `{episode_id}`) is templated into the server's command, environment or
  headers (a process per trial) or into fixed tool arguments (`arguments:`, with any session);
- `workdir`: each trial's server process runs in a fresh empty directory (`{server_dir}`), removed
  when the trial ends;
- `reset`: the `reset:` tool is called in the trial's session before its first call to the server.

The declaration must match what it says: a placeholder needs `key` (or `workdir` for
`{server_dir}`), `reset:` needs `reset`, and `key`/`workdir`/`reset` need what they name.
`{suite_dir}` (the suite file's folder) may be used anywhere.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral_core.tools.builtin.params import ToolDeclarationError
from corral_core.tools.errors import McpServerError, ToolExecutionError
from corral_core.tools.mcp_client import McpConnection
from corral_core.tools.trial_scope import TrialScope

__all__ = ["ISOLATION_MODES", "Isolation", "TrialServer", "isolation_from"]

ISOLATION_MODES = {
    "none": "nothing: every trial sees the same server state (the default with session: shared)",
    "process": "a session (a stdio process) per trial: isolates in-memory state only (default with session: trial)",
    "key": "{trial_id} / {episode_id} templated into the command, env, headers or fixed arguments",
    "workdir": "each trial's server process runs in a fresh empty directory, {server_dir}",
    "reset": "the reset: tool is called in the trial's session before its first call",
}
TRIAL_PLACEHOLDERS = ("trial_id", "episode_id")
_PLACEHOLDER = re.compile(r"\{(trial_id|episode_id|server_dir|suite_dir)\}")
LISTING_TRIAL_ID = "list-tools"  # what {trial_id} is for the server that lists the tools at load


def _fail(problem: str, name: str, key: str, fix: str) -> ToolDeclarationError:
    return ToolDeclarationError(problem, tool=name, key=key, fix=fix)


def placeholders(value: Any) -> set[str]:
    """The placeholders named anywhere in a string, list or mapping of them."""
    if isinstance(value, str):
        return set(_PLACEHOLDER.findall(value))
    if isinstance(value, Mapping):
        return set().union(*(placeholders(v) for v in value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(placeholders(v) for v in value)) if value else set()
    return set()


def fill(value: Any, values: Mapping[str, str]) -> Any:
    """`value` with each known placeholder replaced (strings inside lists and mappings too)."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, Mapping):
        return {k: fill(v, values) for k, v in value.items()}
    if isinstance(value, (list, tuple)):  # the same containers `placeholders` reads
        return [fill(v, values) for v in value]
    return value


@dataclass(frozen=True)
class Isolation:
    """A declaration's isolation: the modes it relies on, its fixed arguments and its reset call."""

    modes: frozenset[str]
    arguments: Mapping[str, Any] = field(default_factory=dict)  # name -> value (templated)
    reset_tool: str | None = None
    reset_arguments: Mapping[str, Any] = field(default_factory=dict)
    per_trial_process: bool = False  # the command, env, cwd or headers vary by trial

    @property
    def workdir(self) -> bool:
        return "workdir" in self.modes


def isolation_from(decl: Mapping[str, Any], name: str, mode: str) -> Isolation:
    """The declaration's `isolation:`, `arguments:` and `reset:`, checked against each other."""
    raw = decl.get("isolation", "process" if mode == "trial" else "none")
    listed = [raw] if isinstance(raw, str) else raw
    if not isinstance(listed, list) or not listed or not all(isinstance(m, str) for m in listed):
        raise _fail(f"isolation must be a mode or a list of modes, got {raw!r}.", name, "isolation",
                    f"write e.g. isolation: [key, reset] (modes: {', '.join(ISOLATION_MODES)}).")
    unknown = [m for m in listed if m not in ISOLATION_MODES]
    if unknown:
        raise _fail(f"unknown isolation mode {unknown[0]!r}.", name, "isolation",
                    f"use some of: {', '.join(ISOLATION_MODES)}.")
    modes = frozenset(listed)
    if len(modes) > 1 and modes & {"none", "process"}:
        raise _fail("isolation none or process is a mode of its own, not one to combine.", name, "isolation",
                    "write isolation: process, or list the ones that combine: key, workdir, reset.")
    if mode == "shared" and "process" in modes:
        raise _fail("isolation: process needs a process per trial, but session: shared runs one for all.", name,
                    "isolation", "write session: trial, or isolation: key with arguments: {...: \"{trial_id}\"}.")
    arguments = decl.get("arguments") or {}
    if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
        raise _fail("arguments must map tool argument names to values.", name, "arguments",
                    'write arguments: {state_key: "{trial_id}"}.')
    reset_tool, reset_arguments = _reset(decl.get("reset"), name, modes)
    server_side = {key: decl.get(key) for key in ("command", "env", "cwd", "headers", "url")}
    used = {key: placeholders(value) - {"suite_dir"} for key, value in
            {**server_side, "arguments": arguments, "reset": reset_arguments}.items()}
    trial_keys = [key for key, names in used.items() if names & set(TRIAL_PLACEHOLDERS)]
    if trial_keys and "key" not in modes:
        raise _fail(f"{trial_keys[0]} names {{trial_id}} or {{episode_id}}, but isolation does not say key.", name,
                    "isolation", "add key to isolation: (e.g. isolation: [key]), or remove the placeholder.")
    if "key" in modes and not [k for k in trial_keys if k != "reset"]:
        raise _fail("isolation: key, but no command, env, headers or arguments value names {trial_id} "
                    "or {episode_id}.", name, "isolation",
                    'give the trial its own namespace, e.g. arguments: {state_key: "{trial_id}"}.')
    dir_keys = [key for key, names in used.items() if "server_dir" in names]
    if dir_keys and "workdir" not in modes:
        raise _fail(f"{dir_keys[0]} names {{server_dir}}, which only isolation: workdir gives.", name, "isolation",
                    "add workdir to isolation:, or remove {server_dir}.")
    if "server_dir" in used["arguments"] or "server_dir" in used["reset"]:
        raise _fail("{server_dir} is the server process's directory: use it in command or env, not arguments.",
                    name, "arguments", "move it to env: (e.g. env: {STATE_DIR: \"{server_dir}\"}).")
    per_trial_process = any(used[key] for key in server_side) or "workdir" in modes
    if per_trial_process and mode == "shared":
        where = next((key for key in server_side if used[key]), "isolation")
        raise _fail(f"{where} varies by trial, but session: shared runs one server process for all trials.", name,
                    where, "write session: trial, or move the placeholder into arguments: (fixed tool arguments).")
    if per_trial_process and decl.get("url") is not None and (used["url"] or "workdir" in modes):
        raise _fail("an HTTP server is not started per trial: its url cannot vary, nor can it get a directory.",
                    name, "url", "use a command (stdio) server, or isolate through arguments: and headers:.")
    if "workdir" in modes and decl.get("cwd") is not None:
        raise _fail("isolation: workdir runs the server in a fresh directory, so cwd: has no place.", name, "cwd",
                    "remove cwd: (name the suite's files with {suite_dir}/...).")
    return Isolation(modes, dict(arguments), reset_tool, reset_arguments, per_trial_process)


def _reset(value: Any, name: str, modes: frozenset[str]) -> tuple[str | None, dict[str, Any]]:
    if value is None:
        if "reset" in modes:
            raise _fail("isolation: reset, but no reset: tool is named.", name, "reset",
                        'add reset: {tool: reset_state, arguments: {state_key: "{trial_id}"}}.')
        return None, {}
    if "reset" not in modes:
        raise _fail("reset: is given, but isolation does not say reset.", name, "isolation",
                    "add reset to isolation: (e.g. isolation: [key, reset]).")
    if isinstance(value, str):
        value = {"tool": value}
    if not isinstance(value, Mapping) or not isinstance(value.get("tool"), str) or set(value) - {"tool", "arguments"}:
        raise _fail("reset must be a tool name or {tool: NAME, arguments: {...}}.", name, "reset",
                    'write reset: {tool: reset_state, arguments: {state_key: "{trial_id}"}}.')
    arguments = value.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise _fail("reset's arguments must be a mapping.", name, "reset", "write arguments: {name: value}.")
    return str(value["tool"]), dict(arguments)


def trial_values(scope: TrialScope | None, suite_dir: Path, server_dir: str = "") -> dict[str, str]:
    """What the placeholders stand for in one trial (`scope` None: the server listing the tools at load)."""
    trial = scope.trial_id if scope is not None else LISTING_TRIAL_ID
    episode = scope.episode_id if scope is not None else LISTING_TRIAL_ID
    return {"trial_id": trial, "episode_id": episode, "server_dir": server_dir, "suite_dir": str(suite_dir)}


class TrialServer:
    """One trial's use of an MCP server: its own connection (or the shared one), its placeholder
    values, its fresh directory, and the reset call made before its first call."""

    def __init__(self, shared: McpConnection, scope: TrialScope, isolation: Isolation, decl: Mapping[str, Any],
                 suite_dir: Path, own_session: bool) -> None:
        self.isolation = isolation
        self._server_dir = tempfile.mkdtemp(prefix=f"corral-mcp-{shared.label}-") if isolation.workdir else ""
        self.values = trial_values(scope, suite_dir, self._server_dir)
        self._owns = own_session
        if not own_session:
            self.connection = shared
        elif isolation.per_trial_process:
            self.connection = shared.copy(**server_settings(decl, shared, self.values,
                                                            Path(self._server_dir) if isolation.workdir else None))
        else:
            self.connection = shared.copy()
        self._reset_pending = isolation.reset_tool is not None
        self._lock = threading.Lock()

    def call(self, tool: str, arguments: dict[str, Any], fixed: Mapping[str, Any]) -> Any:
        self._reset_once()
        return self.connection.call(tool, {**arguments, **fill(dict(fixed), self.values)})

    def _reset_once(self) -> None:
        with self._lock:
            if not self._reset_pending or self.isolation.reset_tool is None:
                return
            tool = self.isolation.reset_tool
            try:
                self.connection.call(tool, fill(dict(self.isolation.reset_arguments), self.values))
            except ToolExecutionError as exc:  # the server's own error: the world was not reset
                label = self.connection.label
                raise McpServerError(f"the MCP server {label!r} did not reset the trial's state ({tool}): {exc}",
                                     server=label, reason="unavailable") from None
            self._reset_pending = False

    def close(self) -> None:
        if self._owns:
            self.connection.close()
        if self._server_dir:
            shutil.rmtree(self._server_dir, ignore_errors=True)


def server_settings(decl: Mapping[str, Any], base: McpConnection, values: Mapping[str, str],
                    server_dir: Path | None) -> dict[str, Any]:
    """The command, env, headers and cwd of one trial's server, its placeholders filled."""
    command = None if base.command is None else [str(fill(part, values)) for part in base.command]
    env = {k: str(fill(v, values)) for k, v in base.env.items()}
    headers = {k: str(fill(v, values)) for k, v in base.headers.items()}
    cwd = server_dir if server_dir is not None else base.cwd
    return {"command": command, "env": env, "headers": headers, "cwd": cwd}
