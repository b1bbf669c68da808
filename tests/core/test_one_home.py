"""One home per shared constant: each is defined once in corral_core and imported everywhere else."""

from __future__ import annotations

import ast
from pathlib import Path

from corral_core.agents import AGENTS
from corral_core.constants import TOOL_STATUSES, ToolStatus
from corral_core.env import ToolStatus as EnvToolStatus
from corral_core.metrics import TOOL_STATUSES as METRICS_TOOL_STATUSES
from corral_core.safetext import clip
from corral_core.spec import AGENT_TYPES

ROOT = Path(__file__).resolve().parents[2]
SHARED = {"AGENT_TYPES", "APPROVAL_POLICIES", "VERBOSITY_LEVELS", "VALID_LEVELS", "TOOL_STATUSES", "TRIAL_STATUSES",
          "ToolStatus", "utc_now"}


def _definitions() -> dict[str, list[str]]:
    """Module-level assignments, functions and classes of the shared names, in both packages."""
    found: dict[str, list[str]] = {}
    for path in sorted([*ROOT.glob("corral_core/**/*.py"), *ROOT.glob("corral_tui/**/*.py")]):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            else:
                continue
            for name in names:
                if name in SHARED:
                    found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def test_every_shared_constant_is_defined_once() -> None:
    twice = {name: places for name, places in _definitions().items() if len(places) > 1}
    assert twice == {}


def test_the_vocabularies_agree() -> None:
    assert tuple(k.name for k in AGENTS.kinds() if k.package is None) == AGENT_TYPES
    assert EnvToolStatus is ToolStatus
    assert METRICS_TOOL_STATUSES == TOOL_STATUSES == tuple(s.value for s in ToolStatus)


def test_one_clip_for_summaries_and_panes() -> None:
    assert clip(None, 10) == "" and clip("short", 10) == "short"
    assert clip("a\n b   c", 80, one_line=True) == "a b c"
    assert clip("x" * 30, 10, one_line=True) == "x" * 9 + "…"
    assert clip("y" * 30, 10) == "y" * 10 + "… (20 more characters)"
