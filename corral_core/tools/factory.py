"""Tools from suite YAML declarations: builtin, http, cli, python, and registered custom types.

```yaml
tools:
  - {name: calculator, type: builtin}
  - {name: search, type: builtin, builtin: web_search, backend: duckduckgo, timeout: 8, max_results: 5}
  - name: weather
    type: http
    url: https://api.example.org/v1/{city}
    headers: {Authorization: "Bearer ${WEATHER_KEY}"}
    parameters: [{name: city, type: string, description: City name}]
  - {name: git, type: cli, binary: git, allowed_commands: [status, log], risk: confirm}
  - {name: lookup, type: python, import: "mypkg.tools:lookup"}
  - {name: notes, type: mcp, command: [python3, notes_server.py], risks: {delete_note: blocked}}
```

An `mcp` declaration brings in several tools (those of the external MCP server), so suites use
`build_tools`; see mcp_tools.py.

Every mistake raises `ToolDeclarationError` (a `UserError` and a `ValueError`) naming the tool,
the key and the fix.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from corral_core.pyfile import exits_refused, load_python_file
from corral_core.registry import Registry, did_you_mean
from corral_core.tools.base import RiskLevel, Tool
from corral_core.tools.builtin import (
    calculator_tool,
    cli_tool,
    datetime_tool,
    fetch_url_tool,
    http_tool,
    web_search_tool,
)
from corral_core.tools.builtin.params import ToolDeclarationError
from corral_core.tools.builtin.web_search import validate_backend
from corral_core.tools.decorator import tool
from corral_core.tools.errors import ToolDefinitionError
from corral_core.tools.mcp_tools import MCP_OPTIONS
from corral_core.tools.sandbox import sandbox_from, sandboxed_python_tool

ToolBuilder = Callable[[dict[str, Any], Path], Tool]  # register_tool_type's builders: (declaration, base_dir)
ToolSource = Callable[[dict[str, Any], str, Path, bool], Tool]  # (declaration, name, base_dir, allow_private)

RENDER_HINTS = ("text", "table", "json", "code")
BUILTIN_IDS = ("calculator", "datetime", "web_search", "fetch_url")
_BUILTIN_OPTIONS: dict[str, tuple[str, ...]] = {
    "calculator": (),
    "datetime": (),
    "web_search": ("backend", "timeout", "max_results"),
    "fetch_url": ("timeout", "max_chars", "max_bytes", "max_redirects"),
}
TOOL_SOURCES: Registry[ToolSource] = Registry(
    "tool_sources", "tool type", title="Tool sources", where="a suite's `tools:` list, `{name: ..., type: ...}`",
    common={"description": "what the agent is told the tool does", "risk": "safe, confirm or blocked",
            "render": "how the workbench shows its results: text, table, json or code"})
COMMON_KEYS = ("name", "type", *TOOL_SOURCES.common)

__all__ = [
    "ToolDeclarationError",
    "build_tool",
    "build_tools",
    "calculator_tool",
    "cli_tool",
    "datetime_tool",
    "fetch_url_tool",
    "http_tool",
    "register_tool_type",
    "web_search_tool",
]


def register_tool_type(type_name: str, builder: ToolBuilder) -> None:
    """Make `type: <type_name>` build tools with `builder(declaration, base_dir) -> Tool`.

    The builder checks its own keys; `risk`, `render` and `description` are applied after it.
    """
    if type_name in TOOL_SOURCES and TOOL_SOURCES.get(type_name).package is None:
        raise ValueError(f"tool type '{type_name}' is built in and cannot be replaced.")
    if not callable(builder):
        raise TypeError("builder must be callable(declaration, base_dir) -> Tool.")

    def source(decl: dict[str, Any], name: str, base: Path, allow_private: bool) -> Tool:
        return builder(decl, base)

    doc = (builder.__doc__ or "").strip().splitlines() or [f"tools built by {getattr(builder, '__qualname__', '?')}"]
    TOOL_SOURCES.add(type_name, source, doc=doc[0], open_keys=True, replace=True, package=_package_of(builder))


def _fail(problem: str, name: str, key: str, fix: str) -> ToolDeclarationError:
    return ToolDeclarationError(problem, tool=name, key=key, fix=fix)


def _known_types() -> str:
    return ", ".join(TOOL_SOURCES.names())


def _package_of(builder: object) -> str:
    return str(getattr(builder, "__module__", None) or "register_tool_type")


def _keys(kind: str) -> tuple[str, ...]:
    """The keys a declaration of `kind` may carry (its registered options, the common ones)."""
    return (*COMMON_KEYS, *TOOL_SOURCES.get(kind).options)


def _check_keys(decl: Mapping[str, Any], name: str, allowed: tuple[str, ...], kind: str) -> None:
    for key in decl:
        if key not in allowed:
            fix = f"remove it or use one of: {', '.join(allowed)}."
            raise _fail(f"unknown key '{key}' for a {kind} tool{did_you_mean(str(key), allowed)}.", name, str(key),
                        fix)


def _risk(decl: Mapping[str, Any], name: str) -> RiskLevel | None:
    if "risk" not in decl:
        return None
    try:
        return RiskLevel(str(decl["risk"]).strip().lower())
    except ValueError:
        raise _fail(f"unknown risk level {decl['risk']!r}.", name, "risk", "use safe, confirm or blocked.") from None


def _render(decl: Mapping[str, Any], name: str) -> str | None:
    if "render" not in decl:
        return None
    render = str(decl["render"]).strip().lower()
    if render not in RENDER_HINTS:
        fix = f"use one of: {', '.join(RENDER_HINTS)}."
        raise _fail(f"unknown render hint {decl['render']!r}.", name, "render", fix)
    return render


def _number(
    decl: Mapping[str, Any], key: str, name: str, default: Any, *, integer: bool = False, most: Any = None
) -> Any:
    """decl[key] (or default) if it is a positive number (an int when `integer`), at most `most`."""
    value = decl.get(key, default)
    wanted = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, wanted) or value <= 0:
        kind = "a positive integer" if integer else "a positive number"
        raise _fail(f"{key} must be {kind}, got {value!r}.", name, key, f"write e.g. {key}: {default}.")
    if most is not None and value > most:
        raise _fail(f"{key} must be at most {most}, got {value!r}.", name, key, f"use {most} or less.")
    return value


@TOOL_SOURCES.kind("builtin", doc="a tool that comes with corral-tui: calculator, datetime, web_search, fetch_url",
                   options={"builtin": "which one (default: the tool's name)",
                            "backend": "web_search: the search backend (default duckduckgo)",
                            "timeout": "web_search, fetch_url: seconds per call (default 10)",
                            "max_results": "web_search: results per search, at most 20 (default 5)",
                            "max_chars": "fetch_url: characters of text returned, at most 20000 (default 4000)",
                            "max_bytes": "fetch_url: bytes read (default 2000000)",
                            "max_redirects": "fetch_url: redirects followed (default 5)"},
                   open_keys=True)  # checked per builtin by _builtin
def _builtin_source(decl: dict[str, Any], name: str, base: Path, allow_private: bool) -> Tool:
    return _builtin(decl, name, allow_private)


def _builtin(decl: dict[str, Any], name: str, allow_private: bool) -> Tool:
    builtin_id = decl.get("builtin", name)
    if builtin_id not in BUILTIN_IDS:
        key = "builtin" if "builtin" in decl else "name"
        raise _fail(f"unknown builtin {builtin_id!r}.", name, key, f"use builtin: one of {', '.join(BUILTIN_IDS)}.")
    _check_keys(decl, name, (*COMMON_KEYS, "builtin", *_BUILTIN_OPTIONS[builtin_id]), f"builtin {builtin_id}")
    if builtin_id == "calculator":
        return calculator_tool(name=name)
    if builtin_id == "datetime":
        return datetime_tool(name=name)
    timeout = float(_number(decl, "timeout", name, 10))
    if builtin_id == "web_search":
        backend = str(decl.get("backend", "duckduckgo"))
        try:
            validate_backend(backend)
        except ValueError as exc:
            raise _fail(str(exc), name, "backend", "name a backend, e.g. backend: duckduckgo.") from None
        max_results = _number(decl, "max_results", name, 5, integer=True, most=20)
        return web_search_tool(backend=backend, timeout=timeout, max_results=max_results, name=name)
    max_redirects = decl.get("max_redirects", 5)
    if isinstance(max_redirects, bool) or not isinstance(max_redirects, int) or max_redirects < 0:
        raise _fail("max_redirects must be a whole number >= 0.", name, "max_redirects", "write e.g. max_redirects: 5.")
    return fetch_url_tool(
        allow_private=allow_private,
        timeout=timeout,
        max_chars=_number(decl, "max_chars", name, 4000, integer=True, most=20000),
        max_bytes=_number(decl, "max_bytes", name, 2_000_000, integer=True),
        max_redirects=max_redirects,
        name=name,
    )


@TOOL_SOURCES.kind("http", doc="a call to an HTTP API; {param} in the url is filled from the arguments",
                   options={"url": "the address, with {param} placeholders", "method": "GET (default), POST, ...",
                            "headers": "request headers; ${VAR} reads the environment",
                            "parameters": "the tool's arguments: [{name, type, description, ...}]",
                            "timeout": "seconds per call (default 30)",
                            "max_chars": "characters of the response returned (default 4000)"})
def _http_source(decl: dict[str, Any], name: str, base: Path, allow_private: bool) -> Tool:
    return _http(decl, name, allow_private)


def _http(decl: dict[str, Any], name: str, allow_private: bool) -> Tool:
    if "url" not in decl:
        raise _fail("an http tool needs a url.", name, "url", "add url: https://host/path/{param}.")
    return http_tool(
        name,
        decl["url"],
        description=str(decl.get("description", "")),
        method=str(decl.get("method", "GET")),
        headers=decl.get("headers"),
        parameters=decl.get("parameters"),
        timeout=float(_number(decl, "timeout", name, 30)),
        max_chars=_number(decl, "max_chars", name, 4000, integer=True),
        allow_private=allow_private,
    )


@TOOL_SOURCES.kind("cli", doc="a program run without a shell, in the trial's workspace",
                   options={"binary": "the program (a relative path is relative to the suite file)",
                            "allowed_commands": "the first arguments it may be given, such as [status, log]",
                            "parameters": "the tool's arguments: [{name, type, description, positional, ...}]",
                            "timeout": "seconds per call (default 30)", "cwd": "its working directory",
                            "end_of_options": "the program takes `--` as the end of its options",
                            "sandbox": "bubblewrap: run it inside bubblewrap (docs/security.md)"})
def _cli_source(decl: dict[str, Any], name: str, base: Path, allow_private: bool) -> Tool:
    return _cli(decl, name, base)


def _cli(decl: dict[str, Any], name: str, base_dir: Path) -> Tool:
    if "binary" not in decl:
        raise _fail("a cli tool needs a binary.", name, "binary", "add binary: <program name>.")
    binary = str(decl["binary"])
    if "/" in binary and not Path(binary).is_absolute():
        binary = str((base_dir / binary).resolve())  # ./scripts/x is relative to the suite file
    cwd = decl.get("cwd")
    if cwd is not None:
        cwd = (base_dir / str(cwd)).resolve()
        if not cwd.is_dir():
            fix = "give an existing directory (relative to the suite file)."
            raise _fail(f"cwd {str(cwd)!r} is not a directory.", name, "cwd", fix)
    allowed = decl.get("allowed_commands")
    if allowed is not None and not isinstance(allowed, list):
        fix = "write allowed_commands: [status, log]."
        raise _fail("allowed_commands must be a list.", name, "allowed_commands", fix)
    end_of_options = decl.get("end_of_options", False)
    if not isinstance(end_of_options, bool):
        fix = "write end_of_options: true if the program takes `--` as the end of its options, else leave it out."
        raise _fail("end_of_options must be true or false.", name, "end_of_options", fix)
    return cli_tool(
        name,
        binary,
        description=str(decl.get("description", "")),
        allowed_commands=allowed,
        parameters=decl.get("parameters"),
        timeout=float(_number(decl, "timeout", name, 30)),
        cwd=cwd,
        end_of_options=end_of_options,
        sandbox=sandbox_from(decl.get("sandbox"), tool=name),
    )


def _load_module(module_ref: str, base_dir: Path) -> ModuleType:
    """Import `package.module`, or load `path/file.py` (relative to base_dir) once per process."""
    if not module_ref.endswith(".py"):
        with exits_refused(module_ref):
            return importlib.import_module(module_ref)
    return load_python_file(base_dir / module_ref)


@TOOL_SOURCES.kind("python", doc="a @tool or documented function imported from a module or a .py file",
                   options={"import": "package.module:attr, or path/to/file.py:attr (relative to the suite file)",
                            "sandbox": "run it in a separate process inside bubblewrap (docs/security.md)",
                            "timeout": "seconds a sandboxed call may take (default 30)"})
def _python_source(decl: dict[str, Any], name: str, base: Path, allow_private: bool) -> Tool:
    return _python(decl, name, base)


@TOOL_SOURCES.kind("mcp", doc="every tool of an external MCP server (stdio or Streamable HTTP); docs/mcp-client.md",
                   options=MCP_OPTIONS, open_keys=True)  # checked by mcp_tools (render is not one)
def _mcp_source(decl: dict[str, Any], name: str, base: Path, allow_private: bool) -> Tool:
    raise _fail("an mcp declaration brings in several tools.", name, "type",
                "list it under a suite's tools: (build_tools), not as a single tool.")


def _python(decl: dict[str, Any], name: str, base_dir: Path) -> Tool:
    if "import" not in decl:
        raise _fail("a python tool needs import.", name, "import", "add import: package.module:attr.")
    reference = str(decl["import"])
    module_ref, _, attr = reference.partition(":")
    if not module_ref or not attr:
        fix = "write import: mypkg.tools:lookup (or path/to/file.py:lookup, relative to the suite file)."
        raise _fail(f"import {reference!r} is not of the form 'package.module:attr'.", name, "import", fix)
    try:
        module = _load_module(module_ref, base_dir)
    except Exception as exc:  # the author's module failed: say which and why
        problem = f"could not import {module_ref!r}: {type(exc).__name__}: {exc}."
        raise _fail(problem, name, "import", "check the module path and that it imports cleanly.") from None
    if not hasattr(module, attr):
        fix = "name a Tool or function in that module."
        raise _fail(f"{module_ref!r} has no attribute {attr!r}.", name, "import", fix)
    target = getattr(module, attr)
    sandbox = sandbox_from(decl.get("sandbox"), tool=name)
    if sandbox is not None:
        plain = _python({k: v for k, v in decl.items() if k not in ("sandbox", "timeout")}, name, base_dir)
        timeout = float(_number(decl, "timeout", name, 30))
        return sandboxed_python_tool(plain, decl, base_dir, sandbox, timeout)
    if isinstance(target, Tool):
        return target
    if callable(target):
        try:
            made: Tool = tool(target, name=name)
            return made
        except (ValueError, TypeError) as exc:  # the @tool docstring and type-hint rules, in words
            fix = "document the function as a @tool (Args: section, type hints)."
            raise _fail(str(exc), name, "import", fix) from None
    fix = "point import at a @tool object or a documented function."
    raise _fail(f"{reference!r} is a {type(target).__name__}, not a Tool or function.", name, "import", fix)


def _with_overrides(made: Tool, decl: Mapping[str, Any], name: str, kind: str) -> Tool:
    """The tool with the declaration's name (builtin/python), description, risk and render applied."""
    renamable = kind in ("builtin", "python")
    tool_name = name if renamable else made.name
    description = str(decl["description"]) if "description" in decl else made.description
    risk = _risk(decl, name) or made.risk
    render = _render(decl, name) or made.render
    if (tool_name, description, risk, render) == (made.name, made.description, made.risk, made.render):
        return made
    return Tool(
        tool_name, description, made.parameters, made.function, risk=risk, render=render, hidden_args=made.hidden_args
    )


