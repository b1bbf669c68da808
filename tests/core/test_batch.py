"""`corral-tui --batch`, `history` and `export` as a user runs them: the command line, files, exit codes (run
in this process: tests/inprocess.py; tests/packaging runs the installed command as a real process)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections import defaultdict
from math import comb
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "sample_tasks" / "quickstart.bench.yaml"
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("batch")
    db, out, junit = folder / "x.db", folder / "out.json", folder / "out.xml"
    proc = cli("--batch", str(QUICKSTART), "--db", str(db), "--json", str(out), "--junit", str(junit), cwd=folder)
    return {"proc": proc, "db": db, "json": out, "junit": junit, "folder": folder}


def test_quickstart_batch_exits_0_and_prints_the_table(quickstart: dict) -> None:
    proc = quickstart["proc"]
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    for arm in ("minimal", "brief", "syntactical"):
        assert arm in proc.stdout
    assert "syntactical vs minimal" in proc.stdout and "headline score" in proc.stdout
    assert "45/45 trials" in proc.stderr  # progress on stderr


def test_json_pass_at_k_matches_the_trials_in_the_database(quickstart: dict) -> None:
    document = json.loads(quickstart["json"].read_text())
    with sqlite3.connect(quickstart["db"]) as conn:
        rows = conn.execute("select arm, task_id, status, score, error, surrendered, assisted from trial "
                            "where benchmark_id=?", (document["benchmark_id"],)).fetchall()
    assert len(rows) == 45 and len(document["trials"]) == 45
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for arm, task, status, score, error, surrendered, assisted in rows:
        assert not assisted
        entry = counts[arm][task]
        entry[0] += 1
        entry[1] += int(status == "completed" and score is not None and score > 0 and not error and not surrendered)
    for arm, tasks in counts.items():
        for k in document["spec"]["k_values"]:
            expected = sum(1 - comb(n - c, k) / comb(n, k) for n, c in tasks.values()) / len(tasks)
            assert document["arms"][arm]["pass_k"][str(k)]["pass_at_k"] == pytest.approx(expected)
    # the documentation effect the quickstart shows: power only succeeds once "**" is documented
    assert counts["minimal"]["power"][1] == 0 and counts["syntactical"]["power"][1] == 3
    # every pair of arms, not only against the first (Holm over the three)
    assert [(c["arm_a"], c["arm_b"]) for c in document["comparisons"]] == [
        ("minimal", "brief"), ("minimal", "syntactical"), ("brief", "syntactical")]
    assert document["attempt_status"] == "first" and document["status"] == "finished"  # nothing to compare with yet
    # three verbosity levels of one agent: one trend test across them, not only three pairs
    trend = document["trend"]
    assert trend["levels"] == ["minimal", "brief", "syntactical"] and trend["n_tasks"] == 5
    assert trend["p_method"] == "exact" and trend["summary"].startswith("trend across 3 ordered levels")


def test_json_carries_each_arms_documentation_size(quickstart: dict) -> None:
    from corral_core.docsize import documentation_size
    from corral_core.spec import load_spec

    document = json.loads(quickstart["json"].read_text())
    sizes = document["documentation"]
    assert list(sizes) == ["minimal", "brief", "syntactical"]
    spec = load_spec(QUICKSTART)
    for arm in spec.arms:
        shown = sizes[arm.name]
        assert (shown["level"], shown["model"]) == (arm.verbosity, arm.model.id)
        channel = "schema" if arm.agent.type == "tool_calling" else "guide"
        expected = documentation_size(spec.suites[0].tools_for(spec.task_ids[0]), arm.verbosity, channel)
        assert shown["channel"] == channel and shown["chars"] == expected.chars  # every task offers the same tools
        assert isinstance(shown["tokens"], float) and 0 < shown["tokens"] < shown["chars"]
    assert sizes["minimal"]["chars"] < sizes["brief"]["chars"] < sizes["syntactical"]["chars"]


def test_junit_has_one_testcase_per_task_and_arm(quickstart: dict) -> None:
    root = ET.parse(quickstart["junit"]).getroot()
    cases = {(case.get("classname"), case.get("name")): case for case in root.iter("testcase")}
    assert len(cases) == 15
    assert cases[("quickstart.minimal", "power")].find("failure") is not None
    assert cases[("quickstart.syntactical", "power")].find("failure") is None
    assert "score=1" in cases[("quickstart.brief", "add")].find("system-out").text
    assert root.get("failures") == "2"


def test_history_and_export(quickstart: dict) -> None:
    bid = json.loads(quickstart["json"].read_text())["benchmark_id"]
    history = cli("history", "--db", str(quickstart["db"]), cwd=quickstart["folder"])
    assert history.returncode == 0 and bid in history.stdout and "45/45" in history.stdout
    csv_file = quickstart["folder"] / "trials.csv"
    exported = cli("export", bid, "--format", "csv", "--db", str(quickstart["db"]), "--output", str(csv_file),
                   cwd=quickstart["folder"])
    assert exported.returncode == 0, exported.stderr
    lines = csv_file.read_text().splitlines()
    assert lines[0].startswith("trial_id,benchmark_id,arm,task_id") and len(lines) == 46
    as_json = cli("export", bid, "--format", "json", "--db", str(quickstart["db"]), cwd=quickstart["folder"])
    document = json.loads(as_json.stdout)
    assert document["benchmark_id"] == bid and len(document["trials"]) == 45
    assert set(document["arms"]) == {"minimal", "brief", "syntactical"}
    missing = cli("export", "bm_nope", "--db", str(quickstart["db"]), cwd=quickstart["folder"])
    assert missing.returncode == 2 and "no benchmark 'bm_nope'" in missing.stderr


def test_fail_under_exits_1(quickstart: dict) -> None:
    bid = json.loads(quickstart["json"].read_text())["benchmark_id"]
    # resuming a finished benchmark runs nothing and recomputes its results
    proc = cli("--batch", str(QUICKSTART), "--db", str(quickstart["db"]), "--resume", bid, "--fail-under", "0.9",
               "--quiet", cwd=quickstart["folder"])
    assert proc.returncode == 1, proc.stderr
    assert "below --fail-under 0.9" in proc.stderr


BAD_SPECS = {
    "unknown key": ("trails_per_task: 3\n", "unknown key `trails_per_task`"),
    "wrong type": ("trials_per_task: many\n", "must be a whole number"),
    "missing suite": ("suite: nowhere.yaml\n", "suite file 'nowhere.yaml' not found"),
    "k too large": ("trials_per_task: 2\nk_values: [1, 4]\n", "k = 4 is larger than trials_per_task (2)"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_bad_spec_exits_2_with_one_readable_message(case: str, tmp_path: Path) -> None:
    extra, expected = BAD_SPECS[case]
    lines = {"name": "bad", "model": "scripted/samplemath", "suite": str(SAMPLEMATH)}
    body = "".join(f"{k}: {v}\n" for k, v in lines.items() if f"{k}:" not in extra) + extra
    spec = tmp_path / "bad.bench.yaml"
    spec.write_text(body)
    proc = cli("--batch", str(spec), "--db", str(tmp_path / "x.db"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    message = proc.stderr.strip()
    assert message.startswith("corral-tui: ") and "bad.bench.yaml (line " in message and expected in message
    assert "Fix:" in message and len(message.splitlines()) == 1
