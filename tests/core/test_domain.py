"""The status vocabularies have one home, corral_core/domain.py (tests/core/test_status_guard.py fails on a status
written anywhere else); a StrEnum member is its string on every wire we write; the inbox source is named once."""

from __future__ import annotations

import ast
import csv
import io
import json
import pickle
from enum import StrEnum

import pytest

from corral_core import domain
from tests.core.test_status_guard import ROOT, STATUS_ENUMS, _sources


@pytest.mark.parametrize("member", [member for enum in STATUS_ENUMS for member in enum], ids=str)
def test_a_status_member_is_its_string_on_every_wire(member: StrEnum) -> None:
    """JSON (events, store columns, --json), CSV exports, str()/f-strings (tables, Corral files) and pickles
    (Dask) carry the bare value, as the string literals did."""
    assert member == member.value and hash(member) == hash(member.value)
    assert json.dumps({"status": member}) == json.dumps({"status": member.value})
    assert str(member) == f"{member}" == member.value
    out = io.StringIO()
    csv.writer(out).writerow([member])
    assert out.getvalue().strip() == member.value
    assert pickle.loads(pickle.dumps(member)) is member
    assert json.loads(json.dumps(member)) == member.value


def test_each_vocabulary_keeps_its_values() -> None:
    """The stored and exported values (docs/glossary.md): renaming one breaks every store and export."""
    assert [s.value for s in domain.TrialStatus] == [
        "running", "completed", "surrendered", "iteration_limit", "limit", "error", "timeout", "skipped",
        "cancelled", "stopped", "retried"]
    assert [s.value for s in domain.AgentStatus] == [
        "answered", "surrendered", "iteration_limit", "limit", "stopped", "cancelled", "error"]
    assert [s.value for s in domain.BenchmarkStatus] == ["running", "finished", "interrupted", "store_failed"]
    assert [s.value for s in domain.RunStatus] == ["finished", "interrupted", "lost_ownership"]
    assert [s.value for s in domain.ControlState] == ["running", "paused", "stepping", "cancelled"]
    assert [s.value for s in domain.EpisodeStatus] == ["running", "scored", "surrendered", "timeout"]
    assert [s.value for s in domain.Decider] == ["policy", "user", "remote", "timeout", "cancelled"]
    assert [s.value for s in domain.ToolStatus] == [
        "success", "invalid_tool", "invalid_args", "execution_error", "blocked", "rejected", "timeout"]
    assert [s.value for s in domain.Fault] == ["provider", "environment", "agent", "grader", "timeout", "unknown"]
    assert [s.value for s in domain.AttemptStatus] == [
        "first", "improved", "no_change", "baseline", "regressed", "no_unassisted", "crashed", "errored"]
    assert [s.value for s in domain.WorkbenchState] == [
        "idle", "starting", "running", "paused", "finished", "interrupted", "lost_ownership", "store_failed",
        "failed"]


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def test_the_inbox_source_is_named_once() -> None:
    """`INBOX_SOURCE` (corral_core/events.py) is the one home of "inbox": who reads or writes it names the constant."""
    from corral_core.events import INBOX_SOURCE

    found = []
    for path in _sources():
        if path.name == "events.py" and path.parent.name == "corral_core":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        found += [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and node.value == INBOX_SOURCE and id(node) not in skip]
    assert not found, f"{INBOX_SOURCE!r} written outside corral_core/events.py (use INBOX_SOURCE): {found}"
