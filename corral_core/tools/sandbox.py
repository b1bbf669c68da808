"""Sandboxed tools: `cli` and `python` tools run inside bubblewrap (`bwrap`) when declared with `sandbox:`.

In the sandbox the whole file system is read-only, the trial's workspace is the one writable path,
`/tmp` is empty and private, the user's home is hidden (an empty tmpfs, with only the paths the tool
itself needs bound back read-only: its program, or Python and the tool's module), there is no network
(a private network namespace: not even 127.0.0.1 of the host) unless the declaration says
`network: true`, and the tool's processes live in a PID namespace of their own: when the tool's process
ends, or its timeout kills it, everything it started ends with it.

    sandbox: bubblewrap                          # or
    sandbox: {backend: bubblewrap, network: true}

`docker` is recognised but refused: no container backend is implemented. A declared backend that is
missing is a declaration error (exit 2) that says how to install it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral_core.tools.base import Tool, ToolExecutionError
from corral_core.tools.builtin.params import ToolDeclarationError

BACKENDS = ("bubblewrap", "docker")
BWRAP = "bwrap"
INSTALL_BWRAP = "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install " \
                "bubblewrap`), or remove `sandbox:` from the tool to run it with your own rights."
_KEYS = ("backend", "network")
KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")  # the rest of the environment stays out


@dataclass(frozen=True)
class Sandbox:
    """How a tool is isolated: the backend's program and whether the network is shared."""

    bwrap: str
    network: bool = False

    def argv(self, command: list[str], *, workspace: str, read_only: Iterable[str] = (),
             env: Mapping[str, str] | None = None) -> list[str]:
        """`command` wrapped in bwrap: read-only root, `workspace` writable, home hidden, no network, and
        an environment of PATH, locale and `env` only (no provider key reaches the tool)."""
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        home = Path.home()
        if home != Path("/") and home.is_dir():
            args += ["--tmpfs", str(home)]  # the user's files are not the tool's
        for path in dict.fromkeys(os.path.realpath(p) for p in read_only):
            if os.path.exists(path) and path != "/":
                args += ["--ro-bind", path, path]  # what the tool needs back from under the hidden home or /tmp
        workspace = os.path.realpath(workspace)
        args += ["--bind", workspace, workspace, "--chdir", workspace,
                 "--unshare-all", *(["--share-net"] if self.network else []),
                 "--die-with-parent", "--new-session", "--clearenv"]
        kept = {name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ}
        for name, value in {**kept, "HOME": workspace, "TMPDIR": "/tmp", **(env or {})}.items():
            args += ["--setenv", name, value]
        return [*args, "--", *command]


def sandbox_from(declaration: Any, *, tool: str) -> Sandbox | None:
    """The Sandbox a tool's `sandbox:` value asks for (None: not sandboxed); refused when unusable."""
    if declaration is None or declaration is False:
        return None
    if isinstance(declaration, str):
        declaration = {"backend": declaration}
    if not isinstance(declaration, Mapping):
        raise ToolDeclarationError(f"sandbox must be a backend name or a mapping, not {declaration!r}.", tool=tool,
                                   key="sandbox", fix="write sandbox: bubblewrap (or {backend: bubblewrap, "
                                                      "network: true}).")
    unknown = sorted(set(map(str, declaration)) - set(_KEYS))
    if unknown:
        raise ToolDeclarationError(f"unknown key '{unknown[0]}' in sandbox.", tool=tool, key=f"sandbox.{unknown[0]}",
                                   fix=f"use {', '.join(_KEYS)}.")
    backend = str(declaration.get("backend", "bubblewrap")).strip().lower()
    network = declaration.get("network", False)
    if not isinstance(network, bool):
        raise ToolDeclarationError("sandbox.network must be true or false.", tool=tool, key="sandbox.network",
                                   fix="leave it out (no network) or write network: true.")
    if backend not in BACKENDS:
        raise ToolDeclarationError(f"unknown sandbox backend {backend!r}.", tool=tool, key="sandbox.backend",
                                   fix="use bubblewrap.")
    if backend == "docker":
        raise ToolDeclarationError("the docker sandbox backend is not implemented.", tool=tool,
                                   key="sandbox.backend", fix="use sandbox: bubblewrap.")
    program = shutil.which(BWRAP)
    if program is None:
        raise ToolDeclarationError("the tool asks for a bubblewrap sandbox, but `bwrap` is not on PATH.", tool=tool,
                                   key="sandbox", fix=INSTALL_BWRAP)
    return Sandbox(program, network=network)


def sandboxed_python_tool(made: Tool, declaration: Mapping[str, Any], base_dir: Path, sandbox: Sandbox,
                          timeout: float) -> Tool:
    """`made` (a python tool, loaded here for its schema and documentation) run instead in a new Python
    process inside `sandbox`, the trial's workspace its one writable path; killed after `timeout` s."""
    from corral_core.tools.builtin.cli import WORK_DIR_ARG, run_command

    module_ref = str(declaration["import"]).partition(":")[0]
    module_dir = str((base_dir / module_ref).parent) if module_ref.endswith(".py") else str(base_dir)
    own_hidden = set(made.hidden_args)
    request_base = {"declaration": {key: value for key, value in declaration.items() if key != "timeout"},
                    "base_dir": str(base_dir)}

    def run(**arguments: Any) -> str:
        workspace = arguments.get(WORK_DIR_ARG) or os.getcwd()
        passed = {k: v for k, v in arguments.items() if k != WORK_DIR_ARG or WORK_DIR_ARG in own_hidden}
        request = json.dumps({**request_base, "arguments": passed}, default=str)
        paths = python_paths()
        output = run_command([sys.executable, "-m", "corral_core.tools.sandbox_child"], cwd=str(workspace),
                             timeout=timeout, sandbox=sandbox, read_only=[*paths, module_dir], stdin=request,
                             max_chars=None, env={"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
        last = output.strip().rsplit("\n", 1)[-1]
        try:
            reply = json.loads(last)
        except json.JSONDecodeError:
            raise ToolExecutionError(f"the sandboxed tool gave no answer: {output[-500:]}") from None
        if "error" in reply:
            raise ToolExecutionError(str(reply["error"]))
        return str(reply["result"])

    hidden = (*made.hidden_args, *(() if WORK_DIR_ARG in own_hidden else (WORK_DIR_ARG,)))
    return Tool(made.name, made.description, made.parameters, run, risk=made.risk, render=made.render,
                hidden_args=hidden, doc=made.doc)


def python_paths() -> list[str]:
    """What a sandboxed Python needs to read: its interpreter, its prefixes and every import path."""
    engine = str(Path(__file__).resolve().parents[2])  # where corral_core is imported from (an editable install)
    return [os.path.dirname(os.path.realpath(sys.executable)), sys.prefix, sys.base_prefix, engine,
            *(entry for entry in sys.path if entry)]
