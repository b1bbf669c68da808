"""A third-party package's kinds (tests/plugins/corral_tui_testplugin), found through its entry points: a
scorer and a breakpoint kind used in a spec and a batch run, validated with a did-you-mean, completed
in the shell and the run form, and documented by `corral-tui kinds`; its agent, tool source and export
format used where those are named."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral_core.agents.breakpoints import BREAKPOINTS, Breakpoint, breakpoint_syntax
from corral_core.env.scoring import SCORERS
from corral_core.errors import UserError
from corral_core.spec import load_spec
from tests.inprocess import run_cli
from tests.plugins.install import installed

ROOT = Path(__file__).resolve().parents[2]
SUITE = """name: plugged
environment: {environment}
script: samplemath
tools: [calculator]
tasks:
  - id: add
    prompt: What is 17 + 25?
    answer: 42
    scoring: {{type: contains, {key}: "42"}}
"""
SPEC = """name: plugged
suite: plugged.yaml
tasks: [add]
hooks:
  breakpoints: [{point}]
"""


@pytest.fixture
def plugin(tmp_path: Path) -> Iterator[Path]:
    with installed(tmp_path / "site"):
        yield tmp_path


def _write(folder: Path, key: str = "text", point: str = "'args:\"a\": 17'") -> Path:
    environment = ROOT / "environments" / "samplemath.py"
    (folder / "plugged.yaml").write_text(SUITE.format(key=key, environment=environment), encoding="utf-8")
    spec = folder / "plugged.bench.yaml"
    spec.write_text(SPEC.format(point=point), encoding="utf-8")
    return spec


def test_the_plugin_kinds_arrive_through_their_entry_points(plugin: Path) -> None:
    assert SCORERS.get("contains").package == "corral-tui-testplugin"
    assert BREAKPOINTS.get("args").package == "corral-tui-testplugin"
    assert breakpoint_syntax().endswith("reply:REGEX or args:REGEX")
    assert str(Breakpoint.parse("args:17")) == "args:17"


def test_without_the_package_they_are_unknown() -> None:
    assert "contains" not in SCORERS and "args" not in BREAKPOINTS


def test_a_spec_uses_the_plugin_scorer_and_breakpoint_in_a_batch_run(plugin: Path) -> None:
    spec = _write(plugin)
    loaded = load_spec(spec)
    assert loaded.hooks.breakpoints == (Breakpoint("args", '"a": 17'),)
    out = plugin / "out.json"
    proc = run_cli("--batch", str(spec), "--db", str(plugin / "x.db"), "--json", str(out), cwd=plugin)
    assert proc.returncode == 0, proc.stderr
    assert 'calculator arguments {"a": 17, "b": 25, "operation": "+"} match /"a": 17/' in proc.stderr
    trials = json.loads(out.read_text(encoding="utf-8"))["trials"]
    assert [(t["score"], t["status"]) for t in trials] == [(1.0, "completed")]
    with sqlite3.connect(plugin / "x.db") as conn:
        assert conn.execute("select name from hook_event where kind = 'breakpoint_hit'").fetchall() == [
            ('args:"a": 17',)]
    benchmark = json.loads(out.read_text(encoding="utf-8"))["benchmark_id"]
    exported = run_cli("export", benchmark, "--format", "lines", "--db", str(plugin / "x.db"), cwd=plugin)
    assert (exported.returncode, exported.stdout) == (0, "add completed 1.0\n"), exported.stderr


def test_a_mistyped_plugin_key_or_kind_gets_a_did_you_mean(plugin: Path) -> None:
    with pytest.raises(UserError) as caught:
        load_spec(_write(plugin, key="txt"))
    assert "unknown key 'txt' for scoring type 'contains' (did you mean 'text'?); its keys: text, ignore_case" in \
        str(caught.value)
    with pytest.raises(UserError) as caught:
        load_spec(_write(plugin, point="'arg:17'"))
    message = str(caught.value)
    assert "unknown breakpoint 'arg:17' (did you mean 'args'?)" in message and "line 5" in message, message


def test_the_plugin_kinds_are_completed(plugin: Path) -> None:
    from corral_tui.cli import completion_script_for
    from corral_tui.widgets.suggest import breakpoint_heads, complete_last

    assert complete_last("tool:calculator; ar", breakpoint_heads()) == "tool:calculator; args:"
    bash = completion_script_for("bash")
    kinds_words = next(line for line in bash.splitlines() if line.strip().startswith("kinds)"))
    assert " contains " in kinds_words and " args " in kinds_words and " scorers " in kinds_words
    assert "--format) COMPREPLY=($(compgen -W 'json csv inspect lines'" in bash  # export's formats


def test_the_plugin_kinds_are_documented(plugin: Path) -> None:
    proc = run_cli("kinds", "scorers")
    assert proc.returncode == 0, proc.stderr
    assert "contains         1.0 when the answer contains `text` (default: the task's answer).  " \
           "[corral-tui-testplugin]" in proc.stdout
    assert "      ignore_case: compare regardless of case" in proc.stdout
    page = run_cli("kinds", "--markdown").stdout
    assert "- `args:REGEX` (from corral-tui-testplugin): right before a tool call whose JSON arguments" in page
    assert "corral-tui-testplugin" not in run_cli("kinds", "--markdown", "--builtin").stdout


def test_a_plugin_agent_is_a_spec_agent_type_with_its_options_checked(plugin: Path) -> None:
    from corral_core.agents import AGENTS

    assert AGENTS.get("terse").options == {"user_prompt": "str | None (default None)",
                                           "extractor_prompt": "str | None (default None)",
                                           "surrender_prompt": "str | None (default None)",
                                           "extract_answer": "bool (default False)",
                                           "word_limit": "int (default 5)"}
    spec = _write(plugin)
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text + "agent: {type: terse, options: {word_limit: 3}}\n", encoding="utf-8")
    assert load_spec(spec).arms[0].agent.options == {"word_limit": 3}
    spec.write_text(text + "agent: {type: terse, options: {word_limt: 3}}\n", encoding="utf-8")
    with pytest.raises(UserError, match="agent type 'terse' has no option `word_limt`. Did you mean `word_limit`?"):
        load_spec(spec)


def test_a_plugin_tool_source_builds_tools_and_checks_its_keys(plugin: Path) -> None:
    from corral_core.tools.factory import ToolDeclarationError, build_tool

    said = build_tool({"name": "say", "type": "echo", "prefix": "> ", "risk": "confirm"})
    assert (said.name, said.risk.value, said.function(text="hi")) == ("say", "confirm", "> hi")
    with pytest.raises(ToolDeclarationError, match=r"unknown key 'prefx' for a echo tool \(did you mean 'prefix'\?\)"):
        build_tool({"name": "say", "type": "echo", "prefx": "> "})


def test_the_package_installs_with_pip_and_its_kinds_arrive(tmp_path: Path) -> None:
    """Its pyproject.toml as pip reads it (the other tests write its dist-info from the same file); built
    from a copy, so setuptools' build/ and egg-info stay out of the repository."""
    import shutil
    import subprocess
    import sys

    from tests.plugins.install import TESTPLUGIN, on_path

    source, target = tmp_path / "project", tmp_path / "site"
    shutil.copytree(TESTPLUGIN, source)
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(target), str(source)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    with on_path(target):
        assert {SCORERS.get("contains").package, BREAKPOINTS.get("args").package} == {"corral-tui-testplugin"}
