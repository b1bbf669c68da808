"""The commands the docs tell a user to type work as written: every fenced shell block marked runnable
(an HTML comment `<!-- runnable -->` on the line before its opening fence; a reader does not see it) runs
here, in bash -eo pipefail, in a temporary folder holding a copy of sample_tasks/ and environments/ (what
a clone has, and what `corral-tui samples --copy .` makes), with a temporary HOME, no XDG_*, CORRAL_TUI_*
or OTEL_* variables and this venv's `corral-tui` on PATH. A block that exits non-zero fails the test,
with the block's file, line, output and errors.

Mark a block runnable when it runs offline and ends (no workbench, no server left running, no key).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MARKER = "<!-- runnable -->"
FENCE = re.compile(r"^```(bash|sh|shell|console)?\s*$")
BLOCK_BOUND = 600.0  # seconds: a failing block's bound only


@dataclass(frozen=True)
class Block:
    file: Path
    line: int  # of the opening fence, 1-based
    script: str

    def __str__(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}"


def runnable_blocks() -> list[Block]:
    blocks = []
    for file in sorted([REPO / "README.md", *(REPO / "docs").glob("**/*.md")]):
        lines = file.read_text(encoding="utf-8").splitlines()
        for at, line in enumerate(lines):
            if line.strip() != MARKER:
                continue
            opening = lines[at + 1] if at + 1 < len(lines) else ""
            assert FENCE.match(opening), f"{file.relative_to(REPO)}:{at + 1}: {MARKER} must come right before a " \
                                         f"```bash fence, not {opening!r}"
            end = next(i for i in range(at + 2, len(lines)) if lines[i].strip() == "```")
            blocks.append(Block(file, at + 2, "\n".join(lines[at + 2:end]) + "\n"))
    return blocks


def test_the_docs_mark_their_runnable_commands() -> None:
    blocks = runnable_blocks()
    scripts = "".join(block.script for block in blocks)
    # the commands the install guide and the CI guide give a new user are among them
    assert 'corral-tui --batch "$(corral-tui samples | grep -m1 quickstart.bench.yaml)"' in scripts
    assert "corral-tui samples --copy" in scripts and "--summary-md" in scripts
    assert "corral-tui history | grep" in scripts  # [defaults] db of the config file reaches `history`
    assert len(blocks) >= 3, [str(b) for b in blocks]


@pytest.mark.parametrize("block", runnable_blocks(), ids=str)
def test_a_runnable_block_of_the_docs_runs(block: Block, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CORRAL_TUI_", "OTEL_", "XDG_"))}
    env.update(HOME=str(tmp_path / "home"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    work = tmp_path / "work"
    for name in ("sample_tasks", "environments"):
        shutil.copytree(REPO / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", block.script], cwd=work,
                          env=env, capture_output=True, text=True, timeout=BLOCK_BOUND)
    assert done.returncode == 0, f"{block} exited {done.returncode}:\n{block.script}\n{done.stdout}\n{done.stderr}"
