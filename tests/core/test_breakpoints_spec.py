"""Breakpoints in a spec's `hooks:`: how they are written, checked, and what `--batch` does with a hit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from corral_core.agents.breakpoints import Breakpoint
from corral_core.spec import load_spec
from tests.core.test_batch import cli
from tests.core.test_spec import error_of, write_spec

SPEC = """name: bp
suite: SUITE
tasks: [add]
hooks:
  breakpoints: {points}
"""


def test_a_specs_breakpoints_load_and_leave_the_digest_alone(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, SPEC.format(points='["tool:calculator", "tokens>1000", "reply:\\\\d+"]')))
    assert spec.hooks.breakpoints == (Breakpoint("tool", "calculator"), Breakpoint("tokens", 1000),
                                      Breakpoint("reply", "\\d+"))
    plain = load_spec(write_spec(tmp_path, "name: bp\nsuite: SUITE\ntasks: [add]\n"))
    assert spec.digest == plain.digest, "breakpoints pause or record; they change no result"


@pytest.mark.parametrize(("points", "expected"), [
    ('"tool:calculator"', "`breakpoints` must be a list"),
    ('["tool:calculator", "risk:high"]', "unknown risk level 'high'"),
    ('["tokens>lots"]', "'lots' is not a whole number"),
])
def test_a_wrong_breakpoint_points_at_its_line(tmp_path: Path, points: str, expected: str) -> None:
    message = error_of(tmp_path, SPEC.format(points=points))
    assert expected in message and "line 5" in message and "hooks.breakpoints" in message, message


def test_batch_records_a_hit_and_pauses_nothing(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, SPEC.format(points='["tool:calculator"]'))
    proc = cli("--batch", str(spec), "--db", str(tmp_path / "x.db"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "about to call calculator (recorded, not paused)" in proc.stderr
    with sqlite3.connect(tmp_path / "x.db") as conn:
        rows = conn.execute("select h.name, h.point, t.status from hook_event h join trial t on t.id = h.trial_id "
                            "where h.kind = 'breakpoint_hit'").fetchall()
        paused = conn.execute("select count(*) from hook_event where kind = 'control_state' and name = 'paused'")
        assert rows == [("tool:calculator", "before_tool", "completed")] and paused.fetchone() == (0,)


def test_every_wrong_breakpoint_is_reported_at_once(tmp_path: Path) -> None:
    message = error_of(tmp_path, SPEC.format(points='["risk:high", "tool:calculator", "cost>free"]'))
    assert "unknown risk level 'high'" in message and "'free' is not a number" in message, message
