"""The embedded environment server of a batch run refuses rebinding pages (tests/server/rebinding.py).

The attack runs against the real server `corral-tui --batch` starts, the moment it is up and before
any trial runs: every route answers 421 (foreign Host) or 403 (foreign Origin), no tool runs, and
the run itself is unaffected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from corral_core.server import EmbeddedServer
from corral_tui.cli import main
from tests.server.rebinding import attack, expected_refusals

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "sample_tasks" / "samplemath.bench.yaml"


def test_a_batch_runs_embedded_server_refuses_rebinding_pages(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    attacks: list[dict[tuple[str, str], int]] = []
    start = EmbeddedServer.start

    def start_then_attack(self: EmbeddedServer) -> str:
        url = start(self)
        attacks.append(attack(url, "add", "calculator", {"operation": "+", "a": 1, "b": 2}))
        return url

    monkeypatch.setattr(EmbeddedServer, "start", start_then_attack)
    out = tmp_path / "out.json"
    code = main(["--batch", str(SPEC), "--db", str(tmp_path / "x.db"), "--json", str(out), "--quiet"])
    assert code == 0
    assert attacks and all(seen == expected_refusals(seen) for seen in attacks)
    import json

    trials: list[dict[str, Any]] = json.loads(out.read_text())["trials"]
    assert trials and all(t["status"] == "completed" for t in trials)
