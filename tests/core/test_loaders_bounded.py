"""Loaders are bounded: a YAML alias bomb is refused (exit 2) instead of expanding, and a module that
calls sys.exit while it is imported is a user error instead of a silent exit 0.

Before the fix the 335-byte bomb below hung `--batch` with memory growing, and `serve` with an
environment module calling sys.exit(0) exited 0 without a word.
"""

from __future__ import annotations

import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from corral_core.agents.react_parsing import parse_arguments
from corral_core.errors import UserError
from corral_core.server.serve import serve_main
from corral_core.tools.factory import ToolDeclarationError, build_tool
from corral_core.yamlfile import YamlBombError, load_yaml_document, safe_load

LEVELS = "abcdefghi"
BOMB = "name: bomb\na: &a [" + ",".join(['"x"'] * 9) + "]\n" + "".join(
    f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]\n" for a, b in pairwise(LEVELS))
TIMEOUT = 120  # bounds a failing (hanging) run only


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
    return subprocess.run([sys.executable, "-m", "corral_tui.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def test_the_bomb_is_the_one_from_the_report() -> None:
    assert len(BOMB.encode()) < 400  # 9**9 = 387,420,489 strings once expanded


@pytest.mark.parametrize("where", ["--batch", "serve"])
def test_an_alias_bomb_exits_2_with_one_message(where: str, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    args = ["--batch", str(bomb), "--db", str(tmp_path / "x.db")] if where == "--batch" else ["serve", str(bomb)]
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "alias bomb" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.db").exists()


def test_bounded_loading_keeps_ordinary_aliases_and_refuses_cycles_and_depth(tmp_path: Path) -> None:
    assert safe_load("base: &b {k: 1}\nuse: *b\nmerged: {<<: *b, d: 2}") == {
        "base": {"k": 1}, "use": {"k": 1}, "merged": {"k": 1, "d": 2}}
    big = "items:\n" + "".join(f"  - {{id: t{i}, value: {i}}}\n" for i in range(30_000))
    assert len(safe_load(big)["items"]) == 30_000  # size alone is never refused, only alias expansion
    with pytest.raises(YamlBombError, match="recursive alias"):
        safe_load("a: &a [*a]")
    with pytest.raises(YamlBombError, match="nested too deeply"):
        safe_load("[" * 5000 + "]" * 5000)
    path = tmp_path / "spec.yaml"
    path.write_text(BOMB)
    with pytest.raises(UserError, match="alias bomb") as caught:
        load_yaml_document(path, "spec")
    assert caught.value.exit_code == 2


def test_an_alias_bomb_from_a_model_is_not_expanded() -> None:
    bomb = "{a: &a [x,x,x,x,x,x,x,x,x], " + ", ".join(
        f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]" for a, b in pairwise(LEVELS)) + "}"
    with pytest.raises(ValueError, match="not"):
        parse_arguments(bomb)


EXITING_MODULE = "import sys\nsys.exit({code})\n"


@pytest.mark.parametrize("code", ["0", "3", "'bye'"])
def test_an_environment_module_calling_sys_exit_is_a_user_error_for_serve(
        code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "env.py").write_text(EXITING_MODULE.format(code=code))
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: exits\nenvironment: env.py\ntasks:\n  - {id: t1, prompt: hi, answer: x}\n")
    assert serve_main([str(suite), "--port", "0"]) == 2
    message = capsys.readouterr().err
    assert f"called sys.exit({code})" in message and "line 2, key environment" in message


def test_a_tool_module_calling_sys_exit_is_a_declaration_error(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(EXITING_MODULE.format(code="0"))
    with pytest.raises(ToolDeclarationError, match=r"called sys.exit\(0\)"):
        build_tool({"name": "t", "type": "python", "import": "tools.py:f"}, base_dir=tmp_path)
