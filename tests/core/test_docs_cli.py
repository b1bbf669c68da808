"""`corral-tui docs SUITE`: what an agent receives at a level, the diff between two levels, and the size
of each level's documentation in characters and tokens (litellm's counter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from corral_core.docsize import channel_payload, docs_main, documentation_size, measured_text
from corral_core.env import load_suite
from corral_core.errors import UserError
from corral_core.llm.client import token_count
from corral_core.tools import tools_guide

ROOT = Path(__file__).resolve().parents[2]
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"
LEVELS = ["minimal", "brief", "detailed", "procedural", "contextual", "workflow", "syntactical", "comprehensive",
          "full"]


def _table(out: str) -> dict[str, tuple[int, int]]:
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in LEVELS:
            rows[parts[0]] = (int(parts[1]), int(parts[2]))
    return rows


def test_a_level_prints_the_guide_an_agent_reads_and_every_levels_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert docs_main([str(SAMPLEMATH), "--level", "minimal"]) == 0
    out = capsys.readouterr().out
    tools = load_suite(SAMPLEMATH).tools_for("add")
    assert out.startswith(tools_guide(tools, "minimal") + "\n\n")
    rows = _table(out)
    assert list(rows) == LEVELS
    guide = tools_guide(tools, "brief")
    assert rows["brief"] == (len(guide), token_count(guide, "gpt-4o"))
    chars = [rows[level][0] for level in LEVELS]
    assert chars == sorted(chars) and len(set(chars)) == len(chars)  # samplemath adds text at every level
    assert "minimal" in out.splitlines()[-9] and out.splitlines()[-9].endswith("<")


def test_other_channels_print_the_json_an_agent_receives(capsys: pytest.CaptureFixture[str]) -> None:
    assert docs_main([str(SAMPLEMATH), "--level", "minimal", "--channel", "schema", "--tool", "calculator",
                      "--model", "gpt-4o-mini"]) == 0
    out = capsys.readouterr().out
    shown = json.loads(out.split("\n\n")[0])
    assert shown == [load_suite(SAMPLEMATH).tools["calculator"].to_openai("minimal")]
    assert "enum" not in out.split("\n\n")[0] and '"description": "Compute' in out
    assert "gpt-4o-mini's tokenizer" in out
    tools = [load_suite(SAMPLEMATH).tools["calculator"]]
    assert _table(out)["full"][0] == len(measured_text(channel_payload(tools, "full", "schema")))
    assert documentation_size(tools, "full", "mcp").chars > documentation_size(tools, "minimal", "mcp").chars


def test_diff_shows_what_a_level_adds(capsys: pytest.CaptureFixture[str]) -> None:
    assert docs_main([str(SAMPLEMATH), "--diff", "workflow", "syntactical", "--tool", "calculator"]) == 0
    out = capsys.readouterr().out
    added = "\n".join(line for line in out.splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = [line for line in out.splitlines() if line.startswith("-") and not line.startswith("---")]
    # syntactical adds the [SYNTACTICAL] sections: the power operator, and the operation's symbols
    assert '(power: a ** b raises a to' in added and 'The operation to apply. One of "+"' in added
    assert removed == ["-- operation (str, required): The operation to apply."]


def test_a_bad_level_or_tool_is_a_users_mistake() -> None:
    with pytest.raises(UserError, match="Unknown verbosity 'loud'"):
        docs_main([str(SAMPLEMATH), "--level", "loud"])
    with pytest.raises(UserError, match="no tool 'nope'"):
        docs_main([str(SAMPLEMATH), "--tool", "nope"])
    proc = subprocess.run([sys.executable, "-m", "corral_tui.cli", "docs", str(SAMPLEMATH), "--level", "loud"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "loud" in proc.stderr
