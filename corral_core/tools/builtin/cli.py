"""cli tools: one binary, a whitelist of subcommands, arguments mapped to --flags, never a shell.

Values carrying shell metacharacters are refused rather than stripped: stripping silently changes
what the agent asked for, and refusing tells it. No value can reach the program as an option: a
value starting with '-' is refused, except a number given to a parameter declared integer or number
(passed attached, `--limit=-1`), and positional values of a tool declared `end_of_options: true`
(passed after `--`, for programs that honour it). The binary must exist when the tool is declared.
The process runs in its own session so a timeout kills the whole process group, grandchildren too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from corral_core.tools.base import Tool, ToolExecutionError
from corral_core.tools.builtin.params import (
    ToolDeclarationError,
    positional_names,
    schema_from_parameters,
    truncate,
)

if TYPE_CHECKING:
    from corral_core.tools.sandbox import Sandbox

DEFAULT_TIMEOUT = 30.0
STDOUT_CHARS = 4000
ERROR_STDOUT_CHARS = 2000
ERROR_STDERR_CHARS = 2000
MAX_OUTPUT_BYTES = 64 * 1024  # read back at most this much of a command's output
SHELL_METACHARACTERS = frozenset(";|&`$(){}<>\n\r\x00")
WORK_DIR_ARG = "work_dir"  # hidden argument: the environment passes the trial workspace
END_OF_OPTIONS = "--"
NUMERIC_TYPES = frozenset({"integer", "number"})


def check_value(argument: str, value: str, *, dash_ok: bool = False) -> str:
    """Refuse a value containing shell metacharacters, or starting with '-' (it would read as an
    option) unless the caller places it where it cannot (`dash_ok`)."""
    found = sorted({char for char in value if char in SHELL_METACHARACTERS})
    if found:
        shown = ", ".join(repr(char) for char in found)
        raise ToolExecutionError(
            f"Argument '{argument}' contains shell metacharacter(s) {shown}; such values are refused. "
            "Pass plain values: the command runs without a shell."
        )
    if value.startswith("-") and not dash_ok:
        raise ToolExecutionError(
            f"Argument '{argument}' is {value!r}, which starts with '-' and would reach the program as an "
            "option; pass options through their own parameters."
        )
    return value


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def build_argv(
    binary: str,
    arguments: Mapping[str, Any],
    *,
    order: Sequence[str],
    positional: Sequence[str] = (),
    numeric: Collection[str] = (),
    end_of_options: bool = False,
) -> list[str]:
    """[binary, command?, positionals..., --flags...] with every value checked; True -> bare flag.

    With `end_of_options`: [binary, command?, --flags..., --, positionals...]. A flag in `numeric`
    may take a negative number, passed attached (`--limit=-1`) so it cannot read as an option.
    """
    argv = [binary]
    command = arguments.get("command")
    if command is not None:
        argv.append(check_value("command", str(command)))
    unknown = sorted(set(arguments) - set(order) - {"command"})
    if unknown:
        raise ToolExecutionError(f"Unknown argument(s): {', '.join(unknown)}; declared: {', '.join(order) or 'none'}.")
    positionals: list[str] = []
    for name in positional:
        value = arguments.get(name)
        if value is None or value is False:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            positionals.append(check_value(name, _text(item), dash_ok=end_of_options))
    if not end_of_options:
        argv.extend(positionals)
    flag_names = [n for n in order if n not in positional and n != "command"]
    for name in flag_names:
        value = arguments.get(name)
        if value is None or value is False:
            continue
        if value is True:
            argv.append(_flag(name))
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            negative_number = name in numeric and isinstance(item, (int, float)) and not isinstance(item, bool)
            text = check_value(name, _text(item), dash_ok=negative_number)
            argv.extend([f"{_flag(name)}={text}"] if text.startswith("-") else [_flag(name), text])
    if end_of_options:
        argv.extend([END_OF_OPTIONS, *positionals])
    return argv


def find_executable(binary: str) -> str | None:
    """The path of `binary` (searched on PATH unless it names a path) if it is an executable file."""
    executable = shutil.which(binary) if os.sep not in binary else binary
    if not executable or not os.path.isfile(executable) or not os.access(executable, os.X_OK):
        return None
    return executable


def run_command(argv: list[str], *, cwd: str, timeout: float, sandbox: Sandbox | None = None,
                read_only: Sequence[str] = (), stdin: str | None = None, max_chars: int | None = STDOUT_CHARS,
                env: Mapping[str, str] | None = None) -> str:
    """Run argv without a shell (inside `sandbox` when given, `cwd` its one writable path, `read_only`
    paths and `env` variables it gets besides the system); `stdin` is its input. stdout (capped at
    `max_chars`) on exit 0, ToolExecutionError otherwise."""
    executable = find_executable(argv[0])
    if executable is None:  # removed since the tool was declared
        raise ToolExecutionError(f"Binary not found: {argv[0]}")
    if not os.path.isdir(cwd):
        raise ToolExecutionError(f"Working directory does not exist: {cwd}")
    command = [executable, *argv[1:]]
    if sandbox is not None:
        command = sandbox.argv(command, workspace=cwd, read_only=[os.path.dirname(executable), *read_only], env=env)
    # Output goes to temporary files, not pipes: a program printing gigabytes fills the disk's
    # page cache, never this process's memory, and only the first MAX_OUTPUT_BYTES are read back.
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file, \
            tempfile.TemporaryFile() as in_file:
        if stdin is not None:
            in_file.write(stdin.encode())
            in_file.seek(0)
        try:
            process = subprocess.Popen(
                command,
                cwd=cwd,
                shell=False,
                stdin=in_file if stdin is not None else subprocess.DEVNULL,
                stdout=out_file,
                stderr=err_file,
                start_new_session=True,  # its own process group, so a timeout can kill grandchildren too
            )
        except OSError as exc:
            raise ToolExecutionError(f"Could not start {argv[0]}: {exc.strerror or exc}") from None
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise ToolExecutionError(f"Command timed out after {timeout:g}s") from None
        finally:
            _kill_group_quietly(process)  # grandchildren left running in the background go too
        stdout, stderr = _head(out_file), _head(err_file)
    if process.returncode != 0:
        parts = [f"Command exited with code {process.returncode}"]
        if stdout.strip():
            parts.append(truncate(stdout.strip(), ERROR_STDOUT_CHARS))
        if stderr.strip():
            parts.append("stderr: " + truncate(stderr.strip(), ERROR_STDERR_CHARS))
        raise ToolExecutionError("\n".join(parts))
    if max_chars is None:
        return stdout
    return truncate(stdout, max_chars) if stdout.strip() else "(no output)"


def _head(file: Any) -> str:
    """The first MAX_OUTPUT_BYTES of a spooled output file, as text."""
    file.seek(0)
    return cast("str", file.read(MAX_OUTPUT_BYTES).decode("utf-8", errors="replace"))


def _kill_group_quietly(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=2)


def cli_tool(
    name: str,
    binary: str,
    *,
    description: str = "",
    allowed_commands: Sequence[str] | None = None,
    parameters: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    cwd: str | Path | None = None,
    risk: str = "safe",
    render: str = "text",
    end_of_options: bool = False,
    sandbox: Sandbox | None = None,
) -> Tool:
    """A Tool running `binary [command] [positionals] --flag value ...` with shell=False.

    `sandbox` (corral_core.tools.sandbox): the program runs inside it, its working directory the one
    writable path.
    `allowed_commands` whitelists the `command` argument (added as a required enum parameter).
    `end_of_options=True` (for programs that honour `--`) passes positionals after `--`, so they may
    start with '-'. The working directory is `cwd` if given, else the hidden `work_dir` argument the
    environment supplies (the trial workspace), else the process's current directory.
    """
    if not isinstance(binary, str) or not binary.strip():
        raise ToolDeclarationError("binary is missing.", tool=name, key="binary", fix="name the program, e.g. git.")
    if timeout <= 0:
        raise ToolDeclarationError("timeout must be positive.", tool=name, key="timeout", fix="use e.g. 30.")
    schema = schema_from_parameters(parameters, tool=name)
    properties: dict[str, Any] = schema["properties"]
    if WORK_DIR_ARG in properties:
        raise ToolDeclarationError(
            f"'{WORK_DIR_ARG}' is reserved for the trial workspace.",
            tool=name,
            key=f"parameters.{WORK_DIR_ARG}",
            fix="rename the parameter.",
        )
    commands: tuple[str, ...] = ()
    if allowed_commands is not None:
        if isinstance(allowed_commands, str) or not allowed_commands:
            raise ToolDeclarationError(
                "allowed_commands must be a non-empty list.",
                tool=name,
                key="allowed_commands",
                fix="list subcommands, e.g. [status, log].",
            )
        commands = tuple(str(c) for c in allowed_commands)
        for command in commands:
            if any(c in SHELL_METACHARACTERS for c in command) or command.startswith("-") or not command:
                raise ToolDeclarationError(
                    f"allowed command {command!r} is not a plain word.",
                    tool=name,
                    key="allowed_commands",
                    fix="list bare subcommand names.",
                )
        command_prop = dict(properties.get("command", {"type": "string"}))
        command_prop.setdefault("description", f"Subcommand, one of: {', '.join(commands)}.")
        command_prop["enum"] = list(commands)
        properties["command"] = command_prop
        if "command" not in schema["required"]:
            schema["required"] = ["command", *schema["required"]]
    positional = positional_names(parameters)
    order = list(properties)
    numeric = frozenset(n for n, prop in properties.items() if prop.get("type") in NUMERIC_TYPES)
    fixed_cwd = str(cwd) if cwd is not None else None
    if find_executable(binary) is None:
        where = "is not an executable file" if os.sep in binary else "was not found on PATH"
        raise ToolDeclarationError(f"binary {binary!r} {where}.", tool=name, key="binary",
                                   fix="install the program, or give the full path of an executable file.")

    def run(work_dir: str | None = None, **arguments: Any) -> str:
        command = arguments.get("command")
        if commands and command not in commands:
            raise ToolExecutionError(
                f"Command {command!r} is not allowed for {name}; allowed: {', '.join(commands)}."
            )
        argv = build_argv(binary, arguments, order=order, positional=positional, numeric=numeric,
                          end_of_options=end_of_options)
        directory = fixed_cwd or (str(work_dir) if work_dir else os.getcwd())
        return run_command(argv, cwd=directory, timeout=timeout, sandbox=sandbox)

    tool_description = description or f"Run {binary}" + (f" ({', '.join(commands)})." if commands else ".")
    return Tool(name, tool_description, schema, run, risk=risk, render=render, hidden_args=(WORK_DIR_ARG,))