def build_tools(
    decl: Mapping[str, Any], *, base_dir: Path | str = Path("."), allow_private: bool = False
) -> list[Tool]:
    """The Tools of one declaration: one, or for `type: mcp` each tool of the external MCP server."""
    if isinstance(decl, Mapping) and decl.get("type") == "mcp":
        name = decl.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ToolDeclarationError("the tool has no name.", key="name", fix="add name: <a label for the server>.")
        from corral_core.tools.mcp_tools import mcp_tools

        return mcp_tools(decl, Path(base_dir))
    return [build_tool(decl, base_dir=base_dir, allow_private=allow_private)]


def build_tool(
    decl: Mapping[str, Any], *, base_dir: Path | str = Path("."), allow_private: bool = False
) -> Tool:
    """Build one Tool from a YAML-shaped declaration; `risk`/`render` in it override the defaults.

    `base_dir` resolves relative paths (cli `cwd` and `binary`, python `import` of a .py file);
    `allow_private` lets fetch_url, and http tools' redirects, reach loopback and private addresses.
    """
    if not isinstance(decl, Mapping):
        raise ToolDeclarationError(
            f"a tool declaration must be a mapping, got {type(decl).__name__}.", fix="write {name: ..., type: ...}."
        )
    decl = dict(decl)
    base = Path(base_dir)
    name = decl.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolDeclarationError("the tool has no name.", key="name", fix="add name: <tool_name>.")
    kind = decl.get("type")
    if kind is not None and not isinstance(kind, str):
        raise _fail(f"type must be a name, got {kind!r}.", name, "type", f"use one of: {_known_types()}.")
    if kind is None and (decl.get("builtin") in BUILTIN_IDS or name in BUILTIN_IDS):
        kind = "builtin"
    if kind is None:
        raise _fail("the tool has no type.", name, "type", f"add type: one of {_known_types()}.")
    _risk(decl, name)  # bad values fail before anything is built
    _render(decl, name)
    try:
        made = _build(decl, name, kind, base, allow_private)
        return _with_overrides(made, decl, name, kind)
    except ToolDefinitionError as exc:  # e.g. a name OpenAI would refuse, said in our terms
        raise ToolDeclarationError(str(exc), tool=name, fix="fix the declaration as described.") from None


def _build(decl: dict[str, Any], name: str, kind: str, base: Path, allow_private: bool) -> Tool:
    if kind not in TOOL_SOURCES:
        raise _fail(f"unknown tool type {kind!r}{did_you_mean(kind, TOOL_SOURCES.names())}.", name, "type",
                    f"use one of: {_known_types()}.")
    source = TOOL_SOURCES.get(kind)
    if not source.open_keys:
        _check_keys(decl, name, _keys(kind), kind)
    made = source.factory(decl, name, base, allow_private)
    if not isinstance(made, Tool):
        problem = f"the builder for type '{kind}' returned {type(made).__name__}, not a Tool."
        raise _fail(problem, name, "type", "make the registered builder return a Tool.")
    return made
