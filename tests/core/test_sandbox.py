"""Sandboxed cli and python tools really run inside bubblewrap: a tool cannot read a file outside its
workspace or in the user's home, cannot write outside the workspace, cannot open a socket to the host's
127.0.0.1, and a process it forks ends with the call. A missing `bwrap` is a declaration error that
says how to install it. Without `sandbox:`, the same tools do all of that (what the tests compare to)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from corral_core.tools.builtin.params import ToolDeclarationError
from corral_core.tools.errors import ToolExecutionError
from corral_core.tools.factory import build_tool

# .ci/run installs bubblewrap and sets CORRAL_TUI_TEST_BWRAP=1: there these tests run, never skip
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None and os.environ.get("CORRAL_TUI_TEST_BWRAP") != "1",
                                reason="bubblewrap is not installed (Debian: apt-get install bubblewrap)")

TOOLS = '''
"""Tools that try to leave their sandbox."""
import os, socket, subprocess


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file.
    """
    with open(path) as handle:
        return handle.read()


def write_file(path: str) -> str:
    """Write a file.

    Args:
        path: The file.
    """
    with open(path, "w") as handle:
        handle.write("escaped")
    return "written"


def connect(port: int) -> str:
    """Open a TCP connection to 127.0.0.1.

    Args:
        port: The port.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        return "connected"


def linger(marker: str) -> str:
    """Start a process that would outlive the call.

    Args:
        marker: A unique argument of that process.
    """
    subprocess.Popen(["sleep", marker], start_new_session=True, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    return "started"


def environment(name: str) -> str:
    """An environment variable.

    Args:
        name: Its name.
    """
    return os.environ.get(name, "(unset)")
'''


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home, workspace, suite = tmp_path / "home", tmp_path / "workspace", tmp_path / "suite"
    for folder in (home, workspace, suite):
        folder.mkdir()
    (home / "secret.txt").write_text("the user's secret")
    (tmp_path / "outside.txt").write_text("outside the workspace")
    (workspace / "inside.txt").write_text("the trial's own file")
    (suite / "escape_tools.py").write_text(TOOLS)
    monkeypatch.setenv("HOME", str(home))
    return {"home": home, "workspace": workspace, "suite": suite, "root": tmp_path}


def python_tool(folders: dict[str, Path], attr: str, sandbox: Any = "bubblewrap") -> Any:
    declaration: dict[str, Any] = {"name": attr, "type": "python", "import": f"escape_tools.py:{attr}"}
    if sandbox is not None:
        declaration["sandbox"] = sandbox
    return build_tool(declaration, base_dir=folders["suite"])


def call(tool: Any, folders: dict[str, Path], **arguments: Any) -> str:
    return str(tool.execute(work_dir=str(folders["workspace"]), **arguments))


@pytest.fixture
def listener() -> Iterator[tuple[int, list[Any]]]:
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[Any] = []

    def accept() -> None:
        try:
            while True:
                connection, _ = server.accept()
                accepted.append(connection)
        except OSError:
            return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    server.close()
    thread.join(5)
    for connection in accepted:
        connection.close()


def test_a_sandboxed_python_tool_reads_and_writes_only_its_workspace(folders: dict[str, Path]) -> None:
    read, write = python_tool(folders, "read_file"), python_tool(folders, "write_file")
    assert call(read, folders, path="inside.txt") == "the trial's own file"
    assert call(write, folders, path="made.txt") == "written" and (folders["workspace"] / "made.txt").exists()
    for outside in (folders["home"] / "secret.txt", folders["root"] / "outside.txt"):
        with pytest.raises(ToolExecutionError, match="FileNotFoundError|No such file"):
            call(read, folders, path=str(outside))
    with pytest.raises(ToolExecutionError, match="Read-only file system|No such file|Permission denied"):
        call(write, folders, path=str(Path(__file__).resolve().parent / "escaped.txt"))
    call(write, folders, path=str(folders["root"] / "escaped.txt"))  # its /tmp is private: written there only
    assert not (folders["root"] / "escaped.txt").exists()
    assert not (Path(__file__).resolve().parent / "escaped.txt").exists()
    # the same tool unsandboxed reads the user's secret: the sandbox is what stops it
    plain = python_tool(folders, "read_file", sandbox=None)
    assert plain.execute(path=str(folders["home"] / "secret.txt")) == "the user's secret"


def test_a_sandboxed_tool_cannot_reach_the_hosts_loopback(folders: dict[str, Path],
                                                           listener: tuple[int, list[Any]]) -> None:
    port, accepted = listener
    with pytest.raises(ToolExecutionError, match="Network is unreachable|Connection refused|OSError"):
        call(python_tool(folders, "connect"), folders, port=port)
    assert accepted == []
    assert call(python_tool(folders, "connect", sandbox={"backend": "bubblewrap", "network": True}), folders,
                port=port) == "connected"  # network: true shares it


def test_a_process_a_sandboxed_tool_forks_ends_with_the_call(folders: dict[str, Path]) -> None:
    marker = f"{os.getpid() % 1000 + 1000}.{threading.get_ident() % 997}"
    assert call(python_tool(folders, "linger"), folders, marker=marker) == "started"
    lingering = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", marker]]
    assert psutil.wait_procs(lingering, timeout=10)[1] == []
    # unsandboxed, the same tool leaves it running (found by the same search, then ended here)
    assert python_tool(folders, "linger", sandbox=None).execute(marker=marker) == "started"
    left = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", marker]]
    assert len(left) == 1
    left[0].kill()
    left[0].wait(10)


def test_a_sandboxed_tool_sees_no_provider_key(folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-tools-0123456789")
    assert call(python_tool(folders, "environment"), folders, name="OPENAI_API_KEY") == "(unset)"


def test_a_sandboxed_cli_tool_cannot_read_outside_its_workspace(folders: dict[str, Path]) -> None:
    declaration = {"name": "show", "type": "cli", "binary": "cat", "sandbox": "bubblewrap",
                   "parameters": [{"name": "path", "type": "string", "positional": True}]}
    show = build_tool(declaration, base_dir=folders["suite"])
    assert call(show, folders, path="inside.txt") == "the trial's own file"
    with pytest.raises(ToolExecutionError, match="No such file"):
        call(show, folders, path=str(folders["home"] / "secret.txt"))


def test_a_timed_out_sandboxed_tool_is_killed(folders: dict[str, Path]) -> None:
    declaration = {"name": "wait", "type": "cli", "binary": "sleep", "sandbox": "bubblewrap", "timeout": 1,
                   "parameters": [{"name": "seconds", "type": "string", "positional": True}]}
    with pytest.raises(ToolExecutionError, match="timed out"):
        call(build_tool(declaration, base_dir=folders["suite"]), folders, seconds="301.5")
    lingering = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "301.5"]]
    assert psutil.wait_procs(lingering, timeout=10)[1] == []


def test_a_missing_bwrap_is_a_declaration_error_that_says_how_to_install_it(
        folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(folders["root"]))
    with pytest.raises(ToolDeclarationError) as caught:
        python_tool(folders, "read_file")
    assert caught.value.exit_code == 2
    assert "bwrap" in str(caught.value) and "apt-get install bubblewrap" in str(caught.value)
    with pytest.raises(ToolDeclarationError, match="docker sandbox backend is not implemented"):
        python_tool(folders, "read_file", sandbox="docker")
