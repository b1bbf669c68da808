"""cli tools with real processes: flag mapping, injection refused, whitelist, timeouts that kill."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from corral_core.tools.builtin import ToolDeclarationError, cli_tool
from corral_core.tools.errors import ToolArgumentError, ToolExecutionError

FAKE_CLI = """\
#!{python}
import json, os, subprocess, sys, time
args = sys.argv[1:]
if args[:1] == ["sleep"]:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(os.path.join(os.getcwd(), "pids.txt"), "w") as f:
        f.write(f"{{os.getpid()}} {{child.pid}}")
    time.sleep(60)
if args[:1] == ["fail"]:
    print("partial output")
    print("something broke", file=sys.stderr)
    sys.exit(3)
if args[:1] == ["big"]:
    print("z" * 10000)
    sys.exit(0)
if args[:1] == ["quiet"]:
    sys.exit(0)
print(json.dumps({{"argv": args, "cwd": os.getcwd()}}))
"""
PARAMS = [
    {"name": "path", "type": "string", "positional": True, "required": False},
    {"name": "name_filter", "type": "string", "required": False},
    {"name": "limit", "type": "integer", "required": False},
    {"name": "verbose", "type": "boolean", "required": False},
    {"name": "dry_run", "type": "boolean", "required": False},
    {"name": "label", "type": "array", "items": "string", "required": False},
]
INJECTIONS = [
    "; touch SENTINEL",
    "$(touch SENTINEL)",
    "`touch SENTINEL`",
    "x | touch SENTINEL",
    "x && touch SENTINEL",
    "x > SENTINEL",
    "x\ntouch SENTINEL",
    "${IFS}touch",
]


@pytest.fixture
def fake_cli(tmp_path: Path) -> Path:
    script = tmp_path / "bin" / "fakecli"
    script.parent.mkdir()
    script.write_text(FAKE_CLI.format(python=sys.executable))
    script.chmod(0o755)
    return script


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


def make(fake_cli: Path, **kwargs: object):
    options = {"allowed_commands": ["show", "sleep", "fail", "big", "quiet"], "parameters": PARAMS, "timeout": 10}
    options.update(kwargs)
    return cli_tool("fake", str(fake_cli), **options)


def run_json(tool, **arguments: object) -> dict:
    return json.loads(tool.execute(**arguments))


def test_arguments_map_to_flags_in_declared_order(fake_cli: Path, workspace: Path) -> None:
    tool = make(fake_cli)
    result = run_json(
        tool, command="show", path="docs/a.txt", name_filter="abc", limit=5, verbose=True, dry_run=False,
        label=["x", "y"], work_dir=str(workspace),
    )  # fmt: skip
    assert result["argv"] == [
        "show", "docs/a.txt", "--name-filter", "abc", "--limit", "5", "--verbose", "--label", "x", "--label", "y",
    ]  # fmt: skip
    assert result["cwd"] == str(workspace)
    assert run_json(tool, command="show", limit=-3, work_dir=str(workspace))["argv"] == ["show", "--limit=-3"]


def test_the_schema_whitelists_the_command_and_hides_the_workspace(fake_cli: Path) -> None:
    tool = make(fake_cli)
    assert tool.parameters["properties"]["command"]["enum"] == ["show", "sleep", "fail", "big", "quiet"]
    assert tool.parameters["required"] == ["command"]
    assert "work_dir" not in tool.parameters["properties"]
    assert tool.hidden_args == ("work_dir",)
    with pytest.raises(ToolArgumentError, match="Must be one of"):
        tool.validate({"command": "rm"})


@pytest.mark.parametrize("command", ["rm", "show; touch SENTINEL", "SHOW"])
def test_a_disallowed_subcommand_is_rejected_even_past_validation(
    fake_cli: Path, workspace: Path, command: str
) -> None:
    with pytest.raises(ToolExecutionError, match="is not allowed for fake; allowed: show, sleep"):
        make(fake_cli).execute(command=command, work_dir=str(workspace))
    assert not (workspace / "SENTINEL").exists()


@pytest.mark.parametrize("value", INJECTIONS)
def test_shell_metacharacters_are_refused_and_nothing_runs(fake_cli: Path, workspace: Path, value: str) -> None:
    tool = make(fake_cli)
    for arguments in ({"path": value}, {"name_filter": value}, {"label": ["ok", value]}):
        with pytest.raises(ToolExecutionError, match="shell metacharacter"):
            tool.execute(command="show", work_dir=str(workspace), **arguments)
    assert not (workspace / "SENTINEL").exists()
    assert not Path("SENTINEL").exists()


@pytest.mark.parametrize("value", ["--exec=rm", "-rf", "-", "-1", "-0.5"])
def test_values_that_would_read_as_options_are_refused(fake_cli: Path, workspace: Path, value: str) -> None:
    for arguments in ({"path": value}, {"name_filter": value}, {"label": ["ok", value]}):
        with pytest.raises(ToolExecutionError, match="starts with '-'"):
            make(fake_cli).execute(command="show", work_dir=str(workspace), **arguments)


def test_a_negative_number_never_reaches_the_program_as_an_option(fake_cli: Path, workspace: Path) -> None:
    counted = [{"name": "count", "type": "integer", "positional": True},
               {"name": "depth", "type": "number", "required": False}]
    plain = make(fake_cli, parameters=counted)
    with pytest.raises(ToolExecutionError, match="'-1', which starts with '-'"):  # `head -1` would be an option
        plain.execute(command="show", count=-1, work_dir=str(workspace))
    assert run_json(plain, command="show", count=3, depth=-1.5, work_dir=str(workspace))["argv"] == [
        "show", "3", "--depth=-1.5"]
    ended = make(fake_cli, parameters=counted, end_of_options=True)  # the program honours `--`
    assert run_json(ended, command="show", count=-1, depth=-2, work_dir=str(workspace))["argv"] == [
        "show", "--depth=-2", "--", "-1"]
    named = make(fake_cli, parameters=[{"name": "file", "type": "string", "positional": True}], end_of_options=True)
    assert run_json(named, command="show", file="-rf", work_dir=str(workspace))["argv"] == ["show", "--", "-rf"]


def test_undeclared_arguments_are_refused(fake_cli: Path, workspace: Path) -> None:
    with pytest.raises(ToolExecutionError, match="Unknown argument"):
        make(fake_cli).execute(command="show", output="/etc/passwd", work_dir=str(workspace))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_timeout_kills_the_whole_process_group(fake_cli: Path, workspace: Path) -> None:
    tool = make(fake_cli, timeout=1)
    started = time.monotonic()
    with pytest.raises(ToolExecutionError, match="Command timed out after 1s"):
        tool.execute(command="sleep", work_dir=str(workspace))
    assert time.monotonic() - started < 20  # well below the 60 s (29.75 s) the command sleeps: killed, not awaited
    pids = [int(p) for p in (workspace / "pids.txt").read_text().split()]
    deadline = time.monotonic() + 30  # bounds a failing test only
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def test_real_sleep_binary_times_out_and_is_gone(workspace: Path) -> None:
    sleep = cli_tool("sleep", "sleep", parameters=[{"name": "seconds", "type": "string", "positional": True}],
                     timeout=1)
    started = time.monotonic()
    with pytest.raises(ToolExecutionError, match="timed out after 1s"):
        sleep.execute(seconds="29.75", work_dir=str(workspace))
    assert time.monotonic() - started < 20  # well below the 60 s (29.75 s) the command sleeps: killed, not awaited
    leftovers = [
        p.name
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _cmdline(p) == ["sleep", "29.75"] and _alive(int(p.name))
    ]
    assert leftovers == []


def _cmdline(proc: Path) -> list[str]:
    try:
        parts = (proc / "cmdline").read_bytes().decode().split("\0")[:-1]
        return [Path(part).name if i == 0 else part for i, part in enumerate(parts)]
    except OSError:
        return []


def test_a_missing_binary_is_refused_when_the_tool_is_declared(tmp_path: Path) -> None:
    with pytest.raises(ToolDeclarationError, match="'no-such-binary-corral' was not found on PATH"):
        cli_tool("ghost", "no-such-binary-corral")
    with pytest.raises(ToolDeclarationError, match="'/nonexistent/tool' is not an executable file"):
        cli_tool("ghost", "/nonexistent/tool")
    not_executable = tmp_path / "script.sh"
    not_executable.write_text("echo hi\n")
    with pytest.raises(ToolDeclarationError, match="is not an executable file"):
        cli_tool("ghost", str(not_executable))


def test_a_binary_removed_after_declaration_is_reported(fake_cli: Path, workspace: Path) -> None:
    tool = make(fake_cli)
    fake_cli.unlink()
    with pytest.raises(ToolExecutionError, match=f"Binary not found: {fake_cli}"):
        tool.execute(command="show", work_dir=str(workspace))


def test_failures_show_exit_code_stdout_and_stderr(fake_cli: Path, workspace: Path) -> None:
    with pytest.raises(ToolExecutionError) as caught:
        make(fake_cli).execute(command="fail", work_dir=str(workspace))
    assert str(caught.value) == "Command exited with code 3\npartial output\nstderr: something broke"


def test_output_is_truncated_and_silence_is_said(fake_cli: Path, workspace: Path) -> None:
    tool = make(fake_cli)
    assert tool.execute(command="big", work_dir=str(workspace)) == "z" * 4000 + " …"
    assert tool.execute(command="quiet", work_dir=str(workspace)) == "(no output)"


def test_working_directory_precedence(fake_cli: Path, workspace: Path, tmp_path: Path) -> None:
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    assert run_json(make(fake_cli, cwd=fixed), command="show", work_dir=str(workspace))["cwd"] == str(fixed)
    assert run_json(make(fake_cli), command="show")["cwd"] == os.getcwd()
    with pytest.raises(ToolExecutionError, match="Working directory does not exist"):
        make(fake_cli).execute(command="show", work_dir=str(tmp_path / "gone"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"binary": ""}, "binary is missing"),
        ({"binary": "git", "allowed_commands": []}, "allowed_commands must be a non-empty list"),
        ({"binary": "git", "allowed_commands": ["log; rm"]}, "not a plain word"),
        ({"binary": "git", "allowed_commands": ["--exec"]}, "not a plain word"),
        ({"binary": "git", "parameters": [{"name": "work_dir", "type": "string"}]}, "reserved"),
        ({"binary": "git", "timeout": 0}, "timeout must be positive"),
    ],
)
def test_bad_declarations(kwargs: dict, message: str) -> None:
    with pytest.raises(ToolDeclarationError, match=message):
        cli_tool("git", **kwargs)


def test_huge_output_is_capped_without_holding_it_in_memory(tmp_path):
    import tracemalloc

    tool = cli_tool("yes", "head", parameters=[{"name": "bytes", "type": "integer"},
                                                {"name": "file", "type": "string", "positional": True}])
    big = tmp_path / "big.bin"
    with big.open("wb") as handle:
        handle.write(b"y\n" * (25 * 1024 * 1024))  # 50 MB of output to come
    tracemalloc.start()
    try:
        result = tool.execute(bytes=50 * 1024 * 1024, file=str(big), work_dir=str(tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(result) < 5000
    assert peak < 5 * 1024 * 1024
