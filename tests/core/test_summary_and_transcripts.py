"""`--summary-md` (Markdown a CI job shows) and `export --with-transcripts` (messages and tool calls in the JSON)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from corral_core.summary import summary_markdown
from corral_tui.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


def test_summary_escapes_what_would_break_the_table() -> None:
    document = {"name": "a|b", "benchmark_id": "bm_1", "status": "finished", "headline_score": None,
                "arms": {"x|y": {"n_tasks": 1, "n_trials": 1, "errors_by_fault": {"provider": 1},
                                 "resources": {"total_tokens": 3, "cost": None}, "pass_k": {}}},
                "comparisons": [{"arm_a": "p", "arm_b": "q", "summary": "line\nbreak <b>"}],
                "trend": {"summary": "trend across 3 ordered levels (…): slope +0.100 per level"}}
    text = summary_markdown(document, [{"arm": "x|y", "llm_retries": 2, "llm_retry_wait": 1.5,
                                        "rate_limit_wait": 0.5}])
    row = next(line for line in text.splitlines() if line.startswith("| `x"))
    header = next(line for line in text.splitlines() if line.startswith("| arm"))
    assert row.count(" | ") == header.count(" | ")  # the escaped pipe makes no extra column
    assert "`x\\|y`" in row and "1 (provider 1)" in row and "2 (2.0 s waited)" in row
    assert "**Headline score none**" in text and "line break &lt;b&gt;" in text
    assert "### Trend across ordered levels\n\n- trend across 3 ordered levels (…): slope +0.100 per level" in text


def test_export_with_transcripts_carries_each_trials_messages_and_tool_calls(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.db"
    spec = tmp_path / "one.bench.yaml"
    spec.write_text(f"name: one\nsuite: {SAMPLES / 'samplemath.yaml'}\nmodel: scripted/samplemath\n"
                    "tasks: [add, compound]\ntrials_per_task: 2\n")
    assert main(["--batch", str(spec), "--db", str(db), "--quiet", "--summary-md", str(tmp_path / "s.md")]) == 0
    assert "| `default` | 2 | 4 |" in (tmp_path / "s.md").read_text()
    benchmark_id = capsys.readouterr().out.split("benchmark ", 1)[1].split()[0]
    out = tmp_path / "t.json"
    assert main(["export", benchmark_id, "--db", str(db), "--with-transcripts", "-o", str(out)]) == 0
    trials = json.loads(out.read_text())["trials"]
    with sqlite3.connect(db) as conn:
        messages = dict(conn.execute("SELECT trial_id, count(*) FROM message GROUP BY trial_id").fetchall())
        calls = dict(conn.execute("SELECT trial_id, count(*) FROM tool_call GROUP BY trial_id").fetchall())
        first_tool = conn.execute("SELECT trial_id, tool_name, result FROM tool_call ORDER BY id LIMIT 1").fetchone()
    assert len(trials) == 4
    assert {t["trial_id"]: len(t["messages"]) for t in trials} == messages
    assert {t["trial_id"]: len(t["tool_calls"]) for t in trials if t["tool_calls"]} == calls
    trial = next(t for t in trials if t["trial_id"] == first_tool[0])
    assert (trial["tool_calls"][0]["tool"], trial["tool_calls"][0]["result"]) == first_tool[1:]
    assert [m["role"] for m in trial["messages"][:2]] == ["system", "user"]
    assert main(["export", benchmark_id, "--db", str(db), "-o", str(tmp_path / "p.json")]) == 0
    assert "messages" not in json.loads((tmp_path / "p.json").read_text())["trials"][0]  # as before without it


def test_with_transcripts_needs_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "bm_x", "--format", "csv", "--with-transcripts"]) == 2
    assert "needs --format json" in capsys.readouterr().err
